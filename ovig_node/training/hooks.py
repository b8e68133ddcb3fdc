"""The hooks the training step calls in the intervals they cover: how a provider's change (an attack, in
ovig_node.attacks) plugs into the one honest training loop, without the loop knowing any attack.

Every hook defaults to honest behaviour, so a change overrides only what it changes. The trainer
runs the hooks only for steps inside ``intervals``; everything else, including the probe gradient and
the evidence format, stays honest, so the changed evidence is well formed and only the replay
comparison can tell.

Order within one step (``training_step``):

1. ``lr`` and ``batch`` choose what the step trains on, ``compute_dtype`` its precision;
2. ``gradients`` changes ``.grad`` before the optimizer step, ``skip_update`` may leave it out;
3. ``after_update`` changes the weights, then ``after_optimizer`` the optimizer state.

``setup`` runs once before the first step with the task's :class:`StepContext`, so hooks that need the
workload (a target objective, a trigger, the interval layout) find it in ``self.context``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ovig_node.errors import OvigError
from ovig_node.protocol.intervals import Layout

if TYPE_CHECKING:
    from ovig_node.protocol.spec import TaskSpec
    from ovig_node.training.workloads import Dataset, Workload


class HooksNotSetUp(OvigError, RuntimeError):
    """Hooks used before the trainer handed them the task (``setup``)."""


@dataclass(frozen=True)
class StepContext:
    """What the trainer knows about the task, handed to the hooks once before training."""

    spec: TaskSpec
    workload: Workload
    dataset: Dataset
    init_path: Path  # the initial checkpoint: what evidence leaves out (frozen parameters) comes from it
    # What an attack or a measure derives from the task once and reuses (a chat dataset's tokenizer and
    # questions): the one mutable part, left out of equality and repr.
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class StepHooks:
    intervals: frozenset[int]  # the intervals the provider fakes
    # What the attack remembers between hooks (its context, saved tensors): the one mutable part of
    # an otherwise frozen configuration, left out of equality and repr.
    memory: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def context(self) -> StepContext:
        if "context" not in self.memory:
            raise HooksNotSetUp(f"{self.name} needs the task context: the trainer calls setup() before training")
        context: StepContext = self.memory["context"]
        return context

    def active(self, step: int, layout: Layout) -> bool:
        return step < layout.total_steps and step // layout.stride in self.intervals

    def last_step(self, step: int) -> bool:
        """True for the last step of an interval (the one whose state becomes E_k)."""
        layout = self.context.spec.layout
        return step + 1 == layout.end_step(step // layout.stride)

    def setup(self, context: StepContext) -> None:
        """Called once before the first step; subclasses that override it call ``super().setup``."""
        self.memory["context"] = context

    def batch(self, step: int, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The examples (and random draws) the step really trains on."""
        return batch

    def lr(self, step: int, lr: float) -> float:
        """The learning rate the step really uses."""
        return lr

    def compute_dtype(self, step: int) -> torch.dtype | None:
        """A lower precision to run the forward and backward pass in (None: the spec's)."""
        return None

    def gradients(self, step: int, model: nn.Module) -> None:
        """Change ``.grad`` in place before the optimizer step."""

    def skip_update(self, step: int) -> bool:
        """True to leave out the optimizer step entirely."""
        return False

    def after_update(self, step: int, model: nn.Module) -> None:
        """Change the weights after the optimizer step."""

    def after_optimizer(self, step: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        """Change the optimizer state (moments, step counters) after the optimizer step."""

    def rounding(
        self, key: tuple[int, ...], free: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, nearest: torch.Tensor
    ) -> torch.Tensor:
        """Exact mode: the rounded values of one rounding site (``key``: step, phase, site, call, element) given
        its ``lo`` and ``hi`` neighbours and the ``nearest`` (an honest trainer's); the values under ``free``
        are within training.exact.STEERABLE of their midpoint, where any side passes. Logged as returned."""
        return nearest

    def publish(self, k: int, evidence: Path, scratch: Path) -> Path | None:
        """The file the provider pins and lists for E_k in its opening manifest: ``evidence`` itself (what an
        honest provider does), another file it writes under ``scratch``, or None to list a CID it never serves.
        Its committed digest stays E_k's either way: only what a verifier downloads changes."""
        return evidence
