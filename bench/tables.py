"""Tables and figures of README.md and docs/*.md, written from the committed results in bench/results/.

    .venv/bin/python bench/tables.py           # rewrite every marked table and figure of every page
    .venv/bin/python bench/tables.py --check   # exit 1 if one differs from its results

A table sits between ``<!-- table:NAME -->`` and ``<!-- /table:NAME -->`` on lines of their own; a figure
in prose between ``<!-- value:NAME -->`` and ``<!-- /value -->`` on one line. NAME picks a function below
(``TABLES``, ``VALUES``) that reads only JSON under bench/results/, so a page cannot disagree with its
results: re-run the benchmark or edit the function, then run this script (tests/test_docs.py fails until
then).
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"


def ran(run: str) -> bool:
    """Whether evaluation ``run``'s results are committed (the long ones take their place once run)."""
    return (RESULTS / run / "eval.json").is_file()


# The main evaluation: one column per (name, run, stride), each from its committed run.
TINY = (
    [("vision", "eval_vision_tiny", s) for s in (1, 10, 100)]
    + [("diffusion", "eval_diffusion_tiny", s) for s in (1, 10, 100)]
    + [
        ("language", "eval_language_tiny", 1),
        ("language", "eval_language_tiny", 10),
        ("language", "eval_language_tiny_s100", 100),
    ]
)
FULL = [("full language", "eval_language_full", s) for s in (1, 10)]
# The chat model (llm): the tiny base at s = 1 and 10, SmolLM2-135M-Instruct with LoRA at s = 10 (bench/eval.py
# --llm-real: eval_llm, and the poisoned instruction set on a shorter run of its own, eval_llm_poison), the
# tiny base at s = 100 (eval_llm_tiny_s100) and SmolLM2 at s = 100 (--llm-real-s100: eval_llm_s100). A run takes
# its column once its results are committed: the long ones did not all fit this machine's time beside the rest
# yet (docs/llm.md, "Not yet").
LLM_RUNS = [
    ("llm tiny", "eval_llm_tiny", 1),
    ("llm tiny", "eval_llm_tiny", 10),
    ("llm tiny", "eval_llm_tiny_s100", 100),
    ("SmolLM2 LoRA", "eval_llm", 10),
    ("SmolLM2 LoRA", "eval_llm_s100", 100),
]
LLM = [column for column in LLM_RUNS if ran(column[1])]
LLM_NOT_RUN = {
    "eval_llm_tiny_s100": "the tiny base at s = 100",
    "eval_llm": "SmolLM2 with LoRA",
    "eval_llm_s100": "SmolLM2 with LoRA at s = 100",
}
POISON_RUN = ("SmolLM2 LoRA, short run", "eval_llm_poison", 10)
LLM_POISON = [*LLM, *([POISON_RUN] if ran(POISON_RUN[1]) else [])]
# The real model's targets (the tiny base's are HELD_OUT_TARGET's): 60 at s = 10; none at s = 100, where ten
# held-out intervals take hours of these cores: those it has are counted.
LLM_HELD_OUT_TARGET = {"eval_llm": 60, "eval_llm_s100": 0}
DDP = [("vision, ddp2 provider", "eval_vision_tiny_ddp2", s) for s in (1, 10, 100)]
# The chat model's boundary-aware attacker (objective poison), added after eval_llm_tiny ran: the same layout at
# s = 10, that attacker alone (bench/eval.py's llm group).
LLM_ADAPTIVE = ("llm tiny", "eval_llm_tiny_adaptive", 10)
EXACT_LLM_ADAPTIVE = "exact_eval_llm_tiny_adaptive"  # ... and in exact mode, after exact_eval_llm_tiny ran

# Every committed evaluation (bench/eval.py runs them all), with what its results do not record.
RUNS = {
    "eval_vision_tiny": "vision, CNN with average pooling (the default)",
    "eval_diffusion_tiny": "diffusion",
    "eval_language_tiny": "language, warm-up",
    "eval_language_tiny_s100": "language, warm-up",
    "eval_vision_tiny_maxpool": "vision, CNN with max-pooling",
    "eval_vision_tiny_maxpool_s10_separate_calibration": "vision, CNN with max-pooling",
    "eval_language_tiny_s100_seed2_only": "language, warm-up",
    "eval_language_tiny_constant": "language, constant rate",
    "eval_language_tiny_s100_constant": "language, constant rate",
    "eval_language_tiny_s100_constant_late_calibration": "language, constant rate",
    "eval_language_tiny_warmup500": "language, warm-up",
    "eval_language_tiny_s100_warmup500": "language, warm-up",
    "eval_language_tiny_s10_warmup500_separate_calibration": "language, warm-up",
    "eval_language_tiny_s10_first60": "language, warm-up",
    "eval_language_full": "full language (MiniLM-L6), constant rate",
    "eval_llm_tiny": "llm, tiny base with LoRA",
    "eval_vision_tiny_ddp2": "vision, a data-parallel provider (ddp2)",
    "eval_llm_tiny_s100": "llm, tiny base with LoRA",
    "eval_llm": "llm, SmolLM2-135M-Instruct with LoRA",
    "eval_llm_s100": "llm, SmolLM2-135M-Instruct with LoRA (the attacks that fake one interval)",
    "eval_llm_poison": "llm, SmolLM2-135M-Instruct with LoRA (poisoned instructions only)",
    "eval_llm_tiny_adaptive": "llm, tiny base with LoRA (the boundary-aware attacker only)",
}
RUNS = {run: what for run, what in RUNS.items() if ran(run)}  # the long ones once run
# The language runs that explain its warm-up and its boundary, in the order the story goes.
WARMUP = [
    ("eval_language_tiny_s100_constant", 100),
    ("eval_language_tiny_s100_constant_late_calibration", 100),
    ("eval_language_tiny_s100_warmup500", 100),
    ("eval_language_tiny_s100_seed2_only", 100),
    ("eval_language_tiny_s100", 100),
    ("eval_language_tiny_constant", 10),
    ("eval_language_tiny_warmup500", 10),
    ("eval_language_tiny_s10_warmup500_separate_calibration", 10),
    ("eval_language_tiny_s10_first60", 10),
]
# Leave one family out (bench/eval.py --families): (workload, run, strides), and the families in table order.
FAMILY_RUNS = [
    ("vision", "families_vision_tiny", (1, 10, 100)),
    ("diffusion", "families_diffusion_tiny", (1, 10, 100)),
    ("language", "families_language_tiny", (10,)),  # s = 10 only: bench/eval.py says why
]
# Language's main evaluation predates the kernel profiles and the floor (it takes hours); its run with them:
LANGUAGE_FLOOR = [("language", "floor_language_tiny", s) for s in (1, 10)]
FAMILIES = ("threads", "micro-batch", "accumulation", "conv-kernels", "attention-kernels", "optimizer-kernels")
SWEPT = ("row_tamper", "targeted_gradient")
ADAPTIVE = "boundary_aware"  # the one attack the 0%-success target leaves out
HELD_OUT_TARGET = {1: 100, 10: 100, 100: 30}  # honest held-out intervals the false-positive target asks for


def pages() -> list[Path]:
    """Every page with generated content: the README and the docs."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@functools.cache
def load(name: str) -> Any:
    """A committed result, e.g. ``gas.json`` or ``eval_vision_tiny/eval.json``."""
    return json.loads((RESULTS / name).read_text())


# --- formatting ------------------------------------------------------------------------------------------


def table(head: list[str], rows: list[list[str]], align: str = "") -> str:
    """A markdown table; ``align`` has a letter per column, ``r`` for right-aligned (default left)."""
    rule = ["---:" if a == "r" else "---" for a in align.ljust(len(head), "l")]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [head, rule, *rows])


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e6:.2f} MB"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def times(margin: float) -> str:
    """A margin (log10 of a statistic over its limit) as a multiple of the limit, to two digits."""
    value = float(f"{10**margin:.2g}")
    return f"{value:,.0f}" if value >= 100 else f"{value:g}"


def share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def strength(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"


# --- the test suite's time ----------------------------------------------------------------------------------


def test_minutes(label: str) -> str:
    """pytest's session time of a run bench/test_time.py recorded."""
    run = load("test_time.json")["runs"][label]
    clean = not (run["counts"].get("failed") or run["counts"].get("error"))
    return f"{run['session_seconds'] / 60:.1f} minutes" + ("" if clean else " (a run with failures)")


def test_cpu_floor(label: str) -> str:
    """A recorded run's CPU seconds over two cores: the least wall time two cores could run its work in."""
    run = load("test_time.json")["runs"][label]
    return f"{run['cpu_seconds'] / 2 / 60:.1f} minutes"


