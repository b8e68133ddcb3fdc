"""Data-parallel providers (profile ddp2: two real gloo processes): bit-identical run to run and after a
SIGKILL of the parent (no rank left behind), judged by one-process replays (an honest interval passes, an
attack run under DDP is caught), and a rank that dies named in one line. Sharded ones (fsdp2, FSDP2 over
two gloo processes): the same evidence as ddp2, resumed from sharded optimizer state, on the CNN and on
the chat model's LoRA adapter. Real torch training of the tiny workloads; the dying rank is a fault
injected by an attack plugin (named as such below), the one way to kill a rank at a chosen step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import verify_support
from ovig_node.attacks import Attack, load_attack
from ovig_node.training import distributed
from ovig_node.training.execution import ExecutionProfile, ProfileUnavailable, get_profile, one_process
from ovig_node.training.loop import TrainRun, completed_intervals, evidence_path, train
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.verify.boundary import BoundaryProfile, calibrate
from ovig_node.verify.evaluate import EvalSettings, evaluate, judge_run
from ovig_node.verify.summary import summarise
from verify_support import FAKED, HELD_OUT_PROFILES

DDP2 = get_profile("ddp2")
FSDP2 = get_profile("fsdp2")


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    return verify_support.tiny_task(tmp_path_factory.mktemp("ddp-task"))


@pytest.fixture(scope="module")
def boundary(task: PreparedTask, tmp_path_factory: pytest.TempPathFactory) -> BoundaryProfile:
    """Calibrated on one-process claims and replays only: no data-parallel run in it."""
    claims = verify_support.honest_claims(task, tmp_path_factory.mktemp("ddp-reference-claims"))
    return verify_support.spread_boundary(task, claims)


@pytest.fixture(scope="module")
def ddp_claims(task: PreparedTask, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ddp-claims")
    train(_run(task, out))
    return out


def _run(task: PreparedTask, out: Path, attack: Attack | None = None, profile: ExecutionProfile = DDP2) -> TrainRun:
    return TrainRun(task.spec, task.spec_hash, task.dataset_path, task.init_path, out, profile, attack=attack)


def test_a_ddp_run_is_bit_identical_run_to_run_and_resumes_bit_identically(
    task: PreparedTask, ddp_claims: Path, tmp_path: Path
) -> None:
    expected = completed_intervals(_run(task, ddp_claims))
    assert len(expected) == task.spec.layout.intervals
    cut = train(_run(task, tmp_path), stop_at=25)  # stopped mid-interval 2: E_0 and E_1 kept
    assert cut.digests == expected[:2]
    resumed = train(_run(task, tmp_path))
    assert resumed.resumed_intervals == 2 and resumed.digests == expected
    assert distributed.position() == (0, 1)  # the process group is gone once the run ends


def test_an_honest_ddp_interval_passes_a_one_process_replay(
    task: PreparedTask, ddp_claims: Path, boundary: BoundaryProfile
) -> None:
    judged = judge_run(task, ddp_claims, FAKED, boundary, profiles=HELD_OUT_PROFILES)
    assert judged.verdict.valid, judged.verdict.failing


def test_an_attack_run_under_ddp_is_caught_by_a_one_process_replay(
    task: PreparedTask, ddp_claims: Path, boundary: BoundaryProfile, tmp_path: Path
) -> None:
    for k in range(FAKED):  # the provider's honest work before it cheats
        evidence_path(tmp_path, k).parent.mkdir(parents=True, exist_ok=True)
        os.link(evidence_path(ddp_claims, k), evidence_path(tmp_path, k))
    cheat = load_attack("micro_batch_drop", intervals=frozenset({FAKED}), keep=0.5)
    train(_run(task, tmp_path, cheat), stop_at=task.spec.layout.end_step(FAKED))
    judged = judge_run(task, tmp_path, FAKED, boundary, profiles=HELD_OUT_PROFILES)
    assert (judged.verdict.verdict, judged.verdict.reason) == ("faulty", "out_of_bounds")


@dataclass(frozen=True)
class DieOnRank(Attack):
    """A fault injection, not an attack: rank ``rank`` exits with code 3 at step ``step``."""

    rank: int = 1
    step: int = 3

    def batch(self, step: int, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if step == self.step and distributed.position()[0] == self.rank:
            os._exit(3)
        return batch


def test_a_rank_that_dies_fails_the_run_in_one_line_naming_it(task: PreparedTask, tmp_path: Path) -> None:
    with pytest.raises(distributed.RankFailed, match=r"rank 1 \(exit code 3\)"):
        train(_run(task, tmp_path, DieOnRank(intervals=frozenset({0}))))
    assert distributed.position() == (0, 1)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:  # field 4: the parent's pid
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigkill_of_ovig_train_leaves_no_rank_and_the_run_resumes(
    task: PreparedTask, ddp_claims: Path, tmp_path: Path
) -> None:
    ovig = Path(sys.executable).parent / "ovig"
    argv = [str(ovig), "train", "--spec", str(task.spec_path), "--out", str(tmp_path), "--profile", "ddp2"]
    parent = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not evidence_path(tmp_path, 0).exists():
        assert parent.poll() is None and time.monotonic() < deadline, "ovig train ended before E_0"
        time.sleep(0.05)
    ranks = _children(parent.pid)
    assert ranks, "no rank process found"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in ranks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in ranks if _alive(pid)], "a rank outlived its killed parent"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert completed_intervals(_run(task, tmp_path)) == completed_intervals(_run(task, ddp_claims))


def test_a_replay_never_runs_data_parallel(task: PreparedTask, tmp_path: Path) -> None:
    with pytest.raises(ProfileUnavailable, match="replays run in one process; ddp2"):
        calibrate(
            task,
            claim_profile=get_profile("reference"),
            replay_profiles=[DDP2],
            positions=[0],
            alpha=3.0,
            work_dir=tmp_path,
        )
    assert one_process(DDP2).name == "reference" and not list(tmp_path.iterdir())  # refused before training


# At two ranks every sum of the ranks' gradients has two terms, and floating-point addition commutes: a
# reduce-scatter into shards gives the all-reduce's bits, and the sharded optimizer updates each element
# as the whole one does. So an fsdp2 run that gathers, shards and resumes right writes ddp2's very files.
def test_an_fsdp2_run_writes_the_ddp2_evidence_and_resumes_from_sharded_state(
    task: PreparedTask, ddp_claims: Path, tmp_path: Path
) -> None:
    expected = completed_intervals(_run(task, ddp_claims))
    cut = train(_run(task, tmp_path, profile=FSDP2), stop_at=25)  # E_0 and E_1 kept
    assert cut.digests == expected[:2]
    resumed = train(_run(task, tmp_path, profile=FSDP2))  # weights loaded whole, then sharded; moments placed
    assert resumed.resumed_intervals == 2 and resumed.digests == expected
    assert distributed.position() == (0, 1)


def test_an_fsdp2_lora_run_shards_a_frozen_base_and_keeps_the_adapter_evidence(tmp_path: Path) -> None:
    llm = verify_support.tiny_task(tmp_path / "task", "llm")
    stop = llm.spec.layout.end_step(1)
    ddp = train(_run(llm, tmp_path / "ddp2"), stop_at=stop)
    fsdp = train(_run(llm, tmp_path / "fsdp2", profile=FSDP2), stop_at=stop)
    assert len(fsdp.digests) == 2 and fsdp.digests == ddp.digests


def test_an_fsdp4_run_over_uneven_shards_resumes_bit_identically(task: PreparedTask, tmp_path: Path) -> None:
    # four ranks split fc2's 10 rows 3 + 3 + 3 + 1 (and conv1's 4 one each): uneven shards to place on resume
    fsdp4 = get_profile("fsdp4")
    whole = train(_run(task, tmp_path / "whole", profile=fsdp4), stop_at=35)
    train(_run(task, tmp_path / "cut", profile=fsdp4), stop_at=15)  # E_0 kept
    resumed = train(_run(task, tmp_path / "cut", profile=fsdp4), stop_at=35)
    assert resumed.resumed_intervals == 1 and resumed.digests == whole.digests and len(whole.digests) == 3


def test_attacks_are_not_simulated_sharded(task: PreparedTask, tmp_path: Path) -> None:
    ovig = Path(sys.executable).parent / "ovig"
    argv = [str(ovig), "trainer", "--task", "1", "--profile", "fsdp2", "--attack", "micro_batch_drop"]
    refused = subprocess.run(argv, capture_output=True, text=True, timeout=120)  # before any RPC: none runs
    assert refused.returncode == 1 and "attacks are simulated in one process or under ddp, not fsdp2" in refused.stderr
    cheat = load_attack("micro_batch_drop", intervals=frozenset({0}), keep=0.5)
    with pytest.raises(
        distributed.ShardedAttackRefused, match="attacks are simulated in one process or under ddp, not fsdp2"
    ):
        train(_run(task, tmp_path, cheat, profile=FSDP2))
    assert not list(tmp_path.glob("evidence/E_*"))


def test_an_honest_only_evaluation_judges_an_fsdp2_provider_by_one_process_replays(tmp_path: Path) -> None:
    settings = EvalSettings(
        strides=(5,),
        intervals=3,
        calibration_seeds=(2,),
        calibration_profiles=("micro2",),
        attacks=(),
        other_hardware=False,
        claim_profile="fsdp2",
    )
    summary = summarise(settings, evaluate(settings, tmp_path))
    assert [h["interval"] for h in summary["honest"][5]] == [0, 1, 2]  # every interval of the fsdp2 run judged
    assert summary["asr"] == {} and summary["rows"] == []
    assert summary["settings"]["claim_profile"] == "fsdp2"
