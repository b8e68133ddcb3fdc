"""Judge one interval from evidence files and produce the JSON report (protocol section 5, step 4).

Missing or unreadable evidence is a verdict too (faulty: ``missing`` or ``corrupt``), never a crash: a
watcher must be able to say why an interval failed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import torch

from ovig_node.training.evidence import Evidence, EvidenceError, evidence_metadata, read_evidence
from ovig_node.training.execution import ExecutionProfile
from ovig_node.training.loop import evidence_path
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.verify.boundary import BoundaryProfile
from ovig_node.verify.check import FAULTY, Verdict, judge
from ovig_node.verify.replay import replay_interval


def verify_interval(
    prepared: PreparedTask,
    evidence_dir: Path,
    k: int,
    boundary: BoundaryProfile,
    *,
    profile: ExecutionProfile,
    task: int = 0,
    end_sha256: str | None = None,
) -> dict[str, Any]:
    """Replay interval ``k`` from the files in ``evidence_dir`` and return the report."""
    layout = prepared.spec.layout
    base: dict[str, Any] = {"interval": k, "end_step": layout.end_step(k), "task": task,
                            "spec": "0x" + prepared.spec_hash.hex(), "profile": profile.describe(),
                            "torch": torch.__version__}  # fmt: skip
    loaded = _load(evidence_dir, k, end_sha256)
    if isinstance(loaded, Verdict):
        return {**base, **loaded.to_json(), "seconds": {"replay": 0.0, "compare": 0.0}}
    start, end = loaded
    verdict, timings = replay_and_judge(prepared, k, start, end, boundary, profile=profile, task=task)
    return {**base, **verdict.to_json(), "seconds": timings}


def replay_and_judge(
    prepared: PreparedTask,
    k: int,
    start: Evidence | None,
    end: Evidence,
    boundary: BoundaryProfile,
    *,
    profile: ExecutionProfile,
    task: int = 0,
) -> tuple[Verdict, dict[str, float]]:
    """Replay interval ``k`` from the claimed ``start`` and judge the claimed ``end``; with timings."""
    layout = prepared.spec.layout
    started = time.monotonic()
    replayed = replay_interval(prepared, k, start, profile=profile, task=task)
    replay_done = time.monotonic()
    expected = evidence_metadata(task, prepared.spec_hash, k, layout.end_step(k))
    start_step = layout.end_step(k - 1) if k > 0 else 0
    verdict = judge(end, replayed, boundary, expected_metadata=expected, claimed_start=start, start_step=start_step)
    return verdict, {"replay": replay_done - started, "compare": time.monotonic() - replay_done}


def _load(evidence_dir: Path, k: int, end_sha256: str | None) -> tuple[Evidence | None, Evidence] | Verdict:
    paths = [evidence_path(evidence_dir, j) for j in (k - 1, k) if j >= 0]
    for path in paths:
        if not path.is_file():
            return Verdict(FAULTY, "missing", f"{path} does not exist")
    try:
        start = read_evidence(paths[0]) if k > 0 else None
        end = read_evidence(paths[-1], expected_sha256=end_sha256)
    except EvidenceError as exc:
        return Verdict(FAULTY, "corrupt", str(exc))
    return start, end


def write_report(report: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(report, indent=2, default=float) + "\n")
