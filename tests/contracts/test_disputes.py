"""TrainingTasks: challenges (commit, reveal, expiry), dispute payouts to the wei, moot disputes and the
clocks that wait for them (protocol 4.1, 4.2, 4.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import (
    ACCEPTED,
    AUDITOR_STAKE,
    AWAITING_PANEL,
    C_EXPIRED,
    C_JOINED,
    C_PENDING,
    C_SETTLED,
    COMMITTED,
    DEFAULTS,
    FAULTY,
    FINALIZED,
    LEAD,
    MOOT,
    NO_DECISION,
    OUT_OF_BOUNDS,
    OWNER_SHARE,
    RESOLVED,
    SLASHED,
    UNAVAILABLE,
    VALID,
    Evidence,
    challenge_commitment,
    commit_challenge,
    opened_digests,
    sampled_intervals,
    settle,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")
REWARD, BOND, CBOND = DEFAULTS["reward"], DEFAULTS["providerBond"], DEFAULTS["challengerBond"]
_, CHALLENGE_WINDOW, REVEAL_WINDOW = DEFAULTS["windows"]
SALT = b"\x07" * 32


def snap(tasks: Any, task: int, commitment: bytes = b"\x00" * 32, who: Any = None) -> tuple:
    """Everything a reverted call must leave as it was."""
    sender = who.address if who is not None else "0x" + "00" * 20
    return tasks.getTask(task), tasks.getCommit(sender, commitment), tasks.balance, tasks.burned()


def decide(dispute: int, verdict: int, draw_panel: Any, vote: Any, committee: Any, keeper: Any) -> list[str]:
    """Draw the panel, have every panelist vote `verdict`, resolve; returns the panel."""
    panel = draw_panel(dispute)
    vote(dispute, dict.fromkeys(panel, verdict))
    settle(committee, dispute, keeper)
    return panel


# --- commitChallenge -----------------------------------------------------------------------------


def test_commit_challenge_escrows_the_bond(tasks: Any, all_sampled: tuple[int, Evidence], watcher: Any, chain: Any):
    task, _ = all_sampled
    balance = tasks.balance
    commitment = challenge_commitment(task, 5, OUT_OF_BOUNDS, SALT, watcher.address)
    tx = tasks.commitChallenge(task, commitment, sender=watcher, value=CBOND)
    now = chain.blocks.head.timestamp
    seq = tasks.commitCount()
    assert [(e.task, bytes(e.commitment), e.challenger, e.seq, e.revealBy) for e in tx.events] == [
        (task, commitment, watcher.address, seq, now + REVEAL_WINDOW)
    ]
    c = tasks.getCommit(watcher.address, commitment)
    assert (c.task, c.seq, c.committedAt, c.status, c.dispute) == (task, seq, now, C_PENDING, 0)
    assert (tasks.getTask(task).pendingCommits, tasks.getTask(task).heldBonds) == (1, CBOND)
    assert tasks.balance == balance + CBOND


def test_commit_challenge_with_wrong_bond_or_twice_reverts(
    tasks: Any, all_sampled: tuple[int, Evidence], watcher: Any, watcher2: Any
) -> None:
    task, _ = all_sampled
    commitment = challenge_commitment(task, 5, OUT_OF_BOUNDS, SALT, watcher.address)
    before = snap(tasks, task, commitment, watcher)
    for value in (CBOND - 1, CBOND + 1, 0):
        with ape.reverts(tasks.WrongBond, expected=CBOND, sent=value):
            tasks.commitChallenge(task, commitment, sender=watcher, value=value)
    assert snap(tasks, task, commitment, watcher) == before
    tasks.commitChallenge(task, commitment, sender=watcher, value=CBOND)
    # The same sender twice is told to commit with a fresh salt (another sender's copy is its own commit:
    # test_dispute_attacks).
    before = snap(tasks, task, commitment, watcher)
    with ape.reverts(tasks.CommitmentExists, commitment=commitment):
        tasks.commitChallenge(task, commitment, sender=watcher, value=CBOND)
    assert snap(tasks, task, commitment, watcher) == before


def test_commit_challenge_outside_every_window_reverts(
    tasks: Any,
    accepted_task: int,
    evidence: Callable[[int], Evidence],
    commit: Any,
    draw: Any,
    open_batch: Any,
    watcher: Any,
    chain: Any,
    post_task: Callable[..., int],
) -> None:
    ev = evidence(accepted_task)
    commit(ev)
    commitment = challenge_commitment(ev.task, 0, OUT_OF_BOUNDS, SALT, watcher.address)
    # Nothing opened yet: no window.
    with ape.reverts(tasks.NoChallengeWindowOpen, task=ev.task, closedAt=0):
        tasks.commitChallenge(ev.task, commitment, sender=watcher, value=CBOND)
    for j in range(ev.batches):
        draw(ev.task, j)
        open_batch(ev, j)
    end = tasks.getTask(ev.task).challengeEnd
    chain.pending_timestamp = end - 1  # the last second of the window
    tasks.commitChallenge(ev.task, commitment, sender=watcher, value=CBOND)
    late = challenge_commitment(ev.task, 1, OUT_OF_BOUNDS, SALT, watcher.address)
    chain.pending_timestamp = end
    before = snap(tasks, ev.task, late, watcher)
    with ape.reverts(tasks.NoChallengeWindowOpen, task=ev.task, closedAt=end):
        tasks.commitChallenge(ev.task, late, sender=watcher, value=CBOND)
    assert snap(tasks, ev.task, late, watcher) == before
    posted = post_task()
    with ape.reverts(tasks.WrongTaskStatus, task=posted, status=1):
        tasks.commitChallenge(posted, late, sender=watcher, value=CBOND)


# --- revealChallenge ----------------------------------------------------------------------------


def test_reveal_opens_a_dispute_with_the_committee(
    tasks: Any, committee: Any, all_sampled: tuple[int, Evidence], watcher: Any, owner: Any, provider: Any, chain: Any
) -> None:
    task, _ = all_sampled
    commitment = commit_challenge(tasks, task, 4, watcher, UNAVAILABLE)
    tx = tasks.revealChallenge(task, 4, UNAVAILABLE, SALT, "bafyreport", sender=watcher)
    revealed = next(iter(tx.events.filter(tasks.ChallengeRevealed)))
    assert (revealed.task, bytes(revealed.commitment), revealed.challenger, revealed.k) == (
        task,
        commitment,
        watcher.address,
        4,
    )
    assert (revealed.reason, revealed.reportCID, revealed.dispute) == (UNAVAILABLE, "bafyreport", 1)
    assert tasks.getCommit(watcher.address, commitment).status == C_JOINED
    t = tasks.getTask(task)
    assert (t.pendingCommits, t.openDisputes) == (0, 1)
    record = tasks.getDispute(1)
    assert (record.task, record.k, record.joined, record.open, record.verdict) == (task, 4, 1, True, 0)
    iv = tasks.getOpenedInterval(task, 4)
    assert (iv.dispute, iv.lead) == (1, watcher.address)
    opened = [(e.dispute, e.task, e.k, e.reason) for e in tx.events.filter(tasks.DisputeOpened)]
    assert opened == [(1, task, 4, UNAVAILABLE)]
    d = committee.getDispute(1)  # read from the task contract's record until the committee takes it up
    assert (d.task, d.status, d.round, d.armBlock, d.roundStartedAt) == (
        task,
        AWAITING_PANEL,
        0,
        tx.block_number,
        tx.timestamp,
    )
    # Never on its panel: the owner, the provider, and whoever committed on the task up to the arm block.
    assert [tasks.isInterested(task, a, tx.block_number) for a in (provider, owner, watcher)] == [True] * 3
    assert tasks.disputeCount() == 1


def test_reveal_by_another_sender_or_with_wrong_fields_reverts(
    tasks: Any, all_sampled: tuple[int, Evidence], watcher: Any, watcher2: Any
) -> None:
    task, _ = all_sampled
    commitment = commit_challenge(tasks, task, 5, watcher)
    before = snap(tasks, task, commitment, watcher)
    # A copier replaying the reveal hashes in its own address: no such commit.
    copied = challenge_commitment(task, 5, OUT_OF_BOUNDS, SALT, watcher2.address)
    with ape.reverts(tasks.UnknownCommitment, task=task, commitment=copied):
        tasks.revealChallenge(task, 5, OUT_OF_BOUNDS, SALT, "r", sender=watcher2)
    wrong_k = challenge_commitment(task, 6, OUT_OF_BOUNDS, SALT, watcher.address)
    with ape.reverts(tasks.UnknownCommitment, task=task, commitment=wrong_k):
        tasks.revealChallenge(task, 6, OUT_OF_BOUNDS, SALT, "r", sender=watcher)
    assert snap(tasks, task, commitment, watcher) == before


@pytest.mark.parametrize("reason", [0, 3])
def test_reveal_with_unknown_reason_reverts(
    tasks: Any, all_sampled: tuple[int, Evidence], watcher: Any, reason: int
) -> None:
    task, _ = all_sampled
    commitment = commit_challenge(tasks, task, 5, watcher, reason)
    before = snap(tasks, task, commitment, watcher)
    with ape.reverts(tasks.InvalidReason, reason=reason):
        tasks.revealChallenge(task, 5, reason, SALT, "r", sender=watcher)
    assert snap(tasks, task, commitment, watcher) == before


def test_reveal_after_its_window_reverts_and_the_commit_expires_burned(
    tasks: Any, all_sampled: tuple[int, Evidence], watcher: Any, keeper: Any, chain: Any
) -> None:
    task, _ = all_sampled
    commitment = commit_challenge(tasks, task, 5, watcher)
    reveal_by = tasks.getCommit(watcher.address, commitment).committedAt + REVEAL_WINDOW
    with ape.reverts(tasks.RevealWindowOpen, commitment=commitment, closesAt=reveal_by):
        tasks.expireChallenge(task, watcher.address, commitment, sender=keeper)
    chain.pending_timestamp = reveal_by
    before = snap(tasks, task, commitment, watcher)
    with ape.reverts(tasks.RevealWindowClosed, commitment=commitment, closedAt=reveal_by):
        tasks.revealChallenge(task, 5, OUT_OF_BOUNDS, SALT, "r", sender=watcher)
    assert snap(tasks, task, commitment, watcher) == before
    tx = tasks.expireChallenge(task, watcher.address, commitment, sender=keeper)
    assert [
        (e.task, bytes(e.commitment), e.challenger, e.refunded) for e in tx.events.filter(tasks.ChallengeExpired)
    ] == [(task, commitment, watcher.address, False)]
    assert tasks.burned() == CBOND
    assert tasks.getCommit(watcher.address, commitment).status == C_EXPIRED
    assert tasks.getTask(task).pendingCommits == 0
    assert tasks.credits(watcher) == 0
    with ape.reverts(tasks.UnknownCommitment, task=task, commitment=commitment):
        tasks.expireChallenge(task, watcher.address, commitment, sender=keeper)


def test_reveal_of_an_unsampled_interval_reverts(
    tasks: Any, opened_task: Callable[..., tuple[int, Evidence]], watcher: Any
) -> None:
    task, ev = opened_task()
    sampled = {k for j in range(ev.batches) for k in sampled_intervals(tasks, task, j)}
    unsampled = next(k for k in range(ev.intervals) if k not in sampled)
    commitment = commit_challenge(tasks, task, unsampled, watcher)
    before = snap(tasks, task, commitment, watcher)
    with ape.reverts(tasks.IntervalNotOpened, task=task, k=unsampled):
        tasks.revealChallenge(task, unsampled, OUT_OF_BOUNDS, SALT, "r", sender=watcher)
    assert snap(tasks, task, commitment, watcher) == before
    out_of_range = commit_challenge(tasks, task, 10_000, watcher)
    with ape.reverts(tasks.IntervalNotOpened, task=task, k=10_000):
        tasks.revealChallenge(task, 10_000, OUT_OF_BOUNDS, SALT, "r", sender=watcher)
    assert tasks.getCommit(watcher.address, out_of_range).status == C_PENDING


def test_reveal_of_an_unopened_batch_or_closed_window_reverts(
    tasks: Any,
    post_task: Callable[..., int],
    provider: Any,
    evidence: Callable[[int], Evidence],
    commit: Any,
    draw: Any,
    open_batch: Any,
    watcher: Any,
    chain: Any,
) -> None:
    """Batch 0 is opened and its window closes; batch 1 opens later: a commit in batch 1's window can
    challenge batch 1 only, and batch 2 (drawn, not opened) not at all."""
    task = post_task(sampleBps=10_000)
    tasks.acceptTask(task, sender=provider, value=BOND)
    ev = evidence(task)
    commit(ev)
    draw(task, 0)
    open_batch(ev, 0)
    end0 = tasks.getBatch(task, 0).windowEnd
    chain.pending_timestamp = end0
    draw(task, 1)
    open_batch(ev, 1)
    draw(task, 2)
    late = commit_challenge(tasks, task, 2, watcher)
    with ape.reverts(tasks.IntervalWindowClosed, task=task, k=2, closedAt=end0):
        tasks.revealChallenge(task, 2, OUT_OF_BOUNDS, SALT, "r", sender=watcher)
    unopened = commit_challenge(tasks, task, 8, watcher)
    with ape.reverts(tasks.IntervalNotOpened, task=task, k=8):
        tasks.revealChallenge(task, 8, OUT_OF_BOUNDS, SALT, "r", sender=watcher)
    assert [tasks.getCommit(watcher.address, c).status for c in (late, unopened)] == [C_PENDING] * 2
    ok = commit_challenge(tasks, task, 5, watcher)
    tasks.revealChallenge(task, 5, OUT_OF_BOUNDS, SALT, "r", sender=watcher)
    assert tasks.getCommit(watcher.address, ok).status == C_JOINED
    assert tasks.getOpenedInterval(task, 5).dispute == 1


def test_second_reveal_for_a_disputed_interval_joins_it(
    tasks: Any, all_sampled: tuple[int, Evidence], watcher: Any, watcher2: Any, challenge: Any
) -> None:
    task, _ = all_sampled
    assert challenge(task, 5, watcher) == 1
    joined = commit_challenge(tasks, task, 5, watcher2, UNAVAILABLE)
    tx = tasks.revealChallenge(task, 5, UNAVAILABLE, SALT, "r2", sender=watcher2)  # another reason: same question
    assert [e.dispute for e in tx.events.filter(tasks.ChallengeRevealed)] == [1]
    assert tasks.credits(watcher2) == 0
    assert tasks.getCommit(watcher2.address, joined).status == C_JOINED
    assert tasks.getDispute(1).joined == 2
    assert tasks.getOpenedInterval(task, 5).lead == watcher.address  # the earlier commit keeps the lead
    t = tasks.getTask(task)
    assert (t.openDisputes, t.pendingCommits, t.heldBonds) == (1, 0, 2 * CBOND)


def test_settle_dispute_only_by_the_adjudicator(
    tasks: Any, all_sampled: tuple[int, Evidence], watcher: Any, owner: Any, challenge: Any
) -> None:
    task, _ = all_sampled
    dispute = challenge(task, 5, watcher)
    before = snap(tasks, task)
    with ape.reverts(tasks.NotAdjudicator, caller=owner.address):
        tasks.settleDispute(dispute, (FAULTY, 0), sender=owner)
    assert snap(tasks, task) == before


# --- verdicts and payouts ------------------------------------------------------------------------


def test_faulty_lifecycle_pays_every_party_to_the_wei(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    owner: Any,
    provider: Any,
    keeper: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
    balance_invariant: Callable[..., None],
) -> None:
    """Interval 4 starts from the last leaf of batch 0: its opening proved that against root 0."""
    task, ev = all_sampled
    assert opened_digests(tasks, task, 4)[0] == ev.digest(3)
    assert opened_digests(tasks, task, 0)[0] == ev.init_digest
    dispute = challenge(task, 4, watcher)
    balance_invariant()
    panel = decide(dispute, FAULTY, draw_panel, vote, committee, keeper)
    assert sorted(panel) == sorted(a.address for a in panel_of_three)
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict) == (RESOLVED, FAULTY)
    assert tasks.getTask(task).status == SLASHED
    # Provider bond 3 ETH: 20% lead, 10% panel (3 x 0.1), 70% owner; owner also gets the reward; the lead's
    # joined bond is claimed back.
    assert tasks.credits(watcher) == LEAD
    commitment = challenge_commitment(task, 4, OUT_OF_BOUNDS, b"\x07" * 32, watcher.address)
    tasks.claimBond(task, watcher.address, commitment, sender=keeper)
    assert tasks.credits(watcher) == LEAD + CBOND
    for panelist in panel_of_three:  # the panel's 10% goes to the committee, which pays the seats
        assert committee.credits(panelist) == BOND * 1_000 // 10_000 // 3
        assert committee.getAuditor(panelist).openSeats == 0
        assert committee.getAuditor(panelist).stake == AUDITOR_STAKE
    assert tasks.credits(owner) == OWNER_SHARE + REWARD
    assert tasks.credits(provider) == 0
    assert tasks.burned() == 0
    assert not tasks.getDispute(dispute).open and committee.getDispute(dispute).status == RESOLVED
    balance_invariant()
    # Everybody pulls; the contract keeps nothing but `burned`.
    for who in (watcher, owner):
        before = who.balance
        receipt = tasks.withdraw(sender=who)
        assert who.balance == before + receipt.events[0].amount - receipt.total_fees_paid
    assert tasks.balance == tasks.burned() == 0
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=SLASHED):
        tasks.finalize(task, sender=keeper)


def test_faulty_panel_share_dust_is_burned(
    project: Any,
    owner: Any,
    committee: Any,
    post_task: Callable[..., int],
    provider: Any,
    evidence: Callable[[int], Evidence],
    commit: Any,
    draw: Any,
    open_batch: Any,
    watcher: Any,
    keeper: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
    tasks: Any,
) -> None:
    bond = 10**18 + 7  # 10% = 100000000000000000 (floored from ...0.7); /3 leaves 1 wei of dust
    task = post_task(sampleBps=10_000, providerBond=bond)
    tasks.acceptTask(task, sender=provider, value=bond)
    ev = evidence(task)
    commit(ev)
    for j in range(ev.batches):
        draw(task, j)
        open_batch(ev, j)
    dispute = challenge(task, 9, watcher)
    decide(dispute, FAULTY, draw_panel, vote, committee, keeper)
    to_challenger, to_panel = bond * 2_000 // 10_000, bond * 1_000 // 10_000
    assert tasks.credits(watcher) == to_challenger
    assert tasks.credits(owner) == bond - to_challenger - to_panel + REWARD
    assert [committee.credits(a) for a in panel_of_three] == [to_panel // 3] * 3
    assert committee.burned() == to_panel - 3 * (to_panel // 3) == 1 and tasks.burned() == 0


def test_sound_verdict_pays_provider_and_makes_the_interval_final(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    watcher2: Any,
    provider: Any,
    keeper: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
    chain: Any,
) -> None:
    task, _ = all_sampled
    dispute = challenge(task, 2, watcher)
    decide(dispute, VALID, draw_panel, vote, committee, keeper)
    assert committee.getDispute(dispute).verdict == VALID
    assert tasks.getTask(task).status == COMMITTED
    to_provider, to_panel = CBOND * 5_000 // 10_000, CBOND * 1_000 // 10_000
    assert tasks.credits(provider) == to_provider
    assert [committee.credits(a) for a in panel_of_three] == [to_panel // 3] * 3
    assert tasks.burned() == CBOND - to_provider - to_panel
    assert committee.burned() == to_panel - 3 * (to_panel // 3)
    assert tasks.credits(watcher) == 0
    assert tasks.getOpenedInterval(task, 2).sound
    # A challenge of the same interval committed after the verdict cannot be revealed: k is final.
    late = commit_challenge(tasks, task, 2, watcher2)
    with ape.reverts(tasks.IntervalFinal, task=task, k=2):
        tasks.revealChallenge(task, 2, OUT_OF_BOUNDS, SALT, "r", sender=watcher2)
    chain.pending_timestamp = tasks.getCommit(watcher2.address, late).committedAt + REVEAL_WINDOW
    tasks.expireChallenge(task, watcher2.address, late, sender=keeper)
    assert tasks.burned() == 2 * CBOND - to_provider - to_panel
    chain.pending_timestamp = tasks.getTask(task).challengeEnd
    tasks.finalize(task, sender=keeper)
    assert tasks.getTask(task).status == FINALIZED
    assert tasks.credits(provider) == to_provider + REWARD + BOND


def test_sound_verdict_on_an_unavailable_challenge_settles_its_bond_alike(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    provider: Any,
    keeper: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
) -> None:
    """v1 refunded an `unavailable` challenge found available and extended the window: the cheaper reason
    was every junk challenge's choice, and a provider's own such challenge shielded its fault. The bond is lost
    whole, as an out-of-bounds one; only the provider's half of it is burned (withholding as bait pays nothing)."""
    task, _ = all_sampled
    batch_end = tasks.challengeWindowEnd(task, 6)
    dispute = challenge(task, 6, watcher, UNAVAILABLE)
    burned = tasks.burned()
    decide(dispute, VALID, draw_panel, vote, committee, keeper)
    assert tasks.credits(watcher) == 0
    assert tasks.credits(provider) == 0
    assert tasks.burned() == burned + CBOND * 9_000 // 10_000
    assert tasks.getOpenedInterval(task, 6).sound
    assert tasks.challengeWindowEnd(task, 6) == batch_end  # no extension
    assert tasks.getTask(task).heldBonds == 0


