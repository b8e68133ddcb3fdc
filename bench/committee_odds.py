"""Benchmark (analytic): how often a panel has a sybil majority, what appeals to a safe round cost, and
what a flood of junk disputes costs (protocol section 6), at the deploy parameters of deploy/plan.py.

A round-r panel seats ``P_r = panelSize * 2^r + 2^r - 1`` auditors drawn uniformly from the eligible
ones (protocol 4.2). With a sybil share s of them, the chance that a round has a sybil majority is the
binomial tail ``P(Bin(P_r, s) >= (P_r + 1) / 2)`` (a registry large against the panel; drawing without
replacement from a finite registry makes the tail smaller, so this is the cautious figure). An appeal to
round r + 1 costs ``challengerBond * 2^(r+1)``; the table gives the first round whose chance is below
1e-6 and the appeal bonds to get there from round 0, and whether the deployment's rounds and registry
reach it. Junk disputes: each one found sound costs its challenger its bond less what comes back to
it (a provider challenging its own task gets the provider's share back).

    .venv/bin/python bench/committee_odds.py   # writes bench/results/committee_odds.json
"""

from __future__ import annotations

import json
from math import exp, lgamma, log
from pathlib import Path
from typing import Any

from ovig_node.chain.deploy import load_plan

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "committee_odds.json"
SYBIL_SHARES = (0.10, 0.20, 1 / 3)
SAFE = 1e-6
REGISTRY = 256  # AuditCommittee.MAX_AUDITORS
FLOODS_PER_DAY = (10, 100, 1000)
SEARCH_ROUNDS = 12  # rounds looked at beyond the deployment's, to say how far a safe round is


def panel_size(first: int, round_: int) -> int:
    return first * (1 << round_) + (1 << round_) - 1


def sybil_majority(seats: int, share: float) -> float:
    """P(Bin(seats, share) >= (seats + 1) / 2)."""
    need = (seats + 1) // 2
    # Log-space terms: comb(seats, i) overflows a float for the larger panels.
    log_terms = (
        lgamma(seats + 1) - lgamma(i + 1) - lgamma(seats - i + 1) + i * log(share) + (seats - i) * log(1 - share)
        for i in range(need, seats + 1)
    )
    return sum(exp(t) for t in log_terms)


def odds(first: int, max_rounds: int, min_challenger_bond: int) -> list[dict[str, Any]]:
    rows = []
    for share in SYBIL_SHARES:
        per_round = [sybil_majority(panel_size(first, r), share) for r in range(SEARCH_ROUNDS)]
        safe = next((r for r, p in enumerate(per_round) if p < SAFE), None)
        bonds = None if safe is None else sum(1 << (r + 1) for r in range(safe))  # in challenger bonds
        seats = None if safe is None else sum(panel_size(first, r) for r in range(safe + 1))
        rows.append(
            {
                "sybil_share": share,
                "per_round": per_round[:max_rounds],
                "safe_round": safe,
                "appeal_bonds_in_challenger_bonds": bonds,
                "appeal_bonds_wei_at_min_bond": None if bonds is None else bonds * min_challenger_bond,
                "auditors_needed": None if seats is None else 2 * seats,
                "reachable": safe is not None and safe < max_rounds and 2 * seats <= REGISTRY,
            }
        )
    return rows


def floods(min_challenger_bond: int, sound_provider_bps: int) -> list[dict[str, Any]]:
    own = min_challenger_bond * (10_000 - sound_provider_bps) // 10_000
    return [
        {"disputes_per_day": n, "cost_wei_outsider": n * min_challenger_bond, "cost_wei_own_task": n * own}
        for n in FLOODS_PER_DAY
    ]


def main() -> None:
    p = load_plan(REPO / "deploy" / "plan.py")
    first, max_rounds = p.COMMITTEE[-3], p.COMMITTEE[-2]
    results = {
        "panel_size": first,
        "max_rounds": max_rounds,
        "min_challenger_bond": p.MIN_CHALLENGER_BOND,
        "odds": odds(first, max_rounds, p.MIN_CHALLENGER_BOND),
        "floods": floods(p.MIN_CHALLENGER_BOND, p.SHARES[3]),
    }
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written {RESULTS}")


if __name__ == "__main__":
    main()
