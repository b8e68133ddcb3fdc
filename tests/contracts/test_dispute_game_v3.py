"""Dispute game v3 (issue 45): each attack the outside reviews played on v2's committee, played again on anvil.

The promise under test: an auditor that runs the node honestly and stays online loses stake only if a captured
round's verdict stood and its own appeals failed, or its own replay judged a sound interval faulty; and nobody
can lower the honest committee's eligible stake by more than they lose themselves. An honest auditor here does
what the shipped node does (ovig_node/nodes/auditor.py): it always reveals a ballot on its seat, ``sound`` or
``faulty`` from its replay when it obtained the files, ``unavailable`` when it did not (a task no node can load,
a file withheld). Every test checks that no honest auditor lost a wei of stake and that every one of them is
still eligible, besides what the attack wanted.

The suite's committee: rounds of 3, 7 and 15 seats; L = 4, so auditors register with 6 penalties and stay
eligible from 4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import (
    ABSTAIN,
    AUDITOR_STAKE,
    AWAITING_PANEL,
    BALLOT_UNAVAILABLE,
    COMMITTED,
    COMMITTEE,
    DEFAULTS,
    ELIGIBLE_STAKE,
    FAULTY,
    MIN_BONDS,
    NO_DECISION,
    OUT_OF_BOUNDS,
    RESOLVED,
    SHARES,
    SLASHED,
    UNAVAILABLE,
    V_UNAVAILABLE,
    VALID,
    challenge_commitment,
    commit_challenge,
    deploy_pair,
    emitted,
    post_args,
    reveal,
    sampled_intervals,
    settle_seats,
    vote_commitment,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")

CBOND, BOND = DEFAULTS["challengerBond"], DEFAULTS["providerBond"]
ABOND = MIN_BONDS[1]  # the unit of an appeal bond: the smallest challenger bond (review 12)
APPEAL_WINDOW, STARVATION = COMMITTEE["appealWindow"], COMMITTEE["starvationTimeout"]
SMALL = {"totalSteps": 400, "intervalsPerBatch": 4, "sampleBps": 10_000}


@pytest.fixture
def honest_auditors(register: Callable[..., None], auditors: list[Any]) -> list[Any]:
    """Twenty-five honest auditors: every round of a dispute (3 + 7 + 15 seats) seats honest ones only. (Not named
    `honest`: Ape tracks fixtures by name across the session, and another module's `honest` is parametrized,
    which broke this module's isolation.)"""
    register(auditors[:25])
    return auditors[:25]


@pytest.fixture
def play(committee: Any, keeper: Any, draw_panel: Any, vote: Any) -> Callable[..., list[str]]:
    """Draw the dispute's current round and have each panelist reveal the ballot ``ballot(panelist)`` gives
    (None: silent); then resolve it. Returns the panel."""

    def run(dispute: int, ballot: Callable[[str], int | None]) -> list[str]:
        panel = draw_panel(dispute)
        vote(dispute, {p: b for p in panel if (b := ballot(p)) is not None})
        committee.resolve(dispute, sender=keeper)
        return panel

    return run


@pytest.fixture
def challenged(tasks: Any, opened_task: Any, watcher: Any) -> Callable[[], tuple[int, int, int]]:
    """A small task posted and opened, its first sampled interval challenged by the watcher (commit, reveal).
    Returns (task, k, dispute). A factory: a test registers its auditors first."""

    def run() -> tuple[int, int, int]:
        task, _ = opened_task(**SMALL)
        k = sampled_intervals(tasks, task, 0)[0]
        commit_challenge(tasks, task, k, watcher)
        return task, k, reveal(tasks, task, k, watcher)

    return run


@pytest.fixture
def every_run_voided(committee: Any, challenged: Any, play: Any) -> Callable[[int | None], tuple[int, int, int]]:
    """A watcher's dispute whose every run gets ``ballot`` from every panelist (None: silence), which voids it:
    it is drawn again MAX_RERUNS times, then ends. Returns (task, k, dispute)."""

    def run(ballot: int | None) -> tuple[int, int, int]:
        task, k, dispute = challenged()
        for n in range(committee.MAX_RERUNS() + 1):
            play(dispute, lambda p: ballot)
            assert committee.getDispute(dispute).run == n + (n < committee.MAX_RERUNS())
        return task, k, dispute

    return run


def untouched(committee: Any, who: list[Any]) -> None:
    """No honest auditor lost stake, and every one is still eligible."""
    stakes = [committee.getAuditor(a).stake for a in who]
    assert stakes == [AUDITOR_STAKE] * len(who), "an honest auditor lost stake"
    assert min(stakes) >= ELIGIBLE_STAKE


def starve(committee: Any, dispute: int, keeper: Any, chain: Any) -> None:
    """Keep trying to draw the dispute's current round, re-arming it, until the starvation timeout ends it."""
    chain.pending_timestamp = committee.getDispute(dispute).roundStartedAt + STARVATION
    while committee.getDispute(dispute).status == AWAITING_PANEL:
        mine = committee.panelTarget(dispute) + 1 - chain.blocks.height
        if mine > 0:
            chain.mine(mine)
        try:
            committee.drawPanel(dispute, sender=keeper)
        except ape.exceptions.ContractLogicError:
            committee.rearm(dispute, sender=keeper)


def test_a_task_no_honest_auditor_can_load_empties_nothing(
    committee: Any,
    tasks: Any,
    keeper: Any,
    opened_task: Any,
    owner: Any,
    provider: Any,
    auditors: list[Any],
    honest_auditors: list[Any],
    play: Any,
    chain: Any,
) -> None:
    """Attack 1 (critical): a throwaway task whose spec no node can load, challenged by the attacker's sock
    puppet. v2's node never voted on it, every silent seat lost a penalty and was drawn again, and one dispute
    walked the whole registry below eligibility. Now every honest panelist answers ``unavailable``: an
    unavailable round before the last arms the next at no bond, the last one slashes the task, and no ballot
    loses. The attacker's sybils, which committed on the junk task first so as never to be drawn, gain nothing:
    the attacker pays the panel's share of its own provider bond (and the gas)."""
    sybils = auditors[25:28]
    task, _ = opened_task(**SMALL)  # the attacker is its owner and provider
    k = sampled_intervals(tasks, task, 0)[0]
    for i, sybil in enumerate(sybils):  # interested first: never drawn on the junk task's disputes
        committee.register(sender=sybil, value=AUDITOR_STAKE)
        commit_challenge(tasks, task, sampled_intervals(tasks, task, 0)[1], sybil, salt=bytes([i + 1]) * 32)
    chain.mine(COMMITTEE["warmupBlocks"])
    commit_challenge(tasks, task, k, keeper, UNAVAILABLE)  # the sock puppet
    dispute = reveal(tasks, task, k, keeper, UNAVAILABLE)
    seated: list[str] = []
    for round_ in range(COMMITTEE["maxRounds"]):
        panel = play(dispute, lambda p: BALLOT_UNAVAILABLE)
        assert not set(panel) & {s.address for s in sybils}
        seated += panel
        d = committee.getDispute(dispute)
        if round_ + 1 < COMMITTEE["maxRounds"]:  # the next round is armed at no bond: nobody had to appeal
            assert (d.status, d.round) == (AWAITING_PANEL, round_ + 1)
    assert committee.getDispute(dispute).verdict == V_UNAVAILABLE and committee.heldAppealBonds() == 0
    assert len(set(seated)) == 3 + 7 + 15 and tasks.getTask(task).status == SLASHED
    settle_seats(committee, dispute, keeper)
    assert emitted(committee.Penalized, 0, dispute=dispute) == []
    untouched(committee, honest_auditors)
    # The attacker's own roles get the lead's 20% (once the sybils' unrevealed commits expire, burned) and the
    # owner's 70% back: the panel's 10% is what it lost, paid to the last round's fifteen.
    last = seated[-15:]
    assert [committee.credits(p) for p in last] == [BOND * SHARES[1] // 10_000 // 15] * 15
    assert tasks.credits(owner) == BOND * SHARES[2] // 10_000 + DEFAULTS["reward"]
    other = sampled_intervals(tasks, task, 0)[1]
    for i, sybil in enumerate(sybils):
        commitment = challenge_commitment(task, other, OUT_OF_BOUNDS, bytes([i + 1]) * 32, sybil.address)
        tasks.expireChallenge(task, sybil.address, commitment, sender=keeper)
    tasks.releaseLeadShare(task, sender=keeper)
    assert tasks.credits(keeper) == BOND * SHARES[0] // 10_000 and tasks.credits(provider) == 0


def test_an_availability_flip_drains_no_honest_auditor(
    committee: Any,
    tasks: Any,
    keeper: Any,
    all_sampled: Any,
    provider: Any,
    honest_auditors: list[Any],
    play: Any,
) -> None:
    """Attack 2 (high): the provider's sock puppet challenges a sound interval as unavailable; the provider
    withholds the evidence from rounds 0 and 1 (honest panelists rightly answer unavailable) and serves it to the
    last, which finds it sound. v2 took a penalty from every honest voter of the overturned rounds. Now an
    unavailable ballot never loses, the unavailable rounds armed the next at no bond (no appeal bond came back to
    the attacker: it paid none), and the challenge costs the sock puppet its bond's sound split."""
    task, _ = all_sampled
    commit_challenge(tasks, task, 5, keeper, UNAVAILABLE)
    dispute = reveal(tasks, task, 5, keeper, UNAVAILABLE)
    play(dispute, lambda p: BALLOT_UNAVAILABLE)  # withheld
    play(dispute, lambda p: BALLOT_UNAVAILABLE)  # withheld
    play(dispute, lambda p: VALID)  # served to the last round
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.round) == (RESOLVED, VALID, 2)
    settle_seats(committee, dispute, keeper)
    assert emitted(committee.Penalized, 0, dispute=dispute) == []
    untouched(committee, honest_auditors)
    assert tasks.getOpenedInterval(task, 5).sound and tasks.getTask(task).status == COMMITTED
    assert tasks.credits(provider) == 0  # none of its own sock's bond: revealed as unavailable, its half is burned


def test_the_reverse_flip_and_selective_serving_drain_no_honest_auditor(
    committee: Any,
    tasks: Any,
    keeper: Any,
    all_sampled: Any,
    provider: Any,
    owner: Any,
    honest_auditors: list[Any],
    play: Any,
) -> None:
    """Attack 7 (critical, confirmed on anvil): an attacker who is owner, provider and lead challenger of a sound
    junk task serves the evidence to rounds 0 and 1 (honest panelists answer sound), appeals each for faulty,
    and withholds it from the last round, half of whose panel it still serves. v2 ended it faulty and took a
    penalty from every honest sound voter. Now the last round's faulty-or-unavailable majority slashes the
    attacker's own task on availability, and no ballot loses: an UNAVAILABLE outcome penalises none. The attacker
    lost the panel's share of its own provider bond; the honest committee lost nothing."""
    task, _ = all_sampled
    commit_challenge(tasks, task, 5, provider)  # the attacker leads its own junk dispute
    dispute = reveal(tasks, task, 5, provider)
    for round_ in range(2):
        play(dispute, lambda p: VALID)  # served: sound
        d = committee.getDispute(dispute)
        assert d.decided == VALID
        committee.appeal(dispute, sender=owner, value=ABOND << (round_ + 1))  # "for faulty"
    served: set[str] = set()

    def selective(panelist: str) -> int:  # the file reaches seven of the fifteen only
        if len(served) < 7:
            served.add(panelist)
            return VALID
        return BALLOT_UNAVAILABLE

    play(dispute, selective)
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.round) == (RESOLVED, V_UNAVAILABLE, 2)
    assert tasks.getTask(task).status == SLASHED
    settle_seats(committee, dispute, keeper)
    assert emitted(committee.Penalized, 0, dispute=dispute) == []
    untouched(committee, honest_auditors)
    # The appeals asked for the slash side and got it: refunded. Eight unavailable ballots share the panel's 10%.
    assert committee.credits(owner) == 2 * ABOND + 4 * ABOND
    unavailable = [p for p in committee.panelOf(dispute) if p not in served]
    assert [committee.credits(p) for p in unavailable] == [BOND * SHARES[1] // 10_000 // 8] * 8


def test_a_junk_dispute_does_not_lock_an_auditor_watcher_out(
    tasks: Any, opened_task: Any, register: Any, auditors: list[Any], draw_panel: Any, watcher: Any
) -> None:
    """Attack 3 (low-medium): a junk dispute of a sound interval, opened at batch opening, kept an auditor that is
    also a watcher from challenging the task's faked interval until its window closed (PanelistCannotChallenge).
    Now nothing bars it: it challenges while seated, and the fake is slashed."""
    register(auditors[:3])
    task, _ = opened_task(**SMALL)
    sound_k, faked_k = sampled_intervals(tasks, task, 0)[:2]
    commit_challenge(tasks, task, sound_k, watcher)
    junk_dispute = reveal(tasks, task, sound_k, watcher)
    panel = draw_panel(junk_dispute)
    auditor_watcher = auditors[0]
    assert auditor_watcher.address in panel
    commit_challenge(tasks, task, faked_k, auditor_watcher)
    real = reveal(tasks, task, faked_k, auditor_watcher)
    assert real != 0 and tasks.getOpenedInterval(task, faked_k).lead == auditor_watcher.address


def test_a_flood_that_starves_an_appeal_round_buys_no_verdict(
    committee: Any,
    tasks: Any,
    keeper: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    play: Any,
    watcher: Any,
    chain: Any,
) -> None:
    """Attack 6 (medium): a flood that keeps an appeal round from seating let a lucky captured round-0 verdict
    stand. Now an appealed verdict stands only if a later round confirms it: the starved appeal round ends the
    dispute with a no-decision, the interval's window reopens, and it can be challenged again."""
    register(auditors[:10])
    task, _ = opened_task(**SMALL, windows=(3600, 4 * 24 * 3600, 600))  # open through round 0 and the flood
    faked, other = sampled_intervals(tasks, task, 0)[:2]
    commit_challenge(tasks, task, faked, watcher)
    dispute = reveal(tasks, task, faked, watcher)
    play(dispute, lambda p: VALID)  # a captured round 0 finds the faked interval sound
    # The flood: before the appeal arms round 1, four auditors commit on the task, so only three of its seven
    # seats can be filled.
    seated = set(committee.panelOf(dispute))
    flood = [a for a in auditors[:10] if a.address not in seated][:4]
    for i, a in enumerate(flood):
        commit_challenge(tasks, task, other, a, salt=bytes([i + 9]) * 32)
    committee.appeal(dispute, sender=watcher, value=2 * ABOND)
    starve(committee, dispute, keeper, chain)
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict) == (RESOLVED, NO_DECISION)
    iv = tasks.getOpenedInterval(task, faked)
    assert not iv.sound and tasks.getTask(task).status == COMMITTED  # nobody judged it
    assert tasks.challengeWindowEnd(task, faked) > chain.pending_timestamp  # challengeable again
    # The appeal asked for faulty and no later round confirmed anything: back, less the panel's part (burned).
    assert committee.credits(watcher) == 2 * ABOND - 2 * ABOND * COMMITTEE["panelBps"] // 10_000
    commit_challenge(tasks, task, faked, watcher, salt=b"\x44" * 32)
    assert reveal(tasks, task, faked, watcher, salt=b"\x44" * 32) != 0


