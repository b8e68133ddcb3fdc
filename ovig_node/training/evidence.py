"""Endpoint evidence files (protocol section 2.3): one safetensors file per interval.

``E_k`` holds ``model/<name>`` (every trainable parameter and every buffer, :func:`model_tensors`: frozen
parameters, such as the base under a LoRA adapter, are the initial checkpoint's and never copied),
``optim/<name>/<state>`` (every optimizer state tensor; scalars as 0-d tensors), ``probe/<name>`` (the
gradient at the endpoint weights on the batch of step ``b_k``), ``stats/<name>`` (the statistics of every
step of the interval, :mod:`ovig_node.training.statistics`) and, in exact mode only, ``rounding/<name>`` (the
interval's rounding log, :func:`ovig_node.training.exact.encode_log`), with metadata ``task``, ``spec``,
``interval``, ``step``. Its digest is the sha256 of the file's bytes. Files are written atomically
(temporary file, fsync, rename), so a file that
exists is complete.

Errors say which verdict reason they are (protocol section 5):

    EvidenceError (ValueError)          reason "corrupt": unreadable (I/O), wrong digest
    ├── EvidenceMissing                 reason "missing": no such file
    ├── EvidenceOversized               reason "oversized": larger than the spec's evidence can be
    ├── EvidenceMisnamed                reason "wrong_structure": a tensor outside model/ optim/ probe/ stats/ rounding/
    └── EvidenceUnreadable              reason "wrong_structure": bytes that are not a safetensors file

A file whose bytes are the committed ones but are no safetensors file is the provider's fault, judged like any
other structural fault (faulty), never "corrupt" (not obtained): a provider that committed the digest of garbage
and served it would otherwise have honest panels answer `unavailable` (review 12 of v3). Running out of memory
while loading one is the judge's own problem: MemoryError, never a verdict.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from torch import nn

from ovig_node.errors import OvigError
from ovig_node.files import write_atomic

SECTIONS = ("model", "optim", "probe")  # the training state every mode has, rounded alike in exact mode
STATS = "stats"  # the interval's statistics of every step
ROUNDING = "rounding"  # exact mode's log
ALL_SECTIONS = (*SECTIONS, STATS, ROUNDING)


class EvidenceError(OvigError, ValueError):
    """An evidence file that is missing, corrupt or not what it claims to be."""

    reason = "corrupt"  # the verdict reason a provider's file failing this way gets


class EvidenceMissing(EvidenceError):
    reason = "missing"


class EvidenceOversized(EvidenceError):
    reason = "oversized"

    def __init__(self, label: str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"{label} has {size} bytes, more than the {limit} the spec's evidence can have")


class EvidenceMisnamed(EvidenceError):
    reason = "wrong_structure"


class EvidenceUnreadable(EvidenceError):
    reason = "wrong_structure"


@dataclass(frozen=True)
class Evidence:
    model: dict[str, torch.Tensor]  # parameter or buffer name -> tensor
    optim: dict[str, torch.Tensor]  # "<param name>/<state name>" -> tensor
    probe: dict[str, torch.Tensor]  # parameter name -> gradient
    metadata: dict[str, str]  # task, spec (specHash hex), interval, step
    stats: dict[str, torch.Tensor] = field(default_factory=dict)  # statistic -> one value per step of the interval
    rounding: dict[str, torch.Tensor] = field(default_factory=dict)  # exact mode: the encoded rounding log

    def to_bytes(self) -> bytes:
        tensors = {
            f"{section}/{name}": tensor.detach().cpu().contiguous().clone()
            for section in ALL_SECTIONS
            for name, tensor in getattr(self, section).items()
        }
        return safetensors_bytes(tensors, metadata=self.metadata)

    @classmethod
    def from_bytes(cls, data: bytes, *, label: str = "evidence") -> Evidence:
        try:
            tensors = load_safetensors(data)
            metadata = _metadata(data)
        except MemoryError:
            raise
        except Exception as exc:  # safetensors raises its own error types for any malformed header
            raise EvidenceUnreadable(f"{label} is not a readable safetensors file: {exc}") from None
        except BaseException as exc:
            # safetensors' Rust side panics (pyo3's PanicException, a BaseException) when an allocation fails:
            # this machine's memory, not the file's fault, and it must not take the node down
            if type(exc).__name__ == "PanicException":
                raise MemoryError(f"{label}: loading it failed in safetensors: {exc}") from None
            raise
        sections: dict[str, dict[str, torch.Tensor]] = {s: {} for s in ALL_SECTIONS}
        for key, tensor in tensors.items():
            section, _, name = key.partition("/")
            if section not in sections or not name:
                raise EvidenceMisnamed(f"{label} has a tensor outside {', '.join(ALL_SECTIONS)}: {key!r}")
            sections[section][name] = tensor
        return cls(
            model=sections["model"],
            optim=sections["optim"],
            probe=sections["probe"],
            metadata=metadata,
            stats=sections[STATS],
            rounding=sections[ROUNDING],
        )


def model_tensors(model: nn.Module, *, trainable_only: bool) -> dict[str, torch.Tensor]:
    """The model's state as evidence or checkpoint tensors: every state-dict entry once (a tied weight,
    such as an output layer sharing the embedding, under its first name only), and with
    ``trainable_only`` no frozen parameter (evidence: the initial checkpoint holds those)."""
    frozen = {id(p) for p in model.parameters() if not p.requires_grad}
    seen: set[int] = set()
    tensors = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) in seen or (trainable_only and id(tensor) in frozen):
            continue
        seen.add(id(tensor))
        tensors[name] = tensor.detach()
    return tensors


def load_model_tensors(model: nn.Module, tensors: dict[str, torch.Tensor], *, trainable_only: bool) -> None:
    """Load what :func:`model_tensors` gave (into a model that holds the initial checkpoint, for
    ``trainable_only``); any other set of names is an error, never a partial load."""
    expected = set(model_tensors(model, trainable_only=trainable_only))
    if set(tensors) != expected:
        missing, extra = sorted(expected - set(tensors)), sorted(set(tensors) - expected)
        raise EvidenceMisnamed(f"model tensors: missing {missing[:5]}, unexpected {extra[:5]}")
    model.load_state_dict(tensors, strict=False)


def evidence_metadata(task: int, spec_hash: bytes, k: int, end_step: int) -> dict[str, str]:
    """The metadata E_k carries (protocol section 2.3): on-chain task, specHash hex, interval, step b_k."""
    return {"task": str(task), "spec": "0x" + spec_hash.hex(), "interval": str(k), "step": str(end_step)}


def safetensors_bytes(tensors: dict[str, torch.Tensor], *, metadata: dict[str, str] | None = None) -> bytes:
    """safetensors bytes that depend only on the tensors and metadata.

    The library writes its JSON header from hash maps, whose order can change from one call to the
    next; a digest over such bytes would differ for identical evidence. So the header is rewritten
    with sorted keys (and padded to 8 bytes, as the format wants); the data section is unchanged.
    """
    data = save_safetensors(tensors, metadata=metadata)
    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + header_len])
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + header_len :]


def _metadata(data: bytes) -> dict[str, str]:
    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + header_len])
    return dict(header.get("__metadata__", {}))


def read_metadata(path: Path) -> dict[str, str]:
    """The metadata of an evidence file, reading only its header."""
    try:
        with path.open("rb") as stream:
            header_len = int.from_bytes(stream.read(8), "little")
            return _metadata(header_len.to_bytes(8, "little") + stream.read(header_len))
    except (OSError, ValueError) as exc:
        raise EvidenceError(f"cannot read the header of {path}: {exc}") from None


def read_statistics(path: Path, steps: int) -> dict[str, list[float]]:
    """The statistics of every step E_k at ``path`` holds (``stats/``: float32 vectors of ``steps`` values),
    read without loading the rest; EvidenceError if the file cannot be opened or a statistic is not such a
    vector (checked in the header, before any value is read: a provider's file could hold a huge one)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as stream:
            keys = [key for key in stream.keys() if key.startswith(f"{STATS}/")]  # noqa: SIM118 (no __iter__)
            for key in keys:
                piece = stream.get_slice(key)
                if piece.get_dtype() != "F32" or list(piece.get_shape()) != [steps]:
                    raise EvidenceMisnamed(f"{path}: {key} is not {steps} float32 values")
            return {key.removeprefix(f"{STATS}/"): stream.get_tensor(key).tolist() for key in keys}
    except EvidenceError:
        raise
    except Exception as exc:  # safetensors raises its own error types for any malformed header
        raise EvidenceError(f"{path} is not a readable safetensors file: {exc}") from None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_evidence(path: Path, evidence: Evidence) -> str:
    """Write ``evidence`` atomically; return its digest (sha256 hex of the bytes written)."""
    data = evidence.to_bytes()
    write_atomic(path, data)
    return sha256_hex(data)


def read_evidence(path: Path, *, expected_sha256: str | None = None, max_bytes: int | None = None) -> Evidence:
    """Read an evidence file, checking its digest when one is expected; a file over ``max_bytes`` is
    refused before it is read (a provider's file could be any size)."""
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise EvidenceOversized(str(path), size, max_bytes)
        data = path.read_bytes()
    except FileNotFoundError:
        raise EvidenceMissing(f"evidence {path} does not exist") from None
    except OSError as exc:
        raise EvidenceError(f"cannot read evidence {path}: {exc.strerror}") from None
    if expected_sha256 is not None and sha256_hex(data) != expected_sha256:
        raise EvidenceError(f"evidence {path} has digest {sha256_hex(data)}, expected {expected_sha256}")
    return Evidence.from_bytes(data, label=str(path))
