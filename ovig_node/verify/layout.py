"""What an honest evidence file of a spec holds (protocol sections 2.3 and 5), known before any replay.

Every name, shape and dtype of ``E_k`` follows from the spec alone: the model's trainable state, the
optimizer's state after at least one step, and a gradient per trainable parameter. The layout is
derived by building the model on torch's ``meta`` device (no memory, no initialisation cost) and
taking one optimizer step on it, so it is the state torch itself keeps, not a copy of its rules.

From the layout a verifier

- caps every download of a provider's evidence (:attr:`EvidenceLayout.max_bytes`): the tensors'
  bytes plus an allowance for the safetensors header and metadata;
- checks a start file E_{k-1} before anything is loaded from it (:func:`start_problem`): the
  replay's ``load_state_dict`` trusts shapes and names, and a start that breaks them must be a
  verdict, never a crash.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from ovig_node.protocol.spec import TaskSpec
from ovig_node.training.evidence import SECTIONS, STATS, Evidence, model_tensors
from ovig_node.training.exact import LOG_TENSORS, LogError, decode_log
from ovig_node.training.optim import build_optimizer, optimizer_state
from ovig_node.training.statistics import STATISTICS
from ovig_node.training.workloads import get_workload

# The safetensors header is JSON: per tensor its name, dtype, shape and offsets; then the metadata
# (task, spec hash, interval, step). Generous, so an honest header never comes near it.
HEADER_BYTES_PER_TENSOR = 512
METADATA_BYTES = 4096

Shape = tuple[int, ...]


@dataclass(frozen=True)
class EvidenceLayout:
    # section -> tensor name -> (shape, dtype) of an honest E_k; and "init": the initial checkpoint's
    # weights, frozen ones included (what evidence leaves out)
    sections: dict[str, dict[str, tuple[Shape, torch.dtype]]]
    log_entries: int = 0  # exact mode: the spec's cap on a rounding log's entries; 0: boundary mode, no log
    stride: int = 1  # steps of an interval: the length of each stats/ vector (the last interval's may be shorter)
    total_steps: int = 1

    def file_bytes(self, *sections: str) -> int:
        """The largest file honest tensors of ``sections`` (default: all, statistics included) can make,
        header included."""
        shapes = [entry for section in sections or SECTIONS for entry in self.sections[section].values()]
        if not sections:
            shapes += [((min(self.stride, self.total_steps),), torch.float32)] * len(STATISTICS)
        data = sum(math.prod(shape) * dtype.itemsize for shape, dtype in shapes)
        return 8 + data + len(shapes) * HEADER_BYTES_PER_TENSOR + METADATA_BYTES

    @property
    def max_bytes(self) -> int:
        """The largest file an honest E_k of this spec can be (its rounding log at the spec's cap included)."""
        # at worst every entry its own key: 5 + 1 + 1 int64 and a bit
        log = self.log_entries * 57 + len(LOG_TENSORS) * HEADER_BYTES_PER_TENSOR if self.log_entries else 0
        return self.file_bytes() + log

    def problem(self, evidence: Evidence, k: int) -> tuple[str, str] | None:
        """(cause, detail) of the first tensor of ``evidence`` (E_k) that is not where, or not what, it should be."""
        steps = min(self.stride, self.total_steps - k * self.stride)
        if not self.log_entries:  # boundary mode: no log
            if evidence.rounding:
                return "wrong_names", f"rounding: {sorted(evidence.rounding)} in a boundary-mode task's evidence"
        elif set(evidence.rounding) != set(LOG_TENSORS):
            return "wrong_names", f"rounding: {sorted(evidence.rounding)}, expected {list(LOG_TENSORS)}"
        else:
            try:
                decode_log(evidence.rounding, self.log_entries)
            except LogError as exc:
                return "bad_log", str(exc)
        for section in SECTIONS:
            wanted, given = self.sections[section], getattr(evidence, section)
            if set(wanted) != set(given):
                missing, extra = sorted(set(wanted) - set(given)), sorted(set(given) - set(wanted))
                return "wrong_names", f"{section}: missing {missing[:5]}, unexpected {extra[:5]}"
            for name, (shape, dtype) in wanted.items():
                tensor = given[name]
                if tuple(tensor.shape) != shape:
                    return "wrong_shape", f"{section}/{name}: {tuple(tensor.shape)}, expected {shape}"
                if tensor.dtype != dtype:
                    return "wrong_dtype", f"{section}/{name}: {tensor.dtype}, expected {dtype}"
        if set(evidence.stats) != set(STATISTICS):
            return "wrong_names", f"{STATS}: {sorted(evidence.stats)}, expected {list(STATISTICS)}"
        for name, tensor in evidence.stats.items():
            if tuple(tensor.shape) != (steps,) or tensor.dtype != torch.float32:
                given = f"{tensor.dtype} {tuple(tensor.shape)}"
                return "wrong_shape", f"{STATS}/{name}: {given}, expected torch.float32 ({steps},)"
        return None


def layout_of(spec: TaskSpec) -> EvidenceLayout:
    """The layout of the spec's evidence (cached: a node asks once per task, not once per interval)."""
    log_entries = spec.numerics.max_log_entries if spec.numerics is not None else 0
    return _layout(
        spec.workload.model_dump_json(), spec.optimizer.model_dump_json(), log_entries, spec.stride, spec.total_steps
    )


@functools.lru_cache(maxsize=32)
def _layout(workload_json: str, optimizer_json: str, log_entries: int, stride: int, total: int) -> EvidenceLayout:
    from ovig_node.protocol.spec import OptimizerSpec, WorkloadSpec

    workload_spec = WorkloadSpec.model_validate_json(workload_json)
    workload = get_workload(workload_spec.name)
    with torch.device("meta"):
        model = workload.build_model(workload_spec.config)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = build_optimizer(OptimizerSpec.model_validate_json(optimizer_json), model)
    for param in trainable:
        param.grad = torch.zeros_like(param)
    optimizer.step()  # the state exists from the first step on, and E_k follows at least one
    probe: dict[str, torch.Tensor] = {name: p for name, p in model.named_parameters() if p.requires_grad}
    model_state = model_tensors(model, trainable_only=True)
    tensors = {
        "model": model_state,
        "optim": optimizer_state(model, optimizer),
        "probe": probe,
        "init": model_tensors(model, trainable_only=False),
    }
    return EvidenceLayout(
        {section: {name: (tuple(t.shape), t.dtype) for name, t in items.items()} for section, items in tensors.items()},
        log_entries,
        stride,
        total,
    )


def non_finite(evidence: Evidence) -> str | None:
    """The first tensor holding a NaN or infinity, or None. An honest run carries none: a replay from
    such a start would carry it into every signal, which no bound admits."""
    for section in (*SECTIONS, STATS):
        for name, tensor in getattr(evidence, section).items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                return f"{section}/{name} holds NaN or infinity"
    return None
