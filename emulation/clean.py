"""``twinnet clean``: remove what a crashed twinnet run left behind, and nothing else.

Like ``mn -c``, but only for twinnet's own leftovers, recognised without guessing:

* processes carrying a run's markers (emulation.state: every switch process and
  Mininet shell a run starts has them), and any process in a network namespace
  that such a process still holds;
* root-namespace interfaces in a twinnet link group with the alias
  ``twinnet:<run id>`` (emulation.links); deleting them deletes their veth peers;
* the run's state file and the ``current`` pointer.

A run whose owner process still runs is left alone unless ``--force`` is given
(then it is torn down from outside, as a stuck network would need).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from emulation import links as veths
from emulation.state import (
    current_link,
    forget_run,
    identity_alive,
    marked_processes,
    namespace_inode,
    processes_in_namespaces,
    recorded_states,
)

#: Seconds processes get between SIGTERM and SIGKILL.
TERM_GRACE_SECONDS = 2.0


@dataclass
class CleanReport:
    runs: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    spared_runs: list[str] = field(default_factory=list)

    def summary(self, dry_run: bool = False) -> str:
        if not (self.runs or self.processes or self.interfaces):
            text = "nothing to clean"
        else:
            verb = "would remove" if dry_run else "removed"
            text = (
                f"{verb} {len(self.processes)} processes and {len(self.interfaces)} interfaces "
                f"of run(s) {', '.join(self.runs) or '(unrecorded)'}"
            )
        if self.spared_runs:
            text += f"; left running network(s) {', '.join(self.spared_runs)} (use --force to stop them)"
        return text


def live_runs() -> set[str]:
    """Runs whose owner process still runs (from the state files and the processes' markers)."""
    alive = {state.run_id for _path, state in recorded_states() if identity_alive(state.owner)}
    alive |= {run for run, owner in marked_processes().values() if identity_alive(owner)}
    return alive


def clean(
    *, force: bool = False, dry_run: bool = False, progress: Callable[[str], None] | None = None
) -> CleanReport:
    """Remove the leftovers of every twinnet run whose owner is gone (all runs with `force`)."""
    say = progress or (lambda message: None)
    report = CleanReport()
    spared = set() if force else live_runs()
    report.spared_runs = sorted(spared)
    me = os.getpid()

    # processes: marked ones, and everything in a namespace a marked process holds
    marked = {
        pid: run for pid, (run, _owner) in marked_processes().items() if run not in spared and pid != me
    }
    # hosts' namespaces only: never the root namespace the switches (and this process) run in
    namespaces = {namespace_inode(pid) for pid in marked} - {None, namespace_inode(me), namespace_inode(1)}
    victims = set(marked) | (set(processes_in_namespaces(namespaces)) - {me})
    runs = set(marked.values())

    # interfaces: those of runs that are not spared (unlabelled ones go by their link group)
    spared_groups = {state.link_group for _path, state in recorded_states() if state.run_id in spared}
    doomed: dict[str, int] = {}
    for name, (group, alias) in veths.twinnet_interfaces().items():
        run = alias.removeprefix(veths.ALIAS_PREFIX) if alias else None
        if run in spared or (run is None and group in spared_groups):
            spared_groups.add(group)
            continue
        doomed[name] = group
        if run:
            runs.add(run)
    states = [(path, state) for path, state in recorded_states() if state.run_id not in spared]
    runs |= {state.run_id for _path, state in states}

    report.runs = sorted(runs)
    report.processes = sorted(victims)
    report.interfaces = sorted(doomed)
    if dry_run:
        say(report.summary(dry_run=True))
        return report

    terminate(victims)
    for group in set(doomed.values()) - spared_groups:
        veths.delete_link_group(group)
    shared = [name for name, group in doomed.items() if group in spared_groups]
    veths.run_ip_batch([f"link delete dev {name}" for name in shared], force=True)
    for _path, state in states:
        remove_socket_dir(state.socket_dir)
    for run in runs:
        forget_run(run)
    link = current_link()
    if link.is_symlink() and not link.exists():
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
    say(report.summary())
    return report


def remove_socket_dir(folder: str) -> None:
    """Remove a run's folder of Unix sockets (only a twinnet one: /tmp/twinnet-*, a directory, not a link)."""
    path = Path(folder)
    if folder and path.name.startswith("twinnet-") and path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)


def terminate(pids: set[int], grace: float = TERM_GRACE_SECONDS) -> None:
    """SIGTERM `pids`, SIGKILL those still there after `grace` s (shells get SIGHUP too)."""
    for pid in pids:
        for signum in (signal.SIGHUP, signal.SIGTERM):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
    deadline = time.monotonic() + grace
    remaining = set(pids)
    while remaining and time.monotonic() < deadline:
        remaining = {pid for pid in remaining if _exists(pid)}
        if remaining:
            time.sleep(0.05)
    for pid in remaining:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while remaining and time.monotonic() < deadline:
        remaining = {pid for pid in remaining if _exists(pid)}
        if remaining:
            time.sleep(0.05)


def _exists(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


# -- the sub-command -----------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force", action="store_true", help="also stop networks whose owner process still runs"
    )
    parser.add_argument("--dry-run", action="store_true", help="only list what would be removed")


def main(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise OSError("twinnet clean needs root (it stops processes and deletes interfaces)")
    report = clean(force=args.force, dry_run=args.dry_run)
    print(f"twinnet clean: {report.summary(dry_run=args.dry_run)}")
    return 0
