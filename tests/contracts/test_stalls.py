"""Owner bonds, declared replay times, round charges and stalls (protocol 4.1, 4.2 "no decision").

What the protocol promises here, and what each test tries to break:
- postTask takes the owner bond with the reward and refuses bonds below their minimums and replays a
  panel cannot serve;
- a round most of whose panel stayed silent is drawn again and counts nothing;
- a no-decision through a round most of whose panel revealed counts toward the interval's stall, and
  charges the joined challengers `panelBps x challengerBond x 2^r` for the panelists who revealed;
- an interval that reaches maxNoDecisions counted no-decisions stalls its task: finalize is refused, and
  settleUndecided, once no dispute is open and every drawn batch is opened, burns reward, provider bond and
  owner bond: nobody who stalled profits.

These tests run on a pair whose committee has one round (every round is the last), so a split panel of
three is a counted no-decision at once; the constructor parameters are otherwise the suite's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import (
    COMMITTEE,
    DEFAULTS,
    FAULTY,
    MAX_NO_DECISIONS,
    MIN_BONDS,
    NO_DECISION,
    SEED_DELAY,
    SLASHED,
    VALID,
    commit_challenge,
    emitted,
    module_pair,
    post_args,
    reveal,
    settle_seats,
    vote_commitment,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")

UNDECIDED = 8  # TaskStatus.Undecided
CBOND, BOND, REWARD, OWNER_BOND = (DEFAULTS[k] for k in ("challengerBond", "providerBond", "reward", "ownerBond"))
PANEL_BPS, PENALTY = COMMITTEE["panelBps"], COMMITTEE["penalty"]
# One batch of four intervals, all sampled.
SMALL = {"totalSteps": 400, "intervalsPerBatch": 4, "sampleBps": 10_000}


# The suite's pair, but a committee of one round: a split panel ends the dispute.
deployed_pair, committee, tasks = module_pair("a committee of one round", maxRounds=1)


@pytest.fixture
def split(committee: Any, keeper: Any, draw_panel: Any, vote: Any) -> Callable[[int], tuple[list[str], Any]]:
    """Draw the dispute's panel of three; one votes sound, one faulty, one stays silent; resolve. Returns the
    panel and the resolving transaction."""

    def run(dispute: int) -> tuple[list[str], Any]:
        panel = draw_panel(dispute)
        vote(dispute, {panel[0]: VALID, panel[1]: FAULTY})
        return panel, committee.resolve(dispute, sender=keeper)

    return run


@pytest.fixture
def stall(tasks: Any, watcher: Any, split: Any) -> Callable[[int, int], Any]:
    """The watcher challenges interval k of the task MAX_NO_DECISIONS times, each dispute a split round: a
    counted no-decision each, so the task stalls. Returns the last resolving transaction."""

    def run(task: int, k: int) -> Any:
        for n in range(MAX_NO_DECISIONS):
            salt = bytes([n + 1]) * 32
            commit_challenge(tasks, task, k, watcher, salt=salt)
            _, tx = split(reveal(tasks, task, k, watcher, salt=salt))
        return tx

    return run


# --- posting -------------------------------------------------------------------------------------


def test_post_task_takes_the_owner_bond_with_the_reward(tasks: Any, owner: Any, chain: Any) -> None:
    deadline = chain.pending_timestamp + 86_400
    tx = tasks.postTask(*post_args(DEFAULTS, deadline), sender=owner, value=REWARD + OWNER_BOND)
    terms = tasks.getTask(tasks.taskCount()).terms
    assert (terms.reward, terms.ownerBond, terms.replaySeconds) == (REWARD, OWNER_BOND, DEFAULTS["replaySeconds"])
    assert [e.task for e in tx.events.filter(tasks.TaskPosted)] == [tasks.taskCount()]
    assert tasks.balance == REWARD + OWNER_BOND


MAX_REPLAY = COMMITTEE["maxReplaySeconds"]
MAX_CHALLENGER_BOND = 2**80 - 1


@pytest.mark.parametrize(
    ("overrides", "value", "error", "fields"),
    [
        ({"ownerBond": MIN_BONDS[2] - 1}, REWARD, "BondTooLow", {"which": "owner", "minimum": MIN_BONDS[2]}),
        ({}, OWNER_BOND - 1, "ValueBelowOwnerBond", {"ownerBond": OWNER_BOND, "sent": OWNER_BOND - 1}),
        ({"replaySeconds": 0}, REWARD + OWNER_BOND, "InvalidReplaySeconds", {"replaySeconds": 0, "max": MAX_REPLAY}),
        ({"replaySeconds": MAX_REPLAY + 1}, REWARD + OWNER_BOND, "InvalidReplaySeconds", {"max": MAX_REPLAY}),
        (
            {"challengerBond": MAX_CHALLENGER_BOND + 1},
            REWARD + OWNER_BOND,
            "BondTooHigh",
            {"maximum": MAX_CHALLENGER_BOND},
        ),
    ],
    ids=[
        "owner-bond-below-minimum",
        "value-below-owner-bond",
        "zero-replay",
        "replay-above-committee-max",
        "challenger-bond-above-maximum",
    ],
)
def test_post_task_refuses_bad_owner_bonds_and_replay_times(
    tasks: Any, owner: Any, chain: Any, overrides: dict[str, Any], value: int, error: str, fields: dict[str, Any]
) -> None:
    before = tasks.taskCount()
    with ape.reverts(getattr(tasks, error), **fields):
        tasks.postTask(
            *post_args({**DEFAULTS, **overrides}, chain.pending_timestamp + 86_400), sender=owner, value=value
        )
    assert tasks.taskCount() == before and tasks.balance == 0


def test_a_zero_reward_is_allowed_and_the_whole_value_is_the_owner_bond(tasks: Any, post_task: Any) -> None:
    task = post_task(reward=0)
    assert (tasks.getTask(task).terms.reward, tasks.getTask(task).terms.ownerBond) == (0, OWNER_BOND)


# --- no decisions -----------------------------------------------------------------------------------


def test_a_split_round_is_a_counted_no_decision_that_charges_the_challengers_for_the_revealers(
    tasks: Any,
    committee: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    split: Any,
    chain: Any,
) -> None:
    """Two joined bonds; the round's charge (10% of one bond at round 0) goes to the two panelists who
    revealed, the silent one loses its penalty (burned: no outcome to pay), the bonds come back less the
    charge, evenly; the interval's window reopens with one counted no-decision."""
    register(auditors[:3])
    task, _ = opened_task(**SMALL)
    first = commit_challenge(tasks, task, 1, watcher)
    second = commit_challenge(tasks, task, 1, watcher2, salt=b"\x08" * 32)
    dispute = reveal(tasks, task, 1, watcher)
    assert reveal(tasks, task, 1, watcher2, salt=b"\x08" * 32) == dispute
    panel, tx = split(dispute)
    assert tasks.getDispute(dispute).verdict == NO_DECISION
    charge = CBOND * PANEL_BPS // 10_000 // 2
    settle_seats(committee, dispute, keeper)  # the committee pays the charge as it settles the seats
    assert [committee.credits(p) for p in panel] == [charge, charge, 0]
    assert emitted(committee.Penalized, tx.block_number, "panelist", "amount") == [(panel[2], PENALTY)]
    refund = (2 * CBOND - 2 * charge) // 2
    assert tasks.getDispute(dispute).refundPerBond == refund
    tasks.claimBond(task, watcher.address, first, sender=keeper)
    tasks.claimBond(task, watcher2.address, second, sender=keeper)
    assert (tasks.credits(watcher), tasks.credits(watcher2)) == (refund, refund)
    reopened = [(e.k, e.noDecisions) for e in tx.events.filter(tasks.IntervalWindowReopened)]
    assert reopened == [(1, 1)] and tasks.getOpenedInterval(task, 1).noDecisions == 1
    assert not tasks.getTask(task).stalled


