"""The training engine on the tiny vision workload: real torch training, evidence, resume, profiles."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from ovig_node.files import file_sha256
from ovig_node.protocol.errors import SpecError
from ovig_node.protocol.merkle import MerkleTree, leaf_hash
from ovig_node.protocol.spec import LrSchedule, OptimizerSpec
from ovig_node.storage.ipfs import IpfsClient
from ovig_node.training.evidence import EvidenceError, read_evidence
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import TrainRun, completed_intervals, evidence_path, train
from ovig_node.training.optim import lr_at, step_counters
from ovig_node.training.taskfiles import PreparedTask, attach_boundary, prepare_task
from ovig_node.training.workloads import get_workload
from ovig_node.training.workloads.base import DEFAULT_OPTIMIZER
from support import run_ovig

SGD_MOMENTUM = {"name": "sgd_momentum", "lr": "0.05", "momentum": "0.9"}


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    # 30 steps, stride 7: intervals end at 7, 14, 21, 28, 30 (the last one short), batches of 2.
    return prepare_task(
        "vision", tmp_path_factory.mktemp("task"), tiny=True, total_steps=30, stride=7, intervals_per_batch=2
    )


def run_of(prepared: PreparedTask, out: Path, profile: str = "reference", **changes: object) -> TrainRun:
    run = TrainRun(
        prepared.spec, prepared.spec_hash, prepared.dataset_path, prepared.init_path, out, get_profile(profile), task=7
    )
    return replace(run, **changes)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def reference(task: PreparedTask, tmp_path_factory: pytest.TempPathFactory) -> tuple[TrainRun, list[str]]:
    run = run_of(task, tmp_path_factory.mktemp("reference"))
    return run, train(run).digests


def test_prepare_writes_files_matching_the_spec(task: PreparedTask, ipfs: IpfsClient) -> None:
    assert file_sha256(task.dataset_path) == task.spec.dataset.sha256
    assert file_sha256(task.init_path) == task.spec.init.sha256
    assert task.spec.dataset.examples == 1797
    # The CIDs in the spec are the ones a real IPFS node gives the files.
    assert ipfs.add_file(task.dataset_path).cid == task.spec.dataset.cid
    assert ipfs.add_file(task.init_path).cid == task.spec.init.cid
    again = prepare_task(
        "vision", task.spec_path.parent / "again", tiny=True, total_steps=30, stride=7, intervals_per_batch=2
    )
    assert again.spec_hash == task.spec_hash  # deterministic: same data, same seeded init


def test_training_learns_and_reports_roots(task: PreparedTask, reference: tuple[TrainRun, list[str]]) -> None:
    run, digests = reference
    assert len(digests) == 5
    result = train(run)  # everything is on disk: nothing to train, same report
    assert result.resumed_intervals == 5 and result.losses == []
    assert result.digests == digests
    leaves = [leaf_hash(7, k, end, bytes.fromhex(digests[k])) for k, end in enumerate([7, 14, 21, 28, 30])]
    assert result.batch_roots == [MerkleTree.build(leaves[i : i + 2]).root for i in (0, 2, 4)]


def test_training_learns(tmp_path: Path) -> None:
    longer = prepare_task("vision", tmp_path, tiny=True, total_steps=120, stride=40, intervals_per_batch=4)
    losses = train(run_of(longer, tmp_path / "run")).losses
    assert len(losses) == 120
    assert sum(losses[-10:]) / 10 < 0.6 * sum(losses[:10]) / 10  # cross-entropy of 10 classes falls from ~2.3


def test_evidence_holds_weights_optimizer_state_probe_and_metadata(reference: tuple[TrainRun, list[str]]) -> None:
    run, digests = reference
    evidence = read_evidence(evidence_path(run.out_dir, 4), expected_sha256=digests[4])
    assert evidence.metadata == {"task": "7", "spec": "0x" + run.spec_hash.hex(), "interval": "4", "step": "30"}
    assert set(evidence.model) == {
        f"{layer}.{p}" for layer in ("conv1", "conv2", "fc1", "fc2") for p in ("weight", "bias")
    }
    assert set(evidence.probe) == set(evidence.model)
    assert {key.rsplit("/", 1)[1] for key in evidence.optim} == {"exp_avg", "exp_avg_sq", "step"}
    assert set(step_counters(evidence.optim).values()) == {30}  # counters equal b_k
    assert all(torch.isfinite(g).all() and g.abs().sum() > 0 for g in evidence.probe.values())


def test_same_profile_twice_is_bit_identical(
    task: PreparedTask, reference: tuple[TrainRun, list[str]], tmp_path: Path
) -> None:
    assert train(run_of(task, tmp_path)).digests == reference[1]


@pytest.mark.parametrize(
    ("workload", "profile"), [("vision", "native-conv"), ("language", "math-attention"), ("vision", "fused-optimizer")]
)
def test_a_kernel_profile_twice_is_bit_identical_and_leaves_the_next_profile_as_it_was(
    workload: str, profile: str, tmp_path: Path
) -> None:
    """Profiles that swap kernels (oneDNN or native convolutions, fused or plain attention, the fused optimizer) set
    process-wide switches: each is deterministic, and the reference run after it is the reference run before it."""
    task = prepare_task(workload, tmp_path / "task", tiny=True, total_steps=6, stride=3)
    runs = [
        train(run_of(task, tmp_path / f"run{i}", name)).digests
        for i, name in enumerate(["reference", profile, profile, "reference"])
    ]
    assert runs[1] == runs[2] and runs[0] == runs[3]


@pytest.mark.parametrize("profile", ["micro4", "micro4-fp64acc"])
def test_other_profiles_drift_only_in_the_last_bits(
    task: PreparedTask, reference: tuple[TrainRun, list[str]], tmp_path: Path, profile: str
) -> None:
    run, digests = reference
    other = train(run_of(task, tmp_path, profile)).digests
    assert all(a != b for a, b in zip(other, digests, strict=True))
    mine = read_evidence(evidence_path(tmp_path, 4)).model
    ref = read_evidence(evidence_path(run.out_dir, 4)).model
    drift = max((mine[name] - ref[name]).abs().max().item() for name in ref)
    assert 0 < drift < 1e-4


def test_resume_after_interruption_is_bit_identical(
    task: PreparedTask, reference: tuple[TrainRun, list[str]], tmp_path: Path
) -> None:
    run = run_of(task, tmp_path)
    partial = train(run, stop_at=17)  # killed mid-interval 2 (steps 14..20)
    assert partial.digests == reference[1][:2]
    (tmp_path / "evidence" / ".E_000002.safetensors.x.tmp").write_bytes(b"half a file")  # a write cut short
    resumed = train(run)
    assert resumed.resumed_intervals == 2
    assert len(resumed.losses) == 30 - 14
    assert resumed.digests == reference[1]
    assert not list((tmp_path / "evidence").glob(".*.tmp"))


def test_stateful_sgd_momentum_resumes_too(task: PreparedTask, tmp_path: Path) -> None:
    spec = task.spec.model_copy(update={"optimizer": task.spec.optimizer.model_validate(SGD_MOMENTUM)})
    whole = train(run_of(task, tmp_path / "whole", spec=spec)).digests
    cut = run_of(task, tmp_path / "cut", spec=spec)
    train(cut, stop_at=10)
    assert train(cut).digests == whole
    optim = read_evidence(evidence_path(tmp_path / "whole", 0)).optim
    assert {key.rsplit("/", 1)[1] for key in optim} == {"momentum_buffer"}


def test_foreign_evidence_in_the_output_folder_is_refused(
    task: PreparedTask, reference: tuple[TrainRun, list[str]]
) -> None:
    other_task = run_of(task, reference[0].out_dir, task=8)
    with pytest.raises(EvidenceError, match="belongs to another task or spec"):
        completed_intervals(other_task)


def test_cli_train_killed_and_resumed_matches_uninterrupted(tmp_path: Path) -> None:
    made = run_ovig(
        "spec",
        "new",
        "--workload",
        "vision",
        "--tiny",
        "--out",
        str(tmp_path / "spec"),
        "--steps",
        "600",
        "--stride",
        "50",
        "--intervals-per-batch",
        "4",
    )
    assert made.returncode == 0, made.stderr
    spec_path = tmp_path / "spec" / "spec.json"
    whole = run_ovig("train", "--spec", str(spec_path), "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    expected = [file_sha256(evidence_path(tmp_path / "whole", k)) for k in range(12)]

    out = tmp_path / "killed"
    argv = [str(Path(sys.executable).parent / "ovig"), "train", "--spec", str(spec_path), "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not evidence_path(out, 2).exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not evidence_path(out, 11).exists(), "the run finished before it could be killed"

    resumed = run_ovig("train", "--spec", str(spec_path), "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming after interval" in resumed.stdout
    assert [file_sha256(evidence_path(out, k)) for k in range(12)] == expected
    assert "batch 2 root 0x" in resumed.stdout


def test_cli_train_errors_are_one_line(tmp_path: Path, task: PreparedTask) -> None:
    missing = run_ovig("train", "--spec", str(task.spec_path), "--out", str(tmp_path), "--data", str(tmp_path))
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        f"error: {tmp_path / 'dataset.safetensors'} is missing (the spec's dataset, CID {task.spec.dataset.cid})"
    )
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "seed": 0.5}')
    result = run_ovig("train", "--spec", str(bad), "--out", str(tmp_path))
    assert (
        result.stderr.strip()
        == "error: spec.seed is a JSON number with a fraction or exponent: write it as a decimal string"
    )


# The other two workloads: (steps, stride, batch size, required drop of the mean loss).
WORKLOADS = {"language": (40, 20, 16, 0.5), "diffusion": (120, 40, 32, 0.8)}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_learns_resumes_bit_identically_and_drifts_across_profiles(name: str, tmp_path: Path) -> None:
    steps, stride, batch_size, drop = WORKLOADS[name]
    # At the full rate from the first step: within the tiny language task's warm-up, 40 steps learn little.
    prepared = prepare_task(
        name,
        tmp_path / "task",
        tiny=True,
        total_steps=steps,
        stride=stride,
        intervals_per_batch=2,
        batch_size=batch_size,
        warmup_steps=0,
    )
    whole = train(run_of(prepared, tmp_path / "whole"))
    assert sum(whole.losses[-5:]) < drop * sum(whole.losses[:5])

    cut = run_of(prepared, tmp_path / "cut")
    train(cut, stop_at=stride + stride // 2)
    assert train(cut).digests == whole.digests

    other = train(run_of(prepared, tmp_path / "micro2", "micro2"))
    assert all(a != b for a, b in zip(other.digests, whole.digests, strict=True))
    mine, ref = (read_evidence(evidence_path(tmp_path / d, 1)).model for d in ("micro2", "whole"))
    # Adam divides by the gradient's running scale, so coordinates whose gradient is near zero can move
    # by up to about lr (0.003) apart: drift, not a different computation.
    assert 0 < max((mine[k].float() - ref[k].float()).abs().max().item() for k in ref) < 1e-2


def test_the_tiny_language_task_warms_up_and_a_spec_can_say_otherwise(tmp_path: Path) -> None:
    warm = prepare_task("language", tmp_path / "warm", tiny=True, total_steps=20, stride=10)
    assert warm.spec.optimizer.schedule == LrSchedule(name="constant", warmup_steps=500)
    assert [lr_at(warm.spec.optimizer, step, 20) for step in (249, 499, 500, 10_000)] == [0.0015, 0.003, 0.003, 0.003]
    assert lr_at(warm.spec.optimizer, 0, 20) == pytest.approx(6e-6, rel=1e-12)
    cold = prepare_task("language", tmp_path / "cold", tiny=True, total_steps=20, stride=10, warmup_steps=0)
    assert cold.spec.optimizer.schedule == LrSchedule() and lr_at(cold.spec.optimizer, 0, 20) == 0.003
    assert cold.spec_hash != warm.spec_hash and file_sha256(cold.init_path) == file_sha256(warm.init_path)
    losses = [train(run_of(p, tmp_path / f"run-{p.spec_path.parent.name}")).losses for p in (cold, warm)]
    assert losses[0][0] == losses[1][0] and losses[0][1] != losses[1][1]  # the first step differs in size only
    # The full config and the other workloads keep the constant rate their results were measured with.
    assert get_workload("language").optimizer(tiny=False) == DEFAULT_OPTIMIZER
    vision = prepare_task("vision", tmp_path / "vision", tiny=True, total_steps=20, stride=10)
    assert vision.spec.optimizer == OptimizerSpec(**DEFAULT_OPTIMIZER)
    new_vision = ("spec", "new", "--workload", "vision", "--tiny", "--warmup-steps")
    made = run_ovig(*new_vision, "50", "--out", str(tmp_path / "cli"))
    assert made.returncode == 0, made.stderr
    assert '"schedule":{"name":"constant","warmup_steps":50}' in (tmp_path / "cli" / "spec.json").read_text()
    again = run_ovig(*new_vision, "60", "--out", str(tmp_path / "cli"))  # a folder with files: never overwritten
    assert again.returncode == 2 and "is not empty" in again.stderr and "--force" in again.stderr
    assert '"warmup_steps":50}' in (tmp_path / "cli" / "spec.json").read_text()
    refused = run_ovig(*new_vision, "-5", "--out", str(tmp_path / "x"))
    assert refused.returncode == 2 and "-5 is not in the range x>=0" in refused.stderr
    assert not (tmp_path / "x").exists()


def test_a_spec_can_change_the_workload_config_and_nothing_else(tmp_path: Path) -> None:
    default = prepare_task("vision", tmp_path / "avg", tiny=True, total_steps=20, stride=10)
    assert default.spec.workload.config == {"channels": 4, "hidden": 32, "pool": "avg"}
    hard = prepare_task("vision", tmp_path / "max", tiny=True, total_steps=20, stride=10, config={"pool": "max"})
    assert hard.spec.workload.config == {"channels": 4, "hidden": 32, "pool": "max"}
    assert hard.spec_hash != default.spec_hash and file_sha256(hard.init_path) == file_sha256(default.init_path)
    # A spec written before the option existed has no key, and keeps the max-pooling it was trained with.
    old = hard.spec.model_copy(
        update={"workload": hard.spec.workload.model_copy(update={"config": {"channels": 4, "hidden": 32}})}
    )
    losses = [train(run_of(p, tmp_path / f"run-{p.spec_path.parent.name}")).losses for p in (default, hard)]
    assert losses[0][0] != losses[1][0]  # the same weights and batch through another pooling
    kept = train(run_of(hard, tmp_path / "old", spec=old)).losses
    assert kept == losses[1]
    with pytest.raises(SpecError, match="vision config has no depth; it has channels, hidden, pool"):
        prepare_task("vision", tmp_path / "bad", tiny=True, config={"depth": 3})
    with pytest.raises(SpecError, match=r"pool must be one of \['avg', 'max'\], not 'min'"):
        prepare_task("vision", tmp_path / "bad", tiny=True, config={"pool": "min"})
    made = run_ovig(
        "spec", "new", "--workload", "vision", "--tiny", "--config", "hidden=8", "--out", str(tmp_path / "cli")
    )
    assert made.returncode == 0, made.stderr
    assert '"config":{"channels":4,"hidden":8,"pool":"avg"}' in (tmp_path / "cli" / "spec.json").read_text()


@pytest.mark.parametrize(
    ("profile", "why"),
    [
        ({"workload": "llm", "stride": 10}, "calibrated for llm at stride 10, not for this spec's vision at stride 10"),
        ({"workload": "vision", "stride": 5}, "calibrated for vision at stride 5, not for this spec's vision at "),
        ([1, 2], "not a boundary profile"),
    ],
)
def test_a_boundary_that_cannot_judge_the_spec_is_never_named_in_it(tmp_path: Path, profile: object, why: str) -> None:
    """Issue 46: a boundary calibrated for another workload or stride (every node would refuse the task) is
    refused when the owner names it, and the spec is left as it was."""
    task = prepare_task("vision", tmp_path / "task", tiny=True, total_steps=20, stride=10)
    before = task.spec_path.read_bytes()
    boundary = tmp_path / "boundary.json"
    boundary.write_text(json.dumps(profile))
    with pytest.raises(SpecError, match=f"^{boundary}: {why}"):
        attach_boundary(task.spec_path, boundary)
    assert task.spec_path.read_bytes() == before
