"""The consoles every command writes to: results on stdout, errors on stderr."""

from __future__ import annotations

from rich.console import Console

console = Console()
err_console = Console(stderr=True)
