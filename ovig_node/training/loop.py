"""The training loop: train a task spec and leave, every ``stride`` steps, the interval's evidence.

Read top to bottom:
  1. set up: execution profile, dataset, model from the initial checkpoint, optimizer;
  2. resume: every complete evidence file E_0, E_1, ... found in the output folder is verified and
     the last one restores weights and optimizer state, so a killed run continues bit-identically;
  3. train: for each step, the learning rate and the batch are pure functions of the spec and the
     step; gradients are computed under the profile; after the last step of interval k, the probe
     gradient (batch of step b_k) is computed and E_k written atomically;
  4. report: digests, the leaves and each batch's Merkle root.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn

from ovig_node.files import file_sha256
from ovig_node.protocol.merkle import MerkleTree, leaf_hash
from ovig_node.protocol.spec import TaskSpec
from ovig_node.training import distributed
from ovig_node.training.evidence import (
    SECTIONS,
    Evidence,
    EvidenceError,
    evidence_metadata,
    load_model_tensors,
    model_tensors,
    read_evidence,
    read_metadata,
    write_evidence,
)
from ovig_node.training.exact import ExactNumerics, encode_log
from ovig_node.training.execution import ExecutionProfile
from ovig_node.training.hooks import StepContext, StepHooks
from ovig_node.training.optim import build_optimizer, load_optimizer_state, lr_at, optimizer_state, set_lr
from ovig_node.training.statistics import StepStatistics
from ovig_node.training.workloads import Dataset, Workload, get_workload, step_batch


@dataclass(frozen=True)
class TrainRun:
    spec: TaskSpec
    spec_hash: bytes
    dataset_path: Path  # the materialised dataset (sha256 = spec.dataset.sha256)
    init_path: Path  # the initial checkpoint (sha256 = spec.init.sha256)
    out_dir: Path  # evidence goes to out_dir/evidence/E_<k>.safetensors
    profile: ExecutionProfile
    task: int = 0  # on-chain task id (0 before the task is posted)
    attack: StepHooks | None = None  # a dishonest provider's change (ovig_node.attacks); None: honest


@dataclass(frozen=True)
class StepInfo:
    step: int
    loss: float
    interval_done: int | None  # k when this step completed interval k


@dataclass
class TrainResult:
    digests: list[str]  # digest_k (sha256 hex) for k = 0 .. K-1
    batch_roots: list[bytes]
    resumed_intervals: int  # complete intervals found on disk at start
    losses: list[float] = field(default_factory=list)  # steps trained by this call
    seconds: float = 0.0
    evidence_seconds: float = 0.0  # of ``seconds``, writing evidence files (probe gradient, hashing, fsync)


def evidence_path(out_dir: Path, k: int) -> Path:
    return out_dir / "evidence" / f"E_{k:06d}.safetensors"


def train(
    run: TrainRun,
    *,
    on_step: Callable[[StepInfo], None] | None = None,
    stop_at: int | None = None,
    evidence: bool = True,
) -> TrainResult:
    """Train ``run`` to the end (or up to step ``stop_at``, exclusive, to interrupt on purpose).

    ``evidence=False`` trains plainly and keeps nothing: the baseline of ``bench/train_overhead.py``.
    A data-parallel or sharded profile (``ddp2``, ``fsdp2``) makes this process rank 0 and starts the
    other ranks (:mod:`ovig_node.training.distributed`).
    """
    distributed.refuse_sharded_attack(run.profile, run.attack)  # its hooks change whole tensors, not shards
    refuse_sharded_exact(run.spec, run.profile)  # before any rank starts
    if run.profile.world_size > 1 and distributed.position()[1] == 1:
        with distributed.ranks(run, _rank_main, stop_at, evidence):
            return train(run, on_step=on_step, stop_at=stop_at, evidence=evidence)
    started = time.monotonic()
    spec, layout = run.spec, run.spec.layout
    # 1. set up
    run.profile.apply()
    workload = get_workload(spec.workload.name)
    config = spec.workload.config
    dataset = Dataset.load(run.dataset_path)
    workload.check_dataset(dataset, config)
    model = load_initial_model(workload, config, run.init_path).to(run.profile.device)
    numerics = exact_numerics(model, workload, dataset, spec, run.profile)
    if run.attack is not None:
        run.attack.setup(StepContext(spec, workload, dataset, run.init_path))
        if numerics is not None and type(run.attack).rounding is not StepHooks.rounding:  # a steering attack
            numerics.steer = run.attack.rounding

    # 2. resume from the last complete evidence (a write cut by a kill left only a temporary file);
    #    a sharded model is sharded once it holds the full weights, its optimizer built on the shards
    if distributed.is_writer():
        for partial in run.out_dir.glob("evidence/.E_*.tmp"):
            partial.unlink()
    distributed.barrier()
    digests = completed_intervals(run) if evidence else []
    last = read_evidence(evidence_path(run.out_dir, len(digests) - 1), expected_sha256=digests[-1]) if digests else None
    if last is not None:
        load_model_tensors(model, last.model, trainable_only=True)
    model = distributed.shard(model, run.profile.sharded)
    optimizer = build_optimizer(spec.optimizer, model, fused=run.profile.fused_optimizer)
    if last is not None:
        load_optimizer_state(model, optimizer, last.optim)
    resumed = len(digests)
    first_step = layout.end_step(resumed - 1) if resumed else 0
    statistics = StepStatistics(model, sharded=run.profile.sharded) if evidence else None

    # 3. train
    losses = []
    k = resumed
    evidence_seconds = 0.0
    for step in range(first_step, spec.total_steps if stop_at is None else min(stop_at, spec.total_steps)):
        loss = training_step(
            model, optimizer, workload, dataset, spec, step, run.profile, run.attack, numerics, statistics
        )
        losses.append(loss)
        done = None
        if evidence and step + 1 == layout.end_step(k):
            writing = time.monotonic()
            digests.append(write_interval_evidence(run, model, optimizer, workload, dataset, k, numerics, statistics))
            evidence_seconds += time.monotonic() - writing
            done, k = k, k + 1
        elif numerics is not None and not evidence:
            numerics.discard()  # plain training keeps no log
        if on_step is not None:
            on_step(StepInfo(step=step, loss=loss, interval_done=done))

    # 4. report
    roots = batch_roots(run, digests) if len(digests) == layout.intervals else []
    return TrainResult(digests, roots, resumed, losses, time.monotonic() - started, evidence_seconds)


def _rank_main(run: TrainRun, rank: int, port: int, parent: int, stop_at: int | None, evidence: bool) -> None:
    """Rank ``rank`` (1..N-1) of a data-parallel run, in a child process of rank 0's."""
    with distributed.child_joined(run, rank, port, parent):
        train(run, stop_at=stop_at, evidence=evidence)
    # Its work is done and the group left: skip the interpreter's teardown, which once aborted a finished rank
    # (std::terminate from a torch thread still joinable, exit code -6) and so failed a run that had succeeded.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def training_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    workload: Workload,
    dataset: Dataset,
    spec: TaskSpec,
    step: int,
    profile: ExecutionProfile,
    attack: StepHooks | None = None,
    numerics: ExactNumerics | None = None,
    statistics: StepStatistics | None = None,
) -> float:
    """One optimizer step at the learning rate of ``step`` on its batch; returns the loss.

    An ``attack`` active at this step may change the batch, the learning rate, the gradients, skip
    the update or change the weights and optimizer state after it; honest training passes None.
    In exact mode (``numerics``) the update's results are rounded to float32 values too. ``statistics``
    records the step's loss, the gradient it applied and the change it made.
    """
    cheat = attack if attack is not None and attack.active(step, spec.layout) else None
    lr = lr_at(spec.optimizer, step, spec.total_steps)
    set_lr(optimizer, cheat.lr(step, lr) if cheat else lr)
    loss = compute_gradients(model, workload, dataset, spec, step, profile, cheat, numerics)
    if cheat:
        cheat.gradients(step, model)
    if statistics is not None:
        statistics.gradients(loss)
    if not (cheat and cheat.skip_update(step)):
        optimizer.step()
        if numerics is not None:
            numerics.round_update(optimizer)
    if statistics is not None:  # before any edit a cheat makes after the update: it would not report that
        statistics.updated()
    optimizer.zero_grad(set_to_none=True)
    if cheat:
        cheat.after_update(step, model)
        cheat.after_optimizer(step, model, optimizer)
    return loss