def test_a_round_most_of_whose_panel_stays_silent_is_drawn_again_and_counts_nothing(
    tasks: Any,
    committee: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    keeper: Any,
    draw_panel: Any,
    vote: Any,
) -> None:
    """A flood that keeps honest panelists busy cannot turn their silence into an outcome: the run is voided and
    the round armed again at once (same round, a fresh draw from the whole pool: the void run's panelists
    may sit again)."""
    register(auditors[:6])
    task, _ = opened_task(**SMALL)
    commit_challenge(tasks, task, 2, watcher)
    dispute = reveal(tasks, task, 2, watcher)
    panel = draw_panel(dispute)
    vote(dispute, {panel[0]: FAULTY})
    tx = committee.resolve(dispute, sender=keeper)
    assert [(e.round, e.armBlock) for e in tx.events.filter(committee.PanelRearmed)] == [(0, tx.block_number)]
    d = committee.getDispute(dispute)
    assert (d.status, d.round, d.run, d.reruns, d.verdict) == (1, 0, 1, 1, 0)  # AwaitingPanel, round 0, run 1
    again = draw_panel(dispute)
    assert len(again) == 3 and [committee.ballotOf(dispute, p).run for p in again] == [1] * 3
    assert tasks.getOpenedInterval(task, 2).noDecisions == 0 and tasks.getDispute(dispute).verdict == 0