def test_a_withholding_provider_in_a_small_registry_costs_the_watcher_nothing(
    committee: Any,
    tasks: Any,
    keeper: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    play: Any,
    watcher: Any,
    chain: Any,
    challenged: Any,
) -> None:
    """The second review's open finding: in a registry too small for the later rounds, a provider that withholds
    its faulty interval's files made round 0 UNAVAILABLE, whose free escalation armed a round nobody could seat;
    the dispute ended with a no-decision whose round charges fell on the watcher, again on every
    reopening. Now a run that decided UNAVAILABLE charges no bond: the watcher's comes back whole, and the interval
    is challengeable again (the faulty interval is never paid while the watcher challenges it; a larger registry
    ends it). Round 0's panel is paid nothing: the price of refusing to bill the watcher."""
    register(auditors[:6])  # round 0 seats three; round 1's seven cannot be found among the other three
    task, k, dispute = challenged()
    panel = play(dispute, lambda p: BALLOT_UNAVAILABLE)  # withheld
    assert (committee.getDispute(dispute).status, committee.getDispute(dispute).round) == (AWAITING_PANEL, 1)
    starve(committee, dispute, keeper, chain)
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.round) == (RESOLVED, NO_DECISION, 1)
    assert tasks.getTask(task).status == COMMITTED and tasks.getDispute(dispute).refundPerBond == CBOND
    assert tasks.challengeWindowEnd(task, k) > chain.pending_timestamp  # the watcher challenges it again
    settle_seats(committee, dispute, keeper)
    assert emitted(committee.Penalized, 0, dispute=dispute) == []
    untouched(committee, auditors[:6])
    assert [committee.credits(p) for p in panel] == [0, 0, 0]


