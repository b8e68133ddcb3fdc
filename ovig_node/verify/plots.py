"""PNG plots of an evaluation: margin against stride per attack, and honest margins against stride."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt


def plot_margins(summary: dict[str, Any], path: Path) -> None:
    """log10(statistic / limit) of each attacked interval against the stride (> 0: caught)."""
    fig, ax = plt.subplots(figsize=(12, 6))
    series: dict[str, list[tuple[int, float]]] = {}
    structural = set()
    for row in summary["rows"]:
        label = row["label"]
        if row.get("identical"):  # a no-op at this stride: nothing to catch
            continue
        if row["margin"] is None:  # caught before any number was compared (names, counters, ...)
            structural.add(f"{label} ({row['reason']})")
            continue
        series.setdefault(label, []).append((row["stride"], _finite(row["margin"])))
    for label, points in sorted(series.items()):
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.axhline(0.0, color="black", linewidth=1, linestyle="--")
    ax.set(
        xscale="log",
        xlabel="stride s (steps per interval)",
        ylabel="margin: log10(statistic / limit)",
        title=f"attacks vs the boundary ({summary['settings']['workload']})",
    )
    if structural:
        ax.text(
            0.01,
            0.01,
            "caught structurally, not plotted: " + "; ".join(sorted(structural)),
            transform=ax.transAxes,
            fontsize=7,
            va="bottom",
        )
    if ax.get_legend_handles_labels()[0]:  # an honest-only evaluation plots no attack
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the axes: many attacks
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_honest(summary: dict[str, Any], path: Path) -> None:
    """Honest held-out replays: their largest margin per stride, against the boundary (0)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    strides = sorted(summary["honest"], key=int)
    worst = [max(_finite(h["margin"]) for h in summary["honest"][s]) for s in strides]
    ax.plot([int(s) for s in strides], worst, marker="o", label="honest, worst held-out replay")
    ax.axhline(0.0, color="red", linewidth=1, linestyle="--", label="boundary (alpha x bound)")
    ax.set(
        xscale="log",
        xlabel="stride s",
        ylabel="margin: log10(statistic / limit)",
        title=f"honest drift vs the boundary ({summary['settings']['workload']})",
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _finite(value: float | None) -> float:
    # no finite ratio (every statistic 0, or only zero limits exceeded): plot at the bottom
    return -20.0 if value is None else max(min(value, 20.0), -20.0)
