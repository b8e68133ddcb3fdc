"""One readable line per protocol event, for the demo's timeline (and anyone following a chain)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ovig_node.chain.contracts import Reason, Verdict
from ovig_node.chain.scanner import Event
from ovig_node.formatting import eth, short


def describe(event: Event, names: dict[str, str]) -> str | None:
    """The line for ``event`` (None: not worth a line); ``names`` maps addresses to roles."""
    a = event.args
    who: Callable[[str], str] = lambda address: short(address, names)  # noqa: E731
    lines: dict[str, Callable[[], str]] = {
        "TaskPosted": lambda: (
            f"task {a['task']} posted by {who(a['owner'])}: reward {eth(a['terms']['reward'])}, "
            f"N={a['terms']['totalSteps']} s={a['terms']['stride']} m={a['terms']['intervalsPerBatch']}"
        ),
        "TaskAccepted": lambda: f"task {a['task']} accepted by {who(a['provider'])} (bond {eth(a['bond'])})",
        "BatchCommitted": lambda: f"task {a['task']} batch {a['j']} committed (root {a['root'][:12]}…)",
        "SeedDrawn": lambda: f"task {a['task']} batch {a['j']} sampled: positions {_bits(a['sampledBitmap'])}",
        "BatchOpened": lambda: f"task {a['task']} batch {a['j']} opened; challenge window open",
        "OpeningRequested": lambda: f"task {a['task']}: {who(a['requester'])} asks interval {a['k']} opened (bonded)",
        "RequestOpened": lambda: f"task {a['task']} interval {a['k']} opened on request; its challenge window open",
        "RequestSettled": lambda: (
            f"task {a['task']}: the request of interval {a['k']} settled, its bond "
            + ("refunded" if a["refunded"] else "paid to the provider")
        ),
        "ChallengeCommitted": lambda: f"task {a['task']}: {who(a['challenger'])} committed a challenge (bonded)",
        "ChallengeRevealed": lambda: (
            f"task {a['task']}: {who(a['challenger'])} challenges interval {a['k']} "
            f"({Reason(a['reason']).name.lower()})"
            + (f" -> dispute {a['dispute']}" if a["dispute"] else ", settled at once")
        ),
        "PanelDrawn": lambda: f"dispute {a['dispute']}: panel {', '.join(who(p) for p in a['panel'])}",
        "VoteCommitted": lambda: f"dispute {a['dispute']}: {who(a['panelist'])} committed a vote",
        "VoteRevealed": lambda: f"dispute {a['dispute']}: {who(a['panelist'])} votes {Verdict(a['vote']).name.lower()}",
        "RoundDecided": lambda: (
            f"dispute {a['dispute']} round {a['round']}: {Verdict(a['outcome']).name.upper()}, appealable for a while"
        ),
        "Appealed": lambda: f"dispute {a['dispute']}: {who(a['appellant'])} appeals ({eth(a['bond'])})",
        "DisputeResolved": lambda: f"dispute {a['dispute']} resolved: {Verdict(a['verdict']).name.upper()}",
        "TaskSlashed": lambda: f"task {a['task']} SLASHED",
        "LeadShareWaiting": lambda: f"task {a['task']}: the lead's share waits for earlier challenges",
        "LeadShareReleased": lambda: f"task {a['task']}: lead's share ({eth(a['amount'])}) paid to {who(a['lead'])}",
        "TaskFinalized": lambda: f"task {a['task']} finalized: {who(a['provider'])} is paid",
        "Withdrawn": lambda: f"{who(a['account'])} withdrew {eth(a['amount'])} from {event.contract}",
        "AuditorRegistered": lambda: f"{who(a['auditor'])} registered as an auditor (stake {eth(a['stake'])})",
    }
    make = lines.get(event.name)
    return make() if make else None


def _bits(bitmap: Any) -> str:
    value = int(bitmap)
    return ",".join(str(i) for i in range(value.bit_length()) if value >> i & 1)
