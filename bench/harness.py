"""The timing harness the benchmarks share: repeats, the median and spread of each figure, CPU seconds beside wall
clock, the load, and a guard whose rule is fixed here, before any run.

    with Timed() as timed:          # one repeat of anything: a function, a subprocess, a whole system
        run_the_work()
    timed.record                    # {"wall_s", "cpu_s", "other_cores", "load": [before, after], "disturbed"}
    summary([r["cpu_s"] for r in records])   # {"n", "median", "min", "max", "spread"}
    summarise(records)              # one configuration's repeats: wall and CPU summaries, disturbed, the records

CPU seconds are the benchmark's own: this process and every child it has reaped (a subprocess it waited for, and
that subprocess's own reaped children). The machine's busy CPU seconds over the same span, less the benchmark's,
are what *other* work used; averaged over the wall time that is ``other_cores``.

The guard (issue 48), fixed before any run and never changed in the commit that adds a run it judges: a repeat
during which other work averaged more than ``OTHER_CORES_LIMIT`` cores is **disturbed**. A disturbed repeat is
recorded and printed as such, and a figure with a disturbed repeat never meets a target.
"""

from __future__ import annotations

import os
import statistics
import time
from types import TracebackType
from typing import Any

import psutil

OTHER_CORES_LIMIT = 0.25
BUSY = ("user", "nice", "system", "irq", "softirq", "steal")  # psutil's fields of CPU time not idle or I/O wait


def own_cpu_seconds() -> float:
    """User and system seconds of this process and of every child it has reaped."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def busy_cpu_seconds() -> float:
    """The machine's busy CPU seconds since boot, every core (idle and I/O wait excluded)."""
    t = psutil.cpu_times()
    return sum(getattr(t, field) for field in BUSY if hasattr(t, field))


class Timed:
    """One repeat: wall and own CPU seconds, what other work used meanwhile, and the load before and after."""

    def __enter__(self) -> Timed:
        self._load = os.getloadavg()[0]
        self._busy, self._own, self._wall = busy_cpu_seconds(), own_cpu_seconds(), time.monotonic()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        wall, own = time.monotonic() - self._wall, own_cpu_seconds() - self._own
        # An unreaped daemon's CPU counts as other work: the guard errs towards calling a repeat disturbed.
        other = max(0.0, busy_cpu_seconds() - self._busy - own)
        other_cores = other / wall if wall > 0 else 0.0
        self.record: dict[str, Any] = {
            "wall_s": round(wall, 3),
            "cpu_s": round(own, 3),
            "other_cores": round(other_cores, 3),
            "load": [round(self._load, 2), round(os.getloadavg()[0], 2)],
            "disturbed": other_cores > OTHER_CORES_LIMIT,
        }


def summary(values: list[float]) -> dict[str, float]:
    """The median of ``values`` and their spread ((max - min) / median) over ``n`` repeats."""
    if not values:
        raise ValueError("no repeats to summarise")
    median = statistics.median(values)
    return {
        "n": len(values),
        "median": median,
        "min": min(values),
        "max": max(values),
        "spread": (max(values) - min(values)) / median if median else 0.0,
    }


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration's repeats (``Timed.record`` each): the median and spread of wall and CPU seconds, whether
    any repeat was disturbed, and the records themselves."""
    return {
        "wall": summary([r["wall_s"] for r in records]),
        "cpu": summary([r["cpu_s"] for r in records]),
        "disturbed": any(r["disturbed"] for r in records),
        "repeats": records,
    }
