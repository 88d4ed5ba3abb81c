"""The optimiser of generated modules, a pass over Python's ``ast``.

``fuse`` rewrites the ``run_fused`` driver (inlining, alias resolution, scalar
replacement: see ``fuse.py``); ``hoist_stack_element_writes`` fetches a header stack
element once for a run of writes to its fields, in every function, and runs first.
"""

from p4switch.compiler.fusion.ast_tools import FusionError
from p4switch.compiler.fusion.fuse import FUSED, fuse
from p4switch.compiler.fusion.stack_elements import hoist_stack_element_writes

__all__ = ["FUSED", "FusionError", "fuse", "hoist_stack_element_writes"]
