"""Run-time support the generated pipeline code calls: packets, header stacks, externs, checksums, hashes."""

from __future__ import annotations

import random as _random
import zlib


class ParserError(Exception):
    """Raised inside a parser: ends parsing with standard_metadata.parser_error = code."""

    def __init__(self, code: int) -> None:
        """Carry the error code."""
        super().__init__(code)
        self.code = code


class ExitPipeline(Exception):
    """The P4 `exit` statement: ends the current control block."""


class PacketIn:
    """The packet being parsed: bytes and the byte offset of the next unparsed byte."""

    __slots__ = ("data", "off", "n")

    def __init__(self, data: bytes) -> None:
        """Start reading at the first byte."""
        self.data = data
        self.off = 0
        self.n = len(data)

    def peek(self, width: int, too_short: int) -> int:
        """The next `width` bits as an int, without consuming them (lookahead)."""
        nbytes = (width + 7) // 8
        if self.off + nbytes > self.n:
            raise ParserError(too_short)
        value = int.from_bytes(self.data[self.off : self.off + nbytes], "big")
        return value >> (nbytes * 8 - width)

    def advance(self, bits: int, too_short: int) -> None:
        """Skip `bits` bits (a multiple of 8)."""
        if bits % 8:
            raise ParserError(too_short)
        if self.off + bits // 8 > self.n:
            raise ParserError(too_short)
        self.off += bits // 8


class BlankHeaderWrite(TypeError):
    """A write reached a shared blank header element (a code generation bug, never silent)."""


def make_blank(header_class: type):
    """The shared, read-only, invalid element a header stack holds until an element is written.

    Stacks are created per packet; with blanks, a 24-deep stack costs one list, and an
    element object is only created when something writes to it (`HeaderStack.w`).
    """

    def refuse(self, *args) -> None:
        raise BlankHeaderWrite(f"write to a shared blank {header_class.__name__}")

    blank_class = type(
        "Blank" + header_class.__name__,
        (header_class,),
        {"__setattr__": refuse, "assign": refuse, "extract": refuse, "__doc__": "Read-only invalid element."},
    )
    blank = blank_class.__new__(blank_class)
    for name, value in header_class().__dict__.items():  # a union's member headers: blanks too
        object.__setattr__(blank, name, make_blank(type(value)) if hasattr(value, "_v") else value)
    return blank


def stored_headers(items: list, blank) -> list:
    """The elements of a header stack's list that are not the shared blank, in index order.

    ``list.count`` compares by identity first, so counting the blanks is one C-level
    pass. Usually the stored elements come first and the blanks after them (extract,
    push_front and writes fill a stack from index 0): then the answer is a slice.
    """
    blanks = items.count(blank)
    if not blanks:
        return items
    head = items[: len(items) - blanks]
    if not head.count(blank):
        return head
    return [header for header in items if header is not blank]


def header_from_bytes(cls: type, data: bytes):
    """A header of class ``cls`` extracted from exactly its bytes: a stack element the fused
    driver kept raw (p4switch.compiler.fusion.raw_elements) made an object when written or queued."""
    header = cls()
    header.extract(PacketIn(data))
    return header


class HeaderStack:
    """A header stack: its elements and the next index (number of extracted/pushed elements).

    Unwritten elements are the class's shared blank (invalid, fields at their defaults);
    code that writes to an element gets it through `w(i)`, which puts a real header there.
    """

    __slots__ = ("items", "nxt", "cls", "blank")

    def __init__(self, cls: type, blank, size: int) -> None:
        """`size` blank elements of header class `cls`; nothing extracted yet."""
        self.items = [blank] * size
        self.nxt = 0
        self.cls = cls
        self.blank = blank

    def w(self, index: int):
        """Element `index`, made a real (writable) header if it is still the blank."""
        header = self.items[index]
        if header is self.blank:
            header = self.items[index] = self.cls()
        return header

    def stored(self) -> list:
        """The elements that are not the shared blank, in index order (for the deparser)."""
        return stored_headers(self.items, self.blank)

    def copy(self) -> HeaderStack:
        """An independent copy (P4 assignment semantics)."""
        twin = HeaderStack.__new__(HeaderStack)
        blank = self.blank
        twin.items = [h if h is blank else h.copy() for h in self.items]
        twin.nxt, twin.cls, twin.blank = self.nxt, self.cls, blank
        return twin

    def assign(self, other: HeaderStack) -> None:
        """Copy another stack's contents into this one."""
        blank = self.blank
        self.items[:] = [h if h is blank else h.copy() for h in other.items]
        self.nxt = other.nxt

    def next_element(self, out_of_bounds: int):
        """The element `.next` designates (without advancing), for reading."""
        if self.nxt >= len(self.items):
            raise ParserError(out_of_bounds)
        return self.items[self.nxt]

    def next_w(self, out_of_bounds: int):
        """The element `.next` designates, for writing."""
        if self.nxt >= len(self.items):
            raise ParserError(out_of_bounds)
        return self.w(self.nxt)

    def last(self, out_of_bounds: int):
        """The element `.last` designates, for reading."""
        if self.nxt == 0:
            raise ParserError(out_of_bounds)
        return self.items[self.nxt - 1]

    def last_w(self, out_of_bounds: int):
        """The element `.last` designates, for writing."""
        if self.nxt == 0:
            raise ParserError(out_of_bounds)
        return self.w(self.nxt - 1)

    def push_front(self, count: int) -> None:
        """Shift elements towards higher indices by count; the first count become invalid."""
        items = self.items
        size = len(items)
        if count == 1 and size:  # the common case, without building new lists (C-level memmove instead)
            items.pop()
            items.insert(0, self.blank)
            self.nxt = min(self.nxt + 1, size)
            return
        count = min(count, size)
        if count <= 0:
            return
        del items[size - count :]
        items[0:0] = [self.blank] * count
        self.nxt = min(self.nxt + count, size)

    def pop_front(self, count: int) -> None:
        """Shift elements towards lower indices by count; the last count become invalid."""
        items = self.items
        size = len(items)
        count = min(count, size)
        if count <= 0:
            return
        del items[:count]
        items.extend([self.blank] * count)
        self.nxt = max(self.nxt - count, 0)


