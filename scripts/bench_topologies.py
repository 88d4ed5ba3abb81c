"""Time to build, describe and serialise large topologies (prints one row per network; no assertions).

    .venv/bin/python scripts/bench_topologies.py            # default sizes
    .venv/bin/python scripts/bench_topologies.py --draw     # also time a picture of the smaller ones
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topologies.build import build_topology  # noqa: E402
from topologies.describe import to_dict  # noqa: E402

NETWORKS = [
    ("fattree", {"k": 4, "n": 3, "twin": True}),
    ("fattree", {"k": 8, "n": 3, "twin": True}),
    ("fattree", {"k": 8, "n": 4, "twin": True}),
    ("fattree", {"k": 16, "n": 3}),
    ("ndt", {"dims": "4x4x4"}),
    ("ndt", {"dims": "8x8x8"}),
    ("ndt", {"dims": "4x4x4x4x4"}),
    ("ndt", {"dims": "16x16x16"}),
    ("torus", {"dims": "32x32"}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draw", action="store_true", help="also time drawing networks of up to 1024 cards")
    args = parser.parse_args()
    print("family\tparams\tcards\thosts\tlinks\tbuild_s\tpeak_MB\tjson_s\tjson_MB\tdraw_s")
    for family, params in NETWORKS:
        tracemalloc.start()
        start = time.perf_counter()
        topo = build_topology(family, **params)
        build_s = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        start = time.perf_counter()
        text = json.dumps(to_dict(topo))
        json_s = time.perf_counter() - start
        draw_s = "-"
        if args.draw and len(topo.cards) <= 1024:
            from topologies.draw import draw

            with tempfile.TemporaryDirectory() as folder:
                start = time.perf_counter()
                draw(topo, Path(folder) / "t.png")
                draw_s = f"{time.perf_counter() - start:.2f}"
        shown = " ".join(f"{key}={value}" for key, value in params.items())
        print(f"{family}\t{shown}\t{len(topo.cards)}\t{len(topo.hosts)}\t{len(topo.links)}\t{build_s:.3f}\t"
              f"{peak:.1f}\t{json_s:.3f}\t{len(text) / 2**20:.1f}\t{draw_s}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
