"""A task's files: the spec, the materialised dataset and the initial checkpoint.

:func:`prepare_task` (the owner, before posting) writes them: the dataset file and the initial
checkpoint are deterministic (packaged data, seeded initialisation), their sha256 and CID (computed
locally with Kubo's rules) go into the spec, and the spec's hash is what the contract will hold.
:func:`open_task` (a trainer or a replayer) reads them back and checks every digest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ovig_node.errors import OvigError
from ovig_node.files import file_sha256, write_atomic
from ovig_node.protocol.errors import SpecError
from ovig_node.protocol.spec import TaskSpec, canonical_bytes, parse_spec
from ovig_node.storage.unixfs import cid_of_bytes
from ovig_node.training.evidence import model_tensors, safetensors_bytes, sha256_hex
from ovig_node.training.workloads import get_workload


class TaskFileError(OvigError, FileNotFoundError):
    """A dataset or checkpoint that is missing or does not match the spec's digest."""


@dataclass(frozen=True)
class PreparedTask:
    spec: TaskSpec
    spec_hash: bytes
    spec_path: Path
    dataset_path: Path
    init_path: Path


def prepare_task(
    workload_name: str,
    out_dir: Path,
    *,
    tiny: bool = False,
    seed: int = 1,
    total_steps: int = 200,
    stride: int = 10,
    intervals_per_batch: int = 8,
    sample_bps: int = 2500,
    batch_size: int | None = None,
    optimizer: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    warmup_steps: int | None = None,
) -> PreparedTask:
    """Write ``dataset.safetensors``, ``init.safetensors`` and ``spec.json`` into ``out_dir``. ``config``
    changes keys of the workload's (tiny or full) config; ``optimizer`` replaces the workload's recipe,
    and ``warmup_steps`` its learning-rate warm-up; ``batch_size`` defaults to the workload's."""
    workload = get_workload(workload_name)
    defaults = workload.config(tiny=tiny)
    if unknown := set(config or {}) - set(defaults):
        known = ", ".join(sorted(defaults))
        raise SpecError(f"{workload_name} config has no {', '.join(sorted(unknown))}; it has {known}")
    config = {**defaults, **(config or {})}
    dataset = workload.build_dataset(config)
    dataset_bytes = dataset.to_bytes()
    torch.manual_seed(seed % 2**63)
    try:
        model = workload.initial_model(config)
    except (ValueError, TypeError) as exc:
        raise SpecError(str(exc)) from None
    weights = model_tensors(model, trainable_only=False)
    init_bytes = safetensors_bytes({f"model/{name}": t.contiguous() for name, t in weights.items()})
    document = {
        "version": 1,
        "workload": {"name": workload_name, "config": workload.published_config(config)},
        "init": {"cid": str(cid_of_bytes(init_bytes)), "sha256": sha256_hex(init_bytes)},
        "dataset": {
            "cid": str(cid_of_bytes(dataset_bytes)),
            "sha256": sha256_hex(dataset_bytes),
            "examples": dataset.examples,
        },
        "optimizer": _with_warmup(optimizer or workload.optimizer(tiny=tiny), warmup_steps),
        "batch_size": batch_size or workload.batch_size(tiny=tiny),
        "total_steps": total_steps,
        "seed": seed,
        "stride": stride,
        "intervals_per_batch": intervals_per_batch,
        "sample_bps": sample_bps,
    }
    spec, spec_hash = parse_spec(canonical_bytes(document))  # validates exactly what is written
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: out_dir / name for name in ("dataset.safetensors", "init.safetensors", "spec.json")}
    write_atomic(paths["dataset.safetensors"], dataset_bytes)
    write_atomic(paths["init.safetensors"], init_bytes)
    write_atomic(paths["spec.json"], canonical_bytes(document))
    return PreparedTask(spec, spec_hash, paths["spec.json"], paths["dataset.safetensors"], paths["init.safetensors"])


def _with_warmup(optimizer: dict[str, Any], warmup_steps: int | None) -> dict[str, Any]:
    if warmup_steps is None:
        return optimizer
    schedule = {"name": "constant", **optimizer.get("schedule", {}), "warmup_steps": warmup_steps}
    return {**optimizer, "schedule": schedule}


def open_task(spec_path: Path, *, data_dir: Path | None = None) -> PreparedTask:
    """Read a spec and find its dataset and initial checkpoint (``data_dir``, default: beside the spec).

    Raises SpecError for a bad spec, and OvigError subclasses naming the file for a missing or
    altered dataset or checkpoint.
    """
    try:
        raw = spec_path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read spec {spec_path}: {exc.strerror}") from None
    spec, spec_hash = parse_spec(raw)
    folder = data_dir or spec_path.parent
    files = {}
    for name, ref in (("dataset.safetensors", spec.dataset), ("init.safetensors", spec.init)):
        path = folder / name
        if not path.is_file():
            raise TaskFileError(f"{path} is missing (the spec's {name.split('.')[0]}, CID {ref.cid})")
        if (got := file_sha256(path)) != ref.sha256:
            raise TaskFileError(f"{path} has sha256 {got}, but the spec says {ref.sha256}")
        files[name] = path
    return PreparedTask(spec, spec_hash, spec_path, files["dataset.safetensors"], files["init.safetensors"])


def attach_numerics(spec_path: Path, numerics: dict[str, Any]) -> PreparedTask:
    """Put exact mode's ``numerics`` section in the spec at ``spec_path`` and rewrite it (its hash changes)."""
    return _with_section(spec_path, "numerics", numerics)


def _with_section(spec_path: Path, key: str, value: dict[str, Any]) -> PreparedTask:
    """Rewrite the spec at ``spec_path`` with section ``key`` set to ``value``, validated as written."""
    spec, _ = parse_spec(spec_path.read_bytes())
    document = {**spec.document(), key: value}
    parse_spec(canonical_bytes(document))
    write_atomic(spec_path, canonical_bytes(document))
    return open_task(spec_path)


def attach_boundary(spec_path: Path, boundary_path: Path) -> PreparedTask:
    """Name ``boundary_path`` (CID and sha256) in the spec at ``spec_path`` and rewrite it; the spec's
    hash changes, which is why a boundary is attached before the task is posted."""
    data = boundary_path.read_bytes()
    spec, _ = parse_spec(spec_path.read_bytes())
    if (problem := boundary_mismatch(spec, data)) is not None:
        raise SpecError(f"{boundary_path}: {problem}")
    return _with_section(spec_path, "boundary", {"cid": str(cid_of_bytes(data)), "sha256": sha256_hex(data)})


def boundary_mismatch(spec: TaskSpec, boundary: bytes) -> str | None:
    """Why a boundary profile cannot judge ``spec`` (calibrated for another workload or stride, or not a
    profile at all), or None: every node refuses such a task, so the owner hears it before posting."""
    try:
        document = json.loads(boundary)
        calibrated = (document["workload"], document["stride"])
    except (ValueError, TypeError, KeyError):
        return "not a boundary profile (JSON with its workload and stride)"
    if calibrated != (spec.workload.name, spec.stride):
        return (
            f"calibrated for {calibrated[0]} at stride {calibrated[1]}, not for this spec's {spec.workload.name} "
            f"at stride {spec.stride}"
        )
    return None
