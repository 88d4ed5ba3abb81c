"""The one compiled part of twinnet: the analysis's per-cell loops (controller/analysis/kernels.py).

Everything else is in pyproject.toml; ``pip install -e .`` (scripts/setup.sh) builds the extension in
place, next to its source.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("controller.analysis._kernels", sources=["controller/analysis/_kernels.c"], extra_compile_args=["-O3"])])
