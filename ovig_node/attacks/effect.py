"""What an attack achieved: the target objective's loss and the backdoor's success on a committed model.

Both are measured on examples chosen like the attacks' own (:mod:`ovig_node.attacks.objectives`), but
never on the ones an attack trained on: the backdoor's success rate is the share of *held-out*
triggered inputs, not of class ``label``, that the model now classifies as ``label``.
"""

from __future__ import annotations

import torch

from ovig_node.attacks.base import AttackContext
from ovig_node.attacks.objectives import objective_loss, target_batch, target_examples
from ovig_node.protocol.schedule import batch_indices
from ovig_node.training.evidence import load_model_tensors
from ovig_node.training.loop import load_initial_model
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.training.workloads import Dataset, get_workload

HELD_OUT = 200  # triggered inputs the backdoor's success is measured on


def context_of(prepared: PreparedTask) -> AttackContext:
    workload = get_workload(prepared.spec.workload.name)
    return AttackContext(prepared.spec, workload, Dataset.load(prepared.dataset_path), prepared.init_path)


def model_of(context: AttackContext, weights: dict[str, torch.Tensor]) -> torch.nn.Module:
    model = load_initial_model(context.workload, context.spec.workload.config, context.init_path)
    load_model_tensors(model, weights, trainable_only=True)
    return model.eval()


@torch.no_grad()
def target_loss(context: AttackContext, weights: dict[str, torch.Tensor], *, label: int = 0, count: int = 64) -> float:
    """The loss of the target objective (clean inputs relabelled ``label``) at ``weights``."""
    batch = target_batch(context, target_examples(context, label=label, count=count), label=label, trigger=False)
    return float(objective_loss(context, model_of(context, weights), batch))


@torch.no_grad()
def backdoor_success(
    context: AttackContext,
    weights: dict[str, torch.Tensor],
    *,
    label: int = 0,
    trained_on: frozenset[int] = frozenset(),
) -> float | None:
    """Share of held-out triggered inputs (not of class ``label``, not in ``trained_on``) classified as
    ``label``; None for a workload that predicts no class (diffusion), or when no input is held out (an
    interval that trained on every example)."""
    indices = target_examples(context, label=label, count=HELD_OUT, exclude=trained_on)
    if not indices:
        return None
    batch = target_batch(context, indices, label=label, trigger=True)
    logits = context.workload.logits(model_of(context, weights), batch, context.spec.workload.config)
    if logits is None:
        return None
    return float((logits.argmax(dim=1) == label).double().mean())


def examples_of_steps(context: AttackContext, steps: range) -> frozenset[int]:
    """Every dataset index the given steps train on."""
    spec = context.spec
    return frozenset(
        i for step in steps for i in batch_indices(spec.seed, context.dataset.examples, spec.batch_size, step)
    )
