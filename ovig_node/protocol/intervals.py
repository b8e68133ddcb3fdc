"""Intervals and batches (protocol section 2.3 and 2.4).

``N`` training steps are cut every ``stride`` steps into ``K = ceil(N / s)`` intervals; interval k
covers steps ``k*s .. b_k - 1`` with ``b_k = min((k + 1) * s, N)``. Batches group ``m`` intervals for
one on-chain commitment: batch j holds ``j*m .. min((j + 1) * m, K) - 1``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    """How a task's steps divide into intervals and batches."""

    total_steps: int  # N
    stride: int  # s
    intervals_per_batch: int  # m

    def __post_init__(self) -> None:
        if self.total_steps <= 0 or self.stride <= 0:
            raise ValueError("total_steps and stride must be positive")
        if not 1 <= self.intervals_per_batch <= 256:
            raise ValueError("intervals_per_batch must be within 1..256")

    @property
    def intervals(self) -> int:
        """K = ceil(N / s)."""
        return -(-self.total_steps // self.stride)

    @property
    def batches(self) -> int:
        """B = ceil(K / m)."""
        return -(-self.intervals // self.intervals_per_batch)

    def end_step(self, k: int) -> int:
        """b_k = min((k + 1) * s, N): the step count once interval k is done."""
        self._check_interval(k)
        return min((k + 1) * self.stride, self.total_steps)

    def start_step(self, k: int) -> int:
        self._check_interval(k)
        return k * self.stride

    def steps(self, k: int) -> int:
        """b_k - k*s: the steps interval k trains (the last interval's may be fewer than s)."""
        return self.end_step(k) - self.start_step(k)

    def batch_of(self, k: int) -> int:
        self._check_interval(k)
        return k // self.intervals_per_batch

    def batch_intervals(self, j: int) -> range:
        """The intervals committed by batch j."""
        if not 0 <= j < self.batches:
            raise ValueError(f"batch {j} out of range 0..{self.batches - 1}")
        first = j * self.intervals_per_batch
        return range(first, min(first + self.intervals_per_batch, self.intervals))

    def is_last_batch(self, j: int) -> bool:
        return j == self.batches - 1

    def _check_interval(self, k: int) -> None:
        if not 0 <= k < self.intervals:
            raise ValueError(f"interval {k} out of range 0..{self.intervals - 1}")
