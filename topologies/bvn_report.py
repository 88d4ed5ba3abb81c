"""``twinnet cost bvn``: per-level link degrees of a fat tree for a load-balanced BvN switch, and its table.

Lemma 1's lower bounds against the nonblocking degrees, with the loads the
bit-reverse family and the rotators put on them (up to BVN_LOADS_LIMIT end nodes).
"""

from __future__ import annotations

import argparse
from typing import Any

from topologies.cost_cli import CostCliError
from topologies.text_table import fmt, table

BVN_LOADS_LIMIT = 256  # family loads take N**2 log N steps (about 0.5 s at 256, 12 s at 1024)

BVN_UNITS = {
    "level": "tree level j, root = 0, leaves = n (Chueh et al.'s numbering)",
    "nodes": "tree nodes at this level (count)",
    "up_*": "parallel links from one node of this level to its parent (count per node)",
    "down_*": "parallel links from one node of this level to both its children (count per node)",
    "radix_*": "ports of one node of this level: up + down (count)",
    "*_nonblocking": "degrees that realise all N! permutations (eq. 6-7)",
    "*_lemma1": "Lemma 1's lower bound for any N permutations summing to the all-ones matrix",
    "max_load_*": "largest number of packets on one node's up bundle (or on the bundle from its parent down "
    "to it) in one slot, over all nodes of the level and all permutations of the family",
    "total_up_links_*": "sum over levels 1..n of nodes x up degree (links, leaf links included)",
}


def bvn_report(args: argparse.Namespace) -> dict[str, Any]:
    from topologies.bvn import degree_table, max_family_loads, total_up_links, tree_bits
    from topologies.permutations import (
        bit_reverse_permutations,
        has_uniform_mapping_property,
        rotator_permutations,
        sums_to_all_ones,
    )

    for name in ("a", "b", "preset", "radix", "sweep", "internal_links", "internal_link_cost", "plot"):
        if getattr(args, name) is not None:
            raise CostCliError(f"--{name.replace('_', '-')} belongs to the fattree mode, not to bvn")
    n_bits = tree_bits(args.nodes)
    levels = []
    for row in degree_table(n_bits):
        levels.append(
            {
                "level": row.level,
                "nodes": row.nodes,
                "up_nonblocking": row.up_nonblocking,
                "up_lemma1": row.up_lemma1,
                "down_nonblocking": row.down_nonblocking,
                "down_lemma1": row.down_lemma1,
                "radix_nonblocking": row.radix_nonblocking,
                "radix_lemma1": row.radix_lemma1,
            }
        )
    report: dict[str, Any] = {
        "mode": "bvn",
        "source": "Chueh et al. (load-balanced BvN switches and fat trees), Lemma 1",
        "nodes": args.nodes,
        "n_bits": n_bits,
        "units": BVN_UNITS,
        "levels": levels,
        "total_up_links_nonblocking": total_up_links(n_bits, nonblocking=True),
        "total_up_links_lemma1": total_up_links(n_bits),
    }
    if args.nodes <= BVN_LOADS_LIMIT:
        family = bit_reverse_permutations(n_bits)
        rotators = rotator_permutations(args.nodes)
        bit_reverse_loads = max_family_loads(family, n_bits)
        rotator_loads = max_family_loads(rotators, n_bits)
        for entry in levels[1:]:
            j = entry["level"]
            entry["max_load_bit_reverse_up"], entry["max_load_bit_reverse_down"] = bit_reverse_loads[j - 1]
            entry["max_load_rotators_up"], entry["max_load_rotators_down"] = rotator_loads[j - 1]
        report["bit_reverse_family"] = {
            "sums_to_all_ones": sums_to_all_ones(family),
            "all_have_uniform_mapping_property": all(has_uniform_mapping_property(p) for p in family),
            "meets_lemma1_bound": all(
                up <= entry["up_lemma1"] and down <= entry["up_lemma1"]
                for (up, down), entry in zip(bit_reverse_loads, levels[1:], strict=True)
            ),
        }
    else:
        report["loads_note"] = f"family loads computed only up to {BVN_LOADS_LIMIT} end nodes"
    return report


def bvn_text(report: dict[str, Any]) -> str:
    n = report["nodes"]
    with_loads = "bit_reverse_family" in report
    headers = ["level", "nodes", "up nb", "up lb", "down nb", "down lb", "radix nb", "radix lb"]
    if with_loads:
        headers += ["pi_i up/down", "rotators up/down"]
    rows = []
    for e in report["levels"]:
        row = [
            str(e["level"]),
            fmt(e["nodes"]),
            fmt(e["up_nonblocking"]),
            fmt(e["up_lemma1"]),
            fmt(e["down_nonblocking"]),
            fmt(e["down_lemma1"]),
            fmt(e["radix_nonblocking"]),
            fmt(e["radix_lemma1"]),
        ]
        if with_loads:
            if e["level"] == 0:
                row += ["-", "-"]
            else:
                row += [
                    f"{e['max_load_bit_reverse_up']}/{e['max_load_bit_reverse_down']}",
                    f"{e['max_load_rotators_up']}/{e['max_load_rotators_down']}",
                ]
        rows.append(row)
    nb, lb = report["total_up_links_nonblocking"], report["total_up_links_lemma1"]
    out = [
        f"Binary fat tree of {n:,} end nodes (Chueh et al.): degrees for a load-balanced BvN switch",
        "nb = nonblocking (all N! permutations), lb = Lemma 1 bound (N permutations summing to all-ones);",
        "up = links to the parent per node, down = links to both children per node, radix = up + down;",
        "level 0 is the root.",
        "",
        table(headers, rows),
        "",
        f"total upward links: nonblocking {nb:,}, Lemma 1 {lb:,} (saving {1 - lb / nb:.1%})",
    ]
    if with_loads:
        fam = report["bit_reverse_family"]
        out += [
            "pi_i = bit-reverse then shift by i, i = 1..N (max bundle load over the family, per slot); "
            "rotators = shifts x -> x + i",
            f"bit-reverse family: sums to all-ones {fam['sums_to_all_ones']}, uniform mapping property "
            f"{fam['all_have_uniform_mapping_property']},"
            f" within Lemma 1's degrees {fam['meets_lemma1_bound']}",
        ]
    else:
        out.append(report["loads_note"])
    return "\n".join(out)
