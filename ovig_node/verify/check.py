"""The verdict on one interval (protocol section 5, steps 3 and 4).

Structure first: the claimed end must have exactly the replay's tensor names, shapes and dtypes, the
right metadata, and step counters equal to ``b_k`` (the start's equal to ``b_{k-1}``); anything else is
faulty with its reason. Then every signal, kind and percentile of the differences must be within
``alpha * bound``. The report lists each value against its bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ovig_node.training.evidence import Evidence
from ovig_node.training.optim import step_counters
from ovig_node.verify.boundary import BoundaryProfile
from ovig_node.verify.stats import SECTION_OF, SIGNALS, difference_profiles

VALID = "valid"
FAULTY = "faulty"


@dataclass
class Verdict:
    verdict: str  # "valid" or "faulty"
    reason: str  # "within_bounds", "out_of_bounds", "wrong_names", "wrong_shape", "wrong_dtype", ...
    detail: str = ""
    signals: dict[str, Any] = field(default_factory=dict)  # signal -> kind -> [{p, value, bound, limit, ok}]
    # log10 of the largest value / limit over rows with a positive limit and value (> 0: outside the
    # boundary by that factor); None when there is no such row. A row whose limit is 0 fails on any
    # positive value, but has no finite ratio, so it shows in ``signals`` and not here.
    margin: float | None = None

    @property
    def valid(self) -> bool:
        return self.verdict == VALID

    @property
    def failing(self) -> list[str]:
        """The signals with a value outside its limit."""
        return [name for name, kinds in self.signals.items()
                if any(not row["ok"] for rows in kinds.values() for row in rows)]  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def judge(
    claimed_end: Evidence,
    replayed_end: Evidence,
    boundary: BoundaryProfile,
    *,
    expected_metadata: dict[str, str],
    claimed_start: Evidence | None = None,
    start_step: int = 0,
    signals: Sequence[str] = SIGNALS,
    profiles_seen: dict[str, dict[str, list[float]]] | None = None,
) -> Verdict:
    """Compare a claimed endpoint with an honest replay of it, on ``signals`` (a subset only for
    ablations: the protocol judges all three). ``profiles_seen`` keeps each signal's percentile profiles
    across calls on the same pair of endpoints, so ablations judge each signal's differences once."""
    if (problem := structure_problem(claimed_end, replayed_end, expected_metadata)) is not None:
        return Verdict(FAULTY, *problem)
    if claimed_start is not None and (bad := _counters(claimed_start, start_step)) is not None:
        return Verdict(FAULTY, "wrong_counter", f"start evidence: {bad}")
    rows: dict[str, Any] = {}
    worst: float | None = None
    ok_all = True
    for signal in signals:
        section = SECTION_OF[signal]
        seen = profiles_seen if profiles_seen is not None else {}
        if signal not in seen:
            seen[signal] = difference_profiles(getattr(replayed_end, section), getattr(claimed_end, section))
        profiles = seen[signal]
        rows[signal] = {}
        for kind in ("abs", "rel"):
            checked = []
            for i, p in enumerate(boundary.percentiles):
                value, limit = profiles[kind][i], boundary.limit(signal, kind, i)
                ok = value <= limit
                ok_all &= ok
                if value > 0.0 and limit > 0.0:
                    ratio = math.log10(value / limit)
                    worst = ratio if worst is None else max(worst, ratio)
                checked.append({"p": p, "value": value, "bound": getattr(boundary.signals[signal], kind)[i],
                                "limit": limit, "ok": ok})  # fmt: skip
            rows[signal][kind] = checked
    if ok_all:
        return Verdict(VALID, "within_bounds", signals=rows, margin=worst)
    return Verdict(FAULTY, "out_of_bounds", signals=rows, margin=worst)


def structure_problem(claim: Evidence, replay: Evidence, expected_metadata: dict[str, str]) -> tuple[str, str] | None:
    """(reason, detail) of the first structural difference, or None."""
    for section in ("model", "optim", "probe"):
        mine, theirs = getattr(replay, section), getattr(claim, section)
        if set(mine) != set(theirs):
            missing, extra = sorted(set(mine) - set(theirs)), sorted(set(theirs) - set(mine))
            return "wrong_names", f"{section}: missing {missing[:5]}, unexpected {extra[:5]}"
        for name, tensor in mine.items():
            if tuple(theirs[name].shape) != tuple(tensor.shape):
                return "wrong_shape", f"{section}/{name}: {tuple(theirs[name].shape)}, expected {tuple(tensor.shape)}"
            if theirs[name].dtype != tensor.dtype:
                return "wrong_dtype", f"{section}/{name}: {theirs[name].dtype}, expected {tensor.dtype}"
    if claim.metadata != expected_metadata:
        return "wrong_metadata", f"{claim.metadata}, expected {expected_metadata}"
    if (bad := _counters(claim, int(expected_metadata["step"]))) is not None:
        return "wrong_counter", bad
    return None


def _counters(evidence: Evidence, step: int) -> str | None:
    wrong = {name: value for name, value in step_counters(evidence.optim).items() if value != step}
    return f"step counters {wrong} differ from {step}" if wrong else None
