"""What postTask takes, declared replay times and no-decisions (protocol 4.1, 4.2 "no decision").

What the protocol promises here, and what each test tries to break:
- postTask takes exactly the reward (zero too) and refuses a challenger bond above its maximum and replays a
  panel cannot serve; however the task ends, the owner is credited what protocol 4.1 says, to the wei;
- a round most of whose panel stayed silent is drawn again and judges nothing;
- an undecided run proves nothing, however many revealed (its silent or abstaining seats could have decided
  it, and a sybil minority can force honest auditors to abstain): its no-decision charges the joined
  challengers nothing, reopens the interval's window, and never ends the task, however often it happens
  (v3 let three such no-decisions stall an honest provider's task and burn its bond);
- a second reopening keeps a commit made in time in the first extension.

These tests run on a pair whose committee has one round (every round is the last), so a split panel of
three ends the dispute at once; the constructor parameters are otherwise the suite's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import (
    ABSTAIN,
    AUDITOR_STAKE,
    COMMITTED,
    COMMITTEE,
    DEFAULTS,
    FAULTY,
    FINALIZED,
    NO_DECISION,
    SEED_DELAY,
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

CBOND, BOND, REWARD = (DEFAULTS[k] for k in ("challengerBond", "providerBond", "reward"))
PANEL_BPS, PENALTY = COMMITTEE["panelBps"], COMMITTEE["penalty"]
# One batch of four intervals, all sampled.
SMALL = {"totalSteps": 400, "intervalsPerBatch": 4, "sampleBps": 10_000}


# The suite's pair, but a committee of one round: a split panel ends the dispute.
deployed_pair, committee, tasks = module_pair("a committee of one round", maxRounds=1)


@pytest.fixture
def split(committee: Any, keeper: Any, draw_panel: Any, vote: Any) -> Callable[[int], tuple[list[str], Any]]:
    """Draw the dispute's panel of three; one votes sound, one faulty, one stays silent; resolve. Returns the
    panel (in seat order) and the resolving transaction."""

    def run(dispute: int) -> tuple[list[str], Any]:
        panel = draw_panel(dispute)
        vote(dispute, {panel[0]: VALID, panel[1]: FAULTY})
        return panel, committee.resolve(dispute, sender=keeper)

    return run


# --- posting -------------------------------------------------------------------------------------


def test_post_task_takes_exactly_the_reward(tasks: Any, owner: Any, chain: Any) -> None:
    deadline = chain.pending_timestamp + 86_400
    start = owner.balance
    tx = tasks.postTask(*post_args(DEFAULTS, deadline), sender=owner, value=REWARD)
    terms = tasks.getTask(tasks.taskCount()).terms
    assert (terms.reward, terms.replaySeconds) == (REWARD, DEFAULTS["replaySeconds"])
    assert [(e.task, e.terms[2]) for e in tx.events.filter(tasks.TaskPosted)] == [(tasks.taskCount(), REWARD)]
    assert tasks.balance == REWARD
    assert owner.balance == start - REWARD - tx.total_fees_paid


MAX_REPLAY = COMMITTEE["maxReplaySeconds"]
MAX_CHALLENGER_BOND = 2**80 - 1


@pytest.mark.parametrize(
    ("overrides", "value", "error", "fields"),
    [
        ({"replaySeconds": 0}, REWARD, "InvalidReplaySeconds", {"replaySeconds": 0, "max": MAX_REPLAY}),
        ({"replaySeconds": MAX_REPLAY + 1}, REWARD, "InvalidReplaySeconds", {"max": MAX_REPLAY}),
        (
            {"challengerBond": MAX_CHALLENGER_BOND + 1},
            REWARD,
            "BondTooHigh",
            {"maximum": MAX_CHALLENGER_BOND, "given": MAX_CHALLENGER_BOND + 1},
        ),
    ],
    ids=["zero-replay", "replay-above-committee-max", "challenger-bond-above-maximum"],
)
def test_post_task_refuses_bad_replay_times_and_a_challenger_bond_above_its_maximum(
    tasks: Any, owner: Any, chain: Any, overrides: dict[str, Any], value: int, error: str, fields: dict[str, Any]
) -> None:
    before = tasks.taskCount()
    with ape.reverts(getattr(tasks, error), **fields):
        tasks.postTask(
            *post_args({**DEFAULTS, **overrides}, chain.pending_timestamp + 86_400), sender=owner, value=value
        )
    assert tasks.taskCount() == before and tasks.balance == 0


def test_a_zero_reward_is_allowed(tasks: Any, post_task: Any) -> None:
    task = post_task(reward=0)
    assert tasks.getTask(task).terms.reward == 0 and tasks.balance == 0


# --- no decisions -----------------------------------------------------------------------------------


def test_a_split_round_is_a_no_decision_that_charges_nothing_and_reopens_the_window(
    tasks: Any,
    committee: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    split: Any,
) -> None:
    """Two joined bonds; one sound and one faulty ballot, one panelist silent: no majority. The silent one
    loses its penalty (burned: no outcome to pay), no ballot is paid or loses, both bonds come back whole, and
    the interval's window reopens; the task is still live."""
    register(auditors[:3])
    task, _ = opened_task(**SMALL)
    first = commit_challenge(tasks, task, 1, watcher)
    second = commit_challenge(tasks, task, 1, watcher2, salt=b"\x08" * 32)
    dispute = reveal(tasks, task, 1, watcher)
    assert reveal(tasks, task, 1, watcher2, salt=b"\x08" * 32) == dispute
    panel, tx = split(dispute)
    assert tasks.getDispute(dispute).verdict == NO_DECISION
    burned = committee.burned()
    settle_seats(committee, dispute, keeper)
    assert [committee.credits(p) for p in panel] == [0, 0, 0]
    assert emitted(committee.Penalized, tx.block_number, "panelist", "amount") == [(panel[2], PENALTY)]
    assert committee.burned() - burned == PENALTY and committee.heldForSeats() == 0
    assert tasks.getDispute(dispute).refundPerBond == CBOND
    tasks.claimBond(task, watcher.address, first, sender=keeper)
    tasks.claimBond(task, watcher2.address, second, sender=keeper)
    assert (tasks.credits(watcher), tasks.credits(watcher2)) == (CBOND, CBOND)
    reopened = [(e.k, e.windowEnd) for e in tx.events.filter(tasks.IntervalWindowReopened)]
    assert reopened == [(1, tx.timestamp + DEFAULTS["windows"][1])]
    assert tasks.getTask(task).status == COMMITTED


