"""Exact mode's verdict and its threshold (:mod:`ovig_node.training.exact`).

The verdict: a replay that applies the claimed rounding log must reproduce the claimed E_k bit for bit,
and must find nothing wrong with the log (an entry not at a rounding midpoint in the replay, one
missing, one unused). No boundary, no percentile: any difference is a fault.

The threshold adapts to the hardware, as Srivastava et al. set theirs: a short run under the reference
profile logs every value within a wide probe threshold of a midpoint, with its signed distance to it;
replays under the other profiles apply that log (so every rounding site sees the same inputs) and note
their own distance at the same positions. The largest difference is the discrepancy a threshold must
absorb twice over (the trainer's value within it of the midpoint, the replay's within half of it of the
trainer's); :func:`threshold_for` takes the first of 1, 2, 5 x a power of ten at or above eight times it.

Gradients are compared at every value, not only near midpoints: a sum that nearly cancels has a
discrepancy in its own ulps that no threshold bounds (:mod:`ovig_node.training.exact`), and such values
are rarely near a midpoint when calibration looks. The gradient's floor is FLOOR_MARGIN bits coarser than
the finest (the most bits below the step's largest gradient magnitude) whose grid keeps every measured
gradient discrepancy within GRADIENT_TARGET / SAFETY of a grid unit: calibration sees a few steps, and
cancellations deeper than it saw stay on the grid. The probe run rounds gradients on a coarse floor
(PROBE_FLOOR), whose midpoints no honest discrepancy reaches, so the replays stay on the reference's path
while every gradient value is compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ovig_node.protocol.spec import NumericsSpec, TaskSpec
from ovig_node.training.evidence import SECTIONS, STATS, Evidence
from ovig_node.training.exact import (
    GRADIENT,
    MAX_THRESHOLD,
    PHASES,
    ExactNumerics,
    Key,
    Trace,
    floor_edge,
    grid_discrepancy,
    midpoint_offsets,
    step_largest,
)
from ovig_node.training.execution import ExecutionProfile
from ovig_node.training.loop import exact_numerics, load_initial_model, training_step
from ovig_node.training.optim import build_optimizer
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.training.workloads import Dataset, get_workload
from ovig_node.verify.check import FAULTY, OUT_OF_BOUNDS, VALID, Verdict, structural, structure_problem

PROBE_THRESHOLD = 0.01  # ulps: wide enough that a discrepancy it cannot see would also break boundary mode
SAFETY = 8.0  # a threshold is at least this many times the largest discrepancy measured in its phase
MIN_THRESHOLD = 1e-7  # offsets from a midpoint come in steps of 2^-29 ulps: well above that
# The probe's gradient floor: coarse enough that no honest discrepancy we measured comes near the probe
# threshold in its grid's units (a replay stays on the reference's path), fine enough that calibration's
# run trains like the task's, whose calibrated floors are of the same order
PROBE_FLOOR = 12
FLOORS = tuple(range(0, 101))  # candidate gradient floors, coarsest first (every task has one: the tail has no bound)
GRADIENT_TARGET = 1e-4  # ulps: the gradient threshold the floor is chosen for (its log: about 2e-4 a value)
FLOOR_MARGIN = 4  # bits the chosen floor keeps below the finest that calibration found enough: 16x the discrepancy


# A cosine near zero is a dot product that cancels: its float64 error, at most about n x 2^-52 of the norms'
# product for n values, is absolute, and more than a float32 ulp of a cosine below about 1e-7 (the slack is
# the larger of this and that bound)
COSINE_SLACK = 2.0**-30


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
                return Verdict(
                    FAULTY,
                    OUT_OF_BOUNDS,
                    f"{section}/{name}: {differ} values differ from the replay's",
                    cause="not_reproduced",
                )
    values = sum(t.numel() for t in replay.probe.values())
    for name in sorted(replay.stats):
        slack = max(COSINE_SLACK, values * 2.0**-52) if name == "grad_cosine" else 0.0
        if (differ := _beyond_one_ulp(replay.stats[name], claim.stats[name], slack)) > 0:
            return Verdict(
                FAULTY,
                OUT_OF_BOUNDS,
                f"{STATS}/{name}: {differ} steps more than one ulp from the replay's",
                cause="not_reproduced",
            )
    return Verdict(VALID, "reproduced")


def _beyond_one_ulp(replay: torch.Tensor, claim: torch.Tensor, slack: float) -> int:
    """Values of ``claim`` more than one float32 ulp (plus ``slack``) from the replay's (NaN always). The
    statistics sum float64 values in an order a profile chooses, and round once: two profiles may round a
    value that sits at a midpoint apart, by one ulp, and every other value alike."""
    size = replay.abs()
    ulp = torch.maximum(
        torch.nextafter(size, torch.tensor(math.inf)) - size, size - torch.nextafter(size, torch.tensor(0.0))
    )
    close = (claim.double() - replay.double()).abs() <= ulp.double() + slack
    return int((~close).sum())


@dataclass(frozen=True)
class Discrepancy:
    profile: str
    # per phase, in ulps: the largest |replay's distance - trainer's| at a logged position; the gradient's at
    # every value, with no floor
    largest: dict[str, float]
    positions: int  # logged positions compared
    faults: int  # log faults the replay found at the probe threshold (0 unless the discrepancy is huge)
    gradient: tuple[float, ...] = ()  # the gradient's largest at every value, in units of its grid, per FLOORS


def measure_discrepancy(
    prepared: PreparedTask, reference: ExecutionProfile, profiles: Sequence[ExecutionProfile], *, steps: int
) -> list[Discrepancy]:
    """The discrepancy between ``reference`` and each of ``profiles`` over the first ``steps`` steps."""
    return _measure(prepared, reference, profiles, steps)[0]


def _measure(
    prepared: PreparedTask, reference: ExecutionProfile, profiles: Sequence[ExecutionProfile], steps: int
) -> tuple[list[Discrepancy], Callable[[tuple[float, ...], int], int]]:
    probe = prepared.spec.model_copy(update={"numerics": _probe_numerics()})
    rows, offsets, log, ours = _traced_run(prepared, probe, reference, steps, None)
    gradients = ours.gradients or {}
    largest_by_step = step_largest(gradients)

    def per_step(thresholds: tuple[float, ...], floor: int) -> int:
        """The most entries a step logs at ``thresholds`` (gradients: at every value, with ``floor``)."""
        logged = rows[
            (offsets.abs() < torch.tensor(thresholds, dtype=torch.float64)[rows[:, 1]]) & (rows[:, 1] != GRADIENT)
        ]
        counts = torch.bincount(logged[:, 0], minlength=steps + 1)
        for key, values in gradients.items():
            near = midpoint_offsets(values, floor_edge(largest_by_step[key[0]], floor)).abs() < thresholds[GRADIENT]
            counts[key[0]] += int(near.sum())
        return int(counts.max())

    results = []
    for profile in profiles:
        their_rows, their_offsets, _, numerics = _traced_run(prepared, probe, profile, steps, log)
        both = torch.cat([rows, their_rows])
        _, inverse = torch.unique(both, dim=0, return_inverse=True)
        trainer = torch.full((int(inverse.max()) + 1 if len(inverse) else 0,), math.nan, dtype=torch.float64)
        trainer[inverse[: len(rows)].flip(0)] = offsets.flip(0)  # any of a duplicated row's (equal) offsets
        differences = (their_offsets - trainer[inverse[len(rows) :]]).abs()
        phases = their_rows[:, 1]
        largest = {
            name: float(differences[phases == phase].max()) if bool((phases == phase).any()) else 0.0
            for phase, name in enumerate(PHASES)
        }
        by_floor = _gradient_discrepancy(gradients, numerics.gradients or {}, largest_by_step)
        largest["gradient"] = by_floor[-1]  # with no floor: every value, in its own ulps
        results.append(Discrepancy(profile.name, largest, len(differences), len(numerics.faults), by_floor[:-1]))
    return results, per_step


def _gradient_discrepancy(
    ours: dict[Key, torch.Tensor], theirs: dict[Key, torch.Tensor], largest_by_step: dict[int, float]
) -> tuple[float, ...]:
    """The largest gradient discrepancy at every value, in units of its grid, for each of FLOORS and (last)
    with no floor."""
    largest = [0.0] * (len(FLOORS) + 1)
    for key, values in ours.items():
        if key not in theirs or theirs[key].shape != values.shape:
            return (math.inf,) * len(largest)  # the replay took another path: no floor absorbs that
        at = [*(floor_edge(largest_by_step[key[0]], floor) for floor in FLOORS), None]
        largest = [max(a, b) for a, b in zip(largest, grid_discrepancy(values, theirs[key], at), strict=True)]
    return tuple(largest)


def gradient_floor_for(discrepancies: Sequence[Discrepancy]) -> tuple[int, float]:
    """The gradient floor (FLOOR_MARGIN bits coarser than the finest of FLOORS whose measured discrepancy,
    SAFETY times over, is at most GRADIENT_TARGET) and the discrepancy there, in units of its grid."""
    worst = [max((d.gradient[i] for d in discrepancies), default=0.0) for i in range(len(FLOORS))]
    fine_enough = [i for i, value in enumerate(worst) if SAFETY * value <= GRADIENT_TARGET]
    if not fine_enough:
        raise ValueError(
            f"the gradients' discrepancy ({worst[0]:.3g} units of the coarsest floor's grid) is "
            "beyond any floor: exact mode cannot absorb it"
        )
    chosen = max(fine_enough[-1] - FLOOR_MARGIN, 0)
    return FLOORS[chosen], worst[chosen]


def _largest(discrepancies: Sequence[Discrepancy], phase: str, gradient: float) -> float:
    """The largest discrepancy measured in ``phase`` (the gradient's is ``gradient``: at a chosen floor)."""
    return gradient if phase == "gradient" else max((d.largest[phase] for d in discrepancies), default=0.0)


def threshold_for(discrepancies: Sequence[Discrepancy], gradient: float) -> dict[str, str]:
    """The spec's threshold per phase (decimal strings) for the measured discrepancies: the first of
    1, 2, 5 x a power of ten at or above SAFETY times the largest (the gradient's: ``gradient``, its
    discrepancy in units of the chosen floor's grid, from :func:`gradient_floor_for`)."""
    if bad := [d.profile for d in discrepancies if d.faults]:
        raise ValueError(
            f"replays under {', '.join(bad)} disagree beyond the probe threshold "
            f"({PROBE_THRESHOLD} ulps): exact mode cannot absorb their drift"
        )
    thresholds = {}
    for phase in PHASES:
        largest = _largest(discrepancies, phase, gradient)
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
# ... and at most this many entries, the most a node takes a task with (nodes.fetching): a verifier holds the
# claimed end's log (up to 56 bytes an entry in the encoding's worst shape) and the start's, and decodes, indexes
# and re-encodes the end's in at most 200 more (tests/test_exact.py): about 5 GB here, as much as E_k may be.
# The tiny language model's cap at s = 10 is 4M entries; the full one's (MiniLM-L6, batch 16) this, twice its
# honest log.
MAX_LOG_ENTRIES = 1 << 24


def calibrate_numerics(
    prepared: PreparedTask, profiles: Sequence[ExecutionProfile], *, steps: int = CALIBRATION_STEPS
) -> tuple[dict[str, Any], list[Discrepancy]]:
    """The spec's ``numerics`` section for ``prepared`` (threshold from the discrepancy between the
    reference profile and ``profiles``; log cap from the entries a step logs at that threshold)."""
    from ovig_node.training.execution import PROFILES

    discrepancies, per_step = _measure(prepared, PROFILES["reference"], profiles, steps)
    floor, gradient = gradient_floor_for(discrepancies)
    threshold = threshold_for(discrepancies, gradient)
    entries = per_step(tuple(float(threshold[phase]) for phase in PHASES), floor)
    cap = LOG_SAFETY * entries * (prepared.spec.stride + 1) + 1024
    numerics = {
        "mode": "exact",
        "threshold": threshold,
        "max_log_entries": min(cap, MAX_LOG_ENTRIES),
        "gradient_floor": floor,
    }
    return numerics, discrepancies


def numerics_problem(
    prepared: PreparedTask, profiles: Sequence[ExecutionProfile], *, steps: int = CALIBRATION_STEPS
) -> str | None:
    """Why ``prepared``'s exact numerics are too fine for the discrepancy this machine measures between the
    reference and ``profiles`` (its first ``steps`` steps), or None. A provider's check before it accepts:
    the owner chooses the thresholds and the floor, and one finer than SAFETY times the discrepancy lets
    honest replays elsewhere take another neighbour (a floor far below the gradients' is none at all)."""
    from ovig_node.training.execution import PROFILES

    numerics = prepared.spec.numerics
    assert numerics is not None and numerics.gradient_floor is not None  # nodes refuse a spec without one
    discrepancies, _ = _measure(prepared, PROFILES["reference"], profiles, steps)
    if bad := [d.profile for d in discrepancies if d.faults]:
        return f"replays under {', '.join(bad)} disagree beyond the probe threshold ({PROBE_THRESHOLD} ulps)"
    # the gradient's in units of the grid of the spec's floor
    gradient = max((d.gradient[FLOORS.index(numerics.gradient_floor)] for d in discrepancies), default=0.0)
    for phase, threshold in zip(PHASES, numerics.thresholds, strict=True):
        largest = _largest(discrepancies, phase, gradient)
        if threshold < SAFETY * largest:
            at = f" at gradient floor {numerics.gradient_floor}" if phase == "gradient" else ""
            return (
                f"its {phase} threshold ({threshold:g} ulps) is under {SAFETY:g} times the discrepancy measured "
                f"here{at} ({largest:.3g})"
            )
    return None


def _probe_numerics() -> NumericsSpec:
    probe = dict.fromkeys(PHASES, str(PROBE_THRESHOLD))
    return NumericsSpec.model_validate(
        {"mode": "exact", "threshold": probe, "max_log_entries": 2**26, "gradient_floor": PROBE_FLOOR}
    )


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
    numerics.gradients = {}
    optimizer = build_optimizer(spec.optimizer, model, fused=profile.fused_optimizer)
    for step in range(steps):
        training_step(model, optimizer, workload, dataset, spec, step, profile, numerics=numerics)
    rows, offsets = numerics.trace.table()
    return rows, offsets, numerics.take_log(), numerics
