"""Judge an opened interval as a watcher or auditor does (protocol section 5).

1. Fetch the opening manifest of the interval's batch, and the start and end evidence by the CIDs it
   lists, each checked against the digest proven on-chain. Content that cannot be found or does not
   match is the provider's failure: the interval is **unavailable**. Our own IPFS node being down is
   not: that raises IpfsUnavailable and the caller tries again later.
2. Replay and judge against the task's boundary; the report (verdict, reason, every percentile
   against its bound, profile, timings) is pinned, and its CID goes with a challenge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.fetching import FetchedTask
from ovig_node.storage.errors import IpfsError, IpfsUnavailable
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import evidence_path
from ovig_node.verify.report import verify_interval

VALID, FAULTY = "valid", "faulty"


@dataclass(frozen=True)
class Judgement:
    report: dict[str, Any]
    report_cid: str
    available: bool  # both files fetched and matched their on-chain digests

    @property
    def faulty(self) -> bool:
        return self.report["verdict"] == FAULTY


def opening_cid(ctx: NodeContext, task: int, k: int, per_batch: int) -> str | None:
    """The opening manifest CID of interval k's batch (None until the batch is opened)."""
    ctx.scanner.poll()
    events = ctx.scanner.events("BatchOpened", task=task, j=k // per_batch)
    return str(events[-1].args["openingCID"]) if events else None


def judge_interval(
    ctx: NodeContext, fetched: FetchedTask, k: int, opening: str | None, *, profile: str, who: str
) -> Judgement:
    """Fetch (by the opening manifest ``opening``), replay and judge interval k of ``fetched``; pin the
    report. Safe in a worker thread: it touches the chain and IPFS, never the event index."""
    task = fetched.task
    iv = ctx.protocol.view(ctx.protocol.tasks, "getOpenedInterval", task, k)
    folder = ctx.home / f"task-{task}" / f"{who}-{k}"
    missing = _fetch_evidence(ctx, k, opening, iv, folder)
    if missing is not None:
        report = {"task": task, "interval": k, "verdict": FAULTY, "reason": "unavailable", "detail": missing}
        available = False
    else:
        # "a,b": replay under a; a rejection stands only if b's replay rejects too (a branch flip is not fraud).
        profiles = [get_profile(name) for name in profile.split(",")]
        report = verify_interval(fetched.prepared, folder, k, fetched.boundary, profiles=profiles, task=task,
                                 end_sha256=bytes(iv.endDigest).hex())  # fmt: skip
        available = True
    cid = ctx.ipfs.add_bytes(json.dumps(report, indent=1, default=float).encode(), name="report.json").cid
    return Judgement(report, cid, available)


def _fetch_evidence(ctx: NodeContext, k: int, cid: str | None, iv: Any, folder: Any) -> str | None:
    """Download E_{k-1} (k > 0) and E_k into ``folder``; the reason they are unavailable, or None."""
    if cid is None:
        return f"batch of interval {k} has no opening manifest"
    try:
        manifest = json.loads(ctx.ipfs.cat_bytes(cid))
        files: dict[str, str] = manifest["files"]
    except IpfsUnavailable:
        raise
    except (IpfsError, ValueError, KeyError, TypeError) as exc:
        return f"opening manifest {cid} unreadable: {exc}"
    wanted = [(k, bytes(iv.endDigest).hex())]
    if k > 0:
        wanted.append((k - 1, bytes(iv.startDigest).hex()))
    for index, digest in wanted:
        path = evidence_path(folder, index)
        if path.is_file():
            continue
        if digest not in files:
            return f"the opening manifest lists no file for digest {digest} (E_{index})"
        try:
            ctx.ipfs.get_file(files[digest], path, sha256=digest)
        except IpfsUnavailable:
            raise
        except IpfsError as exc:
            return f"E_{index} ({files[digest]}): {exc}"
    return None
