"""Another local user (``nobody``) against a switch root started: the control surfaces are root's own.

A ``twinnet-switch`` on Unix sockets in a folder only root can enter (as the emulation starts
its cards) cannot be reached by ``nobody`` at all: neither the side channel (which could
stop a data plane) nor P4Runtime (which could take primacy, insert entries, load a program).
With the explicit TCP form (loopback only, for simple_switch_grpc compatibility) ``nobody``
can connect, and then a pipeline config is program text: ``file:`` references and includes
that reach root's files are refused without revealing whether a file exists or what it holds.
The other user's side runs as a separate process under ``setpriv``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulation.switch_launcher import switch_command

pytestmark = pytest.mark.root

SECRET = "twinnet-secret-token-4711"

AS_OTHER_USER = r"""
import json, socket, sys
import grpc
from p4.v1 import p4runtime_pb2
from p4.config.v1 import p4info_pb2
from p4switch.p4runtime.client import P4RuntimeClient

side_channel, grpc_address = sys.argv[1], sys.argv[2]
seen = {}
try:
    if side_channel.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(side_channel[5:])
    else:
        sock = socket.create_connection(("127.0.0.1", int(side_channel)), timeout=3)
    sock.sendall(b'{"cmd": "set_queue_rate", "rate_pps": 1}\n')
    seen["side_channel"] = json.loads(sock.makefile().readline())
except OSError as error:
    seen["side_channel"] = type(error).__name__
client = P4RuntimeClient(grpc_address, 0, (0, 99))
try:
    client.arbitrate(timeout=3)
    seen["arbitration"] = "answered"
except Exception as error:
    seen["arbitration"] = type(error).__name__
configs = {}
for name in sys.argv[3:]:
    config = name.encode()
    try:
        client.set_pipeline(p4info_pb2.P4Info(), config)
        configs[name] = "accepted"
    except grpc.RpcError as error:
        configs[name] = [error.code().name, error.details()]
seen["configs"] = configs
client.close()
print(json.dumps(seen))
"""


def run_as_nobody(arguments: list[str]) -> dict:
    done = subprocess.run(
        [
            "setpriv",
            "--reuid",
            "nobody",
            "--regid",
            "nogroup",
            "--clear-groups",
            sys.executable,
            "-c",
            AS_OTHER_USER,
        ]
        + arguments,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        },
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", autouse=True)
def nobody_can_run_python() -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    check = subprocess.run(
        [
            "setpriv",
            "--reuid",
            "nobody",
            "--regid",
            "nogroup",
            "--clear-groups",
            sys.executable,
            "-c",
            "import grpc",
        ],
        capture_output=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        cwd="/",
    )
    if check.returncode != 0:
        pytest.skip(f"user nobody cannot run {sys.executable} here: {check.stderr.decode()[-200:]}")


def start_switch(arguments: list[str]) -> subprocess.Popen:
    process = subprocess.Popen(
        [*switch_command(), "--no-p4", *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    return process


def wait_for(path_or_port: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode()
        try:
            if path_or_port.startswith("unix:"):
                with socket.socket(socket.AF_UNIX) as sock:
                    sock.connect(path_or_port[5:])
            else:
                socket.create_connection(
                    ("127.0.0.1", int(path_or_port.rsplit(":", 1)[-1])), timeout=1
                ).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"switch not ready at {path_or_port}")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def private_switch() -> Iterator[tuple[str, str]]:
    folder = Path(tempfile.mkdtemp(prefix="twinnet-"))  # mode 0700, root's
    side_channel, grpc_address = f"unix:{folder}/c1.ctl", f"unix:{folder}/c1.p4rt"
    process = start_switch(["--side-channel", side_channel, "--", "--grpc-server-addr", grpc_address])
    try:
        wait_for(grpc_address, process)
        wait_for(side_channel, process)
        yield side_channel, grpc_address
    finally:
        stop(process)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def tcp_switch() -> Iterator[tuple[str, str]]:
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        thrift, grpc_port = a.getsockname()[1], b.getsockname()[1]
    address = f"127.0.0.1:{grpc_port}"
    process = start_switch(["--thrift-port", str(thrift), "--", "--grpc-server-addr", address])
    try:
        wait_for(address, process)
        yield str(thrift), address
    finally:
        stop(process)


def test_another_user_cannot_reach_a_switch_on_private_sockets(private_switch: tuple[str, str]) -> None:
    side_channel, grpc_address = private_switch
    seen = run_as_nobody([side_channel, grpc_address])
    assert seen["side_channel"] == "PermissionError"
    assert seen["arbitration"] != "answered"


def test_program_text_from_another_user_cannot_reach_roots_files(
    tcp_switch: tuple[str, str], tmp_path: Path
) -> None:
    secret_file = tmp_path / "secret.p4"  # root's, not readable by nobody
    secret_file.write_text(f"{SECRET} = 1;\n")
    secret_file.chmod(0o600)
    missing = tmp_path / "absent.p4"
    configs = [
        f"file:{secret_file}",
        f"file:{missing}",
        f'#include "{secret_file}"\n',
        '#include "/dev/zero"\n',
        f'#if __has_include("{secret_file}")\n#endif\n',
    ]
    started = time.monotonic()
    seen = run_as_nobody([*tcp_switch, *configs])
    assert (
        seen["arbitration"] == "answered"
    )  # TCP is reachable by any local user: that is its documented cost
    answers = seen["configs"]
    for config in configs:
        code, details = answers[config]
        assert code == "INVALID_ARGUMENT" and SECRET not in details, (config, details)
        assert "not a file" not in details and "No such file" not in details
    # the answers for an existing and a missing file are the same, apart from the path
    assert answers[f"file:{secret_file}"][1] == answers[f"file:{missing}"][1]
    assert time.monotonic() - started < 30  # /dev/zero is refused, not read until memory runs out