class Counter:
    """An indexed counter (or one direct counter cell list): packets and bytes per cell."""

    __slots__ = ("name", "size", "packets", "bytes")

    def __init__(self, name: str, size: int) -> None:
        """All cells zero."""
        self.name = name
        self.size = size
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, length: int) -> None:
        """Count one packet of `length` bytes in cell `index` (out of range: ignored, as bmv2 does)."""
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += length

    def reset(self) -> None:
        """Zero all cells."""
        self.packets = [0] * self.size
        self.bytes = [0] * self.size


class Register:
    """A register array of `size` cells of `width` bits."""

    __slots__ = ("name", "size", "width", "signed", "cells")

    def __init__(self, name: str, size: int, width: int, signed: bool = False) -> None:
        """All cells zero."""
        self.name = name
        self.size = size
        self.width = width
        self.signed = signed
        self.cells = [0] * size

    def read(self, index: int) -> int:
        """Cell `index`, 0 when out of range."""
        if 0 <= index < self.size:
            return self.cells[index]
        return 0

    def write(self, index: int, value: int) -> None:
        """Set cell `index` (out of range: ignored)."""
        if 0 <= index < self.size:
            self.cells[index] = value


def csum16(data: bytes) -> int:
    """The Internet checksum (ones' complement of the ones' complement sum of 16-bit words)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def csum16_value(value: int, nbits: int) -> int:
    """Internet checksum of the bytes of `value` (nbits wide, front-padded to whole bytes).

    The ones' complement sum of 16-bit words equals the value modulo 0xFFFF (2**16 = 1
    modulo 0xFFFF), except that a non-zero sum divisible by 0xFFFF folds to 0xFFFF.
    """
    if ((nbits + 7) // 8) % 2:
        value <<= 8
    folded = value % 0xFFFF
    if folded == 0 and value:
        folded = 0xFFFF
    return 0xFFFF - folded


def checksum_value(algorithm: str, value: int, nbits: int) -> int:
    """A v1model hash/checksum algorithm applied to the bytes of a packed field list."""
    if algorithm == "csum16":
        return csum16_value(value, nbits)
    return hash_bytes(algorithm, value.to_bytes((nbits + 7) // 8, "big"))


def crc16(data: bytes) -> int:
    """CRC-16 as bmv2's crc16 (polynomial 0x8005 reflected, initial value 0, no final xor)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def xor16(data: bytes) -> int:
    """XOR of all 16-bit words."""
    if len(data) % 2:
        data += b"\0"
    result = 0
    for i in range(0, len(data), 2):
        result ^= int.from_bytes(data[i : i + 2], "big")
    return result


def hash_bytes(algorithm: str, data: bytes) -> int:
    """Hash of `data` with a v1model HashAlgorithm (by member name)."""
    if algorithm == "crc32":
        return zlib.crc32(data)
    if algorithm == "crc16":
        return crc16(data)
    if algorithm == "csum16":
        return csum16(data)
    if algorithm == "xor16":
        return xor16(data)
    if algorithm == "identity":
        return int.from_bytes(data, "big")
    if algorithm == "random":
        return _random.getrandbits(32)
    raise ValueError(f"hash algorithm {algorithm} is not supported")


def concat_bits(values: tuple[tuple[int, int], ...]) -> tuple[int, int]:
    """(value, width) of (value, width) pairs concatenated, most significant first (per packet)."""
    acc = 0
    total = 0
    for value, width in values:
        acc = (acc << width) | value
        total += width
    return acc, total


def pack_bits(values: list[tuple[int, int]]) -> bytes:
    """Concatenate (value, width) pairs most significant first into bytes, zero-padded at the front."""
    acc = 0
    total = 0
    for value, width in values:
        acc = (acc << width) | (value & ((1 << width) - 1))
        total += width
    return acc.to_bytes((total + 7) // 8, "big")


def v1model_hash(algorithm: str, base: int, value: int, nbits: int, maximum: int) -> int:
    """v1model hash(): base + (hash(data) mod max), or base + hash when max is 0 (bmv2 behaviour)."""
    digest = checksum_value(algorithm, value, nbits)
    if maximum:
        return base + digest % maximum
    return base + digest


def random_between(low: int, high: int) -> int:
    """v1model random(): uniform in [low, high]."""
    if high < low:
        return low
    return _random.randint(low, high)
