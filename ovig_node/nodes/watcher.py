"""The watcher node: replay every opened interval and challenge the ones outside the boundary.

Given the owner's reference run of a task (its statistics of every step), it first screens each opened batch
(layer one, :mod:`ovig_node.nodes.screening`): intervals the sample left unopened whose claimed statistics
jump away from the reference are requested (``requestOpening``), and judged like sampled ones once opened.

It follows BatchOpened and RequestOpened events (all tasks, or those given), judges each opened interval once (the
verdict and report CID are persisted), and challenges a faulty one with commit-reveal (and appeals a round that
finds it sound, within ``appeal_budget``: :mod:`ovig_node.nodes.appealing`): the salt is
persisted before the commit is sent, so a restarted watcher still reveals. A faulty interval is
challenged even when someone else disputes it already: the reveal joins that dispute, and the earliest
commit leads it. Intervals found sound are final and skipped. Its keeper duties keep every clock moving
(claiming joined bonds back among them); it withdraws its credits.

Every interval it judges sound it attests (protocol 8.4, :mod:`ovig_node.nodes.attesting`): a signed
claim, pinned and announced on-chain, that the owner's dashboard counts as coverage. Given partners to
trust (``trusted``), it splits the work with them: it replays the intervals fewest of them attested first,
``workers`` at a time, and skips those they covered. Anyone else's attestations count for nothing here: an
address is free, so a provider could attest its own fakes.

Each task, interval and challenge is handled on its own (:mod:`ovig_node.nodes.isolation`): one whose
files make anything raise is logged once and retried or left alone, and the others go on.

`ovig watcher` refuses a registered auditor's account: a challenge makes its account interested in the whole task,
and an interested auditor is never drawn for it (review 25 of v3).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_abi import encode
from eth_utils import keccak
from web3.logs import DISCARD

from ovig_node.chain.contracts import CommitStatus, Reason, TaskStatus, Verdict
from ovig_node.chain.errors import ChainError, IndexBehind, StateBehind
from ovig_node.chain.reverts import ContractReverted
from ovig_node.deadlines import DeadlinePassed, run_until
from ovig_node.nodes.appealing import DEFAULT_APPEAL_BUDGET, AppealBudget, appeal_round, gas_reserve
from ovig_node.nodes.attesting import attestations, judged_by, publish
from ovig_node.nodes.context import DISK_BUDGET_GIB, REPLAY_PROFILES, NodeContext
from ovig_node.nodes.fetching import FetchedTask, TaskRefused, TaskSources, task_sources
from ovig_node.nodes.judging import (
    FETCH_RETRY_SECONDS,
    NOT_OBTAINED,
    Evidence,
    GaveWay,
    Judgement,
    Opened,
    committed_manifest,
    look_for_files,
    not_obtained,
    opened_interval,
    verdict_of,
)
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.looping import chain_clock
from ovig_node.nodes.payouts import withdraw_credits
from ovig_node.nodes.replaying import FilesBusy, ReplayingNode, replay_queued
from ovig_node.nodes.screening import Checked, manifest_stats, screen_batch
from ovig_node.protocol.attestation import AttestedVerdict, profile_text
from ovig_node.protocol.spec import training_hash
from ovig_node.storage.errors import IpfsUnavailable
from ovig_node.training.execution import host_cpu
from ovig_node.verify.layout import layout_of
from ovig_node.verify.report import closest_to_limit
from ovig_node.verify.statistics_judge import THRESHOLD, Reference

# Seconds a commit needs to land: one closer to its interval's window end is not sent (it could not be revealed).
COMMIT_MARGIN = 15
# A judgement's files (the owner's and the interval's) are looked for until its interval's window end, less two
# commit margins (its verdict's commit must land) and twice the task's declared replay time (its replay's cap);
# files still not in then are not obtained, and challenged as unavailable, but only after a look of at least
# MIN_LOOK seconds: a watcher that came late (down, or busy) claims nothing about files it barely looked for.
# They are due sooner, by the serving deadline (twice the declared replay time for each interval the watcher has still
# to judge, before the cutoff): files in after it whose replay then cannot finish are not obtained either (protocol 5),
# allowing their bytes the time they take at FETCH_RATE_FLOOR (a large file served at once still takes its download).
FETCH_RATE_FLOOR = 5e6  # bytes a second
MIN_LOOK = 30.0
# Judgements fetch in ReplayingNode.FETCH_WORKERS workers beside the replays (a watcher with no partners): files
# served slowly, or withheld, hold a fetch worker until their fetch deadline, never the replay worker. A provider
# would need that many withheld intervals open at once (each then challenged as unavailable: its task slashed) to
# make another interval's judgement wait for a worker; more at once would also mean as many downloads on its disk.
# Layer one's batch manifests are fetched in workers of their own: never in a judgement's way (the eleventh review).
SCREEN_WORKERS = 2
LET_GO_SECONDS = 60.0  # how often it looks for ended tasks whose files it can delete


def over_budget(used: dict[int, tuple[int, float]], budget: int) -> list[int]:
    """The tasks whose files go, least recently used first, until the rest fit ``budget`` (``used``: each task's bytes
    on disk and when it was last used, of the tasks whose files may go)."""
    total, gone = sum(size for size, _ in used.values()), []
    for task in sorted(used, key=lambda t: (used[t][1], t)):
        if total <= budget:
            break
        total -= used[task][0]
        gone.append(task)
    return gone


LIVE_TASK = (TaskStatus.ACCEPTED, TaskStatus.COMMITTED)  # a task whose intervals can still be challenged


@dataclass
class WatcherNode(ReplayingNode):
    JOURNAL = "watcher.json"
    ctx: NodeContext
    profile_name: str = REPLAY_PROFILES
    only_tasks: frozenset[int] | None = None
    keeper: Keeper | None = None
    poll_seconds: float = 1.0
    workers: int = 1  # intervals replayed in parallel
    # The owners' reference runs by training hash (hex): tasks that train the same are screened by layer one.
    references: dict[str, Reference] = field(default_factory=dict)
    threshold: float = THRESHOLD  # layer one's score above which an unopened interval is requested
    attest: bool = True  # publish an attestation of every interval judged sound
    trusted: frozenset[str] = frozenset()  # partners whose attestations of an interval cover it (checksummed)
    enough: int = 1  # how many trusted partners' attestations cover an interval
    appeal_budget: AppealBudget = DEFAULT_APPEAL_BUDGET  # the largest appeal bond it puts up
    # The largest challenger bond it puts up (wei; None: any): a task asking more is judged and attested, never
    # challenged nor requested (review 16 of v3: every loss a watcher concedes, a bait, a junk dispute, is the size
    # of the bond the owner chose)
    max_bond: int | None = None
    _appeal_done: set[str] = field(default_factory=set)  # decided rounds looked at ("dispute:round")
    _appeals_due: dict[str, str] = field(default_factory=dict)  # rounds to appeal, not settled yet: why
    _fetched: dict[int, FetchedTask] = field(default_factory=dict)
    _locks: dict[int, threading.Lock] = field(default_factory=dict)  # task -> held while its files are fetched
    _per_batch: dict[int, int] = field(default_factory=dict)  # task -> its on-chain intervalsPerBatch
    # "dispute:round" -> its interval judged again for an appeal (its files were not obtained the first time)
    _rechecks: dict[str, Future[Any]] = field(default_factory=dict)
    # (task, j) -> the fetch of batch j's manifest for layer one (checked into ``_checked`` once in)
    _manifests: dict[tuple[int, int], Future[dict[int, dict[str, list[float]]]]] = field(default_factory=dict)
    _checked: Checked = field(default_factory=dict)  # batch manifests' statistics, checked once (layer one)
    _attested: dict[tuple[str, int], Any] = field(default_factory=dict)  # Attested events, verified once each
    _samples: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # (task, j) -> its sample, ascending
    # (task, k) -> its opening and its judgement under way, in the background (``workers`` at once)
    _judging: dict[tuple[int, int], tuple[Opened, Future[Any]]] = field(default_factory=dict)
    _backlog: float = 0.0  # seconds of replay (twice each declared time) it had still to do at its last look
    _declared: dict[int, int] = field(default_factory=dict)  # task -> its declared replay seconds (never change)
    _let_go_at: float = 0.0  # when it next looks for ended tasks whose files can go (time.monotonic())
    disk_budget: int = int(DISK_BUDGET_GIB * 2**30)  # bytes of task files kept beyond those under way (over_budget)
    _used_at: dict[int, float] = field(default_factory=dict)  # when each task's files were last used (monotonic)
    _waiting_end: float = math.inf  # the window end of the next interval due that found no free worker (chain time)
    # (task, k) -> the window end of a judgement taken but not yet begun by a fetch worker (chain time)
    _queued_looks: dict[tuple[int, int], float] = field(default_factory=dict)
    # (task, k) -> when a look that gave way may be taken up again, when it gave way, and when its first look began
    # (time.monotonic())
    _look_again_at: dict[tuple[int, int], float] = field(default_factory=dict)
    _gave_way_at: dict[tuple[int, int], float] = field(default_factory=dict)
    _first_look: dict[tuple[int, int], float] = field(default_factory=dict)
    _owner_files_in: dict[tuple[int, int], float] = field(default_factory=dict)  # and when the task's files were in

    @property
    def replay_workers(self) -> int:
        return self.workers

    @functools.cached_property
    def _screen_fetches(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=SCREEN_WORKERS, thread_name_prefix="watch-screen")

    @property
    def _room(self) -> int:
        """Judgements it may start now: ``workers`` at a time with partners (what it takes on, they leave: it
        takes no more than it replays), else ``workers`` plus one for each fetch worker."""
        return max(0, self.workers + (0 if self.trusted else self.FETCH_WORKERS) - len(self._judging))

    @property
    def judging(self) -> int:
        """Intervals being judged in the background now."""
        return len(self._judging)

    def missed(self, since: int, now: int) -> list[str]:
        """Opened intervals whose challenge window closed in the chain times (since, now] before it judged them
        (said after an outage: a faulty one among them is paid unless another watcher challenged it)."""
        judged = {**self.state.get("judged", {}), **self._still_covered()}
        lines = []
        for event in [*self.ctx.scanner.events("BatchOpened"), *self.ctx.scanner.events("RequestOpened")]:
            task, end = int(event.args["task"]), int(event.args["challengeWindowEnd"])
            if not since < end <= now or (self.only_tasks is not None and task not in self.only_tasks):
                continue
            opened = (
                [int(event.args["k"])]
                if event.name == "RequestOpened"
                else self.ctx.protocol.sampled(task, int(event.args["j"]))
            )
            if unjudged := [k for k in opened if f"{task}:{k}" not in judged]:
                lines.append(
                    f"task {task}: the challenge window of intervals {unjudged} closed at "
                    f"{chain_clock(end)} before it judged them"
                )
        return lines

    def step(self) -> None:
        self.ctx.scanner.poll()
        self._screen()  # first: requests must come while the batch's challenge window is open
        for (task, k, opened), judgement in self._judge(self._due()):
            if self._record(task, k, opened, judgement):
                self._drive_challenges()  # at once: the challenge window is running
            self._drive_attestations()  # at once too: partners pick their next interval by them
        self._drive_challenges()
        self._drive_attestations()
        self._drive_appeals()
        withdraw_credits(self.ctx, self.state)
        busy = bool(self._judging) or any(not f.done() for f in [*self._rechecks.values(), *self._manifests.values()])
        self.isolation.call("let go of ended tasks", self._let_go)
        self.isolation.call("ipfs sweep", functools.partial(self.sweep, busy))

    def _let_go(self) -> None:
        """Delete the files of tasks that have ended (the owner's, and any evidence left), once nothing of theirs is
        under way and their disputes have resolved; looked for every LET_GO_SECONDS (review 16 of v3: a sybil's
        junk tasks, each with gigabytes of owner files, filled the disk, and a full disk silenced the watcher). Then,
        over ``disk_budget``, those of live tasks with nothing under way, least recently used first: junk tasks kept
        live hold no disk (review 17 of v3), and a task whose files went fetches them again when it is judged."""
        if time.monotonic() < self._let_go_at or self._rechecks:
            return
        self._let_go_at = time.monotonic() + LET_GO_SECONDS
        busy = {task for task, _ in [*self._judging, *self._manifests]}
        idle: dict[int, tuple[int, float]] = {}
        for folder in self.ctx.home.glob("task-*"):
            task = int(folder.name.removeprefix("task-")) if folder.name.removeprefix("task-").isdigit() else None
            if task is None or task in busy:
                continue
            if self._live(task) or not self._disputes_over(task):
                idle[task] = (_bytes_in(folder), self._used_at.get(task, 0.0))
                continue
            self._forget_files(task)
        for task in over_budget(idle, self.disk_budget):
            self._forget_files(task)
            self.ctx.say(
                f"task {task}: its files deleted to keep the disk budget ({self.disk_budget / 2**30:g} GiB); "
                "fetched again when one of its intervals is judged"
            )

    def _forget_files(self, task: int) -> None:
        self._drop_task_files(task)
        self._used_at.pop(task, None)
        for per_look in (self._look_again_at, self._first_look, self._gave_way_at, self._owner_files_in):
            for key in [key for key in per_look if key[0] == task]:
                del per_look[key]

    # --- layer one ---------------------------------------------------------------------------

    def _screen(self) -> None:
        """Screen every opened batch of a task this watcher has the reference of, once."""
        if not self.references:
            return
        screened = self.state.get("screened", {})
        for event in self.ctx.scanner.events("BatchOpened"):
            task, j = int(event.args["task"]), int(event.args["j"])
            if f"{task}:{j}" in screened or (self.only_tasks is not None and task not in self.only_tasks):
                continue
            key = f"{_key(task)} batch {j} screening"  # its own: a failure here must not stop judging the task
            if not self.isolation.ready(_key(task)) or not self.isolation.ready(key) or not self._live(task):
                continue
            # Screened once a judgement fetched the task's files: the loop itself never downloads (a hostile
            # owner's files served slowly would hold every commit, reveal and appeal back).
            fetched = self._fetched.get(task)
            reference = None if fetched is None else self.references.get(training_hash(fetched.prepared.spec).hex())
            if fetched is None or reference is None or not self._manifests_in(fetched, j, event):
                continue
            call = functools.partial(
                screen_batch,
                self.ctx,
                fetched,
                j,
                reference,
                threshold=self.threshold,
                checked=self._checked,
                max_bond=self.max_bond,
                keep=functools.partial(self._request_keep, task),
            )
            if (screening := self.isolation.call(key, call)) is not None:
                screened[f"{task}:{j}"] = {
                    "requested": screening.requested,
                    "closed": screening.closed,
                    "scores": {str(k): v for k, v in screening.scores.items()},
                }
                self.state.set("screened", screened)

    def _manifests_in(self, fetched: FetchedTask, j: int, opened: Any) -> bool:
        """Whether the batch manifests of batches 0..j (layer one's scores and their baseline) are fetched and
        checked; those that are not are fetched in a fetch worker, until batch j's window end (one not in then
        leaves its rows unscored)."""
        task, now, clock = fetched.task, self.ctx.now(), time.monotonic()
        until = clock + max(0, int(opened.args["challengeWindowEnd"]) - now)
        for i in range(j + 1):
            if (task, i) in self._checked:
                continue
            future = self._manifests.get((task, i))
            if future is None:
                named = committed_manifest(self.ctx, task, i)
                work = functools.partial(manifest_stats, self.ctx, fetched, i, named)
                self._manifests[(task, i)] = self._screen_fetches.submit(run_until, until, work)
            elif future.done():
                del self._manifests[(task, i)]
                try:
                    self._checked[(task, i)] = future.result()
                except IpfsUnavailable:
                    pass  # our own node: fetched again on the next pass
                except Exception:  # not in by the window's end, or unreadable: its rows stay unscored
                    self._checked[(task, i)] = {}
        return all((task, i) in self._checked for i in range(j + 1))

    def _intervals_per_batch(self, task: int) -> int:
        """The task's m, from the chain (the owner's files are fetched in judging workers only)."""
        if task not in self._per_batch:
            self._per_batch[task] = int(self.ctx.protocol.task(task).terms.intervalsPerBatch)
        return self._per_batch[task]

    def _live(self, task: int) -> bool:
        return self.ctx.protocol.task(task).status in LIVE_TASK

    def _request_keep(self, task: int) -> int:
        """What an opening request of ``task`` leaves in the account: the gas reserve, its own challenger bond (for
        the challenge the request may lead to) and the bonds of the challenges it has decided on and not yet committed
        that it could pay (review 26 of v3). A bond of a task it has not judged faulty, or one beyond its means, is not
        kept: an owner's junk task of a huge bond would hold every request back (review 28), and funds locked in
        earlier requests are the operator's to budget (docs/operations.md)."""
        client, reserve = self.ctx.client, gas_reserve(self.ctx)
        spare = int(client.retry(lambda: client.w3.eth.get_balance(self.ctx.address))) - client.unmined_spend()
        due = [
            bond
            for key, c in self.state.get("challenges", {}).items()
            if not {"committed_block", "revealed_block", "failed"} & set(c)
            if (t := self.ctx.protocol.task(int(key.split(":")[0]))).status in LIVE_TASK
            if (bond := int(t.terms.challengerBond)) + reserve <= spare
        ]
        return reserve + int(self.ctx.protocol.task(task).terms.challengerBond) + sum(due)

    # --- judging -------------------------------------------------------------------------------

    def _due(self) -> list[tuple[int, int, int, Opened]]:
        """(window end, task, k, opening) of opened intervals (sampled, or requested) neither judged nor being
        judged, whose window is open, the one closing first first; with partners, those fewest of them attested
        first (:meth:`_by_coverage`). :meth:`_judge` takes as many as it has room for."""
        judged = {**self.state.get("judged", {}), **self._still_covered()}
        due: list[tuple[int, int, int, Opened]] = []
        live: dict[int, bool] = {}  # one status read per task per pass, not one per opened batch
        for event in [*self.ctx.scanner.events("BatchOpened"), *self.ctx.scanner.events("RequestOpened")]:
            task = int(event.args["task"])
            if (self.only_tasks is not None and task not in self.only_tasks) or not self.isolation.ready(_key(task)):
                continue
            due.extend(self.isolation.call(_key(task), functools.partial(self._due_in, event, judged, live)) or [])
        # Everything it has still to judge, started or not (with partners too, before the split), at twice each
        # task's own declared replay time: the replay worker's backlog, which a judgement's serving deadline leaves
        # room for when its files come (reviews 13 to 15 of v3)
        pending = [task for _, task, _, _ in due] + [task for task, _ in self._judging]
        self._backlog = float(sum(2 * self._replay_seconds(task) for task in pending))
        if self.trusted:
            return self._by_coverage(due)
        return sorted(due, key=lambda item: item[:3])

    def _still_covered(self) -> dict[str, Any]:
        """The intervals left to partners that are still trusted now (a partner dropped from ``--trust``, or a
        larger ``--enough``, gives its intervals back)."""
        partners = self.trusted - {self.ctx.address}
        return {
            key: c for key, c in self.state.get("covered", {}).items() if len(set(c["by"]) & partners) >= self.enough
        }

    def _by_coverage(self, due: list[tuple[int, int, int, Opened]]) -> list[tuple[int, int, int, Opened]]:
        """The intervals of ``due``, those fewest trusted partners attested first, ties by window end, then this
        watcher's share first (:meth:`_mine`: partners that start together start apart), then a hash of its
        address; the next pass sees what they attested meanwhile. Those ``enough`` partners attested are
        covered: recorded, and never replayed."""
        found: dict[int, Any] = {}
        covered = self.state.get("covered", {})
        partners = self.trusted - {self.ctx.address}
        ranked = []
        for window_end, task, k, opening in due:
            if task not in found:
                found[task] = attestations(self.ctx, task, signers=partners, checked=self._attested)
            by = judged_by(found[task], k, partners)
            if len(by) >= self.enough:
                covered[f"{task}:{k}"] = {"by": sorted(by)}
                self.state.set("covered", covered)
                self.ctx.say(f"task {task} interval {k}: covered by {', '.join(sorted(by))}", style="dim")
                continue
            tiebreak = keccak(encode(["address", "uint256", "uint256"], [self.ctx.address, task, k]))
            ranked.append((len(by), window_end, not self._mine(task, k), tiebreak, task, k, opening))
        # All of them, best first: :meth:`_judge` takes as many as ``workers`` has free, and the next one is what a
        # look whose files are not found gives way to (review 17 of v3: cut to the free ones, nothing ever waited)
        best = sorted(ranked, key=lambda r: r[:4])
        return [(window_end, task, k, opening) for _, window_end, _, _, task, k, opening in best]

    def _mine(self, task: int, k: int) -> bool:
        """Whether k is this watcher's share: the team (itself and its partners, by address) takes a batch's
        sample in turn, in order of k (a requested interval by k itself). Every member computes the same split
        from the chain alone, so partners starting on a batch together start on different intervals."""
        team = sorted(self.trusted | {self.ctx.address})
        sample = self._sample_of(task, k)
        position = sample.index(k) if k in sample else k
        return position % len(team) == team.index(self.ctx.address)

    def _due_in(self, event: Any, judged: dict[str, Any], live: dict[int, bool]) -> list[tuple[int, int, int, Opened]]:
        """(window end, task, k, its opening) of what ``event`` opened (a batch's sample, or one requested
        interval) still to judge."""
        task = int(event.args["task"])
        if task not in live:
            live[task] = self._live(task)
        if not live[task]:
            return []
        due = []
        requested = event.name == "RequestOpened"
        now = self.ctx.now()
        for k in [int(event.args["k"])] if requested else self.ctx.protocol.sampled(task, int(event.args["j"])):
            if (
                f"{task}:{k}" in judged
                or (task, int(k)) in self._judging
                or not self.isolation.ready(_key(task, k))
                or self._look_again_at.get((task, int(k)), 0.0) > time.monotonic()
            ):
                continue  # judged before (no need to read its on-chain state again), under way, or backing off
            iv = self.ctx.protocol.view(self.ctx.protocol.tasks, "getOpenedInterval", task, k)
            end = max(int(event.args["challengeWindowEnd"]), int(iv.windowEnd))  # a no-decision reopens it
            if iv.sound or end - 2 * self._commit_margin() <= now:
                continue  # final, or too late for a verdict to be committed (said after an outage: missed())
            opened = opened_interval(self.ctx, task, int(k), self._intervals_per_batch(task))
            if opened is None:  # BatchOpened is indexed, so each of its IntervalOpened events is too
                raise IndexBehind(f"task {task} interval {k}: its IntervalOpened is not indexed")
            due.append((end, task, int(k), opened))
        return due

    def _judge(self, due: list[tuple[int, int, int, Opened]]) -> Iterator[tuple[tuple[int, int, Opened], Judgement]]:
        """Judgements as they complete. Each runs in the background (``workers`` at once): the task's files and the
        interval's looked for until its fetch deadline (:meth:`_judge_one`), the replay capped at twice the
        declared replay time, all stopped at the interval's window end less two commit margins, when a verdict
        could no longer be committed. The loop goes on committing, revealing, appealing and attesting meanwhile,
        so a provider that serves files a byte at a time (or makes its replay endless) cannot hold the watcher's
        other challenges back, nor one worker past the time a verdict is of use."""
        now, clock = self.ctx.now(), time.monotonic()
        room = self._room
        # A look whose files are still not found gives way to the next interval due that found no free worker, if
        # that one closes sooner (its window end, chain time; infinity: none waits); and to a judgement taken but
        # still queued for a fetch worker (review 17 of v3: the ninth taken of eight workers waited unseen)
        self._waiting_end = due[room][0] if len(due) > room else math.inf
        for end, task, k, opened in due[:room]:
            sources = self.isolation.call(_key(task), functools.partial(task_sources, self.ctx, task))
            if sources is None:
                continue
            decide_by = clock + max(0, end - now - 2 * self._commit_margin())
            give_way = functools.partial(self._give_way, end)
            work = functools.partial(self._judge_one, sources, opened, decide_by, give_way)
            self._queued_looks[(task, k)] = end
            self._judging[(task, k)] = (opened, self._fetches.submit(run_until, decide_by, work))
            self._used_at[task] = time.monotonic()
        for (task, k), (opened, future) in list(self._judging.items()):
            self._judging[(task, k)] = (opened, future := replay_queued(future))
            if not future.done():
                continue
            del self._judging[(task, k)]
            self._queued_looks.pop((task, k), None)
            refused = isinstance(future.exception(), TaskRefused)  # the owner's files: the whole task is left alone
            outcome = self.isolation.call(_key(task) if refused else _key(task, k), future.result)
            if isinstance(outcome, GaveWay):  # taken up again once a worker is free, its look counted from the first
                self._look_again_at[(task, k)] = time.monotonic() + FETCH_RETRY_SECONDS
                self._gave_way_at[(task, k)] = time.monotonic()
                self.ctx.say(f"task {task} interval {k}: gave way to an interval closing sooner ({outcome.why})")
                continue
            for per_look in (self._first_look, self._gave_way_at, self._owner_files_in):
                per_look.pop((task, k), None)  # ended (or failed: after our own outage, a look starts afresh)
            if refused:
                continue
            if isinstance(outcome, str):
                self.ctx.say(f"task {task} interval {k}: not judged: {outcome}", style="yellow")
            elif outcome is not None:
                yield (task, k, opened), outcome

    def _give_way(self, end: int) -> bool:
        """Whether a look for files of an interval whose window ends at ``end`` (chain time), not found yet, ends to
        leave its worker to an interval closing sooner that found none free, or is queued for one."""
        return min([self._waiting_end, *list(self._queued_looks.values())]) < end

    def _judge_one(
        self, sources: TaskSources, opened: Opened, decide_by: float, give_way: Callable[[], bool] | None = None
    ) -> Judgement | str | GaveWay | Future[Judgement | str]:
        """In a fetch worker: the task's files and the interval's evidence, looked for again until the fetch
        deadline (``decide_by`` less twice the declared replay time); then the replay, queued on the replay worker
        (the future it returns), capped at twice the declared time from its start. Files not in by then are not
        obtained (a challenge as unavailable) after a look of at least MIN_LOOK seconds; after a shorter one, no
        verdict (the reason why, a string). The look is counted from when this worker took the judgement up, not
        from when it was queued (the eleventh review: one that waited for a worker was taken for a long look).

        Files are due sooner, by the serving deadline: the cutoff less the replay backlog when they come (twice the
        declared replay time of every interval this watcher has still to judge, every task's). Files in after it,
        and after the time their bytes and the task's own files take at FETCH_RATE_FLOOR, when this watcher had
        been looking for them at least MIN_LOOK seconds before it, whose replay cannot finish by the cutoff are not
        obtained either (:meth:`_replay`); a watcher that began looking later (down, or its backlog too long for
        the window) claims nothing about them.

        While its files are not found, a look gives way (``give_way``) to an interval closing sooner that found no free
        worker, and is taken up again later, its look still counted from its first start (review 16 of v3: looks for
        a junk task's withheld files, opened first, held every worker until a fake opened after them had closed its
        window unjudged)."""
        task, replay_seconds, taken = sources.task, int(sources.record.terms.replaySeconds), time.monotonic()
        key = (task, opened.k)
        self._queued_looks.pop(key, None)
        # A look that gave way keeps the time it looked (review 17 of v3: one given way near its deadline and taken up
        # again as a fresh look could call nothing withheld); each take-up looks for at least MIN_LOOK, if it can
        started = self._first_look.setdefault(key, taken)
        fetch_by = max(decide_by - 2 * replay_seconds, min(decide_by, taken + MIN_LOOK))
        looks = [fetch_by - started >= MIN_LOOK]  # whether the look was long enough to call files withheld

        def task_files(wait: float, by: float) -> FetchedTask:
            fetched = self._task_files(sources, wait, by)
            self._owner_files_in.setdefault(key, time.monotonic())  # when first in, for this look (give-ways too)
            return fetched

        def evidence_looked(fetched: FetchedTask, evidence: Evidence) -> bool:
            # A download cut at the deadline (bytes were arriving) is withheld only if the look was long enough to
            # have downloaded the interval's two evidence files at FETCH_RATE_FLOOR, from when the task's own files
            # were in (review 16 of v3: a look begun late, a restart say, took honest gigabytes still arriving for
            # files withheld). Files not found at all are no download: MIN_LOOK is enough (review 17: the allowance
            # for every look made withholding free on tasks whose windows could not fit it)
            download = 2 * layout_of(fetched.prepared.spec).file_bytes() / FETCH_RATE_FLOOR if evidence.cut else 0.0
            looks.append(fetch_by - max(started, self._owner_files_in.get(key, started)) >= MIN_LOOK + download)
            return looks[-1]

        def unobtained(detail: str) -> Judgement | str:
            if not looks[-1]:
                return f"{detail}, after a look of {fetch_by - started:.0f} s (too short to call them withheld)"
            return not_obtained(self.ctx, task, opened.k, detail)

        try:
            looking = look_for_files(
                self.ctx,
                task_files,
                opened,
                fetch_by=fetch_by,
                looked=evidence_looked if looks[0] else False,
                who="watch",
                profile=self.profile_name,
                give_way=give_way,
            )
        except FilesBusy as exc:  # another judgement's fetch of the task's files was slow: no claim on them
            return str(exc)
        if isinstance(looking, GaveWay):
            return looking
        if isinstance(looking, str):
            return unobtained(looking)
        evidence, judge = looking
        if evidence.problem is not None:  # settled without a replay
            return judge()
        # Files found after a give-way may have come any time after the last look missed them: the benefit of the
        # doubt goes to the provider (the watcher's own gap is never its lateness)
        came = min(time.monotonic(), self._gave_way_at.get(key, math.inf))
        late = None
        # Files in after the serving deadline whose judgement then cannot finish are not obtained (protocol 5)
        serve_by = decide_by - max(self._backlog, 2 * replay_seconds)
        watched = serve_by - started >= MIN_LOOK
        fetching = (_bytes_in(evidence.folder) + _bytes_in(self.ctx.home / f"task-{task}")) / FETCH_RATE_FLOOR
        if watched and came > serve_by + fetching:
            why = f"its files came {came - serve_by:.0f} s after its serving deadline and could not be judged in time"
            late = functools.partial(not_obtained, self.ctx, task, opened.k, why, cause="served_late")
            if decide_by - came < replay_seconds:  # not even the declared replay time left: decided now, not later
                shutil.rmtree(evidence.folder, ignore_errors=True)
                return late()
        return self._pool.submit(self._replay, judge, evidence, decide_by, replay_seconds, late)

    @staticmethod
    def _replay(
        judge: Callable[[], Judgement],
        evidence: Evidence,
        decide_by: float,
        replay_seconds: int,
        late: Callable[[], Judgement | str] | None = None,
    ) -> Judgement | str:
        """On the replay worker, when its turn comes: the replay, stopped at twice the declared replay time from its
        start, or when its verdict could no longer be committed. One whose files came after their serving deadline
        (``late``) and that cannot finish by then is not obtained: a provider that trickles a decoy's files and then
        its fake's, to hold the one replay worker past the fake's cutoff, has the fake challenged as unavailable,
        and its panel replays it (review 12 of v3)."""
        left = decide_by - time.monotonic()
        if left <= 0 or (late is not None and left < replay_seconds):  # late files: less than the declared time left
            shutil.rmtree(evidence.folder, ignore_errors=True)
            if late is not None:
                return late()
            return "its turn on the replay worker came too late for a verdict to be committed"
        stop = min(decide_by, time.monotonic() + 2 * replay_seconds)
        try:
            return run_until(stop, judge)
        except DeadlinePassed:
            if late is None or stop < decide_by:  # stopped at its cap: a replay too long, not files too late
                raise
            return late()

    def _replay_seconds(self, task: int) -> int:
        if task not in self._declared:
            self._declared[task] = int(self.ctx.protocol.task(task).terms.replaySeconds)
        return self._declared[task]

    def _sample_of(self, task: int, k: int) -> list[int]:
        """The sample of k's batch, ascending (a batch's sample never changes once drawn: one read each)."""
        j = k // self._intervals_per_batch(task)
        if (task, j) not in self._samples:
            self._samples[(task, j)] = sorted(self.ctx.protocol.sampled(task, j))
        return self._samples[(task, j)]

    def _record(self, task: int, k: int, opened: Opened, judgement: Judgement) -> bool:
        """Persist the verdict; for a faulty one, persist a challenge to make. True if faulty."""
        key = f"{task}:{k}"
        judged = self.state.get("judged", {})
        judged[key] = {
            "verdict": verdict_of(judgement.report),
            "reason": judgement.report.get("reason"),
            "report": judgement.report_cid,
        }
        if not judgement.faulty or judgement.indeterminate:
            self.state.set("judged", judged)
        if judgement.indeterminate:
            # Within its band: another honest replay may pass it, so a challenge could split honest panels (protocol
            # 5, the near-tie band). Attested as such: partners need not replay it, and nobody reads it as sound.
            self.ctx.say(
                f"task {task} interval {k}: out of bounds within the near-tie band (report "
                f"{judgement.report_cid[:12]}…): not challenged",
                style="yellow",
            )
            self._attest_later(key, opened, judgement, AttestedVerdict.INDETERMINATE)
            return False
        if not judgement.faulty:
            closest = closest_to_limit(judgement.report)
            margin = f"; nearest its limit: {closest[1]} at {closest[0]:.0%} of it" if closest else ""
            self.ctx.say(
                f"task {task} interval {k}: valid (report {judgement.report_cid[:12]}…{margin})", style="green"
            )
            self._attest_later(key, opened, judgement, AttestedVerdict.SOUND)
            return False
        # Not obtained (a batch manifest withheld included) is unavailable: with that reason, a SOUND settlement
        # pays the provider no share of the bond, so withholding as bait earns nothing (a ninth review).
        reason = Reason.OUT_OF_BOUNDS if judgement.obtained else Reason.UNAVAILABLE
        self.ctx.say(f"task {task} interval {k}: FAULTY ({judgement.report.get('reason')}): challenging", style="red")
        challenges = self.state.get("challenges", {})
        if key in challenges and self._commit_status(task, k, challenges[key]) == CommitStatus.PENDING:
            # Its commit still waits for its reveal: a new salt would lose it, and its bond (review 19 of v3)
            self.state.set("judged", judged)
            return True
        # A reopening already answered (by judging again) stays answered
        earlier = {"reopened_at": challenges[key]["reopened_at"]} if "reopened_at" in challenges.get(key, {}) else {}
        # The salt is on disk before the commit leaves, so a restart can always reveal; the verdict and its challenge
        # in one write, so a kill between them cannot leave k judged faulty and never challenged (review 19 of v3).
        challenges[key] = {
            "salt": os.urandom(32).hex(),
            "reason": int(reason),
            "report": judgement.report_cid,
            **earlier,
        }
        self.state.update({"judged": judged, "challenges": challenges})
        return True

    # --- attesting -----------------------------------------------------------------------------

    def _attest_later(self, key: str, opened: Opened, judgement: Judgement, verdict: AttestedVerdict) -> None:
        """Record the attestation of a judgement (persisted: :meth:`_drive_attestations` sends it)."""
        if not self.attest:
            return
        pending = self.state.get("attestations", {})
        profile = profile_text(f"{self.profile_name} on {host_cpu()}")
        pending[key] = {
            "report": judgement.report_cid,
            "profile": profile,
            "end_digest": opened.end_digest,
            "verdict": int(verdict),
        }
        self.state.set("attestations", pending)

    def _drive_attestations(self) -> None:
        """Publish every attestation recorded and not announced yet (persisted: a restart sends the rest)."""
        if not self.attest:
            return
        pending = self.state.get("attestations", {})
        for key, a in pending.items():
            if a.get("cid") or not self.isolation.ready(f"attest {key}"):
                continue
            task, k = (int(x) for x in key.split(":"))
            end_digest = bytes.fromhex(a["end_digest"])
            verdict = AttestedVerdict(a.get("verdict", AttestedVerdict.SOUND))
            call = functools.partial(publish, self.ctx, task, k, end_digest, a["report"], a["profile"], verdict)
            if (cid := self.isolation.call(f"attest {key}", call)) is not None:
                pending[key] = {**a, "cid": cid}
                self.state.set("attestations", pending)
                said = "sound" if verdict == AttestedVerdict.SOUND else "within the near-tie band"
                self.ctx.say(f"task {task} interval {k}: attested {said} (attestation {cid[:12]}…)")

    # --- challenging ---------------------------------------------------------------------------

    def _drive_challenges(self) -> None:
        self._challenge_reopened()
        challenges = self.state.get("challenges", {})
        for key, c in challenges.items():
            if c.get("failed") or not self.isolation.ready(f"challenge {key}"):
                continue
            try:
                self.isolation.call(
                    f"challenge {key}", functools.partial(self._challenge, key, c), reraise=(ContractReverted,)
                )
            except ContractReverted as exc:
                # Too late (window closed while this watcher was down) or the task ended: give up on it.
                self.ctx.say(f"challenge {key} abandoned: {exc}", style="yellow")
                challenges[key] = {**c, "failed": str(exc)}
                self.state.set("challenges", challenges)

    def _challenge_reopened(self) -> None:
        """Challenge again an interval it judged faulty whose window a dispute's no-decision reopened (protocol
        4.2: a no-decision buys delay, never a verdict, only if the watcher comes back): a fresh commitment for
        a reopening its last commitment has not answered (:meth:`_answered_until`), once that commit is no longer
        pending and the interval is not found sound; persisted before it is sent."""
        challenges = self.state.get("challenges", {})
        latest: dict[str, int] = {}  # key -> the block of its latest reopening its own challenge has not answered
        answered: dict[str, int | None] = {}
        for event in self.ctx.scanner.events("IntervalWindowReopened"):
            key = f"{int(event.args['task'])}:{int(event.args['k'])}"
            if (c := challenges.get(key)) is None:
                continue
            if key not in answered:
                answered[key] = self._answered_until(key, c)
            since = answered[key]
            if since is not None and event.block_number > max(since, c.get("reopened_at", 0)):
                latest[key] = max(latest.get(key, 0), event.block_number)
        changed = False
        for key, block in latest.items():
            c = challenges[key]
            task, k = (int(x) for x in key.split(":"))
            if self._commit_status(task, k, c) == CommitStatus.PENDING:
                continue  # its reveal comes first
            if self.ctx.protocol.view(self.ctx.protocol.tasks, "getOpenedInterval", task, k).sound:
                continue  # found sound since: a challenge could only lose its bond
            if c["reason"] == int(Reason.UNAVAILABLE):
                # Files it did not obtain (or obtained too late to judge) may be served now: judged afresh, and
                # challenged again only if still faulty (review 13 of v3: a late verdict re-challenged blind lost
                # the watcher its bond on files served since).
                challenges[key] = {**c, "reopened_at": block}
                judged = self.state.get("judged", {})
                judged.pop(key, None)
                self.state.update({"judged": judged, "challenges": challenges})  # one write: see _record
                self.ctx.say(
                    f"task {task} interval {k}: its window reopened after a dispute with no decision: judging it again",
                    style="yellow",
                )
                continue
            challenges[key] = {
                "salt": os.urandom(32).hex(),
                "reason": c["reason"],
                "report": c["report"],
                "reopened_at": block,
            }
            changed = True
            self.ctx.say(
                f"task {task} interval {k}: its window reopened after a dispute with no decision: challenging it again",
                style="yellow",
            )
        if changed:
            self.state.set("challenges", challenges)

    def _drive_appeals(self) -> None:
        """Appeal a round that found sound an interval its own replay (confirmed) found faulty, within its budget,
        whether or not its own challenge has joined the dispute yet: nobody else may, and a captured round left
        standing pays the fake and half the watcher's bond to the provider (review 7 of v3, F4; the eighth review:
        a round decided before its replay finished). For files it did not obtain, it looks again first, within
        the appeal window (:meth:`_recheck`), and appeals if it still cannot obtain them or its replay of them is
        faulty (the eleventh review: a provider serving its files to its sybils alone had a sybil majority's SOUND
        stand, since nobody appealed). A round is looked at until it is appealed or its appeal window has passed."""
        judged = self.state.get("judged", {})
        now, clock = self.ctx.now(), time.monotonic()
        for event in self.ctx.scanner.events("RoundDecided"):
            dispute, round_ = int(event.args["dispute"]), int(event.args["round"])
            key = f"{dispute}:{round_}"
            if key in self._appeal_done or Verdict(int(event.args["outcome"])) != Verdict.VALID:
                continue
            appeal_until = int(event.args["appealUntil"])
            if appeal_until <= now and key not in self._rechecks:  # the last round (0: it stands), or too late
                self._appeal_done.add(key)
                self._appeals_due.pop(key, None)
                continue
            if key in self._appeals_due:  # decided on: sent again until settled (a refused send is not the end)
                self._appeal(key, dispute, round_, self._appeals_due[key])
                continue
            d = self.ctx.protocol.view(self.ctx.protocol.tasks, "getDispute", dispute)
            task, k = int(d.task), int(d.k)
            verdict = judged.get(f"{task}:{k}")
            if verdict is None:
                # Not judged yet: looked at again on the next pass. But a look for files withheld from it (served to the
                # sybils that decided the round) may outlast the appeal window, and a SOUND left standing pays the
                # fake (review 24 of v3): near the window's end, a look that has run longer than a round's vote and
                # found nothing is files not obtained, appealed as the re-check of files not obtained appeals.
                started = self._first_look.get((task, k))
                if (
                    (task, k) in self._judging
                    and started is not None
                    and now >= appeal_until - 2 * self._commit_margin()
                ):
                    committee = self.ctx.protocol.committee.functions
                    if clock - started < int(committee.COMMIT_WINDOW().call()) + int(committee.REVEAL_WINDOW().call()):
                        continue
                    why = "found sound an interval whose files it has been looking for, and has not obtained"
                    self._appeals_due[key] = why
                    self._appeal(key, dispute, round_, why)
                continue
            if verdict["verdict"] != "faulty":
                self._appeal_done.add(key)
                continue
            why = "found sound an interval its replay found faulty"
            if verdict.get("reason") in NOT_OBTAINED:
                rechecked = self._recheck(key, task, k, clock + max(0, appeal_until - now - self._commit_margin()))
                if rechecked is None:
                    continue  # under way
                if isinstance(rechecked, str) or not rechecked.faulty or rechecked.indeterminate:
                    self._appeal_done.add(key)
                    because = rechecked if isinstance(rechecked, str) else "its files, looked for again, are not faulty"
                    self.ctx.say(f"dispute {dispute} round {round_}: not appealed: {because}")
                    continue
                why = f"found sound an interval whose files, looked for again, are {rechecked.report.get('reason')}"
            self._appeals_due[key] = why
            self._appeal(key, dispute, round_, why)

    def _appeal(self, key: str, dispute: int, round_: int, why: str) -> None:
        """Appeal round ``key`` (see :func:`appeal_round`); looked at again on the next pass until settled."""
        call = functools.partial(appeal_round, self.ctx, self.state, dispute, round_, self.appeal_budget, why)
        if self.isolation.call(f"appeal {key}", call):
            self._appeal_done.add(key)
            del self._appeals_due[key]

    def _recheck(self, key: str, task: int, k: int, decide_by: float) -> Judgement | str | None:
        """Interval k judged again for an appeal of round ``key`` (files it had not obtained), in a fetch worker
        until ``decide_by``: its judgement, the reason there is none (a string), or None while it runs."""
        future = self._rechecks.get(key)
        if future is None:
            sources = task_sources(self.ctx, task)
            opened = opened_interval(self.ctx, task, k, self._intervals_per_batch(task))
            if opened is None:
                return "its opening is not indexed"
            work = functools.partial(self._judge_one, sources, opened, decide_by)
            self._rechecks[key] = self._fetches.submit(run_until, decide_by, work)
            return None
        future = self._rechecks[key] = replay_queued(future)
        if not future.done():
            return None
        del self._rechecks[key]
        try:
            outcome: Judgement | str = future.result()
        except Exception as exc:  # no judgement in time (a deadline, our own node down): no appeal on it
            return f"no judgement in the appeal window: {type(exc).__name__}: {exc}"
        return outcome

    def _commitment(self, task: int, k: int, c: dict[str, Any]) -> bytes:
        return keccak(
            encode(
                ["uint256", "uint256", "uint8", "bytes32", "address"],
                [task, k, c["reason"], bytes.fromhex(c["salt"]), self.ctx.address],
            )
        )

    def _commit_status(self, task: int, k: int, c: dict[str, Any]) -> CommitStatus:
        commitment = self._commitment(task, k, c)
        return CommitStatus(
            self.ctx.protocol.view(self.ctx.protocol.tasks, "getCommit", self.ctx.address, commitment).status
        )

    def _challenge(self, key: str, c: dict[str, Any]) -> None:
        tasks = self.ctx.protocol.tasks
        task, k = (int(x) for x in key.split(":"))
        salt = bytes.fromhex(c["salt"])
        commitment = self._commitment(task, k, c)
        # One journal key per commitment (its salt is fresh each time): a challenge again after a reopening is a
        # new transaction whichever way it came (review 18 of v3: one judged again, files withheld, reused the first
        # challenge's keys, so the journal returned the first receipts, nothing was sent, and the fake was paid)
        again = f":{commitment.hex()}" if "reopened_at" in c else ""
        bond = self.ctx.protocol.task(task).terms.challengerBond
        status = self._commit_status(task, k, c)
        if status == CommitStatus.NONE and (late := self._too_late(task, k)):
            # Only its bond could come of it (the ninth review: a late verdict committed after k's own window, while
            # the task's other windows were open, could not be revealed and was burned).
            challenges = self.state.get("challenges", {})
            challenges[key] = {**c, "failed": late}
            self.state.set("challenges", challenges)
            self.ctx.say(f"task {task} interval {k}: not challenged: {late}", style="yellow")
            return
        if status == CommitStatus.NONE:  # the journal makes this idempotent across a crash
            commit = tasks.functions.commitChallenge(task, commitment)
            try:
                # Never a bond it could not reveal (reviews 22 and 23 of v3: an owner's bond just under the balance
                # burned it): signed only with the gas reserve for its reveal left beside it
                receipt = self.ctx.client.transact(
                    f"challenge-commit:{key}{again}", commit, value=bond, keep=gas_reserve(self.ctx)
                )
            except ContractReverted as exc:
                if self._commit_status(task, k, c) == CommitStatus.NONE:
                    if late := self._too_late(task, k):
                        raise ContractReverted(exc.name, exc.args_by_name, exc.data, f"{late}: ") from None
                    # Its window is open as far as the chain says: a lagging backend's estimate (review 21 of v3)
                    raise StateBehind(
                        f"challenge-commit:{key}: refused ({exc}) with its window open: tried again"
                    ) from None
                # Its own commit was mined after all (a lagging endpoint had read it as not yet): on to the reveal,
                # never given up (review 20 of v3: given up, the commit was never revealed and its bond burned)
                receipt = None
            if receipt is not None and not self._commits(receipt, commitment):  # a key reused: another's receipt
                raise ChainError(f"challenge-commit:{key}{again}: its receipt commits something else")
            self.ctx.say(f"committed a challenge of task {task} (bond {bond / 1e18:g} ETH)")
            if receipt is not None:
                challenges = self.state.get("challenges", {})
                challenges[key] = {**challenges[key], "committed_block": int(receipt["blockNumber"])}
                self.state.set("challenges", challenges)
            status = CommitStatus.PENDING
        if status == CommitStatus.PENDING:
            try:
                receipt = self.ctx.client.transact(
                    f"challenge-reveal:{key}{again}",
                    tasks.functions.revealChallenge(task, k, c["reason"], salt, c["report"]),
                )
            except ContractReverted as exc:
                # Refused while its reveal window is open: a backend behind the commit just mined (UnknownCommitment),
                # tried again until that window ends, never given up before (review 21 of v3: given up, its bond
                # burned at the window's end and the fake was paid)
                # (a commit time not known yet is a backend behind too: review 22)
                if (reveal_by := self._reveal_by(task, k, c)) is None or self.ctx.now() < reveal_by:
                    until = "" if reveal_by is None else f" until {chain_clock(reveal_by)}"
                    why = f"challenge-reveal:{key}: refused ({exc}) with its reveal window open{until}: tried again"
                    raise StateBehind(why) from None
                raise
            challenges = self.state.get("challenges", {})
            challenges[key] = {**challenges[key], "revealed_block": int(receipt["blockNumber"])}  # see _answered_until
            self.state.set("challenges", challenges)
            dispute = self._dispute_of(receipt)
            self.ctx.say(
                f"revealed: task {task} interval {k}, {Reason(c['reason']).name.lower()}"
                + (f" -> dispute {dispute}" if dispute else " (settled at once: the task ended)")
            )

    def _too_late(self, task: int, k: int) -> str:
        """Why a commit of k now could only lose its bond ("" if it could not): k is found sound already, its own
        window closes before a commit could land (a commit made after it cannot be revealed), or the task's reveal
        window is shorter than a reveal takes to be mined (review 16 of v3: an owner's reveal window of seconds on a
        12 s chain burned every bond committed, the reveal always late), or its bond is above ``max_bond``."""
        tasks = self.ctx.protocol.tasks
        if self.ctx.protocol.view(tasks, "getOpenedInterval", task, k).sound:
            return "it was found sound meanwhile"
        terms = self.ctx.protocol.task(task).terms
        if self.max_bond is not None and int(terms.challengerBond) > self.max_bond:
            bond, most = int(terms.challengerBond) / 1e18, self.max_bond / 1e18
            return f"its challenger bond of {bond:g} ETH is above --max-bond ({most:g} ETH)"
        room = self.ctx.room_to_act(self.poll_seconds)
        reveal = int(terms.windows.challengeRevealWindow)
        if reveal < room:
            return f"its reveal window of {reveal}s is shorter than the {room:.0f}s a reveal takes to be mined here"
        end = int(self.ctx.protocol.view(tasks, "challengeWindowEnd", task, k))
        if self.ctx.now() + self._commit_margin() >= end:
            return f"its window closes at {chain_clock(end)}, too soon for a commit to land"
        return ""

    def _commit_margin(self) -> float:
        """Seconds before an interval's window end by which its challenge is committed: COMMIT_MARGIN, or the
        chain's room to act where that is longer (a chain of slow blocks)."""
        return max(COMMIT_MARGIN, self.ctx.room_to_act(self.poll_seconds))

    def _reveal_by(self, task: int, k: int, c: dict[str, Any]) -> int | None:
        """When the reveal window of ``c``'s commit ends (None: its commit is not known to be mined)."""
        commitment = self._commitment(task, k, c)
        committed_at = int(
            self.ctx.protocol.view(self.ctx.protocol.tasks, "getCommit", self.ctx.address, commitment).committedAt
        )
        if not committed_at:  # read from a backend behind the commit: the block its receipt named says when
            block = self.state.get("challenges", {}).get(f"{task}:{k}", c).get("committed_block")
            if block is None:
                return None
            committed_at = int(self.ctx.client.retry(lambda: self.ctx.client.w3.eth.get_block(block))["timestamp"])
        return committed_at + int(self.ctx.protocol.task(task).terms.windows.challengeRevealWindow)

    def _answered_until(self, key: str, c: dict[str, Any]) -> int | None:
        """The block of the reveal of ``c``'s commitment, or of its commit if it was never revealed (None: never
        committed): a reopening after it is one its challenge has not answered. One before its commit is answered by
        that commit, made in the reopened window, and one before its reveal by that reveal, which opened a dispute
        of its own (reviews 19 and 20 of v3: answered again, a second bond went in). Each as recorded, or from the
        event index where a kill came before it was recorded; only events of its own (a copier may commit the same
        commitment)."""
        for recorded, name in (("revealed_block", "ChallengeRevealed"), ("committed_block", "ChallengeCommitted")):
            if recorded in c:
                return int(c[recorded])
            if "salt" in c:
                task, k = (int(x) for x in key.split(":"))
                mine, me = "0x" + self._commitment(task, k, c).hex(), self.ctx.address.lower()
                blocks = [
                    e.block_number
                    for e in self.ctx.scanner.events(name, task=task)
                    if e.args["commitment"] == mine and str(e.args["challenger"]).lower() == me
                ]
                if blocks:
                    return max(blocks)
        return None

    def _commits(self, receipt: Any, commitment: bytes) -> bool:
        """Whether ``receipt`` is of a transaction that committed ``commitment``."""
        events = self.ctx.protocol.tasks.events.ChallengeCommitted().process_receipt(receipt, errors=DISCARD)
        return any(bytes(e["args"]["commitment"]) == commitment for e in events)

    def _dispute_of(self, receipt: Any) -> int:
        events = self.ctx.protocol.tasks.events.ChallengeRevealed().process_receipt(receipt, errors=DISCARD)
        return int(events[0]["args"]["dispute"]) if events else 0


def _key(task: int, k: int | None = None) -> str:
    """How the log and the isolation name a task or one of its intervals."""
    return f"task {task}" if k is None else f"task {task} interval {k}"


def _bytes_in(folder: Path) -> int:
    """The bytes of the files under ``folder`` now (files and folders another worker deletes meanwhile count as none:
    os.walk skips a folder it cannot list, where a glob raised, and the judgement was left alone until a restart)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, name)).st_size
    return total