def test_no_decision_refunds_the_challenger(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    challenge: Any,
    chain: Any,
) -> None:
    """Only two auditors: no panel, and after starvationTimeout the dispute ends with no decision."""
    register(auditors[:2])
    task, _ = all_sampled
    dispute = challenge(task, 1, watcher)
    chain.pending_timestamp = committee.getDispute(dispute).roundStartedAt + committee.STARVATION_TIMEOUT()
    chain.mine(3)
    committee.rearm(dispute, sender=keeper)
    assert committee.getDispute(dispute).verdict == NO_DECISION
    assert tasks.credits(watcher) == 0
    tasks.claimBond(
        task, watcher.address, challenge_commitment(task, 1, OUT_OF_BOUNDS, SALT, watcher.address), sender=keeper
    )
    assert tasks.credits(watcher) == CBOND
    assert tasks.getTask(task).openDisputes == tasks.getTask(task).heldBonds == 0
    assert tasks.getTask(task).status == COMMITTED


# --- concurrency and moot disputes ---------------------------------------------------------------


def test_two_disputes_one_upheld_the_other_moot_and_refunded(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    owner: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
) -> None:
    task, _ = all_sampled
    first = challenge(task, 3, watcher)
    second = challenge(task, 7, watcher2)
    pending = commit_challenge(tasks, task, 8, watcher2, salt=b"\x09" * 32)
    assert tasks.getTask(task).openDisputes == 2
    # Seats held elsewhere do not matter: the same three auditors sit on both panels.
    assert sorted(draw_panel(first)) == sorted(draw_panel(second)) == sorted(a.address for a in panel_of_three)
    assert [committee.getAuditor(a).openSeats for a in panel_of_three] == [2] * 3
    vote(first, dict.fromkeys(committee.panelOf(first), FAULTY))
    settle(committee, first, keeper)
    assert tasks.getTask(task).status == SLASHED
    assert tasks.isMoot(second)
    tx = settle(committee, second, keeper)  # at once, whatever its clocks
    assert committee.getDispute(second).verdict == MOOT
    assert [e.verdict for e in tx.events.filter(tasks.DisputeSettled)] == [MOOT]
    # Released without penalty, although nobody voted on the second panel.
    assert [committee.getAuditor(a).openSeats for a in panel_of_three] == [0] * 3
    assert [committee.getAuditor(a).stake for a in panel_of_three] == [AUDITOR_STAKE] * 3
    # The pending commit is moot too: refunded at once.
    tx = tasks.expireChallenge(task, watcher2.address, pending, sender=keeper)
    assert [e.refunded for e in tx.events.filter(tasks.ChallengeExpired)] == [True]
    assert tasks.credits(watcher2) == CBOND
    tasks.claimBond(
        task, watcher2.address, challenge_commitment(task, 7, OUT_OF_BOUNDS, SALT, watcher2.address), sender=keeper
    )
    assert tasks.credits(watcher2) == 2 * CBOND
    assert tasks.credits(owner) == OWNER_SHARE + REWARD
    assert tasks.getTask(task).openDisputes == tasks.getTask(task).pendingCommits == 0