def test_a_captured_round_zero_whose_sybils_exit_slashes_no_honest_provider(
    committee: Any,
    tasks: Any,
    keeper: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    play: Any,
    watcher: Any,
    chain: Any,
    challenged: Any,
) -> None:
    """A third review's finding against a first fix of the one above (an UNAVAILABLE outcome standing when the
    round it armed cannot seat): sybils that capture round 0 of an honest task's dispute answer ``unavailable``
    (which never loses) and request their exits, leaving round 1 unseatable, and the honest provider was slashed.
    Now the dispute ends with a no-decision and nobody is slashed; the junk challenger's bond comes back (delay, no
    verdict), and the sybils earn nothing."""
    sybils = auditors[:3]
    register(sybils)  # the whole registry: round 0 is theirs
    task, _, dispute = challenged()  # an honest provider: every interval sound; the watcher here the attacker's
    draw_and_exit = play(dispute, lambda p: BALLOT_UNAVAILABLE)
    for s in sybils:
        committee.requestExit(sender=s)
    assert sorted(draw_and_exit) == sorted(s.address for s in sybils)
    starve(committee, dispute, keeper, chain)
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict) == (RESOLVED, NO_DECISION) and tasks.getTask(task).status == COMMITTED
    settle_seats(committee, dispute, keeper)
    assert [committee.credits(s) for s in sybils] == [0, 0, 0]


