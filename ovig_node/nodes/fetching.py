"""Fetch a posted task's files from IPFS and check them against the chain (protocol 2.1).

The spec comes by the CID the owner emitted in TaskPosted; its keccak256 must be the on-chain
specHash, and its N, s, m, sampleBps and init digest must equal the on-chain terms: a node refuses
a task whose spec and terms disagree. The dataset, initial checkpoint and boundary (none for an exact
task: bytes judge it) come by the spec's CIDs and must match its sha256 digests.

Everything in these files is the owner's to choose, so anything wrong with them (a spec that does not
parse, a file that does not match or is larger than the task can need, a boundary that is not JSON or
lacks a signal, kind or percentile, a model larger than a node replays) refuses the task: a typed
TaskRefused, never another exception. Our own IPFS node being down is not the owner's fault: that
raises IpfsUnavailable, and the caller tries again later.
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from eth_utils import keccak

from ovig_node.errors import OvigError
from ovig_node.files import write_atomic
from ovig_node.nodes.context import NodeContext
from ovig_node.protocol.errors import SpecError
from ovig_node.protocol.manifest import manifest_limit
from ovig_node.protocol.spec import ContentRef, NumericsSpec, TaskSpec, parse_spec
from ovig_node.storage.errors import ContentNotFound, IpfsError, IpfsUnavailable
from ovig_node.training.taskfiles import PreparedTask, TaskFileError, boundary_mismatch, open_task
from ovig_node.training.workloads import Dataset, get_workload
from ovig_node.verify.boundary import BoundaryError, BoundaryProfile, load_boundary
from ovig_node.verify.exact import MAX_LOG_ENTRIES, MIN_THRESHOLD
from ovig_node.verify.layout import EvidenceLayout, layout_of

_T = TypeVar("_T")
MAX_SPEC_BYTES = 1 << 20  # a spec is a few hundred bytes of JSON
MAX_BOUNDARY_BYTES = 1 << 20  # a boundary profile is a few kilobytes of JSON
MAX_DATASET_BYTES = 2 << 30  # the spec does not say how large its dataset is: a node-wide cap
MAX_EVIDENCE_BYTES = 4 << 30  # the largest E_k (model, optimizer state, probe) a node replays
# the largest batch manifest a node reads whole (protocol.manifest): at m = 256, about 12,000 steps an interval
MAX_BATCH_MANIFEST_BYTES = 64 << 20
# OS errors that are this machine's state (a full disk, too many open files), never the owner's files' fault
MACHINE_LIMITS = (errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE)


class TaskRefused(OvigError, ValueError):
    """The task's spec, files or terms are not what the chain says: no node works on it. Every cause is a
    deterministic check on the owner's files and the on-chain terms (the trainer runs the same ones before it
    accepts), so every honest node refuses the same tasks: a panelist's ballot is then faulty."""


class OwnerFileUnavailable(TaskRefused):
    """One of the owner's files (spec, dataset, initial checkpoint, boundary) was obtained but does not match
    its committed digest, or is larger than the task can need: a file matching it was not obtained, so a
    panelist's ballot is unavailable (protocol 4.2, v3), as for one not found at all."""


@dataclass(frozen=True)
class FetchedTask:
    task: int
    prepared: PreparedTask
    boundary: BoundaryProfile | None  # None: an exact task, judged by bytes
    terms: Any  # the on-chain TaskTerms


@dataclass(frozen=True)
class TaskSources:
    """Where a task's files come from, read from the chain and the event index (on the node's own thread: the
    index is not shared between threads); fetching them then needs IPFS alone."""

    task: int
    record: Any  # the on-chain task
    spec_cid: str


def task_sources(ctx: NodeContext, task: int) -> TaskSources:
    """The task's on-chain record and its spec's CID (TaskRefused if it was never posted)."""
    t = ctx.protocol.task(task)
    posted = ctx.scanner.events("TaskPosted", task=task)
    if not posted:
        ctx.scanner.poll()
        posted = ctx.scanner.events("TaskPosted", task=task)
    if not posted:
        raise TaskRefused(f"task {task}: no TaskPosted event found")
    return TaskSources(task, t, str(posted[0].args["specCID"]))


