"""The empirical boundary (protocol section 2.5): how far honest replays land from honest claims.

Calibration trains the task's first ``N`` intervals honestly (the claims), replays each interval from
its claimed start under several execution profiles, and records, per signal, kind and percentile, the
largest difference seen. An interval passes only if each of its values is ``<= alpha * bound``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch
from pydantic import BaseModel, Field

from ovig_node.protocol.spec import TaskSpec
from ovig_node.training.evidence import Evidence, read_evidence
from ovig_node.training.execution import ExecutionProfile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.verify.replay import replay_interval
from ovig_node.verify.stats import PERCENTILES, SECTION_OF, SIGNALS, difference_profiles


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
    intervals: int  # intervals calibrated on (the first N)
    replays: int  # replays measured (intervals x profiles)
    torch: str
    replay_seconds_max: float  # the slowest honest replay of one interval

    def limit(self, signal: str, kind: str, index: int) -> float:
        return self.alpha * getattr(self.signals[signal], kind)[index]


def calibrate(
    prepared: PreparedTask,
    *,
    claim_profile: ExecutionProfile,
    replay_profiles: list[ExecutionProfile],
    intervals: int,
    alpha: float,
    work_dir: Path,
    on_replay: Callable[[int, str], None] | None = None,
) -> BoundaryProfile:
    """Honest claims for the first ``intervals`` intervals, then every (interval, profile) replay."""
    spec: TaskSpec = prepared.spec
    intervals = min(intervals, spec.layout.intervals)
    claims = TrainRun(spec, prepared.spec_hash, prepared.dataset_path, prepared.init_path, work_dir, claim_profile)
    train(claims, stop_at=spec.layout.end_step(intervals - 1))
    worst = {signal: {"abs": [0.0] * len(PERCENTILES), "rel": [0.0] * len(PERCENTILES)} for signal in SIGNALS}
    slowest = 0.0
    for k in range(intervals):
        start = read_claim(work_dir, k - 1)
        end = read_claim(work_dir, k)
        for profile in replay_profiles:
            started = time.monotonic()
            replayed = replay_interval(prepared, k, start, profile=profile)
            slowest = max(slowest, time.monotonic() - started)
            for signal in SIGNALS:
                section = SECTION_OF[signal]
                profiles = difference_profiles(getattr(replayed, section), getattr(end, section))
                for kind in ("abs", "rel"):
                    worst[signal][kind] = [max(a, b) for a, b in zip(worst[signal][kind], profiles[kind], strict=True)]
            if on_replay is not None:
                on_replay(k, profile.name)
    return BoundaryProfile(
        workload=spec.workload.name,
        stride=spec.stride,
        alpha=alpha,
        signals={signal: SignalBounds(**worst[signal]) for signal in SIGNALS},
        claim_profile=claim_profile.name,
        profiles=[p.name for p in replay_profiles],
        intervals=intervals,
        replays=intervals * len(replay_profiles),
        torch=torch.__version__,
        replay_seconds_max=slowest,
    )


def read_claim(work_dir: Path, k: int) -> Evidence | None:
    """Claimed E_k, or None for the start of interval 0 (the initial checkpoint)."""
    return None if k < 0 else read_evidence(evidence_path(work_dir, k))
