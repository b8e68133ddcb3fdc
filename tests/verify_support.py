"""Set-up shared by the verification tests: a tiny task (5 intervals of 10 steps; vision unless named), its honest
claims, and a boundary calibrated on intervals spread over the run (0, 2, 4), so 1 and 3 stay held out.
Real torch training throughout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ovig_node.attacks import load_attack
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import evidence_path, train
from ovig_node.training.taskfiles import PreparedTask, prepare_task
from ovig_node.verify.boundary import BoundaryProfile, calibrate
from ovig_node.verify.evaluate import claim_run, fake

CALIBRATION_PROFILES = ["micro2", "micro4", "micro4-fp64acc"]
POSITIONS = [0, 2, 4]
HELD_OUT = ["threads2-micro2", "threads2"]  # never used in calibration; the second confirms a rejection
HELD_OUT_PROFILES = [get_profile(name) for name in HELD_OUT]
FAKED = 3  # the interval the attack tests fake: held out, with honest claims before it


def tiny_task(folder: Path, workload: str = "vision") -> PreparedTask:
    return prepare_task(workload, folder, tiny=True, total_steps=50, stride=10, intervals_per_batch=5)


def honest_claims(task: PreparedTask, folder: Path) -> Path:
    train(claim_run(task, folder))
    return folder


def spread_boundary(task: PreparedTask, claims: Path) -> BoundaryProfile:
    return calibrate(
        task,
        claim_profile=get_profile("reference"),
        replay_profiles=[get_profile(p) for p in CALIBRATION_PROFILES],
        positions=POSITIONS,
        alpha=3.0,
        work_dir=claims,
    )


def faked(task: PreparedTask, claims: Path, out: Path, name: str, **params: Any) -> Path:
    """Claims in ``out`` of attack ``name`` faking interval ``FAKED`` on top of the honest claims before it.
    An ``anchor`` of ``"last"`` is the honest run's last checkpoint: the line an interpolating cheat follows."""
    if params.get("anchor") == "last":
        params = {**params, "anchor": str(evidence_path(claims, task.spec.layout.intervals - 1))}
    fake(task, claims, out, load_attack(name, intervals=frozenset({FAKED}), **params), last=FAKED, honest_prefix=FAKED)
    return out