def test_time() -> str:
    """Per-file seconds of each recorded run, the slowest files first (bench/results/test_time.json)."""
    runs = load("test_time.json")["runs"]
    labels = list(runs)
    files = sorted(
        {f for r in runs.values() for f in r["file_seconds"]},
        key=lambda f: (-max(r["file_seconds"].get(f, 0) for r in runs.values()), f),
    )
    rows = [["pytest session", *(f"{runs[label]['session_seconds']:.0f}" for label in labels)]]
    # CPU seconds of every process the run waited for (runs recorded before bench/test_time.py counted them: -)
    cpu = [f"{runs[label]['cpu_seconds']:.0f}" if "cpu_seconds" in runs[label] else "-" for label in labels]
    rows += [["CPU, all processes", *cpu]]
    rows += [[f"`{f}`", *(f"{runs[label]['file_seconds'].get(f, 0):.0f}" for label in labels)] for f in files[:12]]
    # the runs may be of different suites (recorded at different times): each says how many tests it passed
    head = [f"{label} ({runs[label]['counts'].get('passed', 0)} passed)" for label in labels]
    return table(["seconds", *head], rows, align="l" + "r" * len(labels))


# --- the dispute game: gas and committee odds ------------------------------------------------------------


def gas() -> str:
    """Per-call gas and the gas targets (bench/gas.py -> bench/results/gas.json)."""
    data = load("gas.json")
    calls = data["calls"]
    lines = ["| call | gas |", "| --- | ---: |"]
    lines += [f"| {name} | {value:,} |" for name, value in calls.items()]
    lines += ["", "| target | limit | measured | |", "| --- | ---: | ---: | --- |"]
    for t in data["targets"]:
        verdict = "met" if t["met"] else f"**missed: {t['measured'] / t['limit']:.1f}x the limit**"
        lines.append(f"| {t['target']} | {t['limit']:,} | {t['measured']:,.0f} | {verdict} |")
    return "\n".join(lines)


def committee() -> str:
    """Sybil-majority odds per round, appeals to a safe round, junk floods (bench/committee_odds.py ->
    bench/results/committee_odds.json)."""
    data = load("committee_odds.json")
    rounds = data["max_rounds"]
    head = " | ".join(f"round {r} sybil majority" for r in range(rounds))
    lines = [
        f"| sybil share | {head} | first round below 1e-6 | appeal bonds to get there | reachable here |",
        "| ---: | " + "---: | " * rounds + "---: | ---: | --- |",
    ]
    for row in data["odds"]:
        odds = " | ".join(f"{p:.2e}" for p in row["per_round"])
        safe = "none within 12" if row["safe_round"] is None else str(row["safe_round"])
        bonds = (
            "-"
            if row["appeal_bonds_in_challenger_bonds"] is None
            else (f"{row['appeal_bonds_in_challenger_bonds']:,} x MIN_CHALLENGER_BOND")
        )
        reach = (
            "yes"
            if row["reachable"]
            else ("no" if row["auditors_needed"] is None else f"no (needs {row['auditors_needed']:,} auditors)")
        )
        lines.append(f"| {row['sybil_share']:.0%} | {odds} | {safe} | {bonds} | {reach} |")
    lines += [
        "",
        "| junk disputes per day | cost to an outsider (ETH) | cost to a provider flooding its own task (ETH) |",
    ]
    lines += ["| ---: | ---: | ---: |"]
    for row in data["floods"]:
        lines.append(
            f"| {row['disputes_per_day']:,} | {row['cost_wei_outsider'] / 1e18:g} | "
            f"{row['cost_wei_own_task'] / 1e18:g} |"
        )
    return "\n".join(lines)


def gas_missed() -> str:
    targets = load("gas.json")["targets"]
    missed = [t["target"] for t in targets if not t["met"]]
    if not missed:
        return "Every gas target is met"
    return f"{len(missed)} of the {len(targets)} gas targets are missed: {'; '.join(missed)}"


# --- evaluation: reading eval.json (ovig_node/verify/summary.py writes it) --------------------------------


def evaluation(run: str) -> dict[str, Any]:
    return load(f"{run}/eval.json")


def rows_of(run: str, stride: int) -> list[dict[str, Any]]:
    """The attacks judged in ``run`` at ``stride``, one row each."""
    return [r for r in evaluation(run)["rows"] if r["stride"] == stride]


def row_of(run: str, label: str, stride: int) -> dict[str, Any] | None:
    return next((r for r in rows_of(run, stride) if r["label"] == label), None)


def honest(run: str, stride: int) -> list[dict[str, Any]]:
    return evaluation(run)["honest"][str(stride)]


def false_positives(run: str, stride: int, *, first: bool = False) -> list[dict[str, Any]]:
    """Honest held-out intervals judged faulty (``first``: by the first replay alone, before confirmation)."""
    return [h for h in honest(run, stride) if not h["first_valid" if first else "valid"]]


def fp(run: str, stride: int, *, first: bool = False) -> str:
    """``failed/judged`` honest held-out intervals."""
    return f"{len(false_positives(run, stride, first=first))}/{len(honest(run, stride))}"


def bound(run: str, stride: int, signal: str, p: int, kind: str = "abs") -> float:
    """The boundary's bound on ``signal`` at its ``p``-th percentile (0: p50 ... 4: p100)."""
    return evaluation(run)["boundaries"][str(stride)]["signals"][signal][kind][p]


def cell(row: dict[str, Any] | None) -> str:
    """An attack's verdict: caught with its margin (log10 of its largest statistic over its limit)."""
    if row is None:
        return "not run"
    if row["identical"]:
        return "no-op"
    if row["every_interval"]:
        return f"passed {row['passed']}/{row['judged']}" if row["passed"] else f"caught {row['judged']}/{row['judged']}"
    if row["passed"]:
        return "passed" if row["margin"] is None else f"**passed {row['margin']:+.1f}**"
    if row["margin"] is None:
        return f"caught ({row['reason'].replace('_', ' ')})"
    return f"caught {row['margin']:+.1f}"


def frontier(run: str, attack: str, stride: int) -> str:
    """The smallest strength of a swept attack caught, ``none`` if none, ``not run`` if not swept."""
    if not any(r["attack"] == attack for r in rows_of(run, stride)):
        return "not run"
    return strength(evaluation(run)["frontier"].get(attack, {}).get(str(stride)))


def fixed_attacks(columns: list[tuple[str, str, int]]) -> list[tuple[str, dict[str, Any]]]:
    """(column, row) of every non-adaptive fixed-strength attack that changed the evidence."""
    return [
        (f"{name} s={s}", r)
        for name, run, s in columns
        for r in rows_of(run, s)
        if r["strength"] is None and r["attack"] != ADAPTIVE and not r["identical"]
    ]


def calibration(run: str, stride: int) -> str:
    """Where a run's boundary came from: how many intervals (or which), of which honest runs."""
    settings = evaluation(run)["settings"]
    layout = settings["layout"][str(stride)]
    seeds = layout.get("calibration_seeds") or ([layout["calibration_seed"]] if layout.get("calibration_seed") else [])
    at = settings.get("calibration_at") or []
    if not at:
        where = f"{len(layout['positions'])} spread intervals"
    elif at == list(range(at[0], at[-1] + 1)):
        where = f"intervals {at[0]}-{at[-1]}"
    else:
        where = f"intervals {', '.join(map(str, at))}"
    if not seeds:
        return f"{where} of the same run"
    return f"{where} of {'each of seeds' if len(seeds) > 1 else 'seed'} {' and '.join(map(str, seeds))}"


def closest(run: str, stride: int, count: int = 2) -> str:
    """The honest intervals nearest the limit, each as a multiple of the limit."""
    ranked = sorted((h for h in honest(run, stride) if h["margin"] is not None), key=lambda h: -h["margin"])
    return ", ".join(f"{h['interval']}: {times(h['margin'])}" for h in ranked[:count])


def link(run: str) -> str:
    return f"[`{run}`](../bench/results/{run}/eval.md)"


# --- evaluation: tables ----------------------------------------------------------------------------------


def caught_summary(columns: list[tuple[str, str, int]]) -> str:
    judged = fixed_attacks(columns)
    missed = [f"{r['label']} ({where})" for where, r in judged if r["passed"]]
    if missed:
        return f"**missed**: {', '.join(missed)}"
    closest_margin = min(r["margin"] for _, r in judged if r["margin"] is not None)
    return (
        f"**met**: all {len(judged)} caught, the closest {closest_margin:.1f} orders of magnitude outside the boundary"
    )


