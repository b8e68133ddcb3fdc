"""The owner's side: post a task with its files pinned, follow it, withdraw.

``post_task`` pins the spec, dataset, initial checkpoint and boundary (an exact task has none; their CIDs,
computed with Kubo's rules, must be the spec's), then posts the task with the reward escrowed. ``task_status``
gathers, from chain state and events only, what an owner wants to see.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from web3.logs import DISCARD

from ovig_node.chain.contracts import BatchStatus, DisputeStatus, Reason, TaskStatus, Verdict, Vote
from ovig_node.chain.scanner import Event
from ovig_node.errors import OvigError
from ovig_node.files import file_sha256
from ovig_node.nodes.attesting import attestations
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.fetching import MAX_BATCH_MANIFEST_BYTES
from ovig_node.nodes.node_state import NodeState
from ovig_node.protocol.attestation import Announced
from ovig_node.protocol.manifest import manifest_limit
from ovig_node.protocol.spec import ContentRef
from ovig_node.training.taskfiles import boundary_mismatch, open_task
from ovig_node.verify.boundary import load_boundary


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


def post_task(ctx: NodeContext, spec_path: Path, boundary_path: Path | None, terms: Terms) -> int:
    """Pin the task's files and post it; returns the task id. An exact task (``numerics``) has no boundary
    (``boundary_path`` None) and must declare its replay seconds. Posting the same spec again from the
    same owner state returns the task already posted (the journal never sends it twice)."""
    prepared = open_task(spec_path)
    spec = prepared.spec
    files: list[tuple[Path, ContentRef | None]] = [
        (spec_path, None),
        (prepared.dataset_path, spec.dataset),
        (prepared.init_path, spec.init),
    ]
    slowest = 0.0  # an exact task's replays: only the owner's declaration, checked by each trainer's preflight
    if (manifest := manifest_limit(spec.layout, spec.intervals_per_batch)) > MAX_BATCH_MANIFEST_BYTES:
        raise PostingError(
            f"{spec_path}: its batch manifests could be {manifest} bytes, more than nodes read "
            f"({MAX_BATCH_MANIFEST_BYTES}): fewer intervals a batch, or a shorter stride"
        )
    if spec.exact:
        if boundary_path is not None or spec.boundary is not None:
            raise PostingError(f"{spec_path} is exact: bytes judge it, so it takes no boundary")
        if terms.replay_seconds is None:
            raise PostingError(
                f"{spec_path} is exact: no boundary measured its replays, so declare their seconds (--replay-seconds)"
            )
    else:
        if spec.boundary is None:
            raise PostingError(f"{spec_path} names no boundary: run `ovig spec set-boundary` first")
        if boundary_path is None:
            raise PostingError(f"{spec_path} is judged against its boundary: give its file (--boundary)")
        if file_sha256(boundary_path) != spec.boundary.sha256:
            raise PostingError(f"{boundary_path} is not the boundary the spec names (sha256 {spec.boundary.sha256})")
        if (problem := boundary_mismatch(spec, boundary_path.read_bytes())) is not None:
            raise PostingError(f"{boundary_path}: {problem}")  # before anything is pinned or sent
        files.append((boundary_path, spec.boundary))
        slowest = load_boundary(boundary_path.read_bytes()).replay_seconds_max
    balance = int(ctx.client.retry(lambda: ctx.client.w3.eth.get_balance(ctx.address)))
    if balance < terms.reward:  # before anything is pinned or sent
        raise PostingError(
            f"{ctx.address} holds {balance / 1e18:g} ETH; posting escrows the reward, {terms.reward / 1e18:g} ETH, "
            "plus gas"
        )
    for path, ref in files:
        cid = ctx.ipfs.add_file(path).cid
        if ref is not None and cid != ref.cid:
            raise PostingError(f"{path} was pinned as {cid}, but the spec names {ref.cid}")
        if ref is None:
            spec_cid = cid
    pinned = "spec, dataset and initial checkpoint" if spec.exact else "spec, dataset, initial checkpoint and boundary"
    ctx.say(f"pinned the {pinned} (spec {spec_cid})")
    state = NodeState(ctx.home / "owner.json")
    posts = state.get("posts", {})
    key = f"post:0x{prepared.spec_hash.hex()}:{posts.get(prepared.spec_hash.hex(), 0)}"
    deadline = ctx.now() + terms.deadline_in
    windows = (terms.opening_window, terms.challenge_window, terms.reveal_window)
    replay = declared_replay_seconds(terms, slowest, int(ctx.protocol.committee.functions.maxReplaySeconds().call()))
    bonds = (terms.provider_bond, terms.challenger_bond)
    fn = ctx.protocol.tasks.functions.postTask(
        prepared.spec_hash,
        spec_cid,
        bytes.fromhex(spec.init.sha256),
        spec.total_steps,
        spec.stride,
        spec.intervals_per_batch,
        spec.sample_bps,
        bonds,
        replay,
        windows,
        deadline,
    )
    receipt = ctx.client.transact(key, fn, value=terms.reward)
    task = int(ctx.protocol.tasks.events.TaskPosted().process_receipt(receipt, errors=DISCARD)[0]["args"]["task"])
    posts[prepared.spec_hash.hex()] = posts.get(prepared.spec_hash.hex(), 0) + 1
    state.set("posts", posts)
    ctx.say(
        f"posted task {task}: reward {terms.reward / 1e18:g} ETH, bond {terms.provider_bond / 1e18:g} ETH, "
        f"replays of {replay}s"
    )
    return task


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
