"""Attacks on the committed state itself: tampered optimizer moments and an interpolated endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from torch import nn

from ovig_node.attacks.base import Attack, AttackContext, AttackError
from ovig_node.training.evidence import load_model_tensors, model_tensors
from ovig_node.training.optim import is_step_counter, load_optimizer_state, optimizer_state


@dataclass(frozen=True)
class OptimizerTamper(Attack):
    """At the end of the interval, scale the optimizer's moments by ``scale`` (0: reset them, as a
    provider who lost its optimizer state and restarted would). Weights and probe stay exactly
    honest, so only the optimizer-state signal can tell; OVIG's stateless-SGD evidence has none."""

    scale: float = 0.0
    state: str | None = None  # one state name ("exp_avg_sq", "momentum_buffer"); None: every moment

    def after_optimizer(self, step: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        if not self.last_step(step):
            return
        for per_param in optimizer.state.values():
            for key, value in per_param.items():
                if key != "step" and isinstance(value, torch.Tensor) and self.state in (None, key):
                    value.mul_(self.scale)


@dataclass(frozen=True)
class InterpolatedEndpoint(Attack):
    """Skip the interval's training and commit a point on the straight line from the interval's start to
    another checkpoint ``anchor`` (a later checkpoint of an earlier run, say): weights and, when the
    anchor holds them, optimizer moments are interpolated; step counters read as if every step ran.

    ``fraction`` is how far along the line to go; None takes the interval's share of the steps between
    its start and the anchor's step (from the anchor's evidence metadata), i.e. a constant pace."""

    anchor: str = ""  # a safetensors file with model/ (and optim/) tensors: an evidence file or a checkpoint
    fraction: float | None = None

    def setup(self, context: AttackContext) -> None:
        super().setup(context)
        if not self.anchor or not Path(self.anchor).is_file():
            raise AttackError(f"interpolated_endpoint needs anchor=PATH of a checkpoint; got {self.anchor!r}")
        with safe_open(self.anchor, framework="pt") as checkpoint:
            tensors = {key: checkpoint.get_tensor(key) for key in checkpoint.keys()}  # noqa: SIM118
            step = (checkpoint.metadata() or {}).get("step")
        self.memory["anchor"] = {
            section: {k.split("/", 1)[1]: t for k, t in tensors.items() if k.startswith(f"{section}/")}
            for section in ("model", "optim")
        }
        self.memory["anchor_step"] = None if step is None else int(step)
        if self.fraction is None and step is None:
            raise AttackError(f"{self.anchor} has no step in its metadata: give fraction=")

    def skip_update(self, step: int) -> bool:
        return True  # the work the provider saves

    def after_optimizer(self, step: int, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        layout = self.context.spec.layout
        k = step // layout.stride
        starts = self.memory.setdefault("starts", {})
        if k not in starts:  # first step of the interval: nothing has been updated yet
            weights = {name: t.clone() for name, t in model_tensors(model, trainable_only=True).items()}
            starts[k] = (weights, {name: t.clone() for name, t in optimizer_state(model, optimizer).items()})
        if self.last_step(step):
            start_weights, start_optim = starts[k]
            t = self._fraction(layout.start_step(k), layout.end_step(k))
            load_model_tensors(model, _towards(start_weights, self.memory["anchor"]["model"], t), trainable_only=True)
            optim = _towards(start_optim, self.memory["anchor"]["optim"], t)
            counters = {key: torch.tensor(float(layout.end_step(k))) for key in optim if is_step_counter(key)}
            load_optimizer_state(model, optimizer, optim | counters)

    def _fraction(self, start: int, end: int) -> float:
        if self.fraction is not None:
            return self.fraction
        anchor_step: int = self.memory["anchor_step"]
        if anchor_step <= start:
            raise AttackError(f"the anchor (step {anchor_step}) is not after the interval's start (step {start})")
        return (end - start) / (anchor_step - start)


def _towards(start: dict[str, torch.Tensor], anchor: dict[str, torch.Tensor], t: float) -> dict[str, torch.Tensor]:
    """``start + t * (anchor - start)`` for floating tensors both have; a tensor only the anchor has starts
    from zeros (the fresh optimizer of interval 0); everything else stays as it starts."""
    out = dict(start)
    for name, target in anchor.items():
        if not target.is_floating_point() or is_step_counter(name):
            out.setdefault(name, target.clone())
            continue
        begin = start.get(name, torch.zeros_like(target)).to(target.dtype)
        out[name] = begin + t * (target - begin)
    return out
