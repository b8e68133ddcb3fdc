"""Targeted openings (protocol 8.3): a watcher asks, with the challenger bond, for an interval the sample left
unopened; the provider must open it or be slashed; once opened it is challengeable like a sampled one.

The promises tested, against who would break them:
- the provider: an interval it is asked for and does not open slashes it as an unopened batch would (the
  requester gets its bond back and the keeper's share); it cannot open it after its window, nor with a wrong
  digest; its sock-puppets cannot use up a batch's room for requests;
- the requester: its bond comes back unless the task finalizes; a copier who learns k from the request
  and commits the moment k opens does not lead the requester's challenge, and its pending commit is not
  expired as moot while its request's place could still take a waiting lead share;
- the requester: the provider's sock-puppet revealing against k the moment it is opened does not take the
  lead (and the lead's share of the provider's own bond) from the requester who replays k first;
- the owner and provider: each requester's requests are bounded per batch, come only while the batch can be challenged,
  never for an opened interval, and a finalized task pays the provider the sound share of each request's bond;
- everyone: finalize waits for every request to be opened and its window to close; a commit made before a
  requested interval opened cannot be revealed against it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import (
    B_DRAWN,
    B_OPENED,
    COMMITTED,
    DEFAULTS,
    FAULTY,
    KEEPER_BPS,
    LEAD,
    MAX_REQUESTS_PER_BATCH,
    OWNER_SHARE,
    SHARES,
    SLASHED,
    Evidence,
    commit_challenge,
    reveal,
    sampled_intervals,
    settle,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")
OPENING_WINDOW, CHALLENGE_WINDOW, _ = DEFAULTS["windows"]
REWARD, CBOND, PBOND = DEFAULTS["reward"], DEFAULTS["challengerBond"], DEFAULTS["providerBond"]
R_NONE, R_PENDING, R_OPENED, R_SETTLED = range(4)


def unsampled(tasks: Any, ev: Evidence, j: int) -> list[int]:
    """Batch j's intervals its sample left unopened, ascending."""
    return [k for k in ev.batch_intervals(j) if k not in sampled_intervals(tasks, ev.task, j)]


@pytest.fixture
def opened(opened_task: Callable[..., tuple[int, Evidence]]) -> tuple[int, Evidence]:
    """The default task (half of each batch sampled), every batch opened: challenge windows run."""
    return opened_task()


def request(tasks: Any, task: int, k: int, who: Any) -> Any:
    return tasks.requestOpening(task, k, sender=who, value=CBOND)


