"""`ovig eval --mode layer-one`: the statistics judge (layer one, :mod:`ovig_node.verify.statistics_judge`) measured
alone, per attack, as SciCheck reports its first layer, and what it adds to sampling.

Per stride: the provider's honest run (the claims, on the reference profile), the owner's reference run of the
same task on other hardware (the first calibration profile: a reference never shares the provider's
rounding), then every attack faking one interval k (the interval ``ovig eval`` fakes) and trained on to k + 1,
since an edit after k's last update shows first in k + 1's statistics (the watcher requests a flagged
interval's predecessor for that). An attack's **score** is the larger of k's and k + 1's; the honest scores
are every interval of the honest run. From them: per attack the ROC's area (the share of honest scores
below the attack's, pooled over strides) and F1 at the threshold, and the honest false-positive rate.

How that raises the chance of catching a one-interval fake is a product with the replay (layer two): an
interval is opened by the sample (probability phi) or, when layer one flags it, by request; once opened it
is caught if its replay rejects it. The replay's verdicts come from ``ovig eval``'s own runs; this module
records the flags, and bench/tables.py multiplies.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ovig_node.attacks.base import load_attack
from ovig_node.training.evidence import read_statistics
from ovig_node.training.loop import evidence_path, train
from ovig_node.verify.evaluate import ANCHOR, BOUNDARY, EvalSettings, Log, claim_run, fake, quiet
from ovig_node.verify.statistics_judge import THRESHOLD, Reference, scores


def units(settings: EvalSettings) -> int:
    """Per stride: the honest run, the reference run, each attack."""
    return len(settings.strides) * (2 + len(settings.attacks or ()))


def evaluate_layer_one(
    settings: EvalSettings, work_dir: Path, *, threshold: float = THRESHOLD, log: Log | None = None
) -> dict[str, Any]:
    """Layer one's scores of the honest run and of every attack, per stride, and their summary."""
    say: Log = log or quiet
    strides = [_stride(settings, stride, work_dir / f"s{stride}", threshold, say) for stride in settings.strides]
    return {
        "settings": asdict(settings),
        "threshold": threshold,
        "strides": strides,
        "summary": summarise(strides, threshold),
    }


def _stride(settings: EvalSettings, stride: int, folder: Path, threshold: float, say: Log) -> dict[str, Any]:
    prepared = settings.task(stride, folder / "task", settings.seed)
    layout, n = prepared.spec.layout, settings.intervals_at(stride)
    claims, elsewhere = folder / "claims", folder / "reference-run"
    say(f"s={stride}: the provider's honest run", unit=True)
    train(claim_run(prepared, claims, profile=settings.claim_profile))
    reference_profile = settings.calibration_profiles[0]
    say(f"s={stride}: the owner's reference run on {reference_profile}", unit=True)
    train(claim_run(prepared, elsewhere, profile=reference_profile))
    reference = Reference.from_claims(elsewhere, prepared.spec)

    def claimed(run: Path, upto: int) -> dict[int, dict[str, list[float]]]:
        return {k: read_statistics(evidence_path(run, k), layout.steps(k)) for k in range(upto + 1)}

    honest = scores(claimed(claims, n - 1), reference, layout)
    attacked = settings.attacked_at(stride)
    attacks: list[dict[str, Any]] = []
    for index, case in enumerate(settings.attacks or ()):
        say(f"s={stride}: attack {case.label}", unit=True)
        if BOUNDARY in case.params.values():
            attacks.append({"attack": case.name, "label": case.label, "skipped": "aims at a calibrated boundary"})
            continue
        faked = settings.faked_at(stride, case, attacked)
        last = min(faked[-1] + 1, n - 1)  # one interval on: where a post-update edit shows
        params = {k: str(evidence_path(claims, n - 1)) if v == ANCHOR else v for k, v in case.params.items()}
        out = folder / "attacks" / f"{index:02d}"
        fake(
            prepared,
            claims,
            out,
            load_attack(case.name, intervals=frozenset(faked), **params),
            last=last,
            honest_prefix=faked[0],
            profile=settings.claim_profile,
        )
        got = scores(claimed(out, last), reference, layout)
        shutil.rmtree(out, ignore_errors=True)
        watched = sorted({*faked, last})
        attacks.append(
            {
                "attack": case.name,
                "label": case.label,
                "faked": faked,
                "scores": {str(k): got[k] for k in watched},
                "score": max(got[k] for k in watched),
                "flagged": max(got[k] for k in watched) > threshold,
            }
        )
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "stride": stride,
        "intervals": n,
        "attacked": attacked,
        "reference_profile": reference_profile,
        "honest": {str(k): v for k, v in honest.items()},
        "attacks": attacks,
    }


def summarise(strides: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """Pooled over strides: the honest false-positive rate at ``threshold``; per attack label, its detections,
    the ROC's area (the share of honest scores below its scores; ties count half) and F1 at ``threshold``."""
    honest = [v for s in strides for v in s["honest"].values()]
    false = sum(v > threshold for v in honest)
    per_attack: dict[str, list[float]] = {}
    for s in strides:
        for a in s["attacks"]:
            if "score" in a:
                per_attack.setdefault(a["label"], []).append(a["score"])
    rows = {}
    for label, attacked in per_attack.items():
        caught = sum(v > threshold for v in attacked)
        pairs = [(a > h) + 0.5 * (a == h) for a in attacked for h in honest]
        rows[label] = {
            "detected": caught,
            "runs": len(attacked),
            "auc": sum(pairs) / len(pairs) if pairs else None,
            "f1": 2 * caught / (2 * caught + false + len(attacked) - caught),
        }
    return {
        "honest_intervals": len(honest),
        "honest_flagged": false,
        "honest_max": max(honest, default=0.0),
        "attacks": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    """The per-stride scores and the summary, as tables."""
    threshold = result["threshold"]
    strides = result["strides"]
    head = "| attack | " + " | ".join(f"s={s['stride']}" for s in strides) + " | AUC | F1 |"
    lines = [
        f"Layer one: each attack's score (threshold {threshold:g}; above it, the interval is requested)",
        "",
        head,
        "|" + "---|" * (len(strides) + 3),
    ]
    summary = result["summary"]
    for label, row in summary["attacks"].items():
        cells = []
        for s in strides:
            [a] = [a for a in s["attacks"] if a["label"] == label] or [{}]
            cells.append(f"{a['score']:.3g}{' (flagged)' if a['flagged'] else ''}" if "score" in a else "-")
        auc = "-" if row["auc"] is None else f"{row['auc']:.3f}"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {auc} | {row['f1']:.2f} |")
    lines += [
        "",
        f"honest intervals: {summary['honest_intervals']}, flagged {summary['honest_flagged']}, "
        f"largest score {summary['honest_max']:.3g}",
        "",
    ]
    return "\n".join(lines)
