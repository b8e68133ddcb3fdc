"""The workloads a task can name (``spec.workload.name``)."""

from __future__ import annotations

from ovig_node.training.workloads.base import Dataset, DatasetError, Workload, step_batch, step_seed
from ovig_node.training.workloads.diffusion import DiffusionWorkload
from ovig_node.training.workloads.language import LanguageWorkload
from ovig_node.training.workloads.llm import LlmWorkload
from ovig_node.training.workloads.vision import VisionWorkload

WORKLOADS: dict[str, Workload] = {
    w.name: w for w in (LanguageWorkload(), VisionWorkload(), DiffusionWorkload(), LlmWorkload())
}


def get_workload(name: str) -> Workload:
    if name not in WORKLOADS:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    return WORKLOADS[name]


__all__ = ["WORKLOADS", "Dataset", "DatasetError", "Workload", "get_workload", "step_batch", "step_seed"]
