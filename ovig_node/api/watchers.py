"""Verdicts and layer-one scores of the owner's own watcher nodes, read from their state files.

A watcher judges every opened interval but publishes a report on-chain only when it challenges, so a
*valid* verdict exists only in the watcher's ``watcher.json`` (``judged``: ``"task:k"`` -> verdict,
reason and report CID). A watcher holding the owner's reference run also scores every committed
interval's statistics (``screened``: ``"task:j"`` -> ``scores``: k -> score; docs/layer-one.md), opened
or not. The owner runs (or pays) that watcher, so the API may read its folder; the file is re-read only
when it changes.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

STATE_FILE = "watcher.json"


@dataclass(frozen=True)
class WatcherVerdict:
    verdict: str  # "valid" or "faulty"
    reason: str | None
    report_cid: str | None


@dataclass(frozen=True)
class _State:
    verdicts: dict[tuple[int, int], WatcherVerdict]
    scores: dict[tuple[int, int], float]


class WatcherVerdicts:
    """(task, k) -> the latest verdict any of the watcher folders recorded, and the largest layer-one score."""

    def __init__(self, homes: tuple[Path, ...]) -> None:
        self.homes = homes
        self._lock = threading.Lock()
        self._seen: dict[Path, tuple[float, _State]] = {}

    def for_task(self, task: int) -> dict[int, WatcherVerdict]:
        found: dict[int, WatcherVerdict] = {}
        for home in self.homes:
            for (t, k), verdict in self._read(home / STATE_FILE).verdicts.items():
                if t == task:
                    found[k] = verdict
        return found

    def scores_for_task(self, task: int) -> dict[int, float]:
        """Each interval's layer-one score (the largest any watcher gave it)."""
        found: dict[int, float] = {}
        for home in self.homes:
            for (t, k), score in self._read(home / STATE_FILE).scores.items():
                if t == task:
                    found[k] = max(score, found.get(k, score))
        return found

    def _read(self, path: Path) -> _State:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return _State({}, {})
        with self._lock:
            cached = self._seen.get(path)
            if cached is not None and cached[0] == mtime:
                return cached[1]
        try:
            doc = json.loads(path.read_text())
            verdicts = {
                (int(key.split(":")[0]), int(key.split(":")[1])): WatcherVerdict(
                    str(entry["verdict"]), entry.get("reason"), entry.get("report")
                )
                for key, entry in doc.get("judged", {}).items()
            }
            scores = {
                (int(key.split(":")[0]), int(k)): float(score)
                for key, entry in doc.get("screened", {}).items()
                for k, score in entry.get("scores", {}).items()
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            return _State({}, {})  # written atomically, so this is a file we do not understand: show nothing
        # A claimed NaN or infinity scores infinite; JSON has no infinity, so it shows as the largest float.
        state = _State(verdicts, {key: v if math.isfinite(v) else sys.float_info.max for key, v in scores.items()})
        with self._lock:
            self._seen[path] = (mtime, state)
        return state
