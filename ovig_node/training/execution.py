"""Execution profiles: named ways to run the same training step that change its numerics.

Different accelerators sum floating-point numbers in different orders, so honest replays drift.
On a CPU we reproduce that drift with knobs that change reduction order or precision without changing
the mathematics: intra-op threads, splitting a batch into micro-batches whose gradients are summed,
and the dtype in which those gradients are accumulated. Those only split the same kernels' work
differently; accelerators also differ in *which kernels* compute a step, so two more knobs swap
kernels: convolutions (and some matmuls) by PyTorch's native code instead of oneDNN (as cuDNN picks
another algorithm per GPU), attention by the plain math path instead of the fused flash kernel (as
fused attention exists on some accelerators and not others), and the optimizer's update by torch's
fused kernel instead of one op per tensor (as fused optimizers such as apex's or torch's CUDA ones
evaluate the same update in another order).
The same profile twice is bit-identical; two profiles differ in the last bits. A profile's name is
recorded in every report.

Profiles fall into **families** by what they change (:attr:`ExecutionProfile.families`): a boundary
calibrated without a family, judged under it, says what a provider on hardware unlike any calibrated
one would see (``ovig eval --mode families``).
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass
from pathlib import Path

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
    onednn: bool = True  # convolutions (and some matmuls) by oneDNN's kernels; False: PyTorch's native ones
    fused_attention: bool = True  # scaled dot-product attention by the fused flash kernel; False: plain math
    fused_optimizer: bool = False  # the optimizer's update by torch's fused kernel; False: one op per tensor
    world_size: int = 1  # data-parallel ranks (processes), each on its share of the batch (training.distributed)
    sharded: bool = False  # FSDP2: weights, gradients and optimizer state sharded over the ranks, not copied

    def __post_init__(self) -> None:
        if self.threads < 1 or self.micro_batches < 1 or self.world_size < 1:
            raise ValueError("threads, micro_batches and world_size must be >= 1")
        if self.accumulate not in ("float32", "float64"):
            raise ValueError("accumulate must be float32 or float64")
        if self.device not in ("cpu", "cuda"):
            raise ValueError("device must be cpu or cuda")
        if self.world_size > 1 and self.device != "cpu":
            raise ValueError("data-parallel ranks run on the CPU for now (training.distributed)")
        if self.sharded and (self.world_size < 2 or self.micro_batches != 1 or self.accumulate != "float32"):
            raise ValueError("a sharded profile has several ranks, one micro-batch and float32 gradients")

    def apply(self) -> None:
        """Configure torch for this profile (process-wide: one profile per process)."""
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ProfileUnavailable(f"execution profile {self.name!r} needs a CUDA device; this machine has none")
        torch.set_num_threads(self.threads)
        torch.use_deterministic_algorithms(True)
        torch.backends.cuda.matmul.allow_tf32 = self.tf32
        torch.backends.cudnn.allow_tf32 = self.tf32
        # Set every time, not only when off: one process may run several profiles in turn (tests, calibration).
        # torch declares the module attribute a ContextProp; it is a bool property of the module's class.
        torch.backends.mkldnn.enabled = self.onednn  # type: ignore[assignment]
        torch.backends.cuda.enable_flash_sdp(self.fused_attention)  # the flag the CPU's dispatch reads too

    def describe(self) -> dict[str, object]:
        return asdict(self)

    @property
    def families(self) -> frozenset[str]:
        """What this profile changes from the reference execution, one family per knob."""
        changed = {
            "threads": self.threads != 1,
            "micro-batch": self.micro_batches != 1,
            "accumulation": self.accumulate != "float32",
            "conv-kernels": not self.onednn,
            "attention-kernels": not self.fused_attention,
            "optimizer-kernels": self.fused_optimizer,
            "device": self.device != "cpu" or self.tf32,
            "distributed": self.world_size != 1,
        }
        return frozenset(family for family, yes in changed.items() if yes)


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
        # Other kernels, not another split of the same ones (see the module's docstring).
        ExecutionProfile("native-conv", onednn=False),
        ExecutionProfile("math-attention", fused_attention=False),
        ExecutionProfile("fused-optimizer", fused_optimizer=True),
        # Data-parallel: ranks on shares of the batch, gradients all-reduced (DDP) or reduce-scattered into
        # each rank's shard of the weights (FSDP2) (training.distributed).
        ExecutionProfile("ddp2", world_size=2),
        ExecutionProfile("ddp4", world_size=4),
        ExecutionProfile("fsdp2", world_size=2, sharded=True),
        ExecutionProfile("fsdp4", world_size=4, sharded=True),
        ExecutionProfile("cuda", device="cuda"),
        ExecutionProfile("cuda-tf32", device="cuda", tf32=True),
    )
}


def one_process(profile: ExecutionProfile) -> ExecutionProfile:
    """The profile a replay of ``profile``'s claims runs under on the same machine: itself, or for a
    data-parallel one the reference profile of its device (replays run in one process)."""
    if profile.world_size == 1:
        return profile
    return PROFILES["reference" if profile.device == "cpu" else "cuda"]


def get_profile(name: str) -> ExecutionProfile:
    if name not in PROFILES:
        raise ProfileUnavailable(f"unknown execution profile {name!r}; known: {', '.join(PROFILES)}")
    return PROFILES[name]


def host_cpu() -> str:
    """This machine's CPU model ("x86_64" when the OS does not say): profiles replay alike on one host, and
    drift across hosts, so a watcher's attestation names both."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.machine() or "unknown"