def fetch_task(ctx: NodeContext, task: int, folder: Path, sources: TaskSources | None = None) -> FetchedTask:
    """The task's spec, dataset, initial checkpoint and boundary in ``folder``, every digest checked.
    Raises TaskRefused for anything wrong with the owner's files, IpfsUnavailable (or ContentNotFound,
    which may pass) when they cannot be fetched now. Given its ``sources``, it touches IPFS alone (safe in a
    worker thread)."""
    sources = sources if sources is not None else task_sources(ctx, task)
    t = sources.record
    spec_path = folder / "spec.json"
    if not spec_path.is_file():
        spec_cid = sources.spec_cid
        raw = _owner_file(task, "spec", lambda: ctx.ipfs.cat_bytes(spec_cid, max_bytes=MAX_SPEC_BYTES))
        if keccak(raw) != bytes(t.terms.specHash):
            raise OwnerFileUnavailable(f"task {task}: the spec at {spec_cid} does not hash to specHash")
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(spec_path, raw)
    spec, spec_hash, layout = _read_spec(task, spec_path)
    _check_terms(task, spec, spec_hash, t.terms)
    files: list[tuple[str, ContentRef, int]] = [
        ("dataset.safetensors", spec.dataset, MAX_DATASET_BYTES),
        ("init.safetensors", spec.init, layout.file_bytes("init")),
    ]
    if not spec.exact:  # an exact task is judged by bytes: a boundary it names anyway is never used
        if spec.boundary is None:
            raise TaskRefused(f"task {task}: the spec names no boundary profile")
        files.append(("boundary.json", spec.boundary, MAX_BOUNDARY_BYTES))
    for name, ref, cap in files:
        if not (folder / name).is_file():
            fetch = functools.partial(ctx.ipfs.get_file, ref.cid, folder / name, sha256=ref.sha256, max_bytes=cap)
            _owner_file(task, name, fetch)
    try:
        prepared = open_task(spec_path)
        boundary = None
        if not spec.exact:
            data = (folder / "boundary.json").read_bytes()
            if (problem := boundary_mismatch(spec, data)) is not None:  # the check the owner ran before posting
                raise TaskRefused(f"task {task}: its boundary is {problem}")
            boundary = load_boundary(data)
    except (SpecError, TaskFileError, BoundaryError) as exc:
        raise TaskRefused(f"task {task}: {exc}") from None
    _check_dataset(task, prepared)
    if boundary is not None:
        check_declared_replay(task, int(t.terms.replaySeconds), boundary.replay_seconds_max)
    return FetchedTask(task, prepared, boundary, t.terms)


def _check_dataset(task: int, prepared: PreparedTask) -> None:
    """Refuse a task whose dataset its workload cannot train on. The file and the config are the owner's:
    whatever the check trips on (a safetensors header it cannot parse, a config value of the wrong type),
    the task is refused, never the node stopped."""
    try:
        get_workload(prepared.spec.workload.name).check_dataset(
            Dataset.load(prepared.dataset_path), prepared.spec.workload.config
        )
    except OvigError as exc:  # DatasetError, or an architecture no node builds
        raise TaskRefused(f"task {task}: its dataset: {exc}") from None
    except MemoryError:  # this machine's limit, not the owner's file: no refusal may depend on it
        raise
    except Exception as exc:  # hostile input: see the docstring
        _raise_if_out_of_memory(exc)
        raise TaskRefused(f"task {task}: its dataset cannot be read: {type(exc).__name__}: {exc}") from None


def _raise_if_out_of_memory(exc: Exception) -> None:
    """This machine's limits, never a refusal, which would make a small machine's ballot differ from a large
    one's: MemoryError for torch's out-of-memory errors (a RuntimeError, on the CPU too: a ninth review), a
    recursion too deep for this interpreter's stack and an allocation the kernel refused (ENOMEM: review 18);
    the error itself for a full disk or too many open files (the node's isolation retries those)."""
    text = str(exc)
    if isinstance(exc, RuntimeError) and ("out of memory" in text.lower() or "can't allocate memory" in text):
        raise MemoryError(text) from exc
    if isinstance(exc, RecursionError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM):
        raise MemoryError(f"{type(exc).__name__}: {text}") from exc
    if isinstance(exc, OSError) and exc.errno in MACHINE_LIMITS:
        raise exc


