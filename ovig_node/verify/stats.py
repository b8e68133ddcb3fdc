"""Percentile profiles of replay differences over every coordinate of a signal.

A signal (weights, optimizer state or probe gradient) is all tensors of one evidence section,
flattened and concatenated in name order. Its ``abs`` profile is the percentiles of
``|replay - claim|``, its ``rel`` profile of ``|replay - claim| / (|claim| + 1e-12)``. Percentiles are
exact (nearest rank: the value at index ``ceil(p/100 * n) - 1`` of the sorted values; p100 is the
maximum; NaN sorts last). :func:`percentiles` is that definition, written plainly; :func:`difference_profiles`
computes the same numbers without materialising or sorting the differences: one compiled pass counts
every difference into value bins, which names the bin of each wanted rank and its rank inside it, and a
second pass copies out only those bins' values, a few percent of the signal at most, to partition
(:mod:`ovig_node.verify.kernels`). Differences are taken in float32 (float64 if the signal has a float64
tensor): a float32 difference is within half an ulp of the exact one, far below any bound. On the
22M-parameter language model the whole comparison costs well under a second (``bench/compare_cost.py``).
"""

from __future__ import annotations

import math
import threading

import numba
import numpy as np
import torch

from ovig_node.verify import kernels

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 100.0)
SIGNALS = ("weights", "optim", "probe")
SECTION_OF = {"weights": "model", "optim": "optim", "probe": "probe"}
REL_EPS = 1e-12
_KERNELS = threading.Lock()  # one comparison at a time uses the compiled passes' thread pool and key buffer
_keys = np.empty((2, 0), np.uint16)  # the bin keys of the last comparison, reused under _KERNELS


def _key_buffers(n: int) -> np.ndarray:
    """Two uint16 vectors of length ``n``. Reused from one comparison to the next: a fresh 2n-key
    buffer costs its page faults on first write, about a quarter of a large signal's first pass."""
    global _keys
    if _keys.shape[1] < n:
        _keys = np.empty((2, n), np.uint16)
    return _keys[:, :n]


def flatten(tensors: dict[str, torch.Tensor]) -> np.ndarray:
    """Every coordinate of ``tensors`` (name order) as one float64 vector."""
    if not tensors:
        return np.zeros(0, dtype=np.float64)
    return np.concatenate([tensors[name].detach().double().reshape(-1).cpu().numpy() for name in sorted(tensors)])


def _compute_dtype(*signals: dict[str, torch.Tensor]) -> torch.dtype:
    wide = any(t.dtype == torch.float64 for tensors in signals for t in tensors.values())
    return torch.float64 if wide else torch.float32


def percentiles(values: np.ndarray, ps: tuple[float, ...] = PERCENTILES) -> list[float]:
    """Exact nearest-rank percentiles of non-negative ``values`` (all 0.0 when empty): the definition."""
    n = values.size
    if n == 0:
        return [0.0] * len(ps)
    ranks = [_rank(p, n) for p in ps]
    ordered = np.partition(values, sorted(set(ranks)))  # NaN sorts last
    return [float(ordered[r]) for r in ranks]


def _rank(p: float, n: int) -> int:
    return max(0, math.ceil(p / 100.0 * n) - 1)


def difference_profiles(
    replay: dict[str, torch.Tensor], claim: dict[str, torch.Tensor], ps: tuple[float, ...] = PERCENTILES
) -> dict[str, list[float]]:
    """``{"abs": [...], "rel": [...]}`` percentile profiles of one signal (same tensor names on both sides)."""
    dtype = _compute_dtype(replay, claim)
    pairs = [(_vector(replay[name], dtype), _vector(claim[name], dtype)) for name in sorted(claim)]
    n = sum(c.size for _, c in pairs)
    if n == 0:
        return {"abs": [0.0] * len(ps), "rel": [0.0] * len(ps)}
    np_dtype = pairs[0][1].dtype
    layout = (np_dtype.type(REL_EPS), *kernels.key_layout(np_dtype))
    threads = numba.get_num_threads()
    ranks = [_rank(p, n) for p in ps]
    with _KERNELS:
        # int32 keeps each thread's table in cache; a thread counts less than 2^31 values of one signal
        counts = [np.zeros((threads, kernels.BINS), np.int32) for _ in range(2)]
        keys = _key_buffers(n)
        offsets = np.cumsum([0] + [c.size for _, c in pairs]).tolist()
        for (r, c), at in zip(pairs, offsets, strict=False):
            kernels.count_bins(r, c, *layout, *counts, *(k[at : at + c.size] for k in keys))
        plans = [_Plan(hist, ranks) for hist in counts]
        out = [np.empty(plan.copied, np_dtype) for plan in plans]
        cursor = np.stack([plan.offsets for plan in plans], axis=1)
        for (r, c), at in zip(pairs, offsets, strict=False):
            tensor_keys = (k[at : at + c.size] for k in keys)
            kernels.copy_bins(r, c, layout[0], *tensor_keys, plans[0].wanted, plans[1].wanted, *out, cursor)
    return {"abs": plans[0].values(out[0]), "rel": plans[1].values(out[1])}


def _vector(tensor: torch.Tensor, dtype: torch.dtype) -> np.ndarray:
    return tensor.detach().reshape(-1).cpu().to(dtype).numpy()


class _Plan:
    """Where each wanted rank lies, from the per-thread bin counts: its bin and its rank in that bin."""

    def __init__(self, hist: np.ndarray, ranks: list[int]) -> None:
        total = hist.sum(axis=0, dtype=np.int64)
        below = np.cumsum(total) - total  # values in lower bins
        self.bins = [int(np.searchsorted(below + total, r, side="right")) for r in ranks]
        self.inside = [r - int(below[b]) for r, b in zip(ranks, self.bins, strict=True)]
        self.wanted = np.zeros(kernels.BINS, np.bool_)
        self.wanted[[b for b in self.bins if b != 0]] = True  # bin 0 is exact zeros: nothing to copy
        per_thread = hist[:, self.wanted].sum(axis=1, dtype=np.int64)
        self.offsets = np.cumsum(per_thread) - per_thread
        self.copied = int(per_thread.sum())
        copied = np.flatnonzero(self.wanted)
        # the copied values in sorted order are the wanted bins' values, bin after bin
        first = np.cumsum(total[copied]) - total[copied]
        self.start = dict(zip(copied.tolist(), first.tolist(), strict=True))

    def values(self, copied: np.ndarray) -> list[float]:
        """The wanted ranks' values from the copied bins (in any order: partitioning sorts them by bin)."""
        at = [self.start[b] + i for b, i in zip(self.bins, self.inside, strict=True) if b != 0]
        if at:
            copied.partition(sorted(set(at)))
        return [
            0.0 if b == 0 else float(copied[self.start[b] + i]) for b, i in zip(self.bins, self.inside, strict=True)
        ]
