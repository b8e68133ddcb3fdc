"""Providers whose evidence is hostile (plugin attacks: the node tests load them in a trainer process as
``hostile_attack:dropped_moment`` and ``hostile_attack:hostile_files``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ovig_node.attacks.base import Attack

# What hostile_files publishes in place of E_k, by k: a CID nobody serves, the file padded past the size
# the spec's evidence can have, the file cut in half (its bytes no longer hash to the committed digest).
FILE_KINDS = {1: "missing", 2: "oversized", 3: "corrupt"}


@dataclass(frozen=True)
class DroppedMoment(Attack):
    """Each E_k of its intervals lacks one parameter's second Adam moment, so a replay starting from it
    has no ``exp_avg_sq`` to load; its own training puts the moment back before the next step (whose hooks
    run only in its intervals: they run from one interval to the task's end)."""

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


@dataclass(frozen=True)
class HostileFiles(DroppedMoment):
    """Drops a moment from E_k of its intervals (wrong structure) and, whatever its intervals, publishes
    FILE_KINDS' hostile files in place of E_1, E_2 and E_3; every other file is its own."""

    def publish(self, k: int, evidence: Path, scratch: Path) -> Path | None:
        kind = FILE_KINDS.get(k)
        if kind is None:
            return evidence
        if kind == "missing":
            return None
        data = evidence.read_bytes()
        scratch.mkdir(parents=True, exist_ok=True)
        out = scratch / f"E_{k}.{kind}"
        out.write_bytes(data + bytes(len(data) + 1) if kind == "oversized" else data[: len(data) // 2])
        return out


def dropped_moment(*, intervals: frozenset[int]) -> Attack:
    return DroppedMoment(intervals=intervals)


def hostile_files(*, intervals: frozenset[int]) -> Attack:
    return HostileFiles(intervals=intervals)


def wait_policy(**_: object) -> Attack:
    """Fails at once, naming the OpenMP wait policy of the process it runs in (an evaluation's worker)."""
    raise RuntimeError(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