def check_declared_replay(task: int, declared: int, boundary_slowest: float) -> None:
    """Refuse a task whose owner declares replays faster than its own boundary measured (protocol 4.2):
    panelists would miss their reveals and an honest provider's disputes stall. The contract cannot check
    this (it knows no boundary), so a hostile owner's declaration reaches every node."""
    if declared < boundary_slowest:
        raise TaskRefused(
            f"task {task}: it declares replays of {declared}s, but its boundary's "
            f"slowest honest replay took {boundary_slowest:.1f}s"
        )


def _read_spec(task: int, spec_path: Path) -> tuple[TaskSpec, bytes, EvidenceLayout]:
    """The spec, its hash and the layout of its evidence; TaskRefused for one no node can replay."""
    try:
        spec, spec_hash = parse_spec(spec_path.read_bytes())
    except SpecError as exc:
        raise TaskRefused(f"task {task}: {exc}") from None
    try:
        # Builds the model on the meta device: a hostile config costs no memory here, only a refusal.
        layout = layout_of(spec)
    except MemoryError:  # this machine's limit, not the owner's spec: no refusal may depend on it
        raise
    except Exception as exc:  # whatever the workload's constructor raises on a config it cannot take
        _raise_if_out_of_memory(exc)
        raise TaskRefused(f"task {task}: the spec's workload cannot be built: {type(exc).__name__}: {exc}") from None
    if layout.max_bytes > MAX_EVIDENCE_BYTES:
        raise TaskRefused(
            f"task {task}: its evidence would be {layout.max_bytes} bytes, over this node's {MAX_EVIDENCE_BYTES}"
        )
    if layout.file_bytes("init") > MAX_EVIDENCE_BYTES:  # a frozen base is in no evidence, but every replay loads it
        raise TaskRefused(
            f"task {task}: its initial checkpoint would be {layout.file_bytes('init')} bytes, over "
            f"this node's {MAX_EVIDENCE_BYTES}"
        )
    if (manifest := manifest_limit(spec.layout, spec.intervals_per_batch)) > MAX_BATCH_MANIFEST_BYTES:
        raise TaskRefused(
            f"task {task}: its batch manifests could be {manifest} bytes, over this node's "
            f"{MAX_BATCH_MANIFEST_BYTES} (fewer intervals a batch, or a shorter stride)"
        )
    if spec.numerics is not None:
        _check_numerics(task, spec.numerics)
    return spec, spec_hash, layout


def _check_numerics(task: int, numerics: NumericsSpec) -> None:
    """Refuse exact numerics no calibration produces: a provider's log that could exhaust a verifier's
    memory, or a threshold or floor under which replays on other hardware are not reproduced (an honest
    provider would be slashed for the owner's choice)."""
    if numerics.max_log_entries > MAX_LOG_ENTRIES:
        raise TaskRefused(
            f"task {task}: its rounding log may hold {numerics.max_log_entries} entries an interval, "
            f"over this node's {MAX_LOG_ENTRIES}"
        )
    if numerics.gradient_floor is None:
        raise TaskRefused(f"task {task}: its exact numerics have no gradient floor (every calibrated spec has one)")
    if min(numerics.thresholds) < MIN_THRESHOLD:
        raise TaskRefused(
            f"task {task}: an exact threshold below {MIN_THRESHOLD:g} ulps, finer than the "
            "discrepancy between profiles can be measured"
        )


def _owner_file(task: int, name: str, fetch: Callable[[], _T]) -> _T:
    """Run ``fetch``; a file that does not match or is too large refuses the task (the owner chose it);
    an outage, or content not found yet, propagates for a later retry."""
    try:
        return fetch()
    except (IpfsUnavailable, ContentNotFound):
        raise
    except IpfsError as exc:
        raise OwnerFileUnavailable(f"task {task}: its {name}: {exc}") from None


def _check_terms(task: int, spec: Any, spec_hash: bytes, terms: Any) -> None:
    pairs = {
        "specHash": (spec_hash, bytes(terms.specHash)),
        "totalSteps": (spec.total_steps, terms.totalSteps),
        "stride": (spec.stride, terms.stride),
        "intervalsPerBatch": (spec.intervals_per_batch, terms.intervalsPerBatch),
        "sampleBps": (spec.sample_bps, terms.sampleBps),
        "initDigest": (bytes.fromhex(spec.init.sha256), bytes(terms.initDigest)),
    }
    for name, (in_spec, on_chain) in pairs.items():
        if in_spec != on_chain:
            raise TaskRefused(f"task {task}: {name} is {on_chain!r} on-chain but {in_spec!r} in the spec")
