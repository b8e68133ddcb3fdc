"""Replays, the calibrated boundary and verdicts, on real tiny-vision training."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from ovig_node.attacks.base import Attack, AttackError, load_attack
from ovig_node.attacks.builtin import RowTamper
from ovig_node.cli import cli
from ovig_node.deadlines import DeadlinePassed, stop_at
from ovig_node.protocol.spec import training_hash
from ovig_node.training.evidence import Evidence, read_evidence, write_evidence
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.optim import is_step_counter
from ovig_node.training.taskfiles import PreparedTask, prepare_task
from ovig_node.verify import stats
from ovig_node.verify.boundary import REL_TAIL, BoundaryProfile, bounds_of, calibrate, spread_positions
from ovig_node.verify.check import Verdict, in_band
from ovig_node.verify.evaluate import (
    AttackCase,
    EvalSettings,
    OtherEvaluation,
    PieceFailed,
    _read_kept,
    _Stride,
    evaluate,
)
from ovig_node.verify.plots import plot_honest, plot_margins
from ovig_node.verify.replay import replay_interval
from ovig_node.verify.report import closest_to_limit, replay_and_judge
from ovig_node.verify.statistics_judge import Reference
from ovig_node.verify.stats import PERCENTILES, REL_EPS, difference_profiles, percentiles
from ovig_node.verify.summary import markdown, summarise
from support import run_ovig
from verify_support import CALIBRATION_PROFILES, HELD_OUT, HELD_OUT_PROFILES

# `ovig calibrate`'s default: every family of execution profiles but the thread split (watchers confirm under it)
DEFAULT_PROFILES = ["micro2", "micro4", "micro4-fp64acc", "native-conv", "math-attention", "fused-optimizer"]


@pytest.fixture(scope="module")
def task(vision_task: PreparedTask) -> PreparedTask:
    return vision_task


@pytest.fixture(scope="module")
def claims(vision_claims: Path) -> Path:
    return vision_claims


@pytest.fixture(scope="module")
def boundary(vision_boundary: BoundaryProfile) -> BoundaryProfile:
    return vision_boundary


def check(task: PreparedTask, boundary: BoundaryProfile, claims: Path, k: int, claimed_end: Evidence) -> Verdict:
    start = read_evidence(evidence_path(claims, k - 1))
    return replay_and_judge(task, k, start, claimed_end, boundary, profiles=HELD_OUT_PROFILES).verdict


def test_percentiles_are_exact_nearest_rank() -> None:
    rng = np.random.default_rng(0)
    dense = np.abs(rng.standard_normal(300_001)).astype(np.float32)
    mostly_zero = np.concatenate([np.zeros(200_000, dtype=np.float32), dense[:100_001]])  # like honest drift
    quantised = np.round(dense * 4) / 4  # many equal values, as float32 differences are
    for values in (dense, rng.permutation(mostly_zero), quantised, dense[:10_001]):
        ranked = np.sort(values)
        assert percentiles(values) == [ranked[int(np.ceil(p / 100 * values.size)) - 1] for p in PERCENTILES]
    with_nan = dense.copy()
    with_nan[7] = np.nan
    assert np.isnan(percentiles(with_nan)[-1])  # a NaN is never within a bound
    assert percentiles(np.array([3.0])) == [3.0] * 5
    assert percentiles(np.zeros(0)) == [0.0] * 5


def _explicit_profiles(replay: dict[str, torch.Tensor], claim: dict[str, torch.Tensor]) -> dict[str, list[float]]:
    """The definition, spelt out: every difference materialised, then ranked."""
    r, c = (torch.cat([t[name].reshape(-1) for name in sorted(t)]) for t in (replay, claim))
    d = (r - c).abs()
    eps = torch.tensor(1e-12, dtype=d.dtype)
    return {"abs": percentiles(d.numpy()), "rel": percentiles((d / (c.abs() + eps)).numpy())}


@pytest.mark.parametrize(
    "case", ["drift", "mostly_identical", "identical", "quantised", "nan_inf", "float64", "tiny", "denormal"]
)
def test_difference_profiles_equal_the_definition(case: str) -> None:
    g = torch.Generator().manual_seed(1)
    claim = {"w": torch.randn(300, 700, generator=g) * 0.05, "b": torch.randn(701, generator=g), "v": torch.zeros(5)}
    replay = {name: t + torch.randn(t.shape, generator=g) * 1e-7 for name, t in claim.items()}
    if case == "mostly_identical":  # like an honest replay: most coordinates bit-identical
        replay = {
            name: torch.where(torch.rand(t.shape, generator=g) < 0.7, claim[name], t) for name, t in replay.items()
        }
    elif case == "identical":
        replay = {name: t.clone() for name, t in claim.items()}
    elif case == "quantised":  # many equal differences, as float32 differences of nearby weights are
        replay = {name: claim[name] + torch.round(t - claim[name], decimals=7) for name, t in replay.items()}
    elif case == "nan_inf":
        replay["w"][3, 4], replay["b"][9], claim["b"][10] = float("nan"), float("inf"), -0.0
    elif case == "float64":
        replay["w"], claim["w"] = replay["w"].double(), claim["w"].double()
        replay, claim = {n: t.double() for n, t in replay.items()}, {n: t.double() for n, t in claim.items()}
    elif case == "tiny":
        replay, claim = {"x": torch.tensor([2.5])}, {"x": torch.tensor([1.0])}
    elif case == "denormal":
        claim = {"x": torch.zeros(1000)}
        replay = {"x": torch.full((1000,), 1e-44) * (torch.arange(1000) % 3)}
    profiles, expected = difference_profiles(replay, claim), _explicit_profiles(replay, claim)
    for kind in ("abs", "rel"):
        np.testing.assert_array_equal(profiles[kind], expected[kind])  # exactly equal, NaN included
    if case == "nan_inf":
        assert np.isnan(profiles["abs"][-1]) and np.isnan(profiles["rel"][-1])
    if case == "identical":
        assert profiles == {"abs": [0.0] * 5, "rel": [0.0] * 5}
    if case == "tiny":
        assert profiles == {"abs": [1.5] * 5, "rel": [1.5] * 5}


def test_difference_profiles_of_an_empty_signal_are_zero() -> None:
    assert difference_profiles({}, {}) == {"abs": [0.0] * 5, "rel": [0.0] * 5}
    assert difference_profiles({"x": torch.zeros(0)}, {"x": torch.zeros(0)}) == {"abs": [0.0] * 5, "rel": [0.0] * 5}


def test_sampled_brackets_give_the_exact_answer_and_decline_when_the_sample_misleads() -> None:
    rng = np.random.default_rng(3)
    n = 2_000_003  # well over the sample, in two tensors
    claim = (rng.standard_normal(n) * 0.05).astype(np.float32)
    drift = claim + (rng.standard_normal(n) * 1e-7).astype(np.float32)
    replay = np.where(rng.random(n) < 0.6, claim, drift)  # mostly bit-identical, like an honest replay
    replay[[5, 9]] = np.nan, np.inf
    ranks = [stats._rank(p, n) for p in PERCENTILES]

    def pairs(r: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(r[: n // 3], claim[: n // 3]), (r[n // 3 :], claim[n // 3 :])]

    def definition(r: np.ndarray) -> list[list[float]]:
        d = np.abs(r - claim)
        return [percentiles(d), percentiles(d / (np.abs(claim) + np.float32(1e-12)))]

    fast = stats._bracketed(pairs(replay), n, ranks)
    assert fast is not None  # the fast path answered
    np.testing.assert_array_equal([fast["abs"], fast["rel"]], definition(replay))
    assert np.isnan(fast["abs"][-1]) and fast["abs"][0] == 0.0  # p100 a NaN, p50 among the identical ones
    # A replay whose sampled coordinates alone differ much: every bracket misses, and the binned pass answers.
    misled = replay.copy()
    misled[(np.arange(stats.SAMPLE) * n) // stats.SAMPLE] += 1.0
    assert stats._bracketed(pairs(misled), n, ranks) is None
    profiles = difference_profiles({"x": torch.from_numpy(misled)}, {"x": torch.from_numpy(claim)})
    np.testing.assert_array_equal([profiles["abs"], profiles["rel"]], definition(misled))
    # A replay with NaN in 2% of its coordinates: the top three percentiles are NaN, by either path.
    broken = replay.copy()
    broken[::50] = np.nan
    profiles = difference_profiles({"x": torch.from_numpy(broken)}, {"x": torch.from_numpy(claim)})
    np.testing.assert_array_equal([profiles["abs"], profiles["rel"]], definition(broken))
    assert np.isnan(profiles["abs"][2:]).all() and not np.isnan(profiles["abs"][1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_pass_covers_a_signal_of_many_tensors_of_any_size(dtype: type) -> None:
    rng = np.random.default_rng(5)
    sizes = [0, 1, 7, 2048, 2049, 300_001, 3, 150_000, 0, 5_000]  # empty, under and over a block, uneven
    claims = [(rng.standard_normal(k) * 0.05).astype(dtype) for k in sizes]
    drifts = [c + rng.standard_normal(c.size) * 1e-7 for c in claims]
    replays = [np.where(rng.random(c.size) < 0.5, c, x).astype(dtype) for c, x in zip(claims, drifts, strict=True)]
    pairs = list(zip(replays, claims, strict=True))
    n = sum(sizes)
    fast = stats._bracketed(pairs, n, [stats._rank(p, n) for p in PERCENTILES])
    assert fast is not None
    d = np.abs(np.concatenate(replays) - np.concatenate(claims))
    assert fast == {"abs": percentiles(d), "rel": percentiles(d / (np.abs(np.concatenate(claims)) + REL_EPS))}
    # Nine percentiles need more brackets than the pass tests: the binned pass answers, exactly.
    many = (1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 100.0)
    assert stats._bracketed(pairs, n, [stats._rank(p, n) for p in many]) is None
    tensors = {f"t{i}": torch.from_numpy(x) for i, x in enumerate(replays)}
    claimed = {f"t{i}": torch.from_numpy(x) for i, x in enumerate(claims)}
    assert difference_profiles(tensors, claimed, many)["abs"] == percentiles(d, many)


def test_calibration_records_drift_per_signal(boundary: BoundaryProfile) -> None:
    assert boundary.profiles == CALIBRATION_PROFILES and boundary.replays == 9
    assert boundary.positions == [0, 2, 4] and boundary.intervals == 3 and boundary.rel_tail == REL_TAIL
    assert boundary.stride == 10 and boundary.workload == "vision"
    weights = boundary.signals["weights"].abs
    assert weights == sorted(weights) and 0 < weights[-1] < 1e-4  # honest drift is tiny but real
    assert boundary.signals["probe"].abs[-1] > 0
    assert boundary.replay_seconds_max > 0
    assert BoundaryProfile.model_validate_json(boundary.model_dump_json()) == boundary


def test_positions_spread_from_first_to_last_interval() -> None:
    assert spread_positions(12, 4) == [0, 4, 7, 11]
    assert spread_positions(5, 9) == [0, 1, 2, 3, 4]
    assert spread_positions(7, 1) == [0]


def test_rel_p100_bound_follows_the_one_over_x_tail_not_the_sample_maximum() -> None:
    # Five replays' [p50, p100]: the p100 column's median is 2e-4, so the tail model asks >= 2e-4 / (2 * 1e-3).
    rows = [[1e-7, 1e-4], [2e-7, 2e-4], [1e-7, 3e-4], [3e-7, 2e-4], [1e-7, 5e-3]]
    assert bounds_of(rows, tail=None) == [3e-7, 5e-3]
    assert bounds_of(rows, tail=1e-3) == [3e-7, pytest.approx(0.1)]
    assert bounds_of([[0.0, 0.0]] * 3, tail=1e-3) == [0.0, 0.0]
    # Replays bit-identical to their claims (kernels the workload never calls) measure no drift: not in the median.
    assert bounds_of([*rows, *[[0.0, 0.0]] * 6], tail=1e-3) == [3e-7, pytest.approx(0.1)]


def test_replay_with_the_claims_profile_reproduces_the_claim_exactly(task: PreparedTask, claims: Path) -> None:
    start = read_evidence(evidence_path(claims, 2))
    replayed = replay_interval(task, 3, start, profile=get_profile("reference"))
    assert replayed.to_bytes() == evidence_path(claims, 3).read_bytes()


def test_a_replay_given_a_deadline_stops_there_between_two_steps(task: PreparedTask, claims: Path) -> None:
    """An auditor's replay stops at its seat's deadline (issue 45, a fourth review: a junk task's endless interval
    held the auditor's one replay worker for good); outside the deadline's context replays run as before."""
    start = read_evidence(evidence_path(claims, 2))
    first = task.spec.layout.start_step(3)
    with pytest.raises(DeadlinePassed, match=f"^the replay at step {first}: its deadline passed$"), stop_at(0.0):
        replay_interval(task, 3, start, profile=get_profile("reference"))
    replayed = replay_interval(task, 3, start, profile=get_profile("reference"))
    assert replayed.to_bytes() == evidence_path(claims, 3).read_bytes()


def test_honest_interval_passes_on_a_held_out_profile(
    task: PreparedTask, boundary: BoundaryProfile, claims: Path
) -> None:
    for k in (1, 3):  # calibration never saw these intervals, nor these profiles
        start, end = (read_evidence(evidence_path(claims, j)) for j in (k - 1, k))
        judged = replay_and_judge(task, k, start, end, boundary, profiles=HELD_OUT_PROFILES)
        assert judged.verdict.valid, (k, judged.verdict.reason, judged.verdict.margin)
        assert judged.verdict.margin is not None and judged.verdict.margin <= 0
        assert judged.replays == HELD_OUT[:1]  # a pass needs no confirmation


def test_a_rejection_stands_only_if_every_replay_rejects(
    task: PreparedTask, claims: Path, boundary: BoundaryProfile
) -> None:
    # A boundary of zeros rejects any drift at all: the held-out replay rejects the honest claim, a replay
    # on the claim's own profile reproduces it bit for bit and accepts it, so the claim is valid.
    zero = boundary.model_copy(
        update={"signals": {name: type(b)(abs=[0.0] * 5, rel=[0.0] * 5) for name, b in boundary.signals.items()}}
    )
    start, end = (read_evidence(evidence_path(claims, k)) for k in (2, 3))
    judged = replay_and_judge(task, 3, start, end, zero, profiles=[get_profile(HELD_OUT[0]), get_profile("reference")])
    assert not judged.first["all"].valid and judged.verdict.valid
    assert judged.replays == [HELD_OUT[0], "reference"] and judged.deciding["all"] == "reference"
    tampered = replace(end, model={k: v * 1.001 for k, v in end.model.items()})
    judged = replay_and_judge(
        task, 3, start, tampered, zero, profiles=[get_profile(HELD_OUT[0]), get_profile("reference")]
    )
    assert judged.verdict.reason == "out_of_bounds" and len(judged.replays) == 2


def test_a_claim_tuned_to_the_limit_is_indeterminate_within_its_band_and_faulty_beyond(
    task: PreparedTask, claims: Path, boundary: BoundaryProfile
) -> None:
    # The claim is this replay's own end with one weight moved by ``gap``: its only difference, so the weights'
    # abs p100 is exactly ``gap`` (every lower percentile 0; the probe, optimizer and statistics identical). One
    # profile only: no confirmation replay to pick another side.
    start = read_evidence(evidence_path(claims, 2))
    profile = get_profile(HELD_OUT[0])
    replayed = replay_interval(task, 3, start, profile=profile)
    bound = boundary.signals["weights"].abs[-1]
    limit = boundary.alpha * bound
    # A weight about 2,000 bounds in magnitude: its float32 spacing is a ten-thousandth of a bound (the gap lands
    # as asked, checked below), and the gap is a thousandth of it (the rel rows stay far within their limits).
    name, at = min(
        ((n, i) for n, t in replayed.model.items() for i in range(t.numel())),
        key=lambda c: abs(math.log(abs(float(replayed.model[c[0]].view(-1)[c[1]])) + 1e-30) - math.log(2000 * bound)),
    )

    def judged(gap: float) -> Verdict:
        moved = replayed.model[name].clone()
        moved.view(-1)[at] += gap
        assert abs(float(moved.view(-1)[at]) - float(replayed.model[name].view(-1)[at]) - gap) < 1e-3 * bound
        claim = replace(replayed, model={**replayed.model, name: moved})
        return replay_and_judge(task, 3, start, claim, boundary, profiles=[profile]).verdict

    # The band above the p100 limit is twice the largest honest drift of a coordinate: the p100 bound, or the
    # rounding floor where that is larger (two honest replays differ by at most that)
    inside, within = judged(limit + bound), judged(0.5 * limit)
    drift = max(bound, *(row["floor"] or 0.0 for row in inside.signals["weights"]["abs"]))
    beyond = judged(limit + 2 * drift + 0.5 * bound)
    assert within.valid and not within.indeterminate
    assert (inside.reason, inside.failing, inside.indeterminate) == ("out_of_bounds", ["weights"], True)
    assert (beyond.reason, beyond.failing, beyond.indeterminate) == ("out_of_bounds", ["weights"], False)
    assert [row["ok"] for row in inside.signals["weights"]["abs"]] == [True] * 4 + [False]
    assert all(row["ok"] for row in inside.signals["weights"]["rel"])
    # The rows' test alone: a NaN, or any value over a bound of 0, is beyond the band; one row beyond decides.
    assert (inside.signals["weights"]["abs"][-1]["decisive"], beyond.signals["weights"]["abs"][-1]["decisive"]) == (
        False,
        True,
    )
    # A relative difference divides by the claim's magnitude, which the attacker picks (review 14): a tiny
    # optimizer moment pulled toward zero fails its rel p100 row by any factor, yet every honest replay could
    # sit that close to the claim, so the row is decisive only if it fails with each coordinate's difference
    # shrunk by twice the largest honest abs drift.
    drift = boundary.signals["optim"].abs[-1]
    moments = {n: t for n, t in replayed.optim.items() if not is_step_counter(n) and t.is_floating_point()}
    name, at = min(
        ((n, i) for n, t in moments.items() for i in range(t.numel()) if 0 < float(t.view(-1)[i].abs()) < drift),
        key=lambda c: -float(moments[c[0]].view(-1)[c[1]].abs()),
    )
    rel_limit = boundary.alpha * boundary.signals["optim"].rel[-1]
    pulled = replayed.optim[name].clone()
    pulled.view(-1)[at] /= rel_limit + 2  # its rel difference: rel_limit + 1
    claim = replace(replayed, optim={**replayed.optim, name: pulled})
    tiny = replay_and_judge(task, 3, start, claim, boundary, profiles=[profile]).verdict
    assert (tiny.reason, tiny.failing, tiny.indeterminate) == ("out_of_bounds", ["optim"], True)
    assert [row["ok"] for row in tiny.signals["optim"]["rel"]] == [True] * 4 + [False]
    # A statistic's relative difference divides by the claim's value too (review 15): the claimed loss of one step
    # pulled just past the limit is within what two honest replays can differ by there; pulled much further, not.
    loss = replayed.stats["loss"].double()
    held = max(boundary.statistics["loss"], boundary.floor_ulps * 2.0**-23)
    stat_limit = max(boundary.alpha * boundary.statistics["loss"], boundary.floor_ulps * 2.0**-23)

    def stat_claim(rel: float) -> Verdict:
        pulled = loss.clone()
        pulled[0] = loss[0] / (1 + rel)  # |replay - claim| / |claim| = rel at step 0
        claim = replace(replayed, stats={**replayed.stats, "loss": pulled.to(replayed.stats["loss"].dtype)})
        return replay_and_judge(task, 3, start, claim, boundary, profiles=[profile]).verdict

    near, far = stat_claim(stat_limit + held), stat_claim(2 * stat_limit + 8 * held)
    assert (near.failing, near.indeterminate, far.failing, far.indeterminate) == (
        ["stats/loss"],
        True,
        ["stats/loss"],
        False,
    )
    # The rows' rule alone: a failing row decides unless marked indecisive; one decisive row decides.
    row = {"p": 100.0, "value": 2.0, "bound": 1.0, "limit": 1.5, "ok": False, "decisive": False}
    assert in_band({"weights": {"abs": [row]}})
    assert not in_band({"weights": {"abs": [{**row, "decisive": True}]}})
    assert not in_band({"weights": {"abs": [row], "rel": [{**row, "decisive": True}]}})
    assert not in_band({"weights": {"abs": [{k: v for k, v in row.items() if k != "decisive"}]}})
    assert not in_band({"weights": {"abs": [{**row, "value": 1.0, "ok": True}]}})  # nothing failed


def test_closest_to_limit_is_the_largest_value_over_its_limit_in_a_report() -> None:
    def row(p: float, value: float, limit: float) -> dict[str, object]:
        return {"p": p, "value": value, "bound": limit / 3, "limit": limit, "ok": value <= limit}

    report = {
        "signals": {
            "weights": {"abs": [row(50.0, 1e-9, 4e-9), row(100.0, 3e-8, 6e-8)], "rel": []},
            "probe": {"abs": [row(90.0, 2e-7, 1e-6)], "rel": [row(99.9, 0.0, 1e-4)]},
        }
    }
    ratio, where = closest_to_limit(report) or (None, "")
    assert where == "weights abs p100" and ratio == pytest.approx(0.5)
    assert closest_to_limit({"signals": {"weights": {"abs": [row(50.0, 0.0, 1e-9)]}}}) is None  # bit-identical
    assert closest_to_limit({"verdict": "faulty", "reason": "missing"}) is None  # no replay ran
    assert closest_to_limit({"signals": {"optim": {"rel": [row(100.0, 1e-9, 0.0)]}}}) == (math.inf, "optim rel p100")
    assert closest_to_limit({"signals": {"optim": {"abs": [row(99.0, math.nan, 1.0)]}}}) == (math.inf, "optim abs p99")


def test_perturbed_weights_are_out_of_bounds(task: PreparedTask, boundary: BoundaryProfile, claims: Path) -> None:
    claim = read_evidence(evidence_path(claims, 3))
    generator = torch.Generator().manual_seed(0)
    noisy = {name: t + 1e-3 * torch.randn(t.shape, generator=generator) for name, t in claim.model.items()}
    verdict = check(task, boundary, claims, 3, replace(claim, model=noisy))
    assert (verdict.verdict, verdict.reason) == ("faulty", "out_of_bounds")
    assert verdict.margin is not None and verdict.margin > 1
    assert not all(row["ok"] for row in verdict.signals["weights"]["abs"])


def test_a_nan_in_the_claim_is_out_of_bounds(task: PreparedTask, boundary: BoundaryProfile, claims: Path) -> None:
    claim = read_evidence(evidence_path(claims, 3))
    model = {**claim.model, "fc1.bias": claim.model["fc1.bias"].clone()}
    model["fc1.bias"][0] = float("nan")
    verdict = check(task, boundary, claims, 3, replace(claim, model=model))
    assert (verdict.reason, verdict.failing) == ("out_of_bounds", ["weights"])


def test_one_changed_row_is_caught_because_every_coordinate_counts(
    task: PreparedTask, boundary: BoundaryProfile, claims: Path
) -> None:
    claim = read_evidence(evidence_path(claims, 3))
    model = dict(claim.model)
    model["fc2.weight"] = model["fc2.weight"].clone()
    model["fc2.weight"][7] += 0.01  # one row of one layer: 32 of ~5,000 weights
    verdict = check(task, boundary, claims, 3, replace(claim, model=model))
    assert verdict.reason == "out_of_bounds"
    p100 = verdict.signals["weights"]["abs"][-1]
    assert p100["value"] == pytest.approx(0.01, rel=1e-3) and not p100["ok"]


@pytest.mark.parametrize(
    ("mutate", "cause"),
    [
        (lambda e: replace(e, probe={k: v for k, v in e.probe.items() if k != "fc1.bias"}), "wrong_names"),
        (lambda e: replace(e, model={**e.model, "fc1.bias": e.model["fc1.bias"][:-1]}), "wrong_shape"),
        (lambda e: replace(e, model={**e.model, "fc1.bias": e.model["fc1.bias"].double()}), "wrong_dtype"),
        (lambda e: replace(e, metadata={**e.metadata, "step": "31"}), "wrong_metadata"),
        (
            lambda e: replace(e, optim={k: (v + 1 if k.endswith("/step") else v) for k, v in e.optim.items()}),
            "wrong_counter",
        ),
    ],
)
def test_malformed_evidence_is_faulty_with_its_reason(
    task: PreparedTask, boundary: BoundaryProfile, claims: Path, mutate: object, cause: str
) -> None:
    claim = read_evidence(evidence_path(claims, 3))
    verdict = check(task, boundary, claims, 3, mutate(claim))  # type: ignore[operator]
    assert (verdict.verdict, verdict.reason, verdict.cause) == ("faulty", "wrong_structure", cause)


def test_cli_calibrate_then_verify_honest_tampered_and_missing(
    task: PreparedTask, claims: Path, tmp_path: Path
) -> None:
    boundary_file = tmp_path / "boundary.json"
    reference_file = tmp_path / "reference.json"
    made = run_ovig(
        "calibrate",
        "--spec",
        str(task.spec_path),
        "--intervals",
        "3",
        "--out",
        str(boundary_file),
        "--work",
        str(claims),
        "--reference",
        str(reference_file),
    )
    assert made.returncode == 0, made.stderr
    # The reference run for layer one: the calibration claims' statistics, named by the training hash.
    reference = Reference.from_json(reference_file.read_bytes())
    assert reference.training_hash == training_hash(task.spec).hex() and reference.steps >= 5 * task.spec.stride
    assert reference.values["loss"].tolist() == Reference.from_claims(claims, task.spec).values["loss"].tolist()
    written = BoundaryProfile.model_validate_json(boundary_file.read_text())
    assert written.profiles == DEFAULT_PROFILES and written.positions == [0, 2, 4] and written.floor_ulps == 4.0

    def verify(evidence: Path, *extra: str) -> tuple[int, dict[str, object]]:
        report = tmp_path / "report.json"
        report.unlink(missing_ok=True)
        files = ["--spec", str(task.spec_path), "--evidence", str(evidence), "--boundary", str(boundary_file)]
        result = run_ovig(
            "verify", *files, "--interval", "3", "--profile", ",".join(HELD_OUT), "--report", str(report), *extra
        )
        return result.returncode, json.loads(report.read_text())

    code, report = verify(claims)
    assert (code, report["verdict"], report["reason"]) == (0, "valid", "within_bounds")
    assert report["profile"]["name"] == HELD_OUT[0] and report["seconds"]["replay"] > 0
    assert report["replays"] == HELD_OUT[:1]

    tampered = tmp_path / "tampered"
    (tampered / "evidence").mkdir(parents=True)
    shutil.copy(evidence_path(claims, 2), evidence_path(tampered, 2))
    claim = read_evidence(evidence_path(claims, 3))
    write_evidence(evidence_path(tampered, 3), replace(claim, model={k: v * 1.001 for k, v in claim.model.items()}))
    code, report = verify(tampered)
    assert (code, report["reason"]) == (3, "out_of_bounds") and report["replays"] == HELD_OUT  # confirmed

    code, report = verify(claims, "--digest", "0" * 64)
    assert (code, report["reason"]) == (3, "corrupt")
    (tmp_path / "empty").mkdir()  # the claims' folder, without the files: the provider's fault
    code, report = verify(tmp_path / "empty")
    assert (code, report["reason"]) == (3, "missing")
    typo = run_ovig(
        "verify",
        "--spec",
        str(task.spec_path),
        "--evidence",
        str(tmp_path / "nothing"),
        "--interval",
        "3",
        "--boundary",
        str(boundary_file),
    )
    assert typo.returncode == 2 and "--evidence" in typo.stderr  # a folder that is not there: the user's

    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    bad = run_ovig(
        "verify", "--spec", str(task.spec_path), "--evidence", str(claims), "--interval", "3", "--boundary", str(broken)
    )
    assert bad.returncode == 2 and "--boundary" in bad.stderr


def test_cli_calibrates_on_several_honest_runs_of_one_workload_and_stride(task: PreparedTask, tmp_path: Path) -> None:
    other = prepare_task("vision", tmp_path / "2", tiny=True, seed=2, total_steps=30, stride=10, intervals_per_batch=3)
    out = tmp_path / "boundary.json"
    args = [
        "calibrate",
        "--spec",
        str(task.spec_path),
        "--spec",
        str(other.spec_path),
        "--intervals",
        "2",
        "--prefix",
        "--out",
        str(out),
        "--work",
        str(tmp_path / "work"),
    ]
    made = run_ovig(*args)
    assert made.returncode == 0, made.stderr
    written = BoundaryProfile.model_validate_json(out.read_text())
    assert (written.runs, written.positions, written.replays) == (2, [0, 1], 2 * 2 * len(DEFAULT_PROFILES))
    assert evidence_path(tmp_path / "work" / "run-2", 1).is_file()  # the second run's claims, kept in --work
    assert "of 2 runs" in " ".join(made.stdout.split())  # the table's title wraps where the tmp path is long
    wrong = prepare_task("vision", tmp_path / "s5", tiny=True, seed=3, total_steps=10, stride=5, intervals_per_batch=2)
    refused = run_ovig("calibrate", "--spec", str(task.spec_path), "--spec", str(wrong.spec_path), "--out", str(out))
    assert refused.returncode == 2 and "the first one's workload and stride" in refused.stderr


@pytest.mark.parametrize(
    ("attack", "params", "reason"),
    [
        ("micro_batch_drop", {"keep": 0.5}, "out_of_bounds"),
        ("data_perturbation", {}, "out_of_bounds"),
        ("lr_tamper", {"scale": 1.5}, "out_of_bounds"),
        ("low_precision", {}, "out_of_bounds"),
        ("stale_gradient", {}, "out_of_bounds"),
        ("skip_steps", {"every": 5}, "wrong_structure"),  # Adam's step counters fall short of b_k
        ("row_tamper", {"delta": 1e-4}, "out_of_bounds"),
        ("test_verify:tiny_nudge", {}, "out_of_bounds"),  # an outside attack, loaded as a plugin
    ],
)
def test_attacked_interval_is_caught_and_its_neighbours_pass(
    task: PreparedTask,
    boundary: BoundaryProfile,
    claims: Path,
    tmp_path: Path,
    attack: str,
    params: dict[str, float],
    reason: str,
) -> None:
    cheat = load_attack(attack, intervals=frozenset({3}), **params)
    run = TrainRun(
        task.spec, task.spec_hash, task.dataset_path, task.init_path, tmp_path, get_profile("reference"), attack=cheat
    )
    train(run)
    verdicts = {k: check(task, boundary, tmp_path, k, read_evidence(evidence_path(tmp_path, k))) for k in (2, 3)}
    assert verdicts[2].valid  # before the attack: honest
    assert (verdicts[3].verdict, verdicts[3].reason) == ("faulty", reason)
    assert reason != "out_of_bounds" or (verdicts[3].margin or 0) > 0


def tiny_nudge(*, intervals: frozenset[int]) -> Attack:
    return RowTamper(intervals=intervals, parameter="conv1.bias", row=0, delta=1e-5)


def test_bad_attack_names_give_clear_errors() -> None:
    with pytest.raises(AttackError, match="unknown attack 'nope'"):
        load_attack("nope", intervals=frozenset({1}))
    with pytest.raises(AttackError, match="cannot load attack 'no_such_module:x'"):
        load_attack("no_such_module:x", intervals=frozenset({1}))
    with pytest.raises(AttackError, match="rejects its parameters"):
        load_attack("lr_tamper", intervals=frozenset({1}), speed=3)


def test_large_fpr_samples_calibrate_on_few_spread_intervals_and_judge_the_rest() -> None:
    adaptive = AttackCase("boundary_aware", every_interval=True)
    settings = EvalSettings(intervals=12, intervals_by_stride={10: 210}, calibration_positions=21, adaptive_window=5)
    assert settings.positions_at(10) == list(range(0, 210, 10))
    assert len(settings.held_out_at(10)) == 189 and settings.attacked_at(10) == 208
    assert settings.attacked_at(10, frozenset({208, 207})) == 206  # honest evidence failing there: not attacked
    assert settings.faked_at(10, adaptive, 206) == [205, 206, 207, 208, 209]
    assert settings.faked_at(10, AttackCase("lr_tamper"), 206) == [206]
    assert settings.positions_at(1) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # 12 intervals: at most n - 1 calibrate
    assert settings.held_out_at(1) == [11]
    separate = EvalSettings(intervals=12, intervals_by_stride={10: 210}, calibration_seeds=(2,))
    assert separate.positions_at(10) == separate.held_out_at(10) == list(range(210))  # of two different runs
    assert separate.attacked_at(10) == 208
    assert EvalSettings(intervals=12, calibration_seeds=(2, 3), calibration_positions=4).positions_at(1) == [0, 3, 6, 9]
    late = EvalSettings(intervals=12, intervals_by_stride={100: 8}, calibration_at=(3, 6, 9))
    assert late.positions_at(1) == [3, 6, 9] and late.positions_at(100) == [3, 6]
    assert late.held_out_at(100) == [0, 1, 2, 4, 5, 7]


def test_evaluation_reports_asr_fpr_frontier_ablation_and_plots(tmp_path: Path) -> None:
    settings = EvalSettings(
        strides=(5,),
        intervals=4,
        calibration_profiles=("micro2", "micro4", "micro4-fp64acc"),
        attacks=(
            AttackCase("micro_batch_drop", {"keep": 0.5}),
            AttackCase("optimizer_tamper", {"scale": 0.0}),
            *(AttackCase("row_tamper", {"delta": d}, strength="delta") for d in (1e-9, 1e-4)),
        ),
    )
    assert (settings.positions_at(5), settings.held_out_at(5), settings.attacked_at(5)) == ([0, 2], [1, 3], 1)
    summary = summarise(settings, evaluate(settings, tmp_path / "work"))
    assert summary["asr"]["micro_batch_drop keep=0.5"] == 0.0
    assert summary["asr"]["row_tamper delta=1e-09"] == 1.0  # below float32 resolution here: invisible
    assert summary["frontier"] == {"row_tamper": {5: 1e-4}}
    assert summary["fpr"] == {5: 0.0} and len(summary["honest"][5]) == 2 and summary["honest_intervals"] == {5: 2}
    ablation = summary["ablation"][5]
    assert "optimizer_tamper scale=0" in ablation["weights+probe"]["missed"]  # only the optimizer state shows it
    assert ablation["all"]["missed"] == ["row_tamper delta=1e-09"]
    effect = summary["rows"][0]["effect"]
    assert effect["moved"] > 0 and effect["target_loss"] > 0 and 0 <= effect["backdoor_success"] <= 1
    table = markdown(summary)
    assert "| micro_batch_drop keep=0.5 | caught (out_of_bounds" in table
    assert "| row_tamper: smallest strength caught | 0.0001 |" in table
    assert "| weights+probe | FPR 0%;" in table
    assert "| honest FPR, held-out intervals and profiles | 0/2 (0.0%) |" in table
    assert "| boundary calibrated on | 2 intervals of this run |" in table
    assert summary["baseline"][5]["other_hardware"]["moved"] > 0  # the same run on micro2 ends elsewhere
    summary["baseline"][5]["other_hardware"] = None  # --no-other-hardware
    assert "| honest run on other hardware (final model) | not run |" in markdown(summary)
    plot_margins(summary, tmp_path / "m.png")
    plot_honest(summary, tmp_path / "h.png")
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "h.png").stat().st_size > 10_000


def test_a_boundary_from_separate_honest_runs_judges_every_interval_of_another(tmp_path: Path) -> None:
    settings = EvalSettings(
        strides=(5,),
        intervals=3,
        calibration_seeds=(2, 3),
        other_hardware=False,
        calibration_profiles=("micro2", "micro4", "micro4-fp64acc"),
        attacks=(AttackCase("micro_batch_drop", {"keep": 0.5}),),
    )
    messages: list[str] = []
    summary = summarise(settings, evaluate(settings, tmp_path / "work", log=lambda m, unit=False: messages.append(m)))
    assert [h["interval"] for h in summary["honest"][5]] == [0, 1, 2]  # calibration replayed none of them
    assert summary["fpr"] == {5: 0.0} and summary["asr"] == {"micro_batch_drop keep=0.5": 0.0}
    boundary = summary["boundaries"][5]
    assert (boundary["positions"], boundary["runs"], boundary["replays"]) == ([0, 1, 2], 2, 18)  # 2 runs x 3 x 3
    assert sum("calibrating, interval" in m for m in messages) == 18
    assert "| boundary calibrated on | 3 intervals of each of 2 separate runs (seeds 2, 3) |" in markdown(summary)
    summary["settings"]["layout"][5] = {"positions": [0, 1, 2], "calibration_seed": 2}  # results of older versions
    assert "| boundary calibrated on | 3 intervals of a separate run (seed 2) |" in markdown(summary)
    assert not (tmp_path / "work" / "s5").exists()  # every run's evidence deleted


class Cut(Exception):
    """Stands for a kill: raised from the progress callback at a chosen point of an evaluation."""


def test_an_evaluation_cut_short_resumes_where_it_stopped_with_any_number_of_jobs(tmp_path: Path) -> None:
    attacks = (
        AttackCase("micro_batch_drop", {"keep": 0.5}),
        AttackCase("lr_tamper", {"scale": 1.1}),
        AttackCase("optimizer_tamper", {"scale": 0.0}),
    )
    settings = EvalSettings(
        strides=(5,),
        intervals=3,
        calibration_seeds=(2,),
        other_hardware=False,
        calibration_profiles=("micro2",),
        attacks=attacks,
    )
    work = tmp_path / "work"

    def cut_at_the_second_attack(message: str, *, unit: bool = False) -> None:
        if message.startswith("s=5: attack lr_tamper"):
            raise Cut

    with pytest.raises(Cut):
        evaluate(settings, work, log=cut_at_the_second_attack)
    first = work / "s5" / "claims" / "evidence" / "E_000000.safetensors"
    trained_at = first.stat().st_mtime_ns
    kept = [json.loads(line) for line in (work / "s5" / "attacks.jsonl").read_text().splitlines()]
    assert [entry["key"] for entry in kept] == [0]  # the first attack's result was kept
    # What a kill in the middle of the second attack leaves: its folder, holding the honest prefix it links.
    leftover = evidence_path(work / "s5" / "attacks" / "01-lr_tamper", 0)
    leftover.parent.mkdir(parents=True)
    leftover.hardlink_to(first)
    in_workers = tmp_path / "in-workers"
    shutil.copytree(work, in_workers)

    messages: list[str] = []

    def record(message: str, *, unit: bool = False) -> None:
        if message.startswith("s=5: calibrating on"):  # the claims are behind: not trained again
            assert first.stat().st_mtime_ns == trained_at
        messages.append(message)

    (resumed,) = evaluate(settings, work, log=record)
    assert "s=5: calibrating on 3 intervals" in messages
    assert not [m for m in messages if "calibrating, interval" in m or "honest interval" in m]
    assert "s=5: attack 0 done before (resumed)" in messages and "s=5: attack lr_tamper scale=1.1" in messages
    assert resumed.attacks[0] == kept[0]["result"] and len(resumed.attacks) == 3
    assert not (work / "s5").exists() and (work / "s5.json").is_file()

    again: list[str] = []
    assert evaluate(settings, work, log=lambda m, unit=False: again.append(m)) == [resumed]
    assert again == ["s=5: done before (resumed)"] * 6  # claims, calibration, honest, three attacks
    with pytest.raises(OtherEvaluation, match="holds an evaluation with other settings"):
        evaluate(replace(settings, alpha=2.0), work)

    # The same two attacks left, each done by one of two worker processes: the same results, to the bit.
    units: list[str] = []
    assert evaluate(settings, in_workers, log=lambda m, unit=False: units.append(m) if unit else None, jobs=2) == [
        resumed
    ]
    assert sorted(m for m in units if m.endswith("(worker)")) == [
        "s=5: attack lr_tamper scale=1.1 (worker)",
        "s=5: attack optimizer_tamper scale=0 (worker)",
    ]


def test_a_piece_failing_in_a_worker_stops_the_evaluation_and_is_not_kept(tmp_path: Path) -> None:
    attacks = (
        AttackCase("hostile_attack:wait_policy"),
        AttackCase("micro_batch_drop", {"keep": 0.5}),
        AttackCase("lr_tamper", {"scale": 1.1}),
    )
    settings = EvalSettings(
        strides=(5,),
        intervals=3,
        calibration_seeds=(2,),
        other_hardware=False,
        calibration_profiles=("micro2",),
        attacks=attacks,
    )
    policy = os.environ.get("OMP_WAIT_POLICY")
    # The workers' threads sleep when they wait (two workers' threads share the cores), unless the user said.
    reported = f"attacks 0 failed in a worker: RuntimeError: OMP_WAIT_POLICY={policy or 'PASSIVE'}$"
    with pytest.raises(PieceFailed, match=reported):
        evaluate(settings, tmp_path, jobs=2)
    assert os.environ.get("OMP_WAIT_POLICY") == policy  # this process's own environment is as it was
    assert len(_read_kept(tmp_path / "s5" / "honest.jsonl")) == 3  # the honest verdicts, by two workers too
    # The attack running beside the failing one was waited for and kept; none started after the failure.
    assert set(_read_kept(tmp_path / "s5" / "attacks.jsonl")) == {1}
    assert not multiprocessing.active_children()


def test_a_record_cut_mid_line_by_a_kill_is_dropped_and_the_file_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "honest.jsonl"
    path.write_text('{"key": 3, "result": {"interval": 3, "valid": true}}\n{"key": 5, "resu')
    assert _read_kept(path) == {3: {"interval": 3, "valid": True}}
    assert path.read_text() == '{"key": 3, "result": {"interval": 3, "valid": true}}\n'


def test_calibration_runs_must_share_the_workload_and_stride(tmp_path: Path) -> None:
    first = prepare_task("vision", tmp_path / "a", tiny=True, total_steps=10, stride=5, intervals_per_batch=2)
    other = prepare_task("vision", tmp_path / "b", tiny=True, seed=2, total_steps=12, stride=6, intervals_per_batch=2)
    with pytest.raises(ValueError, match="the first one's workload and stride"):
        calibrate(
            first,
            claim_profile=get_profile("reference"),
            replay_profiles=[get_profile("micro2")],
            positions=[0],
            alpha=3.0,
            work_dir=tmp_path / "ca",
            more_runs=[(other, tmp_path / "cb")],
        )
    assert not (tmp_path / "ca").exists()  # refused before any training


def test_an_evaluation_can_change_the_warm_up_of_both_runs(tmp_path: Path) -> None:
    settings = EvalSettings(strides=(5,), intervals=3, calibration_seeds=(2,), warmup_steps=7)
    stride = _Stride(settings, 5, tmp_path, None)
    ((calibration, _),) = stride._calibration_runs()
    assert [task.spec.optimizer.schedule.warmup_steps for task in (stride.prepared, calibration)] == [7, 7]
    assert stride.prepared.spec.seed == 1 and calibration.spec.seed == 2


def test_data_perturbation_shifts_model_inputs_and_nothing_else() -> None:
    attack = load_attack("data_perturbation", intervals=frozenset({0}))
    batch = {"label": torch.tensor([1, 2]), "image": torch.arange(8).view(2, 1, 1, 4), "noise": torch.ones(2, 4)}
    out = attack.batch(0, batch)
    assert torch.equal(out["label"], batch["label"]) and torch.equal(out["noise"], batch["noise"])
    assert out["image"][0, 0, 0].tolist() == [3, 0, 1, 2]
    with pytest.raises(AttackError, match="no input tensor"):
        attack.batch(0, {"label": torch.tensor([1])})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--intervals", "10:x"], "'10,x' is not a comma-separated list of integers"),
        (["--intervals", "10:1"], "'10:1': give stride:N with N >= 2"),
        (["--strides", "0,10"], "'0,10': give positive integers"),
        (["--attacks", "lr_tamper,nope"], "unknown attacks ['nope']"),
        (["--calibration-seed", "1"], "1 is not in the range x>=2"),
        (["--calibration-positions", "0"], "0 is not in the range x>=1"),
        (["--config", "pool"], "'pool': give KEY=VALUE"),
        (
            ["--intervals", "6", "--calibrate-on", "2,6"],
            "give intervals below 6, leaving at least two of them held out",
        ),
        (["--calibrate-on", "-1,2"], "'-1,2': give integers >= 0"),
        (["--warmup-steps", "-1"], "-1 is not in the range x>=0"),
        (["--claim-profile", "fsdp2", "--calibration-seed", "2"], "add --attacks none"),
    ],
)
def test_eval_options_are_checked_before_any_work(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["eval", *args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "out").exists()
