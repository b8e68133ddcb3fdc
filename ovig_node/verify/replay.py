"""Replay one interval (protocol section 5, step 2) on this machine's hardware.

From the claimed start (for k = 0: the initial checkpoint and a fresh optimizer), train steps
``k*s .. b_k - 1`` with the spec's schedule under an execution profile, then take the endpoint
evidence, probe gradient included, exactly as the trainer does: it is the same step function.
"""

from __future__ import annotations

from ovig_node.training.evidence import Evidence, load_model_tensors
from ovig_node.training.execution import ExecutionProfile, ProfileUnavailable
from ovig_node.training.loop import endpoint_evidence, load_initial_model, training_step
from ovig_node.training.optim import build_optimizer, load_optimizer_state
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.training.workloads import Dataset, get_workload


def replay_interval(
    prepared: PreparedTask, k: int, start: Evidence | None, *, profile: ExecutionProfile, task: int = 0
) -> Evidence:
    """The evidence an honest run of interval ``k`` from ``start`` reaches under ``profile``."""
    spec = prepared.spec
    layout = spec.layout
    if (start is None) != (k == 0):
        raise ValueError("interval 0 starts from the initial checkpoint; every other interval from E_{k-1}")
    if profile.world_size > 1:
        raise ProfileUnavailable(f"a replay runs in one process; {profile.name!r} is data-parallel (a provider's "
                                 "profile: its evidence is judged by one-process replays)")  # fmt: skip
    profile.apply()
    workload = get_workload(spec.workload.name)
    dataset = Dataset.load(prepared.dataset_path)
    model = load_initial_model(workload, spec.workload.config, prepared.init_path).to(profile.device)
    optimizer = build_optimizer(spec.optimizer, model, fused=profile.fused_optimizer)
    if start is not None:
        load_model_tensors(model, start.model, trainable_only=True)
        load_optimizer_state(model, optimizer, start.optim)
    for step in range(layout.start_step(k), layout.end_step(k)):
        training_step(model, optimizer, workload, dataset, spec, step, profile)
    return endpoint_evidence(model, optimizer, workload, dataset, spec, prepared.spec_hash, task, k, profile)