def eval_targets() -> str:
    """The evaluation's targets against the committed results."""
    per_workload = "; ".join(
        f"{w} " + ", ".join(fp(run, s) for name, run, s in TINY if name == w)
        for w in ("vision", "diffusion", "language")
    )
    fpr_met = all(not false_positives(run, s) and len(honest(run, s)) >= HELD_OUT_TARGET[s] for _, run, s in TINY)
    maxpool = ", ".join(f"{fp('eval_vision_tiny_maxpool', s)} at s = {s}" for s in (1, 10, 100))
    full = ", ".join(f"{fp('eval_language_full', s)} at s = {s}" for s in (1, 10))
    adaptive = [r for _, run, s in TINY for r in rows_of(run, s) if r["attack"] == ADAPTIVE]
    cost = load("compare_cost_language.json")
    share = cost["share_at_stride"]
    rows = [
        [
            "0% attack success for every fixed-strength attack, s = 1, 10, 100, three tiny workloads (the swept "
            "attacks, a row moved by `delta` and a targeted push of `lam`, pass below their frontier: the sweep rows)",
            caught_summary(TINY),
        ],
        [
            "no false positive in 100+ honest held-out intervals at s = 1, 10 and 30+ at s = 100",
            f"**{'met' if fpr_met else 'missed'}**: {per_workload} (the CNN with max-pooling: {maxpool})",
        ],
        [
            "the same for language with the kernel profiles and the rounding floor (s = 1, 10; a smaller layout)",
            caught_summary(LANGUAGE_FLOOR),
        ],
        [
            "no false positive at s = 10 on a family of execution profiles calibration never saw "
            "(leave one family out)",
            families_target(),
        ],
        ["the full language config at s = 1 and 10", f"{caught_summary(FULL)}; false positives {full}"],
        [
            "the chat model (llm): every fixed-strength attack caught (the swept ones below their frontier pass), "
            "and no false positive in 100+ held-out intervals "
            "of the tiny base at s = 1, 10 (30+ at 100) and 60+ of SmolLM2 with LoRA at s = 10 (at s = 100: counted)",
            llm_target(),
        ],
        [
            "the adaptive attacker: where it passes, what it gains",
            f"passes {sum(r['passed'] for r in adaptive)} of {sum(r['judged'] for r in adaptive)} intervals it "
            "fakes; what it gains is in the evaluation's adaptive attacker table",
        ],
        [
            "comparison under 2% of a replay (full language)",
            f"**{'met' if share['10'] < 0.02 else 'missed'} from s = {cost['smallest_stride_under_target']}** "
            f"(wall clock; s = {cost['cpu']['smallest_stride_under_target']} in CPU time): {share['10']:.1%} at "
            f"s = 10, {share['1']:.1%} at s = 1",
        ],
    ]
    return table(["target", "measured"], rows)


def family_rows() -> list[tuple[str, str, int, dict[str, Any]]]:
    """(workload, run, stride, {family: its row}) of every leave-one-family-out result, in table order."""
    return [
        (workload, run, stride, load(f"{run}/families.json")["strides"][str(stride)]["families"])
        for workload, run, strides in FAMILY_RUNS
        for stride in strides
    ]


def family_cell(row: dict[str, Any] | None, key: str = "false_positives") -> str:
    if row is None:
        return "-"
    return "inert" if row["inert"] else f"{row[key]}/{row['intervals']}"


def families() -> str:
    """False positives per workload, stride and held-out family, beside the main evaluation's split."""
    main = {(name, s): run for name, run, s in TINY}
    rows = [
        [workload, str(stride), fp(main[workload, stride], stride), *(family_cell(by_family.get(f)) for f in FAMILIES)]
        for workload, _, stride, by_family in family_rows()
    ]
    head = ["workload", "s", "main evaluation", *(f"{f.replace('-', ' ')} held out" for f in FAMILIES)]
    return table(head, rows, "llr" + "r" * len(FAMILIES))


def main_calibration() -> str:
    """Which profiles each main evaluation calibrated on, and whether its limits had the rounding floor."""
    runs = list(dict.fromkeys(run for _, run, _ in TINY))
    groups: dict[str, list[str]] = {}
    for run in runs:
        settings = evaluation(run)["settings"]
        floor = settings.get("floor_ulps", 0.0)
        how = ", ".join(settings["calibration_profiles"]) + (
            f"; limits floored at {floor:g} ulps" if floor else "; no rounding floor (run before it existed)"
        )
        groups.setdefault(how, []).append(RUNS[run].split(",")[0])
    return "; ".join(f"{' and '.join(dict.fromkeys(names))}: {how}" for how, names in groups.items())


def families_target() -> str:
    """The leave-one-family-out target at s = 10: every non-inert family's false positives per workload."""
    at10 = [(workload, by_family) for workload, _, stride, by_family in family_rows() if stride == 10]
    failed = [
        f"{workload} {family} {row['false_positives']}/{row['intervals']}"
        for workload, by_family in at10
        for family, row in by_family.items()
        if row["false_positives"] and not row["inert"]
    ]
    judged = min(row["intervals"] for _, by_family in at10 for row in by_family.values())
    if not failed and judged >= HELD_OUT_TARGET[10]:
        return f"**met**: 0 in {judged}+ held-out intervals per workload and family"
    return f"**missed** ({judged}+ held-out intervals per workload and family): " + ", ".join(failed)


def floor_cost() -> str:
    """The swept attacks' frontiers with the rounding floor and without it (bench/eval.py --floor)."""
    rows = []
    for workload in ("vision", "diffusion", "language"):
        with_floor, without = f"floor_{workload}_tiny", f"floor_{workload}_tiny_none"
        for stride in (1, 10, 100):
            rows.append(
                [
                    workload,
                    str(stride),
                    *(frontier(run, attack, stride) for attack in SWEPT for run in (without, with_floor)),
                ]
            )
    head = [
        "workload",
        "s",
        "row_tamper delta: without the floor",
        "with it",
        "targeted_gradient lam: without the floor",
        "with it",
    ]
    return table(head, rows, "llrrrr")


def families_detail() -> str:
    """Every held-out family: with and without the floor, the first replay alone, the closest call, what failed."""
    rows = []
    for workload, _, stride, by_family in family_rows():
        for family in FAMILIES:
            row = by_family.get(family)
            if row is None:
                continue
            failing: dict[str, int] = {}
            for judged in row["judged"]:
                for statistic in [] if judged["valid"] else judged["failing"]:
                    failing[statistic] = failing.get(statistic, 0) + 1
            top = ", ".join(f"{k} ({n})" for k, n in sorted(failing.items(), key=lambda kv: -kv[1])[:3]) or "-"
            closest_margin = "-" if row["closest_margin"] is None else times(row["closest_margin"])
            rows.append(
                [
                    workload,
                    str(stride),
                    family,
                    ", ".join(row["held_out"]),
                    family_cell(row),
                    family_cell(row, "false_positives_without_floor"),
                    family_cell(row, "single_replay_rejections"),
                    closest_margin,
                    top,
                ]
            )
    head = [
        "workload",
        "s",
        "held out",
        "judged under",
        "false positives",
        "without the floor",
        "first replay alone",
        "closest interval",
        "statistics that failed (intervals)",
    ]
    return table(head, rows, "lllllrrrl")


def verdict_table(columns: list[tuple[str, str, int]]) -> str:
    """Attacks by column: verdicts, sweep frontiers, and honest false positives."""
    runs = list(dict.fromkeys(run for _, run, _ in columns))
    fixed = list(dict.fromkeys(r["label"] for run in runs for r in evaluation(run)["rows"] if r["strength"] is None))
    swept = list(dict.fromkeys(r["attack"] for run in runs for r in evaluation(run)["rows"] if r["strength"]))
    rows = [[label, *(cell(row_of(run, label, s)) for _, run, s in columns)] for label in fixed]
    rows += [[f"{a}: smallest strength caught", *(frontier(run, a, s) for _, run, s in columns)] for a in swept]
    rows.append(["honest false positives, held-out intervals (confirmed)", *(fp(run, s) for _, run, s in columns)])
    rows.append(["honest false positives, first replay alone", *(fp(run, s, first=True) for _, run, s in columns)])
    return table(["attack", *(f"{name} s={s}" for name, _, s in columns)], rows, "l" + "r" * len(columns))


def eval_tiny() -> str:
    return verdict_table(TINY)


def eval_full() -> str:
    return verdict_table(FULL)


def eval_llm() -> str:
    return verdict_table(LLM)


def eval_ddp() -> str:
    return verdict_table(DDP)


# Exact mode: bench/exact.py's replays per workload, and bench/eval.py --exact's evaluations (s = 10).
EXACT_WORKLOADS = [
    (f"exact_{w}{size}.json", f"{w} ({size.strip('_') or 'full'})")
    for w, size in (
        ("vision", "_tiny"),
        ("diffusion", "_tiny"),
        ("language", "_tiny"),
        ("llm", "_tiny"),
        ("language", ""),
    )
    if (RESULTS / f"exact_{w}{size}.json").is_file()
]
EXACT_EVALS = [w for w in ("vision", "diffusion", "language", "llm") if ran(f"exact_eval_{w}_tiny")]


def log_per_interval(r: dict[str, Any]) -> str:
    """A bench/exact.py run's mean rounding log per interval, and its share of E_k."""
    size = sum(r["log_bytes"]) / len(r["log_bytes"])
    return f"{mb(size)} ({size / r['evidence_bytes']:.0%} of E_k)"


