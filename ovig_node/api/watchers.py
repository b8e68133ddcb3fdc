"""Verdicts of the owner's own watcher nodes, read from their state files.

A watcher judges every opened interval but publishes a report on-chain only when it challenges, so a
*valid* verdict exists only in the watcher's ``watcher.json`` (``judged``: ``"task:k"`` -> verdict,
reason and report CID). The owner runs (or pays) that watcher, so the API may read its folder; the
file is re-read only when it changes.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

STATE_FILE = "watcher.json"


@dataclass(frozen=True)
class WatcherVerdict:
    verdict: str  # "valid" or "faulty"
    reason: str | None
    report_cid: str | None


class WatcherVerdicts:
    """(task, k) -> the latest verdict any of the watcher folders recorded."""

    def __init__(self, homes: tuple[Path, ...]) -> None:
        self.homes = homes
        self._lock = threading.Lock()
        self._seen: dict[Path, tuple[float, dict[tuple[int, int], WatcherVerdict]]] = {}

    def for_task(self, task: int) -> dict[int, WatcherVerdict]:
        found: dict[int, WatcherVerdict] = {}
        for home in self.homes:
            for (t, k), verdict in self._read(home / STATE_FILE).items():
                if t == task:
                    found[k] = verdict
        return found

    def _read(self, path: Path) -> dict[tuple[int, int], WatcherVerdict]:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return {}
        with self._lock:
            cached = self._seen.get(path)
            if cached is not None and cached[0] == mtime:
                return cached[1]
        try:
            judged = json.loads(path.read_text()).get("judged", {})
            verdicts = {
                (int(key.split(":")[0]), int(key.split(":")[1])): WatcherVerdict(
                    str(entry["verdict"]), entry.get("reason"), entry.get("report")
                )
                for key, entry in judged.items()
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            return {}  # written atomically, so this is a file we do not understand: show no verdicts
        with self._lock:
            self._seen[path] = (mtime, verdicts)
        return verdicts
