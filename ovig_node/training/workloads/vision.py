"""Vision: a small CNN classifying scikit-learn's bundled 8x8 digits (1,797 images, 10 classes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from ovig_node.training.workloads.base import Dataset, Workload

POOLS: dict[str, Callable[..., torch.Tensor]] = {"max": F.max_pool2d, "avg": F.avg_pool2d}


class DigitsCnn(nn.Module):
    def __init__(self, channels: int, hidden: int, pool: str = "max") -> None:
        super().__init__()
        self.pool = POOLS[pool]
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.fc1 = nn.Linear(2 * channels * 4 * 4, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B, 1, 8, 8) in [0, 1]
        x = F.relu(self.conv1(x))  # (B, C, 8, 8)
        # Max-pooling routes each window's gradient to one winner, which a last-bit difference can change
        # where two values nearly tie: an honest replay then disagrees in whole gradient entries. Average
        # pooling has no such branch (README, false positives), so it is the default.
        x = self.pool(F.relu(self.conv2(x)), 2)  # (B, 2C, 4, 4)
        x = F.relu(self.fc1(x.flatten(1)))  # (B, hidden)
        return self.fc2(x)  # (B, 10) logits


class VisionWorkload(Workload):
    name = "vision"

    def config(self, *, tiny: bool) -> dict[str, Any]:
        # Average pooling: max-pooling's near-ties made honest replays fail (README, false positives).
        size = {"channels": 4, "hidden": 32} if tiny else {"channels": 16, "hidden": 128}
        return {**size, "pool": "avg"}

    def build_dataset(self, config: dict[str, Any]) -> Dataset:
        from sklearn.datasets import load_digits  # bundled with scikit-learn: no download

        digits = load_digits()
        images = torch.tensor(digits.images, dtype=torch.uint8).unsqueeze(1)  # (1797, 1, 8, 8), values 0..16
        labels = torch.tensor(digits.target, dtype=torch.int64)  # (1797,)
        return Dataset(tensors={"image": images, "label": labels})

    def build_model(self, config: dict[str, Any]) -> nn.Module:
        pool = config.get("pool", "max")  # a spec written before the key existed was trained with max-pooling
        if pool not in POOLS:
            raise ValueError(f"vision config: pool must be one of {sorted(POOLS)}, not {pool!r}")
        return DigitsCnn(channels=int(config["channels"]), hidden=int(config["hidden"]), pool=pool)

    def loss(self, model: nn.Module, batch: dict[str, torch.Tensor], config: dict[str, Any]) -> torch.Tensor:
        return F.cross_entropy(self.logits(model, batch, config), batch["label"])

    def logits(self, model: nn.Module, batch: dict[str, torch.Tensor], config: dict[str, Any]) -> torch.Tensor:
        return model(batch["image"].float() / 16.0)  # pixels 0..16 -> [0, 1]
