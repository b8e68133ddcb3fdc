"""Exact mode's adaptive attacker: the side of every value the rounding log leaves free, chosen by the provider.

In exact mode a replay applies the claim's log, and a logged direction is the provider's word wherever the
replay cannot tell which neighbour is nearest: within FREE x T of a rounding midpoint (training.exact). A
provider that knows its own values lies within STEERABLE x T there, whatever the replaying hardware, and may
log either side. This attacker takes the neighbour an honest trainer would not, at every such value of the
intervals it fakes: every choice it has, taken away from the honest run. It measures the size of that room
(how far the weights end from the honest run's), not what a provider aiming at an objective could do in it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ovig_node.attacks.base import Attack


@dataclass(frozen=True)
class LogSteering(Attack):
    """Every free value rounded to the other neighbour than the nearest (an exact tie: the odd one)."""

    def rounding(
        self, key: tuple[int, ...], free: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, nearest: torch.Tensor
    ) -> torch.Tensor:
        if not self.active(key[0], self.context.spec.layout):
            return nearest
        self.memory["steered"] = self.memory.get("steered", 0) + int(free.sum())
        return torch.where(free, torch.where(nearest == hi, lo, hi), nearest)