@pytest.fixture
def moot_dispute(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
) -> tuple[int, int]:
    """Intervals 1 and 2 disputed; the first is found faulty and slashes the task, so the second (still
    awaiting its panel) is moot: (task, dispute). (v2: slashUnopened waits for open disputes, so an unopened
    batch can no longer moot one.)"""
    task, _ = all_sampled
    upheld, dispute = challenge(task, 1, watcher), challenge(task, 2, watcher2)
    decide(upheld, FAULTY, draw_panel, vote, committee, keeper)
    return task, dispute


def test_a_dispute_of_a_task_slashed_by_another_is_moot(
    tasks: Any, committee: Any, moot_dispute: tuple[int, int], watcher: Any, watcher2: Any, keeper: Any, owner: Any
) -> None:
    task, dispute = moot_dispute
    assert tasks.getTask(task).status == SLASHED
    assert tasks.isMoot(dispute)
    assert tasks.getTask(task).openDisputes == 1
    # Its lead committed after the slashing dispute's lead: it cannot take the lead's share, which waits
    # only until it is resolved.
    with ape.reverts(tasks.DisputeOpen, task=task, disputes=1):
        tasks.releaseLeadShare(task, sender=keeper)
    settle(committee, dispute, keeper)  # still awaiting its panel: ends moot at once
    assert tasks.getTask(task).openDisputes == 0
    tasks.releaseLeadShare(task, sender=keeper)
    with ape.reverts(tasks.NoLeadShareWaiting, task=task):
        tasks.releaseLeadShare(task, sender=keeper)
    assert committee.getDispute(dispute).verdict == tasks.getDispute(dispute).verdict == MOOT
    tasks.claimBond(
        task, watcher2.address, challenge_commitment(task, 2, OUT_OF_BOUNDS, SALT, watcher2.address), sender=keeper
    )
    assert tasks.credits(watcher2) == CBOND
    assert tasks.credits(watcher) == LEAD
    assert tasks.credits(owner) == REWARD + OWNER_SHARE


