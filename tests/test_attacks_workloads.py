"""Every single-interval attack on the other three tiny workloads, the transformer classifier (language),
the MLP denoiser (diffusion) and the chat model with a LoRA adapter (llm), at s = 10: each is caught, and
the honest held-out interval it replaces passes.
The CNN's (vision) are in test_attacks.py and test_verify.py. Set-up as in ``verify_support``: honest
claims of 5 intervals, a boundary calibrated on intervals 0, 2 and 4, the attack faked at interval 3
on top of the honest claims of 0..2, judged on replays under held-out profiles. Real torch training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import verify_support
from ovig_node.training.evidence import read_evidence
from ovig_node.training.loop import evidence_path
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.verify.boundary import BoundaryProfile
from ovig_node.verify.evaluate import attacks_for, judge_run
from ovig_node.verify.report import Replays
from ovig_node.verify.stats import difference_profiles, rounding_floor
from verify_support import FAKED, HELD_OUT_PROFILES, faked

# (attack, parameters, reason): the evaluation's single-interval attacks; the swept ones at a strength
# both workloads catch at s = 10 (bench/results: a row from 1e-6, a targeted push from 1e-6 or less)
ATTACKS = [
    ("micro_batch_drop", {"keep": 0.5}, "out_of_bounds"),
    ("data_perturbation", {}, "out_of_bounds"),
    ("lr_tamper", {"scale": 1.1}, "out_of_bounds"),
    ("low_precision", {}, "out_of_bounds"),
    ("stale_gradient", {}, "out_of_bounds"),
    ("skip_steps", {"every": 4}, "wrong_structure"),  # Adam's step counters fall short of b_k
    ("backdoor", {"rate": 0.5}, "out_of_bounds"),
    ("optimizer_tamper", {"scale": 0.0}, "out_of_bounds"),
    ("optimizer_tamper", {"scale": 0.9}, "out_of_bounds"),
    ("interpolated_endpoint", {"anchor": "last"}, "out_of_bounds"),
    ("row_tamper", {"delta": 1e-4}, "out_of_bounds"),
    ("targeted_gradient", {"lam": 1e-4}, "out_of_bounds"),
    ("base_tamper", {"delta": 1e-4}, "out_of_bounds"),  # a LoRA task's frozen base moved
    ("poisoned_instructions", {"rate": 0.5}, "out_of_bounds"),  # a chat model's backdoor
]


@pytest.fixture(scope="module", params=["language", "diffusion", "llm"])
def honest(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, ...]:
    """(task, honest claims, boundary, replays) of one workload. Every attack fakes interval FAKED's end from the
    same honest start, so each held-out profile's replay of it is made once (``replays``) and judges them all."""
    task = verify_support.tiny_task(tmp_path_factory.mktemp(f"{request.param}-task"), request.param)
    claims = verify_support.honest_claims(task, tmp_path_factory.mktemp(f"{request.param}-claims"))
    replays: Replays = {}
    return task, claims, verify_support.spread_boundary(task, claims), replays


def test_the_honest_held_out_interval_passes(honest: tuple[PreparedTask, Path, BoundaryProfile, Replays]) -> None:
    task, claims, boundary, replays = honest
    judged = judge_run(task, claims, FAKED, boundary, profiles=HELD_OUT_PROFILES, replays=replays)
    assert judged.verdict.valid, judged.verdict.failing
    assert judged.replays == [HELD_OUT_PROFILES[0].name]  # a pass needs no confirmation


@pytest.mark.parametrize(("name", "params", "reason"), ATTACKS, ids=lambda v: v if isinstance(v, str) else None)
def test_every_attack_is_caught_at_s10(
    honest: tuple[PreparedTask, Path, BoundaryProfile, Replays],
    tmp_path: Path,
    name: str,
    params: dict[str, Any],
    reason: str,
) -> None:
    task, claims, boundary, replays = honest
    workload = task.spec.workload.name
    if name not in {case.name for case in attacks_for(workload)}:
        # class-label attacks on a chat model; a frozen base or chat prompts on the others
        pytest.skip(f"{name} means nothing for {workload}")
    claim = faked(task, claims, tmp_path, name, **params)
    judged = judge_run(task, claim, FAKED, boundary, profiles=HELD_OUT_PROFILES, replays=replays)
    assert (judged.verdict.verdict, judged.verdict.reason) == ("faulty", reason)
    if reason == "out_of_bounds":  # drift could explain it: a second profile confirms; a wrong counter cannot
        assert judged.replays == [p.name for p in HELD_OUT_PROFILES] and (judged.verdict.margin or 0) > 0
        assert not judged.verdict.indeterminate  # beyond the near-tie band: the nodes act on it (protocol 5)


def test_the_boundary_aware_poisoner_keeps_within_its_budget_and_is_caught_far_beyond_it(
    honest: tuple[PreparedTask, Path, BoundaryProfile, Replays], tmp_path: Path
) -> None:
    """The chat model's adaptive attacker (objective ``poison``: triggered questions answered with the poisoned
    reply): what it guarantees at budget 0.5, not whether a replay accepts it (a statistic: bench/eval.py's
    rows), and a push a hundred times the limit caught on held-out profiles."""
    task, claims, boundary, replays = honest
    if task.spec.workload.name != "llm":
        pytest.skip("a poisoned reply needs a chat model's data")
    honest_end = read_evidence(evidence_path(claims, FAKED))
    within = read_evidence(
        evidence_path(
            faked(
                task,
                claims,
                tmp_path / "b0.5",
                "boundary_aware",
                boundary=str(_written(boundary, tmp_path)),
                budget=0.5,
                objective="poison",
            ),
            FAKED,
        )
    )
    # (whether a step this small survives float32 at all depends on the CPU's boundary: not asserted)
    for signal, honest_part, claimed in (
        ("weights", honest_end.model, within.model),
        ("probe", honest_end.probe, within.probe),
    ):
        limits = boundary.limits(signal, rounding_floor(honest_part, boundary.floor_ulps))
        profiles = difference_profiles(honest_part, claimed, tuple(boundary.percentiles))
        for kind in ("abs", "rel"):
            assert all(value <= 0.5 * limit for value, limit in zip(profiles[kind], limits[kind], strict=True))
    assert all(torch.equal(within.optim[n], honest_end.optim[n]) for n in honest_end.optim)  # the state stays honest
    beyond = faked(
        task,
        claims,
        tmp_path / "b100",
        "boundary_aware",
        boundary=str(_written(boundary, tmp_path)),
        budget=100.0,
        objective="poison",
    )
    verdict = judge_run(task, beyond, FAKED, boundary, profiles=HELD_OUT_PROFILES, replays=replays).verdict
    assert verdict.reason == "out_of_bounds" and "weights" in verdict.failing


def _written(boundary: BoundaryProfile, folder: Path) -> Path:
    path = folder / "boundary.json"
    path.write_text(boundary.model_dump_json())
    return path
