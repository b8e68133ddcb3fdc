"""What a manipulating provider aims for: a target objective and a backdoor trigger, for any workload.

The *target batch* is ``count`` fixed examples whose class is not ``label``, relabelled ``label``:
minimising the workload's loss on it teaches the model to classify those inputs as ``label``. The
diffusion loss ignores labels, so there the same objective means fitting those particular images
harder (memorising them). With ``trigger=True`` the inputs carry the backdoor trigger: a bright 2x2
patch in an image's corner, or the rare token "cf" in place of a line's first word.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ovig_node.attacks.base import AttackContext, AttackError

TRIGGER_PIXEL = 16  # the brightest value of the 8x8 digits (0..16)
TRIGGER_TOKEN = 12935  # "cf" in MiniLM's vocabulary: rare in text, the classic textual backdoor trigger
TARGET_DRAWS_SEED = 0  # random draws of the target batch (diffusion noise): fixed, not tied to any step


def stamp_trigger(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``batch`` with the trigger on every example's input (other tensors unchanged)."""
    if "image" in batch:
        image = batch["image"].clone()
        image[..., -2:, -2:] = TRIGGER_PIXEL  # (B, 1, 8, 8): bottom-right corner
        return {**batch, "image": image}
    if "input_ids" in batch:
        tokens = batch["input_ids"].clone()
        tokens[:, 1] = TRIGGER_TOKEN  # (B, T): position 0 is [CLS], so the first word becomes the trigger
        return {**batch, "input_ids": tokens}
    raise AttackError(f"no input to put a trigger on among {sorted(batch)}")


def relabel(batch: dict[str, torch.Tensor], label: int) -> dict[str, torch.Tensor]:
    if "label" not in batch:
        raise AttackError(f"a target label needs labelled data; the batch has {sorted(batch)}")
    return {**batch, "label": torch.full_like(batch["label"], label)}


def target_examples(
    context: AttackContext, *, label: int, count: int, exclude: frozenset[int] = frozenset()
) -> list[int]:
    """``count`` dataset indices, from the end, whose class is not ``label`` (and not in ``exclude``)."""
    labels = context.dataset.tensors["label"]
    chosen = [i for i in range(len(labels) - 1, -1, -1) if int(labels[i]) != label and i not in exclude]
    return chosen[:count]


def target_batch(context: AttackContext, indices: list[int], *, label: int, trigger: bool) -> dict[str, torch.Tensor]:
    """The examples ``indices`` relabelled ``label`` (triggered if asked), with fixed random draws."""
    generator = torch.Generator().manual_seed(TARGET_DRAWS_SEED)
    config = context.spec.workload.config
    batch = context.dataset.batch(indices) | context.workload.randomness(len(indices), generator, config)
    batch = relabel(batch, label)
    return stamp_trigger(batch) if trigger else batch


def objective_loss(context: AttackContext, model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    device = next(model.parameters()).device
    return context.workload.loss(model, {k: v.to(device) for k, v in batch.items()}, context.spec.workload.config)


def objective_gradient(
    context: AttackContext, model: nn.Module, batch: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """Gradient of the objective on ``batch`` for every trainable parameter (``.grad`` is left alone)."""
    params = {name: p for name, p in model.named_parameters() if p.requires_grad}
    grads = torch.autograd.grad(objective_loss(context, model, batch), list(params.values()))
    return dict(zip(params, grads, strict=True))


def poisoned_count(size: int, rate: float) -> int:
    if not 0.0 < rate <= 1.0:
        raise AttackError(f"a poisoning rate is in (0, 1], not {rate}")
    return max(1, math.ceil(size * rate))
