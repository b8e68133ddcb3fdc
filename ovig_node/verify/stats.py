"""Percentile profiles of replay differences over every coordinate of a signal.

A signal (weights, optimizer state or probe gradient) is all tensors of one evidence section,
flattened and concatenated in name order. Its ``abs`` profile is the percentiles of
``|replay - claim|``, its ``rel`` profile of ``|replay - claim| / (|claim| + 1e-12)``. Percentiles are
exact (nearest rank: the value at index ``ceil(p/100 * n) - 1`` of the sorted values; p100 is the
maximum; NaN sorts last). :func:`percentiles` is that definition, written plainly; :func:`difference_profiles`
computes the same numbers without materialising or sorting the differences, in one compiled pass
(:mod:`ovig_node.verify.kernels`). A sample of the differences (coordinates spread evenly over the signal)
places a narrow bracket of values around each wanted rank; the pass counts the differences
under each bracket and copies out those inside, a few percent of the signal, which are then sorted. The
counts say whether each rank really lies in its bracket. If one does not (a sample unlike the rest of the
signal, or a bracket overfull), a slower pass that counts every difference into value bins answers
instead: the numbers never depend on the sample, only the time does. Differences are taken in float32
(float64 if the signal has a float64 tensor): a float32 difference is within half an ulp of the exact
one, far below any bound. ``bench/compare_cost.py`` times the comparison next to the replay it judges.
"""

from __future__ import annotations

import math
import sys
import threading

import numba
import numpy as np
import torch
from numba.typed import List

from ovig_node.training.optim import is_step_counter
from ovig_node.verify import kernels

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 100.0)
FLOORED_BELOW = 99.9  # the rounding floor raises the limits of lower percentiles only (:func:`rounding_floor`)
SIGNALS = ("weights", "optim", "probe")
SECTION_OF = {"weights": "model", "optim": "optim", "probe": "probe"}
REL_EPS = 1e-12
SAMPLE = 1 << 17  # differences sampled to place the brackets of the fast path
SPREAD = 4.0  # a bracket spans its rank in the sample +- SPREAD binomial standard deviations
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
    ranks = [_rank(p, n) for p in ps]
    with _KERNELS:
        return _bracketed(pairs, n, ranks) or _binned(pairs, n, ranks)


def magnitude_percentiles(tensors: dict[str, torch.Tensor], ps: tuple[float, ...] = PERCENTILES) -> list[float]:
    """Percentiles of ``|value|`` over every coordinate of a signal (the ``abs`` differences from zero)."""
    return difference_profiles({name: torch.zeros_like(t) for name, t in tensors.items()}, tensors, ps)["abs"]


def rounding_floor(
    tensors: dict[str, torch.Tensor], ulps: float, ps: tuple[float, ...] = PERCENTILES
) -> dict[str, list[float]]:
    """``{"abs": [...], "rel": [...]}``: what ``ulps`` units in the last place of the signal's values at each
    percentile of their magnitude are, as an absolute and as a relative difference; 0 at percentiles above
    ``FLOORED_BELOW``. Nearest-rank percentiles commute with the non-decreasing ``ulp(|x|)``, so the abs
    floor is also the percentile of every coordinate's own ``ulps`` ulps.

    Two things stay out, because an attacker could use them: the top percentiles, which cap single
    coordinates (their floor would be ulps of the *largest* values, far more than a small coordinate's
    rounding), and the optimizer's step counters (exact integers the structure check pins, as large as
    the step: in the magnitudes they would set the floor of the whole optimizer state)."""
    dtype = np.float64 if _compute_dtype(tensors) == torch.float64 else np.float32
    magnitudes = magnitude_percentiles({n: t for n, t in tensors.items() if not is_step_counter(n)}, ps)
    steps = [
        ulps * float(np.spacing(dtype(m))) if p < FLOORED_BELOW else 0.0 for m, p in zip(magnitudes, ps, strict=True)
    ]
    return {"abs": steps, "rel": [step / (m + REL_EPS) for step, m in zip(steps, magnitudes, strict=True)]}