def compute_gradients(
    model: nn.Module,
    workload: Workload,
    dataset: Dataset,
    spec: TaskSpec,
    step: int,
    profile: ExecutionProfile,
    attack: StepHooks | None = None,
    numerics: ExactNumerics | None = None,
) -> float:
    """Leave in ``.grad`` the gradient of the mean loss of step ``step``'s batch; return the loss.

    The profile splits the batch into micro-batches (each weighted by its share of the batch) and
    may sum their gradients in float64: same mathematics, different rounding. In a data-parallel run
    each rank takes its contiguous share of the batch first, and the shares' sums are all-reduced
    (sharded: reduce-scattered, each rank's ``.grad`` holding its shard of the sum). In exact mode
    (``numerics``) the float64 model's activations, their gradients and the summed gradient are rounded.
    """
    batch = step_batch(workload, dataset, spec, step)
    if attack is not None:
        batch = attack.batch(step, batch)
    batch = {name: _compute_dtype(tensor, numerics).to(profile.device) for name, tensor in batch.items()}
    size = len(next(iter(batch.values())))
    rank, world = distributed.position()
    if world != profile.world_size:  # a process group of another run, or a data-parallel profile run alone
        raise distributed.RankFailed(f"profile {profile.name} trains on {profile.world_size} ranks, not {world}")
    first = 0  # the rank's first example in the step's batch (exact mode's positions count in the whole batch)
    if world > 1:
        if size < world:
            raise distributed.RankFailed(f"a batch of {size} cannot be shared by {world} ranks")
        shares = _split(batch, world)
        first = sum(len(next(iter(share.values()))) for share in shares[:rank])
        batch = shares[rank]
    if profile.sharded:  # FSDP2's backward reduce-scatters the ranks' sum into each one's shard of .grad
        loss = workload.loss(model, batch, spec.workload.config) * (len(next(iter(batch.values()))) / size)
        loss.backward()
        losses = torch.tensor([loss.item()], dtype=torch.float64)
        distributed.all_reduce_sum([losses])
        return float(losses.item())
    params = [p for p in model.parameters() if p.requires_grad]
    sums: list[torch.Tensor] | None = None
    total = 0.0
    cheap = attack.compute_dtype(step) if attack is not None else None
    if numerics is not None:
        numerics.begin_step(step)
    offset = first
    for part in _split(batch, profile.micro_batches):
        share = len(next(iter(part.values()))) / size
        if numerics is not None:
            numerics.part(offset)
        offset += len(next(iter(part.values())))
        # a cheaper dtype: autocast in float32 training; in exact mode's float64, float32 (what a cheat saves there)
        shortcut = numerics.in_float32() if numerics is not None and cheap is not None else contextlib.nullcontext()
        with shortcut:
            with torch.autocast(profile.device, dtype=cheap, enabled=cheap is not None and numerics is None):
                loss = workload.loss(model, part, spec.workload.config) * share
            grads = torch.autograd.grad(loss, params)
        if profile.accumulate == "float64":
            grads = tuple(g.double() for g in grads)
        sums = list(grads) if sums is None else [s + g for s, g in zip(sums, grads, strict=True)]
        total += loss.item()
    assert sums is not None
    losses = torch.tensor([total], dtype=torch.float64)
    distributed.all_reduce_sum([*sums, losses])
    for param, grad in zip(params, sums, strict=True):
        param.grad = grad.to(param.dtype)
    if numerics is not None:
        numerics.round_gradients()
    return float(losses.item())


