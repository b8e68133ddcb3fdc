"""Leave one family out: does a boundary hold on hardware unlike any it was calibrated on?
(`ovig eval --mode families`)

Execution profiles fall into families by what they change (:attr:`ExecutionProfile.families`: the
thread split, the micro-batch split, the accumulation dtype, each kind of kernel). A provider's
accelerator is a point none of the verifier's profiles reproduces, so the test of a boundary is a
family it never saw. For each stride:

1. train the honest claims (reference profile) and replay every calibration interval and every
   held-out interval once under every CPU profile, keeping each replay's percentile profiles;
2. for each family in turn, build the boundary from the calibration replays under the profiles that
   change nothing of that family, and judge each held-out interval under the family's profiles as a
   watcher on that hardware would: a false positive when the first rejects it and the second, where
   the family has one, confirms. Each interval is judged with the rounding floor and without it
   (``floor_ulps = 0``, as boundaries were judged before it), so the table says what the floor does.

A family whose replays are bit-identical to the claims on a workload (attention kernels on the CNN)
is reported as *inert* there: it tests nothing.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovig_node.training.execution import PROFILES, ExecutionProfile
from ovig_node.training.loop import train
from ovig_node.verify.boundary import BoundaryProfile, HonestReplay, boundary_of, honest_replay, read_claim
from ovig_node.verify.check import Verdict, statistics_rows, with_statistics, within_bounds
from ovig_node.verify.evaluate import EvalSettings, Log, claim_run, quiet
from ovig_node.verify.stats import SECTION_OF, SIGNALS, rounding_floor

CLAIM_PROFILE = "reference"


@dataclass(frozen=True)
class FamilySplit:
    """One family held out: the profiles that judge (they change it) and those that calibrate (they do not)."""

    family: str
    held_out: tuple[str, ...]
    calibration: tuple[str, ...]


def family_splits(profiles: Sequence[ExecutionProfile]) -> list[FamilySplit]:
    """A split per family any of ``profiles`` changes, if some other profile changes nothing of it."""
    families = sorted({family for p in profiles for family in p.families})
    splits = []
    for family in families:
        held_out = tuple(p.name for p in profiles if family in p.families)
        calibration = tuple(p.name for p in profiles if family not in p.families)
        if held_out and calibration:
            splits.append(FamilySplit(family, held_out, calibration))
    return splits


def cpu_profiles() -> list[ExecutionProfile]:
    """Every one-process profile this machine runs but the claims' own (replays run in one process)."""
    return [p for p in PROFILES.values() if p.device == "cpu" and p.world_size == 1 and p.name != CLAIM_PROFILE]


def units(settings: EvalSettings) -> int:
    """Units of progress: per stride the claims, each calibration interval of each run, each held-out one."""
    runs = max(1, len(settings.calibration_seeds))
    return sum(1 + runs * len(settings.positions_at(s)) + len(settings.held_out_at(s)) for s in settings.strides)


def evaluate_families(settings: EvalSettings, work_dir: Path, *, log: Log | None = None) -> dict[str, Any]:
    """Every family held out in turn at every stride of ``settings``: JSON for :func:`markdown`."""
    log = log or quiet
    profiles = cpu_profiles()
    splits = family_splits(profiles)
    strides = {}
    for stride in settings.strides:
        folder = work_dir / f"s{stride}"
        strides[stride] = _stride(settings, stride, folder, profiles, splits, log)
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "settings": {
            "workload": settings.workload,
            "tiny": settings.tiny,
            "alpha": settings.alpha,
            "config": settings.config,
            "warmup_steps": settings.warmup_steps,
            "calibration_seeds": list(settings.calibration_seeds),
            "layout": {s: settings.layout(s) for s in settings.strides},
        },
        "profiles": {p.name: sorted(p.families) for p in profiles},
        "strides": strides,
    }


def _stride(
    settings: EvalSettings,
    stride: int,
    folder: Path,
    profiles: list[ExecutionProfile],
    splits: list[FamilySplit],
    log: Log,
) -> dict[str, Any]:
    prepared = settings.task(stride, folder / "task", settings.seed)
    claims = folder / "claims"
    log(f"s={stride}: honest claims", unit=True)
    train(claim_run(prepared, claims))
    runs = settings.calibration_runs(stride, folder, (prepared, claims))
    positions = settings.positions_at(stride)
    calibration: list[HonestReplay] = []
    for run, run_claims in runs:
        train(claim_run(run, run_claims), stop_at=run.spec.layout.end_step(positions[-1]))
        for k in positions:
            log(f"s={stride}: calibration interval {k}, every profile", unit=True)
            start, end = read_claim(run_claims, k - 1), read_claim(run_claims, k)
            assert end is not None  # k >= 0: only interval 0's start (k - 1 < 0) has no claim
            calibration += [honest_replay(run, k, start, end, p) for p in profiles]
    held_out: dict[int, dict[str, HonestReplay]] = {}
    floors: dict[int, dict[str, dict[str, list[float]]]] = {}  # per held-out interval, its claim's floor per signal
    for k in settings.held_out_at(stride):
        log(f"s={stride}: held-out interval {k}, every profile", unit=True)
        start, end = read_claim(claims, k - 1), read_claim(claims, k)
        assert end is not None  # k >= 0: only interval 0's start (k - 1 < 0) has no claim
        held_out[k] = {p.name: honest_replay(prepared, k, start, end, p) for p in profiles}
        floors[k] = {
            signal: rounding_floor(getattr(end, SECTION_OF[signal]), settings.floor_ulps) for signal in SIGNALS
        }
    families = {}
    for split in splits:
        boundary = boundary_of(
            [r for r in calibration if r.profile in split.calibration],
            spec=prepared.spec,
            alpha=settings.alpha,
            claim_profile=CLAIM_PROFILE,
            runs=len(runs),
            floor_ulps=settings.floor_ulps,
        )
        families[split.family] = _judge_family(split, boundary, held_out, floors)
    return {"families": families}


