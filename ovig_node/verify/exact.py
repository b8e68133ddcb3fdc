"""Exact mode's verdict and its threshold (:mod:`ovig_node.training.exact`).

The verdict: a replay that applies the claimed rounding log must reproduce the claimed E_k bit for bit,
and must find nothing wrong with the log (an entry not at a rounding midpoint in the replay, one
missing, one unused). No boundary, no percentile: any difference is a fault.

The threshold adapts to the hardware, as Srivastava et al. set theirs: a short run under the reference
profile logs every value within a wide probe threshold of a midpoint, with its signed distance to it;
replays under the other profiles apply that log (so every rounding site sees the same inputs) and note
their own distance at the same positions. The largest difference is the discrepancy a threshold must
absorb twice over (the trainer's value within it of the midpoint, the replay's within half of it of the
trainer's); :func:`threshold_for` takes the next power of ten above eight times it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ovig_node.protocol.spec import NumericsSpec, TaskSpec
from ovig_node.training.evidence import SECTIONS, Evidence
from ovig_node.training.exact import MAX_THRESHOLD, PHASES, ExactNumerics, Trace
from ovig_node.training.execution import ExecutionProfile
from ovig_node.training.loop import exact_numerics, load_initial_model, training_step
from ovig_node.training.optim import build_optimizer
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.training.workloads import Dataset, get_workload
from ovig_node.verify.check import FAULTY, OUT_OF_BOUNDS, VALID, Verdict, structural, structure_problem

PROBE_THRESHOLD = 0.01  # ulps: wide enough that a discrepancy it cannot see would also break boundary mode
SAFETY = 8.0  # a threshold is at least this many times the largest discrepancy measured in its phase
MIN_THRESHOLD = 1e-7  # offsets from a midpoint come in steps of 2^-29 ulps: well above that


def judge_exact(
    claim: Evidence, replay: Evidence, faults: Sequence[str], *, expected_metadata: dict[str, str]
) -> Verdict:
    """The exact-mode verdict on a claimed end against a replay that applied its rounding log."""
    if (problem := structure_problem(claim, replay, expected_metadata)) is not None:
        return structural(*problem)
    if faults:
        cause = faults[0].split(":", 1)[0]
        return Verdict(FAULTY, OUT_OF_BOUNDS, "; ".join(faults[:3]), cause=cause)
    for section in SECTIONS:
        mine, theirs = getattr(replay, section), getattr(claim, section)
        for name in sorted(mine):
            if not torch.equal(mine[name].view(-1).view(torch.uint8), theirs[name].view(-1).view(torch.uint8)):
                differ = int((mine[name] != theirs[name]).sum())
                return Verdict(FAULTY, OUT_OF_BOUNDS, f"{section}/{name}: {differ} values differ from the replay's",
                               cause="not_reproduced")  # fmt: skip
    return Verdict(VALID, "reproduced")


@dataclass(frozen=True)
class Discrepancy:
    profile: str
    largest: dict[str, float]  # per phase, in ulps: the largest |replay's distance - trainer's| at a logged position
    positions: int  # logged positions compared
    faults: int  # log faults the replay found at the probe threshold (0 unless the discrepancy is huge)


def measure_discrepancy(
    prepared: PreparedTask, reference: ExecutionProfile, profiles: Sequence[ExecutionProfile], *, steps: int
) -> list[Discrepancy]:
    """The discrepancy between ``reference`` and each of ``profiles`` over the first ``steps`` steps."""
    return _measure(prepared, reference, profiles, steps)[0]


def _measure(
    prepared: PreparedTask, reference: ExecutionProfile, profiles: Sequence[ExecutionProfile], steps: int
) -> tuple[list[Discrepancy], Callable[[tuple[float, ...]], int]]:
    probe = prepared.spec.model_copy(update={"numerics": _probe_numerics()})
    rows, offsets, log, _ = _traced_run(prepared, probe, reference, steps, None)

    def per_step(thresholds: tuple[float, ...]) -> int:
        logged = rows[offsets.abs() < torch.tensor(thresholds, dtype=torch.float64)[rows[:, 1]]]
        return int(torch.bincount(logged[:, 0] - logged[:, 0].min()).max()) if len(logged) else 0

    results = []
    for profile in profiles:
        their_rows, their_offsets, _, numerics = _traced_run(prepared, probe, profile, steps, log)
        both = torch.cat([rows, their_rows])
        _, inverse = torch.unique(both, dim=0, return_inverse=True)
        trainer = torch.full((int(inverse.max()) + 1 if len(inverse) else 0,), math.nan, dtype=torch.float64)
        trainer[inverse[: len(rows)].flip(0)] = offsets.flip(0)  # any of a duplicated row's (equal) offsets
        differences = (their_offsets - trainer[inverse[len(rows) :]]).abs()
        phases = their_rows[:, 1]
        largest = {name: float(differences[phases == phase].max()) if bool((phases == phase).any()) else 0.0
                   for phase, name in enumerate(PHASES)}  # fmt: skip
        results.append(Discrepancy(profile.name, largest, len(differences), len(numerics.faults)))
    return results, per_step


def threshold_for(discrepancies: Sequence[Discrepancy]) -> dict[str, str]:
    """The spec's threshold per phase (decimal strings) for the measured discrepancies: the first of
    1, 2, 5 x a power of ten at or above SAFETY times the largest."""
    if bad := [d.profile for d in discrepancies if d.faults]:
        raise ValueError(f"replays under {', '.join(bad)} disagree beyond the probe threshold "
                         f"({PROBE_THRESHOLD} ulps): exact mode cannot absorb their drift")  # fmt: skip
    thresholds = {}
    for phase in PHASES:
        largest = max((d.largest[phase] for d in discrepancies), default=0.0)
        wanted = max(SAFETY * largest, MIN_THRESHOLD)
        exponent = math.floor(math.log10(wanted))
        mantissa = next(m for m in (1, 2, 5, 10) if m * 10.0**exponent >= wanted * (1 - 1e-12))
        if mantissa == 10:
            mantissa, exponent = 1, exponent + 1
        if mantissa * 10.0**exponent >= MAX_THRESHOLD:
            raise ValueError(f"a {phase} discrepancy of {largest:.3g} ulps needs a threshold exact mode cannot have")
        thresholds[phase] = f"{mantissa}e{exponent}"
    return thresholds


CALIBRATION_STEPS = 3  # steps each profile runs to measure the discrepancy
LOG_SAFETY = 4  # the spec's cap on a log is this many times the measured entries per step, per interval


def calibrate_numerics(
    prepared: PreparedTask, profiles: Sequence[ExecutionProfile], *, steps: int = CALIBRATION_STEPS
) -> tuple[dict[str, Any], list[Discrepancy]]:
    """The spec's ``numerics`` section for ``prepared`` (threshold from the discrepancy between the
    reference profile and ``profiles``; log cap from the entries a step logs at that threshold)."""
    from ovig_node.training.execution import PROFILES

    discrepancies, per_step = _measure(prepared, PROFILES["reference"], profiles, steps)
    threshold = threshold_for(discrepancies)
    entries = per_step(tuple(float(threshold[phase]) for phase in PHASES))
    cap = LOG_SAFETY * entries * (prepared.spec.stride + 1) + 1024
    return {"mode": "exact", "threshold": threshold, "max_log_entries": min(cap, 2**26)}, discrepancies


def _probe_numerics() -> NumericsSpec:
    probe = dict.fromkeys(PHASES, str(PROBE_THRESHOLD))
    return NumericsSpec.model_validate({"mode": "exact", "threshold": probe, "max_log_entries": 2**26})


def _traced_run(
    prepared: PreparedTask, spec: TaskSpec, profile: ExecutionProfile, steps: int, log: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, ExactNumerics]:
    profile.apply()
    workload = get_workload(spec.workload.name)
    dataset = Dataset.load(prepared.dataset_path)
    model = load_initial_model(workload, spec.workload.config, prepared.init_path).to(profile.device)
    numerics = exact_numerics(model, workload, dataset, spec, profile, log)
    assert numerics is not None
    numerics.trace = Trace()
    optimizer = build_optimizer(spec.optimizer, model, fused=profile.fused_optimizer)
    for step in range(steps):
        training_step(model, optimizer, workload, dataset, spec, step, profile, numerics=numerics)
    rows, offsets = numerics.trace.table()
    return rows, offsets, numerics.take_log(), numerics
