"""The state file of a running twinnet network: what runs where, for the controller, shell and clean.

One network runs at a time on a machine (an exclusive lock, :func:`acquire_network_lock`).
Its state is a JSON file in the machine-wide run directory, with the live one pointed
to by a symlink, and a copy in the run's output directory that stays as a record::

    /tmp/twinnet/runs/<run_id>.json      the state of each run that has not been torn down
    /tmp/twinnet/current -> runs/<run_id>.json
    <out_dir>/state.json                 the same content; "status" ends as "stopped"

Readers use :func:`read_current_state` (or :func:`read_state` on a path)::

    state = read_current_state()
    for card in state.cards:            # CardState: name, card_id, device_id, grpc_address, p4info, pid ...
        connect(card.grpc_address, card.device_id, card.p4info)
    host = state.host("h3")             # HostState: name, pe, ip, mac, interface, pid (namespace shell)

Every process a run starts carries two environment variables (:data:`RUN_ENV`,
:data:`OWNER_ENV`) naming the run and its owner process, so that ``twinnet clean``
recognises twinnet's own processes, and only those, after a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topologies.errors import TwinnetError

#: Machine-wide directory of twinnet's run state (override with TWINNET_STATE_DIR, e.g. in tests).
STATE_DIR = Path(os.environ.get("TWINNET_STATE_DIR", "/tmp/twinnet"))
STATE_VERSION = 1

#: Environment variables set on every process a run starts (switch daemons, Mininet shells).
RUN_ENV = "TWINNET_RUN"
OWNER_ENV = "TWINNET_OWNER"


def runs_dir() -> Path:
    return STATE_DIR / "runs"


def current_link() -> Path:
    return STATE_DIR / "current"


def lock_path() -> Path:
    return STATE_DIR / "network.lock"


# -- the records ---------------------------------------------------------------


@dataclass
class CardState:
    """One card: its switch process and how to reach its P4Runtime server.

    ``grpc_address``: ``unix:/path`` (a folder only the network's owner can enter) or 127.0.0.1:PORT.
    ``side_channel_port``: bmv2's Thrift server / the embedded target's side channel, on 127.0.0.1;
    ``control``: where the side channel really listens (``unix:/path``, or that port as text).
    ``p4info``: P4Info text file (None when the target's compiler API is not available);
    ``device_config``: what the switch was started with (bmv2 JSON, or the .p4 source).
    ``killed``: the card was stopped on purpose (TwinnetNetwork.kill_card).
    """

    name: str
    card_id: int
    device_id: int
    grpc_address: str
    side_channel_port: int
    target: str
    p4info: str | None
    device_config: str | None
    log: str
    interfaces: list[str]
    pid: int | None = None
    killed: bool = False
    control: str = ""


@dataclass
class HostState:
    """One host (PE): its address and the shell that holds its network namespace.

    ``pid``: the host's Mininet shell (enter the namespace with ``mnexec -a PID`` or
    ``nsenter -t PID -n``); ``netns``: the namespace's inode, for clean to find any
    process left in it.
    """

    name: str
    pe: int
    ip: str
    mac: str
    interface: str
    card: str
    card_port: int
    pid: int | None = None
    netns: int | None = None


@dataclass
class NetworkState:
    """Everything a run started, written before the first process starts and updated as it comes up.

    ``status`` is "starting", "running" or "stopped". ``owner`` is "<pid>:<start time>"
    of the Python process that built the network (see :func:`process_identity`);
    ``link_group`` the Linux link group of all its root-namespace interfaces;
    ``socket_dir`` the private folder of the cards' Unix sockets ("" when they use TCP).
    """

    run_id: str
    owner: str
    status: str
    created: float
    topology: dict[str, Any]
    target: str
    program: str
    out_dir: str
    link_group: int
    mtu: dict[str, int]
    cards: list[CardState] = field(default_factory=list)
    hosts: list[HostState] = field(default_factory=list)
    version: int = STATE_VERSION
    socket_dir: str = ""

    def card(self, name: str) -> CardState:
        for card in self.cards:
            if card.name == name:
                return card
        raise KeyError(f"no card {name!r} in run {self.run_id}")

    def host(self, name: str) -> HostState:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(f"no host {name!r} in run {self.run_id}")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NetworkState:
        data = dict(data)
        cards = [CardState(**_renamed_keys(card)) for card in data.pop("cards", [])]
        hosts = [HostState(**host) for host in data.pop("hosts", [])]
        return cls(cards=cards, hosts=hosts, **data)


def _renamed_keys(card: dict[str, Any]) -> dict[str, Any]:
    """A card record as written before its side-channel port had that name (``thrift_port``)."""
    if "thrift_port" in card and "side_channel_port" not in card:
        card = dict(card)
        card["side_channel_port"] = card.pop("thrift_port")
    return card


# -- files -----------------------------------------------------------------------


def state_path(run_id: str) -> Path:
    return runs_dir() / f"{run_id}.json"


def write_state(state: NetworkState, *, record: Path | None = None, make_current: bool = True) -> Path:
    """Write `state` atomically to the run directory (and to `record`, the out-dir copy); return its path."""
    path = state_path(state.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(state.to_json(), indent=1)
    _write_atomic(path, text)
    if record is not None:
        _write_atomic(record, text)
    if make_current:
        link = current_link()
        temporary = link.with_name(f".current.{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        temporary.symlink_to(path.relative_to(STATE_DIR))
        temporary.replace(link)
    return path


def write_record(state: NetworkState, path: Path) -> None:
    """Write `state` to `path` only (the out-dir record), not to the run directory."""
    _write_atomic(path, json.dumps(state.to_json(), indent=1))


def _write_atomic(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    temporary.replace(path)


class StateFileError(TwinnetError, ValueError):
    """A state file that cannot be used: not JSON, not a twinnet state's shape, or its run has ended."""


def read_state(path: str | Path) -> NetworkState:
    """The state in `path`; StateFileError naming the file when it is not JSON or not a state's shape."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise StateFileError(f"{path}: not a twinnet state file (invalid JSON: {error})") from None
    except UnicodeDecodeError:
        raise StateFileError(f"{path}: not a twinnet state file (not UTF-8 text)") from None
    try:
        if not isinstance(data, dict):
            raise TypeError(f"a JSON object expected, found {type(data).__name__}")
        for key in ("cards", "hosts"):
            if not isinstance(data.get(key, []), list) or not all(
                isinstance(x, dict) for x in data.get(key, [])
            ):
                raise TypeError(f"{key!r} must be a list of objects")
        state = NetworkState.from_json(data)
        _check_types(state)
    except (TypeError, ValueError) as error:
        raise StateFileError(f"{path}: not a twinnet state file ({error})") from None
    return state


def _check_types(state: NetworkState) -> None:
    """TypeError naming the first field whose value is not of the declared type (str, int, float, bool)."""
    simple = {
        "str": str,
        "int": int,
        "float": (int, float),
        "bool": bool,
        "list[str]": list,
        "dict[str, Any]": dict,
        "dict[str, int]": dict,
    }
    for record in (state, *state.cards, *state.hosts):
        for item in dataclasses.fields(record):
            value = getattr(record, item.name)
            declared = str(item.type)
            optional = declared.endswith("| None")
            kind = simple.get(declared.removesuffix(" | None").strip())
            if kind is None or (optional and value is None):
                continue
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise TypeError(f"{type(record).__name__}.{item.name} is {value!r}, not {declared}")


def read_live_state(path: str | Path) -> NetworkState:
    """The state in `path` if its run is up (status running, its builder alive); else StateFileError.

    A stopped run's addresses may now belong to another network's cards: never connect to them.
    """
    state = read_state(path)
    if state.status != "running":
        raise StateFileError(f"{path}: run {state.run_id} is {state.status}, not running")
    if not identity_alive(state.owner):
        raise StateFileError(f"{path}: run {state.run_id} has ended (its process {state.owner} is gone)")
    return state


def read_current_state() -> NetworkState:
    """The state of the network running now; FileNotFoundError with a clear message if none."""
    link = current_link()
    try:
        return read_state(link)
    except FileNotFoundError:
        raise FileNotFoundError(f"no twinnet network is running (no state at {link})") from None


def recorded_states() -> list[tuple[Path, NetworkState]]:
    """Every run still listed in the run directory (running, or left behind by a crash)."""
    found = []
    for path in sorted(runs_dir().glob("*.json")):
        try:
            found.append((path, read_state(path)))
        except (OSError, ValueError, TypeError):
            continue
    return found


def forget_run(run_id: str) -> None:
    """Remove a run's machine-wide state (the out-dir record stays) and the current pointer to it."""
    path = state_path(run_id)
    link = current_link()
    with contextlib.suppress(OSError):
        if link.is_symlink() and (STATE_DIR / os.readlink(link)).resolve() == path.resolve():
            link.unlink()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


# -- processes -------------------------------------------------------------------


def process_start_time(pid: int) -> int | None:
    """The start time of process `pid` in clock ticks since boot (None if it does not exist)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # the command name (field 2) may contain spaces: split after its closing parenthesis
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])


def process_identity(pid: int | None = None) -> str:
    """ "<pid>:<start time>": names a process uniquely even after its pid is reused."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{process_start_time(pid)}"


def identity_alive(identity: str) -> bool:
    """Whether the process named by :func:`process_identity` still runs."""
    pid_text, _, start = identity.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    started = process_start_time(pid)
    return started is not None and str(started) == start


def process_environment(pid: int) -> dict[str, str]:
    """The environment `pid` was started with (empty if unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    environment = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            environment[key.decode(errors="replace")] = value.decode(errors="replace")
    return environment


def marked_processes() -> dict[int, tuple[str, str]]:
    """Processes started by a twinnet run: pid -> (run id, owner identity)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        environment = process_environment(int(entry.name))
        if RUN_ENV in environment:
            found[int(entry.name)] = (environment[RUN_ENV], environment.get(OWNER_ENV, ""))
    return found


def namespace_inode(pid: int) -> int | None:
    """The inode of `pid`'s network namespace (None if the process is gone)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def processes_in_namespaces(inodes: set[int]) -> list[int]:
    """Processes whose network namespace is one of `inodes`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and namespace_inode(int(entry.name)) in inodes:
            found.append(int(entry.name))
    return found


def marker_environment(run_id: str, owner: str) -> dict[str, str]:
    """The environment variables every process of run `run_id` carries."""
    return {RUN_ENV: run_id, OWNER_ENV: owner}


class MarkedPopenMixin:
    """For Mininet nodes: every process the node starts (its shell, popen) carries the run's markers.

    Takes ``run_env`` (from :func:`marker_environment`) as a keyword; put it before
    the Mininet node class in the bases.
    """

    def __init__(self, name: str, *, run_env: dict[str, str] | None = None, **params: Any) -> None:
        self.run_env = dict(run_env or {})
        super().__init__(name, **params)

    def _popen(self, cmd, **params):
        environment = dict(params.pop("env", None) or os.environ)
        environment.update(self.run_env)
        return super()._popen(cmd, env=environment, **params)


# -- one network at a time ---------------------------------------------------------


class NetworkBusyError(TwinnetError, RuntimeError):
    """Another twinnet network holds the machine's network lock."""


def acquire_network_lock(timeout: float, progress=None) -> int:
    """Take the machine's twinnet network lock (waiting up to `timeout` s); return its file descriptor.

    The lock is released when the descriptor is closed, including when the process dies,
    so a crashed run never blocks the next one (its leftovers are another matter: clean).
    """
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    announced = False
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _lock_holder(descriptor)
            if time.monotonic() >= deadline:
                os.close(descriptor)
                raise NetworkBusyError(
                    f"another twinnet network is running ({holder}); stop it first "
                    "(or `twinnet clean --force` if it is stuck)"
                ) from None
            if progress and not announced:
                progress(f"waiting up to {timeout:.0f} s for another twinnet network to end ({holder})")
                announced = True
            time.sleep(0.2)
            continue
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{process_identity()}\n".encode(), 0)
        return descriptor


def _lock_holder(descriptor: int) -> str:
    text = os.pread(descriptor, 100, 0).decode(errors="replace").strip()
    return f"process {text.split(':')[0]}" if text else "unknown process"


def network_lock_free() -> bool:
    """Whether no process holds the network lock right now."""
    path = lock_path()
    if not path.exists():
        return True
    descriptor = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)
    return True
