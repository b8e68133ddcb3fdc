"""README tables written from committed results, so a table and its JSON cannot disagree.

    .venv/bin/python bench/tables.py           # rewrite every marked block of README.md
    .venv/bin/python bench/tables.py --check   # exit 1 if a block differs from its results

A block sits between ``<!-- table:NAME -->`` and ``<!-- /table:NAME -->``; NAME picks the renderer below.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
README = REPO / "README.md"


def gas() -> str:
    """Per-call gas and the gas targets (bench/gas.py -> bench/results/gas.json)."""
    data = json.loads((RESULTS / "gas.json").read_text())
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
    data = json.loads((RESULTS / "committee_odds.json").read_text())
    rounds = data["max_rounds"]
    head = " | ".join(f"round {r} sybil majority" for r in range(rounds))
    lines = [f"| sybil share | {head} | first round below 1e-6 | appeal bonds to get there | reachable here |",
             "| ---: | " + "---: | " * rounds + "---: | ---: | --- |"]  # fmt: skip
    for row in data["odds"]:
        odds = " | ".join(f"{p:.2e}" for p in row["per_round"])
        safe = "none within 12" if row["safe_round"] is None else str(row["safe_round"])
        bonds = "-" if row["appeal_bonds_in_challenger_bonds"] is None else (
            f"{row['appeal_bonds_in_challenger_bonds']:,} x challengerBond")  # fmt: skip
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
        lines.append(f"| {row['disputes_per_day']:,} | {row['cost_wei_outsider'] / 1e18:g} | "
                     f"{row['cost_wei_own_task'] / 1e18:g} |")  # fmt: skip
    return "\n".join(lines)


RENDERERS: dict[str, Callable[[], str]] = {"gas": gas, "committee": committee}
BLOCK = re.compile(r"(<!-- table:(\w+) -->\n)(.*?\n)?(<!-- /table:\2 -->)", re.DOTALL)


def render(text: str) -> str:
    """``text`` with every marked block replaced by its renderer's table."""
    return BLOCK.sub(lambda m: m.group(1) + RENDERERS[m.group(2)]() + "\n" + m.group(4), text)


def main() -> None:
    text = README.read_text()
    fresh = render(text)
    if "--check" in sys.argv[1:]:
        if fresh != text:
            raise SystemExit("README.md tables differ from bench/results: run `python bench/tables.py`")
        return
    README.write_text(fresh)


if __name__ == "__main__":
    main()
