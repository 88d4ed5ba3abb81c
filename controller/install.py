"""Install, re-install, verify and read the twin switches' cards over P4Runtime, many cards at once.

    from controller.install import TwinController

    with TwinController.from_state(read_current_state()) as controller:
        report = controller.install(topology, compute_tables(topology, "dort"))
        report.raise_for_errors()                       # or inspect report.cards / report.errors()
        controller.install(topology, compute_tables(topology, "ts-dor"))   # live: the diff only
        controller.verify(topology, tables).differences  # [] when every card holds the model
        controller.read_counters(topology)["c3"].tx      # {(port, vc): (packets, bytes)}

**Install is a synchronisation, and re-install is the same operation.** Per card
(concurrently, `workers` cards at a time in a thread pool, at most ``WORKERS_PER_ADDRESS``
per switch process), the controller

1. connects (gRPC channel, StreamChannel, primary arbitration: ``controller.p4runtime_conn``);
2. makes sure the card runs the card program: ``pipeline="auto"`` pushes it
   (SetForwardingPipelineConfig, which empties the tables) only to a card that runs
   none, and refuses a card whose P4Info differs from the controller's;
   ``"push"`` always pushes (a fresh start); ``"keep"`` never does;
3. reads back the card's entries (nothing to read after a push) and writes the
   difference to the card's plan (controller.twins): MODIFY of ``card_config``'s
   default action, INSERT of what is new, MODIFY of what changed, DELETE of what
   is gone. Nothing that stays the same is touched, so a re-install with another
   routing algorithm needs no restart and changes only what differs.

The order of the updates on a card keeps every entry it installs usable at once:
queue entries first, then route entries (``route``, and ``adaptive_route`` of adaptive
routing), then the host ports' entries (which may change a PE's routing class), then
``selection_config``'s default action (which switches the card between ``route`` and
``adaptive_route``, both already filled), then the deletions (routes, host ports,
queues). Adaptive routing's plans (controller.adaptive_plan) go through the same
path: :meth:`TwinController.install_adaptive`.
Cards are updated concurrently and independently: during a live re-install
packets may cross cards of which some already have the new tables (a network-wide
atomic switch would need a second routing class per algorithm; the card program
has one per source PE). Writes go in batches (``batch_size`` updates per
WriteRequest, CONTINUE_ON_ERROR): an entry a card rejects is reported with the
card, the entry and the target's message, and every other entry and card is
installed all the same. A card that cannot be reached is reported; the others
are installed.
"""

from __future__ import annotations

import gc
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4runtime_conn import (
    CONNECT_TIMEOUT,
    CONTROLLER_ELECTION_ID,
    CardConnection,
    CardEndpoint,
    CardError,
    UpdateFailure,
)
from controller.translate import (
    DELETE,
    INSERT,
    MODIFY,
    EntrySpec,
    UpdateEncoder,
    default_entry,
    update,
)
from controller.twins import CardPlan, plan_cards
from p4src import card
from p4switch.p4runtime.info import EncodingError, P4InfoIndex, P4InfoLookupError, p4info_mismatch
from topologies.errors import TwinnetError

#: Updates per WriteRequest (a route update is ~40 bytes: ~80 KB per request; fewer, larger requests
#: cost both sides less per entry)
DEFAULT_BATCH_SIZE = 2000
#: Cards handled at once, at most.
DEFAULT_WORKERS = 16
#: Cards handled at once per P4Runtime address (switch process). A process answers its Writes on
#: one core: two or three at once keep it busy while the controller prepares the next, more only
#: contend for its interpreter lock (3DT 8x8x8 in 2 processes, scripts/bench_install.py --per-process:
#: 50.1k entries/s with 2, 49.9-50.6k with 3, 48.4k with 8 on a quiet machine; with another job
#: busy, 34k with 1, 50k with 2 or 4, 41k with 8. Since the switch reads route entries from the
#: request's bytes: 71.5k with 1, 79.6-86.0k with 2, 81.0-87.0k with 3, 72.3k with 8).
WORKERS_PER_ADDRESS = 3
#: Networks of at most this many cards keep every card's session open between operations; larger
#: ones open a card's session for an operation and close it after (1,024 open StreamChannels cost the
#: controller ~2,000 threads and starve it)
KEEP_SESSIONS_UP_TO = 128
PIPELINE_MODES = ("auto", "push", "keep")

