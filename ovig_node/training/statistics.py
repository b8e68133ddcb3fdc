"""Statistics of every step (protocol section 2.3, ``stats/``): what a step did, in four numbers.

For each step t of interval k the trainer records, after the gradient it applies is in ``.grad`` and the
optimizer has stepped (the per-step statistics SciCheck's first layer judges):

- ``loss``: the step's mean training loss;
- ``grad_norm``: the global L2 norm of the applied gradient, over every trainable parameter;
- ``update_norm``: the global L2 norm of the change the step made to the trainable parameters;
- ``grad_cosine``: the cosine between step t's gradient and step t + 1's, where step ``b_k``'s is the
  interval's probe gradient, so a replay of interval k alone computes every value of it.

E_k holds each as a float32 vector of the interval's steps (computed in float64, rounded once), so the
leaf's digest commits to them; the batch manifest copies them for every interval, opened or not, which is
what lets a watcher score the intervals it never replays. A replay recomputes them, and the boundary bounds
each one's drift (:mod:`ovig_node.verify.step_stats`); in exact mode they must agree to one float32 ulp.
Under a sharded profile each rank holds a shard of every gradient and parameter, and the sums are
all-reduced; a data-parallel rank holds the whole all-reduced gradient, so its sums are already the run's.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ovig_node.protocol.manifest import STATISTICS


def _local(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of this rank's values of ``tensor`` (its shard of a sharded one), in its own dtype: the float64
    sums below widen one tensor at a time, so what is kept between calls costs no more than the tensors."""
    to_local = getattr(tensor, "to_local", None)  # a DTensor (FSDP2, one dimension): the shard this rank holds
    return (to_local() if to_local is not None else tensor).detach().clone()


def _dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.double() * b.double()).sum()


class StepStatistics:
    """The statistics of the steps trained since the last interval's end, for the next E_k."""

    def __init__(self, model: nn.Module, *, sharded: bool) -> None:
        self._params = [p for p in model.parameters() if p.requires_grad]
        self._sharded = sharded
        self._rows: dict[str, list[float]] = {name: [] for name in STATISTICS}
        self._gradient: list[torch.Tensor] | None = None  # the last step's applied gradient (for its cosine)
        self._before: list[torch.Tensor] | None = None

    def gradients(self, loss: float) -> None:
        """Record step t's loss and applied gradient (in ``.grad``), and finish step t - 1's cosine."""
        gradient = self._applied()
        self._rows["loss"].append(loss)
        self._rows["grad_norm"].append(math.sqrt(self._sums([_dot(g, g) for g in gradient])[0]))
        self._close_cosine(gradient)
        self._gradient = gradient
        self._before = [_local(p) for p in self._params]

    def updated(self) -> None:
        """Record the norm of the change step t made (after the optimizer, and any rounding of it)."""
        assert self._before is not None, "updated() follows gradients()"
        change = []
        for param, before in zip(self._params, self._before, strict=True):
            delta = _local(param).double() - before.double()
            change.append((delta * delta).sum())
        self._rows["update_norm"].append(math.sqrt(self._sums(change)[0]))
        self._before = None

    def take(self) -> dict[str, torch.Tensor]:
        """The interval's statistics, its last cosine taken with the probe gradient (in ``.grad`` when
        called: the endpoint's, on step b_k's batch); starts the next interval's."""
        self._close_cosine(self._applied())
        self._gradient = None
        rows = {name: torch.tensor(values, dtype=torch.float64).float() for name, values in self._rows.items()}
        self._rows = {name: [] for name in STATISTICS}
        return rows

    def _applied(self) -> list[torch.Tensor]:
        return [_local(p.grad) if p.grad is not None else torch.zeros_like(_local(p)) for p in self._params]

    def _close_cosine(self, gradient: list[torch.Tensor]) -> None:
        if self._gradient is None:
            return
        dot, left, right = self._sums(
            [_dot(a, b) for a, b in zip(self._gradient, gradient, strict=True)],
            [_dot(a, a) for a in self._gradient],
            [_dot(b, b) for b in gradient],
        )
        norm = math.sqrt(left) * math.sqrt(right)
        self._rows["grad_cosine"].append(dot / norm if norm > 0.0 else 0.0)

    def _sums(self, *groups: list[torch.Tensor]) -> list[float]:
        """Each group's float64 sum, in parameter order, over every rank's shard when sharded."""
        total = torch.stack(
            [torch.stack(parts).sum() if parts else torch.zeros((), dtype=torch.float64) for parts in groups]
        )
        if self._sharded:
            from ovig_node.training import distributed

            distributed.all_reduce_sum([total])
        return [float(value) for value in total]
