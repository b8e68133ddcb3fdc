"""The owner takes the trained model home: `ovig owner fetch TASK --out DIR`.

The deliverable is E_{K-1}, the last interval's evidence: protocol 3 samples it in the last batch, so every task
that got that far opened it, proving its digest against the committed batch root (IntervalOpened). The owner's
node fetches the task's files (each checked against the chain: spec hash, dataset and checkpoint digests), then
E_{K-1} by the CID its opening manifest names, checked against the proven digest, rebuilds the model and writes
it in its tools' format (:mod:`ovig_node.training.export`), with ``provenance.json``: which task, chain,
contracts, roots and digests it came from, what was checked, and which watchers attested the task's intervals.
A task that did not finalize is refused unless asked for ``unverified``: nothing vouches for its work.
"""

from __future__ import annotations

import datetime
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovig_node.chain.contracts import TaskStatus
from ovig_node.errors import OvigError
from ovig_node.nodes.attesting import attestations
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.fetching import fetch_task
from ovig_node.nodes.judging import fetch_end_evidence, opened_interval
from ovig_node.training.export import Exported, export_model
from ovig_node.training.loop import evidence_path
from ovig_node.verify.layout import layout_of

FINALIZED_NOTE = "the task finalized: its sampled intervals' challenge windows closed with no fault found"


class DeliverableError(OvigError, ValueError):
    """The deliverable cannot be fetched (the task did not finalize, never opened it, its files are gone)."""


@dataclass(frozen=True)
class Delivered:
    exported: Exported
    provenance: dict[str, object]


def fetch_deliverable(ctx: NodeContext, task: int, out: Path, *, merge: bool, unverified: bool) -> Delivered:
    """Fetch, check and write task ``task``'s trained model into ``out`` (which must not hold files yet)."""
    t = ctx.protocol.task(task)
    status = TaskStatus(t.status)
    if status == TaskStatus.NONE:
        raise DeliverableError(f"there is no task {task}")
    if status != TaskStatus.FINALIZED and not unverified:
        raise DeliverableError(
            f"task {task} is {status.name.lower()}, not finalized: nothing vouches for its model "
            "(--unverified takes it anyway)"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DeliverableError(f"--out {out} is not an empty folder")
    ctx.scanner.poll()
    with tempfile.TemporaryDirectory(prefix=f"ovig-task-{task}-") as scratch:
        fetched = fetch_task(ctx, task, Path(scratch) / "files")
        spec = fetched.prepared.spec
        last = spec.layout.intervals - 1
        opened = opened_interval(ctx, task, last, spec.intervals_per_batch)
        if opened is None:
            raise DeliverableError(f"task {task}: its deliverable (interval {last}) was never opened")
        folder = Path(scratch) / "evidence"
        missing = fetch_end_evidence(ctx, opened, folder, max_bytes=layout_of(spec).max_bytes)
        if missing is not None:
            raise DeliverableError(f"task {task}: its deliverable E_{last}: {missing[1]} ({missing[0]})")
        # Staged beside --out, so the last step is one rename: a failure leaves nothing half-made in --out
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            last_file = evidence_path(folder, last)
            exported = export_model(fetched.prepared, last_file, opened.end_digest, staging, merge=merge)
            provenance = _provenance(ctx, t, task, status, opened.end_digest, opened.batch_root, last, exported.kind)
            (staging / "provenance.json").write_text(json.dumps(provenance, indent=1, sort_keys=True) + "\n")
            if out.exists():
                out.rmdir()  # empty, as checked
            staging.rename(out)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return Delivered(Exported(out, exported.kind, exported.loads_with.replace(str(staging), str(out))), provenance)


def _provenance(
    ctx: NodeContext, t: Any, task: int, status: TaskStatus, digest: str, root: bytes | None, last: int, kind: str
) -> dict[str, object]:
    [posted] = ctx.scanner.events("TaskPosted", task=task)
    attested = attestations(ctx, task)
    return {
        "task": task,
        "status": status.name.lower(),
        "chain_id": int(ctx.client.w3.eth.chain_id),
        "contracts": {"TrainingTasks": ctx.protocol.tasks.address, "AuditCommittee": ctx.protocol.committee.address},
        "owner": t.owner,
        "provider": t.provider,
        "spec": {"cid": str(posted.args["specCID"]), "hash": "0x" + bytes(t.terms.specHash).hex()},
        "deliverable": {"interval": last, "sha256": digest, "batch_root": "0x" + root.hex() if root else None},
        "written_as": kind,
        "checked": [
            "the spec hashes to the on-chain specHash; the dataset and initial checkpoint match the spec's sha256",
            f"E_{last}'s sha256 is the digest its opening proved against the committed batch root",
            FINALIZED_NOTE if status == TaskStatus.FINALIZED else "NOT VERIFIED: the task did not finalize",
        ],
        "attested_sound": {str(k): sorted(w for w, a in by.items() if a.sound) for k, by in sorted(attested.items())},
        "fetched_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
