"""The auditor node: stake in the committee, and answer every seat it is drawn for (protocol 4.2, v3).

It registers with the committee's stake and keeps it topped up to it (one penalty or two leave it eligible,
L x penalty; it says loudly when its balance cannot top up). It follows PanelDrawn events naming it and always
commits and reveals a ballot, with its reason, within the windows: the salt and ballot are persisted before
the commit is sent, so a restarted auditor still reveals. Nothing but its own judgement decides the ballot,
never a local limit or setting:

- ``unavailable``: the interval's files (or the owner's: spec, dataset, initial checkpoint, boundary) matching
  their committed digests could not be obtained from any source by the draw plus the fetch window (half the
  commit window, the same for every node). Until then a file not found is looked for again. Every seat is
  fetched from its draw on, in a worker of its own, never queued behind a replay; a fetch that began late all
  the same (the node down, or more seats at once than fetch workers) did not look through the window, and
  abstains instead: a busy node must never answer `unavailable` for files that were served;
- ``faulty``: the files were obtained and the replay (confirmed under a second profile, as a watcher confirms)
  is out of bounds beyond the near-tie band or the evidence malformed, or the owner's files fail the
  deterministic acceptability check the trainer also runs before it accepts a task;
- ``sound``: otherwise;
- ``abstain`` on a replay out of bounds but within the near-tie band (protocol 5: within a bound of its limit,
  where another honest replay may pass it).

A seat with no verdict by its commit deadline (the commit window's end less ``COMMIT_MARGIN``, to send the
commit): a replay that has not finished, or one that failed, is ``abstain``, never silence. An abstention
counts for no outcome and toward no quorum, as silence does (a run mostly abstaining is drawn again, and then
the dispute ends with no decision), but unlike silence it is never penalised and never paid: a task whose replay no
node can finish in time (an owner's declared replay time far below the truth) costs the honest auditors
nothing and decides nothing. The replay runs in a background thread, so the node keeps serving its other seats
and reaches every deadline; one replay at a time, since an execution profile's settings are process-wide, and each
replay stops between two steps at twice the task's declared replay time from its start (or its seat's deadline,
if sooner), so a junk task's endless interval holds the worker no longer than that (a single step is not
interrupted); a seat with less than its declared replay time left abstains without starting when another seat's
replay waits for the worker (the declared time is the slowest honest replay: a seat alone still tries).

Every evidence file it fetched it pins on its own IPFS node, so the other panelists can fetch it from there
too. A panelist that has become interested in the task (it challenged it since it was drawn) commits nothing more:
the contract would refuse it; the ballot it committed before (its abstention, or its verdict) is revealed (a
committed ballot always is, and counts), and a seat with none costs it nothing. When a sound or faulty round it sat
in is decided against its own replay, it appeals for the other outcome if the appeal bond is within its
``appeal_budget`` (:mod:`ovig_node.nodes.appealing`; by default up to 30 smallest challenger bonds a dispute). It
withdraws what its seats and appeals earn. Each seat is served on its own (:mod:`ovig_node.nodes.isolation`): a
dispute whose files make anything raise is logged once and retried or left alone, and later seats are still served.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from eth_abi import encode
from eth_utils import keccak

from ovig_node.chain.contracts import DisputeStatus, Verdict, Vote
from ovig_node.chain.errors import IndexBehind
from ovig_node.chain.reverts import ContractReverted
from ovig_node.deadlines import DeadlinePassed, run_until
from ovig_node.nodes.appealing import DEFAULT_APPEAL_BUDGET, AppealBudget, appeal_round, gas_reserve
from ovig_node.nodes.context import REPLAY_PROFILES, NodeContext
from ovig_node.nodes.fetching import (
    FetchedTask,
    OwnerFileUnavailable,
    TaskRefused,
    TaskSources,
    task_sources,
)
from ovig_node.nodes.judging import (
    Evidence,
    GaveWay,
    Judgement,
    look_for_files,
    opened_interval,
)
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.looping import chain_clock
from ovig_node.nodes.payouts import withdraw_credits
from ovig_node.nodes.replaying import FilesBusy, ReplayingNode, replay_queued
from ovig_node.storage.errors import ContentNotFound, IpfsError

# Seconds before a commit window's end by which a ballot is decided, so its commit lands in time: at most a
# minute, at most a sixth of the window (the devnet's is 30 s).
COMMIT_MARGIN = 60
# One replay worker, and ReplayingNode.FETCH_WORKERS seats whose files are fetched at once, apart from the replays:
# each seat looks for its files from its draw, never queued behind another seat's replay (review 7 of v3, F1: a seat
# queued behind a junk seat's replay began fetching after its fetch window had closed and voted `unavailable` on
# files that were being served).
# A fetch that began later than this share of the fetch window after the draw, and later than FETCH_START_GRACE
# seconds (a pass's poll and the event index's lag) but never later than half the window (review 16 of v3: on a
# window shorter than the grace, a fetch begun after the window had closed counted as a look, and voted
# `unavailable` on files served at once), did not look for the files through the window (this node was busy or
# down): what it did not obtain it answers with an abstention, not `unavailable`.
FETCH_START_SLACK = 0.25
FETCH_START_GRACE = 60.0


def fetch_looked(late_by: float, window: float) -> bool:
    """Whether a seat's fetch that began ``late_by`` seconds after its draw looked for the files through a fetch
    window of ``window`` seconds: what it did not obtain is then `unavailable`; otherwise it abstains."""
    return late_by <= max(window * FETCH_START_SLACK, min(FETCH_START_GRACE, window / 2))


@dataclass(frozen=True)
class Ballot:
    vote: Vote
    reason: str  # why, in a line (the report's reason, or the refusal)
    report: str  # the report's CID ("" when no replay ran)


@dataclass
class AuditorNode(ReplayingNode):
    JOURNAL = "auditor.json"
    ctx: NodeContext
    profile_name: str = REPLAY_PROFILES
    keeper: Keeper | None = None
    poll_seconds: float = 1.0
    appeal_budget: AppealBudget = DEFAULT_APPEAL_BUDGET  # the largest appeal bond it puts up
    _fetched: dict[int, FetchedTask] = field(default_factory=dict)
    _params: dict[str, int] = field(default_factory=dict)
    # Decided rounds it will not appeal (agreed, appealed, over budget, or no longer appealable): each is
    # looked at once, not on every pass.
    _appeal_done: set[str] = field(default_factory=set)
    _prefetched: set[int] = field(default_factory=set)  # disputes whose task's files it holds, or that ended
    _warned_stake: bool = False
    # Seat key -> its work: the fetch of its files, then (a future it returns) the replay.
    _replays: dict[str, Future[Any]] = field(default_factory=dict)
    _dropped: set[str] = field(default_factory=set)  # seats whose run is over: their fetch queues no replay
    _prefetching: dict[int, Future[FetchedTask]] = field(default_factory=dict)  # dispute -> its task's prefetch
    _locks: dict[int, threading.Lock] = field(default_factory=dict)  # task -> held while its files are fetched
    _queued: int = 0  # replays submitted to the replay worker and not started yet
    _queue_lock: threading.Lock = field(default_factory=threading.Lock)

    @functools.cached_property
    def _fetcher(self) -> ThreadPoolExecutor:
        """Prefetches, apart from the seats' work: a slow task's files never hold a seat's replay back."""
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-prefetch")

    def missed(self, since: int, now: int) -> list[str]:
        """Seats whose commit or reveal window closed in the chain times (since, now] with its ballot not
        committed, or not revealed (said after an outage: a silent seat loses ``penalty`` unless excused)."""
        lines = []
        committee = self.ctx.protocol.committee
        for event in self.ctx.scanner.events("PanelDrawn"):
            if self.ctx.address not in event.args["panel"]:
                continue
            dispute, run = int(event.args["dispute"]), int(event.args["run"])
            commit_end, reveal_end = int(event.args["commitEnd"]), int(event.args["revealEnd"])
            if not (since < commit_end <= now or since < reveal_end <= now):
                continue
            seat = self.ctx.protocol.view(committee, "ballotOf", dispute, self.ctx.address)
            if int(seat.run) != run:
                continue
            if seat.commitment == b"\x00" * 32 and since < commit_end <= now:
                lines.append(
                    f"dispute {dispute} run {run}: its commit window closed at {chain_clock(commit_end)} "
                    "with no ballot committed"
                )
            elif seat.commitment != b"\x00" * 32 and seat.vote == 0 and since < reveal_end <= now:
                lines.append(
                    f"dispute {dispute} run {run}: its reveal window closed at {chain_clock(reveal_end)} "
                    "with its ballot unrevealed"
                )
        return lines

    def step(self) -> None:
        # Registration and top-ups on their own, after the seats: a top-up that fails (a balance someone nudged
        # to just short of the gas) must never keep the node from committing and revealing (a sixth review).
        registered = bool(
            self.ctx.protocol.view(self.ctx.protocol.committee, "getAuditor", self.ctx.address).registeredBlock
        )
        if not registered:
            self._register()
        self.ctx.scanner.poll()
        for event in self.ctx.scanner.events("PanelDrawn"):
            dispute, run = int(event.args["dispute"]), int(event.args["run"])
            key = f"dispute {dispute} run {run}"
            if self.ctx.address not in event.args["panel"]:
                continue
            if self.isolation.ready(key):
                self.isolation.call(key, functools.partial(self._serve, dispute, run))
            elif self._due(int(event.args["commitEnd"])):
                # backing off a failure, but its commit deadline has come: it makes sure of a committed ballot (an
                # abstention at least) and, in the reveal window, reveals it
                self.isolation.call(f"{key} at its deadline", functools.partial(self._serve, dispute, run))
        for event in self.ctx.scanner.events("DisputeOpened"):
            # The disputed task's files before any panel is drawn (after the seats, which have deadlines; in the
            # background): a drawn auditor's commit window goes to replaying, not to fetching hundreds of MB
            dispute, task = int(event.args["dispute"]), int(event.args["task"])
            if dispute in self._prefetched or not self.isolation.ready(f"task {task} files"):
                continue
            if task in self._fetched or self._resolved(dispute):
                self._prefetched.add(dispute)
            else:
                self.isolation.call(f"task {task} files", functools.partial(self._prefetch, task, dispute))
        for event in self.ctx.scanner.events("RoundDecided"):
            if int(event.args["appealUntil"]):  # an unavailable round before the last arms the next by itself
                self._maybe_appeal(int(event.args["dispute"]), int(event.args["round"]), int(event.args["outcome"]))
        self._let_go()
        busy = any(not f.done() for f in [*self._replays.values(), *self._prefetching.values()])
        self.isolation.call("ipfs sweep", functools.partial(self.sweep, busy))
        if registered and self.isolation.ready("stake"):
            self.isolation.call("stake", self._register)
        withdraw_credits(self.ctx, self.state, ("TrainingTasks", "AuditCommittee"))

    # --- stake ---------------------------------------------------------------------------------

    def _register(self) -> None:
        committee = self.ctx.protocol.committee
        me = self.ctx.protocol.view(committee, "getAuditor", self.ctx.address)
        target = self._param("AUDITOR_STAKE")
        if me.registeredBlock == 0:
            self.ctx.client.transact(
                f"register:{self.state.get('exits', 0)}", committee.functions.register(), value=target
            )
            self.ctx.say(f"registered as an auditor with a stake of {target / 1e18:g} ETH")
            return
        if me.exitRequestedAt or me.stake >= target:
            return
        # A penalty took some of it: back to (L + 2) x penalty, so the next one leaves it eligible.
        missing = target - int(me.stake)
        balance = self.ctx.client.retry(lambda: self.ctx.client.w3.eth.get_balance(self.ctx.address))
        if balance <= missing + gas_reserve(self.ctx):  # the top-up's own gas and the next ballots'
            if not self._warned_stake:
                eligible = int(me.stake) >= self._param("ELIGIBLE_STAKE")
                self.ctx.say(
                    f"cannot top the stake up: it needs {missing / 1e18:g} ETH, the account holds "
                    f"{balance / 1e18:g} ETH; "
                    + ("still eligible" if eligible else "NOT ELIGIBLE for new panels until it is topped up"),
                    style="bold red",
                )
                self._warned_stake = True
            return
        self._warned_stake = False
        stake = int(me.stake)
        # One top-up per penalty taken: a key of the stake alone would repeat after a second penalty to the same
        # stake, and the journal would take that top-up as sent already.
        penalties = len(self.ctx.scanner.events("Penalized", panelist=self.ctx.address))
        key = f"topUp:{me.registeredBlock}:{penalties}:{stake}"
        self.ctx.client.transact(key, committee.functions.topUp(), value=missing)
        self.ctx.say(f"topped the stake up from {stake / 1e18:g} to {target / 1e18:g} ETH")

    # --- seats ---------------------------------------------------------------------------------

    def _serve(self, dispute: int, run: int) -> None:
        d = self.ctx.protocol.dispute(dispute)
        key = f"{dispute}:{run}"
        if d.status != DisputeStatus.VOTING or d.run != run:
            # The run is over (resolved, moot, or its ballot no longer wanted): its replay, if any, is dropped
            # (cancelled if it never started; one running finishes unheard).
            if (stale := self._replays.pop(key, None)) is not None:
                stale.cancel()
                self._dropped.add(key)
                stale.add_done_callback(lambda _: self._dropped.discard(key))  # looked at no more once it ends
            return
        votes = self.state.get("votes", {})
        commit_end = int(d.drawnAt) + self._param("COMMIT_WINDOW")
        reveal_end = commit_end + self._param("REVEAL_WINDOW")
        now = self.ctx.now()
        committee = self.ctx.protocol.committee
        if now < commit_end:
            if self._interested(int(d.task)):
                # The contract refuses a commit from a panelist with a stake in the task: what it committed before
                # (its abstention, or its verdict) stands and is revealed (a committed ballot always is: withholding
                # one loses).
                self._recuse(dispute, key, committed=key in votes)
                return
            if key not in votes:
                # A provisional abstention, committed at once and replaced by its verdict when it has one: a
                # verdict that comes in the window's last seconds, when an attacker may fill the blocks, never
                # leaves the seat silent. Salt and ballot are on disk before a commit leaves: a restart reveals.
                votes[key] = self._entry(Ballot(Vote.ABSTAIN, "no verdict yet", ""), provisional=True)
                self.state.set("votes", votes)
            self._commit(dispute, run, key, votes[key])
            if votes[key].get("provisional"):
                ballot = self._verdict(key, dispute, d)
                if ballot is None:
                    return  # its replay is still running: the next pass looks again
                previous = votes[key]
                if ballot.vote == Vote.ABSTAIN:  # the committed abstention stands, now with its reason
                    votes[key] = {**previous, "reason": ballot.reason, "provisional": False}
                else:
                    replaced = [*previous.get("replaced", []), {"vote": previous["vote"], "salt": previous["salt"]}]
                    votes[key] = {**self._entry(ballot, provisional=False), "replaced": replaced}
                self.state.set("votes", votes)
                self._commit(dispute, run, key, votes[key])
            return
        seat = self.ctx.protocol.view(committee, "ballotOf", dispute, self.ctx.address)
        mine = votes.get(key)
        if mine is None or seat.commitment == b"\x00" * 32 or seat.vote != 0 or now >= reveal_end:
            return
        # The ballot the chain holds: its verdict, or the abstention a replacement did not get in before the window
        # closed.
        held = next(
            (
                b
                for b in (mine, *mine.get("replaced", []))
                if self._commitment(dispute, run, b) == bytes(seat.commitment)
            ),
            None,
        )
        if held is None:
            self.ctx.say(f"dispute {dispute}: its committed ballot is none it kept: it cannot reveal", style="bold red")
            return
        try:
            self.ctx.client.transact(
                f"vote-reveal:{key}", committee.functions.revealVote(dispute, held["vote"], bytes.fromhex(held["salt"]))
            )
            reason = mine.get("reason", "") if held is mine else "its verdict's commit came too late"
            self.ctx.say(f"dispute {dispute}: revealed its ballot: {Vote(held['vote']).name.lower()} ({reason})")
        except ContractReverted as exc:
            self.ctx.say(f"dispute {dispute}: ballot refused: {exc}", style="yellow")

    def _recuse(self, dispute: int, key: str, *, committed: bool) -> None:
        """Says once that it commits no ballot on a task it has taken a stake in (its watcher challenged it)."""
        if key in self.state.get("recused", []):
            return
        self.state.set("recused", [*self.state.get("recused", []), key])
        then = "it reveals the ballot it committed" if committed else "its silent seat costs it nothing"
        self.ctx.say(
            f"dispute {dispute}: it challenged the task since it was drawn: no ballot now; {then}", style="yellow"
        )

    def _verdict(self, key: str, dispute: int, d: Any) -> Ballot | None:
        """Its ballot (None while its replay runs); at its deadline an abstention, whatever failed."""
        try:
            return self._decide(key, dispute, d)
        except Exception as exc:  # no verdict: at its deadline an abstention, never silence
            if not self._due(int(d.drawnAt) + self._param("COMMIT_WINDOW")):
                raise
            reason = f"no verdict by the commit deadline: {type(exc).__name__}: {exc}"
            self.ctx.say(f"dispute {dispute}: {reason}; its ballot: abstain", style="yellow")
            return Ballot(Vote.ABSTAIN, reason, "")

    @staticmethod
    def _entry(ballot: Ballot, *, provisional: bool) -> dict[str, Any]:
        return {
            "vote": int(ballot.vote),
            "salt": os.urandom(32).hex(),
            "report": ballot.report,
            "reason": ballot.reason,
            "provisional": provisional,
        }

    def _commitment(self, dispute: int, run: int, entry: dict[str, Any]) -> bytes:
        salt = bytes.fromhex(entry["salt"])
        return keccak(
            encode(
                ["uint256", "uint256", "uint8", "bytes32", "address"],
                [dispute, run, entry["vote"], salt, self.ctx.address],
            )
        )

    def _commit(self, dispute: int, run: int, key: str, entry: dict[str, Any]) -> None:
        """Commit ``entry`` unless the chain holds it already (a replacement is allowed until the window ends)."""
        commitment = self._commitment(dispute, run, entry)
        seat = self.ctx.protocol.view(self.ctx.protocol.committee, "ballotOf", dispute, self.ctx.address)
        if bytes(seat.commitment) == commitment:
            return
        n = len(entry.get("replaced", []))
        try:
            self.ctx.client.transact(
                f"vote-commit:{key}:{n}", self.ctx.protocol.committee.functions.commitVote(dispute, commitment)
            )
        except ContractReverted as exc:
            self.ctx.say(f"dispute {dispute}: ballot refused: {exc}", style="yellow")
            return
        what = (
            "a provisional abstention"
            if entry.get("provisional")
            else f"its ballot ({Vote(entry['vote']).name.lower()})"
        )
        self.ctx.say(f"dispute {dispute}: committed {what}" + (", replacing its abstention" if n else ""))

    def _decide(self, key: str, dispute: int, d: Any) -> Ballot | None:
        """Its ballot from its own judgement of the interval: availability and the replay together, whatever
        reason the challenger gave (one question per interval); None while its work for the seat runs. Everything
        that touches IPFS (the owner's files, the evidence) runs in a fetch worker from the draw on, and the replay
        on the replay worker, each with the seat's deadline, so a file served slowly never holds the node's loop
        (commits, reveals, top-ups) and no seat's fetch waits for another seat's replay."""
        task, k = int(d.task), int(self.ctx.protocol.view(self.ctx.protocol.tasks, "getDispute", dispute).k)
        work = self._replays.get(key)
        late = self._due(int(d.drawnAt) + self._param("COMMIT_WINDOW"))
        if work is None and late:
            return self._ballot(task, k, Vote.ABSTAIN, "no time left to replay before the commit deadline")
        if work is None:
            sources = task_sources(self.ctx, task)
            self.ctx.scanner.poll()
            opened = opened_interval(self.ctx, task, k, int(sources.record.terms.intervalsPerBatch))
            if opened is None:  # a dispute exists only over an opened interval: the index is behind, try again
                raise IndexBehind(f"dispute over task {task} interval {k}: its IntervalOpened is not indexed yet")
            # Chain times to this machine's clock: the draw, the fetch window's end (the same for every node), and
            # the seat's deadline.
            now, clock = self.ctx.now(), time.monotonic()
            drawn = clock - max(0, now - int(d.drawnAt))
            fetch_until = int(d.drawnAt) + self._param("COMMIT_WINDOW") // 2
            due = clock + max(0, int(d.drawnAt) + self._param("COMMIT_WINDOW") - self._commit_margin() - now)
            seat = functools.partial(
                self._seat_work, key, sources, opened, drawn, clock + max(0, fetch_until - now), due
            )
            work = self._replays[key] = self._fetches.submit(run_until, due, seat)
        work = self._replays[key] = replay_queued(work)
        if not work.done():
            if not late:
                return None
            del self._replays[key]
            work.cancel()  # if it never started; one running stops at its own deadline, unheard
            return self._ballot(task, k, Vote.ABSTAIN, "its replay did not finish by the commit deadline")
        # Dropped before its result is read: what the work raised (our own IPFS down a moment, say) the seat's
        # isolation logs, and the next pass starts the seat's work again (it abstains when due).
        del self._replays[key]
        outcome = work.result()
        if isinstance(outcome, Ballot):
            return self._ballot(task, k, outcome.vote, outcome.reason)
        if outcome.shared:  # unpinned once the task's disputes are over (_let_go)
            shared = self.state.get("shared", {})
            shared[str(task)] = sorted({*shared.get(str(task), []), *outcome.shared})
            self.state.set("shared", shared)
        reason = str(outcome.report.get("reason"))
        if outcome.indeterminate:  # another honest replay may pass it: no side to take (protocol 5, the near-tie band)
            return self._ballot(task, k, Vote.ABSTAIN, f"{reason} within the near-tie band", outcome)
        vote = Vote.UNAVAILABLE if not outcome.obtained else Vote.FAULTY if outcome.faulty else Vote.SOUND
        return self._ballot(task, k, vote, f"{outcome.report['verdict']}: {reason}", outcome)

    def _seat_work(
        self, key: str, sources: TaskSources, opened: Any, drawn: float, fetch_until: float, due: float
    ) -> Ballot | Judgement | Future[Ballot | Judgement]:
        """In a fetch worker, from the draw (``drawn``, this machine's clock): the task's files and the interval's
        evidence, looked for again until the fetch window closes (``fetch_until``); then the replay, queued on the
        replay worker until the seat's deadline ``due`` (the future it returns). Files not obtained by then are
        ``unavailable``, but only when this fetch began early in the window (FETCH_START_SLACK, FETCH_START_GRACE):
        one that began later (this node busy or down) claims nothing and abstains."""
        late_by = time.monotonic() - drawn
        looked = fetch_looked(late_by, fetch_until - drawn)

        def not_obtained(reason: str) -> Ballot:
            if looked:
                return Ballot(Vote.UNAVAILABLE, reason, "")
            why = f"{reason}; its fetch began {late_by:.0f} s after the draw (this node was busy or down)"
            return Ballot(Vote.ABSTAIN, why, "")

        task_files = functools.partial(self._task_files, sources)
        try:
            looking = look_for_files(
                self.ctx,
                task_files,
                opened,
                fetch_by=fetch_until,
                looked=looked,
                who="audit",
                profile=self.profile_name,
            )
        except OwnerFileUnavailable as exc:
            return not_obtained(str(exc))
        except TaskRefused as exc:  # the deterministic acceptability check every node and the trainer run
            return Ballot(Vote.FAULTY, str(exc), "")
        except MemoryError:  # no verdict on this machine: like a replay that did not finish, never a refusal
            return Ballot(Vote.ABSTAIN, "the task's files do not fit this machine's memory", "")
        except FilesBusy as exc:  # its own prefetch was slow: this node was busy, nothing was withheld
            return Ballot(Vote.ABSTAIN, str(exc), "")
        if isinstance(looking, str):
            return not_obtained(looking)
        assert not isinstance(looking, GaveWay), "a seat's look never gives way (it has a fetch worker of its own)"
        evidence, judge = looking
        if evidence.problem is not None:  # settled without a replay (not obtained, or its opening not sound)
            return judge()
        if key in self._dropped:  # its run ended while it fetched: no replay for nobody
            shutil.rmtree(evidence.folder, ignore_errors=True)
            return Ballot(Vote.ABSTAIN, "its run is over", "")
        replay = functools.partial(self._replay, judge, evidence, due, int(sources.record.terms.replaySeconds))
        with self._queue_lock:
            self._queued += 1
        queued = self._pool.submit(replay)
        queued.add_done_callback(self._unqueue_if_cancelled)
        return queued

    def _replay(
        self, judge: Callable[[], Judgement], evidence: Evidence, due: float, replay_seconds: int
    ) -> Ballot | Judgement:
        """On the replay worker, when the seat's turn comes: the replay, stopped at twice the declared replay time
        from its start or at the seat's deadline, whichever is sooner (a junk task's endless interval holds the one
        worker no longer than that; review 8 of v3: a cap counted from the fetch window's end let one junk seat
        hold the worker for hours). With less than the declared time left and another seat's replay waiting, none
        at all: the worker goes to a seat that can still finish. Alone, it tries: the declared time is the
        slowest honest replay, and a slow fetch on a loaded machine must not cost a seat that would finish."""
        started = time.monotonic()
        with self._queue_lock:
            self._queued -= 1
            others = self._queued
        if due - started < replay_seconds and others:
            shutil.rmtree(evidence.folder, ignore_errors=True)
            return Ballot(
                Vote.ABSTAIN,
                f"less than the declared replay time left before the commit deadline, and {others} other seat(s) "
                "waiting for the replay worker",
                "",
            )
        return run_until(min(due, started + 2 * replay_seconds), judge)

    def _unqueue_if_cancelled(self, future: Future[Any]) -> None:
        """A replay cancelled before it started never counts itself out of the queue (:meth:`_replay` does)."""
        if future.cancelled():
            with self._queue_lock:
                self._queued -= 1

    def _due(self, commit_end: int) -> bool:
        """Whether a seat whose commit window ends at ``commit_end`` must have its ballot now."""
        return self.ctx.now() >= commit_end - self._commit_margin()

    def _commit_margin(self) -> int:
        """Seconds before a commit window's end by which a seat's ballot is decided (time to send the commit)."""
        return min(COMMIT_MARGIN, self._param("COMMIT_WINDOW") // 6)

    def _ballot(self, task: int, k: int, vote: Vote, reason: str, judgement: Judgement | None = None) -> Ballot:
        self.ctx.say(f"dispute over task {task} interval {k}: {reason}; its ballot: {vote.name.lower()}")
        return Ballot(vote, reason, judgement.report_cid if judgement is not None else "")

    def _prefetch(self, task: int, dispute: int) -> None:
        """The task's files ahead of any draw, in the background (its own worker, for at most a commit window): a
        task no node can load is judged (and voted on) when drawn, and a slow one holds nothing up."""
        if dispute in self._prefetching:
            future = self._prefetching[dispute]
            if not future.done():
                return
            del self._prefetching[dispute]
            self._prefetched.add(dispute)
            try:
                future.result()
            except (TaskRefused, ContentNotFound, DeadlinePassed) as exc:
                self.ctx.say(f"task {task}'s files: {exc} (judged when a panel is drawn)", style="yellow")
            return
        sources = task_sources(self.ctx, task)
        work = functools.partial(self._task_files, sources)
        deadline = time.monotonic() + self._param("COMMIT_WINDOW")
        self._prefetching[dispute] = self._fetcher.submit(run_until, deadline, work)

    def _let_go(self) -> None:
        """Delete the files of tasks whose every dispute has resolved, and unpin the evidence it re-shared for them
        (a provider's junk must not fill the disk)."""
        shared: dict[str, list[str]] = self.state.get("shared", {})
        for task in {*self._fetched, *map(int, shared)}:
            if not self.ctx.scanner.events("DisputeOpened", task=task) or not self._disputes_over(task):
                continue
            self._drop_task_files(task)
            for cid in shared.pop(str(task), []):
                with contextlib.suppress(IpfsError):  # already unpinned, or another pin of it: nothing to keep
                    self.ctx.ipfs.unpin(cid)
            self.state.set("shared", shared)

    def _interested(self, task: int) -> bool:
        tasks = self.ctx.protocol.tasks
        return bool(tasks.functions.isInterested(task, self.ctx.address, int(self.ctx.head()["number"])).call())

    # --- appeals -------------------------------------------------------------------------------

    def _maybe_appeal(self, dispute: int, round_: int, outcome: int) -> None:
        """Appeal a sound or faulty round its own replay contradicts while the appeal window is open: tried on each
        pass until settled (review 19 of v3: one refused send had let a captured round stand)."""
        key = f"{dispute}:{round_}"
        if key in self._appeal_done:
            return
        mine = [v["vote"] for k, v in self.state.get("votes", {}).items() if k.split(":")[0] == str(dispute)]
        contradicts = {Verdict.VALID: Vote.FAULTY, Verdict.FAULTY: Vote.SOUND}.get(Verdict(outcome))
        if not mine or mine[-1] != contradicts:  # no ballot of its own on it, agreed, or unavailable to it
            self._appeal_done.add(key)
            return
        call = functools.partial(
            appeal_round, self.ctx, self.state, dispute, round_, self.appeal_budget, "contradicts its replay"
        )
        if self.isolation.call(f"appeal {key}", call):
            self._appeal_done.add(key)

    def _param(self, name: str) -> int:
        if name not in self._params:
            self._params[name] = int(getattr(self.ctx.protocol.committee.functions, name)().call())
        return self._params[name]
