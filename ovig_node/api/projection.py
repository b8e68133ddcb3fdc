"""Folds each decoded protocol event into the read model (``store``), in chain order.

Everything the API serves follows from the events alone (protocol section 4.4 makes them complete),
so no row needs an RPC call, and a re-fold from the event index rebuilds every table exactly. The
committee's immutable ``PENALTY`` is the one constant an event does not carry: an auditor's stake at risk
(``locked``: PENALTY per seat on a dispute not resolved yet) is counted in it.

Attestations (protocol 8.4) are the exception to "the events are the state": ``attest`` checks nothing, so an
Attested event is folded in only if interval k was opened before it and its signature, over the end digest
of that opening, for this chain and contract, is its sender's; it reaches a task's timeline only through
the queries, for watchers the API trusts (a flood by throwaway keys would otherwise bury the timeline).

Each handler mirrors one state change of the contracts; where a contract changes two things in one
transaction (a dispute resolves, then the task contract settles it), both events arrive, in order.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from ovig_node.chain.contracts import Reason, Verdict
from ovig_node.chain.scanner import Event
from ovig_node.protocol.attestation import MAX_ID, Domain, announced

Args = dict[str, Any]


def name_of(enum: Any, value: int) -> str:
    return str(enum(int(value)).name.lower())


class Projection:
    """Applies events to the tables through ``db`` (the caller owns the transaction)."""

    def __init__(self, db: sqlite3.Connection, *, penalty: int, domain: Domain) -> None:
        self.db = db
        self.penalty = penalty
        self.domain = domain  # the deployment attestations must be signed for
        tasks: dict[str, Callable[[Event, Args], None]] = {
            "TaskPosted": self._task_posted,
            "TaskAccepted": lambda e, a: self._task(a["task"], e, provider=a["provider"], status="accepted"),
            "TaskCancelled": lambda e, a: self._task(a["task"], e, status="cancelled"),
            "BatchCommitted": self._batch_committed,
            "SeedDrawn": self._seed_drawn,
            "IntervalOpened": self._interval_opened,
            "BatchOpened": self._batch_opened,
            "ChallengeCommitted": self._challenge_committed,
            "ChallengeRevealed": self._challenge_revealed,
            "ChallengeExpired": self._challenge_expired,
            "DisputeSettled": self._dispute_settled,
            "IntervalWindowReopened": self._window_reopened,
            "RequestOpened": lambda e, a: self._interval_window(e, a, int(a["challengeWindowEnd"])),
            "Attested": self._attested,
            "BondClaimed": lambda e, a: self._update(
                "challenges", {"status": "claimed"}, challenger=a["challenger"], commitment=a["commitment"]
            ),
            "TaskFinalized": lambda e, a: self._task(a["task"], e, status="finalized"),
            "TaskSlashed": self._task_slashed,
            "TaskAbandoned": lambda e, a: self._task(a["task"], e, status="abandoned"),
            "LeadShareWaiting": lambda e, a: self._task(a["task"], e, lead=a["lead"], lead_paid=0),
            "LeadShareReleased": lambda e, a: self._task(a["task"], e, lead=a["lead"], lead_paid=1),
            "Credited": self._credited,
            "Withdrawn": self._withdrawn,
            "DisputeOpened": self._dispute_opened,  # the task contract opens disputes (v3); the committee takes them up
        }
        committee: dict[str, Callable[[Event, Args], None]] = {
            "PanelDrawn": self._panel_drawn,
            "VoteCommitted": self._vote_committed,
            "VoteRevealed": self._vote_revealed,
            "RoundFailed": self._round_failed,
            "PanelRearmed": self._round_now("awaiting_panel"),
            "RoundDecided": self._round_decided,
            "Appealed": self._appealed,
            "AppealSettled": lambda e, a: self._update(
                "appeals", {"refunded": str(a["refunded"])}, dispute=a["dispute"], appellant=a["appellant"]
            ),
            "StakeAdded": lambda e, a: self._add_wei("auditors", "stake", int(a["amount"]), address=a["auditor"]),
            "Penalized": lambda e, a: self._add_wei("auditors", "stake", -int(a["amount"]), address=a["panelist"]),
            "DisputeResolved": self._dispute_resolved,
            "SeatsSettled": self._seats_settled,
            "AuditorRegistered": self._auditor_registered,
            "AuditorExitRequested": self._auditor_exit_requested,
            "AuditorExited": self._auditor_exited,
            "Credited": self._credited,
            "Withdrawn": self._withdrawn,
        }
        self._handlers = {"TrainingTasks": tasks, "AuditCommittee": committee}

    def apply(self, event: Event) -> None:
        handler = self._handlers.get(event.contract, {}).get(event.name)
        if handler is not None:
            handler(event, event.args)
        task = self._task_of(event)
        if task is not None and event.name != "Attested":  # anyone may announce one: timelines show trusted ones
            self._timeline(event, task)

    def _timeline(self, event: Event, task: int) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO timeline VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.block_hash,
                event.log_index,
                task,
                event.block_number,
                event.tx_hash,
                event.contract,
                event.name,
                json.dumps(event.args, sort_keys=True),
            ),
        )

    # --- tasks ---------------------------------------------------------------------------------

    def _task_posted(self, e: Event, a: Args) -> None:
        terms = a["terms"]
        n, s, m = int(terms["totalSteps"]), int(terms["stride"]), int(terms["intervalsPerBatch"])
        intervals = -(-n // s)
        self.db.execute(
            "INSERT OR REPLACE INTO tasks (task, owner, status, spec_cid, terms, reward, provider_bond, total_steps,"
            " stride, intervals_per_batch, intervals, batch_count, posted_block, posted_hash, updated_block)"
            " VALUES (?, ?, 'posted', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                a["task"],
                a["owner"],
                a["specCID"],
                json.dumps(terms, sort_keys=True),
                str(terms["reward"]),
                str(terms["providerBond"]),
                n,
                s,
                m,
                intervals,
                -(-intervals // m),
                e.block_number,
                e.block_hash,
                e.block_number,
            ),
        )

    def _batch_committed(self, e: Event, a: Args) -> None:
        task, j = a["task"], a["j"]
        self.db.execute(
            "INSERT OR REPLACE INTO batches (task, j, status, root, manifest_cid, committed_block)"
            " VALUES (?, ?, 'committed', ?, ?, ?)",
            (task, j, a["root"], a["manifestCID"], e.block_number),
        )
        (batch_count,) = self.db.execute("SELECT batch_count FROM tasks WHERE task = ?", (task,)).fetchone()
        # The last batch's commit moves the task to Committed (TrainingTasks.commitBatch).
        status = {"status": "committed"} if j + 1 == batch_count else {}
        self._task(task, e, committed_batches=j + 1, **status)

    def _seed_drawn(self, e: Event, a: Args) -> None:
        task, j, bitmap = a["task"], a["j"], int(a["sampledBitmap"])
        (m,) = self.db.execute("SELECT intervals_per_batch FROM tasks WHERE task = ?", (task,)).fetchone()
        sampled = [j * m + p for p in range(bitmap.bit_length()) if bitmap >> p & 1]
        self._update(
            "batches",
            {
                "status": "drawn",
                "seed": a["seed"],
                "sampled": json.dumps(sampled),
                "opening_window_end": a["openingWindowEnd"],
            },
            task=task,
            j=j,
        )
        self._task(task, e)

    def _interval_opened(self, e: Event, a: Args) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO openings (task, k, start_digest, end_digest, block) VALUES (?, ?, ?, ?, ?)",
            (a["task"], a["k"], a["startDigest"], a["endDigest"], e.block_number),
        )

    def _batch_opened(self, e: Event, a: Args) -> None:
        task, end = a["task"], int(a["challengeWindowEnd"])
        self._update(
            "batches",
            {"status": "opened", "opening_cid": a["openingCID"], "challenge_window_end": end},
            task=task,
            j=a["j"],
        )
        self._bump(task, "opened_batches", 1)
        self._extend_challenge_end(task, end)
        self._task(task, e)

    def _window_reopened(self, e: Event, a: Args) -> None:
        self._interval_window(e, a, int(a["windowEnd"]))

    def _interval_window(self, e: Event, a: Args, end: int) -> None:
        """Interval k's own challenge window: reopened after a no-decision, or opened on request."""
        self._update("openings", {"extended_until": end}, task=a["task"], k=a["k"])
        self._extend_challenge_end(a["task"], end)
        self._task(a["task"], e)

    def _attested(self, e: Event, a: Args) -> None:
        """A watcher's attestation: kept if well formed, made after k's opening and signed by its sender over the
        end digest k was opened with. A watcher's first attestation of k stands; the cheap checks come first,
        so announcing again, or of an interval never opened, costs the indexer no ECDSA."""
        task, k, watcher = int(a["task"]), int(a["k"]), str(a["watcher"])
        if not (0 <= task <= MAX_ID and 0 <= k <= MAX_ID):
            return
        opened = self.db.execute("SELECT end_digest FROM openings WHERE task = ? AND k = ?", (task, k)).fetchone()
        seen = self.db.execute(
            "SELECT 1 FROM attestations WHERE task = ? AND k = ? AND watcher = ?", (task, k, watcher)
        ).fetchone()
        if opened is None or seen is not None:
            return
        found = announced(a, self.domain, bytes.fromhex(str(opened[0]).removeprefix("0x")))
        if found is None:
            return
        self.db.execute(
            "INSERT INTO attestations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                task,
                k,
                found.watcher,
                found.attestation.verdict,
                found.attestation.profile,
                found.attestation.report_cid,
                found.attestation_cid,
                e.block_number,
                e.block_hash,
                e.log_index,
                e.tx_hash,
            ),
        )

    def _task_slashed(self, e: Event, a: Args) -> None:
        # Paid at once unless LeadShareWaiting follows in the same transaction (it then overwrites this).
        lead = a["by"] if a["dispute"] else None
        self._task(
            a["task"],
            e,
            status="slashed",
            slashed_batch=a["j"],
            slashed_by=a["by"],
            slashed_dispute=a["dispute"],
            lead=lead,
            lead_paid=1,
        )

    # --- challenges and disputes ---------------------------------------------------------------

    def _challenge_committed(self, e: Event, a: Args) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO challenges (commitment, task, challenger, reveal_by, status, block, seq)"
            " VALUES (?, ?, ?, ?, 'pending', ?, ?)",
            (a["commitment"], a["task"], a["challenger"], a["revealBy"], e.block_number, a["seq"]),
        )
        self._bump(a["task"], "pending_commits", 1)
        self._task(a["task"], e)

    def _challenge_revealed(self, e: Event, a: Args) -> None:
        task, dispute, reason = a["task"], int(a["dispute"]), name_of(Reason, a["reason"])
        self._update(
            "challenges",
            {
                "status": "joined" if dispute else "settled",
                "k": a["k"],
                "reason": reason,
                "report_cid": a["reportCID"],
                "dispute": dispute or None,
            },
            challenger=a["challenger"],
            commitment=a["commitment"],
        )
        self._bump(task, "pending_commits", -1)
        if dispute:  # a dispute the committee opened in this transaction (DisputeOpened came first), or a join
            self._join(task, int(a["k"]), dispute, a["challenger"], a["commitment"])
        self._task(task, e)

    def _join(self, task: int, k: int, dispute: int, challenger: str, commitment: str) -> None:
        """As TrainingTasks keeps it: the lead of every dispute of k is its commit with the smallest sequence
        number ever revealed, in this dispute or an earlier one of k."""
        row = self.db.execute("SELECT joined FROM disputes WHERE dispute = ?", (dispute,)).fetchone()
        if row is None or row[0] == 0:
            self._bump(task, "open_disputes", 1)
        self.db.execute(
            "UPDATE openings SET lead_seq = (SELECT seq FROM challenges WHERE challenger = ? AND commitment = ?)"
            " WHERE task = ? AND k = ? AND (lead_seq IS NULL OR lead_seq >"
            " (SELECT seq FROM challenges WHERE challenger = ? AND commitment = ?))",
            (challenger, commitment, task, k, challenger, commitment),
        )
        self.db.execute(
            "UPDATE disputes SET joined = joined + 1, (challenger, report_cid, commitment) = (SELECT c.challenger,"
            " c.report_cid, c.commitment FROM challenges c JOIN openings o ON c.seq = o.lead_seq"
            " WHERE o.task = ? AND o.k = ?) WHERE dispute = ?",
            (task, k, dispute),
        )

    def _challenge_expired(self, e: Event, a: Args) -> None:
        status = "refunded" if a["refunded"] else "expired"
        self._update("challenges", {"status": status}, challenger=a["challenger"], commitment=a["commitment"])
        self._bump(a["task"], "pending_commits", -1)
        self._task(a["task"], e)

    def _dispute_opened(self, e: Event, a: Args) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO disputes (dispute, task, k, reason, status, verdict, round, opened_block)"
            " VALUES (?, ?, ?, ?, 'awaiting_panel', 'none', 0, ?)",
            (a["dispute"], a["task"], a["k"], name_of(Reason, a["reason"]), e.block_number),
        )

    def _panel_drawn(self, e: Event, a: Args) -> None:
        dispute, panel = a["dispute"], list(a["panel"])
        self.db.execute(
            "INSERT OR REPLACE INTO rounds VALUES (?, ?, ?, ?, ?, ?)",
            (dispute, a["round"], json.dumps(panel), a["commitEnd"], a["revealEnd"], e.block_number),
        )
        self._update("disputes", {"status": "voting", "round": a["round"]}, dispute=dispute)
        for panelist in panel:  # each seat risks PENALTY until its dispute resolves
            self._add_wei("auditors", "locked", self.penalty, address=panelist)

    def _vote_committed(self, e: Event, a: Args) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO votes (dispute, round, panelist, committed_block) VALUES (?, ?, ?, ?)",
            (a["dispute"], a["round"], a["panelist"], e.block_number),
        )

    def _vote_revealed(self, e: Event, a: Args) -> None:
        self._update(
            "votes",
            {"vote": a["vote"], "revealed_block": e.block_number},
            dispute=a["dispute"],
            round=a["round"],
            panelist=a["panelist"],
        )

    def _round_now(self, status: str) -> Callable[[Event, Args], None]:
        """A handler for an event that puts the dispute's round ``round`` in ``status``."""
        return lambda e, a: self._update("disputes", {"status": status, "round": a["round"]}, dispute=a["dispute"])

    def _round_decided(self, e: Event, a: Args) -> None:
        # What the round decided stands unless appealed by appealUntil: kept, so an appealable dispute can say it.
        self._update(
            "disputes",
            {
                "status": "appealable",
                "round": a["round"],
                "outcome": name_of(Verdict, a["outcome"]),
                "appeal_until": a["appealUntil"],
            },
            dispute=a["dispute"],
        )

    def _appealed(self, e: Event, a: Args) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO appeals (dispute, round, appellant, wanted, bond, block) VALUES (?, ?, ?, ?, ?, ?)",
            (a["dispute"], a["round"], a["appellant"], name_of(Verdict, a["wanted"]), str(a["bond"]), e.block_number),
        )
        self._round_now("awaiting_panel")(e, a)

    def _round_failed(self, e: Event, a: Args) -> None:
        # The round's seats stay at risk (penalties are settled when the dispute resolves); the next round
        # is armed (a PanelRearmed or DisputeResolved that follows in the same transaction corrects it).
        self._update("disputes", {"status": "awaiting_panel", "round": int(a["round"]) + 1}, dispute=a["dispute"])

    def _dispute_resolved(self, e: Event, a: Args) -> None:
        self._update(
            "disputes",
            {"status": "resolved", "verdict": name_of(Verdict, a["verdict"]), "round": a["round"]},
            dispute=a["dispute"],
        )

    def _seats_settled(self, e: Event, a: Args) -> None:
        # Penalties are taken and every seat of every panel (a round drawn again has several) is released.
        for (panel,) in self.db.execute("SELECT panel FROM rounds WHERE dispute = ?", (a["dispute"],)).fetchall():
            for panelist in json.loads(panel):
                self._add_wei("auditors", "locked", -self.penalty, address=panelist)

    def _dispute_settled(self, e: Event, a: Args) -> None:
        # The task contract's verdict is what was paid: Moot when the task had ended meanwhile.
        self._update("disputes", {"verdict": name_of(Verdict, a["verdict"])}, dispute=a["dispute"])
        self._bump(a["task"], "open_disputes", -1)
        self._task(a["task"], e)

    # --- auditors and money --------------------------------------------------------------------

    def _auditor_registered(self, e: Event, a: Args) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO auditors (address, stake, locked, registered_block) VALUES (?, ?, '0', ?)",
            (a["auditor"], str(a["stake"]), e.block_number),
        )

    def _auditor_exit_requested(self, e: Event, a: Args) -> None:
        self._update("auditors", {"exit_at": a["exitAt"]}, address=a["auditor"])

    def _auditor_exited(self, e: Event, a: Args) -> None:
        # AuditCommittee.exit deletes the auditor and credits its stake: nothing is held any more.
        self._update("auditors", {"exited": 1, "stake": "0", "locked": "0"}, address=a["auditor"])

    def _credited(self, e: Event, a: Args) -> None:
        dispute = None if e.contract == "TrainingTasks" else a["source"]
        task = self._task_of_source(e)
        self.db.execute(
            "INSERT OR REPLACE INTO payouts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                e.block_hash,
                e.log_index,
                e.block_number,
                e.tx_hash,
                e.contract,
                a["account"],
                task,
                dispute or None,
                str(a["amount"]),
            ),
        )
        self._add_balance(e.contract, a["account"], credited=int(a["amount"]))

    def _withdrawn(self, e: Event, a: Args) -> None:
        self._add_balance(e.contract, a["account"], withdrawn=int(a["amount"]))

    def _add_balance(self, contract: str, account: str, *, credited: int = 0, withdrawn: int = 0) -> None:
        self.db.execute("INSERT OR IGNORE INTO balances VALUES (?, ?, '0', '0')", (contract, account))
        self._add_wei("balances", "credited", credited, contract=contract, account=account)
        self._add_wei("balances", "withdrawn", withdrawn, contract=contract, account=account)

    # --- helpers -------------------------------------------------------------------------------

    def _task(self, task: int, e: Event, **columns: Any) -> None:
        """Sets ``columns`` of the task and marks it updated in this block."""
        self._update("tasks", {**columns, "updated_block": e.block_number}, task=task)

    def _bump(self, task: int, column: str, delta: int) -> None:
        self.db.execute(f"UPDATE tasks SET {column} = {column} + ? WHERE task = ?", (delta, task))

    def _extend_challenge_end(self, task: int, end: int) -> None:
        self.db.execute("UPDATE tasks SET challenge_end = MAX(challenge_end, ?) WHERE task = ?", (end, task))

    def _update(self, table: str, columns: dict[str, Any], **key: Any) -> None:
        sets = ", ".join(f"{c} = ?" for c in columns)
        where = " AND ".join(f"{c} = ?" for c in key)
        self.db.execute(f"UPDATE {table} SET {sets} WHERE {where}", (*columns.values(), *key.values()))

    def _add_wei(self, table: str, column: str, delta: int, **key: Any) -> None:
        """Adds ``delta`` to a decimal-TEXT amount (Python integers: wei exceed SQLite's)."""
        where = " AND ".join(f"{c} = ?" for c in key)
        row = self.db.execute(f"SELECT {column} FROM {table} WHERE {where}", tuple(key.values())).fetchone()
        if row is not None and delta:
            self._update(table, {column: str(int(row[0]) + delta)}, **key)

    def _task_of_source(self, event: Event) -> int | None:
        """Credited and Burned come from one base in both contracts: their source is a task of TrainingTasks,
        a dispute of the committee (0: an auditor's exit)."""
        source = int(event.args["source"])
        if event.contract == "TrainingTasks":
            return source
        return self._task_of_dispute(source) if source else None

    def _task_of_dispute(self, dispute: int) -> int | None:
        row = self.db.execute("SELECT task FROM disputes WHERE dispute = ?", (dispute,)).fetchone()
        return int(row[0]) if row else None

    def _task_of(self, event: Event) -> int | None:
        """The task an event belongs to on its timeline (None: an auditor's or an account's own event)."""
        if "task" in event.args:
            return int(event.args["task"])
        if "source" in event.args:
            return self._task_of_source(event)
        if event.args.get("dispute"):
            return self._task_of_dispute(int(event.args["dispute"]))
        return None