def test_reveal_on_an_ended_task_is_refunded(
    tasks: Any,
    committee: Any,
    opened_task: Callable[..., tuple[int, Evidence]],
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
) -> None:
    # Committed while the votes on interval 3 are being revealed, revealed after they slashed the task.
    task, _ = opened_task(sampleBps=10_000)
    dispute = challenge(task, 3, watcher)
    vote(dispute, dict.fromkeys(draw_panel(dispute), FAULTY))
    late = commit_challenge(tasks, task, 2, watcher2)
    settle(committee, dispute, keeper)
    assert tasks.getTask(task).status == SLASHED
    tx = tasks.revealChallenge(task, 2, OUT_OF_BOUNDS, SALT, "r", sender=watcher2)
    assert [e.dispute for e in tx.events.filter(tasks.ChallengeRevealed)] == [0]
    assert tasks.getCommit(watcher2.address, late).status == C_SETTLED
    assert tasks.credits(watcher2) == CBOND
    assert tasks.disputeCount() == 1


# --- clocks that wait for challenges -------------------------------------------------------------


def test_finalize_waits_for_pending_commits_and_open_disputes(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    keeper: Any,
    provider: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
    chain: Any,
) -> None:
    task, _ = all_sampled
    end = tasks.getTask(task).challengeEnd
    chain.pending_timestamp = end - 10
    pending = commit_challenge(tasks, task, 9, watcher)
    chain.pending_timestamp = end
    with ape.reverts(tasks.ChallengePending, task=task, commits=1):
        tasks.finalize(task, sender=keeper)
    dispute = (
        tasks.revealChallenge(task, 9, OUT_OF_BOUNDS, SALT, "r", sender=watcher)
        .events.filter(tasks.ChallengeRevealed)[0]
        .dispute
    )
    assert tasks.getCommit(watcher.address, pending).status == C_JOINED
    with ape.reverts(tasks.DisputeOpen, task=task, disputes=1):
        tasks.finalize(task, sender=keeper)
    decide(dispute, VALID, draw_panel, vote, committee, keeper)
    tasks.finalize(task, sender=keeper)
    assert tasks.credits(provider) == REWARD + BOND + CBOND * 5_000 // 10_000


