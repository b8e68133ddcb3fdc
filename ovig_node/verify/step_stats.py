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


def shrunk_differences(
    replay: dict[str, torch.Tensor], claim: dict[str, torch.Tensor], bounds: dict[str, float], *, floor_ulps: float
) -> dict[str, float]:
    """Per statistic, its largest difference with every step's shrunk by what two honest replays can differ by
    there: twice its bound or floor (the cosine's absolutely; the others' relatively to the honest value,
    ``2 s |replay| / (1 - s)``, divided as always by the claim's magnitude, which the attacker picks: review 15).
    A claim any honest replay passes on a statistic is within its limit here."""
    largest = {}
    for name, kind in KIND.items():
        mine, theirs = replay[name].double(), claim[name].double()
        s = max(bounds[name], floor_ulps * ULP_AT_ONE)
        if kind == "abs":
            gap = ((theirs - mine).abs() - 2 * s).clamp(min=0.0)
        elif s >= 1.0:  # honest replays may differ by their own size: nothing is decisive
            gap = torch.zeros_like(theirs)
        else:
            gap = ((theirs - mine).abs() - 2 * s * mine.abs() / (1 - s)).clamp(min=0.0) / (theirs.abs() + REL_EPS)
        largest[name] = float(gap.max()) if gap.numel() else 0.0  # torch's max keeps a NaN
    return largest


def rows(
    differences: dict[str, float],
    bounds: dict[str, float],
    *,
    alpha: float,
    floor_ulps: float,
    band: float,
    rounding: float,
    shrunk: dict[str, float] | None = None,
) -> dict[str, dict[str, list[dict[str, object]]]]:
    """The report's rows (``stats/<name>`` -> kind -> one row at p100) of each statistic against its limit; a
    failing one is ``decisive`` if its ``shrunk`` difference (:func:`shrunk_differences`) exceeds its limit, or
    without one, beyond ``band`` times the bound or the floor, whichever is larger, above the limit (each
    threshold ``rounding`` times larger)."""
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
        if not row["ok"] and shrunk is not None:
            row["decisive"] = not shrunk[name] <= limit * rounding
        elif not row["ok"]:
            row["decisive"] = not value <= (limit + band * max(bound, floor)) * rounding
        out[f"stats/{name}"] = {kind: [row]}
    return out
