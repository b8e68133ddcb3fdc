"""TrainingTasks: seeds, samples, openings and their soundness, slashing unopened batches (protocol 3, 4.1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from eth_utils import keccak
from helpers import (
    ACCEPTED,
    B_COMMITTED,
    B_DRAWN,
    B_NONE,
    B_OPENED,
    COMMITTED,
    DEFAULTS,
    KEEPER_BPS,
    POSTED,
    SEED_DELAY,
    SLASHED,
    ZERO,
    Evidence,
    Tree,
    leaf,
    opened_digests,
    sample,
    sampled_intervals,
    seed_of,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")
OPENING_WINDOW, CHALLENGE_WINDOW, _ = DEFAULTS["windows"]


@pytest.fixture
def committed(accepted_task: int, evidence: Callable[[int], Evidence], commit: Callable[..., None]) -> Evidence:
    """The default task with every batch committed; its evidence."""
    ev = evidence(accepted_task)
    commit(ev)
    return ev


def snap(tasks: Any, task: int, j: int) -> tuple:
    """Everything a reverted call must leave as it was."""
    return tasks.getTask(task), tasks.getBatch(task, j), tasks.balance


# --- drawSeed ------------------------------------------------------------------------------------


@pytest.mark.parametrize("j", [0, 2])
def test_draw_seed_samples_from_the_seed_block(
    tasks: Any, committed: Evidence, keeper: Any, chain: Any, j: int
) -> None:
    task = committed.task
    target = tasks.getBatch(task, j).seedTarget
    chain.mine(SEED_DELAY)
    tx = tasks.drawSeed(task, j, sender=keeper)
    seed = seed_of(bytes(chain.blocks[target].hash), task, j)
    n = len(committed.batch_intervals(j))
    positions = sample(seed, n, DEFAULTS["sampleBps"], is_last=j == committed.batches - 1)
    expected = [j * committed.per_batch + p for p in positions]
    assert sampled_intervals(tasks, task, j) == sorted(expected)
    b = tasks.getBatch(task, j)
    assert b.status == B_DRAWN and bytes(b.seed) == seed
    assert b.sampledBitmap == sum(1 << p for p in positions) and b.sampleCount == len(positions)
    assert b.windowEnd == chain.blocks[tx.block_number].timestamp + OPENING_WINDOW
    (event,) = tx.events.filter(tasks.SeedDrawn)
    assert (event.task, event.j, bytes(event.seed), event.sampledBitmap, event.openingWindowEnd) == (
        task,
        j,
        seed,
        b.sampledBitmap,
        b.windowEnd,
    )
    if j == 2:
        assert expected == [9]  # two intervals at 50%: q = 1, which is the deliverable


def test_draw_seed_before_seed_block_reverts(tasks: Any, committed: Evidence, keeper: Any, chain: Any) -> None:
    task = committed.task
    target = tasks.getBatch(task, 2).seedTarget
    h = chain.blocks.height  # the commit's block: its target is SEED_DELAY blocks later
    assert target == h + SEED_DELAY
    chain.mine(SEED_DELAY - 1)  # the next block is the seed block itself
    before = snap(tasks, task, 2)
    with ape.reverts(tasks.SeedNotReady, task=task, j=2, target=target):
        tasks.drawSeed(task, 2, sender=keeper)
    assert snap(tasks, task, 2) == before
    if chain.blocks.height < h + SEED_DELAY:
        chain.mine(1)
    tx = tasks.drawSeed(task, 2, sender=keeper)  # one block later is enough
    assert tx.block_number == h + SEED_DELAY + 1
    assert tasks.getBatch(task, 2).status == B_DRAWN


def test_draw_seed_twice_or_uncommitted_reverts(
    tasks: Any,
    accepted_task: int,
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Any,
    keeper: Any,
    post_task: Callable[..., int],
) -> None:
    ev = evidence(accepted_task)
    commit(ev, [0])
    draw(accepted_task, 0)
    before = snap(tasks, accepted_task, 0)
    with ape.reverts(tasks.WrongBatchStatus, task=accepted_task, j=0, status=B_DRAWN):
        tasks.drawSeed(accepted_task, 0, sender=keeper)
    assert snap(tasks, accepted_task, 0) == before
    with ape.reverts(tasks.WrongBatchStatus, task=accepted_task, j=1, status=B_NONE):
        tasks.drawSeed(accepted_task, 1, sender=keeper)
    posted = post_task()
    with ape.reverts(tasks.WrongTaskStatus, task=posted, status=POSTED):
        tasks.drawSeed(posted, 0, sender=keeper)


def test_draw_seed_after_256_blocks_samples_everything(
    tasks: Any, committed: Evidence, keeper: Any, chain: Any, open_batch: Any
) -> None:
    task = committed.task
    chain.mine(SEED_DELAY + 257)
    tx = tasks.drawSeed(task, 1, sender=keeper)
    b = tasks.getBatch(task, 1)
    assert bytes(b.seed) == ZERO and b.sampledBitmap == 0b1111 and b.sampleCount == 4
    assert sampled_intervals(tasks, task, 1) == [4, 5, 6, 7]
    assert [bytes(e.seed) for e in tx.events.filter(tasks.SeedDrawn)] == [ZERO]
    tasks.drawSeed(task, 2, sender=keeper)  # the last batch too: both of its intervals
    assert sampled_intervals(tasks, task, 2) == [8, 9]
    open_batch(committed, 1)
    assert tasks.getBatch(task, 1).status == B_OPENED


def test_sample_empty_until_drawn(tasks: Any, committed: Evidence) -> None:
    assert tasks.getBatch(committed.task, 0).sampledBitmap == 0
    assert tasks.getBatch(99, 0).sampledBitmap == 0


# --- openBatch: honest ---------------------------------------------------------------------------


def test_open_batch_records_digests_and_starts_challenge_window(
    tasks: Any, committed: Evidence, draw: Any, open_batch: Any, chain: Any
) -> None:
    task = committed.task
    sampled = draw(task, 0)
    tx = open_batch(committed, 0)
    b = tasks.getBatch(task, 0)
    end = chain.blocks[tx.block_number].timestamp + CHALLENGE_WINDOW
    assert b.status == B_OPENED and b.windowEnd == end
    t = tasks.getTask(task)
    assert t.openedBatches == 1 and t.challengeEnd == end
    events = tx.events.filter(tasks.IntervalOpened)
    assert [(e.k, bytes(e.startDigest), bytes(e.endDigest)) for e in events] == [
        (k, committed.start_digest(k), committed.digest(k)) for k in sampled
    ]
    (event,) = tx.events.filter(tasks.BatchOpened)
    assert (event.task, event.j, event.openingCID, event.challengeWindowEnd) == (task, 0, "bafyopening0", end)
    assert tasks.getBatch(task, 0).openedBitmap == sum(1 << k for k in sampled)  # nothing else is stored


def test_open_every_interval_across_batch_boundaries(
    tasks: Any,
    provider: Any,
    post_task: Callable[..., int],
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Any,
    open_batch: Any,
) -> None:
    # Full sampling opens k = 0 (start: initDigest), k = 4 and 8 (start: previous batch's root at m-1),
    # and the short last interval (b_9 = N = 950).
    task = post_task(sampleBps=10000)
    tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    ev = evidence(task)
    commit(ev)
    for j in range(ev.batches):
        assert sorted(draw(task, j)) == list(ev.batch_intervals(j))
        open_batch(ev, j)
    for k in range(ev.intervals):
        assert opened_digests(tasks, task, k) == (ev.start_digest(k), ev.digest(k))
    assert opened_digests(tasks, task, 0)[0] == DEFAULTS["initDigest"]
    assert tasks.getTask(task).openedBatches == 3


def test_open_batch_in_any_order(tasks: Any, provider: Any, committed: Evidence, draw: Any) -> None:
    sampled = draw(committed.task, 0)
    openings = [committed.opening(k) for k in reversed(sampled)]
    tasks.openBatch(committed.task, 0, "cid", openings, sender=provider)
    assert tasks.getBatch(committed.task, 0).status == B_OPENED


# --- openBatch: soundness ------------------------------------------------------------------------


def replace(opening: tuple, **fields: Any) -> tuple:
    names = ["k", "endStep", "endDigest", "endProof", "startStep", "startDigest", "startProof"]
    values = dict(zip(names, opening, strict=True))
    values.update(fields)
    return tuple(values[n] for n in names)


@pytest.fixture
def drawn(committed: Evidence, draw: Any) -> tuple[Evidence, list[int]]:
    """The default task, batch 1 drawn: evidence and sampled intervals (two of 4 .. 7)."""
    return committed, draw(committed.task, 1)


def forged_cases(ev: Evidence, k: int) -> dict[str, tuple[tuple, str, dict]]:
    """Openings of sampled interval k that must fail, with the error each must raise."""
    task, honest = ev.task, ev.opening(k)
    other = keccak(text="a second digest for the same interval")
    # A tree in which k's leaf carries another digest: its proof verifies there, never under root j.
    second = list(ev.tree(1).leaves)
    second[k % 4] = leaf(task, k, ev.end_step(k), other)
    second_tree = Tree(tuple(second))
    # A whole batch of other digests: a root the provider never committed.
    fake = Tree(tuple(leaf(task, x, ev.end_step(x), keccak(text=f"fake {x}")) for x in ev.batch_intervals(1)))
    proof = ev.proof(k)
    return {
        "second_leaf_same_k": (
            replace(honest, endDigest=other, endProof=second_tree.proof(k % 4)),
            "InvalidProof",
            {"k": k},
        ),
        "proof_too_long": (replace(honest, endProof=[*proof, ZERO]), "InvalidProof", {"k": k}),
        "proof_too_short": (replace(honest, endProof=proof[:-1]), "InvalidProof", {"k": k}),
        "proof_of_other_index": (replace(honest, endProof=ev.proof(k ^ 1)), "InvalidProof", {"k": k}),
        "root_never_committed": (
            replace(honest, endDigest=other, endProof=fake.proof(k % 4)),
            "InvalidProof",
            {"k": k},
        ),
        "proof_against_other_batch": (replace(honest, endProof=ev.tree(0).proof(k % 4)), "InvalidProof", {"k": k}),
        "wrong_start_digest": (replace(honest, startDigest=other), "InvalidProof", {"k": k - 1}),
        "wrong_start_proof": (replace(honest, startProof=ev.proof(k)), "InvalidProof", {"k": k - 1}),
        "wrong_end_step": (
            replace(honest, endStep=ev.end_step(k) + 1),
            "WrongStep",
            {"k": k, "expected": ev.end_step(k), "given": ev.end_step(k) + 1},
        ),
        "wrong_start_step": (
            replace(honest, startStep=ev.end_step(k)),
            "WrongStep",
            {"k": k - 1, "expected": ev.end_step(k - 1), "given": ev.end_step(k)},
        ),
    }


CASES = list(forged_cases(Evidence(1, 950, 100, 4, ZERO), 5))


@pytest.mark.parametrize("case", CASES)
def test_open_batch_forged_opening_reverts(
    tasks: Any, provider: Any, drawn: tuple[Evidence, list[int]], case: str
) -> None:
    ev, sampled = drawn
    k = sampled[0]
    opening, error, inputs = forged_cases(ev, k)[case]
    openings = [opening, *(ev.opening(x) for x in sampled[1:])]
    before = snap(tasks, ev.task, 1)
    with ape.reverts(getattr(tasks, error), **inputs):
        tasks.openBatch(ev.task, 1, "cid", openings, sender=provider)
    assert snap(tasks, ev.task, 1) == before


def test_open_batch_unsampled_duplicate_or_empty_reverts(
    tasks: Any, provider: Any, drawn: tuple[Evidence, list[int]]
) -> None:
    ev, sampled = drawn
    task = ev.task
    unsampled = [k for k in range(4, 8) if k not in sampled]
    honest = [ev.opening(k) for k in sampled]
    before = snap(tasks, task, 1)
    with ape.reverts(tasks.IntervalNotSampled, task=task, k=unsampled[0]):
        tasks.openBatch(task, 1, "cid", [*honest, ev.opening(unsampled[0])], sender=provider)
    with ape.reverts(tasks.IntervalNotSampled, task=task, k=unsampled[1]):
        tasks.openBatch(task, 1, "cid", [ev.opening(unsampled[1])], sender=provider)
    with ape.reverts(tasks.DuplicateOpening, task=task, k=sampled[0]):
        tasks.openBatch(task, 1, "cid", [honest[0], honest[0]], sender=provider)
    with ape.reverts(tasks.EmptyOpening, task=task, j=1):
        tasks.openBatch(task, 1, "cid", [], sender=provider)
    for outside in (3, 8, 2**64):  # previous batch, next batch, far away
        with ape.reverts(tasks.IntervalNotSampled, task=task, k=outside):
            tasks.openBatch(task, 1, "cid", [honest[0], replace(honest[1], k=outside)], sender=provider)
    assert snap(tasks, task, 1) == before


def test_open_batch_in_two_calls_opens_on_the_last(
    tasks: Any, provider: Any, drawn: tuple[Evidence, list[int]], chain: Any
) -> None:
    ev, sampled = drawn
    task = ev.task
    first = tasks.openBatch(task, 1, "cid-a", [ev.opening(sampled[1])], sender=provider)
    b = tasks.getBatch(task, 1)
    assert b.status == B_DRAWN and b.openedBitmap == 1 << (sampled[1] - 4)
    assert tasks.getTask(task).openedBatches == 0
    assert not first.events.filter(tasks.BatchOpened)
    assert [e.k for e in first.events.filter(tasks.IntervalOpened)] == [sampled[1]]
    with ape.reverts(tasks.DuplicateOpening, task=task, k=sampled[1]):
        tasks.openBatch(task, 1, "cid", [ev.opening(sampled[1])], sender=provider)
    chain.pending_timestamp += 60
    last = tasks.openBatch(task, 1, "cid-b", [ev.opening(sampled[0])], sender=provider)
    end = chain.blocks[last.block_number].timestamp + CHALLENGE_WINDOW
    b = tasks.getBatch(task, 1)
    assert b.status == B_OPENED and b.openedBitmap == b.sampledBitmap and b.windowEnd == end
    assert [(e.openingCID, e.challengeWindowEnd) for e in last.events.filter(tasks.BatchOpened)] == [("cid-b", end)]
    assert tasks.getTask(task).openedBatches == 1


def test_open_batch_missing_interval_stays_unopened_and_is_slashed(
    tasks: Any, provider: Any, keeper: Any, drawn: tuple[Evidence, list[int]], chain: Any
) -> None:
    ev, sampled = drawn
    tasks.openBatch(ev.task, 1, "cid", [ev.opening(sampled[0])], sender=provider)
    end = tasks.getBatch(ev.task, 1).windowEnd
    chain.pending_timestamp = end
    with ape.reverts(tasks.OpeningWindowClosed, task=ev.task, j=1, closedAt=end):
        tasks.openBatch(ev.task, 1, "cid", [ev.opening(sampled[1])], sender=provider)
    tasks.slashUnopened(ev.task, 1, sender=keeper)
    assert tasks.getTask(ev.task).status == SLASHED


def test_open_batch_by_other_or_twice_or_undrawn_reverts(
    tasks: Any, provider: Any, owner: Any, drawn: tuple[Evidence, list[int]]
) -> None:
    ev, sampled = drawn
    task = ev.task
    honest = [ev.opening(k) for k in sampled]
    before = snap(tasks, task, 1)
    with ape.reverts(tasks.NotProvider, task=task, caller=owner.address):
        tasks.openBatch(task, 1, "cid", honest, sender=owner)
    with ape.reverts(tasks.WrongBatchStatus, task=task, j=0, status=B_COMMITTED):
        tasks.openBatch(task, 0, "cid", [], sender=provider)
    assert snap(tasks, task, 1) == before
    tasks.openBatch(task, 1, "cid", honest, sender=provider)
    with ape.reverts(tasks.WrongBatchStatus, task=task, j=1, status=B_OPENED):
        tasks.openBatch(task, 1, "cid", honest, sender=provider)


def test_open_batch_after_opening_window_reverts(
    tasks: Any, provider: Any, drawn: tuple[Evidence, list[int]], chain: Any
) -> None:
    ev, sampled = drawn
    end = tasks.getBatch(ev.task, 1).windowEnd
    chain.pending_timestamp = end
    before = snap(tasks, ev.task, 1)
    with ape.reverts(tasks.OpeningWindowClosed, task=ev.task, j=1, closedAt=end):
        tasks.openBatch(ev.task, 1, "cid", [ev.opening(k) for k in sampled], sender=provider)
    assert snap(tasks, ev.task, 1) == before


def test_open_batch_in_last_second_of_window(
    tasks: Any, provider: Any, drawn: tuple[Evidence, list[int]], chain: Any
) -> None:
    ev, sampled = drawn
    chain.pending_timestamp = tasks.getBatch(ev.task, 1).windowEnd - 1
    tasks.openBatch(ev.task, 1, "cid", [ev.opening(k) for k in sampled], sender=provider)
    assert tasks.getBatch(ev.task, 1).status == B_OPENED


def test_open_batch_while_still_accepted(
    tasks: Any,
    accepted_task: int,
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Any,
    open_batch: Any,
) -> None:
    ev = evidence(accepted_task)
    commit(ev, [0])
    draw(accepted_task, 0)
    open_batch(ev, 0)
    assert tasks.getTask(accepted_task).status == ACCEPTED
    assert tasks.getTask(accepted_task).openedBatches == 1


# --- slashUnopened -------------------------------------------------------------------------------


def test_slash_unopened_pays_owner_and_keeper_to_the_wei(
    tasks: Any,
    owner: Any,
    provider: Any,
    keeper: Any,
    drawn: tuple[Evidence, list[int]],
    chain: Any,
    balance_invariant: Any,
) -> None:
    ev, _ = drawn
    task = ev.task
    end = tasks.getBatch(task, 1).windowEnd
    chain.pending_timestamp = end - 1
    with ape.reverts(tasks.OpeningWindowOpen, task=task, j=1, closesAt=end):
        tasks.slashUnopened(task, 1, sender=keeper)
    chain.pending_timestamp = end
    tx = tasks.slashUnopened(task, 1, sender=keeper)
    bond, reward = DEFAULTS["providerBond"], DEFAULTS["reward"]
    keeper_share = bond * KEEPER_BPS // 10000
    assert keeper_share == 3 * 10**17
    assert tasks.credits(owner) == reward + bond - keeper_share
    assert tasks.credits(keeper) == keeper_share
    assert tasks.credits(provider) == 0
    assert tasks.getTask(task).status == SLASHED
    assert tasks.balance == reward + bond
    balance_invariant()
    assert [(e.task, e.j, e.by, e.dispute) for e in tx.events.filter(tasks.TaskSlashed)] == [
        (task, 1, keeper.address, 0)
    ]
    assert [(e.account, e.amount) for e in tx.events.filter(tasks.Credited)] == [
        (owner.address, reward + bond - keeper_share),
        (keeper.address, keeper_share),
    ]
    # Slashed is terminal: nothing else moves the task.
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=SLASHED):
        tasks.slashUnopened(task, 1, sender=keeper)
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=SLASHED):
        tasks.drawSeed(task, 0, sender=keeper)
    with ape.reverts(tasks.WrongTaskStatus, task=task, status=SLASHED):
        tasks.finalize(task, sender=keeper)


def test_slash_unopened_of_undrawn_or_opened_batch_reverts(
    tasks: Any, keeper: Any, committed: Evidence, draw: Any, open_batch: Any, chain: Any
) -> None:
    task = committed.task
    draw(task, 0)
    open_batch(committed, 0)
    chain.pending_timestamp += OPENING_WINDOW + CHALLENGE_WINDOW
    before = snap(tasks, task, 0)
    with ape.reverts(tasks.WrongBatchStatus, task=task, j=0, status=B_OPENED):
        tasks.slashUnopened(task, 0, sender=keeper)
    with ape.reverts(tasks.WrongBatchStatus, task=task, j=1, status=B_COMMITTED):
        tasks.slashUnopened(task, 1, sender=keeper)
    assert snap(tasks, task, 0) == before
    assert tasks.getTask(task).status == COMMITTED


def test_open_largest_batch_half_sampled_in_one_call(
    tasks: Any,
    provider: Any,
    post_task: Callable[..., int],
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Any,
) -> None:
    # m = 256 at 50%: 128 openings with 8 siblings per proof fit one transaction a node relays
    # (128 KiB); a fuller sample is opened in several calls (see test_open_batch_in_two_calls...).
    task = post_task(totalSteps=256, stride=1, intervalsPerBatch=256, sampleBps=5000)
    tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    ev = evidence(task)
    commit(ev)
    sampled = draw(task, 0)
    assert len(sampled) == 128 and sampled[-1] == 255
    tx = tasks.openBatch(task, 0, "cid", [ev.opening(k) for k in sampled], sender=provider)
    assert len(tx.data) < 128 * 1024 and tx.gas_used < 15_000_000
    assert tasks.getBatch(task, 0).status == B_OPENED
    k = sampled[0]
    assert opened_digests(tasks, task, k)[0] == ev.start_digest(k)