def test_a_request_escrows_the_bond_and_blocks_finalize_until_opened_then_pays_the_provider_at_finalize(
    tasks: Any, opened: tuple[int, Evidence], watcher: Any, provider: Any, keeper: Any, owner: Any, chain: Any
) -> None:
    task, ev = opened
    k = unsampled(tasks, ev, ev.batches - 1)[0]  # the last batch's: its window closes last
    held = tasks.getTask(task).heldBonds
    chain.pending_timestamp = tasks.getBatch(task, ev.batches - 1).windowEnd - 1
    tx = request(tasks, task, k, watcher)
    open_by = chain.blocks[tx.block_number].timestamp + OPENING_WINDOW
    r = tasks.getRequest(task, k)
    assert (r.requester, r.openBy, r.openedAt, r.status) == (watcher.address, open_by, 0, R_PENDING)
    assert r.seq == tasks.commitCount()  # a place in the commit order
    assert [(e.task, e.k, e.requester, e.openBy) for e in tx.events.filter(tasks.OpeningRequested)] == [
        (task, k, watcher.address, open_by)
    ]
    t = tasks.getTask(task)
    assert (t.heldBonds, t.unopenedRequests, tasks.getBatch(task, ev.batches - 1).requestCount) == (held + CBOND, 1, 1)
    assert tasks.challengeWindowEnd(task, k) == 0  # not challengeable yet

    chain.pending_timestamp = t.challengeEnd  # every batch's window has closed; k's opening window has not
    with ape.reverts(tasks.RequestsNotOpened, task=task, unopened=1):
        tasks.finalize(task, sender=keeper)

    tx = tasks.openRequested(task, "bafyrequested", ev.opening(k), sender=provider)
    at = chain.blocks[tx.block_number].timestamp
    (opened_event,) = tx.events.filter(tasks.IntervalOpened)
    assert (opened_event.k, bytes(opened_event.startDigest), bytes(opened_event.endDigest)) == (
        k,
        ev.start_digest(k),
        ev.digest(k),
    )
    assert [(e.k, e.openingCID, e.challengeWindowEnd) for e in tx.events.filter(tasks.RequestOpened)] == [
        (k, "bafyrequested", at + CHALLENGE_WINDOW)
    ]
    r = tasks.getRequest(task, k)
    assert (r.openedAt, r.status) == (at, R_OPENED)
    assert tasks.getBatch(task, ev.batches - 1).openedBitmap >> (k % ev.per_batch) & 1 == 1
    assert tasks.getTask(task).challengeEnd == at + CHALLENGE_WINDOW == tasks.challengeWindowEnd(task, k)
    with ape.reverts(tasks.ChallengeWindowOpen, task=task, closesAt=at + CHALLENGE_WINDOW):
        tasks.finalize(task, sender=keeper)  # the requested interval keeps its whole window
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=COMMITTED):
        tasks.settleRequest(task, k, sender=keeper)  # whether the opening stood is not known yet

    chain.pending_timestamp = at + CHALLENGE_WINDOW
    tasks.finalize(task, sender=keeper)
    assert tasks.credits(provider) == REWARD + PBOND
    burned = tasks.burned()
    tx = tasks.settleRequest(task, k, sender=keeper)
    assert [(e.requester, e.refunded) for e in tx.events.filter(tasks.RequestSettled)] == [(watcher.address, False)]
    provider_share = CBOND * SHARES[3] // 10_000
    assert tasks.credits(provider) == REWARD + PBOND + provider_share
    assert tasks.burned() - burned == CBOND - provider_share  # no panel: its share burns with the rest
    assert tasks.credits(watcher) == tasks.credits(owner) == 0
    assert tasks.getTask(task).heldBonds == held
    with ape.reverts(tasks.NoRequest, task=task, k=k):
        tasks.settleRequest(task, k, sender=keeper)


def test_requests_are_refused_for_opened_or_absent_intervals_beyond_the_limit_or_the_window(
    tasks: Any, opened: tuple[int, Evidence], watcher: Any, watcher2: Any, chain: Any
) -> None:
    task, ev = opened
    sampled = sampled_intervals(tasks, task, 0)[0]
    with ape.reverts(tasks.NotRequestable, task=task, k=sampled):
        request(tasks, task, sampled, watcher)
    beyond = ev.intervals  # in the last batch's range of positions, past K
    assert beyond // ev.per_batch == ev.batches - 1
    with ape.reverts(tasks.NotRequestable, task=task, k=beyond):
        request(tasks, task, beyond, watcher)
    with ape.reverts(tasks.WrongBatchStatus):
        request(tasks, task, ev.batches * ev.per_batch, watcher)  # a batch that does not exist
    free = unsampled(tasks, ev, 0)
    assert len(free) == 2 == MAX_REQUESTS_PER_BATCH  # half of 4 sampled
    with ape.reverts(tasks.WrongBond, expected=CBOND, given=CBOND - 1):
        tasks.requestOpening(task, free[0], sender=watcher, value=CBOND - 1)
    request(tasks, task, free[0], watcher)
    with ape.reverts(tasks.NotRequestable, task=task, k=free[0]):
        request(tasks, task, free[0], watcher2)  # once
    request(tasks, task, free[1], watcher2)
    assert tasks.getBatch(task, 0).requestCount == 2
    assert (tasks.requestsBy(task, 0, watcher), tasks.requestsBy(task, 0, watcher2)) == (1, 1)
    chain.pending_timestamp = tasks.getBatch(task, 1).windowEnd
    k = unsampled(tasks, ev, 1)[0]
    with ape.reverts(tasks.BatchWindowClosed, task=task, j=1, closedAt=tasks.getBatch(task, 1).windowEnd):
        request(tasks, task, k, watcher)


