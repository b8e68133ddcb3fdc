"""A task's timeline: its events in chain order, each as one readable line, and the windows its events
opened (opening, challenge, reveal, vote), placed at the chain time they close.

Event lines come from ``ovig_node.nodes.timeline.describe`` (the demo's timeline), so the dashboard
and the demo say the same thing; events it leaves out get a line here.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from ovig_node.api import models as m
from ovig_node.chain.contracts import Reason, Verdict
from ovig_node.chain.scanner import Event

# The demo timeline's formatting of amounts and addresses, so both read alike.
from ovig_node.formatting import eth, short
from ovig_node.nodes.timeline import describe

K = m.TimelineKind
KINDS: dict[str, m.TimelineKind] = {
    "TaskPosted": K.POSTED,
    "TaskAccepted": K.ACCEPTED,
    "BatchCommitted": K.COMMITTED,
    "SeedDrawn": K.SEED,
    "IntervalOpened": K.OPENING,
    "BatchOpened": K.OPENING,
    "OpeningRequested": K.OPENING,
    "RequestOpened": K.OPENING,
    "RequestSettled": K.PAYOUT,
    "Attested": K.ATTESTED,
    "ChallengeCommitted": K.CHALLENGE,
    "ChallengeRevealed": K.CHALLENGE,
    "ChallengeExpired": K.CHALLENGE,
    "IntervalWindowReopened": K.WINDOW,
    "BondClaimed": K.CHALLENGE,
    "DisputeOpened": K.DISPUTE,
    "PanelDrawn": K.DISPUTE,
    "PanelRearmed": K.DISPUTE,
    "RoundDecided": K.DISPUTE,
    "Appealed": K.DISPUTE,
    "RoundFailed": K.DISPUTE,
    "Penalized": K.DISPUTE,
    "DisputeResolved": K.DISPUTE,
    "DisputeSettled": K.DISPUTE,
    "VoteCommitted": K.VOTE,
    "VoteRevealed": K.VOTE,
    "Credited": K.PAYOUT,
    "Burned": K.PAYOUT,
    "TaskFinalized": K.FINALIZED,
    "TaskSlashed": K.SLASHED,
    "TaskCancelled": K.CANCELLED,
    "TaskAbandoned": K.ABANDONED,
    "LeadShareWaiting": K.PAYOUT,
    "LeadShareReleased": K.PAYOUT,
}


def timeline_entries(
    db: sqlite3.Connection,
    task: int,
    *,
    names: dict[str, str],
    head_time: int | None,
    trusted: frozenset[str] = frozenset(),
) -> list[m.TimelineEntry]:
    keyed: list[tuple[tuple[int, int, int, int], m.TimelineEntry]] = []
    rows = db.execute(
        "SELECT t.*, b.timestamp FROM timeline t LEFT JOIN blocks b ON b.hash = t.block_hash"
        " WHERE t.task = ? ORDER BY t.block, t.log_index",
        (task,),
    )
    for r in rows:
        event = Event(
            r["block"], r["log_index"], r["block_hash"], r["tx"], r["contract"], r["name"], json.loads(r["args"])
        )
        entry = m.TimelineEntry(
            kind=KINDS.get(event.name, K.DISPUTE),
            time=r["timestamp"],
            block=event.block_number,
            event=event.name,
            text=_line(event, names),
            upcoming=False,
            tx=event.tx_hash,
        )
        keyed.append(((r["timestamp"] or 0, 0, event.block_number, event.log_index), entry))
    # Anyone may attest, from as many keys as they like: the timeline tells the trusted ones.
    marks = ",".join("?" * len(trusted))
    for a in db.execute(
        "SELECT a.*, b.timestamp FROM attestations a LEFT JOIN blocks b ON b.hash = a.block_hash"
        f" WHERE a.task = ? AND a.watcher IN ({marks})",
        (task, *sorted(trusted)),
    ):
        text = f"{short(a['watcher'], names)} attests interval {a['k']} sound (replayed on {a['profile']})"
        entry = m.TimelineEntry(
            kind=K.ATTESTED,
            time=a["timestamp"],
            block=a["block"],
            event="Attested",
            text=text,
            upcoming=False,
            tx=a["tx"],
        )
        keyed.append(((a["timestamp"] or 0, 0, a["block"], a["log_index"]), entry))
    for closes, text in _windows(db, task):
        upcoming = head_time is None or closes > head_time
        entry = m.TimelineEntry(
            kind=K.WINDOW,
            time=closes,
            block=None,
            event=None,
            upcoming=upcoming,
            tx=None,
            text=f"{text} {'closes' if upcoming else 'closed'}",
        )
        keyed.append(((closes, 1, 0, 0), entry))  # after the events of the same second
    return [entry for _, entry in sorted(keyed, key=lambda pair: pair[0])]


def _windows(db: sqlite3.Connection, task: int) -> list[tuple[int, str]]:
    """(unix time it closes, what) of every window that still mattered when the task last moved."""
    windows: list[tuple[int, str]] = []
    for b in db.execute("SELECT * FROM batches WHERE task = ?", (task,)):
        if b["status"] == "drawn":  # once opened, the opening window no longer matters
            windows.append((b["opening_window_end"], f"batch {b['j']}: opening window"))
        if b["challenge_window_end"] is not None:
            windows.append((b["challenge_window_end"], f"batch {b['j']}: challenge window"))
    for o in db.execute(
        "SELECT k, extended_until FROM openings WHERE task = ? AND extended_until IS NOT NULL", (task,)
    ):
        windows.append((o["extended_until"], f"interval {o['k']}: its own challenge window"))
    for c in db.execute("SELECT reveal_by FROM challenges WHERE task = ? AND status = 'pending'", (task,)):
        windows.append((c["reveal_by"], "challenge reveal window"))
    for r in db.execute("SELECT r.* FROM rounds r JOIN disputes d ON d.dispute = r.dispute WHERE d.task = ?", (task,)):
        where = f"dispute {r['dispute']} round {r['round']}"
        windows += [
            (r["commit_end"], f"{where}: vote commit window"),
            (r["reveal_end"], f"{where}: vote reveal window"),
        ]
    return windows


def _line(event: Event, names: dict[str, str]) -> str:
    return describe(event, names) or _more(event, names)


def _more(event: Event, names: dict[str, str]) -> str:
    """Lines for the events ``describe`` leaves out."""
    a = event.args

    def who(address: str) -> str:
        return short(address, names)

    lines: dict[str, Callable[[], str]] = {
        "IntervalOpened": lambda: f"task {a['task']}: interval {a['k']} opened (end digest {a['endDigest'][:12]}…)",
        "TaskCancelled": lambda: f"task {a['task']} cancelled by its owner",
        "TaskAbandoned": lambda: f"task {a['task']} abandoned: the deadline passed with batches uncommitted",
        "ChallengeExpired": lambda: (
            "a challenge commit expired unrevealed: bond " + ("refunded" if a["refunded"] else "burned")
        ),
        "IntervalWindowReopened": lambda: f"interval {a['k']}: no decision; challenge window reopened",
        "BondClaimed": lambda: f"dispute {a['dispute']}: {who(a['challenger'])} claimed its bond back",
        "DisputeOpened": lambda: (
            f"dispute {a['dispute']} opened over interval {a['k']} ({Reason(a['reason']).name.lower()})"
        ),
        "DisputeSettled": lambda: f"dispute {a['dispute']} settled: {Verdict(a['verdict']).name.upper()}",
        "RoundFailed": lambda: f"dispute {a['dispute']} round {a['round']}: no majority",
        "Penalized": lambda: f"dispute {a['dispute']}: {who(a['panelist'])} loses {eth(a['amount'])}",
        "PanelRearmed": lambda: f"dispute {a['dispute']} round {a['round']}: draw re-armed ({a['seated']} seated)",
        "RoundDecided": lambda: (
            f"dispute {a['dispute']} round {a['round']} decided; appealable until {a['appealUntil']}"
        ),
        "Appealed": lambda: (
            f"dispute {a['dispute']}: {who(a['appellant'])} appeals, {eth(a['bond'])}, round {a['round']}"
        ),
        "Credited": lambda: f"{who(a['account'])} credited {eth(a['amount'])} by {event.contract}",
        "Burned": lambda: f"{eth(a['amount'])} burned by {event.contract}",
    }
    make = lines.get(event.name)
    return make() if make else f"{event.name} {json.dumps(a, sort_keys=True)}"
