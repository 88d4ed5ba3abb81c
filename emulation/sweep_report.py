"""A sweep's files: sweep.json, sweep.csv (one row per load point) and the two plots the papers show."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

CSV_COLUMNS = (
    "label",
    "throughput_bound",
    "offered",
    "accepted",
    "latency_mean_packet_times",
    "latency_p99_packet_times",
    "latency_mean_us",
    "latency_p99_us",
    "late_sends",
    "max_lateness_ms",
    "lost",
    "queue_drops",
    "cpu_bound",
)


def csv_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for configuration in result["configurations"]:
        for point in configuration["points"]:
            rows.append(
                {
                    "label": configuration["label"],
                    "throughput_bound": configuration["throughput_bound"],
                    "offered": point["offered"],
                    "accepted": point["accepted"],
                    "latency_mean_packet_times": point["latency_packet_times"]["mean"],
                    "latency_p99_packet_times": point["latency_packet_times"]["p99"],
                    "latency_mean_us": point["latency_us"]["mean"],
                    "latency_p99_us": point["latency_us"]["p99"],
                    "late_sends": point["late_sends"],
                    "max_lateness_ms": point["max_lateness_ms"],
                    "lost": point["lost"],
                    "queue_drops": point["queue_drops"],
                    "cpu_bound": point["cpu"]["cpu_bound"],
                }
            )
    return rows


def plot(result: dict[str, Any], out: Path) -> list[Path]:
    """latency.png (mean latency, packet times, against accepted) and throughput.png (accepted vs offered)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    figure, axes = plt.subplots(figsize=(6.4, 4.4))
    for configuration in result["configurations"]:
        points = [p for p in configuration["points"] if p["latency_packet_times"]["mean"] is not None]
        axes.plot(
            [p["accepted"] for p in points],
            [p["latency_packet_times"]["mean"] for p in points],
            marker="o",
            label=configuration["label"],
        )
    axes.set_xlabel("accepted traffic (packets per PE per link time)")
    axes.set_ylabel("mean latency (packet times)")
    axes.set_yscale("log")
    axes.legend(fontsize="small", loc="upper left")
    paths.append(_save(figure, axes, out / "latency.png"))

    figure, axes = plt.subplots(figsize=(6.4, 4.4))
    for configuration in result["configurations"]:
        line = axes.plot(
            [p["offered"] for p in configuration["points"]],
            [p["accepted"] for p in configuration["points"]],
            marker="o",
            label=configuration["label"],
        )[0]
        if configuration["throughput_bound"] is not None:
            axes.axhline(
                configuration["throughput_bound"], color=line.get_color(), linestyle="--", linewidth=1
            )
    axes.set_xlabel("offered load (packets per PE per link time)")
    axes.set_ylabel("accepted traffic (packets per PE per link time)")
    axes.legend(fontsize="small", title="dashed: twinnet analyze bound")
    paths.append(_save(figure, axes, out / "throughput.png"))
    return paths


def _save(figure, axes, path: Path) -> Path:
    """Grid, layout, write, close: the end of every plot."""
    import matplotlib.pyplot as plt

    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def write_sweep(result: dict[str, Any], out: Path, *, pictures: bool = True) -> list[Path]:
    """Write the sweep's files into `out`; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = out / "sweep.json", out / "sweep.csv"
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(csv_rows(result))
    return [json_path, csv_path, *(plot(result, out) if pictures else [])]
