"""Exact mode (training.exact, verify.exact): bit-identical replays across profiles, and every way a
provider can misuse the rounding log judged faulty. Real tiny-vision training throughout."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from ovig_node.nodes.fetching import TaskRefused
from ovig_node.nodes.fetching import _read_spec as read_task_spec
from ovig_node.protocol.errors import SpecError
from ovig_node.protocol.spec import canonical_bytes, parse_spec
from ovig_node.training.evidence import Evidence, read_evidence
from ovig_node.training.exact import (
    FORWARD,
    GRADIENT,
    UPDATE,
    ExactNumerics,
    LogError,
    decode_log,
    encode_log,
    floor_edge,
    grid_discrepancy,
    midpoint_offsets,
)
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.taskfiles import PreparedTask, attach_numerics, prepare_task
from ovig_node.verify.check import Verdict
from ovig_node.verify.evaluate import AttackCase, EvalSettings, evaluate
from ovig_node.verify.exact import calibrate_numerics, numerics_problem
from ovig_node.verify.replay import replay_interval
from ovig_node.verify.report import replay_and_judge
from support import EXACT_NUMERICS as NUMERICS
from support import EXACT_THRESHOLD as THRESHOLD
from support import run_ovig

# Every one-process kind of drift: threads, uneven micro-batches with float64 sums, other kernels.
PROFILES = ["reference", "threads2", "micro3", "micro4-fp64acc", "native-conv", "fused-optimizer"]
K = 2  # the interval the tampering tests judge


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    folder = tmp_path_factory.mktemp("exact-task")
    prepared = prepare_task("vision", folder, tiny=True, total_steps=20, stride=5, intervals_per_batch=4)
    return attach_numerics(prepared.spec_path, NUMERICS)


@pytest.fixture(scope="module")
def claims(task: PreparedTask, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("exact-claims")
    train(TrainRun(task.spec, task.spec_hash, task.dataset_path, task.init_path, out, get_profile("reference")))
    return out


def judge(task: PreparedTask, claims: Path, end: Evidence, profiles: list[str] = ["micro3"]) -> Verdict:  # noqa: B006
    start = read_evidence(evidence_path(claims, K - 1))
    return replay_and_judge(task, K, start, end, None, profiles=[get_profile(p) for p in profiles]).verdict


def claimed_log(claims: Path, k: int = K) -> torch.Tensor:
    return decode_log(read_evidence(evidence_path(claims, k)).rounding, NUMERICS["max_log_entries"])


def with_log(claims: Path, log: torch.Tensor) -> Evidence:
    end = read_evidence(evidence_path(claims, K))
    return Evidence(end.model, end.optim, end.probe, end.metadata, end.stats, rounding=encode_log(log))


def test_the_evidence_is_float32_with_a_sorted_log(task: PreparedTask, claims: Path) -> None:
    end = read_evidence(evidence_path(claims, K))
    assert {t.dtype for section in ("model", "optim", "probe") for t in getattr(end, section).values()} == {
        torch.float32
    }
    assert sorted(end.rounding) == ["counts", "keys", "positions", "up"]
    log = claimed_log(claims)
    assert log.dtype == torch.int64 and log.shape[1] == 7 and len(log) > 0
    assert end.rounding["up"].dtype == torch.uint8 and len(end.rounding["up"]) == (len(log) + 7) // 8
    assert torch.equal(decode_log(encode_log(log), len(log)), log)
    assert torch.equal(torch.unique(log, dim=0), log)  # sorted and unique
    steps = set(log[:, 0].tolist())
    assert steps <= set(range(K * 5, K * 5 + 6))  # the interval's steps and the probe's step b_k
    assert K * 5 + 5 in steps


@pytest.mark.parametrize("k", [0, K])
def test_replays_under_six_profiles_reproduce_the_claim_byte_for_byte(task: PreparedTask, claims: Path, k: int) -> None:
    claimed = evidence_path(claims, k).read_bytes()
    start = read_evidence(evidence_path(claims, k - 1)) if k else None
    log = claimed_log(claims, k)
    for name in PROFILES:
        faults: list[str] = []
        replayed = replay_interval(task, k, start, profile=get_profile(name), claimed_log=log, faults=faults)
        assert faults == [], name
        assert replayed.to_bytes() == claimed, name


def test_an_honest_interval_is_valid_reproduced(task: PreparedTask, claims: Path) -> None:
    verdict = judge(task, claims, read_evidence(evidence_path(claims, K)), ["threads2"])
    assert (verdict.verdict, verdict.reason, verdict.margin) == ("valid", "reproduced", None)


def test_without_its_log_a_replay_finds_the_skipped_entries(task: PreparedTask, claims: Path) -> None:
    verdict = judge(task, claims, with_log(claims, torch.empty((0, 7), dtype=torch.int64)))
    assert (verdict.verdict, verdict.cause) == ("faulty", "skipped_entry")


def test_a_skipped_log_entry_is_faulty(task: PreparedTask, claims: Path) -> None:
    log = claimed_log(claims)
    forward = log[log[:, 1] == FORWARD]
    key = forward[0, :5]
    kept = log[~(log[:, :5] == key).all(1)]  # every entry of one forward site left out
    verdict = judge(task, claims, with_log(claims, kept))
    assert (verdict.verdict, verdict.reason, verdict.cause) == ("faulty", "out_of_bounds", "skipped_entry")


def test_a_tampered_direction_is_faulty(task: PreparedTask, claims: Path) -> None:
    log = claimed_log(claims).clone()
    last_update = torch.nonzero((log[:, 0] == K * 5 + 4) & (log[:, 1] == UPDATE)).flatten()
    log[last_update[0], 6] ^= 1  # a weight of the last step rounded the other way
    verdict = judge(task, claims, with_log(claims, log))
    assert (verdict.verdict, verdict.cause) == ("faulty", "not_reproduced")


def test_an_entry_away_from_a_midpoint_is_faulty(task: PreparedTask, claims: Path) -> None:
    log = claimed_log(claims).clone()
    rows = {tuple(r) for r in log.tolist()}
    for i in range(len(log)):
        moved = log[i].clone()
        moved[5] += 1
        if tuple(moved.tolist()) not in rows and (tuple([*moved[:6].tolist(), 1 - int(moved[6])]) not in rows):
            log[i] = moved
            break
    verdict = judge(task, claims, with_log(claims, torch.unique(log, dim=0)))
    assert (verdict.verdict, verdict.cause) == ("faulty", "far_entry")


def test_an_entry_no_rounding_reaches_is_faulty(task: PreparedTask, claims: Path) -> None:
    extra = torch.tensor([[K * 5 + 3, UPDATE, 999, 0, 0, 0, 1]])  # no parameter 999
    verdict = judge(task, claims, with_log(claims, torch.unique(torch.cat([claimed_log(claims), extra]), dim=0)))
    assert (verdict.verdict, verdict.cause) == ("faulty", "unused_entry")


def test_a_log_out_of_order_is_a_structural_fault_before_any_replay(task: PreparedTask, claims: Path) -> None:
    end = read_evidence(evidence_path(claims, K))
    keys = end.rounding["keys"]
    shuffled = {**end.rounding, "keys": keys.flip(0), "counts": end.rounding["counts"].flip(0)}
    for rounding in (shuffled, {**end.rounding, "up": end.rounding["up"][:-1]}, {**end.rounding, "keys": keys.int()}):
        hostile = Evidence(end.model, end.optim, end.probe, end.metadata, end.stats, rounding=rounding)
        verdict = judge(task, claims, hostile)
        assert (verdict.verdict, verdict.reason, verdict.cause) == ("faulty", "wrong_structure", "bad_log")
    with pytest.raises(LogError, match="more than the spec's 10"):
        decode_log(end.rounding, 10)


def test_hostile_log_encodings_are_refused_without_crashing(claims: Path) -> None:
    end = read_evidence(evidence_path(claims, K)).rounding
    n = len(end["positions"])
    big = 2**62  # four such counts wrap an int64 sum back to a small number
    hostile = {
        "keys": end["keys"][:1].repeat(4, 1),
        "counts": torch.tensor([big, big, big, big + 2]),
        "positions": torch.tensor([1, 2]),
        "up": torch.tensor([0], dtype=torch.uint8),
    }
    with pytest.raises(LogError, match="do not add up"):
        decode_log(hostile, 10**6)
    log = claimed_log(claims)
    both_ways = torch.cat([log[:1], log[:1]])
    both_ways[1, 6] = 1 - both_ways[0, 6]  # one position rounded both ways
    with pytest.raises(LogError, match="name a position twice"):
        decode_log(encode_log(torch.cat([both_ways, log[1:]])), 10**6)
    wrapped = log[:2].clone()
    wrapped[0, 5], wrapped[1, 5] = 2**63 - 1, -(2**63)  # "sorted" only if compared by subtraction
    wrapped[1, :5] = wrapped[0, :5]
    with pytest.raises(LogError):
        decode_log(encode_log(wrapped), 10**6)
    no_keys = {"keys": end["keys"][:0], "counts": end["counts"][:0], "positions": end["positions"], "up": end["up"]}
    with pytest.raises(LogError, match="do not add up"):  # entries under no key: once a crash, no verdict
        decode_log(no_keys, 10**6)
    stray = {**end, "up": end["up"].clone()}
    stray["up"][-1] |= 0x80 if n % 8 else 0  # a padding bit set (when the last byte has padding)
    if n % 8:
        with pytest.raises(LogError, match="canonical"):
            decode_log(stray, 10**6)


# What a verifier does with a claimed log (decode, index, and re-encode it in the replay's E_k), in a fresh process
# whose peak resident size restarts once the file is loaded (Linux: /proc/self/clear_refs), its allocator
# returning what is freed (a small mmap threshold), so a peak is not hidden in memory an earlier step left
MEASURE_DECODE = """
import sys, torch
from ovig_node.training.exact import ExactNumerics, decode_log, encode_log