def test_each_requester_asks_at_most_max_requests_per_batch_so_sock_puppets_cannot_fill_it_for_others(
    tasks: Any, opened_task: Callable[..., tuple[int, Evidence]], watcher: Any, watcher2: Any
) -> None:
    task, ev = opened_task(sampleBps=2500)  # one interval of four sampled: three are free
    free = unsampled(tasks, ev, 0)
    assert len(free) == 3
    for k in free[:MAX_REQUESTS_PER_BATCH]:  # a provider's sock-puppet asks first, for honest intervals
        request(tasks, task, k, watcher2)
    with ape.reverts(tasks.TooManyRequests, task=task, j=0, maximum=MAX_REQUESTS_PER_BATCH):
        request(tasks, task, free[2], watcher2)
    request(tasks, task, free[2], watcher)  # the watcher who found the fake still asks for it
    assert tasks.getRequest(task, free[2]).requester == watcher.address
    assert tasks.getBatch(task, 0).requestCount == 3


def test_a_batch_not_opened_yet_takes_no_request(
    tasks: Any, accepted_task: int, evidence: Any, commit: Any, draw: Any, watcher: Any
) -> None:
    ev = evidence(accepted_task)
    commit(ev)
    draw(accepted_task, 0)
    with ape.reverts(tasks.WrongBatchStatus, task=accepted_task, j=0, status=B_DRAWN):
        request(tasks, accepted_task, 1, watcher)


def test_only_the_provider_opens_within_the_window_with_the_committed_digests(
    tasks: Any, opened: tuple[int, Evidence], watcher: Any, provider: Any, chain: Any
) -> None:
    task, ev = opened
    k = unsampled(tasks, ev, 1)[0]
    with ape.reverts(tasks.NoRequest, task=task, k=k):
        tasks.openRequested(task, "bafy", ev.opening(k), sender=provider)
    request(tasks, task, k, watcher)
    with ape.reverts(tasks.NotProvider, task=task, caller=watcher.address):
        tasks.openRequested(task, "bafy", ev.opening(k), sender=watcher)
    forged = list(ev.opening(k))
    forged[2] = b"\x66" * 32  # another end digest than the committed one
    with ape.reverts(tasks.InvalidProof, task=task, k=k):
        tasks.openRequested(task, "bafy", tuple(forged), sender=provider)
    open_by = tasks.getRequest(task, k).openBy
    chain.pending_timestamp = open_by
    with ape.reverts(tasks.RequestWindow, task=task, k=k, openBy=open_by):
        tasks.openRequested(task, "bafy", ev.opening(k), sender=provider)