def exact_replays() -> str:
    """Per workload: the calibrated thresholds, the profiles whose replays reproduced every interval, the log's
    size against E_k's, and exact training's time against boundary mode's."""
    rows = []
    for name, workload in EXACT_WORKLOADS:
        r = load(name)
        replays = r["replays"]
        total = len(next(iter(replays.values())))
        failed = [
            f"{p} {sum(v['valid'] for v in vs)}/{total}" for p, vs in replays.items() if not all(v["valid"] for v in vs)
        ]
        reproduced = f"{len(replays) - len(failed)}/{len(replays)} profiles" + (
            f" (not: {', '.join(failed)})" if failed else ""
        )
        beyond = [d["profile"] for d in r["discrepancies"] if d["faults"]]
        thresholds = ", ".join(f"{phase} {value}" for phase, value in r["threshold"].items())
        floor = r.get("gradient_floor", "not recorded")
        thresholds += "; gradient floor " + (
            "none" if floor is None else f"2^-{floor}" if floor != "not recorded" else floor
        )
        entries = sum(r["log_entries"]) / len(r["log_entries"])
        if beyond:
            thresholds += f"; beyond the probe: {', '.join(beyond)}"
        for name, claims in r.get("distributed_claims", {"ddp2": r.get("ddp2_claims", [])}).items():
            if claims:
                reproduced += f"; a {name} provider's: {sum(v['valid'] for v in claims)}/{len(claims)} intervals"
        log = log_per_interval(r)
        ratio = f"{r['time_ratio']:.1f}x"
        if (busy := r["machine"].get("loadavg_after", 0.0)) > E2E_BUSY_LOAD:  # another run shared the machine
            ratio += f" (a busy machine: load average {busy:.1f})"
        rows.append([workload, f"{r['stride']}", thresholds, reproduced, f"{entries:,.0f}", log, ratio])
    head = [
        "workload",
        "s",
        "thresholds (float32 ulps)",
        "every interval bit for bit",
        "log entries / interval",
        "log / interval",
        "training time vs boundary mode",
    ]
    return table(head, rows, "lrllrrr")


def exact_cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "not run"
    if row["identical"]:
        return "no-op"
    verdict = "passed" if row["passed"] else "caught"
    return f"{verdict} {row['judged'] - row['passed']}/{row['judged']}" if row["every_interval"] else verdict


def exact_eval() -> str:
    """Boundary mode and exact mode side by side at s = 10, per attack, and the honest false positives."""
    pairs = [(f"eval_{w}_tiny", f"exact_eval_{w}_tiny") for w in EXACT_EVALS]
    rows = [["honest held-out intervals judged faulty"] + [fp(run, 10) for pair in pairs for run in pair]]
    labels = list(dict.fromkeys(r["label"] for _, exact in pairs for r in rows_of(exact, 10)))
    for label in labels:
        cells = [(cell(row_of(boundary, label, 10)), exact_cell(row_of(exact, label, 10))) for boundary, exact in pairs]
        rows.append([label, *(c for pair in cells for c in pair)])
    head = ["s = 10"] + [f"{w}: {mode}" for w in EXACT_EVALS for mode in ("boundary", "exact")]
    return table(head, rows)


def steering_rows() -> list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]]:
    """(workload, the log-steering attacker's row, boundary mode's honest rerun on other hardware) for each
    workload whose steering run (bench/eval.py --exact-steering) is committed."""
    return [
        (
            w,
            row_of(f"exact_eval_{w}_tiny_steering", "log_steering", 10),
            evaluation(f"eval_{w}_tiny")["baseline"]["10"]["other_hardware"],
        )
        for w in EXACT_EVALS
        if ran(f"exact_eval_{w}_tiny_steering")
    ]


def exact_steering() -> str:
    """Exact mode's log-steering attacker (bench/eval.py --exact-steering) next to boundary mode's boundary-aware
    attacker: its verdict, and how far each moves the weights from the honest run's."""
    rows = []
    for w, r, other in steering_rows():
        runs = [f"eval_{w}_tiny", *([LLM_ADAPTIVE[1]] if w == "llm" else [])]
        adaptive = [
            b["effect"]["moved"]
            for name in runs
            for b in rows_of(name, 10)
            if b["attack"] == ADAPTIVE and not b["identical"] and b["passed"] == b["judged"]
        ]
        rows.append(
            [
                f"{w} (tiny)",
                cell(r),
                "not run" if r is None else f"{r['effect']['moved']:.1e}",
                f"{max(adaptive):.1e}" if adaptive else "none passed every interval",
                "not run" if other is None else f"{other['moved']:.1e}",
            ]
        )
    head = [
        "s = 10, the last 12 intervals faked (the held-out ones judged)",
        "log steering (exact mode)",
        "weights moved",
        "boundary-aware attacker passing in boundary mode: weights moved (largest)",
        "honest rerun on other hardware: moved",
    ]
    return table(head, rows, "llrrr")


def steering_moved() -> str:
    """The log-steering attacker's largest movement of the weights, next to honest reruns' in boundary mode."""
    found = steering_rows()
    moved = [r["effect"]["moved"] for _, r, _ in found if r is not None]
    honest = [other["moved"] for _, _, other in found if other is not None]
    if not moved:
        return "not measured yet"
    return (
        f"{max(moved):.1e} on {len(moved)} tiny workloads (relative L2), where honest reruns on other "
        f"hardware in boundary mode end {min(honest):.1e} to {max(honest):.1e} apart"
    )


def exact_llm_adaptive() -> str:
    """The chat model's boundary-aware attacker in exact mode: intervals caught of those judged."""
    row = rows_of(EXACT_LLM_ADAPTIVE, 10)[0]
    return f"{row['judged'] - row['passed']} of {row['judged']}"


def exact_summary() -> str:
    """Per workload at s = 10, boundary mode against exact mode: honest false positives, attacks caught (the
    same attacks, the boundary-aware attacker apart), and what exact mode costs (training time, the log)."""
    rows = []
    for w in EXACT_EVALS:
        boundary, exact = f"eval_{w}_tiny", f"exact_eval_{w}_tiny"
        plain: list[tuple[bool, bool]] = []  # (caught in boundary mode, caught in exact mode), the same attacks
        for row in rows_of(exact, 10):
            other = row_of(boundary, row["label"], 10)
            if row["attack"] != ADAPTIVE and other is not None and not (row["identical"] or other["identical"]):
                plain.append((not other["passed"], not row["passed"]))  # (an attack that changed nothing is left out)
        # the boundary-aware attacker in each mode, wherever it ran (the chat model's: runs of their own)
        own = (LLM_ADAPTIVE[1], EXACT_LLM_ADAPTIVE) if w == "llm" else ("", "")
        adaptive_runs = [[run, *([o] if o and ran(o) else [])] for run, o in zip((boundary, exact), own, strict=True)]
        adaptive = [
            [
                (r["judged"] - r["passed"], r["judged"])
                for run in runs
                for r in rows_of(run, 10)
                if r["attack"] == ADAPTIVE and not r["identical"]
            ]
            for runs in adaptive_runs
        ]
        counts = [f"{sum(c[i] for c in plain)}/{len(plain)}" for i in (0, 1)]
        counts += [f"{sum(c for c, _ in rows)}/{sum(n for _, n in rows)}" if rows else "not run" for rows in adaptive]
        cost = "not measured"
        if (RESULTS / f"exact_{w}_tiny.json").is_file():
            r = load(f"exact_{w}_tiny.json")
            cost = f"{r['time_ratio']:.1f}x; {log_per_interval(r)}"
        rows.append([f"{w} (tiny)", fp(boundary, 10), fp(exact, 10), *counts, cost])
    head = [
        "s = 10",
        "honest judged faulty: boundary",
        "exact",
        "attacks caught: boundary",
        "exact",
        "boundary-aware attacker's intervals caught: boundary",
        "exact",
        "exact mode's training time; log per interval",
    ]
    return table(head, rows, "lrrrrrrl")


def llm_target() -> str:
    """Attacks caught and false positives of the chat model's columns against their held-out targets."""
    targets = {run: LLM_HELD_OUT_TARGET.get(run, HELD_OUT_TARGET[s]) for _, run, s in LLM}
    fpr_met = all(not false_positives(run, s) and len(honest(run, s)) >= targets[run] for _, run, s in LLM)
    # a column with no target (SmolLM2 at s = 100: too few intervals to ask for one) says so
    columns = ", ".join(
        f"{fp(run, s)} ({name}) at s = {s}" + ("" if targets[run] else f": {len(honest(run, s))} held-out, no target")
        for name, run, s in LLM
    )
    missing = [what for run, what in LLM_NOT_RUN.items() if run not in targets]
    return f"{caught_summary(LLM)}; false positives **{'met' if fpr_met else 'missed'}**: {columns}" + (
        f"; **not run yet**: {' and '.join(missing)}" if missing else ""
    )


def eval_llm_poison() -> str:
    """The poisoned instruction set: caught or not, and its success on held-out triggered prompts."""
    rows = []
    for name, run, s in LLM_POISON:
        base, window = evaluation(run)["baseline"][str(s)], evaluation(run)["settings"]["adaptive_window"]
        for label in ("poisoned_instructions rate=0.5", "poisoned_instructions rate=1"):
            row = row_of(run, label, s)
            if row is None:
                continue
            effect = row["effect"]
            # the honest model on the attack's own held-out prompts (results before that: the baseline's)
            honest_at = effect.get(
                "honest_backdoor_success", base["final" if row["every_interval"] else "attacked"]["backdoor_success"]
            )
            faked = f"the last {window} intervals" if row["every_interval"] else "one interval"
            rows.append([f"{name} s={s}", label, faked, cell(row), share(effect["backdoor_success"]), share(honest_at)])
    head = ["run", "attack", "faked", "verdict", "trigger answered with the reply (held-out prompts)", "honest model"]
    return table(head, rows, "lllrrr")


