"""Rewrite the generated ``run_fused`` into one function whose headers and metadata are local variables.

``run_fused``, as p4switch.compiler.codegen writes it, calls the parser, the controls and
the deparser, which call the actions; every header field is an attribute of an object
created per packet. This pass rewrites it with Python's ``ast`` module in three classic
compiler steps:

1. inlining: statement-level calls of parser, control and action functions are replaced
   by the function's body (its locals renamed where they would clash, a ``return``
   becoming a ``break`` out of a one-pass loop); a table's ``e.call(L)`` becomes an
   if/elif over the actions the table may run, each inlined;
2. alias resolution: ``_h = hdr.f_tw`` followed by ``_h.f_vc`` becomes ``hdr.f_tw.f_vc``;
3. scalar replacement: an object created in the function whose only uses are reads and
   writes of its fields (``hdr.f_tw.f_dst_pe``) becomes one local variable per field
   (``hdr_tw_dst_pe``), recursively for nested headers. An object used any other way
   (passed to a function, a method called on it, a header stack) stays an object;
4. raw stack elements (raw_elements.py): the elements of a header stack that the driver
   only extracts and emits again are kept as their bytes in between.

The one place whole objects are needed, the state handed to ``hooks.queue`` when a
packet has to wait in a queue, rebuilds them from the locals. The rewritten function does
what the calls did (tests/unit/test_target_fused_driver.py compares the two on every
test program) at a fraction of the cost. Anything the pass does not recognise raises
FusionError, and the compiler keeps the plain ``run_fused``.
"""

from __future__ import annotations

import ast

from p4switch.compiler.fusion.ast_tools import FusionError, NameSource, global_names, local_names
from p4switch.compiler.fusion.inline import Inliner, remove_dead_stores
from p4switch.compiler.fusion.objects import AliasResolver, class_layouts, find_roots, stored_paths
from p4switch.compiler.fusion.raw_elements import RawStack, keep_raw_elements
from p4switch.compiler.fusion.scalars import ScalarReplacer

__all__ = ["FUSED", "FusionError", "fuse"]

FUSED = "run_fused"


def fuse(python_source: str, table_actions: dict[str, list[str]]) -> str:
    """The generated module with ``run_fused`` rewritten (the rest of the source unchanged).

    `table_actions` maps a table's global name (``T_MyIngress__route``) to the function
    names of the actions its entries may run (``act_MyIngress__set_route``, ...).
    """
    module = ast.parse(python_source)
    functions = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    classes = {node.name: node for node in module.body if isinstance(node, ast.ClassDef)}
    driver = functions.get(FUSED)
    if driver is None:
        raise FusionError(f"the module has no {FUSED}")
    names = NameSource(global_names(module) | set(local_names(driver)))
    inliner = Inliner(functions, table_actions, names)
    body = inliner.run(driver)
    body = remove_dead_stores(body)
    inliner.check_tuples(body)
    layouts = class_layouts(classes)
    roots = find_roots(body, layouts)
    body = AliasResolver(roots, layouts, stored_paths(body)).block(body, {})
    replacer = ScalarReplacer(roots, layouts, names)
    body = replacer.rewrite(body)
    body = keep_raw_elements(body, replaced_stacks(replacer))
    fused = ast.FunctionDef(
        name=FUSED, args=driver.args, body=body, decorator_list=[], returns=None, type_comment=None
    )
    ast.fix_missing_locations(fused)
    lines = python_source.split("\n")
    start, end = driver.lineno - 1, driver.end_lineno
    return "\n".join([*lines[:start], ast.unparse(fused), *lines[end:]])


def replaced_stacks(replacer: ScalarReplacer) -> list[RawStack]:
    """The header stacks scalar replacement made local lists of (step 4's candidates)."""
    return [
        RawStack(replacer.leaf((*path, "items")), node.stack.element, node.stack.blank)
        for path, node in replacer.nodes.items()
        if node.stack is not None and replacer.replaced(path) and (*path, "items") in replacer.leaves
    ]