#: Order in which a card's updates are written (see the module doc).
_WRITE_ORDER = [
    (INSERT, card.VC_QUEUE),
    (MODIFY, card.VC_QUEUE),
    (INSERT, card.ROUTE),
    (MODIFY, card.ROUTE),
    (INSERT, card.ADAPTIVE_ROUTE),
    (MODIFY, card.ADAPTIVE_ROUTE),
    (INSERT, card.HOST_IN),
    (MODIFY, card.HOST_IN),
    (INSERT, card.HOST_OUT),
    (MODIFY, card.HOST_OUT),
    (DELETE, card.ROUTE),
    (DELETE, card.ADAPTIVE_ROUTE),
    (DELETE, card.HOST_IN),
    (DELETE, card.HOST_OUT),
    (DELETE, card.VC_QUEUE),
]

#: the first deletion in _WRITE_ORDER: selection_config's default is written just before it
_FIRST_DELETE = next(i for i, (kind, _) in enumerate(_WRITE_ORDER) if kind == DELETE)
#: keyless tables whose default action the plan sets
_DEFAULT_TABLES = (card.CARD_CONFIG, card.SELECTION_CONFIG)
#: their default actions in the program as pushed (what a card holds before anything is written)
_PROGRAM_DEFAULTS = {
    table: (card.CARD_TABLES[table]["default"][0], tuple(card.CARD_TABLES[table]["default"][1].values()))
    for table in _DEFAULT_TABLES
}

EntryKey = tuple[str, tuple[int, ...]]
#: a default action and its parameters
Default = tuple[str, tuple[int, ...]]


def planned_defaults(plan: CardPlan) -> dict[str, Default]:
    """The default actions a plan sets, by table: card_config's set_card and selection_config's."""
    return {card.CARD_CONFIG: (card.SET_CARD, tuple(plan.config)), card.SELECTION_CONFIG: plan.selection}


@dataclass(frozen=True)
class ProgressEvent:
    """Progress of an install: the card it concerns, the stage, and entries handled so far in all cards.

    ``total`` starts as every plan's entries (plus each card's two default actions) and grows by the
    deletions each card needs once compared; ``done`` counts entries found in place and updates written.
    """

    card: str
    stage: str  # "connected", "pipeline pushed", "compared", "writing", "done", "failed"
    done: int
    total: int
    message: str = ""


Progress = Callable[[ProgressEvent], None]


@dataclass
class CardResult:
    """What happened on one card."""

    card: str
    inserted: int = 0
    modified: int = 0
    deleted: int = 0
    unchanged: int = 0
    pipeline_pushed: bool = False
    failures: list[UpdateFailure] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failures

    @property
    def written(self) -> int:
        return self.inserted + self.modified + self.deleted


@dataclass
class InstallReport:
    """The outcome of an install on all cards."""

    label: str
    cards: dict[str, CardResult]
    entries: int
    seconds: float

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.cards.values())

    @property
    def written(self) -> int:
        return sum(result.written for result in self.cards.values())

    def failed_cards(self) -> list[str]:
        return [name for name, result in self.cards.items() if not result.ok]

    def errors(self) -> list[str]:
        """One line per problem: an unreachable or refusing card, or a rejected entry."""
        lines = []
        for result in self.cards.values():
            if result.error:
                lines.append(result.error)
            lines.extend(str(failure) for failure in result.failures)
        return lines

    def summary(self) -> str:
        rate = self.written / self.seconds if self.seconds > 0 else 0.0
        text = (
            f"{self.label}: {len(self.cards)} cards, {self.entries} entries in the model, "
            f"{self.written} updates written in {self.seconds:.2f} s ({rate:.0f} updates/s)"
        )
        failed = self.failed_cards()
        if failed:
            text += f"; problems on {len(failed)} card(s): {', '.join(failed[:8])}"
        return text

    def raise_for_errors(self) -> None:
        if not self.ok:
            raise InstallError(self)


