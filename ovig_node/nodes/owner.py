"""The owner's side, from the chain alone: a task's terms, the owner's tasks, a task's status and payouts,
cancelling one nobody accepted. ``task_status`` gathers, from chain state and events only, what an owner wants to
see. Posting a task, which opens its files (and so loads torch), is :mod:`ovig_node.nodes.posting`'s: reading or
cancelling a task never pays for that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ovig_node.chain.contracts import BatchStatus, DisputeStatus, Reason, TaskStatus, Verdict, Vote
from ovig_node.chain.scanner import Event
from ovig_node.errors import OvigError
from ovig_node.nodes.attesting import attestations
from ovig_node.nodes.context import NodeContext
from ovig_node.protocol.attestation import Announced


class PostingError(OvigError, ValueError):
    """The task cannot be posted as given (no boundary, a file that does not match the spec...)."""


@dataclass(frozen=True)
class Terms:
    reward: int  # wei
    provider_bond: int
    challenger_bond: int
    opening_window: int  # seconds
    challenge_window: int
    reveal_window: int
    deadline_in: int  # seconds from now
    # The slowest honest replay of one interval the owner declares (protocol 4.2); None: twice the
    # boundary's slowest calibration replay, rounded up.
    replay_seconds: int | None = None


def declared_replay_seconds(terms: Terms, boundary_slowest: float, committee_max: int) -> int:
    """What the task declares as its slowest honest replay: the owner's figure, or twice the boundary's
    slowest calibration replay; refused here, not by a reverted transaction, above the committee's cap."""
    declared = terms.replay_seconds if terms.replay_seconds is not None else max(1, math.ceil(2 * boundary_slowest))
    if declared < boundary_slowest:
        raise PostingError(
            f"replay seconds {declared} is below the boundary's slowest honest replay "
            f"({boundary_slowest:.1f}s): nodes would refuse the task"
        )
    if declared > committee_max:
        raise PostingError(
            f"replay seconds {declared} is above the committee's maximum {committee_max}: "
            "the task is too slow to replay for this committee"
        )
    return declared


def cancel_task(ctx: NodeContext, task: int) -> int:
    """Take back a posted task nobody accepted: the contract credits the reward (withdraw it with
    ``withdraw``). Checked first, so a task that is not the sender's or no longer posted is one clear
    error and no transaction; returns what was credited."""
    t = ctx.protocol.task(task)
    if t.status == TaskStatus.NONE:
        raise PostingError(f"there is no task {task}")
    if t.owner != ctx.address:
        raise PostingError(f"task {task} is {t.owner}'s, not {ctx.address}'s: only its owner cancels it")
    if t.status != TaskStatus.POSTED:
        raise PostingError(
            f"task {task} is {TaskStatus(t.status).name.lower()}: only a task nobody accepted yet can be cancelled"
        )
    ctx.client.transact(f"cancel:{task}", ctx.protocol.tasks.functions.cancel(task))
    return int(t.terms.reward)


@dataclass(frozen=True)
class OwnedTask:
    task: int
    status: TaskStatus
    provider: str  # the zero address until it is accepted
    reward: int


def my_tasks(ctx: NodeContext, owner: str | None = None) -> list[OwnedTask]:
    """Every task ``owner`` (default: this node's account) posted, oldest first, with its status now."""
    ctx.scanner.poll()
    who = owner or ctx.address
    tasks = []
    for event in ctx.scanner.events("TaskPosted", owner=who):
        t = ctx.protocol.task(int(event.args["task"]))
        tasks.append(OwnedTask(int(event.args["task"]), TaskStatus(t.status), str(t.provider), int(t.terms.reward)))
    return sorted(tasks, key=lambda o: o.task)


@dataclass(frozen=True)
class TaskReport:
    task: int
    status: TaskStatus
    terms: Any
    owner: str
    provider: str
    batches: list[dict[str, Any]]
    disputes: list[dict[str, Any]]
    credits: list[dict[str, Any]]
    # k -> watcher -> its verified attestation (protocol 8.4; nodes.attesting)
    attested: dict[int, dict[str, Announced]] = field(default_factory=dict)