def _compute_dtype(tensor: torch.Tensor, numerics: ExactNumerics | None) -> torch.Tensor:
    return tensor.double() if numerics is not None and tensor.is_floating_point() else tensor


def refuse_sharded_exact(spec: TaskSpec, profile: ExecutionProfile) -> None:
    if spec.exact and profile.sharded:
        raise distributed.RankFailed(f"exact mode rounds whole tensors, not FSDP's shards: use ddp, not {profile.name}")


def exact_numerics(
    model: nn.Module,
    workload: Workload,
    dataset: Dataset,
    spec: TaskSpec,
    profile: ExecutionProfile,
    claimed_log: torch.Tensor | None = None,
) -> ExactNumerics | None:
    """In exact mode, turn ``model`` to float64 and install its rounding (recording a log, or applying
    ``claimed_log`` in a replay); None in boundary mode."""
    if spec.numerics is None:
        return None
    refuse_sharded_exact(spec, profile)
    model.double()
    # the math path: the fused kernel's backward is beyond any threshold (training.exact)
    torch.backends.cuda.enable_flash_sdp(False)
    numerics = ExactNumerics(
        model,
        spec.numerics.thresholds,
        claimed_log,
        max_entries=spec.numerics.max_log_entries,
        gradient_floor=spec.numerics.gradient_floor,
    )
    numerics.combine = distributed.all_rows  # data-parallel: each rank logged its share of every batch
    batch = {
        name: _compute_dtype(t, numerics).to(profile.device)
        for name, t in step_batch(workload, dataset, spec, 0).items()
    }
    numerics.learn_sites(
        lambda n: workload.loss(model, {name: t[:n] for name, t in batch.items()}, spec.workload.config)
    )
    return numerics