class InstallError(TwinnetError, RuntimeError):
    """An install left some card(s) not as planned; ``report`` says which and why."""

    def __init__(self, report: InstallReport) -> None:
        errors = report.errors()
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        super().__init__(report.summary() + "\n  " + "\n  ".join(errors[:5]) + more)
        self.report = report


@dataclass(frozen=True)
class EntryDifference:
    """A difference between a card and its plan: "missing", "extra" or "different" (action or values)."""

    card: str
    kind: str
    expected: EntrySpec | None
    actual: EntrySpec | None

    def __str__(self) -> str:
        if self.kind == "missing":
            return f"card {self.card}: missing {self.expected.describe()}"
        if self.kind == "extra":
            return f"card {self.card}: extra {self.actual.describe()}"
        expected, found = self.expected.describe(), self.actual.describe()
        return f"card {self.card}: different: expected {expected}, found {found}"


@dataclass
class VerifyReport:
    """The differences between what the cards hold and the model, and the cards that could not be read."""

    differences: list[EntryDifference]
    errors: dict[str, str]
    entries: int

    @property
    def ok(self) -> bool:
        return not self.differences and not self.errors

    def summary(self) -> str:
        if self.ok:
            return f"every card holds its model: {self.entries} entries, no difference"
        kinds: dict[str, int] = {}
        for difference in self.differences:
            kinds[difference.kind] = kinds.get(difference.kind, 0) + 1
        counted = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
        unreadable = f"; unreadable cards: {', '.join(sorted(self.errors))}" if self.errors else ""
        return f"{len(self.differences)} differences ({counted or 'none'}){unreadable}"


@dataclass
class CardCounters:
    """A card's counters, (packets, bytes): received per port, sent per (port, VC), drops by reason."""

    card: str
    rx: dict[int, tuple[int, int]]
    tx: dict[tuple[int, int], tuple[int, int]]
    drops: dict[str, tuple[int, int]]

    def minus(self, before: CardCounters) -> CardCounters:
        """The counts since `before` (an earlier reading of the same card)."""

        def delta(now: dict, then: dict) -> dict:
            zero = (0, 0)
            return {
                key: (value[0] - then.get(key, zero)[0], value[1] - then.get(key, zero)[1])
                for key, value in now.items()
            }

        return CardCounters(
            self.card, delta(self.rx, before.rx), delta(self.tx, before.tx), delta(self.drops, before.drops)
        )

    def sent_packets(self) -> int:
        return sum(packets for packets, _ in self.tx.values())

    def dropped_packets(self) -> int:
        return sum(packets for packets, _ in self.drops.values())

    @property
    def drop_packets(self) -> dict[str, int]:
        """Packets dropped, by reason."""
        return {reason: packets for reason, (packets, _bytes) in self.drops.items()}

    @property
    def rx_packets(self) -> dict[int, int]:
        """Frames received, by port (ports that received none left out)."""
        return {port: packets for port, (packets, _bytes) in self.rx.items() if packets}

    @property
    def tx_packets(self) -> dict[tuple[int, int], int]:
        """Packets sent, by (port, VC) (those that sent none left out)."""
        return {key: packets for key, (packets, _bytes) in self.tx.items() if packets}


def endpoints_from_state(state: Any) -> list[CardEndpoint]:
    """The cards of a network state (emulation.state.NetworkState or its JSON dict) as endpoints."""
    cards = state["cards"] if isinstance(state, Mapping) else state.cards
    result = []
    for entry in cards:
        get = entry.get if isinstance(entry, Mapping) else lambda key, e=entry: getattr(e, key)
        result.append(
            CardEndpoint(get("name"), int(get("card_id")), int(get("device_id")), get("grpc_address"))
        )
    return result


def program_of_state(state: Any) -> tuple[p4info_pb2.P4Info, bytes]:
    """(P4Info, device config) the network's cards run: its state's files, or a compile of its program."""
    from controller.compile import compile_card_program, read_p4info

    first = state.cards[0] if state.cards else None
    if first is not None and first.p4info and first.device_config:
        p4info_path, config_path = Path(first.p4info), Path(first.device_config)
        if p4info_path.is_file() and config_path.is_file():
            return read_p4info(p4info_path), config_path.read_bytes()
    return compile_card_program(state.program, "bmv2" if state.target == "bmv2" else "embedded")


