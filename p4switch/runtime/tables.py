"""Match-action tables at run time: validated control-plane entries and fast data-plane lookup.

All key fields of a table are concatenated into one integer, so an entry matches
when ``key & entry_mask == entry_value`` (plus range checks, if any). Tables with
only exact keys are dicts; tables whose keys are exact and lpm are dicts per
prefix mask tried longest first; the others scan entries by priority.

The lookup structures are maintained incrementally: an insert or delete costs a dict
operation (exact, lpm) or one binary search and list insert (priority order), never a
rebuild of the whole table, so that the control plane can install thousands of entries
in batches at a steady rate.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import count
from types import CodeType, FunctionType

from p4switch.compiler.model import ActionSpec, TableSpec
from p4switch.compiler.types import mask as all_ones
from p4switch.errors import EntryError, TableFullError
from p4switch.runtime.meters import MeterCell

#: checked (action, parameters) pairs a table keeps for its entries to share (route tables have a few
#: hundred: egress ports times VCs)
BOUND_ACTIONS_KEPT = 4096


@dataclass(frozen=True)
class Entry:
    """A table entry as the control plane sees it."""

    match: dict
    action: str
    params: tuple
    priority: int = 0


# The code of an action whose body does nothing, as the code generator writes it (NoAction).
_EMPTY_ACTION_CODE = next(
    const
    for const in compile("def action(L):\n    pass\n", "<empty action>", "exec").co_consts
    if isinstance(const, CodeType)
)


def _does_nothing(function: Callable) -> bool:
    """Whether a generated action function has an empty body (the same code as _EMPTY_ACTION_CODE)."""
    code = function.__code__
    return (
        code.co_argcount == 1
        and code.co_code == _EMPTY_ACTION_CODE.co_code
        and code.co_consts == _EMPTY_ACTION_CODE.co_consts
        and code.co_names == ()
    )


def _data_plane_call(action: Callable, args: tuple) -> Callable:
    """What entry.call(L) runs: action(*args, L) at the least cost per packet.

    An action without parameters is called directly (no partial in between); an action
    that does nothing (NoAction, the usual default of a table that misses) becomes the
    C builtin ``id``, which takes L and ignores it without a Python-level call.
    """
    if not args:
        if isinstance(action, FunctionType) and _does_nothing(action):
            return id
        return action
    return partial(action, *args)


class RuntimeEntry:
    """An installed entry (or a table's default entry) in the form the data plane uses."""

    __slots__ = (
        "action",
        "args",
        "call",
        "hit",
        "aid",
        "counts",
        "meter",
        "action_name",
        "match",
        "priority",
        "value",
        "mask",
        "ranges",
        "rank",
    )

    def __init__(
        self,
        action: Callable,
        args: tuple,
        hit: bool,
        aid: int,
        action_name: str,
        match: dict | None = None,
        priority: int = 0,
        call: Callable | None = None,
    ) -> None:
        """Bind the action to its arguments for the data plane (`call`: that binding, made already)."""
        self.action = action
        self.args = args
        self.call = (
            _data_plane_call(action, args) if call is None else call
        )  # the data plane calls entry.call(L)
        self.hit = hit
        self.aid = aid
        self.counts = [0, 0]
        self.meter: MeterCell | None = None  # a direct meter's cell (tables with `meters = ...`)
        self.action_name = action_name
        self.match = match or {}
        self.priority = priority
        self.value = 0
        self.mask = 0
        self.ranges: tuple = ()
        self.rank: tuple = ()  # (-priority, insertion number): its place in Table.ordered


class Table:
    """One table of one pipeline: entries, default action, lookup."""

    def __init__(
        self, spec: TableSpec, actions: dict[str, ActionSpec], functions: dict[str, Callable]
    ) -> None:
        """Empty table with the program's default action and const entries."""
        self.spec = spec
        self.name = spec.name
        self.actions = actions
        self.functions = functions
        self.allowed = {ref.action: ref.scope for ref in spec.actions}
        self.kinds = [k.match_kind for k in spec.keys]
        self.widths = [k.width for k in spec.keys]
        self.offsets = []
        offset = sum(self.widths)
        for width in self.widths:
            offset -= width
            self.offsets.append(offset)
        self.all_exact = all(kind == "exact" for kind in self.kinds)
        self.lpm_only = not self.all_exact and all(kind in ("exact", "lpm") for kind in self.kinds)
        self.needs_priority = any(kind in ("ternary", "range", "optional") for kind in self.kinds)
        self.entries: dict[tuple, RuntimeEntry] = {}
        self.by_key: dict = {}  # exact tables: key tuple -> entry
        self.by_mask: list[tuple[int, dict]] = []  # lpm tables: (mask, {value: entry}), longest first
        self.ordered: list[RuntimeEntry] = []  # other tables: by priority
        self.ranks: list[tuple] = []  # the entries' ranks, parallel to ordered (for bisect)
        self.buckets: dict[int, dict] = {}  # lpm tables: mask -> {value: entry}, as in by_mask
        self.insertions = count()  # numbers entries in insertion order (ties of equal priority)
        self.key_names = tuple(k.name for k in spec.keys)
        self.exact_mask = all_ones(sum(self.widths))  # every entry's mask in an all-exact table
        #: (action, params) -> (function, data-plane call, action id), checked: the *_exact methods' entries
        #: share them (one partial per distinct action and parameters, not one per entry)
        self.bound: dict[tuple[str, tuple], tuple[Callable, Callable, int]] = {}
        self.is_const = spec.const_entries is not None
        self.default = self._runtime_entry(spec.default_action, spec.default_params, False)
        if spec.const_entries is not None:
            for const in spec.const_entries:
                self._insert(const.match, const.action, const.params, const.priority, check_const=False)

    # ---------------------------------------------------------------- data plane
    def lookup(self, key: tuple) -> RuntimeEntry:
        """The entry matching key (a tuple of field values), or the default entry."""
        if self.all_exact:
            return self.by_key.get(key, self.default)
        packed = 0
        for value, width in zip(key, self.widths, strict=True):
            packed = (packed << width) | value
        if self.lpm_only:
            for msk, bucket in self.by_mask:
                found = bucket.get(packed & msk)
                if found is not None:
                    return found
            return self.default
        for entry in self.ordered:
            if packed & entry.mask == entry.value:
                if entry.ranges and not all(low <= key[i] <= high for i, low, high in entry.ranges):
                    continue
                return entry
        return self.default

    # ---------------------------------------------------------------- control plane
    def insert(self, match: dict, action: str, params, priority: int = 0) -> None:
        """Add an entry; EntryError if invalid or already present."""
        self._insert(match, action, params, priority, check_const=True)

    def modify(self, match: dict, action: str, params, priority: int = 0) -> None:
        """Change the action of an existing entry."""
        self._check_mutable()
        key, _, _, _ = self._normalize(match, priority)
        old = self.entries.get(key)
        if old is None:
            raise EntryError(
                f"table {self.name}: no entry with match {match} (priority {priority}) to modify"
            )
        new = self._runtime_entry(action, params, True, match=dict(match), priority=priority, for_entry=True)
        new.value, new.mask, new.ranges = old.value, old.mask, old.ranges
        new.counts = old.counts
        new.meter = old.meter
        self._remove(key)
        self._add(key, new)

    def delete(self, match: dict, priority: int = 0) -> None:
        """Remove an entry; EntryError if it does not exist."""
        self._check_mutable()
        key, _, _, _ = self._normalize(match, priority)
        if key not in self.entries:
            raise EntryError(
                f"table {self.name}: no entry with match {match} (priority {priority}) to delete"
            )
        self._remove(key)

    def set_default(self, action: str, params) -> None:
        """Change the default action."""
        if self.spec.default_is_const:
            raise EntryError(f"table {self.name}: the default action is const ({self.spec.default_action})")
        self.default = self._runtime_entry(action, params, False, for_default=True)

    def reset_default(self) -> None:
        """Restore the program's default action."""
        self.default = self._runtime_entry(self.spec.default_action, self.spec.default_params, False)

    def find(self, match: dict, priority: int = 0) -> RuntimeEntry:
        """The installed entry with exactly this match, or EntryError."""
        key, _, _, _ = self._normalize(match, priority)
        entry = self.entries.get(key)
        if entry is None:
            raise EntryError(f"table {self.name}: no entry with match {match} (priority {priority})")
        return entry

    def list_entries(self) -> list[Entry]:
        """All installed entries in control-plane form."""
        return [Entry(dict(e.match), e.action_name, tuple(e.args), e.priority) for e in self.entries.values()]

    # ------------------------------------------------- control plane, all-exact tables
    # The fast path of P4Runtime writes (p4switch.p4runtime.entities): `values` are the key fields in key
    # order, ints the caller has checked against the fields' widths; the action, its parameters,
    # duplicates, missing entries and the table's size are checked here as by insert/modify/delete.

    def insert_exact(self, values: tuple[int, ...], action: str, params: tuple[int, ...]) -> None:
        """Add an entry to an all-exact table; EntryError if invalid or already present."""
        self._check_mutable()
        key = (*values, 0)
        if key in self.entries:
            match = dict(zip(self.key_names, values, strict=True))
            raise EntryError(f"table {self.name}: an entry with match {match} (priority 0) already exists")
        if len(self.entries) >= self.spec.size:
            raise TableFullError(f"table {self.name} is full ({self.spec.size} entries)")
        entry = self._bound_entry(action, params, dict(zip(self.key_names, values, strict=True)))
        packed = 0
        for value, width in zip(values, self.widths, strict=True):
            packed = (packed << width) | value
        entry.value, entry.mask = packed, self.exact_mask
        self.entries[key] = entry  # as _add does for an all-exact table
        self.by_key[values] = entry

    def modify_exact(self, values: tuple[int, ...], action: str, params: tuple[int, ...]) -> None:
        """Change the action of an entry of an all-exact table; EntryError if invalid or absent."""
        self._check_mutable()
        key = (*values, 0)
        old = self.entries.get(key)
        if old is None:
            match = dict(zip(self.key_names, values, strict=True))
            raise EntryError(f"table {self.name}: no entry with match {match} (priority 0) to modify")
        new = self._bound_entry(action, params, dict(old.match))
        new.value, new.mask, new.ranges = old.value, old.mask, old.ranges
        new.counts = old.counts
        new.meter = old.meter
        self._remove(key)
        self._add(key, new)

    def delete_exact(self, values: tuple[int, ...]) -> None:
        """Remove an entry of an all-exact table; EntryError if it does not exist."""
        self._check_mutable()
        key = (*values, 0)
        if key not in self.entries:
            match = dict(zip(self.key_names, values, strict=True))
            raise EntryError(f"table {self.name}: no entry with match {match} (priority 0) to delete")
        self._remove(key)

    def _bound_entry(self, action: str, params: tuple[int, ...], match: dict) -> RuntimeEntry:
        """A new entry of `action(params)`, checked as _runtime_entry checks it (once per distinct pair)."""
        bound = self.bound.get((action, params))
        if bound is None:
            checked = self._runtime_entry(action, params, True, for_entry=True)
            bound = (checked.action, checked.call, checked.aid)
            if len(self.bound) < BOUND_ACTIONS_KEPT:
                self.bound[action, params] = bound
        function, call, aid = bound
        entry = RuntimeEntry(function, params, True, aid, action, match, 0, call)
        if self.spec.direct_meter is not None:
            entry.meter = MeterCell()
        return entry

    # ---------------------------------------------------------------- internals
    def _check_mutable(self) -> None:
        """Raise if the table has const entries."""
        if self.is_const:
            raise EntryError(f"table {self.name} has const entries and cannot be changed")

    def _insert(self, match: dict, action: str, params, priority: int, check_const: bool) -> None:
        """Validate and add an entry."""
        if check_const:
            self._check_mutable()
        key, value, msk, ranges = self._normalize(match, priority)
        if key in self.entries:
            raise EntryError(
                f"table {self.name}: an entry with match {match} (priority {priority}) already exists"
            )
        if len(self.entries) >= self.spec.size:
            raise TableFullError(f"table {self.name} is full ({self.spec.size} entries)")
        entry = self._runtime_entry(
            action, params, True, match=dict(match), priority=priority, for_entry=True
        )
        entry.value, entry.mask, entry.ranges = value, msk, ranges
        self._add(key, entry)

    def _add(self, key: tuple, entry: RuntimeEntry) -> None:
        """Store an entry and add it to the lookup structures."""
        self.entries[key] = entry
        if self.all_exact:
            self.by_key[key[:-1]] = entry  # the identity key ends with the (unused) priority
        elif self.lpm_only:
            bucket = self.buckets.get(entry.mask)
            if bucket is None:
                bucket = self.buckets[entry.mask] = {}
                self._sort_masks()
            bucket[entry.value] = entry
        else:
            # Highest priority first; equal priorities keep insertion order, so a later entry
            # goes after its equals (bisect_right on (-priority, insertion number)).
            entry.rank = (-entry.priority, next(self.insertions))
            place = bisect_right(self.ranks, entry.rank)
            self.ranks.insert(place, entry.rank)
            self.ordered.insert(place, entry)

    def _remove(self, key: tuple) -> None:
        """Drop an entry from the entries and the lookup structures."""
        entry = self.entries.pop(key)
        if self.all_exact:
            del self.by_key[key[:-1]]
        elif self.lpm_only:
            bucket = self.buckets[entry.mask]
            del bucket[entry.value]
            if not bucket:
                del self.buckets[entry.mask]
                self._sort_masks()
        else:
            place = bisect_left(self.ranks, entry.rank)  # ranks are unique: this is the entry
            del self.ranks[place]
            del self.ordered[place]

    def _sort_masks(self) -> None:
        """Order the lpm buckets longest prefix first (only when a prefix length appears or goes).

        The buckets themselves are shared with by_mask, so entries added to an existing
        bucket are visible to lookups without re-sorting.
        """
        self.by_mask = sorted(self.buckets.items(), key=lambda item: -item[0].bit_count())

    def _normalize(self, match: dict, priority: int) -> tuple[tuple, int, int, tuple]:
        """Validate a match; return (identity key, packed value, packed mask, range checks)."""
        if not isinstance(match, dict):
            raise EntryError(f"table {self.name}: match must be a dict of field name to value")
        known = {k.name for k in self.spec.keys}
        for name in match:
            if name not in known:
                raise EntryError(f"table {self.name}: unknown match field {name!r} (fields: {sorted(known)})")
        if not isinstance(priority, int) or priority < 0:
            raise EntryError(f"table {self.name}: priority must be a non-negative int")
        identity = []
        value = msk = 0
        ranges = []
        for index, key in enumerate(self.spec.keys):
            width, kind, full = key.width, key.match_kind, all_ones(key.width)
            given = match.get(key.name)
            field_value = field_mask = 0
            if kind == "exact":
                if given is None:
                    raise EntryError(f"table {self.name}: exact field {key.name} is missing")
                field_value = self._fits(given, width, key.name)
                field_mask = full
                identity.append(field_value)
            elif kind == "lpm":
                if given is None:
                    given = (0, 0)
                field_value, plen = self._pair(given, key.name, "(value, prefix_len)")
                field_value = self._fits(field_value, width, key.name)
                if not isinstance(plen, int) or not 0 <= plen <= width:
                    raise EntryError(
                        f"table {self.name}: prefix length {plen!r} of {key.name} not in 0..{width}"
                    )
                field_mask = full ^ all_ones(width - plen)
                if field_value & ~field_mask:
                    raise EntryError(
                        f"table {self.name}: lpm value of {key.name} has bits set beyond the /{plen} prefix"
                    )
                identity.append((field_value, plen))
            elif kind == "ternary":
                if given is None:
                    given = (0, 0)
                field_value, field_mask = self._pair(given, key.name, "(value, mask)")
                field_value = self._fits(field_value, width, key.name)
                field_mask = self._fits(field_mask, width, key.name)
                if field_value & ~field_mask:
                    raise EntryError(
                        f"table {self.name}: ternary value of {key.name} has bits outside its mask"
                    )
                identity.append((field_value, field_mask))
            elif kind == "range":
                if given is None:
                    given = (0, full)
                low, high = self._pair(given, key.name, "(low, high)")
                low = self._fits(low, width, key.name)
                high = self._fits(high, width, key.name)
                if low > high:
                    raise EntryError(f"table {self.name}: range of {key.name} has low {low} > high {high}")
                if (low, high) != (0, full):
                    ranges.append((index, low, high))
                identity.append((low, high))
            elif kind == "optional":
                if given is not None:
                    field_value = self._fits(given, width, key.name)
                    field_mask = full
                identity.append(given if given is None else field_value)
            value = (value << width) | field_value
            msk = (msk << width) | field_mask
        identity.append(priority if self.needs_priority else 0)
        return tuple(identity), value, msk, tuple(ranges)

    def _fits(self, value, width: int, name: str) -> int:
        """The value if it is an int that fits the width, else EntryError."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise EntryError(f"table {self.name}: value {value!r} of {name} is not an int")
        if not 0 <= value <= all_ones(width):
            raise EntryError(f"table {self.name}: value {value} of {name} does not fit in {width} bits")
        return value

    def _pair(self, given, name: str, form: str) -> tuple:
        """The two members of a (value, mask)-style match value, else EntryError."""
        if not (isinstance(given, tuple | list) and len(given) == 2):
            raise EntryError(f"table {self.name}: field {name} needs {form}, got {given!r}")
        return given[0], given[1]

    def _runtime_entry(
        self,
        action: str,
        params,
        hit: bool,
        match: dict | None = None,
        priority: int = 0,
        for_entry: bool = False,
        for_default: bool = False,
    ) -> RuntimeEntry:
        """Validate an action with its parameters and build the runtime entry."""
        if action not in self.allowed:
            raise EntryError(
                f"table {self.name}: action {action!r} is not one of its actions {sorted(self.allowed)}"
            )
        scope = self.allowed[action]
        if for_entry and scope == "DEFAULT_ONLY":
            raise EntryError(f"table {self.name}: action {action} may only be the default action")
        if for_default and scope == "TABLE_ONLY":
            raise EntryError(f"table {self.name}: action {action} may not be the default action")
        spec = self.actions[action]
        params = tuple(params or ())
        if len(params) != len(spec.params):
            raise EntryError(
                f"table {self.name}: action {action} takes {len(spec.params)} parameters, got {len(params)}"
            )
        for value, param in zip(params, spec.params, strict=True):
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 0 <= value <= all_ones(param.width)
            ):
                raise EntryError(
                    f"table {self.name}: parameter {param.name} of {action} is {param.width} bits, "
                    f"got {value!r}"
                )
        entry = RuntimeEntry(self.functions[action], params, hit, spec.aid, action, match, priority)
        if for_entry and self.spec.direct_meter is not None:
            entry.meter = MeterCell()
        return entry