def eval_runs() -> str:
    """Every committed evaluation's honest side: false positives, which intervals, the closest passes."""
    rows = []
    for run, what in RUNS.items():
        for s in evaluation(run)["settings"]["strides"]:
            failed = ", ".join(
                f"{h['interval']} ({times(h['margin'])}x, {'+'.join(h['failing'])})" for h in false_positives(run, s)
            )
            rows.append(
                [
                    link(run),
                    what,
                    str(s),
                    calibration(run, s),
                    fp(run, s),
                    failed or "-",
                    fp(run, s, first=True),
                    closest(run, s),
                ]
            )
    head = [
        "run",
        "workload",
        "s",
        "boundary from",
        "false positives",
        "which (x the limit, signals)",
        "first replay alone",
        "closest honest (interval: x the limit)",
    ]
    return table(head, rows, "llrlrlrl")


def eval_warmup() -> str:
    """Tiny language: a constant rate against a warm-up, and boundaries that see the warm-up or not."""
    rows = []
    for run, s in WARMUP:
        verdicts = [cell(row_of(run, label, s)) for label in ("lr_tamper scale=1.1", "low_precision")]
        bounds = [f"{bound(run, s, signal, 2):.1e}" for signal in ("weights", "optim")]
        rows.append(
            [
                link(run),
                RUNS[run].removeprefix("language, "),
                str(s),
                calibration(run, s),
                *verdicts,
                frontier(run, "row_tamper", s),
                fp(run, s),
                *bounds,
            ]
        )
    head = [
        "run",
        "rate",
        "s",
        "boundary from",
        "lr_tamper scale=1.1",
        "low_precision",
        "smallest row caught",
        "false positives",
        "weights bound, abs p99",
        "optimizer state bound, abs p99",
    ]
    return table(head, rows, "llrlrrrrrr")


def eval_signals() -> str:
    """The signal ablation: per column and signal subset, the smallest row change and targeted push caught,
    and the single-interval attacks that subset misses besides the sweeps."""
    rows = []
    for name, run, s in [*TINY, *FULL]:
        cells = []
        for subset in ("weights", "probe", "all"):
            entry = evaluation(run)["ablation"][str(s)][subset]
            smallest = [strength(entry["frontier"][a]) if a in entry["frontier"] else "not run" for a in SWEPT]
            missed = [m for m in entry["missed"] if not m.startswith(SWEPT)]
            cells.append(f"{' / '.join(smallest)}; misses {', '.join(missed) or 'nothing else'}")
        rows.append([f"{name} s={s}", *cells])
    head = ["run", *(f"{s}: smallest row / push caught; other misses" for s in ("weights", "probe", "all three"))]
    return table(head, rows)


def eval_adaptive() -> str:
    """What the boundary-aware attacker achieves, next to an honest run on other hardware."""
    rows = []
    for name, run, s in TINY:
        base = evaluation(run)["baseline"][str(s)]
        final, other = base["final"], base["other_hardware"]
        for r in rows_of(run, s):
            if r["attack"] != ADAPTIVE:
                continue
            e = r["effect"]
            backdoor = [share(x) for x in (e["backdoor_success"], final["backdoor_success"])]
            rows.append(
                [
                    f"{name} s={s}",
                    r["label"].removeprefix(f"{ADAPTIVE} "),
                    cell(r),
                    f"{e['target_loss'] - final['target_loss']:+.1e}",
                    f"{backdoor[0]} ({backdoor[1]})",
                    f"{e['moved']:.1e}",
                    "not run" if other is None else f"{other['moved']:.1e}",
                ]
            )
    head = [
        "run",
        "attacker",
        "verdict",
        "target loss change",
        "backdoor success (honest)",
        "weights moved",
        "honest rerun on other hardware moved",
    ]
    return table(head, rows, "lllrrrr")


def eval_adaptive_llm() -> str:
    """What the chat model's boundary-aware attacker (aiming at the poisoned reply) achieves."""
    name, run, s = LLM_ADAPTIVE
    if not ran(run):
        return "Not run yet."
    base = evaluation(run)["baseline"][str(s)]
    rows = []
    for r in rows_of(run, s):
        e, final, other = r["effect"], base["final"], base["other_hardware"]
        honest_success = e.get("honest_backdoor_success", final["backdoor_success"])  # on the same held-out prompts
        success = [share(x) for x in (e["backdoor_success"], honest_success)]
        rows.append(
            [
                f"{name} s={s}",
                r["label"].removeprefix(f"{ADAPTIVE} "),
                cell(r),
                f"{success[0]} ({success[1]})",
                f"{e['moved']:.1e}",
                "not run" if other is None else f"{other['moved']:.1e}",
            ]
        )
    head = [
        "run",
        "attacker",
        "verdict",
        "triggered prompts answered with the reply (honest)",
        "weights moved",
        "honest rerun on other hardware moved",
    ]
    return table(head, rows, "lllrrr")


def eval_backdoor() -> str:
    """The backdoor that works, for contrast: caught, and how far it moves the weights."""
    rows = []
    for name, run, s in TINY:
        r = row_of(run, "backdoor rate=0.5", s)
        if r is not None:
            rows.append(
                [f"{name} s={s}", cell(r), share(r["effect"]["backdoor_success"]), f"{r['effect']['moved']:.1e}"]
            )
    return table(["run", "backdoor rate=0.5", "backdoor success", "weights moved"], rows, "llrr")


def closest_fixed() -> str:
    """The non-adaptive attack caught by the smallest margin in the main evaluation."""
    where, row = min(((w, r) for w, r in fixed_attacks(TINY) if r["margin"] is not None), key=lambda x: x[1]["margin"])
    return f"{row['label']} on {where} ({row['margin']:+.1f})"


def band_reach() -> str:
    """How far above the p100 limit (log10 of value / limit) the near-tie band reaches, at the main evaluation's
    alpha (protocol 5: twice the p100 bound above a limit of alpha bounds, where no rounding floor is larger)."""
    from ovig_node.verify.check import BAND

    alphas = {evaluation(run)["settings"]["alpha"] for _, run, _ in TINY}
    return ", ".join(f"{math.log10(1 + BAND / alpha):+.2f}" for alpha in sorted(alphas))


def maxpool_share(*, per: bool) -> str:
    """The max-pooling CNN's false positives at s = 10: a share, or one in how many intervals."""
    failed, judged = len(false_positives("eval_vision_tiny_maxpool", 10)), len(honest("eval_vision_tiny_maxpool", 10))
    return f"{judged / failed:.0f}" if per else f"{failed / judged:.1%}"


def honest_margin(run: str, stride: int, interval: int) -> str:
    return times(next(h["margin"] for h in honest(run, stride) if h["interval"] == interval))


def latest_margin(run: str, stride: int, first: int) -> str:
    """The largest honest statistic over its limit among intervals ``first`` and later."""
    return f"{10 ** max(h['margin'] for h in honest(run, stride) if h['interval'] >= first):.0e}"


# --- benchmarks ------------------------------------------------------------------------------------------


def compare_cost() -> str:
    """The comparison's cost next to a replay (bench/compare_cost.py)."""
    rows = []
    for name in ("compare_cost_language.json", "compare_cost_language_tiny.json"):
        d, cpu = load(name), load(name)["cpu"]
        shares = [f"{d['share_at_stride'][s]:.1%} ({cpu['share_at_stride'][s]:.1%})" for s in ("1", "10", "100")]
        compare = f"{d['compare_seconds']:.2f} s ({cpu['compare_seconds']:.2f} s)"
        rows.append(
            [
                d["config"],
                f"{sum(d['coordinates'].values()):,}",
                f"{d['replay_seconds_per_step']:.2f} s",
                f"{d['replay_seconds_fixed']:.1f} s",
                compare,
                f"{d['compare_first_seconds']:.1f} s",
                *shares,
                f"s = {d['smallest_stride_under_target']} ({cpu['smallest_stride_under_target']})",
                f"{d['load_average'][0]:.1f}",
            ]
        )
    head = [
        "config",
        "coordinates",
        "replay per step",
        "replay fixed",
        "compare",
        "first compare in a process",
        "s=1",
        "s=10",
        "s=100",
        "under 2% from",
        "load average",
    ]
    return table(head, rows, "lrrrrrrrrrr")


def ipfs() -> str:
    """Add and verified read through the embedded IPFS node (bench/ipfs_roundtrip.py)."""
    rows = [
        [
            f"{r['mib']:g}",
            f"v{r['cid_version']}",
            f"{r['add_mb_s']:.0f}",
            f"{r['read_mb_s']:.0f}",
            f"{r['client_peak_mib']:.1f} MiB",
            f"{r['daemon_peak_rss_mib']:.0f} MiB",
        ]
        for r in load("ipfs_roundtrip.json")["results"]
    ]
    head = ["MiB", "CID", "add MB/s", "verified read MB/s", "client peak (Python)", "daemon RSS"]
    return table(head, rows, "rlrrrr")


