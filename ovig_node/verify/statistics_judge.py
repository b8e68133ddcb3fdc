"""Layer one (protocol section 8.2): how anomalous each interval's statistics are, opened or not.

A batch manifest carries the statistics of every step of every interval (loss, gradient norm, update norm,
consecutive-gradient cosine: :mod:`ovig_node.training.statistics`). A watcher replays only what is opened;
layer one looks at everything else, the way SciCheck's first layer does: it compares each interval's claimed
statistics with an honest **reference run** of the same task (the owner's calibration run, trained on the
owner's hardware: same spec, seed and data, so the same steps) and scores how far the claim departs.

Honest runs on different hardware drift apart slowly and smoothly; an interval that cheats (dropped data,
a tampered rate or optimizer, a backdoor batch) departs at once. So an interval's score is not its distance
from the reference but how much that distance **jumps**: per statistic, the largest departure over the
interval's steps (relative for the loss and norms, absolute for the cosine, as in
:mod:`ovig_node.verify.step_stats`) over the largest departure of any earlier interval (at least ``floor``),
and the interval's score is the largest of the four. A cheat at interval k raises k's departure; the honest
intervals after it start from its end and carry the raised departure forward, so they do not score high
themselves: the first anomalous interval is the one to open.

What it cannot do: a provider who publishes statistics that look honest (the real ones of an honest run it
trained beside its cheat, or values shaped like the reference's drift) passes layer one, and is left to
sampling and to the replay of what is opened (where forged statistics are themselves faulty). The reference
is therefore the owner's to give to its watchers, never published: a published one would be the template.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ovig_node.errors import OvigError
from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.spec import TaskSpec, training_hash
from ovig_node.training.evidence import read_statistics
from ovig_node.training.loop import evidence_path
from ovig_node.training.statistics import STATISTICS
from ovig_node.verify.stats import REL_EPS
from ovig_node.verify.step_stats import KIND

REFERENCE_VERSION = 1
# Departures below these count as no departure: an honest run on the reference's own hardware departs by 0,
# so without a floor the first rounding difference anywhere would be an infinite jump.
FLOOR = {"rel": 1e-3, "abs": 1e-3}
# A score above this is anomalous: the watcher asks for the interval's opening. What it flags, honest and
# attacked, is measured by `bench/eval.py --layer-one` (docs/layer-one.md), not assumed; a watcher may set its own.
THRESHOLD = 4.0


class NotAReference(OvigError, ValueError):
    """A reference file that is not one this module wrote, or not of this task's layout."""


@dataclass(frozen=True)
class Reference:
    """An honest run's statistics of every step, from step 0 (name -> float64 values), and the hex
    ``training_hash`` of the spec it ran: a reference judges only tasks that train the same."""

    training_hash: str
    values: dict[str, np.ndarray]

    @property
    def steps(self) -> int:
        return len(self.values[STATISTICS[0]])

    def at(self, start: int, steps: int) -> dict[str, np.ndarray] | None:
        """The reference's values over steps [start, start + steps), or None where it does not reach."""
        if start + steps > self.steps:
            return None
        return {name: values[start : start + steps] for name, values in self.values.items()}

    def to_json(self) -> bytes:
        values = {name: v.tolist() for name, v in self.values.items()}
        doc = {"version": REFERENCE_VERSION, "training_hash": self.training_hash, "statistics": values}
        return json.dumps(doc).encode()

    @classmethod
    def from_json(cls, raw: bytes | str) -> Reference:
        try:
            doc = json.loads(raw)
            values = {name: np.asarray(doc["statistics"][name], dtype=np.float64) for name in STATISTICS}
            training = doc["training_hash"]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise NotAReference(f"not a statistics reference: {type(exc).__name__}: {exc}") from None
        shapes = {v.shape for v in values.values()}
        if doc.get("version") != REFERENCE_VERSION or not isinstance(training, str) or len(shapes) != 1:
            raise NotAReference("not a statistics reference: wrong version or training hash, or unequal lengths")
        if len(next(iter(shapes))) != 1:
            raise NotAReference("not a statistics reference: values are not one per step")
        return cls(training, values)

    @classmethod
    def from_claims(cls, folder: Path, spec: TaskSpec) -> Reference:
        """The statistics of the honest claims in ``folder``, intervals 0, 1, ... as far as they are trained."""
        pieces: dict[str, list[float]] = {name: [] for name in STATISTICS}
        k = 0
        layout = spec.layout
        while k < layout.intervals and evidence_path(folder, k).is_file():
            stats = read_statistics(evidence_path(folder, k), layout.steps(k))
            for name in STATISTICS:
                pieces[name].extend(stats[name])
            k += 1
        return cls(training_hash(spec).hex(), {name: np.asarray(v, dtype=np.float64) for name, v in pieces.items()})


def departures(claimed: Mapping[str, Sequence[float]], reference: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Per statistic, the largest departure of the claim from the reference over the interval's steps (inf
    for a claimed NaN or infinity: no honest run claims one)."""
    out = {}
    for name, kind in KIND.items():
        mine, theirs = np.asarray(claimed[name], dtype=np.float64), reference[name]
        gap = np.abs(mine - theirs)
        if kind == "rel":
            gap = gap / (np.abs(theirs) + REL_EPS)
        out[name] = float(np.max(gap)) if gap.size else 0.0
        if not math.isfinite(out[name]):
            out[name] = math.inf
    return out


def scores(
    claimed: Mapping[int, Mapping[str, Sequence[float]]], reference: Reference, layout: Layout
) -> dict[int, float]:
    """Layer one's score of every interval in ``claimed`` (k -> its statistics) that the reference reaches:
    the largest, over statistics, of its departure over the largest departure of the earlier intervals in
    ``claimed`` (at least FLOOR). Intervals are taken in order; a missing one leaves the baseline as it was."""
    baseline = {name: FLOOR[kind] for name, kind in KIND.items()}
    out: dict[int, float] = {}
    for k in sorted(claimed):
        ref = reference.at(layout.start_step(k), layout.steps(k))
        if ref is None:
            continue
        gone = departures(claimed[k], ref)
        out[k] = max(gone[name] / baseline[name] for name in STATISTICS)
        for name in STATISTICS:
            if math.isfinite(gone[name]):
                baseline[name] = max(baseline[name], gone[name])
    return out


def to_request(
    scored: Mapping[int, float], candidates: Sequence[int], room: int, threshold: float = THRESHOLD
) -> list[int]:
    """The intervals among ``candidates`` a watcher asks to open, at most ``room``: each scoring above
    ``threshold``, highest first (ties: the earlier), and after each its predecessor: an edit made after an
    interval's last update (of the weights or the optimizer's state) changes nothing in that interval's
    statistics and shows first in the next interval's, whose replay from the edited start passes."""
    above = sorted((k for k in candidates if scored.get(k, 0.0) > threshold), key=lambda k: (-scored[k], k))
    picked: list[int] = []
    for k in above:
        for wanted in (k, k - 1):
            if wanted in candidates and wanted not in picked and len(picked) < room:
                picked.append(wanted)
    return picked
