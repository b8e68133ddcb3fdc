"""Leaves and the ordered, zero-padded Merkle tree of a batch (protocol section 2.4).

Mirrors ``contracts/libraries/LeafHash.sol`` and ``OrderedMerkle.sol``: leaf i sits at position i,
the leaf list is padded with ``bytes32(0)`` to the next power of two ``2^d``, a parent is
``keccak256(left || right)`` (unsorted), and a proof is exactly the d siblings from leaf to root,
read with the bits of i. So each interval has one digest: no second leaf for a k can verify.
"""

from __future__ import annotations

from dataclasses import dataclass

from eth_abi import encode
from eth_utils import keccak

ZERO = bytes(32)


def leaf_hash(task: int, k: int, end_step: int, digest: bytes) -> bytes:
    """``keccak256(bytes.concat(keccak256(abi.encode(task, k, b_k, digest_k))))``."""
    if len(digest) != 32:
        raise ValueError("digest must be 32 bytes (a sha256)")
    return keccak(keccak(encode(["uint256", "uint256", "uint256", "bytes32"], [task, k, end_step, digest])))


def depth(leaf_count: int) -> int:
    """d with 2^d the smallest power of two >= leaf_count (0 for one leaf)."""
    if leaf_count < 1:
        raise ValueError("a tree has at least one leaf")
    return (leaf_count - 1).bit_length()


def _parent(left: bytes, right: bytes) -> bytes:
    return keccak(left + right)


@dataclass(frozen=True)
class MerkleTree:
    """The tree over a batch's leaves; ``levels[0]`` is the padded leaf list, the last level the root."""

    levels: tuple[tuple[bytes, ...], ...]
    leaf_count: int

    @classmethod
    def build(cls, leaves: list[bytes]) -> MerkleTree:
        if not leaves:
            raise ValueError("a tree has at least one leaf")
        if any(len(leaf) != 32 for leaf in leaves):
            raise ValueError("leaves are 32-byte hashes")
        level = list(leaves) + [ZERO] * ((1 << depth(len(leaves))) - len(leaves))
        levels = [tuple(level)]
        while len(level) > 1:
            level = [_parent(level[i], level[i + 1]) for i in range(0, len(level), 2)]
            levels.append(tuple(level))
        return cls(levels=tuple(levels), leaf_count=len(leaves))

    @property
    def root(self) -> bytes:
        return self.levels[-1][0]

    def proof(self, index: int) -> list[bytes]:
        """The siblings of leaf ``index`` from the bottom up."""
        if not 0 <= index < self.leaf_count:
            raise ValueError(f"leaf index {index} out of range 0..{self.leaf_count - 1}")
        return [level[(index >> height) ^ 1] for height, level in enumerate(self.levels[:-1])]


def verify(proof: list[bytes], root: bytes, leaf: bytes, index: int, leaf_count: int) -> bool:
    """Same rule as ``OrderedMerkle.verify``: exact depth, position from the bits of ``index``."""
    if leaf_count < 1 or not 0 <= index < leaf_count or len(proof) != depth(leaf_count):
        return False
    node = leaf
    for height, sibling in enumerate(proof):
        node = _parent(node, sibling) if (index >> height) & 1 == 0 else _parent(sibling, node)
    return node == root