def test_max_no_decisions_stall_the_task_which_then_ends_undecided_with_everything_burned(
    tasks: Any,
    committee: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    owner: Any,
    provider: Any,
    split: Any,
    chain: Any,
    stall: Any,
) -> None:
    """Two counted no-decisions on interval 0 stall the task. As for finalize, settleUndecided waits for every
    challenge window to close and for every commit and dispute to end (found by review: a stalled task
    settled at once pre-empted an honest challenge of another, faulty interval); finalize is refused; then
    the task ends Undecided and reward, provider bond and owner bond are burned."""
    register(auditors[:9])
    task, _ = opened_task(**SMALL, windows=(3600, 5 * 24 * 3600, 600))  # interval 3's window outlasts two votes
    with ape.reverts(tasks.TaskNotStalled, task=task):
        tasks.settleUndecided(task, sender=keeper)
    tx = stall(task, 0)
    assert [(e.task, e.k) for e in tx.events.filter(tasks.TaskStalledAt)] == [(task, 0)]
    assert tasks.getTask(task).stalled and tasks.getOpenedInterval(task, 0).noDecisions == MAX_NO_DECISIONS
    # Another interval may still be faulty: its challenges decide first.
    commit_challenge(tasks, task, 3, watcher2)
    other = reveal(tasks, task, 3, watcher2)
    pending = commit_challenge(tasks, task, 1, watcher2, salt=b"\x09" * 32)
    end = tasks.getTask(task).challengeEnd
    with ape.reverts(tasks.ChallengeWindowOpen, task=task, closesAt=end):
        tasks.settleUndecided(task, sender=keeper)
    split(other)
    chain.pending_timestamp = tasks.getTask(task).challengeEnd
    with ape.reverts(tasks.ChallengePending, task=task, commits=1):
        tasks.settleUndecided(task, sender=keeper)
    tasks.expireChallenge(task, watcher2.address, pending, sender=keeper)
    with ape.reverts(tasks.TaskStalled, task=task):
        tasks.finalize(task, sender=keeper)
    burned = tasks.burned()
    credits = (tasks.credits(owner), tasks.credits(provider))
    tx = tasks.settleUndecided(task, sender=keeper)
    assert tasks.getTask(task).status == UNDECIDED
    assert [e.task for e in tx.events.filter(tasks.TaskUndecided)] == [task]
    assert tasks.burned() - burned == REWARD + BOND + OWNER_BOND
    assert (tasks.credits(owner), tasks.credits(provider)) == credits == (0, 0)
    with ape.reverts(tasks.WrongTaskStatus):
        tasks.settleUndecided(task, sender=keeper)


