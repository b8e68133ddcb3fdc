"""Protocol v2's answers to the attacks that beat v1's dispute game (issue 23, "Why" 1, 2 and 4), and v3's to
the gap a no-decision left (review 7 of v3, F3), each tried the way an attacker would, on anvil; and the
promises they break: a faulty interval that an honest watcher challenges in time is slashed, and the honest
watcher leads unless an earlier commit of k was revealed.

Not here yet: the committee's panel steering (3) and starvation (5), which need v2's committee.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import (
    ABANDONED,
    ABSTAIN,
    ACCEPTED,
    C_JOINED,
    C_PENDING,
    C_SETTLED,
    COMMITTED,
    DEFAULTS,
    FAULTY,
    LEAD,
    NO_DECISION,
    OUT_OF_BOUNDS,
    OWNER_SHARE,
    SLASHED,
    UNAVAILABLE,
    VALID,
    Evidence,
    challenge_commitment,
    commit_challenge,
    reveal,
    settle,
    settle_seats,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")
REWARD, BOND, CBOND = DEFAULTS["reward"], DEFAULTS["providerBond"], DEFAULTS["challengerBond"]


def test_a_self_challenge_as_unavailable_cannot_shield_a_faulty_interval(
    tasks: Any,
    all_sampled: tuple[int, Evidence],
    provider: Any,
    owner: Any,
    watcher: Any,
    keeper: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    """v1: the provider's own `unavailable` challenge, found available, refunded every later challenge of k
    and bought a window extension; it repeated that and finalized with every bond back."""
    task, _ = all_sampled
    sock = commit_challenge(tasks, task, 5, provider, UNAVAILABLE)  # the provider knows its fault first
    honest = commit_challenge(tasks, task, 5, watcher)
    dispute = reveal(tasks, task, 5, provider, UNAVAILABLE)
    assert reveal(tasks, task, 5, watcher) == dispute  # the watcher's reveal joins: one question per interval
    assert tasks.getDispute(dispute).joined == 2
    assert tasks.getOpenedInterval(task, 5).lead == provider.address  # the provider committed first, so it leads
    # The panel answers the whole question (available and within bounds): faulty.
    decide(dispute, FAULTY)
    assert tasks.getTask(task).status == SLASHED
    for who, commitment in ((watcher, honest), (provider, sock)):
        assert tasks.getCommit(who.address, commitment).status == C_JOINED
        tasks.claimBond(task, who.address, commitment, sender=keeper)
        assert tasks.getCommit(who.address, commitment).status == C_SETTLED
    # Leading its own dispute returns the lead's 20% and its challenger bond; the owner keeps 70% and the reward.
    assert tasks.credits(provider) == LEAD + CBOND < BOND + CBOND
    assert tasks.credits(owner) == OWNER_SHARE + REWARD
    assert tasks.credits(watcher) == CBOND
    with ape.reverts(tasks.NothingToClaim):
        tasks.claimBond(task, watcher.address, honest, sender=keeper)  # once only


def test_a_copier_who_reveals_first_never_leads_and_a_copied_commitment_blocks_nobody(
    tasks: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    watcher2: Any,
    owner: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    """v1: a copier who saw the watcher's reveal in the mempool put a fresh commit and reveal of k ahead of
    it and took the bounty; copying the watcher's commitment bytes made the shipped watcher give up."""
    task, _ = all_sampled
    copier = watcher2
    honest = commit_challenge(tasks, task, 5, watcher)
    tasks.commitChallenge(task, honest, sender=copier, value=CBOND)  # the same bytes: another sender's commit
    assert tasks.getCommit(watcher.address, honest).status == tasks.getCommit(copier.address, honest).status
    with ape.reverts(tasks.UnknownCommitment):  # it binds the watcher's address: the copier cannot reveal it
        tasks.revealChallenge(task, 5, OUT_OF_BOUNDS, b"\x07" * 32, "r", sender=copier)
    commit_challenge(tasks, task, 5, copier, salt=b"\x0c" * 32)  # learned k from the watcher's reveal: commits later
    dispute = reveal(tasks, task, 5, copier, salt=b"\x0c" * 32)  # and is mined first
    assert tasks.getOpenedInterval(task, 5).lead == copier.address
    assert reveal(tasks, task, 5, watcher) == dispute
    assert tasks.getOpenedInterval(task, 5).lead == watcher.address  # the earlier commit takes the lead back
    decide(dispute, FAULTY)
    # The copier's copy of the watcher's bytes is still pending: made after the lead's commit, it is moot
    # (expired and refunded at once) and the lead's share waits for nothing else.
    assert tasks.getTask(task).waitingLead == watcher.address
    tasks.expireChallenge(task, copier.address, honest, sender=copier)
    tasks.releaseLeadShare(task, sender=copier)
    assert tasks.credits(watcher) == LEAD
    assert tasks.credits(copier) == CBOND  # the refunded copy; its joined bond comes back with claimBond
    assert tasks.credits(owner) == OWNER_SHARE + REWARD