def warm_up() -> threading.Thread:
    """Load the compiled passes (from numba's cache, or compiled) in a background thread, started now: a
    node judges against a window, and otherwise its first comparison pays for that (several seconds; 6-14 s
    when three nodes start judging at once on two busy cores). A comparison meanwhile waits for it."""
    size = 4 * kernels.BLOCK
    thread = threading.Thread(
        target=difference_profiles,
        args=({"w": torch.ones(size)}, {"w": torch.zeros(size)}),
        name="warm-up",
        daemon=True,
    )
    thread.start()
    return thread


def _sample(tensors: list[List], sizes: list[int], n: int) -> list[np.ndarray]:
    """Sorted ``abs`` and ``rel`` differences of ``SAMPLE`` coordinates spread evenly over the signal (the
    replayed and claimed ``tensors``). Single coordinates, not runs of neighbours: neighbours are alike (a
    row of embeddings no batch touched is all zeros), so a run counts as one draw and its brackets would be
    too narrow."""
    at = (np.arange(min(n, SAMPLE), dtype=np.int64) * n) // min(n, SAMPLE)
    offsets = np.cumsum([0, *sizes])
    tensor = np.searchsorted(offsets, at, side="right") - 1
    dtype = tensors[1][0].dtype
    d, q = np.empty(at.size, dtype), np.empty(at.size, dtype)
    threads = numba.get_num_threads()
    rs, cs = tensors  # replayed, claimed
    kernels.sample_differences(rs, cs, tensor, at - offsets[tensor], dtype.type(REL_EPS), d, q, threads)
    return [np.sort(d), np.sort(q)]


def _bracketed(pairs: list[tuple[np.ndarray, np.ndarray]], n: int, ranks: list[int]) -> dict[str, list[float]] | None:
    """The fast path: each wanted rank's value from the few differences inside a bracket a sample placed
    around it (:func:`kernels.bracket_pass`), or None if a bracket missed its rank."""
    if sys.byteorder != "little":  # the pass reads its marks as little-endian words
        return None
    dtype = pairs[0][1].dtype
    itype = np.int32 if dtype == np.float32 else np.int64
    tensors = [List([pair[side] for pair in pairs]) for side in (0, 1)]  # replayed, claimed
    sizes = [c.size for _, c in pairs]
    plans = [_Brackets(sample, ranks, n, itype) for sample in _sample(tensors, sizes, n)]
    if any(len(plan.lo) > kernels.BRACKETS for plan in plans):  # more percentiles than the pass tests
        return None
    threads = numba.get_num_threads()
    # room for twice the share the sample predicts: a signal whose brackets hold more falls back
    room = int(2 * max(plan.share for plan in plans) * n / threads) + 4 * kernels.BLOCK
    under = np.zeros((threads, 2, kernels.BRACKETS), np.int64)
    out = np.empty((2, threads, room), dtype)
    filled = np.zeros((threads, 2), np.int64)
    (lo_abs, hi_abs), (lo_rel, hi_rel) = (plan.bounds() for plan in plans)
    blocks = _blocks(sizes)
    rs, cs = tensors  # replayed, claimed
    kernels.bracket_pass(
        rs, cs, blocks, dtype.type(REL_EPS), itype, lo_abs, hi_abs, lo_rel, hi_rel, under, out[0], out[1], filled
    )
    if (filled[:, 0] < 0).any():
        return None
    found = [
        plan.values(np.concatenate([out[kind, t, : filled[t, kind]] for t in range(threads)]), under[:, kind].sum(0))
        for kind, plan in enumerate(plans)
    ]
    return None if found[0] is None or found[1] is None else {"abs": found[0], "rel": found[1]}


def _blocks(sizes: list[int]) -> np.ndarray:
    """(tensor, first index) of every block of ``kernels.BLOCK`` values of tensors of these sizes."""
    per = (np.array(sizes, np.int64) + kernels.BLOCK - 1) // kernels.BLOCK
    first_block = np.repeat(np.cumsum(per) - per, per)
    return np.stack([np.repeat(np.arange(len(sizes)), per), (np.arange(per.sum()) - first_block) * kernels.BLOCK], 1)


