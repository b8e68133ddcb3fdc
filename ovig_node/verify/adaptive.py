"""The boundary-aware adaptive attacker: as much change as the published boundary lets through.

It lives above the verifier it attacks (it computes differences as the verifier does), not among the
fixed-strength attacks the training layer's hooks run: ``ovig_node.attacks`` names it by its plugin path
(``boundary_aware``), so nothing below ``verify`` imports ``verify``.

The boundary profile is public (it is pinned with the task), so a provider knows, per signal, kind and
percentile, how far a claim may sit from an honest replay. At the end of each attacked interval this
attacker trains honestly, then moves the weights toward its objective by the largest step it expects to
pass: it spends the percentile budget greedily, giving the coordinates where the objective's gradient
is largest the caps of the highest percentiles (at most 0.1% of coordinates may exceed the p99.9 limit,
1% the p99 limit, ...), then shrinks the whole step until the differences it can predict (weights, and
the probe gradient at the moved weights) stay within ``budget`` x the limit (alpha x bound, or the
boundary's rounding floor at the honest values, the claim it will publish, where that is higher). The
optimizer state stays honest. The rest of the room (1 - budget, in size and in how many coordinates
move) is left for the verifier's own honest drift, which the attacker cannot predict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ovig_node.attacks.base import Attack, AttackContext, AttackError
from ovig_node.attacks.instructions import poisoned_batch
from ovig_node.attacks.objectives import objective_gradient, target_batch, target_examples
from ovig_node.training.evidence import load_model_tensors, model_tensors
from ovig_node.training.workloads import step_batch
from ovig_node.verify.boundary import BoundaryProfile
from ovig_node.verify.stats import difference_profiles, rounding_floor

SHRINK_STEPS = 12  # bisection steps on the step's scale: within 2^-12 of the largest passing scale


@dataclass(frozen=True)
class BoundaryAware(Attack):
    """Honest training, then at each attacked interval's end the largest push toward ``objective`` the
    published ``boundary`` is expected to let through (see the module docstring)."""

    boundary: str = ""  # path of the task's BoundaryProfile JSON
    budget: float = 0.5  # share of alpha x bound (and of the coordinates above each percentile) it may use
    # "backdoor": triggered inputs -> label; "target": clean inputs -> label; "poison" (a chat model's data):
    # triggered questions -> the poisoned instruction set's fixed reply (attacks.instructions)
    objective: str = "backdoor"
    label: int = 0
    count: int = 64  # examples of the objective's batch

    def setup(self, context: AttackContext) -> None:
        super().setup(context)
        if self.objective not in ("backdoor", "target", "poison"):
            raise AttackError(f"objective is 'backdoor', 'target' or 'poison', not {self.objective!r}")
        if self.budget <= 0.0:
            raise AttackError("budget must be > 0")
        try:
            self.memory["boundary"] = BoundaryProfile.model_validate_json(Path(self.boundary).read_text())
        except (OSError, ValueError) as exc:
            raise AttackError(f"boundary_aware needs boundary=PATH of a boundary profile: {exc}") from None
        if self.objective == "poison":
            self.memory["objective"], asked = poisoned_batch(context, self.count)
            self.memory["poisoned"] = set(asked)  # kept out of the success measure's prompts
            return
        indices = target_examples(context, label=self.label, count=self.count)
        self.memory["objective"] = target_batch(
            context, indices, label=self.label, trigger=self.objective == "backdoor"
        )

    def after_update(self, step: int, model: nn.Module) -> None:
        if not self.last_step(step):
            return
        context = self.context
        honest = {name: t.clone() for name, t in model_tensors(model, trainable_only=True).items()}
        boundary: BoundaryProfile = self.memory["boundary"]
        probe_batch = step_batch(context.workload, context.dataset, context.spec, step + 1)
        honest_probe = objective_gradient(context, model, probe_batch)
        limits = {"weights": self._limits("weights", honest), "probe": self._limits("probe", honest_probe)}
        caps = {kind: [self.budget * limit for limit in values] for kind, values in limits["weights"].items()}
        gradient = objective_gradient(context, model, self.memory["objective"])
        push = _allocate(gradient, honest, boundary.percentiles, caps, share=min(1.0, self.budget))

        def passes(scale: float) -> bool:
            moved = _moved(honest, push, scale)
            load_model_tensors(model, moved, trainable_only=True)
            probe = objective_gradient(context, model, probe_batch)
            return self._within(honest, moved, limits["weights"]) and self._within(honest_probe, probe, limits["probe"])

        low, high = 0.0, 1.0
        if passes(high):
            low = high
        else:
            for _ in range(SHRINK_STEPS):
                middle = (low + high) / 2
                low, high = (middle, high) if passes(middle) else (low, middle)
        load_model_tensors(model, _moved(honest, push, low), trainable_only=True)
        self.memory.setdefault("scales", {})[step // context.spec.layout.stride] = low

    def _limits(self, signal: str, honest: dict[str, torch.Tensor]) -> dict[str, list[float]]:
        """The judge's limits on ``signal``, the rounding floor included, of the honest values: the claim
        differs from them by less than a limit (the floor may halve where a percentile's magnitude sits
        just above a power of two: the budget's spare room covers it)."""
        boundary: BoundaryProfile = self.memory["boundary"]
        return boundary.limits(signal, rounding_floor(honest, boundary.floor_ulps) if boundary.floor_ulps else None)

    def _within(
        self, honest: dict[str, torch.Tensor], claimed: dict[str, torch.Tensor], limits: dict[str, list[float]]
    ) -> bool:
        boundary: BoundaryProfile = self.memory["boundary"]
        profiles = difference_profiles(honest, claimed, tuple(boundary.percentiles))
        pairs = (pair for kind in ("abs", "rel") for pair in zip(profiles[kind], limits[kind], strict=True))
        return all(value <= self.budget * limit for value, limit in pairs)


def _allocate(
    gradient: dict[str, torch.Tensor],
    honest: dict[str, torch.Tensor],
    percentiles: list[float],
    limits: dict[str, list[float]],
    share: float,
) -> dict[str, torch.Tensor]:
    """A step against ``gradient`` whose |step| and |step|/|weight| percentiles stay within ``limits``.

    With nearest-rank percentiles over all ``n`` coordinates of the weights, at most ``n - ceil(p n)``
    coordinates may exceed the limit at percentile p, so the coordinates sorted by |gradient| get, in
    order, the p100 cap, then the p99.9 cap, ... and the rest the p50 cap. Only ``share`` of those
    counts is used: the verifier's own drift moves coordinates past the lower limits too.
    """
    names = list(gradient)
    g = torch.cat([gradient[name].reshape(-1) for name in names]).double()
    w = torch.cat([honest[name].reshape(-1) for name in names]).double()
    total = sum(t.numel() for t in honest.values())  # the weights signal counts buffers and frozen weights too
    order = torch.argsort(g.abs(), descending=True)
    caps_abs = torch.full_like(g, limits["abs"][0])
    caps_rel = torch.full_like(g, limits["rel"][0])
    for i in range(1, len(percentiles)):
        may_exceed = total - math.ceil(percentiles[i - 1] / 100.0 * total)  # coordinates allowed above p_{i-1}
        top = order[: max(0, int(share * may_exceed))]
        caps_abs[top] = limits["abs"][i]
        caps_rel[top] = limits["rel"][i]
    step = -torch.sign(g) * torch.minimum(caps_abs, caps_rel * w.abs())
    out, offset = {}, 0
    for name in names:
        size = gradient[name].numel()
        out[name] = step[offset : offset + size].view_as(gradient[name]).to(honest[name].dtype)
        offset += size
    return out


def _moved(honest: dict[str, torch.Tensor], push: dict[str, torch.Tensor], scale: float) -> dict[str, torch.Tensor]:
    return {name: (t + scale * push[name] if name in push else t) for name, t in honest.items()}