def _split(batch: dict[str, torch.Tensor], parts: int) -> list[dict[str, torch.Tensor]]:
    size = len(next(iter(batch.values())))
    chunks = {name: torch.tensor_split(tensor, min(parts, size)) for name, tensor in batch.items()}
    return [{name: chunks[name][i] for name in batch} for i in range(min(parts, size))]


def write_interval_evidence(
    run: TrainRun,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    workload: Workload,
    dataset: Dataset,
    k: int,
    numerics: ExactNumerics | None = None,
    statistics: StepStatistics | None = None,
) -> str:
    """Write E_k atomically (rank 0 of a data-parallel run, the others waiting); return its digest."""
    evidence = endpoint_evidence(
        model, optimizer, workload, dataset, run.spec, run.spec_hash, run.task, k, run.profile, numerics, statistics
    )
    path = evidence_path(run.out_dir, k)
    digest = write_evidence(path, evidence) if distributed.is_writer() else None
    distributed.barrier()
    return digest or file_sha256(path)


def endpoint_evidence(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    workload: Workload,
    dataset: Dataset,
    spec: TaskSpec,
    spec_hash: bytes,
    task: int,
    k: int,
    profile: ExecutionProfile,
    numerics: ExactNumerics | None = None,
    statistics: StepStatistics | None = None,
) -> Evidence:
    """E_k of the current state: weights and optimizer state, the probe gradient on step b_k's batch
    (in full: a sharded run's ranks gather their shards) and the statistics of the interval's steps
    (``statistics``: None only where no evidence is kept). In exact mode the float64 values are float32
    ones, stored as float32, and E_k carries the interval's rounding log."""
    end = spec.layout.end_step(k)
    with numerics.unsteered() if numerics is not None else contextlib.nullcontext():
        compute_gradients(model, workload, dataset, spec, end, profile, numerics=numerics)
    probe = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    stats = statistics.take() if statistics is not None else {}
    optimizer.zero_grad(set_to_none=True)
    evidence = Evidence(
        model=distributed.gathered(model_tensors(model, trainable_only=True)),
        optim=distributed.gathered(optimizer_state(model, optimizer)),
        probe=distributed.gathered(probe),
        metadata=evidence_metadata(task, spec_hash, k, end),
        stats=stats,
    )
    if numerics is None:
        return evidence
    single = {section: _float32(getattr(evidence, section)) for section in SECTIONS}
    return Evidence(**single, metadata=evidence.metadata, stats=stats, rounding=encode_log(numerics.take_log()))


def _float32(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # exact: every float64 value was rounded to a float32 one, so this conversion is exact
    return {name: t.float() if t.dtype == torch.float64 else t for name, t in tensors.items()}


def completed_intervals(run: TrainRun) -> list[str]:
    """Digests of E_0, E_1, ... on disk, up to the first missing one; refuses another task's files."""
    digests: list[str] = []
    for k in range(run.spec.layout.intervals):
        path = evidence_path(run.out_dir, k)
        if not path.is_file():
            break
        meta = read_metadata(path)
        if meta != evidence_metadata(run.task, run.spec_hash, k, run.spec.layout.end_step(k)):
            raise EvidenceError(f"{path} belongs to another task or spec ({meta}); use another --out folder")
        digests.append(file_sha256(path))
    return digests


def load_initial_model(workload: Workload, config: dict[str, object], init_path: Path) -> nn.Module:
    """The model of the spec's initial checkpoint (``model/<name>`` tensors, weights only)."""
    model = workload.build_model(config)
    tensors = load_file(str(init_path))
    load_model_tensors(model, {name.removeprefix("model/"): t for name, t in tensors.items()}, trainable_only=False)
    return model


def batch_roots(run: TrainRun, digests: list[str]) -> list[bytes]:
    layout = run.spec.layout
    roots = []
    for j in range(layout.batches):
        leaves = [
            leaf_hash(run.task, k, layout.end_step(k), bytes.fromhex(digests[k])) for k in layout.batch_intervals(j)
        ]
        roots.append(MerkleTree.build(leaves).root)
    return roots
