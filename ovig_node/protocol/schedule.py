"""The deterministic data schedule (protocol section 2.2).

The example order of epoch e is the dataset's indices sorted by ``sha256(f"{seed}:{e}:{i}")`` (digest
bytes, ascending); step t takes the next ``batch_size`` indices of the epochs concatenated. Anyone
can recompute it in any language, so a replay sees exactly the provider's batches.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache


def epoch_order(seed: int, epoch: int, examples: int) -> tuple[int, ...]:
    """Dataset indices of ``epoch`` in schedule order."""
    if examples < 1:
        raise ValueError("a dataset has at least one example")
    return _epoch_order(seed, epoch, examples)


@lru_cache(maxsize=4)
def _epoch_order(seed: int, epoch: int, examples: int) -> tuple[int, ...]:
    # A replay walks epochs forward, so a few cached orders cover every step of an interval.
    return tuple(sorted(range(examples), key=lambda i: hashlib.sha256(f"{seed}:{epoch}:{i}".encode()).digest()))


def batch_indices(seed: int, examples: int, batch_size: int, step: int) -> list[int]:
    """The dataset indices step ``step`` trains on (any step >= 0, past N too: the probe uses b_k)."""
    if batch_size < 1 or step < 0:
        raise ValueError("batch_size must be >= 1 and step >= 0")
    first = step * batch_size
    indices = []
    for position in range(first, first + batch_size):
        epoch, offset = divmod(position, examples)
        indices.append(epoch_order(seed, epoch, examples)[offset])
    return indices
