"""Percentile profiles of replay differences over every coordinate of a signal.

A signal (weights, optimizer state or probe gradient) is all tensors of one evidence section,
flattened and concatenated in name order. Its ``abs`` profile is the percentiles of
``|replay - claim|``, its ``rel`` profile of ``|replay - claim| / (|claim| + 1e-12)``. Percentiles are
exact (nearest rank: the value at index ``ceil(p/100 * n) - 1`` of the sorted values; p100 is the
maximum), found with one linear-time ``numpy.partition`` for all percentiles at once, so checking every
coordinate stays cheap next to the replay.
"""

from __future__ import annotations

import math

import numpy as np
import torch

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 100.0)
SIGNALS = ("weights", "optim", "probe")
SECTION_OF = {"weights": "model", "optim": "optim", "probe": "probe"}
REL_EPS = 1e-12


def flatten(tensors: dict[str, torch.Tensor]) -> np.ndarray:
    """Every coordinate of ``tensors`` (name order) as one float64 vector."""
    if not tensors:
        return np.zeros(0, dtype=np.float64)
    return np.concatenate([tensors[name].detach().double().reshape(-1).cpu().numpy() for name in sorted(tensors)])


def percentiles(values: np.ndarray, ps: tuple[float, ...] = PERCENTILES) -> list[float]:
    """Exact nearest-rank percentiles of ``values`` (all 0.0 for an empty signal)."""
    n = values.size
    if n == 0:
        return [0.0] * len(ps)
    ranks = sorted({max(0, math.ceil(p / 100.0 * n) - 1) for p in ps})
    parted = np.partition(values, ranks)
    return [float(parted[max(0, math.ceil(p / 100.0 * n) - 1)]) for p in ps]


def difference_profiles(
    replay: dict[str, torch.Tensor], claim: dict[str, torch.Tensor], ps: tuple[float, ...] = PERCENTILES
) -> dict[str, list[float]]:
    """``{"abs": [...], "rel": [...]}`` percentile profiles of one signal."""
    r, c = flatten(replay), flatten(claim)
    diff = np.abs(r - c)
    rel = diff / (np.abs(c) + REL_EPS)
    return {"abs": percentiles(diff, ps), "rel": percentiles(rel, ps)}
