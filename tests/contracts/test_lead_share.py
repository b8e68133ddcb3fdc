"""Who is paid the lead's share of a slash (protocol 4.2 and 4.3, as amended after the decoy attack).

The promise: the lead's share goes to the earliest commit revealed into a dispute of the task that is found
faulty, whichever of the task's disputes happens to end first. The attack it answers, found by the
adversarial simulation: a provider who faked intervals 2 and 5 reveals a challenge of 2 at once; its dispute
ends first and slashed the task, mooting the watcher's dispute of 5, so the watcher who committed first was
paid nothing and the provider's sock-puppet took a fifth of its own bond back. Now a slash's lead share waits
(`waitingLead`) while the task's challenges made before its lead's commit are judged on; `releaseLeadShare`
pays it once none is left. What stays conceded (protocol section 6): the provider, who knows its faults at
opening time, may itself commit first on a fault and take the share; deterrence rests on the owner's share.

The committee here votes in minutes, not hours, so a commit made before the slashing lead's can still be
pending when the task is slashed; the parameters are otherwise the suite's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import (
    C_JOINED,
    DEFAULTS,
    FAULTY,
    LEAD,
    MOOT,
    NO_DECISION,
    OUT_OF_BOUNDS,
    OWNER_SHARE,
    SHARES,
    SLASHED,
    UNAVAILABLE,
    VALID,
    Evidence,
    challenge_commitment,
    commit_challenge,
    module_pair,
    reveal,
    settle,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")
REWARD, CBOND = DEFAULTS["reward"], DEFAULTS["challengerBond"]
# The longest challenge reveal window (MAX_REVEAL_WINDOW), longer than a whole committee round below.
LONG_REVEAL = (3600, 7200, 3600)


# The suite's pair with a quick committee: a round takes five minutes of votes and one of appeal (its commit
# window must still cover L replays of the longest declared replay time).
deployed_pair, committee, tasks = module_pair(
    "a quick committee", maxReplaySeconds=45, commitWindow=180, revealWindow=120, appealWindow=60
)


@pytest.fixture
def two_faked(opened_task: Callable[..., tuple[int, Evidence]]) -> int:
    """A task whose every interval is sampled and opened, with a reveal window longer than a committee round.
    Which intervals are faulty is what the panels vote: here 2 and 5 (the tests say so as they vote)."""
    task, _ = opened_task(sampleBps=10_000, windows=LONG_REVEAL, replaySeconds=30)
    return task


def test_a_decoy_dispute_decided_first_cannot_take_the_lead_share_from_an_earlier_challenger(
    tasks: Any,
    committee: Any,
    two_faked: int,
    provider: Any,
    watcher: Any,
    keeper: Any,
    owner: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    task = two_faked
    of_5 = commit_challenge(tasks, task, 5, watcher)  # the watcher replayed 5, found it faulty, committed
    decoy = commit_challenge(tasks, task, 2, provider, UNAVAILABLE, salt=b"\x01" * 32)  # the provider, later
    first = reveal(tasks, task, 2, provider, UNAVAILABLE, salt=b"\x01" * 32)  # revealed at once
    second = reveal(tasks, task, 5, watcher)
    decide(first, FAULTY)  # and decided first: the task is slashed through interval 2
    t = tasks.getTask(task)
    assert (t.status, t.waitingLead) == (SLASHED, provider.address)
    assert tasks.credits(provider) == 0 and tasks.credits(owner) == OWNER_SHARE + REWARD
    assert not tasks.isMoot(second)  # led by an earlier commit: still judged
    with ape.reverts(tasks.DisputeOpen, task=task, disputes=1):
        tasks.releaseLeadShare(task, sender=provider)
    decide(second, FAULTY)
    assert tasks.getDispute(second).verdict == FAULTY
    assert tasks.getTask(task).waitingLead == watcher.address
    tx = tasks.releaseLeadShare(task, sender=provider)
    assert [(e.lead, e.amount) for e in tx.events.filter(tasks.LeadShareReleased)] == [(watcher.address, LEAD)]
    tasks.claimBond(task, watcher.address, of_5, sender=keeper)
    tasks.claimBond(task, provider.address, decoy, sender=keeper)
    assert tasks.credits(watcher) == LEAD + CBOND
    assert tasks.credits(provider) == CBOND  # its challenger bond back, nothing of its own provider bond
    assert tasks.credits(owner) == OWNER_SHARE + REWARD
    assert tasks.getTask(task).waitingLeadSeq == 0


def test_an_earlier_challenge_still_pending_at_the_slash_is_revealed_into_a_live_dispute(
    tasks: Any,
    two_faked: int,
    provider: Any,
    watcher: Any,
    keeper: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    """The watcher's replay is slower than the decoy's panel: its commit is still pending at the slash."""
    task = two_faked
    commit_challenge(tasks, task, 5, watcher)
    commit_challenge(tasks, task, 2, provider, UNAVAILABLE, salt=b"\x01" * 32)
    decide(reveal(tasks, task, 2, provider, UNAVAILABLE, salt=b"\x01" * 32), FAULTY)
    with ape.reverts(tasks.ChallengePending, task=task, commits=1):
        tasks.releaseLeadShare(task, sender=provider)
    mine = challenge_commitment(task, 5, OUT_OF_BOUNDS, b"\x07" * 32, watcher.address)
    with ape.reverts(tasks.RevealWindowOpen):  # made before the lead's commit: not moot, not expirable yet
        tasks.expireChallenge(task, watcher.address, mine, sender=provider)
    dispute = reveal(tasks, task, 5, watcher)
    assert dispute != 0 and tasks.getCommit(watcher.address, mine).status == C_JOINED
    decide(dispute, FAULTY)
    tasks.releaseLeadShare(task, sender=keeper)
    assert tasks.credits(watcher) == LEAD


def test_an_earlier_challenge_found_sound_after_the_slash_leaves_the_share_to_the_slashing_lead(
    tasks: Any,
    committee: Any,
    two_faked: int,
    provider: Any,
    watcher: Any,
    watcher2: Any,
    keeper: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    task = two_faked
    commit_challenge(tasks, task, 5, watcher2)  # earlier, and wrong: 5 is sound
    commit_challenge(tasks, task, 2, watcher)
    sound = reveal(tasks, task, 5, watcher2)
    decide(reveal(tasks, task, 2, watcher), FAULTY)
    decide(sound, VALID)  # judged after the slash, and sound: its bond settles as any sound verdict's
    assert tasks.getOpenedInterval(task, 5).sound
    assert tasks.getTask(task).waitingLead == watcher.address
    tasks.releaseLeadShare(task, sender=keeper)
    assert tasks.credits(watcher) == LEAD
    assert tasks.credits(watcher2) == 0
    assert tasks.credits(provider) == CBOND * SHARES[3] // 10_000  # the provider's share of a sound bond


def test_a_provider_who_commits_first_on_a_fault_is_paid_the_lead_share(
    tasks: Any,
    committee: Any,
    two_faked: int,
    provider: Any,
    watcher: Any,
    keeper: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    """What stays conceded (protocol section 6): the lead's share rewards the first commit on a fault, and the
    provider, who knows its faults at opening time, may make it. Deterrence rests on the owner's share."""
    task = two_faked
    decoy = commit_challenge(tasks, task, 2, provider, UNAVAILABLE, salt=b"\x01" * 32)  # first
    commit_challenge(tasks, task, 5, watcher)
    first = reveal(tasks, task, 2, provider, UNAVAILABLE, salt=b"\x01" * 32)
    second = reveal(tasks, task, 5, watcher)
    decide(first, FAULTY)
    assert tasks.isMoot(second)  # its lead committed after the slashing lead: it cannot change who is paid
    settle(committee, second, keeper)
    assert tasks.getDispute(second).verdict == MOOT
    tasks.releaseLeadShare(task, sender=keeper)
    tasks.claimBond(task, provider.address, decoy, sender=keeper)
    assert tasks.credits(provider) == LEAD + CBOND


