"""Built-in attacks: OVIG's shortcut attacks and the ones a provider would try next.

The shortcut attacks live here; steering attacks in :mod:`~ovig_node.attacks.manipulation`, attacks on the
committed state in :mod:`~ovig_node.attacks.state`, a chat model's poisoned instruction set in
:mod:`~ovig_node.attacks.instructions`, the boundary-aware attacker in
:mod:`~ovig_node.verify.adaptive`, exact mode's log-steering attacker in :mod:`~ovig_node.attacks.steering`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from ovig_node.attacks.base import Attack, AttackError
from ovig_node.attacks.instructions import PoisonedInstructions
from ovig_node.attacks.manipulation import Backdoor, TargetedGradient
from ovig_node.attacks.state import InterpolatedEndpoint, OptimizerTamper
from ovig_node.attacks.steering import LogSteering

INPUT_FIELDS = ("image", "input_ids")  # the model inputs of the built-in workloads


@dataclass(frozen=True)
class MicroBatchDrop(Attack):
    """Train on only the first ``keep`` share of each batch (saves compute; OVIG's shortcut attack)."""

    keep: float = 0.5

    def batch(self, step: int, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        size = len(next(iter(batch.values())))
        kept = max(1, int(size * self.keep))
        return {name: tensor[:kept] for name, tensor in batch.items()}


@dataclass(frozen=True)
class DataPerturbation(Attack):
    """Shift every example's input by one position along its last axis (pixels of an image row, tokens
    of a sequence): a data-path change that keeps shapes, labels and random draws."""

    field: str | None = None  # the input tensor to perturb; None: "image" or "input_ids", whichever exists

    def batch(self, step: int, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        candidates = [self.field] if self.field else [name for name in INPUT_FIELDS if name in batch]
        if not candidates or candidates[0] not in batch:
            raise AttackError(f"data_perturbation: no input tensor {self.field or INPUT_FIELDS} in {sorted(batch)}")
        return {**batch, candidates[0]: batch[candidates[0]].roll(1, dims=-1)}


@dataclass(frozen=True)
class LowPrecision(Attack):
    """Run forward and backward passes in bfloat16 (cheaper hardware, OVIG's shortcut attack); in exact mode,
    in float32 instead of float64 (the training loop's choice: autocast leaves float64 alone)."""

    def compute_dtype(self, step: int) -> torch.dtype | None:
        return torch.bfloat16


@dataclass(frozen=True)
class StaleGradient(Attack):
    """Reuse the previous step's gradient instead of the fresh one every other step (OVIG's stale-gradient
    replay: half the backward passes could be skipped)."""

    every: int = 2

    def gradients(self, step: int, model: nn.Module) -> None:
        params = [(name, p, p.grad) for name, p in model.named_parameters() if p.grad is not None]
        last: dict[str, torch.Tensor] = self.memory.setdefault("last_gradient", {})
        if step % self.every == 0 and last:
            for name, param, _ in params:
                param.grad = last[name].clone()
        else:
            last.update({name: grad.detach().clone() for name, _, grad in params})


@dataclass(frozen=True)
class LrTamper(Attack):
    """Train at ``scale`` times the scheduled learning rate (finishes "faster")."""

    scale: float = 2.0

    def lr(self, step: int, lr: float) -> float:
        return lr * self.scale


@dataclass(frozen=True)
class SkipSteps(Attack):
    """Leave out every ``every``-th optimizer step (saves compute)."""

    every: int = 2

    def skip_update(self, step: int) -> bool:
        return step % self.every == 0


@dataclass(frozen=True)
class RowTamper(Attack):
    """Add ``delta`` to one row of one weight matrix at the end of each attacked step: a change to a
    few coordinates that a comparison over a fixed sample of coordinates would likely miss."""

    parameter: str | None = None  # None: the model's last trainable weight matrix (its output layer, an adapter)
    row: int = 0
    delta: float = 1e-3

    def after_update(self, step: int, model: nn.Module) -> None:
        params = dict(model.named_parameters())
        name = self.parameter or [n for n, p in params.items() if p.dim() == 2 and p.requires_grad][-1]
        with torch.no_grad():
            params[name][self.row] += self.delta


@dataclass(frozen=True)
class BaseTamper(Attack):
    """Move the frozen base under an adapter: add ``delta`` to every weight of one frozen matrix at the end
    of each attacked step (a provider that also trains, or swaps, the base it claims to keep). Evidence
    never holds frozen tensors, so the move shows only through what the adapter does on it."""

    parameter: str | None = None  # None: the model's first frozen weight matrix that is not an embedding
    delta: float = 1e-3

    def after_update(self, step: int, model: nn.Module) -> None:
        params = dict(model.named_parameters())
        frozen = [n for n, p in params.items() if p.dim() == 2 and not p.requires_grad and "embed" not in n]
        if not frozen and self.parameter is None:
            raise AttackError("base_tamper: the model has no frozen weight matrix (no adapter)")
        with torch.no_grad():
            params[self.parameter or frozen[0]].add_(self.delta)


BUILTIN: dict[str, Callable[..., Attack] | str] = {
    "micro_batch_drop": MicroBatchDrop,
    "data_perturbation": DataPerturbation,
    "low_precision": LowPrecision,
    "stale_gradient": StaleGradient,
    "lr_tamper": LrTamper,
    "skip_steps": SkipSteps,
    "row_tamper": RowTamper,
    "base_tamper": BaseTamper,
    "targeted_gradient": TargetedGradient,
    "backdoor": Backdoor,
    "poisoned_instructions": PoisonedInstructions,
    "optimizer_tamper": OptimizerTamper,
    "interpolated_endpoint": InterpolatedEndpoint,
    # The adaptive attacker computes differences as the verifier does, so it sits above verify: by its path.
    "boundary_aware": "ovig_node.verify.adaptive:BoundaryAware",
    "log_steering": LogSteering,
}