def test_abandon_waits_for_an_open_dispute(
    tasks: Any,
    committee: Any,
    post_task: Callable[..., int],
    provider: Any,
    evidence: Callable[[int], Evidence],
    commit: Any,
    draw: Any,
    open_batch: Any,
    watcher: Any,
    keeper: Any,
    owner: Any,
    panel_of_three: list[Any],
    challenge: Any,
    draw_panel: Any,
    vote: Any,
    chain: Any,
) -> None:
    """Batch 0 is opened and challenged while batch 1 is never committed: the dispute decides first."""
    deadline = chain.pending_timestamp + 2 * 24 * 3600  # before the dispute's starvationTimeout
    task = post_task(sampleBps=10_000, deadline=deadline)
    tasks.acceptTask(task, sender=provider, value=BOND)
    ev = evidence(task)
    commit(ev, [0])
    draw(task, 0)
    open_batch(ev, 0)
    dispute = challenge(task, 0, watcher)
    chain.pending_timestamp = deadline
    with ape.reverts(tasks.DisputeOpen, task=task, disputes=1):
        tasks.abandon(task, sender=keeper)
    assert tasks.getTask(task).status == ACCEPTED
    committee.rearm(dispute, sender=keeper)  # nobody drew the panel within maxDrawDelay: a keeper re-arms it
    decide(dispute, FAULTY, draw_panel, vote, committee, keeper)
    assert tasks.getTask(task).status == SLASHED
    assert tasks.credits(owner) == REWARD + OWNER_SHARE


def test_a_moot_dispute_that_times_out_without_a_panel_is_recorded_moot_by_both_contracts(
    tasks: Any,
    committee: Any,
    moot_dispute: tuple[int, int],
    watcher2: Any,
    keeper: Any,
    panel_of_three: list[Any],
    chain: Any,
) -> None:
    """The only auditors ask to exit after the first dispute, and the task is slashed meanwhile: the starvation
    timeout ends the second dispute as Moot (not NoDecision), as TrainingTasks records it."""
    task, dispute = moot_dispute
    for auditor in panel_of_three:
        committee.requestExit(sender=auditor)
    chain.pending_timestamp = committee.getDispute(dispute).roundStartedAt + committee.STARVATION_TIMEOUT()
    chain.mine(3)
    tx = committee.rearm(dispute, sender=keeper)
    assert committee.getDispute(dispute).verdict == MOOT
    assert [e.verdict for e in tx.events.filter(tasks.DisputeSettled)] == [MOOT]
    tasks.claimBond(
        task, watcher2.address, challenge_commitment(task, 2, OUT_OF_BOUNDS, SALT, watcher2.address), sender=keeper
    )
    assert tasks.credits(watcher2) == CBOND