def test_a_stalled_task_cannot_be_abandoned_into_the_owner_s_pocket(
    tasks: Any,
    post_task: Any,
    provider: Any,
    evidence: Any,
    commit: Any,
    draw: Any,
    open_batch: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    owner: Any,
    keeper: Any,
    split: Any,
    chain: Any,
    stall: Any,
) -> None:
    """Found by review: a task stalled while still Accepted; the provider stops (it can never be paid), and at
    the deadline abandon would have paid the owner reward, its bond and the provider bond."""
    register(auditors[:6])
    deadline = chain.pending_timestamp + 2 * 24 * 3600
    task = post_task(totalSteps=800, intervalsPerBatch=4, sampleBps=10_000, deadline=deadline)
    tasks.acceptTask(task, sender=provider, value=BOND)
    ev = evidence(task)
    commit(ev, [0])
    draw(task, 0)
    open_batch(ev, 0)
    stall(task, 1)
    assert tasks.getTask(task).stalled
    chain.pending_timestamp = deadline
    with ape.reverts(tasks.TaskStalled, task=task):
        tasks.abandon(task, sender=owner)
    tasks.settleUndecided(task, sender=keeper)
    assert tasks.getTask(task).status == UNDECIDED and tasks.credits(owner) == 0


def test_an_excused_panelist_s_silence_never_counts_toward_a_stall(
    tasks: Any,
    committee: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    draw_panel: Any,
    vote: Any,
) -> None:
    """Found by review: a flooder fills three auditors' L = 4 overlapping seats with junk disputes, so all three
    are excused on the real one; two sybils split and the excused third stays silent. That no-decision
    counted toward a stall, at no cost to anyone. Now the round is drawn again."""
    register(auditors[:3])  # every panel is these three
    flood, _ = opened_task(**SMALL)
    target, _ = opened_task(**SMALL)
    for k in range(4):
        commit_challenge(tasks, flood, k, watcher2, salt=bytes([k + 1]) * 32)
        draw_panel(reveal(tasks, flood, k, watcher2, salt=bytes([k + 1]) * 32))
    commit_challenge(tasks, target, 1, watcher)
    dispute = reveal(tasks, target, 1, watcher)
    panel = draw_panel(dispute)
    assert all(committee.ballotOf(dispute, p).excused for p in panel)  # each holds L = 4 junk seats
    vote(dispute, {panel[0]: VALID, panel[1]: FAULTY})  # panel[2] stays silent
    tx = committee.resolve(dispute, sender=keeper)
    assert [e.round for e in tx.events.filter(committee.PanelRearmed)] == [0]
    assert tasks.getDispute(dispute).verdict == 0 and tasks.getOpenedInterval(target, 1).noDecisions == 0


def test_a_drawn_unopened_batch_holds_settle_undecided_back(
    tasks: Any,
    post_task: Any,
    provider: Any,
    evidence: Any,
    commit: Any,
    draw: Any,
    open_batch: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    keeper: Any,
    split: Any,
    chain: Any,
    stall: Any,
) -> None:
    """The provider's own fault (a batch left unopened) is slashed, not burned with everything else."""
    register(auditors[:6])
    task = post_task(totalSteps=800, intervalsPerBatch=4, sampleBps=10_000)
    tasks.acceptTask(task, sender=provider, value=BOND)
    ev = evidence(task)
    commit(ev)
    draw(task, 0)
    open_batch(ev, 0)
    stall(task, 1)
    assert tasks.getTask(task).stalled
    draw(task, 1)
    with ape.reverts(tasks.BatchesNotOpened, task=task, opened=1, total=2):
        tasks.settleUndecided(task, sender=keeper)
    chain.pending_timestamp = tasks.getBatch(task, 1).windowEnd
    tasks.slashUnopened(task, 1, sender=keeper)
    assert tasks.getTask(task).status == SLASHED


def test_a_no_decision_by_starvation_counts_nothing(
    tasks: Any,
    committee: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    keeper: Any,
    chain: Any,
) -> None:
    """Two auditors cannot seat three: after starvationTimeout the dispute ends with no decision and no
    charge, but it does not bring the interval closer to a stall (nobody judged it)."""
    register(auditors[:2])
    task, _ = opened_task(**SMALL)
    commitment = commit_challenge(tasks, task, 0, watcher)
    dispute = reveal(tasks, task, 0, watcher)
    chain.pending_timestamp = committee.getDispute(dispute).roundStartedAt + committee.STARVATION_TIMEOUT()
    chain.mine(SEED_DELAY + 1)
    committee.rearm(dispute, sender=keeper)
    assert tasks.getDispute(dispute).verdict == NO_DECISION
    assert tasks.getOpenedInterval(task, 0).noDecisions == 0
    tasks.claimBond(task, watcher.address, commitment, sender=keeper)
    assert tasks.credits(watcher) == CBOND


