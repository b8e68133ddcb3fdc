"""Execution profiles: named ways to run the same training step that change its numerics.

Different accelerators sum floating-point numbers in different orders, so honest replays drift.
On a CPU we reproduce that drift with knobs that change reduction order or precision without changing
the mathematics: intra-op threads, splitting a batch into micro-batches whose gradients are summed,
and the dtype in which those gradients are accumulated. The same profile twice is bit-identical; two
profiles differ in the last bits. A profile's name is recorded in every report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from ovig_node.errors import OvigError


class ProfileUnavailable(OvigError, RuntimeError):
    """The profile needs hardware this machine does not have."""


@dataclass(frozen=True)
class ExecutionProfile:
    name: str
    threads: int = 1  # torch intra-op threads (changes how matmuls and reductions are split)
    micro_batches: int = 1  # the step's batch is split into this many parts, gradients summed
    accumulate: str = "float32"  # dtype of the gradient sum across micro-batches: float32 or float64
    device: str = "cpu"  # "cpu" or "cuda"; random draws stay on the CPU so every device sees the same
    tf32: bool = False  # on CUDA: let float32 matmuls and convolutions use TF32 (10-bit mantissa)

    def __post_init__(self) -> None:
        if self.threads < 1 or self.micro_batches < 1:
            raise ValueError("threads and micro_batches must be >= 1")
        if self.accumulate not in ("float32", "float64"):
            raise ValueError("accumulate must be float32 or float64")
        if self.device not in ("cpu", "cuda"):
            raise ValueError("device must be cpu or cuda")

    def apply(self) -> None:
        """Configure torch for this profile (process-wide: one profile per process)."""
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ProfileUnavailable(f"execution profile {self.name!r} needs a CUDA device; this machine has none")
        torch.set_num_threads(self.threads)
        torch.use_deterministic_algorithms(True)
        torch.backends.cuda.matmul.allow_tf32 = self.tf32
        torch.backends.cudnn.allow_tf32 = self.tf32

    def describe(self) -> dict[str, object]:
        return asdict(self)


PROFILES: dict[str, ExecutionProfile] = {
    p.name: p
    for p in (
        ExecutionProfile("reference"),
        ExecutionProfile("threads2", threads=2),
        ExecutionProfile("micro2", micro_batches=2),
        ExecutionProfile("micro3", micro_batches=3),  # uneven parts: 32 examples split 11 + 11 + 10
        ExecutionProfile("micro4", micro_batches=4),
        ExecutionProfile("micro8", micro_batches=8),
        ExecutionProfile("micro4-fp64acc", micro_batches=4, accumulate="float64"),
        ExecutionProfile("threads2-micro2", threads=2, micro_batches=2),
        ExecutionProfile("cuda", device="cuda"),
        ExecutionProfile("cuda-tf32", device="cuda", tf32=True),
    )
}


def get_profile(name: str) -> ExecutionProfile:
    if name not in PROFILES:
        raise ProfileUnavailable(f"unknown execution profile {name!r}; known: {', '.join(PROFILES)}")
    return PROFILES[name]
