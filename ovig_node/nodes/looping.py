"""The one loop every node runs: do its work, do its keeper duties, sleep, again.

Outages are expected (an RPC endpoint or the IPFS node restarting, a transaction refused because
the chain moved). Every pass re-derives what to do from the chain and the disk, so the loop rides any of
them out: an endpoint that does not answer is one line when it goes (and the passes back off, up to
``OUTAGE_BACKOFF_CAP`` seconds apart) and one when it is back, however long it stays away; any other
error of ours is printed and the pass retried. Errors that mean the node must stop (``fatal``) end the
loop. When an endpoint is back, the node says which of its duties' windows closed meanwhile (``missed``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

import requests
from web3.exceptions import Web3Exception

from ovig_node.chain.errors import ChainError, NotMined, RpcUnavailable
from ovig_node.errors import OvigError
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.keeper import Keeper
from ovig_node.storage.errors import IpfsUnavailable

OUTAGE_BACKOFF_CAP = 30.0  # seconds between passes at most while an endpoint is away


def keep_running(
    ctx: NodeContext,
    step: Callable[[], bool | None],
    *,
    keeper: Keeper | None,
    poll_seconds: float,
    until: float | None = None,
    fatal: tuple[type[BaseException], ...] = (),
    missed: Callable[[int, int], list[str]] | None = None,
) -> None:
    """Run ``step`` (then the keeper's duties) every ``poll_seconds`` until it returns True (a node
    with an end) or the monotonic time ``until`` passes. After an outage, ``missed(since, now)`` (chain
    times) names each duty whose window closed while the node could not act, one line each."""
    outage = Outage(ctx, poll_seconds)
    resumed = False
    last_pass = time.time()  # when a whole pass last succeeded
    while until is None or time.monotonic() < until:
        pause = poll_seconds
        try:
            if not resumed:  # the journal's transactions in flight when the node last stopped
                try:
                    ctx.client.resume()
                except ChainError as exc:
                    if isinstance(exc, TimeoutError | ConnectionError):
                        raise  # not mined yet (its fees raised), or the RPC away: resumed again on the next pass
                    # refused for good (its nonce taken meanwhile): said once, never a reason to stop working
                    ctx.say(f"a transaction in flight at the last stop: {exc}", style="yellow")
                resumed = True
            done = step()
            if not done and keeper is not None:
                keeper.tick()
            if outage.over() and missed is not None:
                now = ctx.now()  # the chain ran on meanwhile: what closed since the last whole pass?
                for line in missed(now - int(time.time() - last_pass) - 1, now):
                    ctx.say(f"missed while it could not act: {line}", style="bold red")
            last_pass = time.time()
            if done:
                return
        except fatal:
            raise
        # web3's own errors too: an endpoint's refusal or a block a lagging backend has not got must not end the
        # node (review 25 of v3: one BlockNotFound, or one log query refused, stopped it on every task)
        except (OvigError, requests.RequestException, ConnectionError, TimeoutError, Web3Exception) as exc:
            what = outage_of(exc)
            if what is None:
                ctx.say(f"{type(exc).__name__}: {exc}; retrying", style="yellow")
            else:
                pause = outage.during(what, exc)
        time.sleep(pause)


def chain_clock(t: int) -> str:
    """A chain time as a person reads it in a node's log."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(t))


def outage_of(exc: BaseException) -> str | None:
    """The endpoint an error says is away ("RPC endpoint URL", "IPFS node at URL"), or None for any other error."""
    if isinstance(exc, NotMined):  # the chain's answer (not mined yet, funds short), not an endpoint away
        return None
    if isinstance(exc, RpcUnavailable):
        return f"RPC endpoint {exc.url}"
    if isinstance(exc, IpfsUnavailable):
        return f"IPFS node at {exc.url}"
    if isinstance(exc, requests.RequestException):
        url = getattr(exc.request, "url", None)
        return f"endpoint {urlsplit(str(url)).netloc}" if url else "an endpoint"
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return "an endpoint"
    return None


class Outage:
    """One line when an endpoint goes away, one when it is back; between them the passes back off. An endpoint
    is back when a whole pass succeeds: a pass that fails on another one says nothing of the first."""

    def __init__(self, ctx: NodeContext, poll_seconds: float) -> None:
        self.ctx, self.poll_seconds = ctx, poll_seconds
        self.away: dict[str, float] = {}  # endpoint -> when it went (monotonic)
        self.failures = 0  # passes failed in a row

    def during(self, what: str, exc: BaseException) -> float:
        """A pass met the outage of ``what``: say so if it is news; return how long to wait before the next."""
        if what not in self.away:
            self.away[what] = time.monotonic()
            reason = getattr(exc, "reason", None) or type(exc).__name__
            self.ctx.say(
                f"{what} is unavailable ({reason}); retrying, at most {OUTAGE_BACKOFF_CAP:g} s apart, until it is back",
                style="yellow",
            )
        self.failures += 1
        return min(OUTAGE_BACKOFF_CAP, self.poll_seconds * 2 ** min(self.failures, 16))

    def over(self) -> bool:
        """A whole pass succeeded: say which endpoints are back; whether any was away."""
        back = bool(self.away)
        for what, since in self.away.items():
            self.ctx.say(f"{what} is back after {time.monotonic() - since:.0f} s", style="green")
        self.away.clear()
        self.failures = 0
        return back
