"""What a workload is: a dataset it can materialise, a model, and a loss for one batch.

Everything random in a step is drawn by :meth:`Workload.randomness` from a generator seeded from
(spec seed, step) alone (protocol section 2.2), so a replay on other hardware draws the same noise.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file
from torch import nn

from ovig_node.errors import OvigError
from ovig_node.protocol.schedule import batch_indices
from ovig_node.training.evidence import safetensors_bytes

if TYPE_CHECKING:
    from ovig_node.protocol.spec import TaskSpec


# AdamW at a constant learning rate: the recipe a workload uses unless it says otherwise (Workload.optimizer)
DEFAULT_OPTIMIZER: dict[str, Any] = {"name": "adamw", "lr": "0.003", "beta1": "0.9", "beta2": "0.999", "eps": "1e-8"}


def derived_seed(text: str) -> int:
    """A 63-bit torch seed from ``text``: the same on every machine and in every language."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def step_seed(seed: int, step: int) -> int:
    """The torch seed of ``step``'s random draws."""
    return derived_seed(f"{seed}:{step}:rng")


class DatasetError(OvigError, ValueError):
    """A dataset file that is not what its workload trains on (an owner's file, hostile until checked)."""


@dataclass(frozen=True)
class Dataset:
    """Examples as tensors sharing their first dimension, and text metadata the file carries (the llm
    workload's tokenizer)."""

    tensors: dict[str, torch.Tensor]
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def examples(self) -> int:
        return len(next(iter(self.tensors.values())))

    def batch(self, indices: list[int]) -> dict[str, torch.Tensor]:
        index = torch.tensor(indices, dtype=torch.long)
        return {name: tensor.index_select(0, index) for name, tensor in self.tensors.items()}

    def to_bytes(self) -> bytes:
        """Deterministic safetensors bytes: the dataset file whose sha256 and CID go into the spec."""
        tensors = {name: t.contiguous() for name, t in self.tensors.items()}
        return safetensors_bytes(tensors, metadata=self.metadata or None)

    @classmethod
    def load(cls, path: Path) -> Dataset:
        with safe_open(str(path), "pt") as stream:
            metadata = dict(stream.metadata() or {})
        return cls(tensors=load_file(str(path)), metadata=metadata)


class Workload(ABC):
    """One kind of training job. Subclasses are stateless; configuration travels in the spec."""

    name: str

    @abstractmethod
    def config(self, *, tiny: bool) -> dict[str, Any]:
        """The full config, or a tiny one that trains in seconds for tests."""

    def optimizer(self, *, tiny: bool) -> dict[str, Any]:
        """The spec's ``optimizer`` section a new task of this workload gets by default."""
        return dict(DEFAULT_OPTIMIZER)

    def batch_size(self, *, tiny: bool) -> int:
        """The spec's ``batch_size`` a new task of this workload gets by default."""
        return 32

    @abstractmethod
    def build_dataset(self, config: dict[str, Any]) -> Dataset:
        """Materialise the dataset from packaged data (no download), deterministically."""

    def check_dataset(self, dataset: Dataset, config: dict[str, Any]) -> None:
        """Raise DatasetError unless ``dataset`` looks like one this workload can train on with ``config``: a
        node checks an owner's file before it accepts the task, not at a step that would crash. Here only
        that the examples line up; a workload that reads owner-made files (llm) checks their contents too."""
        sizes = {name: len(tensor) if tensor.dim() else 0 for name, tensor in dataset.tensors.items()}
        if not sizes or len(set(sizes.values())) != 1 or 0 in sizes.values():
            raise DatasetError(f"the dataset's tensors must share a non-zero first dimension, not {sizes}")

    def published_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The config the spec holds, given the one the dataset and initial checkpoint were made from
        (a workload that reads the owner's files names them here by content, not by path)."""
        return config

    @abstractmethod
    def build_model(self, config: dict[str, Any]) -> nn.Module:
        """The model's architecture, freshly initialised (the caller seeds torch first)."""

    def initial_model(self, config: dict[str, Any]) -> nn.Module:
        """The model the initial checkpoint holds: pretrained weights where the workload has them."""
        return self.build_model(config)

    def randomness(
        self, batch_size: int, generator: torch.Generator, config: dict[str, Any]
    ) -> dict[str, torch.Tensor]:
        """Per-example random tensors for one step (noise, timesteps, masks), drawn once for the whole
        batch so that splitting it into micro-batches cannot change which example gets which draw."""
        return {}

    @abstractmethod
    def loss(self, model: nn.Module, batch: dict[str, torch.Tensor], config: dict[str, Any]) -> torch.Tensor:
        """Mean training loss of ``batch`` (data and the tensors of :meth:`randomness`)."""

    def logits(self, model: nn.Module, batch: dict[str, torch.Tensor], config: dict[str, Any]) -> torch.Tensor | None:
        """Class scores (B, classes) for a classifier, None for a workload that predicts no class; attack
        evaluations use it to measure what a backdoor achieved."""
        return None


def step_batch(workload: Workload, dataset: Dataset, spec: TaskSpec, step: int) -> dict[str, torch.Tensor]:
    """The examples and random draws of ``step`` (protocol section 2.2), made on the CPU so every
    device trains on the same numbers."""
    generator = torch.Generator().manual_seed(step_seed(spec.seed, step))
    indices = batch_indices(spec.seed, dataset.examples, spec.batch_size, step)
    return dataset.batch(indices) | workload.randomness(len(indices), generator, spec.workload.config)
