"""The Python protocol mirror agrees with the contracts' code, run on a real anvil (Ape's)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ovig_node.protocol import merkle, sampling

SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 64, 100, 128, 129, 200, 255, 256]


@pytest.fixture(scope="module")
def mirror(project: Any, accounts: Any) -> Any:
    return accounts[0].deploy(project.ProtocolMirror)


def test_leaf_and_depth_agree(mirror: Any) -> None:
    rng = random.Random(1)
    for _ in range(40):
        task, k, end = rng.randrange(2**64), rng.randrange(2**16), rng.randrange(2**32)
        digest = rng.randbytes(32)
        assert bytes(mirror.leaf(task, k, end, digest)) == merkle.leaf_hash(task, k, end, digest)
    assert [mirror.depth(n) for n in range(1, 257)] == [merkle.depth(n) for n in range(1, 257)]


@pytest.mark.parametrize("size", SIZES)
def test_contract_accepts_exactly_our_proofs(mirror: Any, size: int) -> None:
    rng = random.Random(size)
    leaves = [rng.randbytes(32) for _ in range(size)]
    tree = merkle.MerkleTree.build(leaves)
    indices = range(size) if size <= 17 else sorted({0, size - 1, *rng.sample(range(size), 10)})
    for index in indices:
        proof = tree.proof(index)
        assert mirror.verify(proof, tree.root, leaves[index], index, size) is True
        assert mirror.verify([*proof, bytes(32)], tree.root, leaves[index], index, size) is False
        if proof:
            assert mirror.verify(proof[:-1], tree.root, leaves[index], index, size) is False
        if index ^ 1 < size:
            assert mirror.verify(proof, tree.root, leaves[index], index ^ 1, size) is False
        # A claimed leaf count with the same depth keeps the proof valid; another depth breaks it.
        other = size + 1
        expected = merkle.depth(other) == merkle.depth(size)
        assert mirror.verify(proof, tree.root, leaves[index], index, other) is expected
        assert merkle.verify(proof, tree.root, leaves[index], index, other) is expected
    assert mirror.verify(tree.proof(0), tree.root, leaves[0], size, size) is False


def test_sampling_agrees_on_shared_vectors(mirror: Any) -> None:
    rng = random.Random(3)
    for n in range(1, 41):
        for bps in (1, 500, 2500, 10_000):
            block_hash = rng.randbytes(32)
            seed = sampling.batch_seed(block_hash, n, 7)
            assert bytes(mirror.seedOf(block_hash, n, 7)) == seed
            assert mirror.sampleSize(n, bps) == sampling.sample_count(n, bps)
            for is_last in (False, True):
                expected = sampling.draw_positions(seed, n, bps, is_last=is_last)
                assert list(mirror.sampleBatch(seed, n, bps, is_last)) == expected, (n, bps, is_last)