def _judge_family(
    split: FamilySplit,
    boundary: BoundaryProfile,
    held_out: dict[int, dict[str, HonestReplay]],
    floors: dict[int, dict[str, dict[str, list[float]]]],
) -> dict[str, Any]:
    unfloored = boundary.model_copy(update={"floor_ulps": 0.0})
    intervals: list[dict[str, Any]] = []
    inert = True
    for k, replays in held_out.items():
        chosen = [replays[name] for name in split.held_out]
        inert &= all(_identical(r) for r in chosen)
        floored = [
            with_statistics(
                within_bounds(boundary, r.differences, floors[k].__getitem__), statistics_rows(boundary, r.statistics)
            )
            for r in chosen
        ]
        plain = [
            with_statistics(
                within_bounds(unfloored, r.differences, floors[k].__getitem__),  # never asks
                statistics_rows(unfloored, r.statistics),
            )
            for r in chosen
        ]
        intervals.append(
            {
                "interval": k,
                "valid": _confirmed_valid(floored),
                "first_valid": floored[0].valid,
                "valid_without_floor": _confirmed_valid(plain),
                "margins": [v.margin for v in floored],
                "margins_without_floor": [v.margin for v in plain],
                "failing": sorted({row for v in floored for row in _failing_rows(v)}),
                "failing_without_floor": sorted({row for v in plain for row in _failing_rows(v)}),
            }
        )
    closest = [min((m for m in i["margins"] if m is not None), default=None) for i in intervals]
    return {
        "held_out": list(split.held_out),
        "calibration": list(split.calibration),
        "inert": inert,
        "intervals": len(intervals),
        "false_positives": sum(not i["valid"] for i in intervals),
        "single_replay_rejections": sum(not i["first_valid"] for i in intervals),
        "false_positives_without_floor": sum(not i["valid_without_floor"] for i in intervals),
        "closest_margin": max((m for m in closest if m is not None), default=None),
        "failing_without_floor": dict(Counter(row for i in intervals for row in i["failing_without_floor"])),
        "boundary": boundary.model_dump(),
        "judged": intervals,
    }


def _confirmed_valid(verdicts: list[Verdict]) -> bool:
    """A watcher's verdict: the first replay's, a rejection standing only if the second (when the family has
    one) rejects too. Not "any of the family's replays passes", which would be kinder than any node."""
    return verdicts[0].valid or (len(verdicts) > 1 and verdicts[1].valid)


def _identical(replay: HonestReplay) -> bool:
    """Whether the replay is bit-identical to the claim (every difference zero)."""
    return all(v == 0.0 for kinds in replay.differences.values() for values in kinds.values() for v in values) and all(
        v == 0.0 for v in replay.statistics.values()
    )


def _failing_rows(verdict: Verdict) -> list[str]:
    return [
        f"{signal} {kind} p{row['p']:g}"
        for signal, kinds in verdict.signals.items()
        for kind, rows in kinds.items()
        for row in rows
        if not row["ok"]
    ]


def markdown(summary: dict[str, Any]) -> str:
    """Per stride and held-out family: false positives with the floor and without it, and the closest call."""
    workload = summary["settings"]["workload"]
    lines = [
        f"# {workload}: leave one family out",
        "",
        "| stride | held-out family | judged under | false positives | without the floor | single-replay "
        "rejections | closest (log10 value/limit) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for stride, result in summary["strides"].items():
        for family, row in result["families"].items():
            n = row["intervals"]
            closest = "-" if row["closest_margin"] is None else f"{row['closest_margin']:+.2f}"
            inert = " (inert: bit-identical)" if row["inert"] else ""
            lines.append(
                f"| {stride} | {family}{inert} | {', '.join(row['held_out'])} | {row['false_positives']}/{n} "
                f"| {row['false_positives_without_floor']}/{n} | {row['single_replay_rejections']}/{n} "
                f"| {closest} |"
            )
    return "\n".join(lines) + "\n"
