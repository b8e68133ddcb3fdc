"""Data-parallel training over several processes of one machine (profiles ``ddp2``, ``ddp4``, ``fsdp2``, ``fsdp4``).

A provider with N accelerators trains data-parallel: N ranks, each holding the whole model. Every rank
draws the step's whole batch from (seed, step), as one process would (protocol section 2.2), and trains
on its contiguous share; each share's gradient is weighted by its share of the *global* batch and the
shares are summed by an all-reduce, so the global batch, and so the mathematics, are one process's: only
the order of the sums differs, which makes a world size one more honest execution profile. The optimizer
runs on every rank on identical gradients (an all-reduce hands every rank the same bits), so the ranks
stay identical; rank 0 writes ``E_k`` atomically while the others wait at a barrier, and the evidence
format is unchanged: a one-process replay judges it.

A sharded profile (``fsdp2``) wraps the model in FSDP2 (``fully_shard``): each rank holds a shard of every
weight, gradient and optimizer moment (DTensors), gathers one block's weights at a time for its forward
and backward (:func:`shard`), and the backward reduce-scatters the ranks' gradient sum into each rank's
shard; the optimizer updates the shards. For evidence the ranks gather the full tensors (:func:`gathered`,
a collective) and rank 0 keeps and writes them, so ``E_k`` is the same file a one-process run would write;
a resumed run loads the full tensors before sharding (weights) or places each rank's share of them
(optimizer state, :func:`placed_like`).

The process that calls :func:`ovig_node.training.loop.train` becomes rank 0 (its progress callback, its
attack, its result), and starts ranks 1..N-1 as child processes that run the same ``train``, over gloo on
this machine's CPU (CUDA ranks, one device each over NCCL, are not built yet). Rank 0 holds the rendezvous
store on a port the OS gives it, and waits for each child to check in while watching it, so a child that
dies before joining fails the run at once. A child dies with its parent (Linux's parent-death signal, and
a check that the parent is still the one that started it), so killing the parent, even with SIGKILL,
leaves no orphan; a rank that dies makes the run fail in one line naming it. Evidence on disk is the only
state, so a killed run resumes as one process's does, bit for bit.
"""

from __future__ import annotations

import contextlib
import datetime
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from torch import nn

from ovig_node.errors import OvigError
from ovig_node.processes import die_with_parent

if TYPE_CHECKING:
    from ovig_node.training.execution import ExecutionProfile
    from ovig_node.training.hooks import StepHooks
    from ovig_node.training.loop import TrainRun

# A collective that waits longer than this on a peer fails instead of hanging: a rank stuck on a step
# for minutes is as good as dead.
COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=10)
CHECK_IN_TIMEOUT = 120.0  # seconds for a child to start, import torch and check in
EXIT_GRACE = 5.0  # seconds the other ranks get to exit on their own once one has failed
_HOST = "127.0.0.1"


class RankFailed(OvigError, RuntimeError):
    """A rank of a data-parallel run died or raised; the others were stopped."""


class ShardedAttackRefused(OvigError, ValueError):
    """An attack asked for under a sharded profile (the attacks change whole tensors, not shards)."""


class Unshardable(OvigError, ValueError):
    """A model FSDP2 cannot shard (a 0-dimensional parameter)."""


def refuse_sharded_attack(profile: ExecutionProfile, attack: StepHooks | None) -> None:
    if attack is not None and profile.sharded:
        raise ShardedAttackRefused(f"attacks are simulated in one process or under ddp, not {profile.name}")


def position() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) outside a data-parallel run."""
    if not dist.is_available() or not dist.is_initialized():
        return 0, 1
    return dist.get_rank(), dist.get_world_size()


def is_writer() -> bool:
    """Whether this process writes the run's files (rank 0, or the only process)."""
    return position()[0] == 0


def barrier() -> None:
    if position()[1] > 1:
        dist.barrier()


def all_reduce_sum(tensors: list[torch.Tensor]) -> None:
    """Sum ``tensors`` in place over every rank (nothing outside a data-parallel run)."""
    if position()[1] > 1:
        for tensor in tensors:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)


def all_rows(rows: torch.Tensor) -> torch.Tensor:
    """Every rank's ``rows`` (an int64 (n, c) tensor, n differing by rank) on every rank, sorted and unique:
    exact mode's rounding log of a data-parallel interval, each rank having rounded its share of the batch."""
    world = position()[1]
    if world == 1:
        return rows
    counts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(counts, torch.tensor([len(rows)], dtype=torch.int64))
    longest = max(int(c) for c in counts)
    padded = torch.cat([rows, rows.new_zeros((longest - len(rows), rows.shape[1]))])
    pieces = [rows.new_zeros((longest, rows.shape[1])) for _ in range(world)]
    dist.all_gather(pieces, padded)
    every = torch.cat([piece[: int(count)] for piece, count in zip(pieces, counts, strict=True)])
    return torch.unique(every, dim=0) if len(every) else every


