"""Bad input fails fast (issue 46): a usage error names its option before torch is loaded or anything is written.

Each command runs in a fresh interpreter, as `ovig` would, and the interpreter reports whether torch was
imported by the time the error came (it takes 8-26 s to load on these machines: a typo must not cost that)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROBE = """
import sys, click
from ovig_node.cli import cli
try:
    cli(sys.argv[1:], standalone_mode=False)
except click.UsageError as error:
    print("usage error:", error.format_message())
print("torch loaded:", "torch" in sys.modules)
"""


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["spec", "new", "--workload", "vision", "--out", "{full}"], "is not empty"),
        (["spec", "new", "--workload", "vision", "--lora-rank", "2", "--out", "{new}"], "only the llm workload"),
        (["owner", "list", "--account", "12"], "12 is not in the range 0<=x<=9"),
        (["owner", "post-task", "--spec", "{readme}", "--reward", "abc", "--provider-bond", "3", "--challenger-bond",
          "0.1", "--account", "0"], "'abc' is not an amount of ETH"),
        (["owner", "post-task", "--spec", "{readme}", "--reward", "1", "--provider-bond", "3", "--challenger-bond",
          "0.1", "--windows", "90,90", "--account", "0"], "three whole seconds"),
        (["owner", "fetch", "1", "--out", "{full}", "--account", "0"], "is not empty"),
        (["verify", "--spec", "{readme}", "--evidence", "{new}", "--interval", "0"], "does not exist"),
    ],
)  # fmt: skip
def test_a_usage_error_names_its_option_before_torch_loads(tmp_path: Path, argv: list[str], said: str) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "boundary.json").write_text("{}")
    paths = {"full": str(full), "new": str(tmp_path / "new"), "readme": str(REPO / "README.md")}
    run = subprocess.run([sys.executable, "-c", PROBE, *(a.format(**paths) for a in argv)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=60)  # fmt: skip
    lines = run.stdout.strip().splitlines()
    assert lines[-1] == "torch loaded: False", run.stdout + run.stderr
    assert lines[0].startswith("usage error:") and said in lines[0], run.stdout + run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # nothing written