def test_every_way_a_task_ends_but_undecided_returns_the_owner_bond(
    tasks: Any,
    post_task: Any,
    owner: Any,
    provider: Any,
    keeper: Any,
    chain: Any,
    opened_task: Any,
) -> None:
    """Cancelled, abandoned and finalized (slashed paths are checked with their payouts elsewhere)."""
    cancelled = post_task()
    tasks.cancel(cancelled, sender=owner)
    assert tasks.credits(owner) == REWARD + OWNER_BOND
    abandoned = post_task(deadline=chain.pending_timestamp + 100)
    tasks.acceptTask(abandoned, sender=provider, value=BOND)
    chain.pending_timestamp += 200
    tasks.abandon(abandoned, sender=keeper)
    assert tasks.credits(owner) == 2 * (REWARD + OWNER_BOND) + BOND
    finalized, _ = opened_task()
    chain.pending_timestamp = tasks.getTask(finalized).challengeEnd
    tasks.finalize(finalized, sender=keeper)
    assert tasks.credits(owner) == 2 * (REWARD + OWNER_BOND) + BOND + OWNER_BOND
    assert tasks.credits(provider) == REWARD + BOND


def test_a_second_reopening_keeps_a_commit_made_in_the_first_extension(
    tasks: Any,
    committee: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    split: Any,
    chain: Any,
    draw_panel: Any,
) -> None:
    """Attack 4 (dispute game v3, low): a dispute of k ends undecided while k's window is open (extended, no gap);
    a watcher commits in the last minutes of that extension; a second dispute of k ends undecided after the
    extension closed and reopens the window. v2 treated everything from k's first window's end to the reopening
    as closed, the extension included: the commit made in time could not be revealed and its bond burned. The
    gap now runs from the window's end at the moment of reopening."""
    register(auditors[:6])
    window = 7200  # longer than a vote (1.5 h): the first dispute ends while k's first window is open
    task, _ = opened_task(**SMALL, windows=(3600, window, 3600))
    commit_challenge(tasks, task, 0, watcher, salt=b"\x01" * 32)
    _, first = split(reveal(tasks, task, 0, watcher, salt=b"\x01" * 32))
    t1 = first.timestamp
    assert tasks.challengeWindowEnd(task, 0) == t1 + window  # extended: no gap
    assert tasks.getOpenedInterval(task, 0).reopenedAt == 0
    chain.pending_timestamp = t1 + 3000
    commit_challenge(tasks, task, 0, keeper, salt=b"\x02" * 32)
    second = reveal(tasks, task, 0, keeper, salt=b"\x02" * 32)
    panel = draw_panel(second)
    signer = {a.address: a for a in auditors[:6]}
    salt = b"\x5e" * 32
    for p, ballot in ((panel[0], VALID), (panel[1], FAULTY)):  # split; panel[2] stays silent
        committee.commitVote(second, vote_commitment(second, 0, ballot, salt, p), sender=signer[p])
    drawn_at = committee.getDispute(second).drawnAt
    chain.pending_timestamp = drawn_at + COMMITTEE["commitWindow"]
    for p, ballot in ((panel[0], VALID), (panel[1], FAULTY)):
        committee.revealVote(second, ballot, salt, sender=signer[p])
    chain.pending_timestamp = t1 + window - 100  # in time: the extension's last minutes
    late = commit_challenge(tasks, task, 0, watcher2, salt=b"\x03" * 32)
    chain.pending_timestamp = drawn_at + COMMITTEE["commitWindow"] + COMMITTEE["revealWindow"]
    tx = committee.resolve(second, sender=keeper)  # after the extension closed: the window reopens
    iv = tasks.getOpenedInterval(task, 0)
    assert (iv.gapStart, iv.reopenedAt) == (t1 + window, tx.timestamp) and tx.timestamp > t1 + window
    assert tasks.getCommit(watcher2.address, late).committedAt < iv.gapStart
    assert reveal(tasks, task, 0, watcher2, salt=b"\x03" * 32) != 0  # joined a new dispute, not refused
