"""Data-parallel training over several processes of one machine (profiles ``ddp2``, ``ddp4``).

A provider with N accelerators trains data-parallel: N ranks, each holding the whole model. Every rank
draws the step's whole batch from (seed, step), as one process would (protocol section 2.2), and trains
on its contiguous share; each share's gradient is weighted by its share of the *global* batch and the
shares are summed by an all-reduce, so the global batch, and so the mathematics, are one process's: only
the order of the sums differs, which makes a world size one more honest execution profile. The optimizer
runs on every rank on identical gradients (an all-reduce hands every rank the same bits), so the ranks
stay identical; rank 0 writes ``E_k`` atomically while the others wait at a barrier, and the evidence
format is unchanged: a one-process replay judges it.

The process that calls :func:`ovig_node.training.loop.train` becomes rank 0 (its progress callback, its
attack, its result), and starts ranks 1..N-1 as child processes that run the same ``train``. The backend
is gloo on a CPU (NCCL on CUDA), rendezvous on a free loopback port. A child dies with its parent (Linux's
parent-death signal), so killing the parent, even with SIGKILL, leaves no orphan; a rank that dies makes
the run fail in one line naming it. Evidence on disk is the only state, so a killed run resumes as one
process's does, bit for bit.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import multiprocessing
import signal
import socket
from collections.abc import Callable, Iterator
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from ovig_node.errors import OvigError

if TYPE_CHECKING:
    from ovig_node.training.loop import TrainRun

# A collective that waits longer than this on a peer fails instead of hanging: a rank stuck on a step
# for minutes is as good as dead.
COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=10)
_PR_SET_PDEATHSIG = 1


class RankFailed(OvigError, RuntimeError):
    """A rank of a data-parallel run died or raised; the others were stopped."""


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


@contextlib.contextmanager
def ranks(run: TrainRun, child: Callable[..., None], *args: Any) -> Iterator[None]:
    """Make this process rank 0 of ``run.profile.world_size`` ranks for the duration of the block; ranks
    1..N-1 run ``child(run, rank, port, *args)`` in child processes."""
    world = run.profile.world_size
    port = _loopback_port()
    context = multiprocessing.get_context("spawn")  # fork would copy torch's thread pools and locks
    children: list[BaseProcess] = [context.Process(target=child, args=(run, rank, port, *args), name=f"rank {rank}",
                                                   daemon=True) for rank in range(1, world)]  # fmt: skip
    for process in children:
        process.start()
    try:
        with joined(run, 0, port):
            yield
    except Exception as exc:
        _stop(children)
        raise RankFailed(f"the data-parallel run failed on {_failed(children) or 'rank 0'}: {exc}") from exc
    for process in children:
        process.join()
    if failed := _failed(children):
        raise RankFailed(f"the data-parallel run failed on {failed}")


@contextlib.contextmanager
def joined(run: TrainRun, rank: int, port: int) -> Iterator[None]:
    """This process as ``rank`` of the run's process group, for the duration of the block."""
    backend = "nccl" if run.profile.device == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=run.profile.world_size, timeout=COLLECTIVE_TIMEOUT)  # fmt: skip
    try:
        yield
    finally:
        dist.destroy_process_group()


def die_with_parent() -> None:
    """Ask Linux to send this process SIGKILL when its parent dies (a killed trainer leaves no rank behind)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _loopback_port() -> int:
    """A loopback port nobody listens on now, for the ranks' rendezvous (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(children: list[BaseProcess]) -> None:
    for process in children:
        if process.is_alive():
            process.kill()
    for process in children:
        process.join(timeout=30)


def _failed(children: list[BaseProcess]) -> str:
    """The ranks that exited with an error, as they read: "rank 1 (exit code 1)"."""
    return ", ".join(f"{p.name} (exit code {p.exitcode})" for p in children if p.exitcode not in (0, None))
