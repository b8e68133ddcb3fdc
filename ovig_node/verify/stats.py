"""Percentile profiles of replay differences over every coordinate of a signal.

A signal (weights, optimizer state or probe gradient) is all tensors of one evidence section,
flattened and concatenated in name order. Its ``abs`` profile is the percentiles of
``|replay - claim|``, its ``rel`` profile of ``|replay - claim| / (|claim| + 1e-12)``. Percentiles are
exact (nearest rank: the value at index ``ceil(p/100 * n) - 1`` of the sorted values; p100 is the
maximum), found with one linear-time ``numpy.partition`` for all percentiles at once. Two shortcuts keep
checking every coordinate cheap next to the replay without giving up exactness: percentiles that fall
among exact zeros (an honest replay leaves about half the coordinates bit-identical) are 0, and the
others are selected among the values at or above a threshold that a systematic sample places just
below the lowest of them, a threshold checked by counting, with a full partition when it fails.
Differences are taken in float32 (float64 if the signal has a float64 tensor): a float32 difference is
within half an ulp of the exact one, far below any bound, and half the memory traffic of float64 keeps
the comparison of a 22M-parameter model's evidence to seconds (``bench/compare_cost.py``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 100.0)
SIGNALS = ("weights", "optim", "probe")
SECTION_OF = {"weights": "model", "optim": "optim", "probe": "probe"}
REL_EPS = 1e-12
SAMPLE = 1 << 16  # values in the systematic sample that places the selection threshold
SLACK = 0.005  # the threshold aims this share of ranks below the lowest wanted one


def flatten(tensors: dict[str, torch.Tensor]) -> np.ndarray:
    """Every coordinate of ``tensors`` (name order) as one float64 vector."""
    if not tensors:
        return np.zeros(0, dtype=np.float64)
    return np.concatenate([tensors[name].detach().double().reshape(-1).cpu().numpy() for name in sorted(tensors)])


def _compute_dtype(*signals: dict[str, torch.Tensor]) -> torch.dtype:
    wide = any(t.dtype == torch.float64 for tensors in signals for t in tensors.values())
    return torch.float64 if wide else torch.float32


def percentiles(values: np.ndarray, ps: tuple[float, ...] = PERCENTILES, *, in_place: bool = False) -> list[float]:
    """Exact nearest-rank percentiles of non-negative ``values`` (all 0.0 for an empty signal); ``in_place``
    may reorder ``values`` instead of copying them (a signal's differences are hundreds of MB)."""
    n = values.size
    if n == 0:
        return [0.0] * len(ps)
    ranks = [max(0, math.ceil(p / 100.0 * n) - 1) for p in ps]
    # Honest replays leave about half the coordinates bit-identical, so the lowest ranks are usually 0.
    zeros = n - np.count_nonzero(values)
    wanted = sorted({r for r in ranks if r >= zeros})
    if not wanted:
        return [0.0] * len(ps)
    found = _select_above(values, wanted) or _select_nonzero(values, wanted, zeros, in_place)
    return [0.0 if r < zeros else found[r] for r in ranks]


def _select_above(values: np.ndarray, wanted: list[int]) -> dict[int, float] | None:
    """The values at ranks ``wanted`` by partitioning only those at or above a threshold placed, from a
    systematic sample, just below the lowest wanted rank; None when the sample misled (or NaN, which no
    comparison selects, is present): the caller then partitions everything."""
    n = values.size
    if n < 4 * SAMPLE or np.isnan(values.max()):
        return None
    sample = np.sort(values[:: n // SAMPLE])
    threshold = sample[max(0, int((wanted[0] / n - SLACK) * sample.size))]
    if threshold <= 0:
        return None
    chosen = values >= threshold
    below = n - np.count_nonzero(chosen)
    if below > wanted[0]:  # the threshold landed above a wanted rank: not usable
        return None
    above = values[chosen]
    above.partition([r - below for r in wanted])
    return {r: float(above[r - below]) for r in wanted}


def _select_nonzero(values: np.ndarray, wanted: list[int], zeros: int, in_place: bool) -> dict[int, float]:
    rest = values[values != 0] if zeros else (values if in_place else values.copy())  # NaN sorts last
    rest.partition([r - zeros for r in wanted])
    return {r: float(rest[r - zeros]) for r in wanted}


def difference_profiles(
    replay: dict[str, torch.Tensor], claim: dict[str, torch.Tensor], ps: tuple[float, ...] = PERCENTILES
) -> dict[str, list[float]]:
    """``{"abs": [...], "rel": [...]}`` percentile profiles of one signal (same tensor names on both sides)."""
    dtype = _compute_dtype(replay, claim)
    names = sorted(claim)
    size = sum(claim[name].numel() for name in names)
    # Both profiles are written tensor by tensor into two arrays: no flattened copies of either side.
    diff = np.empty(size, dtype=np.float64 if dtype == torch.float64 else np.float32)
    rel = np.empty_like(diff)
    offset = 0
    for name in names:
        r, c = (t[name].detach().reshape(-1).cpu().to(dtype).numpy() for t in (replay, claim))
        d, q = diff[offset : offset + c.size], rel[offset : offset + c.size]
        np.abs(np.subtract(r, c, out=d), out=d)
        np.divide(d, np.add(np.abs(c, out=q), REL_EPS, out=q), out=q)
        offset += c.size
    return {"abs": percentiles(diff, ps, in_place=True), "rel": percentiles(rel, ps, in_place=True)}
