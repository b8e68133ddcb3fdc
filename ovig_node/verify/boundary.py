"""The empirical boundary (protocol section 2.5): how far honest replays land from honest claims.

Calibration trains honest claims up to the last calibrated interval, replays each calibrated interval
from its claimed start under several execution profiles, and records, per signal, kind and
percentile, the largest difference seen. An interval passes only if each of its values is
``<= alpha * bound`` (or the rounding floor below, where that is higher). Two choices make the bound
hold beyond the replays it was measured on:

- **positions spread over the run** (:func:`spread_positions`), not only its first intervals: honest
  drift follows the phase of training (optimizer moments and gradients grow, the schedule moves), so
  a prefix under-covers later intervals;
- **a tail model for the largest relative difference** (``rel`` at p100). That value is set by the
  claim's coordinate nearest zero: with a density of coordinates around zero it has a 1/x tail,
  ``P(X > x) ~ median / (2x)``, so a maximum over a few dozen replays cannot bound it. Its bound is at
  least the value that tail leaves ``rel_tail`` of replays above, ``median / (2 rel_tail)``, the median
  over replays that drifted at all.

And one that makes a bound hold on hardware calibration never saw: **a rounding-scale floor**
(``floor_ulps``). Calibration profiles often agree bit for bit on most coordinates, so the low
percentiles' bounds collapse to about zero, and an honest replay whose kernels round differently on
more than half of the coordinates would fail there. A limit below p99.9 is never below ``floor_ulps``
units in the last place of the claimed values at that percentile of their magnitude
(:func:`stats.rounding_floor`, which says what it leaves out and why): what rounding alone produces at
that scale. The judge (:mod:`ovig_node.verify.check`) applies it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from pydantic import BaseModel, Field, ValidationError, model_validator

from ovig_node.errors import OvigError
from ovig_node.protocol.spec import TaskSpec
from ovig_node.training.evidence import Evidence, read_evidence
from ovig_node.training.execution import ExecutionProfile, ProfileUnavailable
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.statistics import STATISTICS
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.verify import step_stats
from ovig_node.verify.defaults import CALIBRATION
from ovig_node.verify.replay import replay_interval
from ovig_node.verify.stats import PERCENTILES, SECTION_OF, SIGNALS, difference_profiles

# Share of honest replays the tail model lets past the rel p100 bound (before alpha). An exceedance belongs
# to the interval, not to the replay (every replay of it shares the claim's coordinate nearest zero, so no
# confirmation replay clears it), which asks for a smaller share; but the same statistic is the only cap
# on shrinking Adam's second moments, which have no such tail and which the update divides by: at 1e-5 an
# attacker's review shrank 0.1% of them 545-fold and passed. docs/evaluation.md counts what 1e-3 costs.
REL_TAIL = 1e-3
FLOOR_ULPS = CALIBRATION.floor_ulps  # a limit is at least this many ulps of the claimed values at its percentile
MAX_FLOOR_ULPS = CALIBRATION.max_floor_ulps  # past that the floor would be a tolerance, not rounding


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
    # margin: an interval passes while every value <= max(alpha * bound, floor); finite, or no limit is
    alpha: float = Field(gt=0, allow_inf_nan=False)
    signals: dict[str, SignalBounds]  # weights, optim, probe
    statistics: dict[str, float]  # per statistic of every step, its largest honest difference (verify.step_stats)
    claim_profile: str  # the profile the honest claims were trained with
    profiles: list[str]  # the profiles honest replays ran under
    intervals: int  # intervals calibrated on (how many, per run)
    positions: list[int] = []  # which intervals (empty in profiles older than this field: the first N)
    runs: int = 1  # honest runs (tasks of this workload and stride) replayed at those positions
    rel_tail: float | None = None  # the tail model's exceedance for rel p100 (None: plain maximum)
    # a limit is at least this many ulps of the claimed values at its percentile (0 in profiles older
    # than this field: they are judged as they were published)
    floor_ulps: float = Field(default=0.0, ge=0.0, le=MAX_FLOOR_ULPS)
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
        if set(self.statistics) != set(STATISTICS):
            raise ValueError(f"statistics must be {sorted(STATISTICS)}, not {sorted(self.statistics)}")
        if not all(math.isfinite(v) and v >= 0 for v in self.statistics.values()):
            raise ValueError(f"statistics must be finite bounds >= 0, not {self.statistics}")
        for name, bounds in self.signals.items():
            for kind in ("abs", "rel"):
                values = getattr(bounds, kind)
                if len(values) != len(PERCENTILES) or not all(math.isfinite(v) and v >= 0 for v in values):
                    raise ValueError(f"{name}.{kind} must hold {len(PERCENTILES)} finite bounds >= 0, not {values}")
        return self

    def limit(self, signal: str, kind: str, index: int) -> float:
        """``alpha`` times the bound: the limit before the rounding floor."""
        return self.alpha * getattr(self.signals[signal], kind)[index]

    def limits(self, signal: str, floor: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
        """Per kind, the limit at each percentile: ``alpha`` times the bound, raised to ``floor`` (the claim's
        :func:`~ovig_node.verify.stats.rounding_floor`) where given."""
        limits = {kind: [self.limit(signal, kind, i) for i in range(len(self.percentiles))] for kind in ("abs", "rel")}
        if floor is None:
            return limits
        # ``step > limit`` is False for a NaN step (a claim holding NaN or infinity): the limit stays
        return {
            kind: [step if step > limit else limit for limit, step in zip(values, floor[kind], strict=True)]
            for kind, values in limits.items()
        }


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
    floor_ulps: float = FLOOR_ULPS,
    on_replay: Callable[[int, str], None] | None = None,
    more_runs: Sequence[tuple[PreparedTask, Path]] = (),
) -> BoundaryProfile:
    """Honest claims in ``work_dir`` (trained if missing), then every (position, profile) replay.

    ``more_runs`` adds other honest runs of the same workload and stride (other initial weights and data
    order; their claims in their own folder), each replayed at the same positions: how far honest replays
    drift follows the run's gradient scale, most in its first interval, so a boundary meant for tasks it
    was not measured on should see more than one run."""
    if distributed := [p.name for p in replay_profiles if p.world_size > 1]:
        raise ProfileUnavailable(
            f"replays run in one process; {', '.join(distributed)} can be the claims' profile "
            "(--claim-profile), not a replay's"
        )
    runs = [(prepared, work_dir), *more_runs]
    spec: TaskSpec = prepared.spec
    check_runs([run for run, _ in runs])
    positions = sorted({k for k in positions if 0 <= k < min(p.spec.layout.intervals for p, _ in runs)})
    if not positions:
        raise ValueError("calibration needs at least one interval of the task")
    replays = []
    for run, folder in runs:
        claims = TrainRun(run.spec, run.spec_hash, run.dataset_path, run.init_path, folder, claim_profile)
        train(claims, stop_at=run.spec.layout.end_step(positions[-1]))  # resumes: a no-op when the claims exist
        for k in positions:
            start, end = read_claim(folder, k - 1), read_claim(folder, k)
            assert end is not None  # k >= 0: only interval 0's start (k - 1 < 0) has no claim
            for profile in replay_profiles:
                replays.append(honest_replay(run, k, start, end, profile))
                if on_replay is not None:
                    on_replay(k, profile.name)
    return boundary_of(
        replays,
        spec=spec,
        alpha=alpha,
        claim_profile=claim_profile.name,
        runs=len(runs),
        rel_tail=rel_tail,
        floor_ulps=floor_ulps,
    )


@dataclass(frozen=True)
class HonestReplay:
    """How far one honest replay of interval ``k`` under ``profile`` landed from the claim."""

    k: int
    profile: str
    differences: dict[str, dict[str, list[float]]]  # signal -> kind -> value per percentile
    seconds: float  # the replay's wall time
    statistics: dict[str, float]  # per statistic of every step, its largest difference (verify.step_stats)


def honest_replay(
    run: PreparedTask, k: int, start: Evidence | None, end: Evidence, profile: ExecutionProfile
) -> HonestReplay:
    """Replay interval ``k`` of an honest run from its claimed ``start`` under ``profile``; compare with ``end``."""
    started = time.monotonic()
    replayed = replay_interval(run, k, start, profile=profile)
    seconds = time.monotonic() - started
    differences = {
        signal: difference_profiles(getattr(replayed, SECTION_OF[signal]), getattr(end, SECTION_OF[signal]))
        for signal in SIGNALS
    }
    return HonestReplay(k, profile.name, differences, seconds, step_stats.differences(replayed.stats, end.stats))


def boundary_of(
    replays: Sequence[HonestReplay],
    *,
    spec: TaskSpec,
    alpha: float,
    claim_profile: str,
    runs: int,
    rel_tail: float | None = REL_TAIL,
    floor_ulps: float = FLOOR_ULPS,
) -> BoundaryProfile:
    """The boundary these honest replays (of ``runs`` runs of ``spec``'s workload and stride) measure."""
    if not replays:
        raise ValueError("a boundary needs at least one honest replay")
    bounds = {
        (signal, kind): bounds_of(
            [r.differences[signal][kind] for r in replays], tail=rel_tail if kind == "rel" else None
        )
        for signal in SIGNALS
        for kind in ("abs", "rel")
    }
    positions = sorted({r.k for r in replays})
    return BoundaryProfile(
        workload=spec.workload.name,
        stride=spec.stride,
        alpha=alpha,
        signals={signal: SignalBounds(abs=bounds[signal, "abs"], rel=bounds[signal, "rel"]) for signal in SIGNALS},
        statistics={name: max(r.statistics[name] for r in replays) for name in STATISTICS},
        claim_profile=claim_profile,
        profiles=list(dict.fromkeys(r.profile for r in replays)),
        intervals=len(positions),
        positions=positions,
        runs=runs,
        rel_tail=rel_tail,
        floor_ulps=floor_ulps,
        replays=len(replays),
        torch=torch.__version__,
        replay_seconds_max=max(r.seconds for r in replays),
    )


def check_runs(tasks: Sequence[PreparedTask]) -> None:
    """Raise ValueError unless every task has the first one's workload and stride (one boundary covers them)."""
    first = tasks[0].spec
    if any((t.spec.workload.name, t.spec.stride) != (first.workload.name, first.stride) for t in tasks[1:]):
        raise ValueError("every calibration run must have the first one's workload and stride")


def bounds_of(rows: list[list[float]], *, tail: float | None) -> list[float]:
    """The largest value per percentile; for the p100 column under a tail model, at least median / (2 tail),
    the median over the replays that drifted at all: one bit-identical to its claim (a profile whose kernels
    the workload never calls) measures no drift, and enough of them would pull the median to zero."""
    bounds = [max(column) for column in zip(*rows, strict=True)]
    drifted = [row[-1] for row in rows if row[-1] > 0.0]
    if tail is not None and drifted:
        bounds[-1] = max(bounds[-1], statistics.median(drifted) / (2.0 * tail))
    return bounds


def read_claim(work_dir: Path, k: int) -> Evidence | None:
    """Claimed E_k, or None for the start of interval 0 (the initial checkpoint)."""
    return None if k < 0 else read_evidence(evidence_path(work_dir, k))
