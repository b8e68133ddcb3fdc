"""A provider whose evidence would crash a replay that loads it unchecked (a plugin attack: the node tests
load it in a trainer process as ``hostile_attack:dropped_moment``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ovig_node.attacks.base import Attack


@dataclass(frozen=True)
class DroppedMoment(Attack):
    """Each E_k of its intervals lacks one parameter's second Adam moment, so a replay starting from it
    has no ``exp_avg_sq`` to load; its own training puts the moment back before the next step."""

    parameter: str = "fc1.bias"

    def after_optimizer(self, step: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        if self.last_step(step):  # E_k is written right after this step
            state = optimizer.state[dict(model.named_parameters())[self.parameter]]
            self.memory["dropped"] = (state, state.pop("exp_avg_sq"))

    def lr(self, step: int, lr: float) -> float:
        if (dropped := self.memory.pop("dropped", None)) is not None:  # before the next optimizer step
            state, moment = dropped
            state["exp_avg_sq"] = moment
        return lr


def dropped_moment(*, intervals: frozenset[int]) -> Attack:
    return DroppedMoment(intervals=intervals)
