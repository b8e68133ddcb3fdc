"""Diffusion: a small DDPM that learns to predict the noise added to 8x8 digits.

Each step draws, per example, a timestep and a Gaussian noise image from the step's generator
(protocol section 2.2: randomness is a function of seed and step only), so a replay adds exactly the
same noise. The denoiser is a small conditional MLP on the flattened image and a timestep embedding.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from ovig_node.training.workloads.base import Dataset, Workload
from ovig_node.training.workloads.vision import VisionWorkload


def noise_schedule(steps: int) -> torch.Tensor:
    """Cumulative products alpha_bar_t of the linear beta schedule of Ho et al. (1e-4 .. 0.02)."""
    betas = torch.linspace(1e-4, 0.02, steps, dtype=torch.float64)
    return torch.cumprod(1.0 - betas, dim=0).float()


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of integer timesteps: (B,) -> (B, dim)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10_000.0) * torch.arange(half, dtype=torch.float32) / half)
    angles = t.float()[:, None] * freqs[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=1)


class Denoiser(nn.Module):
    def __init__(self, hidden: int, embed: int) -> None:
        super().__init__()
        self.embed = embed
        self.net = nn.Sequential(
            nn.Linear(64 + embed, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, 64),
        )

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        # x: (B, 1, 8, 8) noisy images, t: (B,) timesteps -> predicted noise (B, 1, 8, 8)
        h = torch.cat([x.flatten(1), timestep_embedding(t, self.embed)], dim=1)
        return self.net(h).view_as(x)


class DiffusionWorkload(Workload):
    name = "diffusion"

    def config(self, *, tiny: bool) -> dict[str, Any]:
        return (
            {"hidden": 64, "embed": 16, "timesteps": 100} if tiny else {"hidden": 256, "embed": 64, "timesteps": 1000}
        )

    def build_dataset(self, config: dict[str, Any]) -> Dataset:
        return VisionWorkload().build_dataset(config)  # the same digits; labels are ignored

    def build_model(self, config: dict[str, Any]) -> nn.Module:
        return Denoiser(hidden=int(config["hidden"]), embed=int(config["embed"]))

    def randomness(
        self, batch_size: int, generator: torch.Generator, config: dict[str, Any]
    ) -> dict[str, torch.Tensor]:
        timesteps = torch.randint(0, int(config["timesteps"]), (batch_size,), generator=generator)
        noise = torch.randn((batch_size, 1, 8, 8), generator=generator)
        return {"timestep": timesteps, "noise": noise}

    def loss(self, model: nn.Module, batch: dict[str, torch.Tensor], config: dict[str, Any]) -> torch.Tensor:
        x0 = batch["image"].float() / 8.0 - 1.0  # (B, 1, 8, 8) in [-1, 1]
        alpha_bar = noise_schedule(int(config["timesteps"]))[batch["timestep"]].view(-1, 1, 1, 1)
        noisy = alpha_bar.sqrt() * x0 + (1.0 - alpha_bar).sqrt() * batch["noise"]
        return F.mse_loss(model(noisy, batch["timestep"]), batch["noise"])