def shard(model: nn.Module, sharded: bool) -> nn.Module:
    """``model`` sharded in place with FSDP2 over this run's ranks when ``sharded``: each block of a
    layer list (a transformer's layers) is a unit of its own, gathered for its forward and backward only,
    and the rest of the model one more, so a rank holds the whole of one block at a time."""
    if not sharded:
        return model
    from torch.distributed.device_mesh import init_device_mesh  # distributed-only imports: a replay needs none
    from torch.distributed.fsdp import FSDPModule, fully_shard

    if scalars := [name for name, p in model.named_parameters() if p.dim() == 0]:
        raise Unshardable(f"FSDP2 cannot shard 0-dimensional parameters ({', '.join(scalars[:3])}): use ddp")
    mesh = init_device_mesh("cpu", (position()[1],))
    blocks = [block for module in model.modules() if isinstance(module, nn.ModuleList) for block in module]
    for block in blocks:
        if any(p.numel() for p in block.parameters()):
            fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    for unit in model.modules():
        if isinstance(unit, FSDPModule):
            # Each rank's loss is already weighted by its share of the global batch: the ranks' gradients
            # are summed, not averaged (FSDP2's default), by a plain SUM (gloo has no pre-multiplied one).
            unit.set_gradient_divide_factor(1.0)
            unit.set_force_sum_reduction_for_comms(True)
    return model


def gathered(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``tensors`` with every sharded one gathered in full for the writer (rank 0); other ranks keep
    their shard. A collective, so every rank gathers in the order of the names (a dict's order may
    differ between ranks: one read from a file, for instance)."""
    from torch.distributed.tensor import DTensor

    out = dict(tensors)
    for name in sorted(tensors):
        tensor = tensors[name]
        if isinstance(tensor, DTensor):
            full = tensor.full_tensor()
            if is_writer():  # the others drop it at once: only rank 0 writes E_k
                out[name] = full
    return out


def placed_like(reference: torch.Tensor, full: torch.Tensor) -> torch.Tensor:
    """A copy of the full tensor ``full`` placed as ``reference`` is: this rank's shard of it when
    ``reference`` is sharded (no communication: every rank holds the full value)."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(reference, DTensor):  # the shard is split off as a copy, never a view of ``full``
        return distribute_tensor(full, reference.device_mesh, reference.placements, src_data_rank=None)
    return full.to(reference.device, copy=True)


@contextlib.contextmanager
def ranks(run: TrainRun, child: Callable[..., None], *args: Any) -> Iterator[None]:
    """Make this process rank 0 of ``run.profile.world_size`` ranks for the duration of the block; ranks
    1..N-1 run ``child(run, rank, port, parent_pid, *args)`` in child processes."""
    world = run.profile.world_size
    store = dist.TCPStore(_HOST, 0, world, is_master=True, wait_for_workers=False, timeout=COLLECTIVE_TIMEOUT)
    context = multiprocessing.get_context("spawn")  # fork would copy torch's thread pools and locks
    children: list[BaseProcess] = []
    try:
        for rank in range(1, world):
            children.append(
                context.Process(
                    target=child, args=(run, rank, store.port, os.getpid(), *args), name=f"rank {rank}", daemon=True
                )
            )
            children[-1].start()
        _await_check_in(store, children)
        with joined(run, 0, store):
            yield
    except BaseException as exc:
        failed = _stop(children)
        if isinstance(exc, Exception):
            raise RankFailed(f"the data-parallel run failed on {failed or 'rank 0'}: {exc}") from exc
        raise
    for process in children:
        process.join(timeout=COLLECTIVE_TIMEOUT.total_seconds())
    if failed := _stop(children):
        raise RankFailed(f"the data-parallel run failed on {failed}")


def child_joined(run: TrainRun, rank: int, port: int, parent: int) -> contextlib.AbstractContextManager[None]:
    """In a child: die with the parent, ignore Ctrl-C (the parent handles it), check in, join as ``rank``."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    store = dist.TCPStore(_HOST, port, run.profile.world_size, is_master=False, timeout=COLLECTIVE_TIMEOUT)
    store.set(f"checked-in/{rank}", "1")
    return joined(run, rank, store)


@contextlib.contextmanager
def joined(run: TrainRun, rank: int, store: dist.Store) -> Iterator[None]:
    """This process as ``rank`` of the run's process group, for the duration of the block."""
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=run.profile.world_size, timeout=COLLECTIVE_TIMEOUT
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def _await_check_in(store: dist.TCPStore, children: list[BaseProcess]) -> None:
    """Wait until every child checked in; fail at once if one exits first, or if one takes too long."""
    deadline = time.monotonic() + CHECK_IN_TIMEOUT
    keys = [f"checked-in/{rank}" for rank in range(1, len(children) + 1)]
    while not store.check(keys):
        if dead := [p.name for p in children if not p.is_alive()]:
            raise RankFailed(f"{', '.join(dead)} exited before joining the run")
        if time.monotonic() > deadline:
            raise RankFailed(f"the ranks did not check in within {CHECK_IN_TIMEOUT:g}s")
        time.sleep(0.05)


def _stop(children: list[BaseProcess]) -> str:
    """Stop every child; the ones that had failed on their own, as they read: "rank 1 (exit code 1)"."""
    deadline = time.monotonic() + EXIT_GRACE
    for process in children:  # a rank that raised is exiting already: let it report its own code
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    failed = ", ".join(f"{p.name} (exit code {p.exitcode})" for p in children if p.exitcode not in (0, None))
    for process in children:
        if process.is_alive():
            process.kill()
    for process in children:
        process.join(timeout=30)
    return failed
