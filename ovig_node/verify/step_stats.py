"""Judging the statistics of every step (``stats/`` of E_k, :mod:`ovig_node.training.statistics`).

Each statistic is compared over the interval's steps in the one kind that bounds it: the loss, the gradient's
norm and the update's norm by the relative difference ``|replay - claim| / (|claim| + 1e-12)`` (positive
numbers at training's own scale), the cosine by the absolute difference (it sits near zero as often as not,
where a relative difference has no bound). An interval has only s values of each, so percentiles would all
be their maximum: the boundary holds one number per statistic, the largest honest difference calibration
saw, and a claim passes while each is at most ``max(alpha x bound, floor)``. The floor is ``floor_ulps``
float32 ulps at one: what rounding once to float32 moves a value by, relatively (the cosine's, absolutely),
so statistics that calibration's profiles happened to reproduce exactly still leave room for hardware that
rounds them apart.
"""

from __future__ import annotations

import torch

from ovig_node.training.statistics import STATISTICS
from ovig_node.verify.stats import REL_EPS

KIND = {"loss": "rel", "grad_norm": "rel", "update_norm": "rel", "grad_cosine": "abs"}
ULP_AT_ONE = 2.0**-23  # a float32 ulp in [1, 2)
assert tuple(KIND) == STATISTICS


def differences(replay: dict[str, torch.Tensor], claim: dict[str, torch.Tensor]) -> dict[str, float]:
    """Per statistic, the largest difference of ``claim`` from ``replay`` over the interval's steps (NaN if a
    claimed value is NaN). Both hold every statistic with one shape: the layout checked that first."""
    largest = {}
    for name, kind in KIND.items():
        mine, theirs = replay[name].double(), claim[name].double()
        gap = (theirs - mine).abs()
        if kind == "rel":
            gap = gap / (theirs.abs() + REL_EPS)
        largest[name] = float(gap.max()) if gap.numel() else 0.0  # torch's max keeps a NaN
    return largest


def rows(
    differences: dict[str, float], bounds: dict[str, float], *, alpha: float, floor_ulps: float, band: float
) -> dict[str, dict[str, list[dict[str, object]]]]:
    """The report's rows (``stats/<name>`` -> kind -> one row at p100) of each statistic against its limit; a
    failing one is ``decisive`` beyond its near-tie band (``band`` times the bound or the floor, whichever is
    larger, above the limit)."""
    out: dict[str, dict[str, list[dict[str, object]]]] = {}
    for name, kind in KIND.items():
        value, bound, floor = differences[name], bounds[name], floor_ulps * ULP_AT_ONE
        limit = max(alpha * bound, floor)
        row: dict[str, object] = {
            "p": 100.0,
            "value": value,
            "bound": bound,
            "floor": floor,
            "limit": limit,
            "ok": value <= limit,
        }
        if not row["ok"]:
            row["decisive"] = not value <= limit + band * max(bound, floor)
        out[f"stats/{name}"] = {kind: [row]}
    return out
