"""Optimizers from the spec, the learning rate as a pure function of the step, and optimizer state
as named tensors (the ``optim/`` section of the evidence).

OVIG's paper supports only stateless SGD; here momentum buffers and Adam moments are evidence too,
so a replay starts from exactly the provider's optimizer state.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal

import torch
from torch import nn

from ovig_node.protocol.spec import OptimizerSpec
from ovig_node.training.distributed import placed_like


def build_optimizer(spec: OptimizerSpec, model: nn.Module, *, fused: bool = False) -> torch.optim.Optimizer:
    """The torch optimizer the spec names: single-tensor kernels (``foreach=False``), or torch's fused
    kernel (``fused``, an execution profile's choice: the same update evaluated in another order)."""
    params = list(model.parameters())
    lr = float(Decimal(spec.lr))
    decay = float(Decimal(spec.weight_decay))
    kernel: dict[str, bool] = {"fused": True} if fused else {"foreach": False}
    if spec.name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=decay, **kernel)
    if spec.name == "sgd_momentum":
        assert spec.momentum is not None
        return torch.optim.SGD(params, lr=lr, momentum=float(Decimal(spec.momentum)), weight_decay=decay, **kernel)
    assert spec.beta1 is not None and spec.beta2 is not None and spec.eps is not None
    betas = (float(Decimal(spec.beta1)), float(Decimal(spec.beta2)))
    return torch.optim.AdamW(params, lr=lr, betas=betas, eps=float(Decimal(spec.eps)), weight_decay=decay, **kernel)


def lr_at(spec: OptimizerSpec, step: int, total_steps: int) -> float:
    """Learning rate of ``step``: linear warm-up, then constant, linear or cosine decay to ``min_lr``."""
    peak = float(Decimal(spec.lr))
    schedule = spec.schedule
    if step < schedule.warmup_steps:
        return peak * (step + 1) / schedule.warmup_steps
    if schedule.name == "constant":
        return peak
    floor = float(Decimal(schedule.min_lr))
    span = max(1, total_steps - schedule.warmup_steps)
    progress = min(1.0, (step - schedule.warmup_steps) / span)
    if schedule.name == "linear":
        return floor + (peak - floor) * (1.0 - progress)
    return floor + (peak - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def _named_params(model: nn.Module) -> Iterator[tuple[str, nn.Parameter]]:
    yield from model.named_parameters()


def optimizer_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    """``"<param>/<state>" -> tensor`` for every state entry (scalars become 0-d tensors)."""
    tensors: dict[str, torch.Tensor] = {}
    for name, param in _named_params(model):
        for key, value in optimizer.state.get(param, {}).items():
            tensors[f"{name}/{key}"] = value if isinstance(value, torch.Tensor) else torch.tensor(value)
    return tensors


def load_optimizer_state(model: nn.Module, optimizer: torch.optim.Optimizer, tensors: dict[str, torch.Tensor]) -> None:
    """Restore what :func:`optimizer_state` saved (copies, so the evidence's tensors stay untouched)."""
    by_name = dict(_named_params(model))
    optimizer.state.clear()
    for key, value in tensors.items():
        name, _, state = key.rpartition("/")
        if name not in by_name:
            raise KeyError(f"optimizer state for unknown parameter {name!r}")
        param = by_name[name]
        if state != "step" and param.dtype == torch.float64 and value.dtype == torch.float32:
            value = value.double()  # exact mode trains a float64 model from float32 evidence (exactly)
        # torch keeps Adam's step counter on the CPU (unless capturable); moments live with the weights
        # (a rank of a sharded run keeps its shard of them).
        optimizer.state[param][state] = value.clone() if state == "step" else placed_like(param, value)


def is_step_counter(key: str) -> bool:
    """Whether ``key`` of the optimizer-state section is a parameter's ``step`` counter (an exact integer)."""
    return key.rsplit("/", 1)[-1] == "step"


def step_counters(tensors: dict[str, torch.Tensor]) -> dict[str, int]:
    """Every ``step`` counter in saved optimizer state, by parameter (protocol: each must equal b_k)."""
    return {key: int(value.item()) for key, value in tensors.items() if is_step_counter(key)}