def test_an_earlier_dispute_left_undecided_after_the_slash_keeps_its_lead_s_claim(
    tasks: Any,
    committee: Any,
    two_faked: int,
    provider: Any,
    watcher: Any,
    keeper: Any,
    chain: Any,
    panel_of_three: list[Any],
    decide: Callable[[int, int], list[str]],
) -> None:
    """Found by an attacker's review: the decoy's provider starves the watcher's earlier dispute (no panel
    ever seats, as a flood or silence could make it) until it ends with no decision. No window can reopen on a
    slashed task, so that no-decision must not hand the share to the later lead."""
    task = two_faked
    commit_challenge(tasks, task, 5, watcher)
    commit_challenge(tasks, task, 2, provider, UNAVAILABLE, salt=b"\x01" * 32)
    first = reveal(tasks, task, 2, provider, UNAVAILABLE, salt=b"\x01" * 32)
    starved = reveal(tasks, task, 5, watcher)
    decide(first, FAULTY)
    chain.pending_timestamp = committee.getDispute(starved).roundStartedAt + committee.STARVATION_TIMEOUT()
    committee.rearm(starved, sender=provider)  # nobody drew its panel: the round fails, the dispute ends
    assert tasks.getDispute(starved).verdict == NO_DECISION
    assert tasks.getTask(task).waitingLead == watcher.address
    tasks.releaseLeadShare(task, sender=provider)
    assert tasks.credits(watcher) == LEAD and tasks.credits(provider) == 0
