"""Compilation cache of the embedded P4 target: in process and on disk, keyed by the preprocessed source."""

from __future__ import annotations

import time
from pathlib import Path

from p4switch import compile_program
from p4switch.compiler.compile import clear_memory_cache

PROGS = Path(__file__).resolve().parents[1] / "p4progs"


def test_second_compile_is_a_memory_cache_hit(tmp_path, monkeypatch):
    """Compiling the same source again returns the cached program, faster; another source does not."""
    monkeypatch.setenv("TWINNET_CACHE", str(tmp_path))
    clear_memory_cache()
    start = time.process_time()
    first = compile_program(PROGS / "acl.p4")
    compile_time = time.process_time() - start
    start = time.process_time()
    second = compile_program(PROGS / "acl.p4")
    hit_time = time.process_time() - start
    assert second is first and second.from_cache == "memory"
    assert hit_time < compile_time
    different = compile_program(PROGS / "acl.p4", defines={"UNUSED_NAME": "1"})
    assert different is first  # the define changes nothing in the preprocessed text: same hash
    other = compile_program(PROGS / "basic.p4")
    assert other.source_hash != first.source_hash


def test_disk_cache_survives_a_new_process_state(tmp_path, monkeypatch):
    """Without the memory cache, the disk cache gives an equivalent program."""
    monkeypatch.setenv("TWINNET_CACHE", str(tmp_path))
    clear_memory_cache()
    compiled = compile_program(PROGS / "basic.p4")
    assert compiled.from_cache == "" and list((tmp_path / "p4").glob("*.pickle"))
    clear_memory_cache()
    loaded = compile_program(PROGS / "basic.p4")
    assert loaded.from_cache == "disk" and loaded is not compiled
    assert loaded.p4info == compiled.p4info
    packet = bytes.fromhex("02000000000102000000000286dd") + b"x" * 40
    assert loaded.new_pipeline().process(packet, 1) == compiled.new_pipeline().process(packet, 1) == []


def test_pipelines_of_one_program_do_not_share_state():
    """Two pipelines of one program keep separate tables."""
    program = compile_program(PROGS / "basic.p4", use_disk_cache=False)
    one, two = program.new_pipeline(), program.new_pipeline()
    one.table_insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0, 0)}, "MyIngress.drop", ())
    assert len(one.table_entries("MyIngress.ipv4_lpm")) == 1
    assert two.table_entries("MyIngress.ipv4_lpm") == []
