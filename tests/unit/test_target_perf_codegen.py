"""Fast paths of the generated code keep P4 semantics: stack element writes, stack shifts."""

from __future__ import annotations

import ast

from p4switch.compiler.fusion import hoist_stack_element_writes
from p4switch.runtime.support import HeaderStack


class Element:
    """A stand-in header class for stacks."""

    _v = False
    f_x = 0


def function_lines(body: list[str]) -> list[str]:
    """The body lines of ``def f():`` after the pass, as ``ast.unparse`` writes them."""
    source = "def f():\n" + "\n".join(body) + "\n"
    return hoist_stack_element_writes(source).strip("\n").split("\n")[1:]


def unparsed(body: list[str]) -> list[str]:
    """The same body lines as written by ``ast.unparse`` (the pass's output format) without the pass."""
    return ast.unparse(ast.parse("def f():\n" + "\n".join(body) + "\n")).split("\n")[1:]


def test_run_of_element_writes_fetches_the_element_once():
    """Consecutive writes to one element with call-free values share one w() call."""
    lines = [
        "    p_hdr.f_s.push_front(1)",
        "    p_hdr.f_s.w(0)._v = True",
        "    p_hdr.f_s.w(0).f_a = p_meta.f_a",
        "    p_hdr.f_s.w(0).f_b = ((p_meta.f_b + 1) & 255)",
        "    p_hdr.f_s.w(1).f_a = 3",
    ]
    assert function_lines(lines) == unparsed(
        [
            "    p_hdr.f_s.push_front(1)",
            "    _elem0 = p_hdr.f_s.w(0)",
            "    _elem0._v = True",
            "    _elem0.f_a = p_meta.f_a",
            "    _elem0.f_b = ((p_meta.f_b + 1) & 255)",
            "    p_hdr.f_s.w(1).f_a = 3",
        ]
    )


def test_runs_in_nested_blocks_and_fresh_names():
    """Runs inside if/else are found too; a name the module already uses is not taken."""
    lines = [
        "    _elem0 = 1",
        "    if p_x:",
        "        p_hdr.f_s.w(2).f_a = 1",
        "        p_hdr.f_s.w(2).f_b = _elem0",
        "    else:",
        "        pass",
    ]
    assert function_lines(lines) == unparsed(
        [
            "    _elem0 = 1",
            "    if p_x:",
            "        _elem1 = p_hdr.f_s.w(2)",
            "        _elem1.f_a = 1",
            "        _elem1.f_b = _elem0",
            "    else:",
            "        pass",
        ]
    )


def test_runs_with_calls_or_other_blocks_stay_as_they_are():
    """A value that calls anything (it could move the stack) or a change of block keeps every w()."""
    with_call = [
        "    p_hdr.f_s.w(0).f_a = fn_next(p_hdr)",
        "    p_hdr.f_s.w(0).f_b = 1",
    ]
    assert function_lines(with_call) == with_call
    other_block = [
        "    p_hdr.f_s.w(0).f_a = 1",
        "    if p_x:",
        "        p_hdr.f_s.w(0).f_b = 1",
    ]
    assert function_lines(other_block) == other_block
    variable_index = [
        "    p_hdr.f_s.w(v_i).f_a = 1",
        "    p_hdr.f_s.w(v_i).f_b = 1",
    ]
    assert function_lines(variable_index) == variable_index


def reference_shift(items: list, count: int, blank, front: bool) -> list:
    """P4 push_front (front=True) / pop_front on a list of elements."""
    size = len(items)
    count = min(count, size)
    if count <= 0:
        return list(items)
    if front:
        return [blank] * count + items[: size - count]
    return items[count:] + [blank] * count


def test_push_and_pop_front_match_the_specification():
    """Every count on every fill level of a stack, against the list formulation of the spec."""
    blank = Element()
    for size in (1, 2, 5, 24):
        for count in range(0, size + 3):
            for filled in range(size + 1):
                for front in (True, False):
                    stack = HeaderStack(Element, blank, size)
                    for index in range(filled):
                        stack.w(index)._v = True
                        stack.nxt = index + 1
                    before, nxt = list(stack.items), stack.nxt
                    (stack.push_front if front else stack.pop_front)(count)
                    assert stack.items == reference_shift(before, count, blank, front)
                    assert len(stack.items) == size
                    if count > 0:
                        expected = min(nxt + count, size) if front else max(nxt - count, 0)
                    else:
                        expected = nxt
                    assert stack.nxt == expected


def test_stored_elements_are_the_non_blank_ones_in_order():
    """stored() equals a scan for non-blank elements, for filled prefixes and for holes."""
    blank = Element()
    for size in (1, 3, 8):
        for pattern in range(1 << size):  # bit i set: element i was written
            stack = HeaderStack(Element, blank, size)
            for index in range(size):
                if pattern >> index & 1:
                    stack.w(index)
            expected = [h for h in stack.items if h is not blank]
            assert stack.stored() == expected
            assert all(h is not blank for h in stack.stored())
