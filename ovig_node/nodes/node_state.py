"""A node's small persisted state for one task: a JSON document rewritten atomically on each change.

What a node must not forget across a kill (preflight result, digests, CIDs it pinned, salts of commits
it sent) lives here; everything else is re-read from the chain, the journal or the disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ovig_node.files import write_atomic


class NodeState:
    """A dict persisted to ``path`` after every ``set``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.update({key: value})

    def update(self, values: dict[str, Any]) -> None:
        """Set several keys in one write: a kill between two writes cannot leave one without the other."""
        self._data.update(values)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(self._data, indent=1, sort_keys=True).encode())