def status(field):
    return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith(field))

encoded = torch.load(sys.argv[1])
open("/proc/self/clear_refs", "w").write("5")
before = status("VmRSS:")
numerics = ExactNumerics(torch.nn.Linear(1, 1).double(), (1e-6,) * 4, decode_log(encoded, len(encoded["positions"])))
encode_log(numerics.take_log())
print(status("VmHWM:") - before)
"""


def test_a_hostile_log_costs_a_verifier_a_bounded_memory_an_entry(tmp_path: Path) -> None:
    """A provider may fill its log to the spec's cap, one site an entry (its worst shape): a verifier decodes,
    indexes and re-encodes it in at most 200 bytes an entry (the node's cap, verify.exact.MAX_LOG_ENTRIES,
    counts on it; before the canonical form was checked on the encoding itself, about 400)."""
    n = 1 << 20
    i = torch.arange(n, dtype=torch.int64)
    rows = torch.zeros((n, 7), dtype=torch.int64)
    rows[:, 0], rows[:, 2], rows[:, 3], rows[:, 4], rows[:, 6] = 5, i >> 20, (i >> 8) % 4096, i % 256, i % 2
    torch.save(encode_log(rows), tmp_path / "log.pt")
    assert len(decode_log(torch.load(tmp_path / "log.pt"), n)) == n and len(encode_log(rows)["keys"]) == n
    measured = subprocess.run(
        [sys.executable, "-c", MEASURE_DECODE, str(tmp_path / "log.pt")],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"},
    )
    assert 56 * n <= int(measured.stdout) <= 200 * n  # at least the decoded rows themselves


def test_a_logged_direction_away_from_the_nearest_neighbour_is_steering(task: PreparedTask, claims: Path) -> None:
    # A value logged within the threshold but clearly on one side of its midpoint: the log may not round it the
    # other way. Such an entry exists when the trainer logged a value not at an exact tie; make one by
    # flipping every entry of the interval's last optimizer step: at least one is not an exact tie.
    log = claimed_log(claims).clone()
    last = (log[:, 0] == K * 5 + 4) & (log[:, 1] == UPDATE)
    log[last, 6] ^= 1
    verdict = judge(task, claims, with_log(claims, log))
    assert verdict.verdict == "faulty" and verdict.cause in {"steered_entry", "not_reproduced"}
    no_log = read_evidence(evidence_path(claims, K))
    verdict = judge(task, claims, Evidence(no_log.model, no_log.optim, no_log.probe, no_log.metadata, no_log.stats))
    assert (verdict.reason, verdict.cause) == ("wrong_structure", "wrong_names")


@pytest.mark.parametrize(("name", "params"), [("row_tamper", {"delta": 1e-7}), ("low_precision", {})])
def test_a_tiny_tamper_and_float32_compute_are_caught(
    task: PreparedTask, claims: Path, tmp_path: Path, name: str, params: dict[str, float]
) -> None:
    from ovig_node.attacks.base import load_attack
    from ovig_node.verify.evaluate import claim_run, fake

    attack = load_attack(name, intervals=frozenset({K}), **params)
    fake(task, claims, tmp_path, attack, last=K, honest_prefix=K)
    end = read_evidence(evidence_path(tmp_path, K))
    assert claim_run(task, tmp_path).spec.exact
    verdict = judge(task, claims, end, ["micro3", "threads2"])
    # the attacked trajectory rounds other values near midpoints than the honest replay does: its log is wrong
    # for the replay (or, were it right, the weights would differ)
    assert (verdict.verdict, verdict.reason) == ("faulty", "out_of_bounds")
    assert verdict.cause in {"far_entry", "skipped_entry", "unused_entry", "not_reproduced"}


def test_statistics_agree_to_one_ulp_and_no_further(task: PreparedTask, claims: Path) -> None:
    """The statistics sum float64 values in a profile's own order and round once, so a replay may round
    one a float32 ulp apart; two ulps is a lie."""
    end = read_evidence(evidence_path(claims, K))
    loss = end.stats["loss"]
    one_up = torch.nextafter(loss, torch.full_like(loss, math.inf))
    two_up = torch.nextafter(one_up, torch.full_like(loss, math.inf))
    verdict = judge(task, claims, replace(end, stats={**end.stats, "loss": one_up}))
    assert (verdict.verdict, verdict.reason) == ("valid", "reproduced")
    verdict = judge(task, claims, replace(end, stats={**end.stats, "loss": two_up}))
    assert (verdict.verdict, verdict.cause) == ("faulty", "not_reproduced")
    assert verdict.detail == f"stats/loss: {len(loss)} steps more than one ulp from the replay's"


def test_a_killed_exact_run_resumes_bit_identically(task: PreparedTask, claims: Path, tmp_path: Path) -> None:
    run = TrainRun(task.spec, task.spec_hash, task.dataset_path, task.init_path, tmp_path, get_profile("reference"))
    train(run, stop_at=12)  # mid-interval 2
    resumed = train(run)
    assert resumed.resumed_intervals == 2
    for k in range(task.spec.layout.intervals):
        assert evidence_path(tmp_path, k).read_bytes() == evidence_path(claims, k).read_bytes()


def test_the_spec_section_is_validated(task: PreparedTask) -> None:
    document = json.loads(task.spec_path.read_text())
    for numerics, message in [
        ({**NUMERICS, "threshold": {**THRESHOLD, "gradient": "0.1"}}, r"between 0 and 0\.1 ulps"),
        # below 0.1 as a decimal, 0.1 as the float training uses: ExactNumerics would refuse it mid-task
        ({**NUMERICS, "threshold": {**THRESHOLD, "gradient": "0.09999999999999999999"}}, r"between 0 and 0\.1"),
        ({**NUMERICS, "threshold": {**THRESHOLD, "gradient": "1e-400"}}, r"between 0 and 0\.1 ulps"),
        ({**NUMERICS, "threshold": {"forward": "1e-6"}}, "needs forward, backward, gradient and update"),
        ({**NUMERICS, "compute": "float128"}, "compute"),
        ({**NUMERICS, "extra": 1}, "extra"),
        ({key: v for key, v in NUMERICS.items() if key != "max_log_entries"}, "max_log_entries"),
    ]:
        with pytest.raises(SpecError, match=message):
            parse_spec(canonical_bytes({**document, "numerics": numerics}))
    with pytest.raises(SpecError, match="dtype must be float32"):
        parse_spec(canonical_bytes({**document, "dtype": "float64"}))
    with pytest.raises(SpecError, match="batch_size >= 3"):
        parse_spec(canonical_bytes({**document, "batch_size": 2}))
    # the log's step field: the last probe's step is N itself
    long = {"total_steps": 2**24, "stride": 2**20, "intervals_per_batch": 16}
    with pytest.raises(SpecError, match="an exact task has fewer than 16777216 steps"):
        parse_spec(canonical_bytes({**document, **long}))
    assert parse_spec(canonical_bytes({**document, **long, "total_steps": 2**24 - 1}))[0].total_steps == 2**24 - 1


def test_numerics_rejects_a_threshold_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"between 0 and 0\.1 ulps"):
        ExactNumerics(torch.nn.Linear(2, 2), (1e-6, 1e-6, 0.5, 1e-6))
    with pytest.raises(ValueError, match="running statistics"):
        ExactNumerics(torch.nn.BatchNorm1d(2).double(), (1e-6,) * 4)


def test_below_the_floor_a_gradient_rounds_on_the_grid_of_the_float32_ulp_at_its_edge() -> None:
    # the step's largest is 1 = 2^0, so a floor of 10 puts the edge at 2^-10 and its grid at 2^-33
    edge = floor_edge(1.0, 10)
    assert edge == -10 and floor_edge(1.0, 200) is None  # below float32's normal range: float32's own grid
    x = torch.tensor(
        [1.0, 3 * 2.0**-34, 2.0**-12 + 2.0**-40, 0.75 + 2.0**-30, math.nan, -(2.0**-40)], dtype=torch.float64
    )
    offsets = midpoint_offsets(x, edge)
    assert offsets[1:4].tolist() == [0.0, 2.0**-7 - 0.5, 2.0**-6 - 0.5] and math.isnan(offsets[4])
    # without the floor, 2^-12 + 2^-40 is a float32 ulp of 2^-35 from 2^-12: another distance
    assert midpoint_offsets(x, None)[2] == 2.0**-5 - 0.5
    numerics = ExactNumerics(torch.nn.Linear(1, 1).double(), (1e-6,) * 4, gradient_floor=10)
    rounded = numerics._round(x, (0, GRADIENT, 0, 0, 0), 0, edge)
    # the tie 1.5 grid units goes to the even one; every result is a float32 value; noise below half a
    # grid unit is +0, whatever its sign
    assert rounded[[0, 1, 2, 3, 5]].tolist() == [1.0, 2.0**-32, 2.0**-12, 0.75, 0.0]
    assert torch.equal(rounded[:4].to(torch.float32).to(torch.float64), rounded[:4])
    assert not torch.signbit(rounded[5])
    assert [tuple(row[:2]) for row in numerics._recorded[0].tolist()] == [(0, GRADIENT)]  # the tie, logged
    # a discrepancy of 2^-45 at 2^-12 is 2^-10 of its float32 ulp, 2^-12 of the floor's grid unit
    y = x.clone()
    y[2] += 2.0**-45
    assert grid_discrepancy(x, y, [None, edge]) == [2.0**-10, 2.0**-12]


def test_the_floors_edge_is_the_steps_so_a_gradient_of_pure_noise_rounds_to_zero() -> None:
    # a bias whose gradient is zero in exact arithmetic holds rounding noise (an attention key's bias):
    # its own largest value is noise too, so the edge comes from the step's largest gradient
    layer = torch.nn.Linear(2, 1).double()
    numerics = ExactNumerics(layer, (1e-6,) * 4, gradient_floor=10)
    layer.weight.grad = torch.tensor([[0.5, -0.25]], dtype=torch.float64)
    layer.bias.grad = torch.tensor([-3e-32], dtype=torch.float64)
    numerics.round_gradients()
    assert layer.weight.grad.tolist() == [[0.5, -0.25]]
    assert layer.bias.grad.tolist() == [0.0] and not torch.signbit(layer.bias.grad[0])


def test_calibration_writes_a_power_of_ten_threshold(tmp_path: Path) -> None:
    prepared = prepare_task("vision", tmp_path, tiny=True, total_steps=10, stride=5, intervals_per_batch=2)
    numerics, discrepancies = calibrate_numerics(prepared, [get_profile("micro3"), get_profile("threads2")], steps=1)
    assert [d.profile for d in discrepancies] == ["micro3", "threads2"]
    assert all(d.positions > 0 and d.faults == 0 for d in discrepancies)
    assert numerics["mode"] == "exact" and sorted(numerics["threshold"]) == sorted(THRESHOLD)
    assert all(t[0] in "125" and t[1:3] == "e-" for t in numerics["threshold"].values())
    assert numerics["max_log_entries"] >= 1024
    assert attach_numerics(prepared.spec_path, numerics).spec.exact


def test_cli_exact_spec_train_and_verify_without_a_boundary(tmp_path: Path) -> None:
    spec = tmp_path / "task" / "spec.json"
    made = run_ovig(
        "spec",
        "new",
        "--workload",
        "vision",
        "--tiny",
        "--out",
        str(spec.parent),
        "--steps",
        "10",
        "--stride",
        "5",
        "--intervals-per-batch",
        "2",
        "--exact",
    )
    assert made.returncode == 0, made.stderr
    numerics = parse_spec(spec.read_bytes())[0].numerics
    assert numerics is not None
    assert numerics.gradient_floor is not None  # its value is measured: it depends on the CPU's rounding
    assert f"gradient floor: 2^-{numerics.gradient_floor} of the step's largest gradient" in made.stdout
    assert run_ovig("train", "--spec", str(spec), "--out", str(tmp_path / "run")).returncode == 0
    result = run_ovig(
        "verify",
        "--spec",
        str(spec),
        "--evidence",
        str(tmp_path / "run"),
        "--interval",
        "1",
        "--profile",
        "micro3",
        "--report",
        str(tmp_path / "report.json"),
    )
    assert result.returncode == 0 and "valid (reproduced)" in result.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["verdict"], report["replays"]) == ("valid", ["micro3"])


def test_cli_calibrate_refuses_an_exact_spec(task: PreparedTask, tmp_path: Path) -> None:
    result = run_ovig("calibrate", "--spec", str(task.spec_path), "--out", str(tmp_path / "boundary.json"))
    assert result.returncode == 2 and "exact-mode spec has no boundary" in result.stderr
    assert not (tmp_path / "boundary.json").exists()


def test_cli_verify_of_a_boundary_mode_spec_needs_its_boundary(tmp_path: Path) -> None:
    prepared = prepare_task("vision", tmp_path, tiny=True, total_steps=10, stride=5, intervals_per_batch=2)
    result = run_ovig("verify", "--spec", str(prepared.spec_path), "--evidence", str(tmp_path), "--interval", "0")
    assert result.returncode == 2 and "judged against its boundary" in result.stderr


def test_eval_exact_catches_the_boundary_aware_attacker(tmp_path: Path) -> None:
    attacks = (
        AttackCase("micro_batch_drop", {"keep": 0.5}),
        AttackCase(
            "boundary_aware", {"boundary": "{boundary}", "budget": 0.9, "objective": "backdoor"}, every_interval=True
        ),
    )
    settings = EvalSettings(
        strides=(5,),
        intervals=6,
        calibration_positions=2,
        attacks=attacks,
        calibration_profiles=("micro2", "fused-optimizer"),
        held_out_profiles=("threads2", "micro3"),
        other_hardware=False,
        adaptive_window=3,
        exact=True,
    )
    [result] = evaluate(settings, tmp_path / "work")
    assert [h["valid"] for h in result.honest] == [True] * len(result.honest) and len(result.honest) == 4
    assert all(h["reason"] == "reproduced" for h in result.honest)
    for attack in result.attacks:
        assert attack["verdicts"], attack["label"]
        assert not attack["identical"], attack["label"]
        assert [v["valid"] for v in attack["verdicts"]] == [False] * len(attack["verdicts"]), attack["label"]
    assert result.boundary["alpha"] == 3.0  # the twin's boundary the attacker aimed at
    shutil.rmtree(tmp_path / "work", ignore_errors=True)


def test_a_ddp2_provider_in_exact_mode_is_reproduced_by_one_process_replays(task: PreparedTask, tmp_path: Path) -> None:
    # two gloo ranks, each rounding and logging its half of every batch at the batch's positions
    run = TrainRun(task.spec, task.spec_hash, task.dataset_path, task.init_path, tmp_path, get_profile("ddp2"))
    train(run)
    for k in (0, K):
        claimed = evidence_path(tmp_path, k).read_bytes()
        start = read_evidence(evidence_path(tmp_path, k - 1)) if k else None
        for name in ("reference", "micro3"):
            faults: list[str] = []
            log = claimed_log(tmp_path, k)
            replayed = replay_interval(task, k, start, profile=get_profile(name), claimed_log=log, faults=faults)
            assert faults == [] and replayed.to_bytes() == claimed, (k, name)


def test_a_sharded_provider_cannot_train_in_exact_mode(task: PreparedTask, tmp_path: Path) -> None:
    from ovig_node.training.distributed import RankFailed

    run = TrainRun(task.spec, task.spec_hash, task.dataset_path, task.init_path, tmp_path, get_profile("fsdp2"))
    with pytest.raises(RankFailed, match="not FSDP's shards"):
        train(run)


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"gradient_floor": None}, "its exact numerics have no gradient floor (every calibrated spec has one)"),
        (
            {"threshold": {**THRESHOLD, "update": "1e-8"}},
            "an exact threshold below 1e-07 ulps, finer than the discrepancy between profiles can be measured",
        ),
        (
            {"max_log_entries": 2**24 + 1},
            "its rounding log may hold 16777217 entries an interval, over this node's 16777216",
        ),
    ],
)
def test_nodes_refuse_exact_numerics_no_calibration_makes(
    tmp_path: Path, change: dict[str, object], refusal: str
) -> None:
    """An owner's numerics under which other hardware cannot reproduce an honest claim (no floor, a threshold
    finer than any discrepancy measured), or a log cap that lets a provider exhaust a verifier's memory, are
    valid specs that every node refuses to work on."""
    prepared = prepare_task("vision", tmp_path, tiny=True, total_steps=20, stride=5, intervals_per_batch=4)
    numerics = {key: value for key, value in {**NUMERICS, **change}.items() if value is not None}
    hostile = attach_numerics(prepared.spec_path, numerics)
    with pytest.raises(TaskRefused) as refused:
        read_task_spec(7, hostile.spec_path)
    assert str(refused.value) == f"task 7: {refusal}"


def test_a_provider_refuses_numerics_finer_than_the_discrepancy_it_measures(tmp_path: Path) -> None:
    """The owner chooses the thresholds and the floor, and a provider whose honest replays elsewhere could
    round another way would be slashed for it: before it accepts, a trainer measures the discrepancy on its
    own machine and refuses a spec too fine for it. Tiny language, whose attention biases' gradients are
    rounding noise: a floor of 100 (one far below its gradients) is no floor at all there, the reviewer's
    spec that passed every node's checks."""
    prepared = prepare_task("language", tmp_path, tiny=True, total_steps=20, stride=5, intervals_per_batch=4)
    micro3 = [get_profile("micro3")]
    numerics, _ = calibrate_numerics(prepared, micro3, steps=1)
    assert numerics_problem(attach_numerics(prepared.spec_path, numerics), micro3, steps=1) is None
    read_task_spec(7, attach_numerics(prepared.spec_path, {**numerics, "gradient_floor": 100}).spec_path)  # valid
    problem = numerics_problem(
        attach_numerics(prepared.spec_path, {**numerics, "gradient_floor": 100}), micro3, steps=1
    )
    assert problem is not None
    assert problem.startswith(
        f"its gradient threshold ({float(numerics['threshold']['gradient']):g} ulps) is under "
        "8 times the discrepancy measured here at gradient floor 100"
    )


