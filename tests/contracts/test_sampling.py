"""Sampling (protocol section 3) on-chain, against an independent Python re-implementation."""

from __future__ import annotations

from typing import Any

import pytest
from eth_utils import keccak
from helpers import sample, sample_size, seed_of

SEEDS = [keccak(text=f"seed-{i}") for i in range(3)]


def test_seed_of_hashes_block_hash_task_and_batch(mirror: Any) -> None:
    block_hash = keccak(text="block")
    assert mirror.seedOf(block_hash, 7, 3) == seed_of(block_hash, 7, 3)
    assert mirror.seedOf(block_hash, 7, 3) != mirror.seedOf(block_hash, 7, 4)


@pytest.mark.parametrize(
    ("n", "bps", "q"),
    [(1, 1, 1), (4, 1, 1), (4, 2500, 1), (4, 2501, 2), (10, 5000, 5), (256, 10000, 256), (256, 1, 1), (3, 3334, 2)],
)
def test_sample_size_rounds_up_and_is_at_least_one(mirror: Any, n: int, bps: int, q: int) -> None:
    assert sample_size(n, bps) == q
    assert mirror.sampleSize(n, bps) == q


PINNED = [
    # (seed, n, sampleBps, isLast, positions in draw order)
    (bytes(32), 8, 5000, False, [5, 2, 7, 0]),
    (bytes(32), 8, 5000, True, [0, 4, 2, 7]),
    (bytes(32), 10, 3000, False, [7, 0, 5]),
    (keccak(text="ovig"), 8, 5000, False, [5, 2, 4, 1]),
    (keccak(text="ovig"), 8, 5000, True, [3, 0, 5, 7]),
    (keccak(text="ovig"), 10, 3000, False, [7, 9, 4]),
    (keccak(text="ovig"), 2, 10000, True, [0, 1]),
]


@pytest.mark.parametrize(("seed", "n", "bps", "is_last", "positions"), PINNED)
def test_pinned_vectors(mirror: Any, seed: bytes, n: int, bps: int, is_last: bool, positions: list[int]) -> None:
    # Shared vectors: the Python mirror in ovig_node.protocol must give the same lists.
    assert sample(seed, n, bps, is_last=is_last) == positions
    assert list(mirror.sampleBatch(seed, n, bps, is_last)) == positions


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("n", "bps"), [(1, 5000), (2, 1), (2, 10000), (5, 3000), (16, 2500), (37, 999), (64, 5000), (256, 1000)]
)
@pytest.mark.parametrize("is_last", [False, True])
def test_sample_batch_matches_spec(mirror: Any, seed: bytes, n: int, bps: int, is_last: bool) -> None:
    positions = list(mirror.sampleBatch(seed, n, bps, is_last))
    assert positions == sample(seed, n, bps, is_last=is_last)
    assert len(positions) == sample_size(n, bps)
    assert len(set(positions)) == len(positions)
    assert all(0 <= p < n for p in positions)
    if is_last:
        assert positions[-1] == n - 1


def test_last_batch_of_one_interval_samples_the_deliverable(mirror: Any) -> None:
    for seed in SEEDS:
        assert list(mirror.sampleBatch(seed, 1, 1, True)) == [0]
        assert list(mirror.sampleBatch(seed, 1, 10000, False)) == [0]


def test_full_sample_is_a_permutation(mirror: Any) -> None:
    positions = list(mirror.sampleBatch(SEEDS[0], 256, 10000, False))
    assert sorted(positions) == list(range(256))
    assert positions != list(range(256))  # shuffled, in draw order
    last = list(mirror.sampleBatch(SEEDS[0], 256, 10000, True))
    assert sorted(last) == list(range(256)) and last[-1] == 255