def test_a_round_most_of_whose_panel_stays_silent_is_drawn_again_and_judges_nothing(
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
    assert tasks.getDispute(dispute).verdict == 0


def test_no_decisions_a_sybil_minority_forces_never_end_an_honest_task(
    tasks: Any,
    committee: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    watcher: Any,
    owner: Any,
    provider: Any,
    keeper: Any,
    draw_panel: Any,
    vote: Any,
    chain: Any,
) -> None:
    """Review 6 of v3 (high): a sybil challenges a sound interval; on each panel of three one sybil votes faulty,
    one honest auditor sound, and the other honest one, kept busy until its commit deadline, abstains. The
    run had most of its panel revealed, so it counted: each no-decision charged the challenger's bond, and
    MAX_NO_DECISIONS of them stalled the honest provider's task, which ended Undecided with reward and bond
    burned. Now an undecided run proves nothing (its abstaining seat could have decided it): three such
    disputes in a row charge nothing, nobody loses stake, and the task finalizes, paying the provider."""
    register(auditors[:6])
    task, _ = opened_task(**SMALL)
    for n in range(3):
        salt = bytes([n + 1]) * 32
        commitment = commit_challenge(tasks, task, 0, watcher, salt=salt)
        dispute = reveal(tasks, task, 0, watcher, salt=salt)
        panel = draw_panel(dispute)
        vote(dispute, {panel[0]: FAULTY, panel[1]: VALID, panel[2]: ABSTAIN})
        tx = committee.resolve(dispute, sender=keeper)
        assert emitted(committee.DisputeResolved, tx.block_number, "verdict", "round") == [(NO_DECISION, 0)]
        burned = committee.burned()
        settle_seats(committee, dispute, keeper)
        assert committee.burned() == burned and [committee.credits(p) for p in panel] == [0, 0, 0]
        tasks.claimBond(task, watcher.address, commitment, sender=keeper)
        assert tasks.credits(watcher) == (n + 1) * CBOND
        assert tasks.getTask(task).status == COMMITTED
    assert [committee.getAuditor(a).stake for a in auditors[:6]] == [AUDITOR_STAKE] * 6
    chain.pending_timestamp = tasks.getTask(task).challengeEnd
    tasks.finalize(task, sender=keeper)
    assert tasks.getTask(task).status == FINALIZED
    assert (tasks.credits(provider), tasks.credits(owner)) == (REWARD + BOND, 0)


def test_an_excused_panelist_s_silence_gets_the_round_drawn_again(
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
    counted toward a stall (since v3's review 6 no no-decision does), at no cost to anyone. Now the round is
    drawn again."""
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
    assert tasks.getDispute(dispute).verdict == 0 and committee.getDispute(dispute).reruns == 1


def test_a_no_decision_by_starvation_charges_nothing(
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
    charge (nobody judged it); the task goes on."""
    register(auditors[:2])
    task, _ = opened_task(**SMALL)
    commitment = commit_challenge(tasks, task, 0, watcher)
    dispute = reveal(tasks, task, 0, watcher)
    chain.pending_timestamp = committee.getDispute(dispute).roundStartedAt + committee.STARVATION_TIMEOUT()
    chain.mine(SEED_DELAY + 1)
    committee.rearm(dispute, sender=keeper)
    assert tasks.getDispute(dispute).verdict == NO_DECISION and tasks.getTask(task).status == COMMITTED
    tasks.claimBond(task, watcher.address, commitment, sender=keeper)
    assert tasks.credits(watcher) == CBOND


def test_every_way_a_task_ends_credits_the_owner_what_protocol_4_1_says(
    tasks: Any,
    post_task: Any,
    owner: Any,
    provider: Any,
    keeper: Any,
    chain: Any,
    opened_task: Any,
    evidence: Any,
    commit: Any,
    draw: Any,
) -> None:
    """Cancelled: the reward back; abandoned: the reward and the provider bond; slashed for an unopened batch:
    the reward and the provider bond less the keeper's share; finalized: nothing, the provider is paid. (A
    faulty slash's 70% is checked with the dispute payouts.) Each credit to the wei, one task at a time."""
    cancelled = post_task()
    tasks.cancel(cancelled, sender=owner)
    assert tasks.credits(owner) == REWARD
    abandoned = post_task(deadline=chain.pending_timestamp + 100)
    tasks.acceptTask(abandoned, sender=provider, value=BOND)
    chain.pending_timestamp += 200
    tasks.abandon(abandoned, sender=keeper)
    assert tasks.credits(owner) == REWARD + (REWARD + BOND)
    slashed = post_task()
    tasks.acceptTask(slashed, sender=provider, value=BOND)
    commit(evidence(slashed), [0])
    draw(slashed, 0)
    chain.pending_timestamp = tasks.getBatch(slashed, 0).windowEnd
    tasks.slashUnopened(slashed, 0, sender=keeper)
    keeper_share = BOND * tasks.KEEPER_BPS() // 10_000
    assert tasks.credits(owner) == REWARD + (REWARD + BOND) + (REWARD + BOND - keeper_share)
    assert tasks.credits(keeper) == keeper_share
    finalized, _ = opened_task()
    chain.pending_timestamp = tasks.getTask(finalized).challengeEnd
    tasks.finalize(finalized, sender=keeper)
    assert tasks.credits(owner) == REWARD + (REWARD + BOND) + (REWARD + BOND - keeper_share)
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
