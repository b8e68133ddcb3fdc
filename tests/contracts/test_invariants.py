"""Protocol 4.3 under seeded random walks across both contracts.

Each walk posts tasks of varied shapes (m, sampleBps, N, stride, windows, odd bonds), and then takes
random steps among everything the protocol allows at that moment and a share of what it forbids:
post, cancel, accept, commitBatch (now and then a bogus root), drawSeed, openBatch (honest openings,
sometimes split over two calls, sometimes tampered), slashUnopened, abandon, finalize, challenge
commit / reveal / expiry, auditor register / requestExit / exit, drawPanel (over several calls) and
rearm, ballot commit / reveal (sound, faulty or unavailable), resolve, settleSeats, withdraw, time jumps (some
exactly onto a window's edge) and block mining (some past the 256-block blockhash horizon).

After every transaction (and every clock move) it checks:

- protocol 4.3: each contract's balance equals what it holds for others plus ``burned``; with gas
  priced at zero (Ape's anvil), the ETH of all accounts and both contracts is also conserved;
- a reverted transaction reverted with one of the contracts' custom errors (never a panic or an
  empty revert) and changed no contract state; a deliberately forbidden one reverted, with the
  error named;
- bookkeeping: auditors' open seats equal the seats of complete panels not settled yet, each task's
  dispute and pending-commit counters equal the disputes and commits that exist, terminal states and
  burned amounts never move back.

Then every walk ends with "no ETH stuck": only timeouts anyone may call (plus auditors leaving and
owners cancelling unaccepted tasks) drive every task, commit and dispute to an end; every account
withdraws; each contract is left holding exactly its ``burned``.

The walk talks raw JSON-RPC to Ape's anvil: through Ape a transaction costs ~200 ms and a view
~10-30 ms, which would make the checks after every step take minutes; a raw batch of ~200 views
takes a few ms. Ape still compiles, deploys and isolates each walk.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ape
import pytest
from eth_utils import keccak
from helpers import (
    ACCEPTED,
    APPEALABLE,
    AUDITOR_STAKE,
    AWAITING_PANEL,
    B_COMMITTED,
    B_DRAWN,
    B_OPENED,
    COMMITTED,
    COMMITTEE,
    FAULTY,
    MIN_BONDS,
    OUT_OF_BOUNDS,
    POSTED,
    SEED_DELAY,
    VALID,
    VOTING,
    Evidence,
    challenge_commitment,
    sample,
    task_escrow,
    vote_commitment,
)
from rawchain import Abi, Reads, Rpc, transact

from ovig_node.protocol.sampling import sampled_intervals

SEEDS = (20240611, 8)
STEPS_PER_WALK = 500
PENDING_COMMIT, JOINED_COMMIT = 1, 2  # CommitStatus.Pending, CommitStatus.Joined
CHALLENGE_COMMITTED = "0x" + keccak(text="ChallengeCommitted(uint256,bytes32,address,uint64,uint64)").hex()
VERDICT_NONE, VERDICT_VALID = 0, 1
TERMINAL = frozenset({4, 5, 6, 7})  # Finalized, Cancelled, Abandoned, Slashed
LIVE = frozenset({POSTED, ACCEPTED, COMMITTED})
DAY = 24 * 3600
MAX_LIVE_TASKS = 4

# Task shapes (N, s, m, sampleBps): uneven last intervals, last batches of one interval, m = 1 and
# m = 256, the smallest and the full sample. A random shape is added at each post.
SHAPES = [
    (950, 100, 4, 5000),
    (60, 7, 3, 3334),
    (500, 50, 10, 1000),
    (33, 1, 16, 2500),
    (5, 5, 1, 10000),
    (12, 4, 256, 1),
    (40, 3, 5, 10000),
]
# Windows (opening, challenge, challenge reveal), in seconds.
WINDOWS = [(3600, 7200, 600), (600, 1800, 300), (7200, 3600, 1200)]
# Odd amounts leave rounding dust in every split, so burned dust is exercised too.
PROVIDER_BONDS = [3 * 10**18, 10**18 + 7]
CHALLENGER_BONDS = [10**17, 10**17 + 3]
REWARDS = [0, 2 * 10**18, 10**18 + 1]
REPLAY_SECONDS = [1, 600, COMMITTEE["maxReplaySeconds"]]

# Relative weights of the walk's actions (Walk methods).
OPEN = (AWAITING_PANEL, VOTING, APPEALABLE)  # dispute statuses before Resolved
ACTIONS: dict[str, float] = {
    "post": 5,
    "cancel": 1.5,
    "accept": 5,
    "commit_batch": 10,
    "draw_seed": 7,
    "open_batch": 10,
    "slash_unopened": 1.5,
    "abandon": 1.5,
    "finalize": 3,
    "withdraw": 4,
    "commit_challenge": 9,
    "reveal_challenge": 7,
    "expire_challenge": 2,
    "claim_bond": 2,
    "register": 4,
    "request_exit": 1,
    "exit": 1,
    "draw_panel": 5,
    "rearm": 1,
    "appeal": 1.5,
    "commit_vote": 12,
    "reveal_vote": 12,
    "resolve": 4,
    "settle_seats": 2,
    "advance_time": 3,
    "mine_blocks": 4,
}
BALLOT_UNAVAILABLE = 3  # Vote.Unavailable
RESOLVED = 3  # DisputeStatus.Resolved


# Snapshot fields read as one view each: (field, contract of the walk, view).
SCALARS: list[tuple[str, Callable[[Walk], Abi], str]] = [
    ("task_burned", lambda w: w.tasks, "burned"),
    ("committee_burned", lambda w: w.committee, "burned"),
    ("total_stake", lambda w: w.committee, "totalStake"),
    ("auditor_count", lambda w: w.committee, "auditorCount"),
    ("appeal_bonds", lambda w: w.committee, "heldAppealBonds"),
    ("held_for_seats", lambda w: w.committee, "heldForSeats"),
]
# Snapshot fields that map keys to values.
GROUPS = (
    "eth",
    "tasks",
    "batches",
    "records",
    "disputes",
    "panels",
    "seats",
    "auditors",
    "commits",
    "task_credits",
    "committee_credits",
)


# --- the chain state the walk reads after every step ----------------------------------------------


@dataclass
class Snapshot:
    """Everything the checks compare, read in three batched round trips."""

    block: int
    time: int
    eth: dict[str, int]  # ETH balance of every account and of both contracts
    tasks: dict[int, Any]  # getTask of every task
    batches: dict[tuple[int, int], Any]  # getBatch of every batch of live tasks
    records: dict[int, Any]  # TrainingTasks.getDispute of every dispute
    disputes: dict[int, Any]  # AuditCommittee.getDispute of every dispute
    panels: dict[int, list[str]]  # panelOf every dispute in Voting or Appealable
    seats: dict[int, list[str]]  # seatsOf every dispute whose seats are not all settled
    auditors: dict[str, Any]  # getAuditor of every auditor candidate
    commits: dict[tuple[str, bytes], Any]  # getCommit of every challenge commit made, by (challenger, commitment)
    task_credits: dict[str, int]
    committee_credits: dict[str, int]
    task_burned: int
    committee_burned: int
    total_stake: int
    auditor_count: int
    appeal_bonds: int
    held_for_seats: int

    def state(self) -> dict[str, Any]:
        """Contract state only (no clock, no account balances): what a reverted call must not change."""
        fields = dict(vars(self))
        for clock_or_wallet in ("block", "time", "eth"):
            del fields[clock_or_wallet]
        return fields


@dataclass(frozen=True)
class Commit:
    """A challenge commit the walk made, with what it hides."""

    task: int
    k: int
    reason: int
    salt: bytes
    watcher: str

    @property
    def commitment(self) -> bytes:
        return challenge_commitment(self.task, self.k, self.reason, self.salt, self.watcher)


class Walk:
    """A seeded random walk over both contracts; one method per action, checks after every step."""

    def __init__(self, rng: random.Random, rpc: Rpc, tasks: Abi, committee: Abi, accounts: list[str]) -> None:
        self.rng, self.rpc, self.tasks, self.committee = rng, rpc, tasks, committee
        self.accounts = accounts
        self.owners = [accounts[0], accounts[4]]
        self.providers = [accounts[1], accounts[5]]
        self.watchers = [accounts[2], accounts[3], accounts[27]]
        # A provider is an auditor too: it must never sit on a panel of its own task.
        self.candidates = [*accounts[7:27], accounts[5], accounts[28]]
        self.outsider = accounts[29]  # never registered, never a party, never credited
        self.keeper = accounts[6]
        self.errors = {**tasks.errors, **committee.errors}
        self.evidence: dict[int, Evidence] = {}
        self.bogus: set[tuple[int, int]] = set()  # (task, j) committed with a root nobody can open
        self.commits: dict[tuple[str, bytes], Commit] = {}
        self.ballots: dict[tuple[int, int, str], tuple[int, bytes]] = {}  # (dispute, run, panelist)
        self.revealed: set[tuple[int, int, str]] = set()
        self.truth: dict[int, int] = {}  # the vote most panelists of a dispute cast
        self.follow_up: str | None = None  # an action that takes the next step instead of a random one
        self.stats: Counter[tuple[str, bool]] = Counter()
        self.steps = 0
        self.snap = self.snapshot()
        self.eth_total = sum(self.snap.eth.values())
        self.check(self.snap, self.snap)

    # --- reading and checking ---------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        t, c = self.tasks, self.committee
        head, task_count, dispute_count, logs = self.rpc.batch(
            [
                ("eth_getBlockByNumber", ["latest", False]),
                t.call("taskCount"),
                t.call("disputeCount"),
                ("eth_getLogs", [{"address": t.address, "topics": [CHALLENGE_COMMITTED], "fromBlock": "0x0"}]),
            ]
        )
        reads = Reads()
        for a in [*self.accounts, t.address, c.address]:
            reads.add("eth", a, ("eth_getBalance", [a, "latest"]), lambda raw: int(raw, 16))
        for i in range(1, t.result("taskCount", task_count) + 1):
            reads.view("tasks", i, t, "getTask", i)
        for d in range(1, t.result("disputeCount", dispute_count) + 1):
            reads.view("records", d, t, "getDispute", d)
            reads.view("disputes", d, c, "getDispute", d)
        for a in self.candidates:
            reads.view("auditors", a, c, "getAuditor", a)
        # Commits as the chain knows them (from their events), not as the walk believes it made them.
        for log in logs:
            commitment, challenger = bytes.fromhex(log["topics"][2][2:]), "0x" + log["topics"][3][-40:]
            reads.view("commits", (challenger, commitment), t, "getCommit", challenger, commitment)
        for a in self.accounts:
            reads.view("task_credits", a, t, "credits", a)
            reads.view("committee_credits", a, c, "credits", a)
        for name, contract, fn in SCALARS:
            reads.view(name, None, contract(self), fn)
        fields = {group: {} for group in GROUPS} | reads.run(self.rpc)
        # Batches of live tasks and panels of voting disputes, now that statuses are known.
        more = Reads()
        for i, task in fields["tasks"].items():
            if task.status in (ACCEPTED, COMMITTED):
                for j in range(task.batchCount):
                    more.view("batches", (i, j), t, "getBatch", i, j)
        for d, dispute in fields["disputes"].items():
            if dispute.status in (VOTING, APPEALABLE):
                more.view("panels", d, c, "panelOf", d)
            if not dispute.seatsSettled:
                more.view("seats", d, c, "seatsOf", d)
        fields |= more.run(self.rpc)
        scalars = {name: fields.pop(name)[None] for name, _, _ in SCALARS}
        return Snapshot(block=int(head["number"], 16), time=int(head["timestamp"], 16), **fields, **scalars)

    def check(self, before: Snapshot, after: Snapshot) -> None:
        """Protocol 4.3 and the walk's bookkeeping invariants, between two consecutive snapshots."""
        tasks_eth = after.eth[self.tasks.address]
        committee_eth = after.eth[self.committee.address]
        assert tasks_eth == self.held_by_tasks(after), "TrainingTasks balance != what it holds for others"
        assert committee_eth == self.held_by_committee(after), "AuditCommittee balance != stakes + credits + burned"
        assert sum(after.eth.values()) == self.eth_total, "ETH was created or destroyed"
        self.check_bookkeeping(after)
        assert after.task_burned >= before.task_burned and after.committee_burned >= before.committee_burned
        for i, task in before.tasks.items():
            if task.status in TERMINAL:
                assert after.tasks[i].status == task.status, f"task {i} left terminal state {task.status}"
            assert after.tasks[i].committedBatches >= task.committedBatches
            assert after.tasks[i].openedBatches >= task.openedBatches

    def held_by_tasks(self, s: Snapshot) -> int:
        """Escrow of live tasks, challenger bonds held (pending commits, joined bonds not paid out), credits, burned."""
        held = sum(task_escrow(task) for task in s.tasks.values())
        return held + sum(s.task_credits.values()) + s.task_burned

    @staticmethod
    def held_by_committee(s: Snapshot) -> int:
        return (
            s.total_stake + s.appeal_bonds + s.held_for_seats + sum(s.committee_credits.values()) + s.committee_burned
        )

    def check_bookkeeping(self, s: Snapshot) -> None:
        # Seats answered for: every seat of a complete panel not settled yet (a draw in progress is not).
        seats = 0
        for i, d in s.disputes.items():
            if not d.seatsSettled:
                seats += len(s.seats[i]) - (d.seated if d.status == AWAITING_PANEL else 0) - d.settledSeats
        assert sum(a.openSeats for a in s.auditors.values()) == seats, "open seats != seats of open disputes"
        assert s.total_stake == sum(a.stake for a in s.auditors.values())
        assert s.auditor_count == sum(a.registeredBlock != 0 and not a.exitRequestedAt for a in s.auditors.values())
        open_records = Counter(r.task for r in s.records.values() if r.open)
        open_disputes = Counter(d.task for d in s.disputes.values() if d.status in OPEN)
        pending = Counter(c.task for c in s.commits.values() if c.status == PENDING_COMMIT)
        # A pending bond is held whole; a joined one until claimBond, unless its dispute settled sound (paid out
        # then), less its share of the round charges once settled with no decision.
        held: Counter[int] = Counter()
        for c in s.commits.values():
            bond = s.tasks[c.task].terms.challengerBond
            if c.status == PENDING_COMMIT:
                held[c.task] += bond
            elif c.status == JOINED_COMMIT and (record := s.records[c.dispute]).verdict != VERDICT_VALID:
                held[c.task] += bond if record.verdict == VERDICT_NONE else record.refundPerBond
        for i, task in s.tasks.items():
            assert task.openDisputes == open_records[i] == open_disputes[i], f"task {i}: dispute counters disagree"
            assert task.pendingCommits == pending[i], f"task {i}: pending commits disagree"
            assert task.heldBonds == held[i], f"task {i}: held bonds disagree"

    # --- sending ----------------------------------------------------------------------------------

    def send(
        self, sender: str, contract: Abi, fn: str, *args: Any, value: int = 0, forbidden: tuple[str, ...] = ()
    ) -> bool:
        """Send one transaction and check everything after it; True if it succeeded.

        ``forbidden``: the action is one the protocol forbids; it must revert with one of these errors.
        """
        sent = transact(self.rpc, self.errors, sender, contract, fn, *args, value=value)
        ok, error = sent.ok, sent.error
        before, self.snap = self.snap, self.snapshot()
        self.check(before, self.snap)
        if not ok:
            assert error in self.errors.values(), f"{fn}{args} reverted without a custom error: {error}"
            assert self.snap.state() == before.state(), f"{fn} reverted ({error}) but state changed"
        if forbidden:
            assert not ok, f"forbidden {fn}{args} from {sender} succeeded"
            assert error in forbidden, f"forbidden {fn}: expected one of {forbidden}, got {error}"
        self.stats[(fn, ok)] += 1
        return ok

    def mine(self, blocks: int) -> None:
        self.rpc("anvil_mine", hex(blocks))
        self.after_clock_move()

    def warp(self, seconds: int) -> None:
        self.rpc("evm_setNextBlockTimestamp", hex(self.snap.time + seconds))
        self.mine(1)

    def after_clock_move(self) -> None:
        self.stats[("clock", True)] += 1
        before, self.snap = self.snap, self.snapshot()
        self.check(before, self.snap)
        assert self.snap.state() == before.state(), "moving the clock changed contract state"

    # --- picking ----------------------------------------------------------------------------------

    def pick(self, items: Any) -> Any:
        items = list(items)
        return self.rng.choice(items) if items else None

    def prefer(self, likely: Any, anything: Any) -> Any:
        """Mostly a target the action is likely allowed on; now and then (or failing that) any target."""
        likely = list(likely)
        if likely and self.rng.random() < 0.9:
            return self.rng.choice(likely)
        return self.pick(anything) if likely or self.rng.random() < 0.3 else None

    def tasks_in(self, *statuses: int) -> list[int]:
        return [i for i, t in self.snap.tasks.items() if t.status in statuses]

    def batches_in(self, status: int) -> list[tuple[int, int]]:
        return [key for key, b in self.snap.batches.items() if b.status == status]

    def someone(self) -> str:
        return self.pick(a for a in self.accounts if a != self.outsider)

    def opened_intervals(self, task: int) -> list[int]:
        """Sampled intervals of the task's opened batches."""
        m = self.snap.tasks[task].terms.intervalsPerBatch
        return [
            j * m + p
            for (i, j), b in self.snap.batches.items()
            if i == task and b.status == B_OPENED
            for p in range(m)
            if b.sampledBitmap >> p & 1
        ]

    # --- tasks ------------------------------------------------------------------------------------

    def post(self) -> None:
        rng = self.rng
        if len(self.tasks_in(ACCEPTED, COMMITTED)) + len(self.open_offers()) >= MAX_LIVE_TASKS:
            return  # a few tasks at a time, so each one gets far in its lifecycle
        if rng.random() < 0.5:
            n, s, m, bps = rng.choice(SHAPES)
        else:
            n = rng.randint(1, 300)
            s = rng.randint(-(-n // 40), n)  # at most 40 intervals: openings stay small
            m, bps = rng.choice([1, 2, 3, 5, 8, 13, 256]), rng.choice([1, 2500, 5000, 10000, rng.randint(1, 10000)])
        windows = rng.choice(WINDOWS)
        deadline = self.snap.time + rng.randint(DAY, 5 * DAY)
        bonds = (rng.choice(PROVIDER_BONDS), rng.choice(CHALLENGER_BONDS))
        terms = [
            keccak(text=f"spec {self.steps}"),
            "bafyspec",
            keccak(text=f"init {self.steps}"),
            n,
            s,
            m,
            bps,
            bonds,
            rng.choice(REPLAY_SECONDS),
            windows,
            deadline,
        ]
        value = rng.choice(REWARDS)
        forbidden: tuple[str, ...] = ()
        if rng.random() < 0.15:
            # One parameter out of range (protocol 4.1); each check names its own error.
            field, bad, error = rng.choice(
                [
                    (3, 0, "ZeroTotalSteps"),
                    (4, 0, "ZeroStride"),
                    (5, 0, "InvalidIntervalsPerBatch"),
                    (5, 257, "InvalidIntervalsPerBatch"),
                    (6, 0, "InvalidSampleBps"),
                    (6, 10001, "InvalidSampleBps"),
                    (9, (0, 1, 1), "InvalidWindow"),
                    (9, (1, 366 * DAY, 1), "InvalidWindow"),
                    (10, self.snap.time - 1, "DeadlineNotInFuture"),
                    (8, 0, "InvalidReplaySeconds"),
                    (8, COMMITTEE["maxReplaySeconds"] + 1, "InvalidReplaySeconds"),
                    (7, (bonds[0], MIN_BONDS[1] - 1), "BondTooLow"),
                ]
            )
            terms[field], forbidden = bad, (error,)
        owner = self.pick(self.owners)
        if self.send(owner, self.tasks, "postTask", *terms, value=value, forbidden=forbidden):
            task = max(self.snap.tasks)
            self.evidence[task] = Evidence(task, n, s, m, terms[2])

    def open_offers(self) -> list[int]:
        """Posted tasks a provider may still accept."""
        return [i for i in self.tasks_in(POSTED) if self.snap.time < self.snap.tasks[i].terms.deadline]

    def cancel(self) -> None:
        stale = [i for i in self.tasks_in(POSTED) if i not in self.open_offers()]
        task = self.prefer(stale, self.tasks_in(POSTED)) or self.pick(self.snap.tasks)
        if task is None:
            return
        t = self.snap.tasks[task]
        if t.status == POSTED and self.rng.random() < 0.2:
            self.send(self.outsider, self.tasks, "cancel", task, forbidden=("NotOwner",))
        else:
            self.send(t.owner, self.tasks, "cancel", task)

    def accept(self) -> None:
        task = self.prefer(self.open_offers(), self.tasks_in(POSTED))
        if task is None:
            return
        bond = self.snap.tasks[task].terms.providerBond
        if self.rng.random() < 0.15:
            self.send(
                self.pick(self.providers),
                self.tasks,
                "acceptTask",
                task,
                value=bond + 1,
                forbidden=("WrongBond", "DeadlinePassed"),
            )
        else:
            self.send(self.pick(self.providers), self.tasks, "acceptTask", task, value=bond)

    def commit_batch(self) -> None:
        task = self.pick(self.tasks_in(ACCEPTED))
        if task is None:
            return
        t, ev = self.snap.tasks[task], self.evidence[task]
        j = t.committedBatches
        root = ev.tree(j).root
        roll = self.rng.random()
        if roll < 0.05:
            self.send(t.provider, self.tasks, "commitBatch", task, j + 1, root, "m", forbidden=("BatchOutOfOrder",))
        elif roll < 0.1:
            self.send(self.outsider, self.tasks, "commitBatch", task, j, root, "m", forbidden=("NotProvider",))
        elif roll < 0.16:
            # A provider committing something it cannot open: the batch can only be slashed.
            if self.send(t.provider, self.tasks, "commitBatch", task, j, keccak(text=f"junk {task}/{j}"), "m"):
                self.bogus.add((task, j))
        else:
            self.send(t.provider, self.tasks, "commitBatch", task, j, root, f"bafymanifest{j}")

    def draw_seed(self) -> None:
        key = self.prefer(self.batches_in(B_COMMITTED), self.snap.batches)
        if key is not None and self.send(self.someone(), self.tasks, "drawSeed", *key):
            self.check_sample(*key)

    def check_sample(self, task: int, j: int) -> None:
        """The drawn sample is the one protocol section 3 defines (helpers' independent draw)."""
        t, b, ev = self.snap.tasks[task], self.snap.batches[(task, j)], self.evidence[task]
        n = len(ev.batch_intervals(j))
        if b.seed == bytes(32):  # the seed block was past the horizon: everything is sampled
            assert b.sampledBitmap == (1 << n) - 1
        else:
            positions = sample(b.seed, n, t.terms.sampleBps, is_last=j + 1 == t.batchCount)
            assert b.sampledBitmap == sum(1 << p for p in positions) and b.sampleCount == len(positions)

    def open_batch(self) -> None:
        drawn = self.batches_in(B_DRAWN)
        key = self.prefer((key for key in drawn if self.snap.time < self.snap.batches[key].windowEnd), drawn)
        if key is None:
            return
        task, j = key
        t, b, ev = self.snap.tasks[task], self.snap.batches[key], self.evidence[task]
        m = t.terms.intervalsPerBatch
        sampled = sampled_intervals(b.sampledBitmap, j, m)
        todo = [k for k in sampled if not b.openedBitmap >> (k - j * m) & 1]
        openings = [ev.opening(k) for k in todo]
        # Honest openings of a batch committed with a junk root cannot verify.
        unopenable = ("InvalidProof", "OpeningWindowClosed") if key in self.bogus else ()
        roll = self.rng.random()
        if roll < 0.04:
            self.send(self.outsider, self.tasks, "openBatch", task, j, "o", openings, forbidden=("NotProvider",))
        elif roll < 0.07:
            self.send(
                t.provider, self.tasks, "openBatch", task, j, "o", [], forbidden=("EmptyOpening", "OpeningWindowClosed")
            )
        elif roll < 0.10:
            self.send(
                t.provider,
                self.tasks,
                "openBatch",
                task,
                j,
                "o",
                openings + openings[:1],
                forbidden=("DuplicateOpening", "OpeningWindowClosed", "InvalidProof"),
            )
        elif roll < 0.13:
            k, step, _, proof, *start = openings[0]
            tampered = (k, step, keccak(text="not the evidence"), proof, *start)
            self.send(
                t.provider,
                self.tasks,
                "openBatch",
                task,
                j,
                "o",
                [tampered],
                forbidden=("InvalidProof", "OpeningWindowClosed"),
            )
        elif roll < 0.16 and len(sampled) < len(ev.batch_intervals(j)):
            unsampled = next(k for k in ev.batch_intervals(j) if k not in sampled)
            self.send(
                t.provider,
                self.tasks,
                "openBatch",
                task,
                j,
                "o",
                [ev.opening(unsampled)],
                forbidden=("IntervalNotSampled", "OpeningWindowClosed"),
            )
        elif roll < 0.4 and len(openings) > 1:
            # Openings may span several calls; the batch opens with the call completing its sample.
            part = self.rng.randint(1, len(openings) - 1)
            self.send(t.provider, self.tasks, "openBatch", task, j, "o1", openings[:part], forbidden=unopenable)
        else:
            self.send(t.provider, self.tasks, "openBatch", task, j, f"bafyopening{j}", openings, forbidden=unopenable)

    def slash_unopened(self) -> None:
        key = self.pick(self.batches_in(B_DRAWN))
        if key is not None:
            self.send(self.someone(), self.tasks, "slashUnopened", *key)

    def abandon(self) -> None:
        task = self.prefer(self.tasks_in(ACCEPTED), self.snap.tasks)
        if task is not None:
            self.send(self.someone(), self.tasks, "abandon", task)

    def finalize(self) -> None:
        ends = [self.snap.tasks[i].challengeEnd for i in self.tasks_in(COMMITTED)]
        if ends and self.rng.random() < 0.3:
            self.wait_until(min(ends))
        task = self.prefer(self.tasks_in(COMMITTED), self.snap.tasks)
        if task is not None:
            self.send(self.someone(), self.tasks, "finalize", task)

    def withdraw(self) -> None:
        contract = self.rng.choice([self.tasks, self.committee])
        credits = self.snap.task_credits if contract is self.tasks else self.snap.committee_credits
        owed = [a for a, amount in credits.items() if amount]
        if owed and self.rng.random() < 0.9:
            self.send(self.pick(owed), contract, "withdraw")
        else:
            self.send(self.outsider, contract, "withdraw", forbidden=("NothingToWithdraw",))

    # --- challenges -------------------------------------------------------------------------------

    def commit_challenge(self) -> None:
        live = [i for i in self.tasks_in(ACCEPTED, COMMITTED) if self.snap.tasks[i].challengeEnd > self.snap.time]
        task = self.prefer(live, self.tasks_in(ACCEPTED, COMMITTED))
        if task is None:
            return
        t = self.snap.tasks[task]
        k = self.pick(self.opened_intervals(task))
        if k is None or self.rng.random() < 0.1:
            k = self.rng.randrange(self.evidence[task].intervals + 2)  # maybe unopened, maybe past K
        reason = self.rng.choice([1, 2] * 8 + [0, 3])  # 0 and 3: invalid, caught at the reveal
        commit = Commit(task, k, reason, self.rng.randbytes(32), self.pick(self.watchers))
        if self.rng.random() < 0.08:
            self.send(
                commit.watcher,
                self.tasks,
                "commitChallenge",
                task,
                commit.commitment,
                value=t.terms.challengerBond + 1,
                forbidden=("WrongBond", "NoChallengeWindowOpen"),
            )
        else:
            self.commits[(commit.watcher, commit.commitment)] = commit
            ok = self.send(
                commit.watcher, self.tasks, "commitChallenge", task, commit.commitment, value=t.terms.challengerBond
            )
            if ok and self.rng.random() < 0.6:
                self.follow_up = "reveal_challenge"  # a watcher reveals soon after committing

    def pending_commits(self) -> list[Commit]:
        on_chain = self.snap.commits
        return [c for h, c in self.commits.items() if h in on_chain and on_chain[h].status == PENDING_COMMIT]

    def claimable(self) -> list[Commit]:
        """Joined commits whose dispute settled other than sound: their bonds wait for claimBond."""
        s = self.snap
        return [
            c
            for h, c in self.commits.items()
            if h in s.commits
            and s.commits[h].status == JOINED_COMMIT
            and s.records[s.commits[h].dispute].verdict not in (VERDICT_NONE, VERDICT_VALID)
        ]

    def claim_bond(self) -> None:
        c = self.prefer(self.claimable(), list(self.commits.values()))
        if c is not None:
            self.send(self.someone(), self.tasks, "claimBond", c.task, c.watcher, c.commitment)

    def reveal_challenge(self) -> None:
        s = self.snap
        due = [c for c in self.pending_commits() if s.time < self.reveal_by(c)]
        c = self.prefer(due, self.pending_commits())
        if c is None:
            return
        args = (c.task, c.k, c.reason, c.salt, "bafyreport")
        if self.rng.random() < 0.08:
            # The commitment binds the committer: anyone else's reveal names no pending commit.
            other = self.pick(w for w in self.watchers if w != c.watcher)
            self.send(other, self.tasks, "revealChallenge", *args, forbidden=("UnknownCommitment",))
        else:
            self.send(c.watcher, self.tasks, "revealChallenge", *args)

    def reveal_by(self, c: Commit) -> int:
        committed_at = self.snap.commits[(c.watcher, c.commitment)].committedAt
        return committed_at + self.snap.tasks[c.task].terms.windows.challengeRevealWindow

    def expire_challenge(self) -> None:
        c = self.prefer(
            (c for c in self.pending_commits() if self.reveal_by(c) <= self.snap.time), self.pending_commits()
        )
        if c is not None:
            self.send(self.someone(), self.tasks, "expireChallenge", c.task, c.watcher, c.commitment)

    # --- the committee ----------------------------------------------------------------------------

    def register(self) -> None:
        auditor = self.prefer(
            (a for a in self.candidates if not self.snap.auditors[a].registeredBlock), self.candidates
        )
        if auditor is None:
            return
        stake = AUDITOR_STAKE
        if self.snap.auditors[auditor].registeredBlock:
            self.send(auditor, self.committee, "register", value=stake, forbidden=("AlreadyRegistered",))
        elif self.rng.random() < 0.1:
            self.send(auditor, self.committee, "register", value=stake - 1, forbidden=("StakeTooLow",))
        else:
            self.send(auditor, self.committee, "register", value=stake)

    def request_exit(self) -> None:
        registered = [a for a, x in self.snap.auditors.items() if x.registeredBlock]
        auditor = self.pick(registered) if registered and self.rng.random() < 0.9 else self.outsider
        self.send(auditor, self.committee, "requestExit")

    def exit(self) -> None:
        leaving = [a for a, x in self.snap.auditors.items() if x.exitRequestedAt]
        auditor = self.prefer(leaving, self.candidates)
        self.send(auditor, self.committee, "exit")

    def open_disputes(self, *statuses: int) -> list[int]:
        return [d for d, x in self.snap.disputes.items() if x.status in statuses]

    def draw_panel(self) -> None:
        d = self.pick(self.open_disputes(AWAITING_PANEL))
        drawn = d is not None and self.send(self.someone(), self.committee, "drawPanel", d)
        if drawn and self.snap.disputes[d].status == VOTING:
            self.follow_up = "commit_vote"  # panelists start on their replays at once
        elif drawn:
            self.follow_up = "draw_panel"  # a draw over several calls, or another dispute's

    def appeal(self) -> None:
        d = self.pick(self.open_disputes(APPEALABLE))
        if d is None:
            return
        x = self.snap.disputes[d]
        bond = self.snap.tasks[x.task].terms.challengerBond << (x.round + 1)
        appellant = self.someone()
        if self.rng.random() < 0.1:
            self.send(appellant, self.committee, "appeal", d, value=bond - 1, forbidden=("WrongBond",))
        else:
            self.send(appellant, self.committee, "appeal", d, value=bond)

    def rearm(self) -> None:
        d = self.pick(self.open_disputes(AWAITING_PANEL))
        if d is not None:
            self.send(self.someone(), self.committee, "rearm", d)

    def commit_end(self, d: int) -> int:
        return self.snap.disputes[d].drawnAt + COMMITTEE["commitWindow"]

    def commit_vote(self) -> None:
        voting = self.open_disputes(VOTING)
        d = self.prefer((d for d in voting if self.snap.time < self.commit_end(d)), voting)
        if d is None:
            return
        run = self.snap.disputes[d].run
        seated = [p for p in self.snap.panels[d] if (d, run, p) not in self.ballots]
        truth = self.truth.setdefault(d, self.rng.choice([VALID, FAULTY, BALLOT_UNAVAILABLE]))
        if not seated or self.rng.random() < 0.05:
            commitment = vote_commitment(d, run, truth, bytes(32), self.outsider)
            self.send(self.outsider, self.committee, "commitVote", d, commitment, forbidden=("NotPanelist",))
            return
        panelist = self.pick(seated)
        vote = truth if self.rng.random() < 0.8 else self.rng.choice([VALID, FAULTY, BALLOT_UNAVAILABLE])
        salt = self.rng.randbytes(32)
        if self.send(panelist, self.committee, "commitVote", d, vote_commitment(d, run, vote, salt, panelist)):
            self.ballots[(d, run, panelist)] = (vote, salt)
            if self.rng.random() < 0.85:
                self.follow_up = "commit_vote"  # the rest of the panel, mostly before anything else

    def reveal_vote(self) -> None:
        voting = {(d, x.run) for d, x in self.snap.disputes.items() if x.status == VOTING}
        ballots = [k for k in self.ballots if k[:2] in voting]
        reveal_end = COMMITTEE["commitWindow"] + COMMITTEE["revealWindow"]
        due = [
            k
            for k in ballots
            if self.commit_end(k[0]) <= self.snap.time < self.snap.disputes[k[0]].drawnAt + reveal_end
        ]
        due = [k for k in due if k not in self.revealed]
        waiting = [self.commit_end(k[0]) for k in ballots if self.snap.time < self.commit_end(k[0])]
        if not due and waiting and self.rng.random() < 0.5:
            return self.wait_until(min(waiting))  # panelists wait for the reveal window to open
        key = self.prefer(due, ballots)
        if key is None:
            return
        d, _, panelist = key
        vote, salt = self.ballots[key]
        roll = self.rng.random()
        if roll < 0.05:
            self.send(
                panelist,
                self.committee,
                "revealVote",
                d,
                VALID if vote != VALID else FAULTY,
                salt,
                forbidden=("VoteMismatch", "VoteRevealClosed", "NothingToReveal", "InterestedPanelist"),
            )
        elif roll < 0.08:
            self.send(panelist, self.committee, "revealVote", d, 5, salt, forbidden=("InvalidVote", "VoteRevealClosed"))
        elif self.send(panelist, self.committee, "revealVote", d, vote, salt):
            self.revealed.add(key)
            if self.rng.random() < 0.85:
                self.follow_up = "reveal_vote"

    def resolve(self) -> None:
        reveal_ends = [self.commit_end(d) + COMMITTEE["revealWindow"] for d in self.open_disputes(VOTING)]
        if reveal_ends and self.rng.random() < 0.3:
            self.wait_until(min(reveal_ends))
        d = self.prefer(self.open_disputes(VOTING, APPEALABLE, AWAITING_PANEL), self.snap.disputes)
        if d is not None:
            self.send(self.someone(), self.committee, "resolve", d)

    def settle_seats(self) -> None:
        unsettled = [d for d, x in self.snap.disputes.items() if x.status == RESOLVED and not x.seatsSettled]
        d = self.prefer(unsettled, self.snap.disputes)
        if d is not None:
            self.send(self.someone(), self.committee, "settleSeats", d)

    # --- clocks -----------------------------------------------------------------------------------

    def boundaries(self) -> list[int]:
        """Upcoming edges of every window, deadline and timeout."""
        s = self.snap
        edges = [t.terms.deadline for t in s.tasks.values()] + [t.challengeEnd for t in s.tasks.values()]
        edges += [b.windowEnd for b in s.batches.values()]
        edges += [self.reveal_by(c) for c in self.pending_commits()]
        for d in s.disputes.values():
            edges += [
                d.drawnAt + COMMITTEE["commitWindow"],
                d.drawnAt + COMMITTEE["commitWindow"] + COMMITTEE["revealWindow"],
            ]
            edges += [d.armedAt + COMMITTEE["maxDrawDelay"], d.roundStartedAt + COMMITTEE["starvationTimeout"]]
            edges.append(d.decidedAt + COMMITTEE["appealWindow"])
        edges += [a.exitRequestedAt + COMMITTEE["cooldown"] for a in s.auditors.values() if a.exitRequestedAt]
        return sorted(e for e in set(edges) if e > s.time + 1)

    def advance_time(self) -> None:
        roll = self.rng.random()
        edge = self.pick(self.boundaries()[:4])
        if roll < 0.5 and edge is not None:
            # The next transaction lands on the edge or one second before: windows are half-open.
            self.rpc("evm_setNextBlockTimestamp", hex(edge - self.rng.choice([0, 1])))
            self.after_clock_move()
        elif roll < 0.95:
            self.warp(self.rng.choice([5, 60, 300, 900]))
        else:
            self.warp(self.rng.choice([DAY, 4 * DAY, 8 * DAY]))

    def wait_until(self, moment: int) -> None:
        """The next transaction runs at ``moment`` (if that is still ahead)."""
        if moment > self.snap.time + 1:
            self.rpc("evm_setNextBlockTimestamp", hex(moment))
            self.after_clock_move()

    def mine_blocks(self) -> None:
        # Now and then past the 256-block horizon while a seed is undrawn (keepers asleep): the batch
        # samples everything; a panel seed that old re-arms.
        if self.rng.random() < (0.3 if self.batches_in(B_COMMITTED) else 0.05):
            self.mine(self.rng.randint(257, 300))
            self.follow_up = "draw_seed"  # a keeper wakes up
        else:
            self.mine(self.rng.choice([1, 2, 3, 5]))

    # --- the walk and the way out -----------------------------------------------------------------

    def run(self, steps: int) -> None:
        names, weights = list(ACTIONS), list(ACTIONS.values())
        while self.steps < steps:
            done = sum(self.stats.values())
            action, self.follow_up = self.follow_up or self.rng.choices(names, weights)[0], None
            getattr(self, action)()
            self.steps += sum(self.stats.values()) > done  # an action with no target is no step

    def settle(self) -> None:
        """Drive everything to an end with calls anyone may make, then withdraw every credit."""
        for auditor, a in self.snap.auditors.items():
            if a.registeredBlock and not a.exitRequestedAt:
                self.send(auditor, self.committee, "requestExit")
        for _ in range(40):
            if not self.anything_live():
                break
            self.settle_pass()
            self.mine(SEED_DELAY + 1)
            self.warp(DAY)
        assert not self.anything_live(), "timeouts did not end every task, commit, dispute and stake"
        for contract, credits in ((self.tasks, "task_credits"), (self.committee, "committee_credits")):
            for account, amount in getattr(self.snap, credits).items():
                if amount:
                    assert self.send(account, contract, "withdraw")
        s = self.snap
        assert s.eth[self.tasks.address] == s.task_burned
        assert s.eth[self.committee.address] == s.committee_burned
        assert not any(s.task_credits.values()) and not any(s.committee_credits.values())
        assert all(t.status not in LIVE for t in s.tasks.values())

    def anything_live(self) -> bool:
        s = self.snap
        return (
            any(t.status in LIVE or t.waitingLeadSeq for t in s.tasks.values())
            or any(c.status == PENDING_COMMIT for c in s.commits.values())
            or bool(self.claimable())
            or any(d.status in OPEN or not d.seatsSettled for d in s.disputes.values())
            or any(a.registeredBlock for a in s.auditors.values())  # exiting ones too: their stake is held
        )

    def settle_pass(self) -> None:
        """One round of every transition that may be due; a call that is not due yet just reverts."""
        s, anyone = self.snap, self.keeper
        for i, t in s.tasks.items():
            if t.status == POSTED:
                self.send(t.owner, self.tasks, "cancel", i)
            elif t.status == ACCEPTED and t.terms.deadline <= s.time:
                self.send(anyone, self.tasks, "abandon", i)
            if t.waitingLeadSeq:
                self.send(anyone, self.tasks, "releaseLeadShare", i)
        for (i, j), b in s.batches.items():
            if b.status == B_COMMITTED:
                self.send(anyone, self.tasks, "drawSeed", i, j)
            elif b.status == B_DRAWN and b.windowEnd <= s.time:
                self.send(anyone, self.tasks, "slashUnopened", i, j)
        for c in self.pending_commits():
            self.send(anyone, self.tasks, "expireChallenge", c.task, c.watcher, c.commitment)
        for c in self.claimable():
            self.send(anyone, self.tasks, "claimBond", c.task, c.watcher, c.commitment)
        for d, x in s.disputes.items():
            if x.status == AWAITING_PANEL:
                for _ in range(4):  # a round of 15 takes up to four calls
                    if self.snap.disputes[d].status != AWAITING_PANEL or not self.send(
                        anyone, self.committee, "drawPanel", d
                    ):
                        break
                if self.snap.disputes[d].status == AWAITING_PANEL:
                    self.send(anyone, self.committee, "rearm", d)
            elif x.status in (VOTING, APPEALABLE):
                self.send(anyone, self.committee, "resolve", d)
            while self.snap.disputes[d].status == RESOLVED and not self.snap.disputes[d].seatsSettled:
                assert self.send(anyone, self.committee, "settleSeats", d)
        for i, t in self.snap.tasks.items():
            if t.status == COMMITTED:
                self.send(anyone, self.tasks, "finalize", i)
        for auditor, a in self.snap.auditors.items():
            if a.exitRequestedAt and a.exitRequestedAt + COMMITTEE["cooldown"] <= self.snap.time and not a.openSeats:
                self.send(auditor, self.committee, "exit")


@pytest.mark.parametrize("seed", SEEDS)
def test_random_walk_keeps_balances_and_leaves_nothing_stuck(
    seed: int, tasks: Any, committee: Any, accounts: Any, chain: Any
) -> None:
    rpc = Rpc(chain.provider.web3.provider.endpoint_uri)

    def abi(contract: Any) -> Abi:
        return Abi(contract.address, contract.contract_type.model_dump(mode="json", by_alias=True)["abi"])

    # Every block one second after the last, whatever the wall clock does, so a seed replays its walk (block
    # hashes, hence samples and panels, also depend on the session's earlier blocks).
    rpc("anvil_setBlockTimestampInterval", 1)
    try:
        walk = Walk(random.Random(seed), rpc, abi(tasks), abi(committee), [a.address.lower() for a in accounts])
        walk.run(STEPS_PER_WALK)
        walk.settle()
    finally:
        rpc("anvil_removeBlockTimestampInterval")

    # The walk reached every part of the protocol, not just its reverts.
    succeeded = {fn for (fn, ok) in walk.stats if ok}
    assert succeeded >= {
        "postTask",
        "acceptTask",
        "commitBatch",
        "drawSeed",
        "openBatch",
        "finalize",
        "commitChallenge",
        "revealChallenge",
        "register",
        "drawPanel",
        "commitVote",
        "revealVote",
        "resolve",
        "settleSeats",
        "withdraw",
        "exit",
    }, succeeded


# --- a spec deviation found while writing the walk ------------------------------------------------


def test_reveal_of_interval_whose_batch_opened_after_the_commit_reverts(
    tasks: Any,
    provider: Any,
    watcher: Any,
    post_task: Callable[..., int],
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Callable[[int, int], list[int]],
    open_batch: Callable[..., Any],
    chain: Any,
) -> None:
    task = post_task()
    tasks.acceptTask(task, sender=provider, value=tasks.getTask(task).terms.providerBond)
    ev = evidence(task)
    commit(ev)
    draw(task, 0)
    open_batch(ev, 0)  # batch 0's window is open: commits are accepted
    k = draw(task, 1)[0]  # batch 1 is drawn, not opened: no window of it is open
    salt = b"\x01" * 32
    commitment = challenge_commitment(task, k, OUT_OF_BOUNDS, salt, watcher.address)
    tasks.commitChallenge(task, commitment, sender=watcher, value=tasks.getTask(task).terms.challengerBond)
    # A later second: windows are judged on timestamps, and the commit's second must precede the opening's.
    chain.pending_timestamp = tasks.getCommit(watcher.address, commitment).committedAt + 1
    open_batch(ev, 1)  # batch 1's window opens only now, after the commit
    opened_at = tasks.getBatch(task, 1).openedAt
    with ape.reverts(tasks.IntervalWindowNotOpen, task=task, k=k, opensAt=opened_at):
        tasks.revealChallenge(task, k, OUT_OF_BOUNDS, salt, "bafyreport", sender=watcher)
