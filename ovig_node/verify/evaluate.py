"""Evaluation: attack success and false positives per workload, stride and attack (issue: science).

For each stride: prepare a task of ``intervals`` intervals, calibrate the boundary on its first
``calibration_intervals`` under the calibration profiles, train the honest claims, then

- FPR: every honest interval after the calibration prefix, replayed under each held-out profile
  (never used in calibration), that fails / all of them;
- ASR: for each attack, a run that fakes interval ``attacked``; the attack succeeds when that interval
  passes on a held-out replay. The margin is log10 of the largest statistic over its limit (> 0:
  caught by that factor);
- the detection frontier: for attacks with a strength parameter, the smallest strength caught.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ovig_node.attacks import load_attack
from ovig_node.training.evidence import read_evidence
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.taskfiles import PreparedTask, prepare_task
from ovig_node.verify.boundary import BoundaryProfile, calibrate
from ovig_node.verify.check import Verdict
from ovig_node.verify.report import replay_and_judge


@dataclass(frozen=True)
class AttackCase:
    name: str  # built-in name or package.module:callable
    params: dict[str, float] = field(default_factory=dict)
    strength: str | None = None  # the parameter swept for the detection frontier, if any


DEFAULT_ATTACKS = (
    AttackCase("micro_batch_drop", {"keep": 0.5}),
    AttackCase("data_perturbation"),
    AttackCase("lr_tamper", {"scale": 1.1}),
    AttackCase("low_precision"),
    AttackCase("stale_gradient"),
    AttackCase("skip_steps", {"every": 4}),
    *(AttackCase("row_tamper", {"delta": d}, strength="delta") for d in (1e-7, 1e-6, 1e-5, 1e-4)),
)


@dataclass
class EvalSettings:
    workload: str = "vision"
    tiny: bool = True
    strides: tuple[int, ...] = (5, 20, 50)
    intervals: int = 6
    calibration_intervals: int = 3
    calibration_profiles: tuple[str, ...] = ("micro2", "micro4", "micro4-fp64acc")
    held_out_profiles: tuple[str, ...] = ("threads2", "threads2-micro2")
    alpha: float = 3.0
    attacks: tuple[AttackCase, ...] = DEFAULT_ATTACKS
    batch_size: int = 32


@dataclass
class StrideResult:
    stride: int
    honest: list[dict[str, Any]]  # {interval, profile, verdict, reason, margin}
    attacks: list[dict[str, Any]]  # {attack, params, interval, verdict, reason, margin}
    boundary: dict[str, Any]

    @property
    def fpr(self) -> float:
        return sum(not h["valid"] for h in self.honest) / max(1, len(self.honest))


def evaluate(settings: EvalSettings, work_dir: Path, *, log: Any = None) -> list[StrideResult]:
    results = []
    for stride in settings.strides:
        results.append(_evaluate_stride(settings, stride, work_dir / f"s{stride}", log))
    return results


def _evaluate_stride(settings: EvalSettings, stride: int, folder: Path, log: Any) -> StrideResult:
    prepared = prepare_task(settings.workload, folder / "task", tiny=settings.tiny,
                            total_steps=stride * settings.intervals, stride=stride,
                            intervals_per_batch=settings.intervals, batch_size=settings.batch_size)  # fmt: skip
    _say(log, f"stride {stride}: calibrating")
    boundary = calibrate(prepared, claim_profile=get_profile("reference"),
                         replay_profiles=[get_profile(p) for p in settings.calibration_profiles],
                         intervals=settings.calibration_intervals, alpha=settings.alpha,
                         work_dir=folder / "calibration")  # fmt: skip
    claims = folder / "claims"
    train(_run(prepared, claims))
    honest = []
    for k in range(settings.calibration_intervals, settings.intervals):
        for profile in settings.held_out_profiles:
            verdict = _check(prepared, boundary, claims, k, profile)
            honest.append({"interval": k, "profile": profile, **_summary(verdict)})
    attacked_k = settings.intervals - 2
    attacks = []
    for case in settings.attacks:
        _say(log, f"stride {stride}: attack {case.name} {case.params}")
        out = folder / f"attack-{case.name.replace(':', '_')}-{'-'.join(f'{v:g}' for v in case.params.values())}"
        attack = load_attack(case.name, intervals=frozenset({attacked_k}), **case.params)
        train(_run(prepared, out, attack=attack))
        verdict = _check(prepared, boundary, out, attacked_k, settings.held_out_profiles[0])
        attacks.append({"attack": case.name, "params": case.params, "strength": case.strength,
                        "interval": attacked_k, **_summary(verdict)})  # fmt: skip
    return StrideResult(stride, honest, attacks, boundary.model_dump())


def _run(prepared: PreparedTask, out: Path, **extra: Any) -> TrainRun:
    paths = (prepared.dataset_path, prepared.init_path, out)
    return TrainRun(prepared.spec, prepared.spec_hash, *paths, get_profile("reference"), **extra)


def _check(prepared: PreparedTask, boundary: BoundaryProfile, run: Path, k: int, profile: str) -> Verdict:
    # The replay starts from the honest start (what the chain committed for k-1), like a watcher's.
    start = read_evidence(evidence_path(run, k - 1)) if k > 0 else None
    end = read_evidence(evidence_path(run, k))
    return replay_and_judge(prepared, k, start, end, boundary, profile=get_profile(profile))[0]


def _summary(verdict: Verdict) -> dict[str, Any]:
    return {"valid": verdict.valid, "reason": verdict.reason, "margin": verdict.margin}


def _say(log: Any, message: str) -> None:
    if log is not None:
        log(message)


def summarise(settings: EvalSettings, results: list[StrideResult]) -> dict[str, Any]:
    """ASR and FPR tables, margins and the detection frontier, as JSON."""
    rows = []
    for result in results:
        for attack in result.attacks:
            rows.append({"stride": result.stride, **attack, "success": attack["valid"]})
    names = sorted({(r["attack"], json.dumps(r["params"])) for r in rows})
    asr = {f"{n} {p}": sum(r["success"] for r in rows if (r["attack"], json.dumps(r["params"])) == (n, p))
           / max(1, len(results)) for n, p in names}  # fmt: skip
    frontier: dict[int, float | None] = {}
    for result in results:
        caught = [a["params"][a["strength"]] for a in result.attacks if a["strength"] and not a["valid"]]
        frontier[result.stride] = min(caught) if caught else None
    return {
        "settings": {**asdict(settings), "attacks": [asdict(a) for a in settings.attacks]},
        "fpr": {r.stride: r.fpr for r in results},
        "asr": asr,
        "frontier": frontier,
        "rows": rows,
        "honest": {r.stride: r.honest for r in results},
        "boundaries": {r.stride: r.boundary for r in results},
    }


def _margin(margin: float | None) -> str:
    return "" if margin is None else f", {margin:+.1f}"


def markdown(summary: dict[str, Any]) -> str:
    strides = sorted(summary["fpr"])
    lines = ["| attack | " + " | ".join(f"s={s}" for s in strides) + " |", "|---|" + "---:|" * len(strides)]
    by_case: dict[str, dict[int, dict[str, Any]]] = {}
    for row in summary["rows"]:
        label = f"{row['attack']} {', '.join(f'{k}={v:g}' for k, v in row['params'].items())}".strip()
        by_case.setdefault(label, {})[row["stride"]] = row
    for label, cells in by_case.items():
        shown = []
        for s in strides:
            row = cells.get(s)
            shown.append("-" if row is None else ("passed (missed)" if row["success"] else
                         f"caught ({row['reason']}{_margin(row['margin'])})"))  # fmt: skip
        lines.append(f"| {label} | " + " | ".join(shown) + " |")
    lines.append("| honest FPR (held-out profiles) | " + " | ".join(f"{summary['fpr'][s]:.0%}" for s in strides) + " |")
    frontier = " | ".join("-" if summary["frontier"][s] is None else f"{summary['frontier'][s]:g}" for s in strides)
    lines.append(f"| row_tamper: smallest delta caught | {frontier} |")
    return "\n".join(lines) + "\n"
