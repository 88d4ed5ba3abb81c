"""Code generation: a resolved program becomes one Python module (source text) plus its ProgramModel.

One module per part of a program (``headers``, ``parsers``, ``controls``, ``actions``,
``tables``, ``statements``, ``calls``, ``externs``, ``deparser``), each a mixin of
``driver.CodeGenerator``, which writes the v1model drivers around them.
"""

from p4switch.compiler.codegen.common import expression_text, int_src
from p4switch.compiler.codegen.driver import CodeGenerator

__all__ = ["CodeGenerator", "expression_text", "int_src"]
