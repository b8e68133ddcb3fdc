"""Fetch a posted task's files from IPFS and check them against the chain (protocol 2.1).

The spec comes by the CID the owner emitted in TaskPosted; its keccak256 must be the on-chain
specHash, and its N, s, m, sampleBps and init digest must equal the on-chain terms: a node refuses
a task whose spec and terms disagree. The dataset, initial checkpoint and boundary come by the
spec's CIDs and must match its sha256 digests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_utils import keccak

from ovig_node.errors import OvigError
from ovig_node.files import write_atomic
from ovig_node.nodes.context import NodeContext
from ovig_node.protocol.spec import parse_spec
from ovig_node.training.taskfiles import PreparedTask, open_task
from ovig_node.verify.boundary import BoundaryProfile


class TaskRefused(OvigError, ValueError):
    """The task's spec, files or terms are not what the chain says: no node works on it."""


@dataclass(frozen=True)
class FetchedTask:
    task: int
    prepared: PreparedTask
    boundary: BoundaryProfile
    terms: Any  # the on-chain TaskTerms


def fetch_task(ctx: NodeContext, task: int, folder: Path) -> FetchedTask:
    """The task's spec, dataset, initial checkpoint and boundary in ``folder``, every digest checked."""
    t = ctx.protocol.task(task)
    posted = ctx.scanner.events("TaskPosted", task=task)
    if not posted:
        ctx.scanner.poll()
        posted = ctx.scanner.events("TaskPosted", task=task)
    if not posted:
        raise TaskRefused(f"task {task}: no TaskPosted event found")
    spec_path = folder / "spec.json"
    if not spec_path.is_file():
        raw = ctx.ipfs.cat_bytes(posted[0].args["specCID"])
        if keccak(raw) != bytes(t.terms.specHash):
            raise TaskRefused(f"task {task}: the spec at {posted[0].args['specCID']} does not hash to specHash")
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(spec_path, raw)
    spec, spec_hash = parse_spec(spec_path.read_bytes())
    _check_terms(task, spec, spec_hash, t.terms)
    if spec.boundary is None:
        raise TaskRefused(f"task {task}: the spec names no boundary profile")
    for name, ref in (
        ("dataset.safetensors", spec.dataset),
        ("init.safetensors", spec.init),
        ("boundary.json", spec.boundary),
    ):
        if not (folder / name).is_file():
            ctx.ipfs.get_file(ref.cid, folder / name, sha256=ref.sha256)
    prepared = open_task(spec_path)
    boundary = BoundaryProfile.model_validate_json((folder / "boundary.json").read_text())
    return FetchedTask(task, prepared, boundary, t.terms)


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
