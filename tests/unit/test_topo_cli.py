"""`twinnet topo` and the shared topology spec: what it prints and refuses."""

from __future__ import annotations

import json

import pytest

from emulation.cli import main
from topologies.build import build_topology
from topologies.model import TopologyError


def test_json_describes_every_port(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topo", "ndt", "--dims", "3x3x3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["family"] == "ndt" and data["counts"]["cards"] == 54
    assert len(data["hosts"]) == 54 and data["hosts"][5]["ip"] == "10.0.0.6"
    ports = [port for card in data["cards"] for port in card["ports"]]
    assert len(ports) == 54 * 5 and all(port["peer"] for port in ports)
    peers = {(card["name"], port["port"]): port["peer"] for card in data["cards"] for port in card["ports"]}
    for link in data["links"]:  # every card end agrees with the link list
        for end, far in ((link["a"], link["b"]), (link["b"], link["a"])):
            node, port = end.split(":")
            if node.startswith("c"):
                assert peers[node, int(port)] == far


def test_summary_shows_the_port_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topo", "fattree", "--k", "4", "--n", "2", "--twin"]) == 0
    out = capsys.readouterr().out
    assert "16 PEs" in out and "8 internal" in out
    assert "side 0, stage 0 (4 cards, c0 c2 c4 ...): 1=0 2=1 3=4 4=5 5=int0" in out
    assert "side 1, stage 1 (4 cards, c9 c11 c13 ...): 1=(4) 2=(5) 3=(6) 4=(7) 5=int0" in out


@pytest.mark.parametrize(
    "argv,rows",
    [
        (["topo", "torus", "--k", "4", "--n", "2", "--list", "hosts"], 16),
        (["topo", "ndt", "--dims", "2x2x2", "--list", "ports"], 16 * 5),
        (["topo", "ndt", "--n", "5", "--list", "configs"], 126),
        (["topo", "ndt", "--n", "7", "--list-configs"], 1716),
        (["topo", "fattree", "--twin", "--k", "6", "--list", "configs"], 20),
    ],
)
def test_lists_have_one_row_per_item(argv: list[str], rows: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    assert len(capsys.readouterr().out.splitlines()) == rows + 1  # plus the header


@pytest.mark.parametrize(
    "argv,message",
    [
        (["topo", "ndt", "--dims", "4x1"], "dims"),
        (["topo", "fattree", "--k", "3", "--n", "2", "--twin"], "even k"),
        (["topo", "fattree", "--k", "4", "--n", "2", "--r", "2"], "need --twin"),
        (["topo", "torus", "--dims", "4x4", "--config", "cbest"], "torus does not take config"),
        (["topo", "ndt", "--dims", "4x4x4", "--config", "X+X-|Y+Y-Z+Z-"], "each card n=3"),
        (["topo", "fattree", "--k", "4"], "needs both k"),
        (["topo", "ndt", "--dims", "4x4", "--k", "4", "--n", "2"], "not both"),
    ],
)
def test_bad_input_is_a_message_not_a_traceback(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_draw_writes_a_picture(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "pictures" / "twin.png"
    assert main(["topo", "fattree", "--k", "2", "--n", "2", "--twin", "--draw", str(target)]) == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["topo", "ndt", "--dims", "3x2x2", "--draw", str(tmp_path / "ndt.svg")]) == 0
    assert (tmp_path / "ndt.svg").read_text().lstrip().startswith("<?xml")


def test_build_topology_families() -> None:
    assert build_topology("fattree", k=4, n=2).family == "kary-ntree"
    assert build_topology("torus", k=3, n=2).params["dims"] == [3, 3]
    assert build_topology("ndt", dims=[2, 2, 2], config="X+Y+Z+|X-Y-Z-").params["split_dimensions"] == [
        0,
        1,
        2,
    ]
    with pytest.raises(TopologyError, match="family must be one of fattree, ndt, torus"):
        build_topology("mesh", k=4, n=2)


def test_interface_names_are_mininet_names_within_ifnamsiz() -> None:
    """Card port p is interface c<id>-eth<p>; a 16384-card nDT's names fit Linux's 15 characters."""
    from topologies.addressing import interface_name

    topo = build_topology("ndt", dims="16x16x16x2")
    names = {interface_name(ref.node, ref.port) for card in topo.cards for ref in topo.card_ports(card)}
    assert len(names) == 16384 * 6 and "c16383-eth6" in names
    assert max(len(name) for name in names) <= 15