def test_a_request_left_unopened_slashes_the_task_and_refunds_the_requester(
    tasks: Any, opened: tuple[int, Evidence], watcher: Any, watcher2: Any, keeper: Any, owner: Any, chain: Any
) -> None:
    task, ev = opened
    k = unsampled(tasks, ev, 2)[0]  # the last batch: its one unsampled interval
    other = unsampled(tasks, ev, 0)[0]
    request(tasks, task, k, watcher)
    request(tasks, task, other, watcher2)
    open_by = tasks.getRequest(task, k).openBy
    with ape.reverts(tasks.RequestWindow, task=task, k=k, openBy=open_by):
        tasks.slashUnopenedRequest(task, k, sender=keeper)
    chain.pending_timestamp = open_by
    pending = commit_challenge(tasks, task, 0, watcher2)
    with ape.reverts(tasks.ChallengePending, task=task, commits=1):
        tasks.slashUnopenedRequest(task, k, sender=keeper)  # a challenge decides first
    chain.pending_timestamp = chain.pending_timestamp + DEFAULTS["windows"][2]
    tasks.expireChallenge(task, watcher2.address, pending, sender=keeper)  # never revealed: burned
    tx = tasks.slashUnopenedRequest(task, k, sender=keeper)
    # The keeper's share is the requester's, whoever calls: a provider's sock-puppet calling at openBy gains nothing.
    assert [(e.task, e.j, e.by, e.dispute) for e in tx.events.filter(tasks.TaskSlashed)] == [
        (task, k // ev.per_batch, watcher.address, 0)
    ]
    assert [(e.k, e.refunded) for e in tx.events.filter(tasks.RequestSettled)] == [(k, True)]
    keeper_share = PBOND * KEEPER_BPS // 10_000
    assert tasks.getTask(task).status == SLASHED
    assert tasks.credits(keeper) == 0
    assert tasks.credits(owner) == REWARD + PBOND - keeper_share
    assert tasks.credits(watcher) == CBOND + keeper_share
    assert tasks.getRequest(task, k).status == R_SETTLED
    tasks.settleRequest(task, other, sender=keeper)  # the task did not finalize: refunded
    assert tasks.credits(watcher2) == CBOND
    assert tasks.getTask(task).heldBonds == 0


def test_a_requested_interval_is_challenged_and_its_requester_leads_a_copier_who_committed_first(
    tasks: Any,
    opened: tuple[int, Evidence],
    watcher: Any,
    watcher2: Any,
    provider: Any,
    keeper: Any,
    owner: Any,
    chain: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    task, ev = opened
    k = unsampled(tasks, ev, 1)[0]
    request(tasks, task, k, watcher)
    early = commit_challenge(tasks, task, k, watcher2, salt=b"\x02" * 32)  # before k is opened
    chain.pending_timestamp = chain.blocks.head.timestamp + 1  # a later second (the same one is within k's window)
    tasks.openRequested(task, "bafyrequested", ev.opening(k), sender=provider)
    with ape.reverts(tasks.IntervalWindowNotOpen):
        reveal(tasks, task, k, watcher2, salt=b"\x02" * 32)
    # The copier saw the request and commits the moment k opens; the requester commits after its replay.
    commit_challenge(tasks, task, k, watcher2, salt=b"\x03" * 32)
    commit_challenge(tasks, task, k, watcher)
    dispute = reveal(tasks, task, k, watcher2, salt=b"\x03" * 32)
    assert reveal(tasks, task, k, watcher) == dispute
    assert tasks.getOpenedInterval(task, k).lead == watcher.address
    assert tasks.getOpenedInterval(task, k).leadSeq == tasks.getRequest(task, k).seq
    chain.pending_timestamp = chain.pending_timestamp + DEFAULTS["windows"][2]
    tasks.expireChallenge(task, watcher2.address, early, sender=keeper)
    decide(dispute, FAULTY)
    assert tasks.getTask(task).status == SLASHED
    assert tasks.credits(watcher) == LEAD
    assert tasks.credits(owner) == OWNER_SHARE + REWARD
    tasks.settleRequest(task, k, sender=keeper)
    assert tasks.credits(watcher) == LEAD + CBOND  # the request's bond back: the task did not finalize


def test_a_requested_interval_opened_after_its_batch_s_window_keeps_a_whole_window_of_its_own(
    tasks: Any,
    opened: tuple[int, Evidence],
    watcher: Any,
    provider: Any,
    chain: Any,
    panel_of_three: list[Any],
) -> None:
    task, ev = opened
    k = unsampled(tasks, ev, 0)[0]
    batch_end = tasks.getBatch(task, 0).windowEnd
    chain.pending_timestamp = batch_end - 1
    request(tasks, task, k, watcher)
    chain.pending_timestamp = batch_end + 10
    tx = tasks.openRequested(task, "bafyrequested", ev.opening(k), sender=provider)
    at = chain.blocks[tx.block_number].timestamp
    assert tasks.getBatch(task, 0).status == B_OPENED
    assert tasks.challengeWindowEnd(task, k) == at + CHALLENGE_WINDOW
    chain.pending_timestamp = at + CHALLENGE_WINDOW - 1
    commit_challenge(tasks, task, k, watcher)
    assert reveal(tasks, task, k, watcher) != 0  # after the batch's window, within k's own


def test_the_requester_leads_the_provider_s_sock_puppet_that_reveals_the_moment_k_opens(
    tasks: Any,
    opened: tuple[int, Evidence],
    watcher: Any,
    watcher2: Any,
    provider: Any,
    chain: Any,
    panel_of_three: list[Any],
) -> None:
    """The provider opens its faked k and its sock-puppet (watcher2) challenges k at once, to win back the lead's
    share of its own bond; the requester replays k first and commits later in k's first window: it leads."""
    task, ev = opened
    k = unsampled(tasks, ev, 1)[0]
    request(tasks, task, k, watcher)
    tx = tasks.openRequested(task, "bafyrequested", ev.opening(k), sender=provider)
    first_end = chain.blocks[tx.block_number].timestamp + CHALLENGE_WINDOW
    commit_challenge(tasks, task, k, watcher2)
    dispute = reveal(tasks, task, k, watcher2)
    chain.pending_timestamp = first_end - 1  # the requester's replay took the whole window
    commit_challenge(tasks, task, k, watcher)
    assert reveal(tasks, task, k, watcher) == dispute
    iv = tasks.getOpenedInterval(task, k)
    assert (iv.lead, iv.leadSeq) == (watcher.address, tasks.getRequest(task, k).seq)


def test_a_requester_s_pending_commit_is_not_expired_as_moot_while_its_request_could_take_the_lead_share(
    tasks: Any,
    committee: Any,
    opened_task: Callable[..., tuple[int, Evidence]],
    watcher: Any,
    watcher2: Any,
    provider: Any,
    keeper: Any,
    panel_of_three: list[Any],
    draw_panel: Any,
    vote: Any,
) -> None:
    # The longest reveal window (MAX_REVEAL_WINDOW): the requester's commit still reveals after the slash.
    task, ev = opened_task(windows=(3600, 7200, 3600), replaySeconds=30)
    k = unsampled(tasks, ev, 1)[0]
    other = sampled_intervals(tasks, task, 1)[0]
    request(tasks, task, k, watcher)
    request_seq = tasks.getRequest(task, k).seq
    assert tasks.firstRequestSeq(task, watcher) == request_seq
    tasks.openRequested(task, "bafyrequested", ev.opening(k), sender=provider)
    commit_challenge(tasks, task, other, watcher2)  # another fault, committed after the request
    dispute = reveal(tasks, task, other, watcher2)
    vote(dispute, dict.fromkeys(draw_panel(dispute), FAULTY))
    pending = commit_challenge(tasks, task, k, watcher)  # the requester's replay of k ends during the vote
    settle(committee, dispute, keeper)  # slashed; the lead's share waits for the pending commit
    t = tasks.getTask(task)
    assert t.status == SLASHED and request_seq < t.waitingLeadSeq < tasks.getCommit(watcher, pending).seq
    reveal_by = tasks.getCommit(watcher, pending).committedAt + 3600
    with ape.reverts(tasks.RevealWindowOpen, commitment=pending, revealBy=reveal_by):
        tasks.expireChallenge(task, watcher.address, pending, sender=keeper)  # not moot: it may lead still
    assert reveal(tasks, task, k, watcher) != 0
    assert tasks.getOpenedInterval(task, k).leadSeq == request_seq
