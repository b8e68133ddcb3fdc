"""Which intervals of a batch the provider must open (protocol section 3), as the contract draws them.

``seed_j = keccak256(abi.encode(value, task, j))``, ``value`` being the randomness backend's value of the
target named at the batch's commit (a drand round's randomness, or a block hash on devnets);
``q = max(1, ceil(n * bps / 10^4))`` positions by a partial Fisher-Yates shuffle keyed by
``keccak256(abi.encode(seed_j, i))``. The last batch always includes its final position (the deliverable)
and draws the rest from the others. When the target's value is gone (a block hash more than 256 blocks
old) every position is sampled.
"""

from __future__ import annotations

from eth_abi import encode
from eth_utils import keccak


def batch_seed(value: bytes, task: int, j: int) -> bytes:
    """seed_j from the value of the batch's randomness target."""
    return keccak(encode(["bytes32", "uint256", "uint256"], [value, task, j]))


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
    """The fallback when the target's value is gone: all positions, ascending."""
    return list(range(n))


def sampled_intervals(bitmap: int, j: int, intervals_per_batch: int) -> list[int]:
    """Interval indices of batch ``j``'s sample, ascending, from its on-chain ``sampledBitmap`` (bit i:
    interval ``j * m + i``)."""
    first = j * intervals_per_batch
    return [first + i for i in range(bitmap.bit_length()) if bitmap >> i & 1]