# Why the task contract credited someone, from the event its transaction emitted with the credit (protocol 5).
_CAUSES = (
    "TaskCancelled",
    "TaskAbandoned",
    "TaskFinalized",
    "TaskSlashed",
    "LeadShareReleased",
    "DisputeSettled",
    "BondClaimed",
    "ChallengeExpired",
)


def _payouts(ctx: NodeContext, task: int, t: Any) -> list[tuple[Event, str]]:
    """The task's credits, oldest first, each with what it pays for."""
    causes: dict[str, list[Event]] = {}
    for name in _CAUSES:
        for e in ctx.scanner.events(name, task=task):
            causes.setdefault(e.tx_hash, []).append(e)
    committee = ctx.protocol.committee.address
    out = []
    for e in ctx.scanner.events("Credited", source=task):
        if e.contract == "TrainingTasks":
            out.append((e, _payout_reason(e.args["account"], causes.get(e.tx_hash, []), t, committee)))
    return out


def _payout_reason(account: str, causes: list[Event], t: Any, committee: str) -> str:
    """What a credit to ``account`` pays for, given the task's events in the same transaction."""
    names = {e.name: e for e in causes}
    role = "owner" if account == t.owner else "provider" if account == t.provider else ""
    if "TaskCancelled" in names:
        return "reward back: cancelled"
    if "TaskAbandoned" in names:
        return "reward and the provider bond: abandoned"
    if "TaskFinalized" in names:
        return "reward and provider bond: finalized"
    if "LeadShareReleased" in names:
        return "lead challenger's share of the slashed provider bond"
    if (slashed := names.get("TaskSlashed")) is not None:
        if account == committee:
            return "panel's share of the slashed provider bond (for its auditors)"
        if role == "owner":
            return "reward and the owner's share of the slashed provider bond"
        if int(slashed.args["dispute"]) == 0:
            return "keeper's share of the provider bond: it reported an opening not made"
        return "lead challenger's share of the slashed provider bond"
    if (settled := names.get("DisputeSettled")) is not None:
        verdict = Verdict(settled.args["verdict"]).name.lower()
        if account == committee:
            return f"panel's share, dispute {settled.args['dispute']} ({verdict})"
        if role == "provider" and verdict == "valid":
            return f"provider's share of the challenger bonds: dispute {settled.args['dispute']} found it sound"
    if "BondClaimed" in names or "ChallengeExpired" in names:
        return "challenger bond back"
    return "credit"


def task_status(ctx: NodeContext, task: int) -> TaskReport:
    """Everything about ``task`` from chain state and events."""
    ctx.scanner.poll()
    p = ctx.protocol
    t = p.task(task)
    if t.status == TaskStatus.NONE:
        raise PostingError(f"there is no task {task}")
    batches = []
    for j in range(t.batchCount):
        b = p.batch(task, j)
        opened = ctx.scanner.events("BatchOpened", task=task, j=j)
        batches.append(
            {
                "j": j,
                "status": BatchStatus(b.status).name.lower(),
                "sampled": p.sampled(task, j),
                "opening": opened[-1].args["openingCID"] if opened else "",
                "window_end": b.windowEnd,
            }
        )
    disputes = []
    for event in ctx.scanner.events("DisputeOpened", task=task):
        dispute = int(event.args["dispute"])
        d = p.dispute(dispute)
        panel = list(p.committee.functions.panelOf(dispute).call())
        votes = {a: Vote(p.view(p.committee, "ballotOf", dispute, a).vote).name.lower() for a in panel}
        disputes.append(
            {
                "dispute": dispute,
                "k": int(event.args["k"]),
                "reason": Reason(event.args["reason"]).name.lower(),
                "status": DisputeStatus(d.status).name.lower(),
                "verdict": Verdict(d.verdict).name.lower(),
                "round": int(d.round),
                "votes": votes,
            }
        )
    credits = [
        {"account": e.args["account"], "amount": int(e.args["amount"]), "for": reason}
        for e, reason in _payouts(ctx, task, t)
    ]
    return TaskReport(
        task, TaskStatus(t.status), t.terms, t.owner, t.provider, batches, disputes, credits, attestations(ctx, task)
    )
