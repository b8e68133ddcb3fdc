"""Tables of an evaluation (:mod:`ovig_node.verify.evaluate`): ASR, FPR, frontier, signal ablation, effects."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from ovig_node.verify.evaluate import SUBSETS, EvalSettings, StrideResult
from ovig_node.verify.report import ALL


def summarise(settings: EvalSettings, results: list[StrideResult]) -> dict[str, Any]:
    """Everything the tables and plots need, as JSON."""
    rows = [_row(result.stride, attack) for result in results for attack in result.attacks]
    labels = list(dict.fromkeys(row["label"] for row in rows))
    judged = [row for row in rows if row["success"] is not None]  # no-ops neither succeed nor fail
    asr = {label: _share(row["success"] for row in judged if row["label"] == label) for label in labels}
    return {
        "settings": {
            **asdict(settings),
            "attacks": [asdict(a) for a in settings.attacks or ()],
            "layout": {r.stride: {**settings.layout(r.stride), "attacked": r.attacked} for r in results},
        },
        "fpr": {r.stride: r.fpr for r in results},
        "honest_intervals": {r.stride: len(r.honest) for r in results},
        "fpr_single_replay": {r.stride: _share(not h["first_valid"] for h in r.honest) for r in results},
        "asr": asr,
        "frontier": _frontier(rows),
        "ablation": {r.stride: _ablation(r) for r in results},
        "rows": rows,
        "honest": {r.stride: r.honest for r in results},
        "baseline": {r.stride: r.baseline for r in results},
        "boundaries": {r.stride: r.boundary for r in results},
    }


def _row(stride: int, attack: dict[str, Any]) -> dict[str, Any]:
    verdicts = attack["verdicts"]
    passed = sum(v["valid"] for v in verdicts)
    margins = [v["margin"] for v in verdicts if v["margin"] is not None]
    caught = [v for v in verdicts if not v["valid"]]
    return {
        "stride": stride,
        **{k: attack[k] for k in ("attack", "label", "params", "strength", "every_interval")},
        "judged": len(verdicts),
        "passed": passed,
        "identical": attack["identical"],
        "success": None if attack["identical"] else passed / max(1, len(verdicts)),
        "reason": caught[0]["reason"] if caught else "within_bounds",
        "failing": sorted({s for v in caught for s in v["failing"]}),
        "margin": max(margins, default=None),  # a single interval: its margin; every interval: the worst
        "subsets": {name: all(not v["subsets"][name]["valid"] for v in verdicts) for name in SUBSETS},
        "effect": attack["effect"],
    }


def _share(flags: Any) -> float:
    values = list(flags)
    return sum(values) / max(1, len(values))


def _frontier(rows: list[dict[str, Any]]) -> dict[str, dict[int, float | None]]:
    """Per swept attack and stride, the smallest strength caught (None: none caught)."""
    frontier: dict[str, dict[int, float | None]] = {}
    for row in rows:
        if row["strength"] is None or row["identical"]:
            continue
        cell = frontier.setdefault(row["attack"], {})
        value = row["params"][row["strength"]]
        caught = row["passed"] == 0
        best = cell.get(row["stride"])
        cell[row["stride"]] = (value if best is None else min(best, value)) if caught else best
    return frontier


def _ablation(result: StrideResult) -> dict[str, Any]:
    """Per signal subset: honest FPR, the single-interval attacks it misses, its detection frontier, and
    the gap (log10) between the least-caught attack and the worst honest replay."""
    table = {}
    single = [a for a in result.attacks if not a["every_interval"] and not a["identical"]]
    for name in SUBSETS:
        honest = [h["subsets"][name] for h in result.honest]
        verdicts = [(a, a["verdicts"][0]["subsets"][name]) for a in single]
        missed = [a["label"] for a, v in verdicts if v["valid"]]
        numeric = [v["margin"] for _, v in verdicts if not v["valid"] and v["margin"] is not None]
        worst_honest = max((h["margin"] for h in honest if h["margin"] is not None), default=None)
        least_caught = min(numeric, default=None)
        gap = None if worst_honest is None or least_caught is None else least_caught - worst_honest
        frontier: dict[str, float | None] = {}
        for attack, verdict in verdicts:
            if attack["strength"] is not None:
                value = attack["params"][attack["strength"]]
                best = frontier.get(attack["attack"])
                frontier[attack["attack"]] = best if verdict["valid"] else min(value, best or value)
        table[name] = {
            "fpr": _share(not h["valid"] for h in honest),
            "missed": missed,
            "frontier": frontier,
            "worst_honest": worst_honest,
            "least_caught": least_caught,
            "gap": gap,
        }
    return table


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    if row["identical"]:
        return "no-op (evidence identical to honest)"
    if row["every_interval"]:
        return f"passed {row['passed']}/{row['judged']}" if row["passed"] else f"caught {row['judged']}/{row['judged']}"
    if row["passed"]:
        return "passed (missed)"
    margin = "" if row["margin"] is None else f", {row['margin']:+.1f}"
    return f"caught ({row['reason']}{margin})"


def markdown(summary: dict[str, Any]) -> str:
    strides = sorted(summary["fpr"], key=int)
    head = ["| attack | " + " | ".join(f"s={s}" for s in strides) + " |", "|---|" + "---:|" * len(strides)]
    by_label: dict[str, dict[int, dict[str, Any]]] = {}
    for row in summary["rows"]:
        by_label.setdefault(row["label"], {})[int(row["stride"])] = row
    lines = [*head]
    lines += [
        f"| {label} | " + " | ".join(_cell(cells.get(int(s))) for s in strides) + " |"
        for label, cells in by_label.items()
    ]
    counts = summary["honest_intervals"]
    lines.append("| honest FPR, held-out intervals and profiles | " + _rates(summary["fpr"], counts, strides) + " |")
    lines.append("| honest FPR, first replay alone | " + _rates(summary["fpr_single_replay"], counts, strides) + " |")
    layouts = summary["settings"]["layout"]
    lines.append("| boundary calibrated on | " + " | ".join(_calibration(layouts[s]) for s in strides) + " |")
    if (provider := summary["settings"].get("claim_profile", "reference")) != "reference":
        lines.append(f"| the provider's claims and attacks trained under | {' | '.join(provider for _ in strides)} |")
    for attack, cells in summary["frontier"].items():
        shown = " | ".join("none" if cells.get(s) is None else f"{cells[s]:g}" for s in strides)
        lines.append(f"| {attack}: smallest strength caught | {shown} |")
    return "\n".join(lines) + "\n\n" + ablation_markdown(summary) + "\n" + effect_markdown(summary)


def _calibration(layout: dict[str, Any]) -> str:
    old = layout.get("calibration_seed")  # results written before several runs could calibrate
    seeds = layout.get("calibration_seeds", [] if old is None else [old])
    count = len(layout["positions"])
    if not seeds:
        return f"{count} intervals of this run"
    if len(seeds) == 1:
        return f"{count} intervals of a separate run (seed {seeds[0]})"
    return f"{count} intervals of each of {len(seeds)} separate runs (seeds {', '.join(map(str, seeds))})"


def _rates(rates: dict[Any, float], counts: dict[Any, int], strides: list[Any]) -> str:
    """``failed/judged (rate)`` per stride: a rate means little without its sample size."""
    return " | ".join(f"{round(rates[s] * counts[s])}/{counts[s]} ({rates[s]:.1%})" for s in strides)


def ablation_markdown(summary: dict[str, Any]) -> str:
    """Which signal separates honest drift from attacks: per subset and stride, FPR, misses, gap."""
    strides = sorted(summary["ablation"], key=int)
    lines = ["| signals judged | " + " | ".join(f"s={s}" for s in strides) + " |", "|---|" + "---|" * len(strides)]
    for name in SUBSETS:
        cells = []
        for s in strides:
            entry = summary["ablation"][s][name]
            missed = ", ".join(entry["missed"]) or "none"
            frontier = ", ".join(f"{a} {v:g}" for a, v in entry["frontier"].items() if v is not None)
            cells.append(f"FPR {entry['fpr']:.0%}; smallest caught: {frontier or 'none'}; missed: {missed}")
        lines.append(f"| {name if name != ALL else 'all four (protocol)'} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def effect_markdown(summary: dict[str, Any]) -> str:
    """What the steering attacks did to the model: target loss change, backdoor success, weights moved,
    next to an honest run on other hardware (the noise floor of every such number)."""
    strides = sorted(summary["fpr"], key=int)
    steering = ("backdoor", "targeted_gradient", "boundary_aware", "interpolated_endpoint", "poisoned_instructions")
    heading = " | ".join(f"s={s}: target loss change; backdoor success; moved" for s in strides)
    lines = [f"| attack (verdict) | {heading} |", "|---|" + "---|" * len(strides)]
    by_label: dict[str, dict[int, dict[str, Any]]] = {}
    for row in summary["rows"]:
        if row["attack"] in steering:
            by_label.setdefault(row["label"], {})[int(row["stride"])] = row
    for label, cells in by_label.items():
        shown = []
        for s in strides:
            row = cells.get(int(s))
            base = summary["baseline"][s]["final" if row and row["every_interval"] else "attacked"]
            shown.append("-" if row is None else f"{_cell(row)}: {_delta(row['effect'], base)}")
        lines.append(f"| {label} | " + " | ".join(shown) + " |")
    floor = [
        (
            "not run"
            if summary["baseline"][s]["other_hardware"] is None
            else _delta(summary["baseline"][s]["other_hardware"], summary["baseline"][s]["final"])
        )
        for s in strides
    ]
    lines.append("| honest run on other hardware (final model) | " + " | ".join(floor) + " |")
    return "\n".join(lines) + "\n"


def _delta(effect: dict[str, Any], base: dict[str, Any]) -> str:
    # a workload without classes (llm) has no target objective; its backdoor is the poisoned instructions'
    loss = "n/a" if effect["target_loss"] is None else f"{effect['target_loss'] - base['target_loss']:+.1e}"
    moved = f"{effect['moved']:.1e}"
    # the honest model measured on the attack's own held-out prompts, where they differ (poisoned instructions)
    success, honest = (
        effect.get("backdoor_success"),
        effect.get("honest_backdoor_success", base.get("backdoor_success")),
    )
    if success is None or math.isnan(success):  # NaN: older results; None: no held-out input, or no measure
        return f"{loss}; n/a; {moved}"
    honest_text = "n/a" if honest is None or math.isnan(honest) else f"{honest:.0%}"
    return f"{loss}; {success:.0%} (honest {honest_text}); {moved}"
