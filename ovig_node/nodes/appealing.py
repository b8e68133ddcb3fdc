"""Appeals a node puts up against a decided round (protocol 4.2), and the budget that bounds them.

An appeal of round r costs ``MIN_CHALLENGER_BOND x 2^(r + 1)`` (the deployment's smallest challenger bond, never the
task's: an owner that set a huge challenger bond priced honest appeals out of reach and kept a captured round,
review 12 of v3, F2) and arms the next, larger round; the bond comes back whole when the final outcome is the one
asked for. So an honest party that appeals a round its own replay contradicts risks its bond only to a round
captured again, and the odds of capture fall with each round: with a fifth of the registry sybils, the deploy's
fifth round (63 seats) is captured with odds below one in a million, and the appeals that reach it are
2 + 4 + 8 + 16 smallest challenger bonds (``bench/results/committee_odds.json``). Nobody else appeals for a
watcher: one that never appealed let a captured first round pay a faulty interval and took half its bond to the
provider (review 7 of v3, F4). Hence the default budget: up to 30 smallest challenger bonds in all on one
dispute. The budget bounds what a node whose own replay is wrong (or a watcher that could not obtain the files,
looked for them again in the appeal window, and still could not, while they were served to the panels) can lose
on one dispute: all of it, at worst. An appeal never spends the gas money its seats need (``GAS_RESERVE``): a node
that appealed itself dry would go silent on its other seats and lose their penalties.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ovig_node.chain.contracts import DisputeStatus, Verdict
from ovig_node.chain.errors import StateBehind
from ovig_node.chain.reverts import ContractReverted
from ovig_node.chain.rpc import fees
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.isolation import Isolation
from ovig_node.nodes.node_state import NodeState


@dataclass(frozen=True)
class AppealBudget:
    """The most a node puts up in appeals on one dispute, in all: ``multiple`` times the deployment's smallest
    challenger bond (the unit of an appeal bond), or ``wei``."""

    multiple: int | None = None
    wei: int | None = None

    def allows(self, bond: int, unit: int, spent: int = 0) -> bool:
        """Whether one more appeal bond ``bond`` fits, with ``spent`` put up on the dispute already (``unit``: the
        smallest challenger bond)."""
        limit = self.wei if self.wei is not None else (self.multiple or 0) * unit
        return bond > 0 and spent + bond <= limit

    def __str__(self) -> str:
        if self.multiple is not None:
            return f"{self.multiple}x the smallest challenger bond"
        return f"{(self.wei or 0) / 1e18:g} ETH"


DEFAULT_APPEAL_BUDGET = AppealBudget(multiple=30)
GAS_RESERVE = 10**16  # the least an appeal or a top-up leaves in the account for the node's own transactions: 0.01 ETH
# ... and at least this much gas at the market's fee cap: about a dozen seats' commits and reveals (review 21 of v3:
# at 100 gwei, 0.01 ETH did not pay one seat's ballot, and a seat left silent loses its penalty)
RESERVED_GAS = 2_000_000


def gas_reserve(ctx: NodeContext) -> int:
    """Wei a node keeps for its own transactions when it puts money up (an appeal bond, a stake top-up)."""
    cap = ctx.client.retry(lambda: fees(ctx.client.w3))
    return max(GAS_RESERVE, RESERVED_GAS * int(cap.get("maxFeePerGas", cap.get("gasPrice", 0))))


def appeal_round(ctx: NodeContext, state: NodeState, dispute: int, round_: int, budget: AppealBudget, why: str) -> bool:
    """Appeal ``round_`` of ``dispute`` (decided against this node's replay: ``why``) while it is still appealable
    and its bond is within ``budget``: True once that is settled (appealed, refused by the contract, over budget, no
    longer appealable); an error (an RPC outage, a transaction refused for now) propagates, and the caller calls it
    again on its next pass, within the appeal window (review 19 of v3: an appeal had one try, and one refused
    broadcast let a captured round stand). The appeal is persisted before it is sent and sent under one journal
    key, so calling again never appeals twice."""
    key = f"{dispute}:{round_}"
    appealed = state.get("appeals", [])
    d = ctx.protocol.dispute(dispute)
    if d.status != DisputeStatus.APPEALABLE or d.round != round_:
        _unspend_unsigned(ctx, state, key)
        return True
    unit = int(ctx.client.call(ctx.protocol.tasks.functions.MIN_CHALLENGER_BOND()))
    bond = unit << (round_ + 1)
    if key not in appealed:
        spent = sum(unit << (int(r) + 1) for d_, r in (a.split(":") for a in appealed) if int(d_) == dispute)
        if not budget.allows(bond, unit, spent):
            ctx.say(
                f"dispute {dispute}: round {round_} {why}; its appeal bond {bond / 1e18:g} ETH, with "
                f"{spent / 1e18:g} ETH put up on it already, is over its budget ({budget} a dispute)",
                style="yellow",
            )
            return True
        state.set("appeals", [*appealed, key])
    try:
        # Signed only with the gas reserve left beside its bond; FundsShort (funds short, fees spiked) propagates, and
        # the appeal is tried again within its window, never given up (review 22 of v3)
        appeal = ctx.protocol.committee.functions.appeal(dispute)
        ctx.client.transact(f"appeal:{key}", appeal, value=bond, keep=gas_reserve(ctx))
        ctx.say(f"dispute {dispute}: round {round_} {why}: appealed ({bond / 1e18:g} ETH)")
    except ContractReverted as exc:
        # Nothing put up (another's appeal came first, the window closed): not counted against the budget (review 26
        # of v3: a lost race kept a smaller budget from the node's later, real appeals)
        _unspend_unsigned(ctx, state, key)
        d = ctx.protocol.dispute(dispute)
        appeal_until = int(d.decidedAt) + int(ctx.protocol.committee.functions.APPEAL_WINDOW().call())
        if d.status == DisputeStatus.APPEALABLE and d.round == round_ and ctx.now() < appeal_until:
            # Still open to it as far as the chain says: a lagging backend's estimate, tried again (review 27 of v3:
            # given up, a captured round stood)
            raise StateBehind(f"dispute {dispute}: appeal of round {round_} refused ({exc}) while open") from None
        ctx.say(f"dispute {dispute}: appeal refused: {exc}", style="yellow")
    except Exception:
        _unspend_unsigned(ctx, state, key)  # funds short, a backend behind: tried again, counted once signed
        raise
    return True


def _unspend_unsigned(ctx: NodeContext, state: NodeState, key: str) -> None:
    """Take appeal ``key`` off the spent sum if nothing it signed put a bond up: none signed (review 30 of v3), or
    the one signed reverted (found on a restart's resume: review 31)."""
    signed = ctx.client.journal.get(f"appeal:{key}")
    if key in state.get("appeals", []) and (signed is None or signed.status == "reverted"):
        state.set("appeals", [a for a in state.get("appeals", []) if a != key])


def appeal_faulty_rounds(
    ctx: NodeContext, state: NodeState, task: int, budget: AppealBudget, done: set[str], isolation: Isolation
) -> None:
    """The provider's appeals: every FAULTY round of a dispute of its own ``task`` while it is appealable, on an
    interval it trained honestly, within ``budget`` (review 26 of v3: nobody appealed a captured FAULTY round on an
    honest provider's interval unless an honest panelist of it had voted sound, so a round-0 panel of sybils slashed
    it). ``done`` holds the rounds settled. Each round is tried on its own (``isolation``): one refused, short of
    funds or failing is said once and tried again with backoff, and never holds the others back (reviews 27 and 28)."""
    now = ctx.now()
    for event in ctx.scanner.events("RoundDecided"):
        dispute, round_ = int(event.args["dispute"]), int(event.args["round"])
        key = f"{dispute}:{round_}"
        if key in done:
            continue
        if Verdict(int(event.args["outcome"])) != Verdict.FAULTY or int(event.args["appealUntil"]) <= now:
            done.add(key)  # not against it, or its last round (its window ends at once), or too late
            continue
        if int(ctx.protocol.view(ctx.protocol.tasks, "getDispute", dispute).task) != task:
            done.add(key)
            continue
        why = "found faulty an interval it trained honestly"
        if isolation.call(f"appeal {key}", functools.partial(appeal_round, ctx, state, dispute, round_, budget, why)):
            done.add(key)
