"""What checking every coordinate costs next to the replay it judges, on the language workload.

    .venv/bin/python bench/compare_cost.py [--tiny] [--steps 8] [--repeats 5]

Trains interval 0 of two language tasks (``--steps`` and twice as many steps), replays each under another
execution profile, and times the replays and, ``--repeats`` times, the comparison of the claimed endpoint
with the replayed one (structure, then exact percentiles of every coordinate of weights, optimizer state
and probe gradient: what a verdict does after its replay). Replay time grows with the stride and the
comparison does not, so the table gives the comparison's share (the "s=" columns) of a replay of several
strides, from the measured fixed cost and cost per replayed step, and the smallest stride at which it
is under 2%. Writes
bench/results/compare_cost_language[_tiny].json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from ovig_node.training.evidence import Evidence, read_evidence
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import evidence_path, train
from ovig_node.training.statistics import STATISTICS
from ovig_node.training.taskfiles import PreparedTask, prepare_task
from ovig_node.verify.boundary import BoundaryProfile, SignalBounds
from ovig_node.verify.evaluate import claim_run
from ovig_node.verify.replay import replay_interval
from ovig_node.verify.report import judge_replay
from ovig_node.verify.stats import PERCENTILES, SECTION_OF, SIGNALS

RESULTS = Path(__file__).parent / "results"
STRIDES = (1, 10, 100, 1000)
TARGET = 0.02  # the comparison may cost at most 2% of the replay


class Clock:
    """Wall and CPU seconds (all threads of this process) of a block: on a shared machine the CPU
    seconds still say what the work costs, where the wall clock also counts other processes' turns."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.monotonic(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.monotonic() - self.wall, time.process_time() - self.cpu


def replayed_interval(
    *, tiny: bool, steps: int, work: Path, profile: str
) -> tuple[Evidence, Evidence, Clock, PreparedTask]:
    """The claimed and the replayed E_0 of a ``steps``-step interval, and the replay's clock."""
    prepared = prepare_task(
        "language",
        work / "task",
        tiny=tiny,
        total_steps=steps,
        stride=steps,
        intervals_per_batch=1,
        batch_size=32 if tiny else 16,
    )
    train(claim_run(prepared, work / "claims"))
    claimed = read_evidence(evidence_path(work / "claims", 0))
    with Clock() as clock:
        replayed = replay_interval(prepared, 0, None, profile=get_profile(profile))
    return claimed, replayed, clock, prepared


def measure(*, tiny: bool, steps: int, repeats: int, work: Path, profile: str) -> dict[str, object]:
    # Replays of `steps` and `2 * steps` steps separate the fixed cost (model and data loading, probe)
    # from the cost per step, so the share can be given at strides too long to replay here.
    load = os.getloadavg()[0]
    short = replayed_interval(tiny=tiny, steps=steps, work=work / "short", profile=profile)
    claimed, replayed, long, prepared = replayed_interval(
        tiny=tiny, steps=2 * steps, work=work / "long", profile=profile
    )
    costs = {kind: _replay_cost(getattr(short[2], kind), getattr(long, kind), steps) for kind in ("wall", "cpu")}
    # The comparison's cost does not depend on the bounds' values: any boundary of the right shape will do.
    ones = SignalBounds(abs=[1.0] * len(PERCENTILES), rel=[1.0] * len(PERCENTILES))
    boundary = BoundaryProfile(
        workload="language",
        stride=2 * steps,
        alpha=3.0,
        signals=dict.fromkeys(SIGNALS, ones),
        statistics=dict.fromkeys(STATISTICS, 1.0),
        claim_profile="reference",
        profiles=["micro2"],
        intervals=1,
        replays=1,
        torch=torch.__version__,
        replay_seconds_max=long.wall,
    )
    compares = []
    for _ in range(repeats):
        with Clock() as clock:
            verdict = judge_replay(prepared, 0, claimed, replayed, boundary)
        compares.append(clock)
    # The first comparison in a process also loads the compiled kernels from numba's cache.
    timed = compares[1:] or compares
    compare = {kind: statistics.median(getattr(c, kind) for c in timed) for kind in ("wall", "cpu")}
    per_step, fixed = costs["wall"]
    return {
        "config": "tiny (1 layer, 24 tokens, batch 32)" if tiny else "full (MiniLM-L6, 6 layers, 64 tokens, batch 16)",
        "coordinates": {s: sum(t.numel() for t in getattr(claimed, SECTION_OF[s]).values()) for s in SIGNALS},
        "replays": {
            "steps": [steps, 2 * steps],
            "seconds": [short[2].wall, long.wall],
            "cpu_seconds": [short[2].cpu, long.cpu],
        },
        "replay_seconds_per_step": per_step,
        "replay_seconds_fixed": fixed,
        "compare_seconds": compare["wall"],
        "compare_runs": [c.wall for c in compares],
        "compare_first_seconds": compares[0].wall,
        "verdict": verdict.reason,
        "share_at_stride": _shares(compare["wall"], *costs["wall"]),
        "smallest_stride_under_target": _smallest_stride(compare["wall"], *costs["wall"]),
        # The same in CPU seconds: the comparison runs on every core, the replay (micro2) on one.
        "cpu": {
            "replay_seconds_per_step": costs["cpu"][0],
            "replay_seconds_fixed": costs["cpu"][1],
            "compare_seconds": compare["cpu"],
            "share_at_stride": _shares(compare["cpu"], *costs["cpu"]),
            "smallest_stride_under_target": _smallest_stride(compare["cpu"], *costs["cpu"]),
        },
        "replay_profile": profile,
        "threads": torch.get_num_threads(),
        # Other work on the machine slows replay and comparison alike, but not by the same factor.
        "load_average": [load, os.getloadavg()[0]],
    }


