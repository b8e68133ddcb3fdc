"""TrainingTasks: the honest lifecycle to the wei, finalize, withdraw and re-entrancy (protocol 4.1, 4.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from eth_utils import keccak
from helpers import ACCEPTED, COMMITTED, DEFAULTS, FINALIZED, Evidence, post_args, revert_data

pytestmark = pytest.mark.usefixtures("balance_invariant")
REWARD, BOND = DEFAULTS["reward"], DEFAULTS["providerBond"]
CREDIT = REWARD  # what the cancelled task of the re-entrant receiver credits it


def test_honest_lifecycle_pays_provider_to_the_wei(
    tasks: Any,
    owner: Any,
    provider: Any,
    keeper: Any,
    post_task: Callable[..., int],
    evidence: Callable[[int], Evidence],
    draw: Any,
    chain: Any,
    balance_invariant: Callable[..., None],
) -> None:
    start = {a.address: a.balance for a in (owner, provider, keeper)}
    fees = dict.fromkeys(start, 0)

    def paid(receipt: Any) -> Any:
        fees[receipt.sender] += receipt.total_fees_paid
        balance_invariant()
        return receipt

    task = post_task()
    # Its fee from the balance: Ape's per-account history may still list receipts of blocks an earlier
    # test's chain revert removed.
    fees[owner.address] += start[owner.address] - owner.balance - REWARD
    balance_invariant()
    paid(tasks.acceptTask(task, sender=provider, value=BOND))
    ev = evidence(task)
    for j in range(ev.batches):
        paid(tasks.commitBatch(task, j, ev.tree(j).root, f"bafym{j}", sender=provider))
    assert tasks.getTask(task).status == COMMITTED
    for j in range(ev.batches):
        before = keeper.balance
        sampled = draw(task, j)  # sent by the keeper, which drawSeed pays nothing: the drop is its fee
        fees[keeper.address] += before - keeper.balance
        openings = [ev.opening(k) for k in sampled]
        paid(tasks.openBatch(task, j, f"bafyo{j}", openings, sender=provider))
    end = tasks.getTask(task).challengeEnd
    assert end == max(tasks.getBatch(task, j).windowEnd for j in range(ev.batches))
    chain.pending_timestamp = end
    tx = paid(tasks.finalize(task, sender=keeper))
    assert [(e.task, e["provider"]) for e in tx.events.filter(tasks.TaskFinalized)] == [(task, provider.address)]
    assert tasks.getTask(task).status == FINALIZED
    assert tasks.credits(provider) == REWARD + BOND
    assert tasks.credits(owner) == 0  # the reward paid for the work: nothing comes back to the owner
    assert tasks.balance == REWARD + BOND  # still held: pulled, never pushed
    tx = paid(tasks.withdraw(sender=provider))
    assert [(e.account, e.amount) for e in tx.events.filter(tasks.Withdrawn)] == [(provider.address, REWARD + BOND)]
    assert tasks.balance == 0 and tasks.credits(provider) == tasks.credits(owner) == 0
    assert provider.balance == start[provider.address] + REWARD - fees[provider.address]
    assert owner.balance == start[owner.address] - REWARD - fees[owner.address]
    assert keeper.balance == start[keeper.address] - fees[keeper.address]


# --- finalize ------------------------------------------------------------------------------------


def test_finalize_before_every_batch_is_opened_reverts(
    tasks: Any,
    keeper: Any,
    accepted_task: int,
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Any,
    open_batch: Any,
    chain: Any,
) -> None:
    ev = evidence(accepted_task)
    commit(ev, [0, 1])
    with ape.reverts(tasks.WrongTaskStatus, task=accepted_task, status=ACCEPTED):
        tasks.finalize(accepted_task, sender=keeper)
    commit(ev, [2])
    for j in (0, 1):
        draw(accepted_task, j)
        open_batch(ev, j)
    chain.pending_timestamp += 30 * 24 * 3600
    before = tasks.getTask(accepted_task)
    with ape.reverts(tasks.BatchesNotOpened, task=accepted_task, opened=2, total=3):
        tasks.finalize(accepted_task, sender=keeper)
    assert tasks.getTask(accepted_task) == before


def test_finalize_waits_for_the_last_challenge_window(
    tasks: Any,
    provider: Any,
    keeper: Any,
    accepted_task: int,
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Any,
    open_batch: Any,
    chain: Any,
) -> None:
    ev = evidence(accepted_task)
    commit(ev)
    for j in range(ev.batches):
        draw(accepted_task, j)
        open_batch(ev, j)
    end = tasks.getTask(accepted_task).challengeEnd
    chain.pending_timestamp = end - 1
    before = tasks.getTask(accepted_task)
    with ape.reverts(tasks.ChallengeWindowOpen, task=accepted_task, closesAt=end):
        tasks.finalize(accepted_task, sender=keeper)
    assert tasks.getTask(accepted_task) == before and tasks.credits(provider) == 0
    chain.pending_timestamp = end
    tasks.finalize(accepted_task, sender=keeper)
    assert tasks.credits(provider) == REWARD + BOND
    with ape.reverts(tasks.WrongTaskStatus, task=accepted_task, status=FINALIZED):
        tasks.finalize(accepted_task, sender=keeper)
    assert tasks.credits(provider) == REWARD + BOND


# --- withdraw ------------------------------------------------------------------------------------


def test_withdraw_without_credit_reverts(tasks: Any, watcher: Any) -> None:
    with ape.reverts(tasks.NothingToWithdraw, account=watcher.address):
        tasks.withdraw(sender=watcher)


def test_withdraw_pays_credit_once(tasks: Any, owner: Any, post_task: Callable[..., int]) -> None:
    tasks.cancel(post_task(), sender=owner)
    tasks.cancel(post_task(reward=5), sender=owner)
    assert tasks.credits(owner) == REWARD + 5
    start = owner.balance
    tx = tasks.withdraw(sender=owner)
    assert owner.balance == start + REWARD + 5 - tx.total_fees_paid
    assert tasks.credits(owner) == 0 and tasks.balance == 0
    with ape.reverts(tasks.NothingToWithdraw, account=owner.address):
        tasks.withdraw(sender=owner)


@pytest.fixture
def attacker(
    project: Any,
    tasks: Any,
    owner: Any,
    chain: Any,
    post_task: Callable[..., int],
    balance_invariant: Callable[..., None],
) -> Any:
    """A contract owning a cancelled task, so it holds a credit of REWARD, plus an honest credit beside it."""
    receiver = owner.deploy(project.ReentrantReceiver, tasks.address)
    balance_invariant(receiver)
    terms = DEFAULTS
    post = tasks.postTask.encode_input(*post_args(terms, chain.pending_timestamp + 3600))
    receiver.execute(post, sender=owner, value=terms["reward"])
    receiver.execute(tasks.cancel.encode_input(tasks.taskCount()), sender=owner)
    # Someone else's money sits in the contract too: the attack must not reach it.
    post_task(reward=7)
    assert tasks.credits(receiver) == CREDIT
    return receiver


def test_withdraw_reentry_is_refused_and_pays_once(tasks: Any, owner: Any, attacker: Any) -> None:
    attacker.arm(tasks.withdraw.encode_input(), True, sender=owner)
    held = tasks.balance
    attacker.execute(tasks.withdraw.encode_input(), sender=owner)
    assert attacker.received() == CREDIT
    assert attacker.balance == CREDIT
    assert tasks.balance == held - CREDIT
    assert tasks.credits(attacker) == 0
    assert not attacker.reentrySucceeded()
    assert bytes(attacker.reentryResult()) == keccak(text="ReentrancyGuardReentrantCall()")[:4]


def test_withdraw_to_reverting_receiver_keeps_the_credit(tasks: Any, owner: Any, attacker: Any) -> None:
    attacker.arm(tasks.withdraw.encode_input(), False, sender=owner)
    held = tasks.balance
    # The re-entrant withdraw fails, so receive() reverts, so the payment fails: nothing moves.
    failed = bytes.fromhex(
        revert_data("TransferFailed(address,uint256)", ["address", "uint256"], [attacker.address, CREDIT])[2:]
    )
    with ape.reverts(attacker.CallFailed, data=failed):
        attacker.execute(tasks.withdraw.encode_input(), sender=owner)
    assert tasks.credits(attacker) == CREDIT and tasks.balance == held
    assert attacker.received() == 0 and attacker.balance == 0


def test_every_way_out_leaves_nothing_locked(
    tasks: Any,
    owner: Any,
    provider: Any,
    keeper: Any,
    post_task: Callable[..., int],
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Any,
    open_batch: Any,
    chain: Any,
    balance_invariant: Callable[..., None],
) -> None:
    # Four tasks side by side, one per way out (protocol 4.3: no ETH locked without a path out).
    cancelled, abandoned, slashed, finalized = (
        post_task(),
        post_task(deadline=chain.pending_timestamp + 24 * 3600),
        post_task(),
        post_task(),
    )
    for task in (abandoned, slashed, finalized):
        tasks.acceptTask(task, sender=provider, value=BOND)
    tasks.cancel(cancelled, sender=owner)
    commit(evidence(abandoned), [0])
    commit(evidence(slashed))
    ev = evidence(finalized)
    commit(ev)
    draw(slashed, 0)
    for j in range(ev.batches):
        draw(finalized, j)
        open_batch(ev, j)
    balance_invariant()
    chain.pending_timestamp += 24 * 3600
    tasks.abandon(abandoned, sender=keeper)
    tasks.slashUnopened(slashed, 0, sender=keeper)
    tasks.finalize(finalized, sender=keeper)
    balance_invariant()
    keeper_share = BOND * tasks.KEEPER_BPS() // 10000
    assert tasks.credits(owner) == REWARD + (REWARD + BOND) + (REWARD + BOND - keeper_share)
    assert tasks.credits(provider) == REWARD + BOND
    assert tasks.credits(keeper) == keeper_share
    for account in (owner, provider, keeper):
        tasks.withdraw(sender=account)
        balance_invariant()
    assert tasks.balance == 0
