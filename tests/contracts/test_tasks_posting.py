"""TrainingTasks: posting, cancelling, accepting, committing and abandoning (protocol 4.1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import (
    ABANDONED,
    ACCEPTED,
    B_COMMITTED,
    CANCELLED,
    COMMITTED,
    DEFAULTS,
    KEEPER_BPS,
    MAX_REQUESTS_PER_BATCH,
    MIN_BONDS,
    POSTED,
    SEED_DELAY,
    SHARES,
    Evidence,
    revert_data,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")
DAY = 24 * 3600


def state(tasks: Any, task: int) -> tuple:
    """Everything a reverted call must leave as it was."""
    return (tasks.getTask(task), tasks.balance, tasks.taskCount(), [tasks.getBatch(task, j) for j in range(3)])


# --- deployment ----------------------------------------------------------------------------------


def test_constructor_sets_parameters(tasks: Any, committee: Any, project: Any) -> None:
    randomness = project.BlockhashRandomness.at(tasks.RANDOMNESS())
    assert committee.RANDOMNESS() == randomness.address and randomness.DELAY() == SEED_DELAY
    assert tasks.KEEPER_BPS() == KEEPER_BPS
    assert tasks.ADJUDICATOR() == committee.address
    assert committee.taskContract() == tasks.address
    assert tasks.taskCount() == 0
    assert tasks.burned() == 0


def test_blockhash_randomness_rejects_a_zero_delay(project: Any, owner: Any) -> None:
    with ape.reverts(revert_data("ZeroSeedDelay()", [], [])):
        owner.deploy(project.BlockhashRandomness, 0, False)


def test_constructor_rejects_bps_above_whole(project: Any, owner: Any, committee: Any, tasks: Any) -> None:
    with ape.reverts(revert_data("InvalidBps(uint256)", ["uint256"], [10001])):
        owner.deploy(project.TrainingTasks, tasks.RANDOMNESS(), 10001, SHARES, MIN_BONDS, 2, committee)


def test_constructor_rejects_shares_that_are_not_whole(project: Any, owner: Any, committee: Any, tasks: Any) -> None:
    r = tasks.RANDOMNESS()
    with ape.reverts(revert_data("SharesNotWhole(uint256)", ["uint256"], [9999])):
        owner.deploy(project.TrainingTasks, r, 1000, (5000, 1000, 3999, 5000, 1000, 4000), MIN_BONDS, 2, committee)
    with ape.reverts(revert_data("SharesNotWhole(uint256)", ["uint256"], [10001])):
        owner.deploy(project.TrainingTasks, r, 1000, (5000, 1000, 4000, 5000, 1001, 4000), MIN_BONDS, 2, committee)


def test_constructor_rejects_a_committee_wired_to_another_task_contract(
    project: Any, owner: Any, committee: Any, tasks: Any
) -> None:
    mismatch = revert_data(
        "AdjudicatorMismatch(address,address)", ["address", "address"], [committee.address, tasks.address]
    )
    with ape.reverts(mismatch):
        owner.deploy(project.TrainingTasks, tasks.RANDOMNESS(), 1000, SHARES, MIN_BONDS, 2, committee)


# --- postTask ------------------------------------------------------------------------------------


def test_constructor_records_the_minimum_bonds(tasks: Any) -> None:
    assert (tasks.MIN_PROVIDER_BOND(), tasks.MIN_CHALLENGER_BOND()) == MIN_BONDS
    assert tasks.MAX_REQUESTS_PER_BATCH() == MAX_REQUESTS_PER_BATCH


def test_post_task_with_a_bond_below_its_minimum_reverts(tasks: Any, post_task: Any, owner: Any) -> None:
    """Issue 23, attack 5: bonds of 0 made junk disputes free."""
    provider_min, challenger_min = MIN_BONDS
    cases = [
        ("provider", {"providerBond": provider_min - 1}),
        ("challenger", {"challengerBond": challenger_min - 1}),
        ("challenger", {"challengerBond": 0}),
    ]
    for which, overrides in cases:
        given = next(iter(overrides.values()))
        minimum = provider_min if which == "provider" else challenger_min
        with ape.reverts(tasks.BondTooLow, which=which, minimum=minimum, given=given):
            post_task(**overrides)
    assert tasks.taskCount() == 0
    task = post_task(providerBond=provider_min, challengerBond=challenger_min)
    assert tasks.getTask(task).terms.challengerBond == challenger_min


def test_post_task_escrows_reward_and_records_terms(tasks: Any, owner: Any, chain: Any) -> None:
    deadline = chain.pending_timestamp + DAY
    tx = tasks.postTask(
        DEFAULTS["specHash"],
        "bafyspec",
        DEFAULTS["initDigest"],
        950,
        100,
        4,
        5000,
        (3 * 10**18, 10**17),
        300,
        (3600, 7200, 600),
        deadline,
        sender=owner,
        value=2 * 10**18,
    )
    assert tasks.taskCount() == 1
    assert tasks.balance == 2 * 10**18
    t = tasks.getTask(1)
    assert t.status == POSTED and t.owner == owner.address and int(t.provider, 16) == 0
    assert t.batchCount == 3  # K = ceil(950 / 100) = 10 intervals, m = 4
    assert (t.terms.totalSteps, t.terms.stride, t.terms.intervalsPerBatch, t.terms.sampleBps) == (950, 100, 4, 5000)
    assert (t.terms.reward, t.terms.providerBond, t.terms.challengerBond) == (2 * 10**18, 3 * 10**18, 10**17)
    assert t.terms.replaySeconds == 300
    assert tuple(t.terms.windows) == (3600, 7200, 600)
    assert t.terms.deadline == deadline
    assert bytes(t.terms.specHash) == DEFAULTS["specHash"]
    assert bytes(t.terms.initDigest) == DEFAULTS["initDigest"]
    (event,) = tx.events.filter(tasks.TaskPosted)
    assert event.task == 1 and event.owner == owner.address and event.specCID == "bafyspec"
    assert event.terms[2] == 2 * 10**18 and event.terms[7] == deadline  # reward, deadline (TaskTerms order)


@pytest.mark.parametrize(
    ("steps", "stride", "m", "batches"), [(1, 1, 1, 1), (100, 100, 1, 1), (101, 100, 1, 2), (1000, 1, 256, 4)]
)
def test_post_task_counts_batches(
    tasks: Any, post_task: Callable[..., int], steps: int, stride: int, m: int, batches: int
) -> None:
    task = post_task(totalSteps=steps, stride=stride, intervalsPerBatch=m)
    assert tasks.getTask(task).batchCount == batches


@pytest.mark.parametrize(
    ("overrides", "error", "inputs"),
    [
        ({"totalSteps": 0}, "ZeroTotalSteps", {}),
        ({"stride": 0}, "ZeroStride", {}),
        ({"intervalsPerBatch": 0}, "InvalidIntervalsPerBatch", {"intervalsPerBatch": 0}),
        ({"intervalsPerBatch": 257}, "InvalidIntervalsPerBatch", {"intervalsPerBatch": 257}),
        ({"sampleBps": 0}, "InvalidSampleBps", {"sampleBps": 0}),
        ({"sampleBps": 10001}, "InvalidSampleBps", {"sampleBps": 10001}),
        ({"windows": (0, 1, 1)}, "InvalidWindow", {"window": 0}),
        ({"windows": (1, 0, 1)}, "InvalidWindow", {"window": 0}),
        ({"windows": (1, 1, 0)}, "InvalidWindow", {"window": 0}),
        ({"windows": (1, 365 * DAY + 1, 1)}, "InvalidWindow", {"window": 365 * DAY + 1}),
        # A pending commit holds back slashUnopened and abandon: for at most MAX_REVEAL_WINDOW.
        ({"windows": (1, 1, 3601)}, "RevealWindowTooLong", {"window": 3601, "max": 3600}),
    ],
)
def test_post_task_invalid_parameter_reverts(
    tasks: Any, post_task: Callable[..., int], overrides: dict, error: str, inputs: dict
) -> None:
    with ape.reverts(getattr(tasks, error), **inputs):
        post_task(**overrides)
    assert tasks.taskCount() == 0 and tasks.balance == 0


def test_post_task_accepts_the_limits(tasks: Any, post_task: Callable[..., int]) -> None:
    task = post_task(intervalsPerBatch=256, sampleBps=10000, windows=(365 * DAY, 1, 3600))
    assert tasks.MAX_REVEAL_WINDOW() == 3600
    assert tasks.getTask(task).status == POSTED
    assert tasks.getTask(post_task(intervalsPerBatch=1, sampleBps=1)).status == POSTED


def test_post_task_deadline_not_in_future_reverts(tasks: Any, post_task: Callable[..., int], chain: Any) -> None:
    now = chain.pending_timestamp
    chain.pending_timestamp = now
    with ape.reverts(tasks.DeadlineNotInFuture, deadline=now):
        post_task(deadline=now)
    assert tasks.taskCount() == 0
    chain.pending_timestamp = now + 5
    assert tasks.getTask(post_task(deadline=now + 6)).status == POSTED


# --- cancel --------------------------------------------------------------------------------------


def test_cancel_credits_owner_the_reward(tasks: Any, owner: Any, post_task: Callable[..., int]) -> None:
    task = post_task()
    tx = tasks.cancel(task, sender=owner)
    assert tasks.getTask(task).status == CANCELLED
    assert tasks.credits(owner) == DEFAULTS["reward"]
    assert tasks.balance == DEFAULTS["reward"]  # pulled, not pushed
    assert [(e.task, e.owner) for e in tx.events.filter(tasks.TaskCancelled)] == [(task, owner.address)]
    assert [(e.account, e.source, e.amount) for e in tx.events.filter(tasks.Credited)] == [
        (owner.address, task, DEFAULTS["reward"])
    ]


def test_cancel_by_other_reverts(tasks: Any, provider: Any, post_task: Callable[..., int]) -> None:
    task = post_task()
    before = state(tasks, task)
    with ape.reverts(tasks.NotOwner, task=task, caller=provider.address):
        tasks.cancel(task, sender=provider)
    assert state(tasks, task) == before


def test_cancel_after_accept_or_twice_reverts(
    tasks: Any, owner: Any, provider: Any, post_task: Callable[..., int]
) -> None:
    task = post_task()
    tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=ACCEPTED):
        tasks.cancel(task, sender=owner)
    other = post_task()
    tasks.cancel(other, sender=owner)
    with ape.reverts(tasks.WrongTaskStatus, task=other, status=CANCELLED):
        tasks.cancel(other, sender=owner)
    with ape.reverts(tasks.WrongTaskStatus, task=99, status=0):
        tasks.cancel(99, sender=owner)
    assert tasks.credits(owner) == DEFAULTS["reward"]


# --- acceptTask ----------------------------------------------------------------------------------


def test_accept_task_bonds_the_provider(tasks: Any, provider: Any, post_task: Callable[..., int]) -> None:
    task = post_task()
    tx = tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    t = tasks.getTask(task)
    assert t.status == ACCEPTED and t.provider == provider.address
    assert tasks.balance == DEFAULTS["reward"] + DEFAULTS["providerBond"]
    assert [(e.task, e["provider"], e.bond) for e in tx.events.filter(tasks.TaskAccepted)] == [
        (task, provider.address, DEFAULTS["providerBond"])
    ]


@pytest.mark.parametrize("delta", [-1, 1])
def test_accept_task_wrong_bond_reverts(tasks: Any, provider: Any, post_task: Callable[..., int], delta: int) -> None:
    task = post_task()
    before = state(tasks, task)
    bond = DEFAULTS["providerBond"]
    with ape.reverts(tasks.WrongBond, expected=bond, sent=bond + delta):
        tasks.acceptTask(task, sender=provider, value=bond + delta)
    assert state(tasks, task) == before


def test_accept_task_second_caller_reverts(
    tasks: Any, provider: Any, watcher: Any, accepted_task: int, post_task: Callable[..., int]
) -> None:
    before = state(tasks, accepted_task)
    with ape.reverts(tasks.WrongTaskStatus, task=accepted_task, status=ACCEPTED):
        tasks.acceptTask(accepted_task, sender=watcher, value=DEFAULTS["providerBond"])
    assert state(tasks, accepted_task) == before


def test_accept_task_after_deadline_reverts(
    tasks: Any, provider: Any, post_task: Callable[..., int], chain: Any
) -> None:
    deadline = chain.pending_timestamp + DAY
    task = post_task(deadline=deadline)
    chain.pending_timestamp = deadline
    before = state(tasks, task)
    with ape.reverts(tasks.DeadlinePassed, task=task, deadline=deadline):
        tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    assert state(tasks, task) == before


# --- commitBatch ---------------------------------------------------------------------------------


def test_commit_batches_in_order_then_committed(
    tasks: Any, provider: Any, accepted_task: int, evidence: Callable[[int], Evidence], chain: Any
) -> None:
    ev = evidence(accepted_task)
    for j in range(ev.batches):
        tx = tasks.commitBatch(accepted_task, j, ev.tree(j).root, f"bafym{j}", sender=provider)
        b = tasks.getBatch(accepted_task, j)
        assert b.status == B_COMMITTED and bytes(b.root) == ev.tree(j).root
        assert b.seedTarget == tx.block_number + SEED_DELAY  # the backend's target for the commit's block
        (event,) = tx.events.filter(tasks.BatchCommitted)
        assert (event.task, event.j, bytes(event.root), event.manifestCID) == (
            accepted_task,
            j,
            ev.tree(j).root,
            f"bafym{j}",
        )
        t = tasks.getTask(accepted_task)
        assert t.committedBatches == j + 1
        assert t.status == (COMMITTED if j == ev.batches - 1 else ACCEPTED)


def test_commit_batch_out_of_order_reverts(
    tasks: Any, provider: Any, accepted_task: int, evidence: Callable[[int], Evidence]
) -> None:
    ev = evidence(accepted_task)
    before = state(tasks, accepted_task)
    with ape.reverts(tasks.BatchOutOfOrder, task=accepted_task, expected=0, given=1):
        tasks.commitBatch(accepted_task, 1, ev.tree(1).root, "m", sender=provider)
    assert state(tasks, accepted_task) == before
    tasks.commitBatch(accepted_task, 0, ev.tree(0).root, "m", sender=provider)
    with ape.reverts(tasks.BatchOutOfOrder, task=accepted_task, expected=1, given=0):
        tasks.commitBatch(accepted_task, 0, b"\x01" * 32, "m", sender=provider)
    assert bytes(tasks.getBatch(accepted_task, 0).root) == ev.tree(0).root


def test_commit_batch_by_other_reverts(tasks: Any, owner: Any, accepted_task: int) -> None:
    before = state(tasks, accepted_task)
    with ape.reverts(tasks.NotProvider, task=accepted_task, caller=owner.address):
        tasks.commitBatch(accepted_task, 0, b"\x01" * 32, "m", sender=owner)
    assert state(tasks, accepted_task) == before


def test_commit_batch_before_accept_or_after_last_reverts(
    tasks: Any,
    provider: Any,
    post_task: Callable[..., int],
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
) -> None:
    task = post_task()
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=POSTED):
        tasks.commitBatch(task, 0, b"\x01" * 32, "m", sender=provider)
    tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    commit(evidence(task))
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=COMMITTED):
        tasks.commitBatch(task, 3, b"\x01" * 32, "m", sender=provider)


def test_commit_batch_at_deadline_reverts(tasks: Any, provider: Any, post_task: Callable[..., int], chain: Any) -> None:
    deadline = chain.pending_timestamp + DAY
    task = post_task(deadline=deadline)
    tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    chain.pending_timestamp = deadline - 1
    tasks.commitBatch(task, 0, b"\x01" * 32, "m", sender=provider)  # the last second is still in time
    chain.pending_timestamp = deadline
    before = state(tasks, task)
    with ape.reverts(tasks.DeadlinePassed, task=task, deadline=deadline):
        tasks.commitBatch(task, 1, b"\x02" * 32, "m", sender=provider)
    assert state(tasks, task) == before


# --- abandon -------------------------------------------------------------------------------------


def test_abandon_after_deadline_credits_owner_reward_and_bond(
    tasks: Any, owner: Any, provider: Any, keeper: Any, post_task: Callable[..., int], chain: Any
) -> None:
    deadline = chain.pending_timestamp + DAY
    task = post_task(deadline=deadline)
    tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    tasks.commitBatch(task, 0, b"\x01" * 32, "m", sender=provider)
    chain.pending_timestamp = deadline - 1
    with ape.reverts(tasks.DeadlineNotReached, task=task, deadline=deadline):
        tasks.abandon(task, sender=keeper)
    chain.pending_timestamp = deadline
    tx = tasks.abandon(task, sender=keeper)
    assert tasks.getTask(task).status == ABANDONED
    assert tasks.credits(owner) == DEFAULTS["reward"] + DEFAULTS["providerBond"]
    assert tasks.credits(provider) == 0 and tasks.credits(keeper) == 0
    assert [(e.task, e.caller) for e in tx.events.filter(tasks.TaskAbandoned)] == [(task, keeper.address)]
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=ABANDONED):
        tasks.abandon(task, sender=keeper)


def test_abandon_of_posted_or_committed_task_reverts(
    tasks: Any,
    keeper: Any,
    post_task: Callable[..., int],
    accepted_task: int,
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    chain: Any,
) -> None:
    posted = post_task()
    commit(evidence(accepted_task))
    chain.pending_timestamp += 60 * DAY
    with ape.reverts(tasks.WrongTaskStatus, task=posted, status=POSTED):
        tasks.abandon(posted, sender=keeper)
    before = state(tasks, accepted_task)
    with ape.reverts(tasks.WrongTaskStatus, task=accepted_task, status=COMMITTED):
        tasks.abandon(accepted_task, sender=keeper)
    assert state(tasks, accepted_task) == before
