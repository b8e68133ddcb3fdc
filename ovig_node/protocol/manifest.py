"""The batch manifest (protocol section 2.4): the JSON document whose CID ``commitBatch`` puts on-chain.

    {"version": 2, "task": t, "batch": j,
     "intervals": [{"k": k, "end_step": b_k, "digest": "<sha256 hex of E_k>",
                    "stats": {"loss": "<base64>", "grad_norm": ..., "update_norm": ..., "grad_cosine": ...}}, ...]}

one row per interval of the batch, in order; each statistic is the base64 of E_k's ``stats/<name>`` as
little-endian float32 bytes (exact, and about five bytes a step). Watchers read every row: the statistics
of the intervals nobody replays are what they judge those by. So a reader checks the whole document against
the chain, not only the row it opened: every row's leaf, in the ordered tree, must give the batch's on-chain
root, which binds each row's digest; a row's statistics are bound by E_k's digest, seen only where E_k is
opened (a watcher that opens k checks that its row is E_k's). Its size is known from the spec
(:func:`manifest_limit`): a larger document is refused before it is parsed.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ovig_node.errors import OvigError
from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.merkle import MerkleTree, leaf_hash

MANIFEST_VERSION = 2
# The statistics of every step an evidence file holds (protocol 2.3; training.statistics computes them)
STATISTICS = ("loss", "grad_norm", "update_norm", "grad_cosine")
ROW_BYTES = 256  # a row's keys, k, end step and digest, generously
DOCUMENT_BYTES = 4096


class ManifestError(OvigError, ValueError):
    """A batch manifest that is not the one its batch's root and layout allow."""


@dataclass(frozen=True)
class ManifestRow:
    k: int
    end_step: int
    digest: bytes
    stats: dict[str, str]  # name -> base64 of little-endian float32 values, one per step of the interval


def encode_stats(stats: dict[str, list[float]]) -> dict[str, str]:
    """E_k's statistics (name -> values) as a manifest row holds them."""
    return {name: base64.b64encode(np.asarray(stats[name], dtype="<f4").tobytes()).decode() for name in STATISTICS}


def decode_stats(stats: dict[str, str]) -> dict[str, list[float]]:
    """A checked row's statistics (name -> base64) as values."""
    return {name: np.frombuffer(base64.b64decode(stats[name]), dtype="<f4").tolist() for name in STATISTICS}


def manifest_limit(layout: Layout, intervals_per_batch: int) -> int:
    """The most bytes an honest batch manifest of ``layout`` can have (base64 of a stride of float32 values
    per statistic, per row)."""
    steps = min(layout.stride, layout.total_steps)
    stats = len(STATISTICS) * (4 * ((4 * steps + 2) // 3) + 32)
    return DOCUMENT_BYTES + intervals_per_batch * (ROW_BYTES + stats)


def batch_manifest(task: int, j: int, layout: Layout, rows: list[ManifestRow]) -> bytes:
    """The manifest of batch ``j``: its rows, one per interval in order."""
    document = {
        "version": MANIFEST_VERSION,
        "task": task,
        "batch": j,
        "intervals": [{"k": r.k, "end_step": r.end_step, "digest": r.digest.hex(), "stats": r.stats} for r in rows],
    }
    return json.dumps(document, sort_keys=True).encode()


def parse_batch_manifest(raw: bytes, *, task: int, j: int, layout: Layout, root: bytes) -> dict[int, ManifestRow]:
    """The rows of batch ``j``'s manifest, by interval; ManifestError unless it has exactly one row per interval
    of the batch, in order, each with its end step, a digest and every statistic of the interval's length,
    and its rows' leaves give ``root`` (the batch's on-chain root)."""
    if len(raw) > manifest_limit(layout, layout.intervals_per_batch):
        raise ManifestError(f"{len(raw)} bytes, more than a manifest of this task can have")
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ManifestError(f"not JSON: {type(exc).__name__}") from None
    if not isinstance(document, dict) or (document.get("version"), document.get("task"), document.get("batch")) != (
        MANIFEST_VERSION,
        task,
        j,
    ):
        raise ManifestError(f"not version {MANIFEST_VERSION} of task {task}'s batch {j}")
    wanted = layout.batch_intervals(j)
    listed = document.get("intervals")
    if not isinstance(listed, list) or len(listed) != len(wanted):
        raise ManifestError(f"it must list the batch's {len(wanted)} intervals")
    rows = {k: _row(entry, k, layout) for k, entry in zip(wanted, listed, strict=True)}
    leaves = [leaf_hash(task, k, row.end_step, row.digest) for k, row in rows.items()]
    if MerkleTree.build(leaves).root != root:
        raise ManifestError("its digests do not give the batch's on-chain root")
    return rows


def _row(entry: Any, k: int, layout: Layout) -> ManifestRow:
    if not isinstance(entry, dict) or type(entry.get("k")) is not int or entry["k"] != k:
        raise ManifestError(f"row for interval {k} missing or out of order")
    if entry.get("end_step") != layout.end_step(k) or type(entry.get("end_step")) is not int:
        raise ManifestError(f"interval {k}: end_step is not {layout.end_step(k)}")
    try:
        digest = bytes.fromhex(entry.get("digest", ""))
    except (TypeError, ValueError):
        digest = b""
    if len(digest) != 32:
        raise ManifestError(f"interval {k}: digest is not 32 bytes of hex")
    stats = entry.get("stats")
    steps = layout.steps(k)
    if (
        not isinstance(stats, dict)
        or set(stats) != set(STATISTICS)
        or not all(isinstance(v, str) for v in stats.values())
    ):
        raise ManifestError(f"interval {k}: stats must name {', '.join(STATISTICS)}")
    try:
        lengths = {len(base64.b64decode(value, validate=True)) for value in stats.values()}
    except (binascii.Error, ValueError):
        raise ManifestError(f"interval {k}: stats are not base64") from None
    if lengths != {4 * steps}:
        raise ManifestError(f"interval {k}: stats must hold {steps} float32 values each")
    return ManifestRow(k, layout.end_step(k), digest, dict(stats))
