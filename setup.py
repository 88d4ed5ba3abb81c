"""The one compiled part of twinnet: the analysis's per-cell loops (controller/kernels.py).

Everything else is in pyproject.toml; ``pip install -e .`` (scripts/setup.sh) builds the extension in
place, next to its source. -O3 only unrolls and vectorises: no fast-math, the additions stay IEEE.
"""

from setuptools import Extension, setup

KERNELS = Extension("controller._kernels", sources=["controller/_kernels.c"], extra_compile_args=["-O3"])

setup(ext_modules=[KERNELS])