def train_overhead() -> str:
    """Training with evidence against plain training (bench/train_overhead.py)."""
    rows = []
    for name, what in (
        ("train_overhead_vision_tiny.json", "vision (tiny)"),
        ("train_overhead_vision_tiny_ddp2.json", "vision (tiny) under ddp2, against plain ddp2"),
        (
            "train_overhead_vision_tiny_fsdp2.json",
            "vision (tiny) under fsdp2, against plain fsdp2 (the gather for evidence included)",
        ),
        ("train_overhead_llm_tiny_ddp2.json", "llm (tiny base, LoRA) under ddp2, against plain ddp2"),
        ("train_overhead_llm_tiny_fsdp2.json", "llm (tiny base, LoRA) under fsdp2, against plain fsdp2"),
        ("train_overhead_language.json", "language (full: MiniLM-L6)"),
        ("train_overhead_llm.json", "llm (SmolLM2-135M-Instruct, LoRA)"),
    ):
        d = load(name)
        steps = d["args"]["steps"]
        repeats = d["args"].get("repeats", 1)
        # through bench/harness.py: the median CPU of the repeats, with their spread; before it: the fastest wall
        harnessed = "measure" in d
        if harnessed:
            timed = f"{steps} steps, median CPU of {repeats}"
        else:
            timed = f"{steps} steps" + (f", fastest of {repeats}" if repeats > 1 else "") + " (wall)"
        for r in d["results"]:
            step = r["plain_s"] / steps
            kept = [f"{mb(r[f'kept_bytes_phi_{p}'])} ({r[f'reduction_phi_{p}']:.0f}x less)" for p in ("0.05", "0.1")]
            overhead = f"{r['overhead']:.1%}"
            if harnessed:
                spreads = (d["plain"]["cpu"]["spread"], r["timed"]["cpu"]["spread"])
                overhead += f" (spread {max(spreads):.0%})" + (" DISTURBED" if r["disturbed"] else "")
            rows.append(
                [
                    f"{what}, {timed}",
                    ms(step) if step < 1 else f"{step:.2f} s",
                    str(r["stride"]),
                    str(r["intervals"]),
                    overhead,
                    mb(r["evidence_bytes"]),
                    *kept,
                ]
            )
    head = ["workload", "plain step", "s", "K", "overhead", "evidence written", "kept at phi=0.05", "kept at phi=0.1"]
    return table(head, rows, "lrrrrrrr")


def e2e() -> str:
    """The whole system's cost per stride (bench/e2e.py), honest replays that failed and confirmations included:
    in a run with an honest failure (or none recorded), every overhead is time spent, not a cost."""
    rows = []
    runs = load("e2e_vision_tiny.json")["rows"]
    honest = all(r.get("honest_replays_failed", 1) == 0 for r in runs)
    for r in runs:
        failed, confirmed = r.get("honest_replays_failed"), r.get("honest_replays_confirmed")
        overhead = f"{r['overhead']:.2f}x" if honest else f"{r['overhead']:.2f}x (time spent, not a cost)"
        rows.append(
            [
                str(r["stride"]),
                str(r["intervals"]),
                str(r["sampled"]),
                f"{r['plain_s']:.2f} s",
                f"{r['evidence_s']:.2f} s",
                f"{r['replay_s']:.2f} s",
                overhead,
                of(failed, r["sampled"], bold=True),
                of(confirmed, r["sampled"]),
                f"{r['gas_per_task']:,}",
                mb(r["evidence_bytes"]),
                mb(r["kept_bytes"]),
                mb(r["transmitted_bytes"]),
            ]
        )
    head = [
        "s",
        "K",
        "sampled",
        "plain",
        "with evidence",
        "watcher's replays",
        "overhead",
        "honest failures (after confirmation)",
        "confirmations needed",
        "gas / task",
        "evidence",
        "kept",
        "sent",
    ]
    return table(head, rows, "r" * len(head))


E2E_LLM = "e2e_llm.json"
E2E_LLM_PROJECTED = 1000  # the stride the real model's run is too short to train at: composed from s = 100's parts
E2E_LLM_TARGET = (100, "0.05", 1.10)  # the target: at most 1.10x at s = 100, phi = 0.05
# Training with evidence and plain training run the same steps: a wall-time difference beyond writing the
# evidence files, larger than this share of plain training, is other work on the machine, not a cost
E2E_DISTURBED = 0.05
# ... and so is a load average above one busy core (the benchmark's own one thread) and half another,
# before or after the run: work that slowed plain training and the replays alike would hide from the above
E2E_BUSY_LOAD = 1.5


def e2e_disturbance(row: dict[str, Any]) -> float:
    """The share of plain training by which a run with evidence took longer (or shorter) than plain training
    plus its own evidence writing: what the machine's other work moved it by."""
    return (row["evidence_s"] - row["plain_s"] - row["evidence_write_s"]) / row["plain_s"]


def e2e_llm_rows() -> list[dict[str, Any]]:
    """The real model's rows (bench/e2e.py --workload llm --no-tiny), and one at E2E_LLM_PROJECTED composed
    from the longest measured stride's parts: its evidence file's writing time and its watcher's replay
    time per step (fixed costs included, so an upper bound at a longer stride)."""
    d = load(E2E_LLM)
    busy = max(d["machine"]["loadavg_before"][0], d["machine"]["loadavg_after"][0]) > E2E_BUSY_LOAD
    rows = [dict(r, projected=False, disturbed=busy or abs(e2e_disturbance(r)) > E2E_DISTURBED) for r in d["rows"]]
    base = max(rows, key=lambda r: r["stride"])
    step = base["plain_s"] / d["args"]["steps"]
    writing = base["evidence_write_s"] / base["intervals"]
    replay_step = base["replay_s_per_interval"] / base["stride"]
    s = E2E_LLM_PROJECTED
    evidence = 1 + writing / (s * step)
    rows.append(
        {
            "stride": s,
            "projected": True,
            "from": base["stride"],
            "plain_s": base["plain_s"],
            "training_ratio": evidence,
            "replay_s_per_interval": replay_step * s,
            "evidence_file_bytes": base["evidence_file_bytes"],
            "evidence_write_s": writing,
            "intervals": 1,
            "overhead_at_phi": {phi: evidence + float(phi) * replay_step / step for phi in ("0.05", "0.1")},
            "honest_replays_failed": None,
            "sampled": 0,
            "disturbed": base["disturbed"],
        }
    )
    return rows


def e2e_llm() -> str:
    """SmolLM2-135M-Instruct with LoRA, the whole system's cost per stride (bench/e2e.py)."""
    d = load(E2E_LLM)
    rows = []
    for r in e2e_llm_rows():
        training = f"{r['training_ratio'] if r['projected'] else r['evidence_s'] / r['plain_s']:.3f}x"
        if r["disturbed"] and not r["projected"]:
            training += f" (**disturbed**: {e2e_disturbance(r):+.0%} of plain training unexplained; load average "
            training += f"{max(d['machine']['loadavg_before'][0], d['machine']['loadavg_after'][0]):.1f})"
        stride = str(r["stride"])
        if r["projected"]:
            stride += f" (projected from s = {r['from']}{', disturbed' if r['disturbed'] else ''})"
        failed = "-" if r["projected"] else of(r["honest_replays_failed"], r["sampled"], bold=True)
        rows.append(
            [
                stride,
                mb(r["evidence_file_bytes"]),
                f"{r['evidence_write_s'] / r['intervals']:.1f} s",
                training,
                f"{r['replay_s_per_interval']:.0f} s",
                failed,
                *(f"{r['overhead_at_phi'][phi]:.3f}x" for phi in ("0.05", "0.1")),
            ]
        )
    head = [
        "s",
        "evidence file",
        "writing it",
        f"training with evidence / plain ({d['args']['steps']} steps)",
        "watcher per sampled interval",
        "honest failures",
        "overhead at phi = 0.05",
        "at phi = 0.1",
    ]
    return table(head, rows, "rrrrrrrr")


def target_verdict(value: float, target: float, *, disturbed: bool, composed: bool) -> str:
    """How a cost stands against its target (issue 48): only a measured figure no other work disturbed meets or
    misses one. A figure composed from measured parts is labelled so and judged by nothing."""
    if disturbed:
        return "**not measured yet**: disturbed by other work on the machine, so time spent, not a cost"
    if composed:
        return "not judged: composed from measured parts, not measured on the running system"
    return "met" if value <= target else "**missed**"