def test_a_sock_puppet_cannot_slash_an_unopened_batch_ahead_of_a_challenge(
    tasks: Any,
    post_task: Callable[..., int],
    provider: Any,
    evidence: Callable[[int], Evidence],
    commit: Any,
    draw: Any,
    open_batch: Any,
    watcher: Any,
    accounts: Any,
    owner: Any,
    chain: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    """v1: with its interval being found faulty, the provider left a later batch unopened and a sock-puppet
    called slashUnopened before resolve: the dispute turned moot and the sock-puppet got the keeper's 10%."""
    sock_puppet = accounts[5]
    task = post_task(sampleBps=10_000)
    tasks.acceptTask(task, sender=provider, value=BOND)
    ev = evidence(task)
    commit(ev)
    draw(task, 0)
    open_batch(ev, 0)
    draw(task, 1)  # never opened
    unopened_until = tasks.getBatch(task, 1).windowEnd
    chain.pending_timestamp = unopened_until - 10  # the watcher commits just before batch 1 can be slashed
    honest = challenge_commitment(task, 2, OUT_OF_BOUNDS, b"\x07" * 32, watcher.address)
    tasks.commitChallenge(task, honest, sender=watcher, value=CBOND)
    chain.pending_timestamp = unopened_until
    with ape.reverts(tasks.ChallengePending, task=task, commits=1):  # ahead of the first reveal
        tasks.slashUnopened(task, 1, sender=sock_puppet)
    dispute = reveal(tasks, task, 2, watcher)
    with ape.reverts(tasks.DisputeOpen, task=task, disputes=1):  # ahead of the verdict
        tasks.slashUnopened(task, 1, sender=sock_puppet)
    decide(dispute, FAULTY)
    assert tasks.getTask(task).status == SLASHED
    assert (tasks.credits(watcher), tasks.credits(sock_puppet)) == (LEAD, 0)
    assert tasks.credits(owner) == OWNER_SHARE + REWARD


def test_a_sound_verdict_is_final_and_a_blind_commit_made_before_it_pays_as_its_challengers_did(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    watcher2: Any,
    provider: Any,
    keeper: Any,
    panel_of_three: list[Any],
    draw_panel: Any,
    vote: Any,
) -> None:
    """A commit on every interval that waited for the votes and then chose would be a free option."""
    task, _ = all_sampled
    commit_challenge(tasks, task, 2, watcher)
    dispute = reveal(tasks, task, 2, watcher)
    panel = draw_panel(dispute)
    vote(dispute, dict.fromkeys(panel, VALID))  # the votes are public now
    blind = commit_challenge(tasks, task, 2, watcher2, salt=b"\x0b" * 32)  # waits to see how k's dispute ends
    settle(committee, dispute, keeper)
    share, panel_share = CBOND * 5_000 // 10_000, CBOND * 1_000 // 10_000
    assert tasks.credits(provider) == share
    assert [committee.credits(a) for a in panel] == [panel_share // 3] * 3
    assert tasks.getOpenedInterval(task, 2).sound
    burned = tasks.burned()
    assert reveal(tasks, task, 2, watcher2, salt=b"\x0b" * 32) == 0  # settled at once, as the sound verdict
    assert tasks.getCommit(watcher2.address, blind).status == C_SETTLED
    assert tasks.credits(provider) == 2 * share
    assert tasks.burned() == burned + CBOND - share  # no panel left to pay: its share is burned too
    assert tasks.credits(watcher2) == 0
    first = challenge_commitment(task, 2, OUT_OF_BOUNDS, b"\x07" * 32, watcher.address)
    with ape.reverts(tasks.NothingToClaim, task=task, commitment=first):  # split at the verdict: never refunded
        tasks.claimBond(task, watcher.address, first, sender=keeper)
    late = commit_challenge(tasks, task, 2, watcher2, salt=b"\x0d" * 32)  # after the verdict: k is final
    with ape.reverts(tasks.IntervalFinal, task=task, k=2):
        tasks.revealChallenge(task, 2, OUT_OF_BOUNDS, b"\x0d" * 32, "r", sender=watcher2)
    assert tasks.getCommit(watcher2.address, late).status == C_PENDING  # it can only expire


def test_withholding_files_as_bait_for_an_unavailable_challenge_pays_the_provider_nothing(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    watcher2: Any,
    provider: Any,
    keeper: Any,
    panel_of_three: list[Any],
    draw_panel: Any,
    vote: Any,
) -> None:
    """A ninth review: a provider withheld an interval's files until a watcher challenged them as unavailable,
    then served them to the panels, and was paid half the watcher's bond by the SOUND settlement, on every
    sampled interval, at no risk. The provider's share of a bond revealed as unavailable is burned now; one
    revealed out of bounds still pays it (its reason is the challenger's word, and only withholding is bait)."""
    task, _ = all_sampled
    commit_challenge(tasks, task, 2, watcher, UNAVAILABLE)
    dispute = reveal(tasks, task, 2, watcher, UNAVAILABLE)
    commit_challenge(tasks, task, 2, watcher2, salt=b"\x0b" * 32)  # another's bond, out of bounds, joins
    assert reveal(tasks, task, 2, watcher2, salt=b"\x0b" * 32) == dispute
    record = tasks.getDispute(dispute)
    assert (record.task, record.k, record.joined, record.joinedUnavailable) == (task, 2, 2, 1)
    panel = draw_panel(dispute)
    vote(dispute, dict.fromkeys(panel, VALID))  # the files were served to the panel
    blind = commit_challenge(tasks, task, 2, watcher2, UNAVAILABLE, salt=b"\x0c" * 32)  # revealed after the verdict
    burned = tasks.burned()
    settle(committee, dispute, keeper)
    share, panel_share = CBOND * 5_000 // 10_000, CBOND * 1_000 // 10_000
    assert tasks.credits(provider) == share  # of the out-of-bounds bond only
    assert [committee.credits(a) for a in panel] == [2 * panel_share // 3] * 3  # the panel's share of both
    assert tasks.burned() == burned + 2 * CBOND - share - 2 * panel_share
    burned = tasks.burned()
    assert reveal(tasks, task, 2, watcher2, UNAVAILABLE, salt=b"\x0c" * 32) == 0  # settled as the verdict
    assert tasks.getCommit(watcher2.address, blind).status == C_SETTLED
    assert tasks.credits(provider) == share  # nothing more
    assert tasks.burned() == burned + CBOND


def test_no_decision_reopens_the_interval_window_and_refunds_through_claims(
    tasks: Any,
    committee: Any,
    all_sampled: tuple[int, Evidence],
    watcher: Any,
    keeper: Any,
    chain: Any,
    register: Callable[..., None],
    auditors: list[Any],
) -> None:
    """Too few auditors: no panel, and after starvationTimeout no decision; interval 6 can be challenged again."""
    register(auditors[:2])
    task, _ = all_sampled
    first = commit_challenge(tasks, task, 6, watcher)
    dispute = reveal(tasks, task, 6, watcher)
    chain.pending_timestamp = committee.getDispute(dispute).roundStartedAt + committee.STARVATION_TIMEOUT()
    chain.mine(3)
    tx = committee.rearm(dispute, sender=keeper)
    assert tasks.getDispute(dispute).verdict == NO_DECISION and tasks.getTask(task).status == COMMITTED
    reopened = chain.blocks[tx.block_number].timestamp + DEFAULTS["windows"][1]
    assert [(e.k, e.windowEnd) for e in tx.events.filter(tasks.IntervalWindowReopened)] == [(6, reopened)]
    assert tasks.challengeWindowEnd(task, 6) == tasks.getTask(task).challengeEnd == reopened
    assert tasks.challengeWindowEnd(task, 5) == tasks.getBatch(task, 1).windowEnd  # only k = 6 reopened
    tasks.claimBond(task, watcher.address, first, sender=keeper)
    assert tasks.credits(watcher) == CBOND
    commit_challenge(tasks, task, 6, watcher, salt=b"\x0e" * 32)  # a fresh challenge of k opens a second dispute
    assert reveal(tasks, task, 6, watcher, salt=b"\x0e" * 32) == tasks.getOpenedInterval(task, 6).dispute == dispute + 1


def test_the_earliest_revealed_commit_leads_every_later_dispute_of_the_interval(
    tasks: Any,
    committee: Any,
    opened_task: Callable[..., tuple[int, Evidence]],
    watcher: Any,
    provider: Any,
    keeper: Any,
    chain: Any,
    register: Callable[..., None],
    auditors: list[Any],
) -> None:
    """Found by review: the provider commits k while the watcher's dispute runs, lets it end with no decision,
    then reveals first into a fresh dispute. Without a lead kept per interval it would lead that one."""
    register(auditors[:2])  # too few for a panel: the first dispute ends undecided
    task, _ = opened_task(sampleBps=10_000, windows=(3600, 4 * 24 * 3600, 600))
    commit_challenge(tasks, task, 5, watcher)
    first = reveal(tasks, task, 5, watcher)
    timeout = committee.getDispute(first).roundStartedAt + committee.STARVATION_TIMEOUT()
    chain.pending_timestamp = timeout - 10
    commit_challenge(tasks, task, 5, provider, salt=b"\x0f" * 32)  # a later sequence number
    chain.pending_timestamp = timeout
    chain.mine(3)
    committee.rearm(first, sender=keeper)
    assert tasks.getDispute(first).verdict == NO_DECISION
    second = reveal(tasks, task, 5, provider, salt=b"\x0f" * 32)
    assert second == first + 1
    assert tasks.getDispute(second).joined == 1
    # The watcher's earlier commit, revealed in the first dispute, leads the second too.
    assert tasks.getOpenedInterval(task, 5).lead == watcher.address


def test_a_commit_made_while_the_interval_window_was_closed_stays_out_after_a_reopening(
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
    chain: Any,
    register: Callable[..., None],
    auditors: list[Any],
) -> None:
    """Found by review: batch 1's window keeps commits open after batch 0's closed; a commit of a batch-0
    interval then must not become valid because that interval's window reopens after a no-decision."""
    day = 24 * 3600
    register(auditors[:2])
    task = post_task(sampleBps=10_000, windows=(3600, day, 600))
    tasks.acceptTask(task, sender=provider, value=BOND)
    ev = evidence(task)
    commit(ev)
    draw(task, 0)
    open_batch(ev, 0)
    commit_challenge(tasks, task, 2, watcher)
    first = reveal(tasks, task, 2, watcher)
    chain.pending_timestamp = tasks.getBatch(task, 0).openedAt + 2 * day  # batch 0's window is closed
    draw(task, 1)
    open_batch(ev, 1)
    timeout = committee.getDispute(first).roundStartedAt + committee.STARVATION_TIMEOUT()
    chain.pending_timestamp = timeout - 10
    commit_challenge(tasks, task, 2, provider, salt=b"\x0f" * 32)  # accepted: batch 1's window is open
    chain.pending_timestamp = timeout
    chain.mine(3)
    tx = committee.rearm(first, sender=keeper)
    assert tasks.getDispute(first).verdict == NO_DECISION
    reopened = tx.timestamp + day
    assert (tasks.getOpenedInterval(task, 2).reopenedAt, tasks.challengeWindowEnd(task, 2)) == (tx.timestamp, reopened)
    with ape.reverts(tasks.IntervalWindowClosed, task=task, k=2, closedAt=reopened):
        tasks.revealChallenge(task, 2, OUT_OF_BOUNDS, b"\x0f" * 32, "r", sender=provider)
    commit_challenge(tasks, task, 2, watcher, salt=b"\x10" * 32)  # in the reopened window: a new dispute
    assert reveal(tasks, task, 2, watcher, salt=b"\x10" * 32) == first + 1


# --- the gap a no-decision leaves (review 7 of v3, F3) ------------------------------------------------

SOCK_K = 1  # the watcher's interval, in batch 0
GAP_TERMS = {"totalSteps": 1600, "sampleBps": 10_000}  # four batches of four intervals, every one sampled


@pytest.fixture
def no_decision_gap(
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
    chain: Any,
    register: Callable[..., None],
    auditors: list[Any],
    draw_panel: Any,
    vote: Any,
) -> tuple[int, bytes, int]:
    """The task of F3: batches 0 and 1 opened, batch 2 drawn and never opened, batch 3 never committed (so the
    task is Accepted, and its deadline passes while the watcher's dispute runs). The watcher challenges interval
    SOCK_K of batch 0; every run of the dispute abstains (honest auditors kept busy), MAX_RERUNS + 1 runs, so it
    ends with no decision and reopens SOCK_K's window; its seats are settled and the watcher's bond claimed
    back. Nothing is pending now. Returns (task, the watcher's first commitment, the reopened window's end)."""
    register(auditors[:5])
    task = post_task(deadline=chain.pending_timestamp + 3600, **GAP_TERMS)
    tasks.acceptTask(task, sender=provider, value=BOND)
    ev = evidence(task)
    commit(ev, [0, 1, 2])
    for j in (0, 1):
        draw(task, j)
        open_batch(ev, j)
    draw(task, 2)  # never opened
    first = commit_challenge(tasks, task, SOCK_K, watcher)
    dispute = reveal(tasks, task, SOCK_K, watcher)
    for _ in range(committee.MAX_RERUNS() + 1):
        panel = draw_panel(dispute)
        vote(dispute, dict.fromkeys(panel, ABSTAIN))
        tx = committee.resolve(dispute, sender=keeper)
    assert tasks.getDispute(dispute).verdict == NO_DECISION
    reopened_until = tx.timestamp + DEFAULTS["windows"][1]
    assert [(e.k, e.windowEnd) for e in tx.events.filter(tasks.IntervalWindowReopened)] == [(SOCK_K, reopened_until)]
    t = tasks.getTask(task)
    assert t.reopenedUntil == t.challengeEnd == tasks.getOpenedInterval(task, SOCK_K).windowEnd == reopened_until
    assert (t.status, t.pendingCommits, t.openDisputes) == (ACCEPTED, 0, 0)
    assert tasks.getBatch(task, 2).windowEnd < tx.timestamp and t.terms.deadline < tx.timestamp
    settle_seats(committee, dispute, keeper)
    tasks.claimBond(task, watcher.address, first, sender=keeper)
    assert tasks.credits(watcher) == CBOND
    return task, first, reopened_until


def test_a_sock_puppet_cannot_end_the_task_in_the_gap_a_no_decision_leaves(
    tasks: Any,
    committee: Any,
    no_decision_gap: tuple[int, bytes, int],
    provider: Any,
    owner: Any,
    watcher: Any,
    keeper: Any,
    accounts: Any,
    chain: Any,
    decide: Callable[[int, int], list[str]],
) -> None:
    """F3 (review 7 of v3, medium): between a no-decision and the watcher's fresh commit nothing was pending, so
    the provider's sock-puppet slashed its own unopened batch 2 (or abandoned the task past its deadline) in that
    gap: the faulty interval's new challenge was moot and the sock-puppet, not the watcher, was paid. Now both
    wait for the reopened window's end; the watcher challenges again within it and leads the slash."""
    sock_puppet = accounts[5]
    task, _, reopened_until = no_decision_gap
    with ape.reverts(tasks.ChallengeWindowOpen, task=task, closesAt=reopened_until):
        tasks.slashUnopened(task, 2, sender=sock_puppet)
    with ape.reverts(tasks.ChallengeWindowOpen, task=task, closesAt=reopened_until):
        tasks.abandon(task, sender=sock_puppet)
    again = commit_challenge(tasks, task, SOCK_K, watcher, salt=b"\x11" * 32)  # in the reopened window
    dispute = reveal(tasks, task, SOCK_K, watcher, salt=b"\x11" * 32)
    assert dispute != 0 and tasks.getOpenedInterval(task, SOCK_K).lead == watcher.address
    chain.pending_timestamp = reopened_until  # the window has closed; the dispute is still open
    with ape.reverts(tasks.DisputeOpen, task=task, disputes=1):
        tasks.slashUnopened(task, 2, sender=sock_puppet)
    with ape.reverts(tasks.DisputeOpen, task=task, disputes=1):
        tasks.abandon(task, sender=sock_puppet)
    committee.rearm(dispute, sender=keeper)  # its panel was not drawn within maxDrawDelay: armed again
    decide(dispute, FAULTY)
    assert tasks.getTask(task).status == SLASHED
    assert (tasks.credits(watcher), tasks.credits(sock_puppet), tasks.credits(provider)) == (CBOND + LEAD, 0, 0)
    assert tasks.credits(owner) == OWNER_SHARE + REWARD
    tasks.claimBond(task, watcher.address, again, sender=keeper)  # the lead's bond comes back whole
    assert tasks.credits(watcher) == 2 * CBOND + LEAD


@pytest.mark.parametrize("ending", ["slashUnopened", "abandon"])
def test_once_the_reopened_window_closes_with_nothing_pending_the_task_ends(
    tasks: Any,
    no_decision_gap: tuple[int, bytes, int],
    provider: Any,
    owner: Any,
    accounts: Any,
    chain: Any,
    ending: str,
) -> None:
    """F3's hold lasts to the second: nobody challenged again in the reopened window, so from its end the
    unopened batch 2 is slashed (the owner is credited the reward and the provider bond less the caller's
    KEEPER_BPS of it) or the task, past its deadline, abandoned (the reward and the provider bond)."""
    caller = accounts[5]
    task, _, reopened_until = no_decision_gap
    args = {"slashUnopened": (task, 2), "abandon": (task,)}[ending]
    chain.pending_timestamp = reopened_until - 1
    with ape.reverts(tasks.ChallengeWindowOpen, task=task, closesAt=reopened_until):
        getattr(tasks, ending)(*args, sender=caller)
    chain.pending_timestamp = reopened_until
    getattr(tasks, ending)(*args, sender=caller)
    keeper_share = BOND * tasks.KEEPER_BPS() // 10_000 if ending == "slashUnopened" else 0
    assert tasks.getTask(task).status == (SLASHED if ending == "slashUnopened" else ABANDONED)
    assert tasks.credits(owner) == REWARD + BOND - keeper_share
    assert (tasks.credits(caller), tasks.credits(provider)) == (keeper_share, 0)