def _replay_cost(short: float, long: float, steps: int) -> tuple[float, float]:
    """(seconds per step, fixed seconds) from replays of ``steps`` and ``2 * steps`` steps."""
    per_step = max(long - short, 1e-9) / steps
    return per_step, max(short - steps * per_step, 0.0)


def _shares(compare: float, per_step: float, fixed: float) -> dict[int, float]:
    return {s: compare / (fixed + per_step * s) for s in STRIDES}


def _smallest_stride(compare: float, per_step: float, fixed: float) -> int:
    return max(1, int((compare / TARGET - fixed) / per_step) + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="the tiny language config (the full one is the default)")
    parser.add_argument("--steps", type=int, default=8, help="steps of the shorter replayed interval")
    parser.add_argument("--repeats", type=int, default=5, help="timed comparisons (the median is reported)")
    parser.add_argument("--profile", default="micro2", help="execution profile of the replays (micro2: one thread)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(tiny=args.tiny, steps=args.steps, repeats=args.repeats, work=Path(tmp), profile=args.profile)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"compare_cost_language{'_tiny' if args.tiny else ''}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    table = Table(title=f"compare vs replay, language {result['config']}; the compare's share of a replay at s=")
    columns = (
        "coordinates",
        "replay s/step",
        "replay fixed s",
        "compare s",
        *(f"s={s}" for s in STRIDES),
        "2% from s=",
    )
    for column in columns:
        table.add_column(column, justify="right")
    coordinates = result["coordinates"]
    assert isinstance(coordinates, dict)
    shares = result["share_at_stride"]
    assert isinstance(shares, dict)
    table.add_row(
        f"{sum(coordinates.values()):,}",
        f"{result['replay_seconds_per_step']:.2f}",
        f"{result['replay_seconds_fixed']:.1f}",
        f"{result['compare_seconds']:.2f}",
        *(f"{shares[s]:.2%}" for s in STRIDES),
        str(result["smallest_stride_under_target"]),
    )
    cpu = result["cpu"]
    assert isinstance(cpu, dict)
    table.add_row(
        "CPU seconds",
        f"{cpu['replay_seconds_per_step']:.2f}",
        f"{cpu['replay_seconds_fixed']:.1f}",
        f"{cpu['compare_seconds']:.2f}",
        *(f"{cpu['share_at_stride'][s]:.2%}" for s in STRIDES),
        str(cpu["smallest_stride_under_target"]),
    )
    Console(width=150).print(table)
    print(f"written {path}")


if __name__ == "__main__":
    main()