class _Brackets:
    """Disjoint brackets ``[lo, hi]`` of bit patterns that a sorted sample says hold the wanted ranks, each
    rank's bracket, and the values once the pass has counted and copied (None if a rank is outside)."""

    def __init__(self, sample: np.ndarray, ranks: list[int], n: int, itype: type) -> None:
        self.itype, self.ranks = itype, ranks
        self.inf = int(np.array(np.inf, sample.dtype).view(itype))
        bits: np.ndarray = sample.view(itype)
        m = bits.size
        wanted = []
        for r in ranks:
            p = (r + 0.5) / n
            half = SPREAD * math.sqrt(m * p * (1.0 - p)) + 2.0  # binomial spread of the rank in a sample
            low, high = math.floor(p * m - half), math.ceil(p * m + half)
            lo = int(bits[low]) if low >= 0 else 1
            hi = min(int(bits[high]) if high < m and r < n - 1 else self.inf, self.inf)  # a NaN -> +inf
            # lo >= 1: zeros are never copied; lo <= hi + 1: a bracket in the NaNs is empty above +inf
            wanted.append((min(max(lo, 1), hi + 1), hi))
        self.lo: list[int] = []
        self.hi: list[int] = []
        for lo, hi in sorted(wanted):
            if self.lo and lo <= self.hi[-1] + 1:
                self.hi[-1] = max(self.hi[-1], hi)
            else:
                self.lo.append(lo)
                self.hi.append(hi)
        self.span_of = [self._span(lo) for lo, _ in wanted]
        ends = self._ends(bits)  # the sample's values in each bracket
        self.share = (int((ends[:, 1] - ends[:, 0]).sum()) + 1) / m

    def _span(self, lo: int) -> int:
        return max(k for k, start in enumerate(self.lo) if start <= lo)

    def _ends(self, bits: np.ndarray) -> np.ndarray:
        """Per bracket, where its values start and end in the sorted patterns ``bits``."""
        edges: np.ndarray = np.array(
            [edge for lo, hi in zip(self.lo, self.hi, strict=True) for edge in (lo, hi + 1)], self.itype
        )
        return np.searchsorted(bits, edges).reshape(-1, 2)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``lo`` and ``hi`` as arrays of ``kernels.BRACKETS`` brackets: the last one repeated to fill
        (a repeat marks nothing new, and its counts are not read)."""
        pad = kernels.BRACKETS - len(self.lo)
        return (np.array(self.lo + self.lo[-1:] * pad, self.itype), np.array(self.hi + self.hi[-1:] * pad, self.itype))

    def values(self, copied: np.ndarray, under: np.ndarray) -> list[float] | None:
        """The ranks' values from the pass's output: the values inside the brackets (in any order) and,
        per bracket, how many values lie under it."""
        copied.sort()  # a vectorised sort, as fast as a partition at a few ranks
        ends = self._ends(copied.view(self.itype))
        first, inside = ends[:, 0], ends[:, 1] - ends[:, 0]
        result = []
        for r, k in zip(self.ranks, self.span_of, strict=True):
            below = int(under[k])
            if below <= r < below + inside[k]:
                result.append(float(copied[first[k] + r - below]))
            elif r < below and self.lo[k] == 1:  # under a bracket that starts at the smallest float: zeros
                result.append(0.0)
            elif r >= below + inside[k] and self.hi[k] == self.inf:  # above +inf: NaN
                result.append(math.nan)
            else:
                return None
        return result


def _binned(pairs: list[tuple[np.ndarray, np.ndarray]], n: int, ranks: list[int]) -> dict[str, list[float]]:
    """The fallback, exact whatever the data: every difference counted into value bins, then only the
    wanted bins' values copied (:func:`kernels.count_bins`, :func:`kernels.copy_bins`)."""
    np_dtype = pairs[0][1].dtype
    layout = (np_dtype.type(REL_EPS), *kernels.key_layout(np_dtype))
    threads = numba.get_num_threads()
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
        keys_abs, keys_rel = (k[at : at + c.size] for k in keys)
        kernels.copy_bins(r, c, layout[0], keys_abs, keys_rel, plans[0].wanted, plans[1].wanted, out[0], out[1], cursor)
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
