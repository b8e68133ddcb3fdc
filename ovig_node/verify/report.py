"""Judge one interval from evidence files and produce the JSON report (protocol section 5, step 4).

Missing, unreadable or oversized evidence is a verdict too (faulty: ``missing``, ``corrupt``,
``oversized``), never a crash: a watcher must be able to say why an interval failed. So is a start or
end whose tensors are not the spec's (``wrong_structure``), found before any replay loads them.

A rejection outside the boundary is *confirmed* before it stands: the interval is replayed again under
each further execution profile the verifier has, and stays faulty only if every replay rejects it.
Over long intervals an honest replay can branch: a ReLU or max-pool tie that rounding resolves the
other way sends a few gradients elsewhere, and the two branches then sit far apart (seen here at
s = 100 on the tiny CNN, 30-60x outside a boundary that covers every other honest replay). Which
branch a run takes depends on the hardware, so "no honest execution the verifier tried reproduces
the claim" is the fault, not "one did not". Structural faults are deterministic and need no second
replay; an honest interval costs a second replay only in the rare case the first rejects it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from ovig_node.training.evidence import Evidence, EvidenceError, evidence_metadata, read_evidence, sha256_hex
from ovig_node.training.exact import decode_log
from ovig_node.training.execution import ExecutionProfile
from ovig_node.training.loop import evidence_path
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.verify.boundary import BoundaryProfile
from ovig_node.verify.check import FAULTY, JUDGED, OUT_OF_BOUNDS, Verdict, judge, start_problem, structural
from ovig_node.verify.exact import judge_exact
from ovig_node.verify.layout import layout_of
from ovig_node.verify.replay import replay_interval

ALL = "all"  # the subset of signals the protocol judges: every one
# Replays made, by (specHash hex, task, interval, sha256 of the start's bytes, profile): a replay is a function of
# these alone, so a caller judging many claims of one interval from one start (an evaluation's attacks, the tests'
# sweeps) replays it once per profile. Each caller keeps its own: nothing is cached across callers.
Replays = dict[tuple[str, int, int, str, str], Evidence]


@dataclass
class IntervalJudgement:
    verdicts: dict[str, Verdict]  # per named subset of signals ("all" unless asked otherwise)
    deciding: dict[str, str]  # per subset, the profile whose replay decided it
    first: dict[str, Verdict] = field(default_factory=dict)  # per subset, the first replay's verdict alone
    replays: list[str] = field(default_factory=list)  # the profiles replayed, in order
    seconds: dict[str, float] = field(default_factory=lambda: {"replay": 0.0, "compare": 0.0})

    @property
    def verdict(self) -> Verdict:
        return self.verdicts[ALL]


def verify_interval(
    prepared: PreparedTask,
    evidence_dir: Path,
    k: int,
    boundary: BoundaryProfile | None,
    *,
    profile: ExecutionProfile | None = None,
    profiles: Sequence[ExecutionProfile] = (),
    task: int = 0,
    end_sha256: str | None = None,
) -> dict[str, Any]:
    """Replay interval ``k`` from the files in ``evidence_dir`` and return the report; under ``profile``,
    or under ``profiles`` with each after the first confirming a rejection."""
    profiles = [profile] if profile is not None else list(profiles)
    layout = prepared.spec.layout
    base: dict[str, Any] = {
        "interval": k,
        "end_step": layout.end_step(k),
        "task": task,
        "spec": "0x" + prepared.spec_hash.hex(),
        "torch": torch.__version__,
    }
    loaded = _load(evidence_dir, k, end_sha256, max_bytes=layout_of(prepared.spec).max_bytes)
    if isinstance(loaded, Verdict):
        return {**base, **loaded.to_json(), "profile": None, "replays": [], "seconds": {"replay": 0.0, "compare": 0.0}}
    start, end = loaded
    judged = replay_and_judge(prepared, k, start, end, boundary, profiles=profiles, task=task)
    by_name = {p.name: p for p in profiles}
    deciding = by_name[judged.deciding[ALL]].describe() if judged.replays else None  # None: faulty before a replay
    return {
        **base,
        **judged.verdict.to_json(),
        "profile": deciding,
        "replays": judged.replays,
        "seconds": judged.seconds,
    }


def replay_and_judge(
    prepared: PreparedTask,
    k: int,
    start: Evidence | None,
    end: Evidence,
    boundary: BoundaryProfile | None,
    *,
    profiles: Sequence[ExecutionProfile],
    task: int = 0,
    subsets: Mapping[str, Sequence[str]] | None = None,
    replays: Replays | None = None,
) -> IntervalJudgement:
    """Replay interval ``k`` from the claimed ``start`` and judge the claimed ``end``, confirming an
    out-of-bounds rejection under each further profile; with timings. ``subsets`` names signal
    subsets to judge separately (ablations); each is confirmed on its own, sharing the replays. With
    ``replays``, a replay of this interval from this start under a profile is made once (and kept there)."""
    if not profiles:
        raise ValueError("a verdict needs at least one execution profile")
    subsets = subsets or {ALL: JUDGED}
    if (fault := precheck(prepared, k, start, end, task=task)) is not None:
        return IntervalJudgement(
            verdicts=dict.fromkeys(subsets, fault),
            deciding=dict.fromkeys(subsets, ""),
            first=dict.fromkeys(subsets, fault),
        )
    judged = IntervalJudgement(verdicts={}, deciding={})
    if prepared.spec.exact:
        return _replay_and_judge_exact(prepared, k, start, end, profiles, task, list(subsets), judged)
    assert boundary is not None, "boundary mode judges against a boundary"
    replayed: list[Evidence] = []
    seen: list[dict[str, dict[str, list[float]]]] = []  # per replay, each signal's percentile profiles
    start_sha256 = "" if replays is None or start is None else sha256_hex(start.to_bytes())
    for name, signals in subsets.items():
        candidates: list[tuple[str, Verdict]] = []
        for i, profile in enumerate(profiles):
            if i == len(replayed):
                started = time.monotonic()
                key = (prepared.spec_hash.hex(), task, k, start_sha256, profile.name)
                made = None if replays is None else replays.get(key)
                if made is None:
                    made = replay_interval(prepared, k, start, profile=profile, task=task)
                    if replays is not None:
                        replays[key] = made
                replayed.append(made)
                seen.append({})
                judged.seconds["replay"] += time.monotonic() - started
                judged.replays.append(profile.name)
            started = time.monotonic()
            verdict = judge_replay(
                prepared, k, end, replayed[i], boundary, task=task, signals=signals, profiles_seen=seen[i]
            )
            judged.seconds["compare"] += time.monotonic() - started
            candidates.append((profile.name, verdict))
            if verdict.reason != OUT_OF_BOUNDS:  # valid, or a structural fault no replay can change
                break
        judged.first[name] = candidates[0][1]
        judged.deciding[name], verdict = min(candidates, key=_leniency)
        if not verdict.valid and any(v.indeterminate for _, v in candidates):
            # one of its own replays put the claim within the near-tie band: this node cannot take a side either
            verdict = replace(verdict, indeterminate=True)
        judged.verdicts[name] = verdict
    return judged


def _replay_and_judge_exact(
    prepared: PreparedTask,
    k: int,
    start: Evidence | None,
    end: Evidence,
    profiles: Sequence[ExecutionProfile],
    task: int,
    subsets: list[str],
    judged: IntervalJudgement,
) -> IntervalJudgement:
    """Exact mode: the claim is reproduced bit for bit by a replay applying its rounding log, or faulty;
    a fault is confirmed under each further profile like an out-of-bounds one (verify.exact)."""
    expected = _metadata(prepared, k, task)
    assert prepared.spec.numerics is not None
    claimed = decode_log(end.rounding, prepared.spec.numerics.max_log_entries)  # its form was checked by precheck
    candidates: list[tuple[str, Verdict]] = []
    for profile in profiles:
        started = time.monotonic()
        faults: list[str] = []
        replayed = replay_interval(prepared, k, start, profile=profile, task=task, claimed_log=claimed, faults=faults)
        judged.seconds["replay"] += time.monotonic() - started
        judged.replays.append(profile.name)
        started = time.monotonic()
        candidates.append((profile.name, judge_exact(end, replayed, faults, expected_metadata=expected)))
        judged.seconds["compare"] += time.monotonic() - started
        if candidates[-1][1].reason != OUT_OF_BOUNDS:
            break
    deciding, verdict = min(candidates, key=_leniency)
    for name in subsets:
        judged.first[name], judged.deciding[name], judged.verdicts[name] = candidates[0][1], deciding, verdict
    return judged


def _leniency(candidate: tuple[str, Verdict]) -> tuple[bool, float]:
    # A passing replay decides; among rejections, the one closest to the boundary (a rejection with no
    # finite margin failed only rows whose limit is zero: count it as far out).
    verdict = candidate[1]
    return (not verdict.valid, math.inf if verdict.margin is None else verdict.margin)


def judge_replay(
    prepared: PreparedTask,
    k: int,
    end: Evidence,
    replayed: Evidence,
    boundary: BoundaryProfile,
    *,
    task: int = 0,
    signals: Sequence[str] = JUDGED,
    profiles_seen: dict[str, dict[str, list[float]]] | None = None,
) -> Verdict:
    """The verdict on the claimed ``end`` of interval ``k`` against one honest replay of it."""
    expected = _metadata(prepared, k, task)
    return judge(end, replayed, boundary, expected_metadata=expected, signals=signals, profiles_seen=profiles_seen)


def precheck(prepared: PreparedTask, k: int, start: Evidence | None, end: Evidence, *, task: int = 0) -> Verdict | None:
    """The fault of the claimed start or end that needs no replay to see (tensors not the spec's, wrong
    metadata or counters, a start holding NaN), or None. The start is checked before the replay loads it:
    ``load_state_dict`` would raise on a wrong name or shape instead of giving a verdict."""
    layout = layout_of(prepared.spec)
    if start is not None and (fault := start_problem(start, layout, _metadata(prepared, k - 1, task))) is not None:
        return fault
    if (problem := layout.problem(end, k)) is not None:
        return structural(*problem)
    return None


def _metadata(prepared: PreparedTask, k: int, task: int) -> dict[str, str]:
    return evidence_metadata(task, prepared.spec_hash, k, prepared.spec.layout.end_step(k))


def _load(
    evidence_dir: Path, k: int, end_sha256: str | None, *, max_bytes: int
) -> tuple[Evidence | None, Evidence] | Verdict:
    """The start (None for k = 0) and end evidence, or the verdict on a file that cannot be read."""
    paths = [evidence_path(evidence_dir, j) for j in (k - 1, k) if j >= 0]
    try:
        start = read_evidence(paths[0], max_bytes=max_bytes) if k > 0 else None
        end = read_evidence(paths[-1], expected_sha256=end_sha256, max_bytes=max_bytes)
    except EvidenceError as exc:
        return Verdict(FAULTY, exc.reason, str(exc), cause=exc.reason)
    return start, end


def closest_to_limit(report: Mapping[str, Any]) -> tuple[float, str] | None:
    """The report's row nearest its limit: (value / limit, "signal kind pNN"), the largest over every
    signal, kind and percentile judged; above 1 the row failed (a positive value against a limit of 0,
    or NaN, is infinitely far). None if no value was positive: no replay ran, or it was bit-identical."""
    closest: tuple[float, str] | None = None
    for signal, kinds in report.get("signals", {}).items():
        for kind, rows in kinds.items():
            for row in rows:
                value, limit = row["value"], row["limit"]
                if math.isnan(value) or (value > 0 and limit <= 0):
                    ratio = math.inf
                elif value > 0:
                    ratio = value / limit
                else:
                    continue
                if closest is None or ratio > closest[0]:
                    closest = (ratio, f"{signal} {kind} p{row['p']:g}")
    return closest


def write_report(report: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(report, indent=2, default=float) + "\n")
