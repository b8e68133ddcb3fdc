"""The auditor node: stake in the committee, and vote on every panel it is drawn for.

It registers with the committee's stake, follows PanelDrawn events naming it, replays the disputed
interval (or, for reason unavailable, only checks the files can be fetched and match), and votes
with commit-reveal within the windows: the salt and vote are persisted before the commit is sent,
so a restarted auditor still reveals. When a round it sat in is decided against its own replay, it
appeals for the other outcome if the appeal bond is within its ``appeal_budget`` (protocol 4.2). It
withdraws what panels and appeals pay it from both contracts. Each panel
is served on its own (:mod:`ovig_node.nodes.isolation`): a dispute whose files make anything raise is
logged once and retried or left alone, and later panels are still served.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any

from eth_abi import encode
from eth_utils import keccak

from ovig_node.chain.contracts import DisputeStatus, Verdict
from ovig_node.chain.errors import IndexBehind
from ovig_node.chain.reverts import ContractReverted
from ovig_node.nodes.context import REPLAY_PROFILES, NodeContext
from ovig_node.nodes.fetching import FetchedTask, fetch_task
from ovig_node.nodes.isolation import Isolation
from ovig_node.nodes.judging import judge_interval, opened_interval
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.looping import keep_running
from ovig_node.nodes.node_state import NodeState
from ovig_node.nodes.payouts import withdraw_credits
from ovig_node.verify.stats import warm_up


@dataclass
class AuditorNode:
    ctx: NodeContext
    profile_name: str = REPLAY_PROFILES
    keeper: Keeper | None = None
    poll_seconds: float = 1.0
    appeal_budget: int = 0  # wei: the largest appeal bond it puts up (0: it never appeals)
    _fetched: dict[int, FetchedTask] = field(default_factory=dict)
    _windows: tuple[int, int] | None = None
    # Decided rounds it will not appeal (agreed, appealed, over budget, or no longer appealable): each is
    # looked at once, not on every pass.
    _appeal_done: set[str] = field(default_factory=set)
    _prefetched: set[int] = field(default_factory=set)  # disputes whose task's files it holds, or that ended

    @functools.cached_property
    def state(self) -> NodeState:
        return NodeState(self.ctx.home / "auditor.json")

    @functools.cached_property
    def isolation(self) -> Isolation:
        return Isolation(self.ctx.say)

    def run(self, *, until: float | None = None) -> None:
        """Work until interrupted (or until the monotonic time ``until``)."""
        warm_up()  # the comparison's compiled passes load meanwhile, not within a challenge or vote window
        keep_running(self.ctx, self.step, keeper=self.keeper, poll_seconds=self.poll_seconds, until=until)

    def step(self) -> None:
        self._register()
        self.ctx.scanner.poll()
        for event in self.ctx.scanner.events("DisputeOpened"):
            # The disputed task's files before any panel is drawn: a drawn auditor's commit window goes to
            # replaying, not to fetching a model of hundreds of megabytes
            dispute, task = int(event.args["dispute"]), int(event.args["task"])
            if dispute in self._prefetched or not self.isolation.ready(f"task {task} files"):
                continue
            if task in self._fetched or self._resolved(dispute):
                self._prefetched.add(dispute)
            else:
                self.isolation.call(f"task {task} files", functools.partial(self._task_files, task))
        for event in self.ctx.scanner.events("PanelDrawn"):
            dispute, round_ = int(event.args["dispute"]), int(event.args["round"])
            key = f"dispute {dispute} round {round_}"
            if self.ctx.address in event.args["panel"] and self.isolation.ready(key):
                self.isolation.call(key, functools.partial(self._serve, dispute, round_))
        for event in self.ctx.scanner.events("RoundDecided"):
            self._maybe_appeal(int(event.args["dispute"]), int(event.args["round"]), int(event.args["outcome"]))
        withdraw_credits(self.ctx, self.state, ("TrainingTasks", "AuditCommittee"))

    def _register(self) -> None:
        committee = self.ctx.protocol.committee
        if self.ctx.protocol.view(committee, "getAuditor", self.ctx.address).registeredBlock != 0:
            return
        stake = committee.functions.AUDITOR_STAKE().call()
        self.ctx.client.transact(f"register:{self.state.get('exits', 0)}", committee.functions.register(), value=stake)
        self.ctx.say(f"registered as an auditor with a stake of {stake / 1e18:g} ETH")

    def _serve(self, dispute: int, round_: int) -> None:
        d = self.ctx.protocol.dispute(dispute)
        if d.status != DisputeStatus.VOTING or d.round != round_:
            return
        key = f"{dispute}:{round_}"
        votes = self.state.get("votes", {})
        if key not in votes:
            vote, report = self._decide(dispute, d)
            # Salt and vote are on disk before the commit leaves, so a restart can always reveal.
            votes[key] = {"vote": vote, "salt": os.urandom(32).hex(), "report": report}
            self.state.set("votes", votes)
        mine = votes[key]
        salt = bytes.fromhex(mine["salt"])
        committee = self.ctx.protocol.committee
        ballot = self.ctx.protocol.view(committee, "ballotOf", dispute, round_, self.ctx.address)
        commit_end, reveal_end = d.drawnAt + self._window(0), d.drawnAt + self._window(0) + self._window(1)
        now = self.ctx.now()
        try:
            if ballot.commitment == b"\x00" * 32 and now < commit_end:
                commitment = keccak(encode(["uint256", "uint256", "uint8", "bytes32", "address"],
                                           [dispute, round_, mine["vote"], salt, self.ctx.address]))  # fmt: skip
                self.ctx.client.transact(f"vote-commit:{key}", committee.functions.commitVote(dispute, commitment))
                self.ctx.say(f"dispute {dispute}: committed a vote")
            elif ballot.commitment != b"\x00" * 32 and ballot.vote == 0 and commit_end <= now < reveal_end:
                self.ctx.client.transact(
                    f"vote-reveal:{key}", committee.functions.revealVote(dispute, mine["vote"], salt)
                )
                self.ctx.say(f"dispute {dispute}: revealed its vote: {Verdict(mine['vote']).name.lower()}")
        except ContractReverted as exc:
            self.ctx.say(f"dispute {dispute}: vote refused: {exc}", style="yellow")

    def _decide(self, dispute: int, d: Any) -> tuple[int, str]:
        """Vote valid (1) or faulty (2) from its own judgement of the interval: availability and the replay
        together, whatever reason the challenger gave (protocol v2: one question per interval)."""
        task, k = int(d.task), int(self.ctx.protocol.view(self.ctx.protocol.tasks, "getDispute", dispute).k)
        fetched = self._task_files(task)
        self.ctx.scanner.poll()
        opened = opened_interval(self.ctx, task, k, fetched.prepared.spec.intervals_per_batch)
        if opened is None:  # a dispute exists only over an opened interval: the index is behind, try again
            raise IndexBehind(f"dispute over task {task} interval {k}: its IntervalOpened is not indexed yet")
        judgement = judge_interval(self.ctx, fetched, opened, profile=self.profile_name, who="audit")
        vote = Verdict.FAULTY if judgement.faulty else Verdict.VALID
        self.ctx.say(f"dispute over task {task} interval {k}: its replay says {judgement.report['verdict']} "
                     f"({judgement.report.get('reason')}); votes {vote.name.lower()}")  # fmt: skip
        return int(vote), judgement.report_cid

    def _task_files(self, task: int) -> FetchedTask:
        if task not in self._fetched:
            self._fetched[task] = fetch_task(self.ctx, task, self.ctx.home / f"task-{task}" / "files")
        return self._fetched[task]

    def _resolved(self, dispute: int) -> bool:
        return DisputeStatus(self.ctx.protocol.dispute(dispute).status) == DisputeStatus.RESOLVED

    def _maybe_appeal(self, dispute: int, round_: int, outcome: int) -> None:
        """Appeal a decided round its own replay contradicts, once, while the appeal window is open."""
        key = f"{dispute}:{round_}"
        if not self.appeal_budget or key in self._appeal_done:
            return
        mine = [v["vote"] for k, v in self.state.get("votes", {}).items() if k.split(":")[0] == str(dispute)]
        appealed = self.state.get("appeals", [])
        if not mine or mine[-1] == outcome or key in appealed:
            self._appeal_done.add(key)  # no vote of its own on the dispute, agreed with, or appealed already
            return
        d = self.ctx.protocol.dispute(dispute)
        bond = int(self.ctx.protocol.tasks.functions.challengerBondOf(dispute).call()) << (round_ + 1)
        self._appeal_done.add(key)  # read once: it is appealed now, or it never will be
        if d.status != DisputeStatus.APPEALABLE or d.round != round_:
            return
        if bond > self.appeal_budget:
            self.ctx.say(f"dispute {dispute}: round {round_} contradicts its replay; appeal bond {bond / 1e18:g} ETH "
                         "is over its budget", style="yellow")  # fmt: skip
            return
        self.state.set("appeals", [*appealed, key])
        try:
            self.ctx.client.transact(f"appeal:{key}", self.ctx.protocol.committee.functions.appeal(dispute), value=bond)
            self.ctx.say(f"dispute {dispute}: appealed round {round_} ({bond / 1e18:g} ETH)")
        except ContractReverted as exc:
            self.ctx.say(f"dispute {dispute}: appeal refused: {exc}", style="yellow")

    def _window(self, which: int) -> int:
        if self._windows is None:
            c = self.ctx.protocol.committee.functions
            self._windows = (c.COMMIT_WINDOW().call(), c.REVEAL_WINDOW().call())
        return self._windows[which]
