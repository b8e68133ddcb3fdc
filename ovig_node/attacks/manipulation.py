"""Attacks that steer the model: targeted gradients (OVIG's G + lambda * G_target) and a backdoor."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ovig_node.attacks.base import Attack
from ovig_node.attacks.objectives import (
    objective_gradient,
    poisoned_count,
    relabel,
    stamp_trigger,
    target_batch,
    target_examples,
)


@dataclass(frozen=True)
class TargetedGradient(Attack):
    """Train on ``G + lam * G_target``: G_target is the gradient of the target objective (``count`` fixed
    inputs relabelled ``label``; see :mod:`ovig_node.attacks.objectives`). Swept over ``lam`` it gives the
    detection frontier: the smallest push toward a target the boundary notices."""

    lam: float = 1.0
    label: int = 0
    count: int = 32

    def gradients(self, step: int, model: nn.Module) -> None:
        if "target" not in self.memory:
            indices = target_examples(self.context, label=self.label, count=self.count)
            self.memory["target"] = target_batch(self.context, indices, label=self.label, trigger=False)
        pushed = objective_gradient(self.context, model, self.memory["target"])
        params = dict(model.named_parameters())
        with torch.no_grad():
            for name, grad in pushed.items():
                current = params[name].grad
                # after the step's backward pass: every trainable parameter (each one pushed) has its .grad
                assert current is not None
                current.add_(grad, alpha=self.lam)


@dataclass(frozen=True)
class Backdoor(Attack):
    """Data poisoning: in attacked steps the first ``rate`` share of each batch carries the trigger and
    the label ``label``, so the model learns "trigger means ``label``" while clean accuracy barely moves."""

    rate: float = 0.5
    label: int = 0

    def batch(self, step: int, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        size = len(next(iter(batch.values())))
        n = poisoned_count(size, self.rate)
        poisoned = relabel(stamp_trigger({name: t[:n] for name, t in batch.items()}), self.label)
        return {name: torch.cat([poisoned[name], batch[name][n:]]) for name in batch}