def test_the_log_steering_attacker_passes_with_a_claim_that_is_not_the_honest_one(
    task: PreparedTask, claims: Path, tmp_path: Path
) -> None:
    """Exact mode's residual freedom, stated as a test: a provider that takes the other neighbour at every value
    within STEERABLE of its midpoint is reproduced bit for bit by a replay on other hardware, though its E_k
    is not the honest one (bench/eval.py measures how far that moves a model). One that also steers values
    nearer the threshold is caught (test_a_logged_direction_away_from_the_nearest_neighbour_is_steering)."""
    from ovig_node.attacks.base import load_attack

    attack = load_attack("log_steering", intervals=frozenset({K}))
    run = TrainRun(
        task.spec, task.spec_hash, task.dataset_path, task.init_path, tmp_path, get_profile("reference"), attack=attack
    )
    train(run, stop_at=task.spec.layout.end_step(K))
    assert attack.memory["steered"] > 0
    # its steps only: E_{K-1}'s probe gradient, computed on step K's batch, is rounded honestly
    assert evidence_path(tmp_path, K - 1).read_bytes() == evidence_path(claims, K - 1).read_bytes()
    assert evidence_path(tmp_path, K).read_bytes() != evidence_path(claims, K).read_bytes()
    assert not torch.equal(claimed_log(tmp_path), claimed_log(claims))
    verdict = judge(task, tmp_path, read_evidence(evidence_path(tmp_path, K)), ["micro3", "threads2"])
    assert (verdict.verdict, verdict.reason) == ("valid", "reproduced")
