"""STF files: p4c's packet tests for bmv2 (backends/bmv2/bmv2stf.py at p4c v1.2.4.9), read into commands.

Verbs: ``add TABLE [PRIORITY] KEY:VALUE ... ACTION(NAME:VALUE, ...)``, ``setdefault TABLE
ACTION(...)``, ``packet PORT HEX``, ``expect PORT HEX[$]``, the multicast verbs
``mc_mgrp_create GROUP``, ``mc_node_create RID PORT...``, ``mc_node_associate GROUP NODE``,
``mirroring_add[_mc] SESSION PORT|GROUP``, and ``wait``; reads of state
(``register_read``, ``mirroring_get``, ``counter_read``...) check nothing and are kept as no-ops.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from p4switch.errors import P4CompileError

_ACTION = re.compile(r"^(?P<name>[\w.$\[\]]+)\s*\((?P<args>.*)\)\s*$")
_NO_OPS = {
    "register_read",
    "register_write",
    "mirroring_get",
    "counter_read",
    "counter_write",
    "wait",
    "meter_get_rates",
}


class StfError(P4CompileError):
    """A line of an STF file the runner cannot read; str() is "file:line:col: error: message"."""


@dataclass
class Command:
    """One line of an STF file: its verb, fields, and where it is."""

    verb: str
    line: int
    args: dict = field(default_factory=dict)


@dataclass
class Expected:
    """An expected frame: hex nibbles ('*' free), and whether it must end where the pattern ends."""

    port: int
    nibbles: str
    exact_length: bool

    def matches(self, frame: bytes) -> bool:
        """Whether `frame` is this pattern (as a prefix unless exact_length)."""
        got = frame.hex()
        if len(got) < len(self.nibbles) or (self.exact_length and len(got) != len(self.nibbles)):
            return False
        return all(e == "*" or e == g for e, g in zip(self.nibbles, got, strict=False))

    def text(self) -> str:
        """The pattern as STF writes it."""
        return self.nibbles.upper() + ("$" if self.exact_length else "")


def read_stf(path: str | Path) -> list[Command]:
    """The commands of an STF file; StfError at the first line it cannot read."""
    path = Path(path)
    commands: list[Command] = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        verb, _, rest = text.partition(" ")
        try:
            commands.append(_command(verb.lower(), rest.strip(), number))
        except (ValueError, IndexError) as error:
            raise StfError(str(path), number, 1, f"cannot read this STF line: {error}") from error
    return commands


def _command(verb: str, rest: str, line: int) -> Command:
    """One command from its verb and the rest of its line."""
    words = rest.split()
    if verb == "packet":
        return Command(verb, line, {"port": int(words[0], 0), "data": _hex_bytes("".join(words[1:]))})
    if verb == "expect":
        pattern = "".join(words[1:])
        exact = pattern.endswith("$")
        nibbles = pattern.rstrip("$").lower()
        if not re.fullmatch(r"[0-9a-f*]*", nibbles):
            raise ValueError(f"expected frame {pattern!r} is not hex")
        return Command(verb, line, {"expected": Expected(int(words[0], 0), nibbles, exact)})
    if verb in ("add", "setdefault"):
        return Command(verb, line, _table_command(verb, rest))
    if verb == "mc_mgrp_create":
        return Command(verb, line, {"group": int(words[0], 0)})
    if verb == "mc_node_create":
        return Command(verb, line, {"rid": int(words[0], 0), "ports": [int(w, 0) for w in words[1:]]})
    if verb == "mc_node_associate":
        return Command(verb, line, {"group": int(words[0], 0), "node": int(words[1], 0)})
    if verb in ("mirroring_add", "mirroring_add_mc"):
        return Command(verb, line, {"session": int(words[0], 0), "target": int(words[1], 0)})
    if verb in _NO_OPS:
        return Command("no_op", line, {"verb": verb})
    raise ValueError(f"unknown verb {verb!r}")


def _table_command(verb: str, rest: str) -> dict:
    """Fields of an ``add``/``setdefault`` line: table, priority, keys, action, action arguments."""
    paren = rest.index("(")
    head, call = rest[:paren], rest[paren:]
    words = head.split()
    action = words.pop()
    match = _ACTION.match(action + call)
    if match is None:
        raise ValueError(f"cannot read the action call {action + call!r}")
    table = words.pop(0)
    priority = None
    if words and re.fullmatch(r"\d+", words[0]):
        priority = int(words.pop(0))
    keys = []
    for word in words:
        name, _, value = word.rpartition(":")
        if not name:
            raise ValueError(f"key {word!r} is not NAME:VALUE")
        keys.append((_stack_name(name), value))
    arguments = []
    for item in filter(None, (a.strip() for a in match["args"].split(","))):
        name, _, value = item.partition(":")
        arguments.append((name.strip(), int(value.strip(), 0)))
    if verb == "setdefault" and keys:
        raise ValueError("setdefault takes no keys")
    return {
        "table": table,
        "priority": priority,
        "keys": keys,
        "action": match["name"],
        "arguments": arguments,
    }


def _stack_name(name: str) -> str:
    """``hdr.s$0.f`` as P4Info writes it: ``hdr.s[0].f``."""
    return re.sub(r"\$(\d+)", r"[\1]", name)


def _hex_bytes(text: str) -> bytes:
    """Bytes of a hex string (an odd trailing nibble is padded with 0, as bmv2stf does)."""
    if len(text) % 2:
        text += "0"
    return bytes.fromhex(text)