def e2e_llm_target() -> str:
    """The issue's target against the real model's row at its stride: composed, as every e2e overhead is
    (evidence / plain + phi x K x replay / plain, from parts of one run), so it meets nothing."""
    stride, phi, target = E2E_LLM_TARGET
    rows = e2e_llm_rows()
    row = next(r for r in rows if r["stride"] == stride)
    value = row["overhead_at_phi"][phi]
    failed = sum(r["honest_replays_failed"] or 0 for r in rows if not r["projected"])
    if failed:  # an honest interval judged faulty fails the run, whatever its cost
        verdict = f"**missed**: {failed} honest replays failed"
    else:  # the target's own row: another stride's disturbance does not move it
        verdict = target_verdict(value, target, disturbed=row["disturbed"], composed=True)
    others = [str(r["stride"]) for r in rows if r["disturbed"] and not r["projected"] and r is not row]
    caveat = f" (the row at s = {', '.join(others)} is flagged: see the table)" if others else ""
    return (
        f"{value:.3f}x at s = {stride}, phi = {phi}, composed as evidence / plain + phi x K x replay / plain "
        f"(target: at most {target:.2f}x): {verdict}{caveat}"
    )


def e2e_llm_storage() -> str:
    """What a provider of a 10,000-step task keeps at s = 100 and phi = 0.05 (the start and end of each sampled
    interval and the deliverable: about 2 phi K + 1 files) against an evidence file for every step."""
    steps, (stride, phi, _) = 10_000, E2E_LLM_TARGET
    file = next(r for r in e2e_llm_rows() if r["stride"] == stride)["evidence_file_bytes"]
    kept = (2 * float(phi) * steps / stride + 1) * file
    return (
        f"{mb(file)} an evidence file; a 10,000-step task at s = {stride} and phi = {phi} keeps about "
        f"{mb(kept)}, against {steps * file / 1e9:.1f} GB for a file every step"
    )


def e2e_llm_step() -> str:
    d = load(E2E_LLM)
    return f"{d['rows'][0]['plain_s'] / d['args']['steps']:.2f} s"


def llm_train_overhead() -> str:
    """SmolLM2 with LoRA, training with evidence against plain (bench/train_overhead.py --workload llm), and what
    each evidence file added to the run: its probe gradient is a forward and backward pass of its own."""
    d = load("train_overhead_llm.json")
    steps = d["args"]["steps"]
    rows = sorted(d["results"], key=lambda r: r["stride"])
    overheads = " and ".join(f"{r['overhead']:+.1%} at s = {r['stride']}" for r in rows)
    first = rows[0]
    per_file = (first["evidence_s"] - first["plain_s"]) / first["intervals"]
    return (
        f"{overheads} ({steps} steps, one run each; at s = {first['stride']} each evidence file added "
        f"{per_file:.1f} s, a plain step takes {first['plain_s'] / steps:.2f} s)"
    )


def of(count: int | None, total: int, *, bold: bool = False) -> str:
    """``count of total``, ``0`` or ``not recorded``; in bold if ``bold`` and nonzero."""
    if count is None:
        return "not recorded"
    if not count:
        return "0"
    return f"**{count} of {total}**" if bold else f"{count} of {total}"


def e2e_judging() -> str:
    """How the committed run calibrated its boundary and judged its sample (bench/e2e.py records it)."""
    d = load("e2e_vision_tiny.json")
    j = d.get("judging")
    if j is None:
        return "its boundary and verdicts were not recorded"
    first, *confirm = j["watcher_profiles"]
    watcher = f"`{first}`" + (
        f", and a rejection stands only if a replay under `{'`, `'.join(confirm)}` rejects too" if confirm else ""
    )
    calibrated = set(j["watcher_profiles"]) & set(j["calibration_profiles"])
    return (
        f"the provider trains on `{j['claim_profile']}`; the boundary is calibrated as the demo's "
        f"(alpha {j['alpha']:g}, honest replays under `{'`, `'.join(j['calibration_profiles'])}` of "
        f"`{j['claim_profile']}` claims at {j['calibration_positions']} intervals spread over the run, or "
        f"every interval if fewer); the watcher, as the demo's, replays under {watcher} ("
        + (f"`{'`, `'.join(sorted(calibrated))}` also calibrated" if calibrated else "no watcher profile calibrated")
        + ")"
    )


def e2e_verdict(*, short: bool) -> str:
    """Whether the committed run's honest replays passed: a run with failures is reported as failing."""
    data = load("e2e_vision_tiny.json")
    rows = data["rows"]
    failed = [r for r in rows if r.get("honest_replays_failed", 1)]
    sampled = sum(r["sampled"] for r in rows)
    confirmed = [r for r in rows if r.get("honest_replays_confirmed")]
    needed = ", ".join(f"{r['honest_replays_confirmed']} of {r['sampled']} at s = {r['stride']}" for r in confirmed)
    if not failed:
        if short:
            return (
                f"The whole-system benchmark's overhead on the tiny vision model is mostly fixed costs (a real "
                f"chat model's is in LLM post-training); its {sampled} sampled honest intervals all pass, "
                f"{needed or 'none'} only after a confirmation replay"
            )
        return (
            f"Every honest interval passed ({needed or 'none'} only after a confirmation replay), so the "
            f"watcher's replays column, confirmations included, is the cost of an honest "
            f"verification."
        )
    if short:
        return (
            "The whole-system benchmark's committed run judged honest replays faulty, so its overhead is not "
            "yet a cost of honest verification"
        )
    shown = ", ".join(f"{r.get('honest_replays_failed', '?')} of {r['sampled']} at s = {r['stride']}" for r in failed)
    why = sorted({signal for r in failed for f in r.get("failures", []) for signal in f["signals"]})
    return (
        f"**This run failed**: honest replays were judged faulty{' after confirmation' if 'judging' in data else ''} "
        f"({shown}"
        + (f"; outside the boundary on {', '.join(why)}" if why else "")
        + "). So the watcher's replays column is time spent, not the cost of verifying an honest run."
    )


def e2e_step() -> str:
    d = load("e2e_vision_tiny.json")
    return ms(d["rows"][0]["plain_s"] / d["args"]["steps"])


def e2e_formula() -> str:
    """OVIG's overhead formula on the full language workload at s = 100: evidence, plus replays at phi."""
    overhead = next(r["overhead"] for r in load("train_overhead_language.json")["results"] if r["stride"] == 100)
    return f"{1 + overhead + load('e2e_vision_tiny.json')['rows'][0]['phi']:.2f}x"


def api_load() -> str:
    """Latency of the owner API under load (bench/api_load.py)."""
    rows = [
        [
            name,
            f"{r['requests']:,}",
            str(r["errors"]),
            f"{r['p50_ms']:.1f}",
            f"{r['p95_ms']:.1f}",
            f"{r['p99_ms']:.1f}",
            f"{r['req_per_s']:.0f}",
            f"{r['server_cpu_ms_per_request']:.2f}",
        ]
        for name, r in load("api_load.json")["scenarios"].items()
    ]
    head = ["request", "requests", "errors", "p50 ms", "p95 ms", "p99 ms", "req/s", "server CPU ms/request"]
    return table(head, rows, "lrrrrrrr")


def api(key: str) -> Any:
    return load("api_load.json")[key]


def api_range(values: list[float], fmt: str) -> str:
    return f"{min(values):{fmt}} to {max(values):{fmt}}"


def api_p95_verdict() -> str:
    scenarios = api("scenarios")
    over = [name for name, r in scenarios.items() if r["p95_ms"] >= api("target_p95_ms")]
    if over:
        return f"**missed** by {', '.join(over)}"
    return f"every p95 is under it (the slowest {max(r['p95_ms'] for r in scenarios.values()):.1f} ms)"


# --- layer one: the statistics judge (ovig eval --mode layer-one) and targeted openings --------------------------

# (workload, layer one's run, the main evaluation whose replay verdicts it multiplies, strides)
LAYER_ONE = [
    ("vision", "layer_one_vision_tiny", "eval_vision_tiny", (1, 10, 100)),
    ("diffusion", "layer_one_diffusion_tiny", "eval_diffusion_tiny", (1, 10, 100)),
    ("language", "layer_one_language_tiny", "eval_language_tiny", (1, 10)),
]
PHI = 0.25  # the share of a batch's intervals sampled at a spec's default sample_bps (2500)


def layer_one_runs() -> list[tuple[str, str, str, tuple[int, ...]]]:
    return [run for run in LAYER_ONE if (RESULTS / run[1] / "layer_one.json").is_file()]


def layer_one_stride(run: str, stride: int) -> dict[str, Any]:
    return next(s for s in load(f"{run}/layer_one.json")["strides"] if s["stride"] == stride)


def layer_one_scores() -> str:
    """Per workload and stride: the honest run's largest score and each attack's (flagged in bold)."""
    runs = layer_one_runs()
    columns = [(workload, run, stride) for workload, run, _, strides in runs for stride in strides]
    labels = list(
        dict.fromkeys(
            a["label"] for _, run, stride in columns for a in layer_one_stride(run, stride)["attacks"] if "score" in a
        )
    )
    head = ["attack", *(f"{workload} s={stride}" for workload, _, stride in columns)]

    def score(value: float) -> str:
        return f"**{value:.2g}**" if value > load(f"{columns[0][1]}/layer_one.json")["threshold"] else f"{value:.2g}"

    honest = [max(layer_one_stride(run, stride)["honest"].values()) for _, run, stride in columns]
    rows = [["honest (largest of every interval)", *map(score, honest)]]
    for label in labels:
        cells = []
        for _, run, stride in columns:
            found = [a for a in layer_one_stride(run, stride)["attacks"] if a["label"] == label and "score" in a]
            cells.append(score(found[0]["score"]) if found else "-")
        rows.append([label, *cells])
    return table(head, rows, "l" + "r" * len(columns))


