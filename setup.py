"""twinnet's compiled parts: the analysis's per-cell loops (controller/kernels.py), the switch's
reader of route-entry writes (p4switch/p4runtime/wire.py) and its batched packet I/O
(p4switch/daemon/packet_io.py).

Everything else is in pyproject.toml; ``pip install -e .`` (scripts/setup.sh) builds the extensions in
place, next to their sources. -O3 only unrolls and vectorises: no fast-math, the additions stay IEEE.
"""

from setuptools import Extension, setup

KERNELS = Extension("controller._kernels", sources=["controller/_kernels.c"], extra_compile_args=["-O3"])
WIRE = Extension(
    "p4switch.p4runtime._wire", sources=["p4switch/p4runtime/_wire.c"], extra_compile_args=["-O3"]
)

PACKET_IO = Extension(
    "p4switch.daemon._packet_io", sources=["p4switch/daemon/_packet_io.c"], extra_compile_args=["-O3"]
)

setup(ext_modules=[KERNELS, WIRE, PACKET_IO])
