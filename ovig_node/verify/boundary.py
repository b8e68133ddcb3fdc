"""The empirical boundary (protocol section 2.5): how far honest replays land from honest claims.

Calibration trains honest claims up to the last calibrated interval, replays each calibrated interval
from its claimed start under several execution profiles, and records, per signal, kind and
percentile, the largest difference seen. An interval passes only if each of its values is
``<= alpha * bound``. Two choices make the bound hold beyond the replays it was measured on:

- **positions spread over the run** (:func:`spread_positions`), not only its first intervals: honest
  drift follows the phase of training (optimizer moments and gradients grow, the schedule moves), so
  a prefix under-covers later intervals;
- **a tail model for the largest relative difference** (``rel`` at p100). That value is set by the
  claim's coordinate nearest zero: with a density of coordinates around zero it has a 1/x tail,
  ``P(X > x) ~ median / (2x)``, so a maximum over a few dozen replays cannot bound it. Its bound is at
  least the value that tail leaves ``rel_tail`` of replays above, ``median / (2 rel_tail)``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from pydantic import BaseModel, Field, ValidationError, model_validator

from ovig_node.errors import OvigError
from ovig_node.protocol.spec import TaskSpec
from ovig_node.training.evidence import Evidence, read_evidence
from ovig_node.training.execution import ExecutionProfile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.verify.replay import replay_interval
from ovig_node.verify.stats import PERCENTILES, SECTION_OF, SIGNALS, difference_profiles

REL_TAIL = 1e-3  # share of honest replays the tail model lets past the rel p100 bound (before alpha)


class BoundaryError(OvigError, ValueError):
    """A boundary profile that is not JSON, or lacks a signal, kind or percentile a judge reads."""


class SignalBounds(BaseModel):
    abs: list[float]  # bound per percentile of |replay - claim|
    rel: list[float]  # bound per percentile of |replay - claim| / (|claim| + 1e-12)


class BoundaryProfile(BaseModel):
    version: int = 1
    workload: str
    stride: int
    percentiles: list[float] = list(PERCENTILES)
    alpha: float = Field(gt=0)  # margin: an interval passes while every value <= alpha * bound
    signals: dict[str, SignalBounds]  # weights, optim, probe
    claim_profile: str  # the profile the honest claims were trained with
    profiles: list[str]  # the profiles honest replays ran under
    intervals: int  # intervals calibrated on (how many, per run)
    positions: list[int] = []  # which intervals (empty in profiles older than this field: the first N)
    runs: int = 1  # honest runs (tasks of this workload and stride) replayed at those positions
    rel_tail: float | None = None  # the tail model's exceedance for rel p100 (None: plain maximum)
    replays: int  # replays measured (runs x intervals x profiles)
    torch: str
    replay_seconds_max: float  # the slowest honest replay of one interval

    @model_validator(mode="after")
    def _bounds_every_value_judged(self) -> BoundaryProfile:
        # A judge reads every signal, kind and percentile: a boundary without one could not judge, and
        # a NaN or negative bound would reject every interval whatever the provider did.
        if list(self.percentiles) != list(PERCENTILES):
            raise ValueError(f"percentiles must be {list(PERCENTILES)}, not {self.percentiles}")
        if set(self.signals) != set(SIGNALS):
            raise ValueError(f"signals must be {sorted(SIGNALS)}, not {sorted(self.signals)}")
        for name, bounds in self.signals.items():
            for kind in ("abs", "rel"):
                values = getattr(bounds, kind)
                if len(values) != len(PERCENTILES) or not all(math.isfinite(v) and v >= 0 for v in values):
                    raise ValueError(f"{name}.{kind} must hold {len(PERCENTILES)} finite bounds >= 0, not {values}")
        return self

    def limit(self, signal: str, kind: str, index: int) -> float:
        return self.alpha * getattr(self.signals[signal], kind)[index]


def load_boundary(data: str | bytes) -> BoundaryProfile:
    """A boundary profile from its JSON; BoundaryError naming the first problem (an owner wrote it)."""
    try:
        return BoundaryProfile.model_validate_json(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(map(str, error["loc"])) or "document"
        raise BoundaryError(f"not a boundary profile: {where}: {error['msg'].removeprefix('Value error, ')}") from None


def spread_positions(intervals: int, count: int) -> list[int]:
    """``count`` intervals evenly spread from the first to the last of ``intervals``."""
    if count >= intervals:
        return list(range(intervals))
    if count == 1:
        return [0]
    return sorted({round(i * (intervals - 1) / (count - 1)) for i in range(count)})


def calibrate(
    prepared: PreparedTask,
    *,
    claim_profile: ExecutionProfile,
    replay_profiles: list[ExecutionProfile],
    positions: Sequence[int],
    alpha: float,
    work_dir: Path,
    rel_tail: float | None = REL_TAIL,
    on_replay: Callable[[int, str], None] | None = None,
    more_runs: Sequence[tuple[PreparedTask, Path]] = (),
) -> BoundaryProfile:
    """Honest claims in ``work_dir`` (trained if missing), then every (position, profile) replay.

    ``more_runs`` adds other honest runs of the same workload and stride (other initial weights and data
    order; their claims in their own folder), each replayed at the same positions: how far honest replays
    drift follows the run's gradient scale, most in its first interval, so a boundary meant for tasks it
    was not measured on should see more than one run."""
    runs = [(prepared, work_dir), *more_runs]
    spec: TaskSpec = prepared.spec
    check_runs([run for run, _ in runs])
    positions = sorted({k for k in positions if 0 <= k < min(p.spec.layout.intervals for p, _ in runs)})
    if not positions:
        raise ValueError("calibration needs at least one interval of the task")
    seen: dict[tuple[str, str], list[list[float]]] = {(s, kind): [] for s in SIGNALS for kind in ("abs", "rel")}
    slowest = 0.0
    for run, folder in runs:
        claims = TrainRun(run.spec, run.spec_hash, run.dataset_path, run.init_path, folder, claim_profile)
        train(claims, stop_at=run.spec.layout.end_step(positions[-1]))  # resumes: a no-op when the claims exist
        for k in positions:
            start, end = read_claim(folder, k - 1), read_claim(folder, k)
            for profile in replay_profiles:
                started = time.monotonic()
                replayed = replay_interval(run, k, start, profile=profile)
                slowest = max(slowest, time.monotonic() - started)
                for signal in SIGNALS:
                    section = SECTION_OF[signal]
                    profiles = difference_profiles(getattr(replayed, section), getattr(end, section))
                    for kind in ("abs", "rel"):
                        seen[signal, kind].append(profiles[kind])
                if on_replay is not None:
                    on_replay(k, profile.name)
    bounds = {key: bounds_of(rows, tail=rel_tail if key[1] == "rel" else None) for key, rows in seen.items()}
    return BoundaryProfile(
        workload=spec.workload.name,
        stride=spec.stride,
        alpha=alpha,
        signals={signal: SignalBounds(abs=bounds[signal, "abs"], rel=bounds[signal, "rel"]) for signal in SIGNALS},
        claim_profile=claim_profile.name,
        profiles=[p.name for p in replay_profiles],
        intervals=len(positions),
        positions=positions,
        runs=len(runs),
        rel_tail=rel_tail,
        replays=len(runs) * len(positions) * len(replay_profiles),
        torch=torch.__version__,
        replay_seconds_max=slowest,
    )


def check_runs(tasks: Sequence[PreparedTask]) -> None:
    """Raise ValueError unless every task has the first one's workload and stride (one boundary covers them)."""
    first = tasks[0].spec
    if any((t.spec.workload.name, t.spec.stride) != (first.workload.name, first.stride) for t in tasks[1:]):
        raise ValueError("every calibration run must have the first one's workload and stride")


def bounds_of(rows: list[list[float]], *, tail: float | None) -> list[float]:
    """The largest value per percentile; for the p100 column under a tail model, at least median / (2 tail)."""
    bounds = [max(column) for column in zip(*rows, strict=True)]
    if tail is not None:
        bounds[-1] = max(bounds[-1], statistics.median(row[-1] for row in rows) / (2.0 * tail))
    return bounds


def read_claim(work_dir: Path, k: int) -> Evidence | None:
    """Claimed E_k, or None for the start of interval 0 (the initial checkpoint)."""
    return None if k < 0 else read_evidence(evidence_path(work_dir, k))
