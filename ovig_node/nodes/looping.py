"""The one loop every node runs: do its work, do its keeper duties, sleep, again.

Outages are expected (an RPC endpoint or the IPFS node restarting, a transaction refused because
the chain moved): such errors are printed and the pass is retried, since every pass re-derives what
to do from the chain and the disk. Errors that mean the node must stop (``fatal``) end the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ovig_node.errors import OvigError
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.keeper import Keeper


def keep_running(
    ctx: NodeContext,
    step: Callable[[], bool | None],
    *,
    keeper: Keeper | None,
    poll_seconds: float,
    until: float | None = None,
    fatal: tuple[type[BaseException], ...] = (),
) -> None:
    """Run ``step`` (then the keeper's duties) every ``poll_seconds`` until it returns True (a node
    with an end) or the monotonic time ``until`` passes."""
    ctx.client.resume()
    while until is None or time.monotonic() < until:
        try:
            if step():
                return
            if keeper is not None:
                keeper.tick()
        except fatal:
            raise
        except OvigError as exc:
            ctx.say(f"{type(exc).__name__}: {exc}; retrying", style="yellow")
        time.sleep(poll_seconds)
