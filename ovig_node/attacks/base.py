"""The attack interface: hooks the training step calls in attacked intervals.

Every hook defaults to honest behaviour, so an attack overrides only what it changes. The trainer
runs the hooks only for steps inside ``intervals``; everything else, including the probe gradient and
the evidence format, stays honest, so the attacked evidence is well formed and only the replay
comparison can tell.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ovig_node.errors import OvigError
from ovig_node.protocol.intervals import Layout


class AttackError(OvigError, ValueError):
    """An attack that cannot be loaded or configured."""


@dataclass(frozen=True)
class Attack:
    intervals: frozenset[int]  # the intervals the provider fakes

    @property
    def name(self) -> str:
        return type(self).__name__

    def active(self, step: int, layout: Layout) -> bool:
        return step < layout.total_steps and step // layout.stride in self.intervals

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


def load_attack(target: str, *, intervals: frozenset[int], **params: Any) -> Attack:
    """An attack by built-in name (``micro_batch_drop``) or plugin path (``package.module:callable``)."""
    from ovig_node.attacks.builtin import BUILTIN

    if target in BUILTIN:
        factory: Any = BUILTIN[target]
    else:
        module_name, _, attr = target.partition(":")
        if not attr:
            raise AttackError(f"unknown attack {target!r}: not built in ({', '.join(BUILTIN)}) nor module:callable")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise AttackError(f"cannot load attack {target!r}: {exc}") from None
    try:
        attack = factory(intervals=intervals, **params)
    except TypeError as exc:
        raise AttackError(f"attack {target!r} rejects its parameters: {exc}") from None
    if not isinstance(attack, Attack):
        raise AttackError(f"{target!r} returned {type(attack).__name__}, not an Attack")
    return attack
