"""The README's generated tables agree with the committed results they are written from."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _tables():  # bench/ is scripts, not a package
    spec = importlib.util.spec_from_file_location("tables", REPO / "bench" / "tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_tables_are_written_from_bench_results() -> None:
    tables = _tables()
    text = (REPO / "README.md").read_text()
    assert tables.BLOCK.search(text) is not None, "README.md has no generated table"
    assert tables.render(text) == text, "run `python bench/tables.py` and commit README.md"


def test_a_changed_result_changes_the_table() -> None:
    tables = _tables()
    block = "<!-- table:gas -->\n| stale | 1 |\n<!-- /table:gas -->"
    assert tables.render(block) != block and "| commitChallenge |" in tables.render(block)