def test_a_faulty_round_appealed_into_a_voided_one_costs_the_watcher_nothing(
    committee: Any,
    tasks: Any,
    keeper: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    play: Any,
    watcher: Any,
    provider: Any,
    challenged: Any,
) -> None:
    """A fifth review: a faulty provider appeals its round-0 FAULTY verdict and has round 1 voided (its panelists
    kept busy, or a sybil's excused seat silent) to the re-run bound: the no-decision's round charge for the FAULTY
    run came out of the watcher's bond, on every reopening. Now a run that backed the challenge charges no bond:
    the watcher's comes back whole; the appellant pays PANEL_BPS of its own bond, burned."""
    register(auditors[:10])
    _, _, dispute = challenged()
    panel = play(dispute, lambda p: FAULTY)
    assert committee.getDispute(dispute).decided == FAULTY
    committee.appeal(dispute, sender=provider, value=2 * ABOND)
    for _ in range(committee.MAX_RERUNS() + 1):
        play(dispute, lambda p: ABSTAIN)
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.round) == (RESOLVED, NO_DECISION, 1)
    settle_seats(committee, dispute, keeper)
    assert tasks.getDispute(dispute).refundPerBond == CBOND
    assert committee.credits(provider) == 2 * ABOND - 2 * ABOND * COMMITTEE["panelBps"] // 10_000
    assert [committee.credits(p) for p in panel] == [0, 0, 0]
    untouched(committee, auditors[:10])


