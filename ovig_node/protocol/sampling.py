"""Which intervals of a batch the provider must open (protocol section 3), as the contract draws them.

``seed_j = keccak256(abi.encode(blockhash(h + SEED_DELAY), task, j))``; ``q = max(1, ceil(n * bps / 10^4))``
positions by a partial Fisher-Yates shuffle keyed by ``keccak256(abi.encode(seed_j, i))``. The last
batch always includes its final position (the deliverable) and draws the rest from the others. When
the seed block's hash is gone (more than 256 blocks later) every position is sampled.
"""

from __future__ import annotations

from eth_abi import encode
from eth_utils import keccak


def batch_seed(block_hash: bytes, task: int, j: int) -> bytes:
    """seed_j from the hash of block ``h + SEED_DELAY``."""
    return keccak(encode(["bytes32", "uint256", "uint256"], [block_hash, task, j]))


def sample_count(n: int, sample_bps: int) -> int:
    """q = max(1, (n * sampleBps + 9999) / 10000), integer division as in Solidity."""
    if n < 1 or not 1 <= sample_bps <= 10_000:
        raise ValueError("need n >= 1 and 1 <= sample_bps <= 10000")
    return max(1, (n * sample_bps + 9999) // 10_000)


def draw_positions(seed: bytes, n: int, sample_bps: int, *, is_last: bool) -> list[int]:
    """Sampled positions ``0 .. n-1`` of a batch of n intervals, in draw order."""
    q = sample_count(n, sample_bps)
    pool, draws = (n - 1, min(q, n) - 1) if is_last else (n, q)
    positions = list(range(pool))
    for i in range(draws):
        r = i + int.from_bytes(keccak(encode(["bytes32", "uint256"], [seed, i])), "big") % (pool - i)
        positions[i], positions[r] = positions[r], positions[i]
    return positions[:draws] + ([n - 1] if is_last else [])


def sample_everything(n: int) -> list[int]:
    """The fallback when the seed block's hash is unavailable: all positions, ascending."""
    return list(range(n))