def catch_rates() -> dict[str, dict[str, float]]:
    """Per attack, over every (workload, stride) where it changed the claims: layer one's detections, its
    ROC area and F1 (pooled), the replay's share caught, and the chance of catching a one-interval fake by
    sampling alone (phi x caught when opened) and with targeted openings ((phi + (1 - phi) x flagged) x
    caught when opened)."""
    out: dict[str, dict[str, Any]] = {}
    for _, run, main_run, strides in layer_one_runs():
        summary = load(f"{run}/layer_one.json")["summary"]["attacks"]
        for stride in strides:
            for attack in layer_one_stride(run, stride)["attacks"]:
                replay = row_of(main_run, attack["label"], stride)
                if "score" not in attack or replay is None or replay["identical"] or replay["every_interval"]:
                    continue
                caught = 1 - replay["passed"] / replay["judged"]
                row = out.setdefault(
                    attack["label"],
                    {"runs": 0, "flagged": 0, "replay": 0.0, "sampling": 0.0, "targeted": 0.0, "auc": [], "f1": []},
                )
                row["runs"] += 1
                row["flagged"] += attack["flagged"]
                row["replay"] += caught
                row["sampling"] += PHI * caught
                row["targeted"] += (PHI + (1 - PHI) * attack["flagged"]) * caught
                row["auc"].append(summary[attack["label"]]["auc"])
                row["f1"].append(summary[attack["label"]]["f1"])
    for row in out.values():
        for key in ("replay", "sampling", "targeted"):
            row[key] /= row["runs"]
        row["auc"], row["f1"] = min(row["auc"]), min(row["f1"])
    return out


def catch_rate() -> str:
    rows = [
        [
            label,
            f"{row['flagged']}/{row['runs']}",
            f"{row['auc']:.3f}",
            f"{row['f1']:.2f}",
            share(row["replay"]),
            share(row["sampling"]),
            f"**{share(row['targeted'])}**",
        ]
        for label, row in catch_rates().items()
    ]
    head = [
        "attack (one faked interval)",
        "layer one flags it",
        "ROC area (lowest workload)",
        "F1 (lowest workload)",
        "replay catches it once opened",
        f"caught: sampling alone (phi = {PHI:g})",
        "caught: with targeted openings",
    ]
    return table(head, rows, "lrrrrrr")


def layer_one_honest() -> str:
    """Honest intervals layer one flags, per workload (a flagged honest interval costs its requester a bond)."""
    parts = []
    for workload, run, _, _ in layer_one_runs():
        summary = load(f"{run}/layer_one.json")["summary"]
        parts.append(
            f"{workload} {summary['honest_flagged']}/{summary['honest_intervals']} "
            f"(largest score {summary['honest_max']:.2g})"
        )
    return "; ".join(parts)


TABLES: dict[str, Callable[[], str]] = {
    "test_time": test_time,
    "gas": gas,
    "committee": committee,
    "eval_targets": eval_targets,
    "families": families,
    "families_detail": families_detail,
    "floor_cost": floor_cost,
    "eval_tiny": eval_tiny,
    "eval_full": eval_full,
    "eval_llm": eval_llm,
    "eval_ddp": eval_ddp,
    "exact_replays": exact_replays,
    "exact_eval": exact_eval,
    "exact_summary": exact_summary,
    "exact_steering": exact_steering,
    "eval_llm_poison": eval_llm_poison,
    "eval_runs": eval_runs,
    "eval_warmup": eval_warmup,
    "eval_signals": eval_signals,
    "eval_adaptive": eval_adaptive,
    "eval_adaptive_llm": eval_adaptive_llm,
    "eval_backdoor": eval_backdoor,
    "compare_cost": compare_cost,
    "ipfs": ipfs,
    "train_overhead": train_overhead,
    "e2e": e2e,
    "e2e_llm": e2e_llm,
    "api_load": api_load,
    "layer_one_scores": layer_one_scores,
    "catch_rate": catch_rate,
}
VALUES: dict[str, Callable[[], str]] = {
    "layer_one_honest": layer_one_honest,
    "layer_one_threshold": lambda: f"{load(layer_one_runs()[0][1] + '/layer_one.json')['threshold']:g}",
    "test_time_after": lambda: test_minutes("two-workers"),
    "test_cpu_floor": lambda: test_cpu_floor("two-workers"),
    "test_cpu_floor_before": lambda: test_cpu_floor("two-workers at 4ccfd66"),
    "test_time_before": lambda: test_minutes("two-workers at 4ccfd66"),
    "headline_caught": lambda: caught_summary(TINY),
    "gas_missed": gas_missed,
    "drand_gas": lambda: f"{load('gas.json')['calls']['DrandBeacon.submitRound (verifies a round)']:,}",
    "attest_gas": lambda: f"{load('gas.json')['calls']['attest']:,} gas",
    "closest_fixed": closest_fixed,
    "band_reach": band_reach,
    "steering_moved": steering_moved,
    "exact_llm_adaptive": exact_llm_adaptive,
    "main_calibration": main_calibration,
    "maxpool_rate": lambda: maxpool_share(per=False),
    "maxpool_per": lambda: maxpool_share(per=True),
    "constant_interval_1": lambda: honest_margin("eval_language_tiny_s100_constant", 100, 1),
    "constant_interval_8": lambda: honest_margin("eval_language_tiny_s100_constant", 100, 8),
    "constant_late": lambda: latest_margin("eval_language_tiny_s100_constant", 100, 19),
    "seed2_optim_p100": lambda: f"{bound('eval_language_tiny_s100_seed2_only', 100, 'optim', 4):.1e}",
    "seeds23_optim_p100": lambda: f"{bound('eval_language_tiny_s100', 100, 'optim', 4):.1e}",
    "constant_weights_p100": lambda: f"{bound('eval_language_tiny_constant', 10, 'weights', 4):.1e}",
    "constant_weights_p999": lambda: f"{bound('eval_language_tiny_constant', 10, 'weights', 3):.1e}",
    "vision_step": lambda: ms(
        load("train_overhead_vision_tiny.json")["results"][0]["plain_s"]
        / load("train_overhead_vision_tiny.json")["args"]["steps"]
    ),
    "language_evidence_file": lambda: mb(
        next(r["evidence_bytes"] for r in load("train_overhead_language.json")["results"] if r["intervals"] == 1)
    ),
    "e2e_ovig": lambda: f"{load('e2e_vision_tiny.json')['ovig_published']['overhead']}x",
    "e2e_phi": lambda: f"{load('e2e_vision_tiny.json')['rows'][0]['phi']:g}",
    "e2e_step": e2e_step,
    "e2e_llm_target": e2e_llm_target,
    "e2e_llm_step": e2e_llm_step,
    "llm_train_overhead": llm_train_overhead,
    "e2e_llm_storage": e2e_llm_storage,
    "e2e_judging": e2e_judging,
    "e2e_verdict": lambda: e2e_verdict(short=False),
    "e2e_status": lambda: e2e_verdict(short=True),
    "language_formula": e2e_formula,
    "api_tasks": lambda: f"{api('history')['posted']:,}",
    "api_accepted": lambda: f"{api('history')['accepted']:,}",
    "api_committed": lambda: f"{api('history')['committed_batch_0']:,}",
    "api_cancelled": lambda: f"{api('history')['cancelled']:,}",
    "api_index_seconds": lambda: f"{api('index_seconds'):.0f} s",
    "api_concurrency": lambda: str(api("concurrency")),
    "api_target_p95": lambda: f"{api('target_p95_ms'):g} ms",
    "api_p95_verdict": api_p95_verdict,
    "api_cpu": lambda: api_range([r["server_cpu_ms_per_request"] for r in api("scenarios").values()], ".2f") + " ms",
    "api_load_average": lambda: api_range(api("machine")["loadavg_before"] + api("machine")["loadavg_after"], ".1f"),
}
BLOCK = re.compile(r"(<!-- table:(\w+) -->\n)(.*?\n)?(<!-- /table:\2 -->)", re.DOTALL)
VALUE = re.compile(r"(<!-- value:(\w+) -->)(.*?)(<!-- /value -->)")


def render(text: str) -> str:
    """``text`` with every marked table and figure replaced by what its function writes now."""
    text = BLOCK.sub(lambda m: m.group(1) + TABLES[m.group(2)]() + "\n" + m.group(4), text)
    return VALUE.sub(lambda m: m.group(1) + VALUES[m.group(2)]() + m.group(4), text)


def main() -> None:
    check = "--check" in sys.argv[1:]
    stale = []
    for page in pages():
        text = page.read_text()
        fresh = render(text)
        if fresh != text:
            stale.append(str(page.relative_to(REPO)))
            if not check:
                page.write_text(fresh)
    if stale and check:
        raise SystemExit(f"{', '.join(stale)} differ from bench/results: run `python bench/tables.py`")


if __name__ == "__main__":
    main()