def test_the_last_silent_run_is_void_too_so_a_lone_revealer_takes_no_charge(
    committee: Any,
    tasks: Any,
    keeper: Any,
    opened_task: Any,
    register: Any,
    auditors: list[Any],
    play: Any,
    watcher: Any,
    challenged: Any,
) -> None:
    """A third review: a silent run at the re-run bound ended the dispute without being voided, so its round charge
    came out of the watcher's bond and went to whoever revealed in it: one panelist revealing ``unavailable``
    (never penalised) among abstainers took 10% of the bond, on every reopening. Now the last silent run is void
    like the others: the watcher's bond comes back whole and the lone revealer earns nothing."""
    register(auditors[:5])
    _, _, dispute = challenged()
    lone: list[str] = []
    for _ in range(committee.MAX_RERUNS() + 1):
        revealed: list[str] = []

        def ballot(panelist: str, revealed: list[str] = revealed) -> int:  # the run's first reveals, the rest abstain
            revealed.append(panelist)
            return BALLOT_UNAVAILABLE if len(revealed) == 1 else ABSTAIN

        play(dispute, ballot)
        lone.append(revealed[0])
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.reruns) == (RESOLVED, NO_DECISION, 2)
    settle_seats(committee, dispute, keeper)
    assert tasks.getDispute(dispute).refundPerBond == CBOND
    assert [committee.credits(a) for a in lone] == [0] * len(lone)
    untouched(committee, auditors[:5])


