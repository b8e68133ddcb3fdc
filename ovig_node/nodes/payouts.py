"""Pulling credits: every payout of the protocol is a credit its owner withdraws (protocol 4.1)."""

from __future__ import annotations

from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.node_state import NodeState


def withdraw_credits(ctx: NodeContext, state: NodeState, names: tuple[str, ...] = ("TrainingTasks",)) -> int:
    """Withdraw the node's whole credit from each named contract; returns the wei withdrawn.

    Each withdrawal has its own journal key (counted in ``state``), so a crash between sending and
    counting re-finds the sent one rather than withdrawing twice.
    """
    total = 0
    for name in names:
        contract = ctx.protocol.contracts[name]
        owed = contract.functions.credits(ctx.address).call()
        if not owed:
            continue
        n = state.get(f"withdrawals:{name}", 0)
        ctx.client.transact(f"withdraw:{name}:{n}", contract.functions.withdraw())
        state.set(f"withdrawals:{name}", n + 1)
        ctx.say(f"withdrew {owed / 1e18:g} ETH from {name}")
        total += owed
    return total
