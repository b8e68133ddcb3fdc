"""Replay one interval (protocol section 5, step 2) on this machine's hardware.

From the claimed start (for k = 0: the initial checkpoint and a fresh optimizer), train steps
``k*s .. b_k - 1`` with the spec's schedule under an execution profile, then take the endpoint
evidence, probe gradient and statistics included, exactly as the trainer does: it is the same step function.
In exact mode the replay applies the claimed end's rounding log, and what it finds wrong with the log
goes to ``faults`` (:class:`ovig_node.training.exact.ExactNumerics`).
"""

from __future__ import annotations

import torch

from ovig_node import deadlines
from ovig_node.training.evidence import Evidence, load_model_tensors
from ovig_node.training.execution import ExecutionProfile, ProfileUnavailable
from ovig_node.training.loop import endpoint_evidence, exact_numerics, load_initial_model, training_step
from ovig_node.training.optim import build_optimizer, load_optimizer_state
from ovig_node.training.statistics import StepStatistics
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.training.workloads import Dataset, get_workload


def replay_interval(
    prepared: PreparedTask,
    k: int,
    start: Evidence | None,
    *,
    profile: ExecutionProfile,
    task: int = 0,
    claimed_log: torch.Tensor | None = None,
    faults: list[str] | None = None,
) -> Evidence:
    """The evidence an honest run of interval ``k`` from ``start`` reaches under ``profile``; in exact
    mode rounding as ``claimed_log`` says (required), and adding to ``faults`` what is wrong with it."""
    spec = prepared.spec
    layout = spec.layout
    if (start is None) != (k == 0):
        raise ValueError("interval 0 starts from the initial checkpoint; every other interval from E_{k-1}")
    if profile.world_size > 1:
        raise ProfileUnavailable(
            f"a replay runs in one process; {profile.name!r} is data-parallel (a provider's "
            "profile: its evidence is judged by one-process replays)"
        )
    profile.apply()
    workload = get_workload(spec.workload.name)
    dataset = Dataset.load(prepared.dataset_path)
    model = load_initial_model(workload, spec.workload.config, prepared.init_path).to(profile.device)
    if spec.exact and claimed_log is None:
        raise ValueError("an exact-mode replay applies the claim's rounding log")
    numerics = exact_numerics(model, workload, dataset, spec, profile, claimed_log)
    optimizer = build_optimizer(spec.optimizer, model, fused=profile.fused_optimizer)
    if start is not None:
        load_model_tensors(model, start.model, trainable_only=True)
        load_optimizer_state(model, optimizer, start.optim)
    statistics = StepStatistics(model, sharded=False)
    for step in range(layout.start_step(k), layout.end_step(k)):
        deadlines.check(f"the replay at step {step}")  # an auditor's seat's deadline, if it has one
        training_step(model, optimizer, workload, dataset, spec, step, profile, None, numerics, statistics)
    end = endpoint_evidence(
        model, optimizer, workload, dataset, spec, prepared.spec_hash, task, k, profile, numerics, statistics
    )
    if numerics is not None and faults is not None:
        faults.extend(numerics.faults)
    return end