def test_a_silent_round_is_drawn_again_at_most_twice_then_the_dispute_ends_with_no_decision(
    committee: Any, tasks: Any, keeper: Any, register: Any, auditors: list[Any], every_run_voided: Any
) -> None:
    """A run most of whose panel stays silent judged nothing: it is voided and drawn again, from the whole pool
    (the voided panelists may sit again), at most MAX_RERUNS times; then the dispute ends with a no-decision
    and the interval's window reopens. Each void run's silent seats lose a penalty; a ballot in a void run
    counts for nothing."""
    register(auditors[:5])
    task, k, dispute = every_run_voided(None)  # everyone silent
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.round, d.reruns) == (RESOLVED, NO_DECISION, 0, 2)
    assert tasks.challengeWindowEnd(task, k) == tasks.getOpenedInterval(task, k).windowEnd
    settle_seats(committee, dispute, keeper)
    assert len(emitted(committee.Penalized, 0, dispute=dispute)) == 9  # every seat of the three runs was silent


def test_a_replay_no_node_finishes_in_time_costs_honest_auditors_nothing(
    committee: Any, tasks: Any, keeper: Any, register: Any, auditors: list[Any], every_run_voided: Any
) -> None:
    """The second review's critical finding: a junk task whose replay takes longer than a commit window. An honest
    node with no verdict by its commit deadline abstains (ballot 4): counted for no outcome and toward no quorum,
    as silence is, so each run is voided and drawn again and the dispute ends with a no-decision, the
    challenger's bond back whole; but unlike silence no abstaining seat is penalised, and none is paid."""
    register(auditors[:5])
    _, _, dispute = every_run_voided(ABSTAIN)
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.reruns) == (RESOLVED, NO_DECISION, 2)
    settle_seats(committee, dispute, keeper)
    assert emitted(committee.Penalized, 0, dispute=dispute) == []
    untouched(committee, auditors[:5])
    assert [committee.credits(a) for a in auditors[:5]] == [0] * 5
    assert tasks.getDispute(dispute).refundPerBond == CBOND


def test_a_junk_task_pays_round_zeros_replays_from_its_provider_bond(project: Any, owner: Any, chain: Any) -> None:
    """Junk priced: postTask refuses a provider bond whose panel share (10%) would not pay round 0's three replays
    at the declared replay time (replayPrice per second), so a self-slashed junk task pays for the work it
    causes."""
    committee, tasks = deploy_pair(project, owner, replayPrice=10**14)
    terms = {**DEFAULTS, "replaySeconds": 900, "providerBond": MIN_BONDS[0]}
    needed = 3 * 900 * 10**14 * 10_000 // SHARES[1]  # 2.7 ETH
    assert committee.replayCost(900) == 3 * 900 * 10**14
    deadline = chain.pending_timestamp + 24 * 3600
    with ape.reverts(tasks.BondTooLow, which="provider", minimum=needed, given=MIN_BONDS[0]):
        tasks.postTask(*post_args(terms, deadline), sender=owner, value=terms["reward"])
    ok = {**terms, "providerBond": needed}
    tasks.postTask(*post_args(ok, deadline), sender=owner, value=ok["reward"])
    assert tasks.getTask(1).terms.providerBond == needed