class TwinController:
    """The controller of a network of cards (see the module doc); a context manager."""

    def __init__(
        self,
        endpoints: Iterable[CardEndpoint],
        program: Any,
        *,
        election_id: tuple[int, int] = CONTROLLER_ELECTION_ID,
        batch_size: int = DEFAULT_BATCH_SIZE,
        workers: int = DEFAULT_WORKERS,
        workers_per_address: int = WORKERS_PER_ADDRESS,
        timeout: float = CONNECT_TIMEOUT,
        progress: Progress | None = None,
    ) -> None:
        """`program`: (P4Info, device config), e.g. a controller.compile.CompiledCard."""
        self.endpoints = {endpoint.name: endpoint for endpoint in endpoints}
        p4info, device_config = program
        self.p4info: p4info_pb2.P4Info = p4info
        self.device_config: bytes = device_config
        self.index = P4InfoIndex(p4info)
        self.index.require(card.TABLES, card.ACTIONS, card.COUNTERS)
        #: every card's updates are serialised from the same kept bytes (tables, values, actions)
        self.encoder = UpdateEncoder(self.index)
        self.election_id = election_id
        self.batch_size = batch_size
        self.workers = max(1, workers)
        self.workers_per_address = max(1, workers_per_address)
        self.timeout = timeout
        self.progress = progress
        self.connections: dict[str, CardConnection] = {}
        #: whether sessions stay open between operations (see KEEP_SESSIONS_UP_TO)
        self.keep_sessions = len(self.endpoints) <= KEEP_SESSIONS_UP_TO
        self._lock = threading.Lock()
        self._done = 0
        self._total = 0

    @classmethod
    def from_state(cls, state: Any, program: Any = None, **options: Any) -> TwinController:
        """A controller for the cards of a running network's state (emulation.state.NetworkState).

        Without `program`, it uses the P4Info and device config files the cards were started
        with (``CardState.p4info``, ``CardState.device_config``), else compiles ``state.program``.
        """
        if program is None:
            program = program_of_state(state)
        return cls(endpoints_from_state(state), program, **options)

    def __enter__(self) -> TwinController:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """End every session (cards keep their tables)."""
        connections, self.connections = list(self.connections.values()), {}
        for connection in connections:
            try:
                connection.close()
            except Exception:  # a dead card's session: nothing to end
                pass

    # -- sessions -----------------------------------------------------------------

    def _connection(self, name: str, write: bool = True) -> CardConnection:
        """The session with card `name`, opened if needed; for writes it must be the primary's."""
        connection = self.connections.get(name)
        if connection is not None and write and not connection.is_primary:
            self._drop_connection(name)
            connection = None
        if connection is None:
            connection = CardConnection(self.endpoints[name], self.index, self.election_id, self.timeout)
            connection.open(require_primary=write)
            self.connections[name] = connection
        return connection

    def _drop_connection(self, name: str) -> None:
        connection = self.connections.pop(name, None)
        if connection is not None:
            try:
                connection.close()
            except Exception:
                pass

    def _each_card(self, names: Iterable[str], job: Callable[[str], Any]) -> dict[str, Any]:
        """Run job(name) for every card in the thread pool; results by name, in the order given.

        At most ``workers`` cards run at once, and at most ``workers_per_address`` of one P4Runtime
        address (switch process); cards are started in turn from each address, so that switch
        processes hosting many cards work in parallel instead of one after the other.
        """
        names = list(names)
        waiting: dict[str, deque[str]] = {}
        for name in names:
            waiting.setdefault(self._address(name), deque()).append(name)
        in_flight = dict.fromkeys(waiting, 0)
        slots = max(1, min(self.workers, len(names)))
        futures: dict[str, Future[Any]] = {}
        running: dict[Future[Any], str] = {}  # each running job's address
        with ThreadPoolExecutor(max_workers=slots, thread_name_prefix="twinnet-ctl") as pool:
            while waiting or running:
                started = True
                while started and len(running) < slots:  # one card per address per pass
                    started = False
                    for address in list(waiting):
                        if len(running) == slots:
                            break
                        if in_flight[address] == self.workers_per_address:
                            continue
                        queue = waiting.pop(address)  # and back at the end: the next pass starts elsewhere
                        name = queue.popleft()
                        if queue:
                            waiting[address] = queue
                        future = pool.submit(self._in_session, job, name)
                        futures[name], running[future] = future, address
                        in_flight[address] += 1
                        started = True
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    in_flight[running.pop(future)] -= 1
        return {name: futures[name].result() for name in names}

    def _in_session(self, job: Callable[[str], Any], name: str) -> Any:
        """job(name), the card's session closed after it unless sessions are kept."""
        try:
            return job(name)
        finally:
            if not self.keep_sessions:
                self._drop_connection(name)

    def _address(self, name: str) -> str:
        """The P4Runtime address (switch process) of a card; an unknown card stands for itself."""
        endpoint = self.endpoints.get(name)
        return endpoint.grpc_address if endpoint else name

    def _report(self, name: str, stage: str, done: int = 0, message: str = "", more: int = 0) -> None:
        """Tell the progress callback: `done` more entries handled (written or in place), `more` to do."""
        if self.progress is None:
            return
        with self._lock:
            self._done += done
            self._total += more
            event = ProgressEvent(name, stage, self._done, self._total, message)
        self.progress(event)

    # -- install ------------------------------------------------------------------

    def install(
        self, topology: Any, tables: Any, *, pipeline: str = "auto", hop_limit: int | None = None
    ) -> InstallReport:
        """Make every card hold the plan of `tables` on `topology` (first install and re-install alike)."""
        plans = plan_cards(topology, tables, hop_limit)
        return self.apply(plans, pipeline=pipeline, label=f"install {tables.algorithm}")

    def install_adaptive(
        self, model: Any, selection: str, *, pipeline: str = "auto", **options: Any
    ) -> InstallReport:
        """Make every card hold the plan of the adaptive tables `model` with a selection function.

        `options` go to controller.adaptive_plan.plan_adaptive_cards (threshold, capacity, hop_limit).
        """
        from controller.adaptive_plan import plan_adaptive_cards

        plans = plan_adaptive_cards(model, selection, **options)
        return self.apply(plans, pipeline=pipeline, label=f"install adaptive {selection}")

    def reinstall(self, topology: Any, tables: Any, *, hop_limit: int | None = None) -> InstallReport:
        """Switch the running cards to `tables` without touching their pipeline: the difference only."""
        plans = plan_cards(topology, tables, hop_limit)
        return self.apply(plans, pipeline="keep", label=f"reinstall {tables.algorithm}")

    def apply(
        self, plans: Mapping[str, CardPlan], *, pipeline: str = "auto", label: str = "install"
    ) -> InstallReport:
        """Synchronise every card named in `plans` with its plan (see the module doc)."""
        if pipeline not in PIPELINE_MODES:
            raise ValueError(f"pipeline must be one of {', '.join(PIPELINE_MODES)}, got {pipeline!r}")
        unknown = sorted(set(plans) - set(self.endpoints))
        if unknown:
            raise KeyError(f"no address for card(s) {', '.join(unknown[:8])} in the network state")
        started = time.monotonic()
        with self._lock:
            self._done = 0
            self._total = sum(len(plan.entries) + len(_DEFAULT_TABLES) for plan in plans.values())
        # the plans (millions of entries at 1,024 cards) outlive the install: out of the cyclic
        # collector's full passes while it runs
        gc.freeze()
        try:
            results = self._each_card(plans, lambda name: self._sync_card(plans[name], pipeline))
        finally:
            gc.unfreeze()
        entries = sum(len(plan.entries) for plan in plans.values())
        return InstallReport(label, results, entries, time.monotonic() - started)

    def _sync_card(self, plan: CardPlan, pipeline: str) -> CardResult:
        started = time.monotonic()
        fresh = plan.name not in self.connections
        result = self._try_sync(plan, pipeline)
        if result.error and not fresh and not result.written:  # a session that went stale: once more, anew
            result = self._try_sync(plan, pipeline)
        result.seconds = time.monotonic() - started
        self._report(plan.name, "done" if result.ok else "failed", message=result.error or "")
        return result

    def _try_sync(self, plan: CardPlan, pipeline: str) -> CardResult:
        result = CardResult(plan.name)
        try:
            connection = self._connection(plan.name)
            self._report(plan.name, "connected")
            result.pipeline_pushed = self._ensure_pipeline(connection, pipeline)
            if result.pipeline_pushed:
                self._report(plan.name, "pipeline pushed")
            current, defaults = (
                ({}, _PROGRAM_DEFAULTS) if result.pipeline_pushed else self._read_card(connection)
            )
            updates, described = self._updates_for(plan, current, defaults, result)
            self._report(plan.name, "compared", result.unchanged, more=result.deleted)
            failures = connection.write(
                updates,
                lambda i: described[i] if isinstance(described[i], str) else described[i].describe(),
                self.batch_size,
                progress=lambda written: self._report(plan.name, "writing", written),
            )
        except (CardError, P4InfoLookupError, EncodingError) as error:
            result.error = str(error) if isinstance(error, CardError) else f"card {plan.name}: {error}"
            result.inserted = result.modified = result.deleted = 0
            self._drop_connection(plan.name)
            return result
        result.failures = failures
        for failure in failures:  # rejected updates are not counted as written
            if failure.kind == "insert":
                result.inserted -= 1
            elif failure.kind == "modify":
                result.modified -= 1
            else:
                result.deleted -= 1
        return result

    def _ensure_pipeline(self, connection: CardConnection, pipeline: str) -> bool:
        """Push the program if the mode says so; return whether it was pushed (the tables are then empty)."""
        if pipeline == "push":
            connection.set_pipeline(self.p4info, self.device_config)
            return True
        running = connection.get_p4info()
        if running is None or not running.tables:
            if pipeline == "keep":
                raise CardError(connection.name, "runs no program (pipeline='keep' does not push one)")
            connection.set_pipeline(self.p4info, self.device_config)
            return True
        difference = p4info_mismatch(self.p4info, running, ("controller", "card"))
        if difference:
            raise CardError(
                connection.name, f"its program's P4Info does not match the controller's: {difference}"
            )
        return False

    def _read_card(self, connection: CardConnection) -> tuple[dict[EntryKey, EntrySpec], dict[str, Default]]:
        """What a card holds: its entries in the controller's tables, and the default actions of
        card_config and selection_config (by table)."""
        entities = []
        for table in card.ENTRY_TABLES:
            entity = p4runtime_pb2.Entity()
            entity.table_entry.table_id = self.index.table_id(table)
            entities.append(entity)
        for table in _DEFAULT_TABLES:
            entity = p4runtime_pb2.Entity()
            entity.table_entry.table_id = self.index.table_id(table)
            entity.table_entry.is_default_action = True
            entities.append(entity)
        current: dict[EntryKey, EntrySpec] = {}
        defaults: dict[str, Default] = {}
        for is_default, spec in connection.read_specs(entities):
            if is_default:
                if spec.table in _DEFAULT_TABLES:
                    defaults[spec.table] = (spec.action, spec.params)
            elif spec.table in card.ENTRY_TABLES:
                current[spec.key] = spec
        return current, defaults

    def _updates_for(
        self,
        plan: CardPlan,
        current: Mapping[EntryKey, EntrySpec],
        defaults: Mapping[str, Default],
        result: CardResult,
    ) -> tuple[list[bytes], list[EntrySpec | str]]:
        """The updates that turn `current` into the plan, in write order, serialised (UpdateEncoder), with
        what each one writes (its entry, or a description), to name a rejected one."""
        buckets: dict[tuple[int, str], list[EntrySpec]] = {key: [] for key in _WRITE_ORDER}
        for key, spec in plan.entries.items():
            have = current.get(key)
            if have is None:
                buckets[INSERT, spec.table].append(spec)
            elif have != spec:
                buckets[MODIFY, spec.table].append(spec)
            else:
                result.unchanged += 1
        for key, spec in current.items():
            if key not in plan.entries:
                buckets[DELETE, spec.table].append(spec)
        updates: list[bytes] = []
        described: list[EntrySpec | str] = []

        def set_default(table: str) -> None:
            wanted = planned_defaults(plan)[table]
            if defaults.get(table) != wanted:
                updates.append(update(MODIFY, default_entry(self.index, table, *wanted)).SerializeToString())
                described.append(f"{table} default -> {wanted[0]}{wanted[1]}")
                result.modified += 1
            else:
                result.unchanged += 1

        set_default(card.CARD_CONFIG)
        encode = self.encoder.encode
        for kind, table in _WRITE_ORDER:
            if (kind, table) == _WRITE_ORDER[_FIRST_DELETE]:  # both route tables filled: switch between them
                set_default(card.SELECTION_CONFIG)
            specs = buckets[kind, table]
            updates += [encode(kind, spec) for spec in specs]
            described += specs
            if kind == INSERT:
                result.inserted += len(specs)
            elif kind == MODIFY:
                result.modified += len(specs)
            else:
                result.deleted += len(specs)
        return updates, described

    # -- verify -------------------------------------------------------------------

    def verify(self, topology: Any, tables: Any, *, hop_limit: int | None = None) -> VerifyReport:
        """Read every card's entries back and compare them with the plan of `tables`."""
        return self.verify_plans(plan_cards(topology, tables, hop_limit))

    def verify_plans(self, plans: Mapping[str, CardPlan]) -> VerifyReport:
        """Every difference between the cards and `plans`: missing, extra or different entries."""

        def check(name: str) -> list[EntryDifference] | str:
            plan = plans[name]
            try:
                current, defaults = self._read_card(self._connection(name, write=False))
            except CardError as error:
                self._drop_connection(name)
                return str(error)
            found: list[EntryDifference] = []
            for table, wanted in planned_defaults(plan).items():
                if defaults.get(table) != wanted:
                    expected = EntrySpec(table, (), *wanted)
                    actual = EntrySpec(table, (), *defaults[table]) if table in defaults else None
                    found.append(
                        EntryDifference(name, "different" if actual else "missing", expected, actual)
                    )
            for key, spec in sorted(plan.entries.items()):
                have = current.get(key)
                if have is None:
                    found.append(EntryDifference(name, "missing", spec, None))
                elif have != spec:
                    found.append(EntryDifference(name, "different", spec, have))
            for key, spec in sorted(current.items()):
                if key not in plan.entries:
                    found.append(EntryDifference(name, "extra", None, spec))
            return found

        outcome = self._each_card(plans, check)
        differences = [d for result in outcome.values() if not isinstance(result, str) for d in result]
        errors = {name: result for name, result in outcome.items() if isinstance(result, str)}
        return VerifyReport(differences, errors, sum(len(plan.entries) + 2 for plan in plans.values()))

    # -- counters -----------------------------------------------------------------

    def read_counters(
        self, topology: Any, cards: Sequence[str] | None = None
    ) -> dict[str, CardCounters | str]:
        """Counters of every card (or of `cards`): per port received, per (port, VC) sent, drops per reason.

        A card that cannot be read gives its error message instead.
        """
        names = (
            list(cards)
            if cards is not None
            else sorted(self.endpoints, key=lambda n: self.endpoints[n].card_id)
        )

        def read(name: str) -> CardCounters | str:
            ports = range(1, topology.cards[name].num_ports + 1)
            cells = [(card.COUNTER_RX_PORT, port) for port in ports]
            cells += [
                (card.COUNTER_TX_PORT_VC, card.port_vc_index(port, vc))
                for port in ports
                for vc in range(card.VCS_PER_PORT)
            ]
            cells += [(card.COUNTER_DROPS, cell) for cell in card.DROP_REASONS.values()]
            try:
                values = self._connection(name, write=False).read_counters(cells)
            except CardError as error:
                self._drop_connection(name)
                return str(error)
            reasons = {cell: reason for reason, cell in card.DROP_REASONS.items()}
            rx, tx, drops = {}, {}, {}
            for (counter, cell), value in values.items():
                if counter == card.COUNTER_RX_PORT:
                    rx[cell] = value
                elif counter == card.COUNTER_TX_PORT_VC:
                    tx[divmod(cell, card.VCS_PER_PORT)] = value
                elif cell in reasons:
                    drops[reasons[cell]] = value
            return CardCounters(name, rx, tx, drops)

        return self._each_card(names, read)