def test_settlement_pages_through_many_seats_with_bounded_calls(
    committee: Any,
    tasks: Any,
    keeper: Any,
    all_sampled: Any,
    honest_auditors: list[Any],
    play: Any,
    owner: Any,
) -> None:
    """Rounds of 3 and 7 decide faulty and are appealed; the last round's first run (15 seats) stays silent and is
    drawn again: 40 seats. Settling them takes one bounded settleSeats call per SEATS_PER_CALL seats; the void
    run's silent seats lose their penalty; exits wait for the seats; the panel's money is all paid or burned."""
    task, _ = all_sampled
    commit_challenge(tasks, task, 5, keeper)
    dispute = reveal(tasks, task, 5, keeper)
    for round_ in range(2):
        play(dispute, lambda p: FAULTY)
        committee.appeal(dispute, sender=owner, value=ABOND << (round_ + 1))
    play(dispute, lambda p: None)  # voided: drawn again from the same fifteen
    play(dispute, lambda p: FAULTY)
    assert committee.getDispute(dispute).status == RESOLVED and committee.heldForSeats() > 0
    assert len(committee.seatsOf(dispute)) == 40
    gas = []
    while not committee.getDispute(dispute).seatsSettled:
        gas.append(committee.settleSeats(dispute, sender=keeper).gas_used)
    assert len(gas) == -(-40 // committee.SEATS_PER_CALL()) == 2 and committee.heldForSeats() == 0
    assert max(gas) < 2_000_000
    assert len(emitted(committee.Penalized, 0, dispute=dispute)) == 15
    assert [committee.getAuditor(a).openSeats for a in honest_auditors] == [0] * 25


def test_sybils_registered_once_a_dispute_is_under_way_never_sit_on_it(
    committee: Any,
    tasks: Any,
    keeper: Any,
    all_sampled: Any,
    register: Callable[..., None],
    auditors: list[Any],
    provider: Any,
    play: Any,
    chain: Any,
) -> None:
    """Found by the attacker's review of v3: rounds are drawn from the registry as of their own arm block, so a
    provider that escalates its dispute (withholding its files, or appealing) could register sybils after round 0
    and have them warmed up for the last round, whose panel it hopes to capture. An auditor is now eligible for a
    later round only if it was eligible as of the dispute's first arm block too."""
    register(auditors[:12])
    task, _ = all_sampled
    commit_challenge(tasks, task, 5, keeper)
    dispute = reveal(tasks, task, 5, keeper)
    first = play(dispute, lambda p: FAULTY)
    late = auditors[12:20]  # registered and warmed up before round 1 is armed
    for a in late:
        committee.register(sender=a, value=AUDITOR_STAKE)
    chain.mine(COMMITTEE["warmupBlocks"])
    committee.appeal(dispute, sender=provider, value=2 * ABOND)
    second = play(dispute, lambda p: FAULTY)
    assert len(second) == 7 and not set(second) & {a.address for a in late} and not set(second) & set(first)


def test_a_silent_panelist_cannot_dodge_its_penalty_by_challenging_after_its_run(
    committee: Any,
    tasks: Any,
    keeper: Any,
    watcher: Any,
    opened_task: Any,
    panel_of_three: list[Any],
    draw_panel: Any,
    vote: Any,
    chain: Any,
    challenged: Any,
) -> None:
    """Found by the attacker's review of v3: a panelist silent on its seat, once the round was resolved, committed a
    challenge on the still-active task before its seat was settled, and the settlement excused it as interested.
    Interest excuses silence only if it came by the end of the run."""
    task, k, dispute = challenged()
    panel = draw_panel(dispute)
    lazy = next(a for a in panel_of_three if a.address == panel[0])
    vote(dispute, {p: VALID for p in panel[1:]})  # lazy never commits nor reveals
    committee.resolve(dispute, sender=keeper)
    chain.pending_timestamp = committee.getDispute(dispute).decidedAt + APPEAL_WINDOW
    committee.resolve(dispute, sender=keeper)
    commit_challenge(tasks, task, k, lazy, salt=b"\x99" * 32)  # after its run: too late to excuse its silence
    settle_seats(committee, dispute, keeper)
    assert emitted(committee.Penalized, 0, "panelist", dispute=dispute) == [(lazy.address,)]


# --- review 12 -------------------------------------------------------------------------------------


def test_a_sybil_cannot_buy_its_losing_ballot_out_by_taking_an_interest_after_the_reveals(
    committee: Any,
    tasks: Any,
    keeper: Any,
    watcher: Any,
    opened_task: Any,
    panel_of_three: list[Any],
    draw_panel: Any,
    chain: Any,
    challenge: Any,
) -> None:
    """Review 12, F1 (confirmed on anvil): a sybil panelist commits `sound` on a faulty interval, sees the honest
    reveals go `faulty`, and only then challenges the task itself (joining the same dispute, its bond refunded on
    the slash) and keeps its ballot hidden: the settlement excused its silent seat as interested, so a failed
    capture cost it nothing. Interest now excuses only a seat that never committed a ballot: its stake loses
    PENALTY, and the honest panelists' stakes are whole."""
    task, _ = opened_task(**SMALL)
    k = sampled_intervals(tasks, task, 0)[0]
    dispute = challenge(task, k, watcher)
    panel = draw_panel(dispute)
    by = {a.address: a for a in panel_of_three}
    sybil, honest = by[panel[0]], [by[p] for p in panel[1:]]
    d = committee.getDispute(dispute)
    salt = b"\x5e" * 32
    committee.commitVote(dispute, vote_commitment(dispute, d.run, VALID, salt, sybil.address), sender=sybil)
    for h in honest:
        committee.commitVote(dispute, vote_commitment(dispute, d.run, FAULTY, salt, h.address), sender=h)
    chain.pending_timestamp = d.drawnAt + committee.COMMIT_WINDOW()
    for h in honest:
        committee.revealVote(dispute, FAULTY, salt, sender=h)
    commit_challenge(tasks, task, k, sybil, salt=b"\x99" * 32)  # interested, after the reveals
    assert reveal(tasks, task, k, sybil, salt=b"\x99" * 32) == dispute
    chain.pending_timestamp = d.drawnAt + committee.COMMIT_WINDOW() + committee.REVEAL_WINDOW()
    committee.resolve(dispute, sender=keeper)
    chain.pending_timestamp = committee.getDispute(dispute).decidedAt + APPEAL_WINDOW
    committee.resolve(dispute, sender=keeper)
    assert committee.getDispute(dispute).verdict == FAULTY and tasks.getTask(task).status == SLASHED
    settle_seats(committee, dispute, keeper)
    assert emitted(committee.Penalized, 0, "panelist", dispute=dispute) == [(sybil.address,)]
    assert committee.getAuditor(sybil).stake == AUDITOR_STAKE - COMMITTEE["penalty"]
    assert [committee.getAuditor(h).stake for h in honest] == [AUDITOR_STAKE] * 2


def test_an_owner_cannot_price_honest_appeals_out_of_reach_with_a_huge_challenger_bond(
    committee: Any,
    tasks: Any,
    keeper: Any,
    opened_task: Any,
    watcher2: Any,
    honest_auditors: list[Any],
    draw_panel: Any,
    vote: Any,
    chain: Any,
) -> None:
    """Review 12, F2 (confirmed on anvil): an attacker owner set its task's challenger bond to 10 ETH, so an appeal
    of round 0 cost 20 ETH, far past an honest node's budget, and a captured round stood. The appeal is priced from
    the deployment's smallest challenger bond, whatever the task asks: an honest auditor appeals the captured
    FAULTY with 2 x MIN_CHALLENGER_BOND and the next round overturns it; the appellant is refunded whole."""
    big = 10 * 10**18
    task, _ = opened_task(**SMALL, challengerBond=big)
    k = sampled_intervals(tasks, task, 0)[0]
    salt = b"\x42" * 32
    tasks.commitChallenge(task, challenge_commitment(task, k, 1, salt, watcher2.address), sender=watcher2, value=big)
    dispute = reveal(tasks, task, k, watcher2, salt=salt)
    first = draw_panel(dispute)
    vote(dispute, dict.fromkeys(first, FAULTY))  # a captured round 0: the interval is sound
    committee.resolve(dispute, sender=keeper)
    appellant = next(a for a in honest_auditors if a.address not in first)
    with ape.reverts(committee.WrongBond, expected=2 * ABOND, sent=2 * big):
        committee.appeal(dispute, sender=appellant, value=2 * big)
    committee.appeal(dispute, sender=appellant, value=2 * ABOND)
    second = draw_panel(dispute)
    vote(dispute, dict.fromkeys(second, VALID))
    committee.resolve(dispute, sender=keeper)
    chain.pending_timestamp = committee.getDispute(dispute).decidedAt + APPEAL_WINDOW
    committee.resolve(dispute, sender=keeper)
    assert committee.getDispute(dispute).verdict == VALID
    assert committee.credits(appellant) == 2 * ABOND  # refunded whole (its seats are not settled yet)


def test_an_appeal_for_sound_that_the_provider_then_starves_of_its_files_is_refunded_as_a_no_decision(
    committee: Any,
    tasks: Any,
    keeper: Any,
    all_sampled: Any,
    provider: Any,
    honest_auditors: list[Any],
    play: Any,
) -> None:
    """Review 12 (by reading): a provider serves its files while a captured round finds its sound interval faulty,
    lets an honest auditor appeal for sound, and withholds them from every later round: the final UNAVAILABLE
    counted as faulty, and the honest appellant lost its bond to a verdict no replay reached. An outcome decided
    on availability refunds an appeal for sound as a no-decision does, less PANEL_BPS (burned)."""
    task, _ = all_sampled
    commit_challenge(tasks, task, 5, provider)
    dispute = reveal(tasks, task, 5, provider)
    play(dispute, lambda p: FAULTY)  # captured
    appellant = honest_auditors[-1]
    committee.appeal(dispute, sender=appellant, value=2 * ABOND)
    for _ in range(2):
        play(dispute, lambda p: BALLOT_UNAVAILABLE)  # withheld: round 1 arms round 2 at no bond, round 2 ends it
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict) == (RESOLVED, V_UNAVAILABLE)
    part = 2 * ABOND * COMMITTEE["panelBps"] // 10_000
    assert committee.credits(appellant) == 2 * ABOND - part
