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
        (["spec", "new", "--workload", "llm", "--format", "alpaca", "--out", "{new}"], "give --data too"),
        (
            [
                "owner",
                "post-task",
                "--spec",
                "{readme}",
                "--reward",
                "abc",
                "--provider-bond",
                "3",
                "--challenger-bond",
                "0.1",
                "--account",
                "0",
            ],
            "'abc' is not an amount of ETH",
        ),
        (
            [
                "owner",
                "post-task",
                "--spec",
                "{readme}",
                "--reward",
                "1",
                "--provider-bond",
                "3",
                "--challenger-bond",
                "0.1",
                "--windows",
                "90,90",
                "--account",
                "0",
            ],
            "three whole seconds",
        ),
        (["owner", "fetch", "1", "--out", "{full}", "--account", "0"], "is not empty"),
        (["verify", "--spec", "{readme}", "--evidence", "{new}", "--interval", "0"], "does not exist"),
        (["eval", "--mode", "exact", "--calibration-seed", "2", "--out", "{new}"], "leave --calibration-seed out"),
        (["auditor", "--appeal-budget", "lots", "--account", "4"], "'lots' is not an amount of ETH"),
        (
            ["watcher", "--appeal-budget", "-2x", "--account", "3"],
            "'-2x' is not a multiple of the smallest challenger bond",
        ),
        (["watcher", "--max-bond", "0.1.2", "--account", "3"], "'0.1.2' is not an amount of ETH"),
    ],
)
def test_a_usage_error_names_its_option_before_torch_loads(tmp_path: Path, argv: list[str], said: str) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "boundary.json").write_text("{}")
    paths = {"full": str(full), "new": str(tmp_path / "new"), "readme": str(REPO / "README.md")}
    run = subprocess.run(
        [sys.executable, "-c", PROBE, *(a.format(**paths) for a in argv)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    lines = run.stdout.strip().splitlines()
    assert lines[-1] == "torch loaded: False", run.stdout + run.stderr
    assert lines[0].startswith("usage error:") and said in lines[0], run.stdout + run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # nothing written


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["--mode", "families", "--claim-profile", "ddp2", "--calibration-seed", "2"],
            "Invalid value for --mode: families judges one-process claims (the reference profile): "
            "leave --claim-profile out",
        ),
        (
            ["--mode", "exact", "--claim-profile", "ddp2", "--calibration-seed", "2"],
            "Invalid value for --mode: exact judges one-process claims (the reference profile): "
            "leave --claim-profile out",
        ),
        (
            ["--mode", "exact", "--calibration-seed", "2"],
            "Invalid value for --mode: exact judges claims against their own run's calibration: "
            "leave --calibration-seed out",
        ),
        (
            ["--mode", "lofo"],
            "Invalid value for '--mode': 'lofo' is not one of 'main', 'families', 'layer-one', 'exact'",
        ),
        (["--exact"], "No such option: --exact"),  # the flags --mode replaced are gone
        (["--leave-one-family-out"], "No such option: --leave-one-family-out"),
        (["--layer-one"], "No such option: --layer-one"),
    ],
)
def test_eval_refuses_a_mode_with_options_it_cannot_take_in_one_line(
    tmp_path: Path, argv: list[str], said: str
) -> None:
    """`ovig eval --mode` picks one evaluation: an option its mode cannot take, an unknown mode or a flag --mode
    replaced is one line of usage error, before any work (nothing written)."""
    from click.testing import CliRunner

    from ovig_node.cli import cli

    result = CliRunner().invoke(cli, ["eval", *argv, "--out", str(tmp_path / "out")])
    usage, error = result.output.strip().split("\n\n")
    assert result.exit_code == 2 and usage.startswith("Usage: ") and error.startswith(f"Error: {said}"), result.output
    assert "\n" not in error
    assert not (tmp_path / "out").exists()


def _commands(group: object, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], object]]:
    import click

    if isinstance(group, click.Group):
        return [item for name, sub in group.commands.items() for item in _commands(sub, (*path, name))]
    return [(path, group)]


def test_every_option_of_every_command_says_what_it_is_for() -> None:
    """Issue 46: help text on every option (the CLI's shape: docs/operations.md, "The command line")."""
    import click

    from ovig_node.cli import cli

    bare = [
        f"{' '.join(path)} {p.opts[0]}"
        for path, command in _commands(cli, ("ovig",))
        for p in command.params
        if isinstance(p, click.Option) and not p.help
    ]  # type: ignore[attr-defined]
    assert bare == []


def test_the_help_lists_commands_by_role_and_the_old_spellings_still_work(tmp_path: Path) -> None:
    """`ovig --help` by role; `ovig trainer run`, `--data-dir` and `ipfs get -o` (an earlier release's spellings)
    still work for one release and are shown nowhere."""
    from click.testing import CliRunner

    from ovig_node.cli import cli

    runner = CliRunner()
    top = runner.invoke(cli, ["--help"]).output
    sections = [line for line in top.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert sections == ["Options:", "Owner:", "Nodes:", "Devnet and chain:", "Research:"]
    for argv in (["trainer", "run", "--help"], ["trainer", "--help"]):
        shown = runner.invoke(cli, argv)
        assert shown.exit_code == 0 and "--task" in shown.output and "trainer run" not in shown.output
    old, new = (
        runner.invoke(cli, ["devnet", "status", flag, str(tmp_path / "nowhere")])
        for flag in ("--data-dir", "--devnet-dir")
    )
    assert (old.exit_code, old.output) == (new.exit_code, new.output) and "nowhere" in new.output
    assert "--data-dir" not in runner.invoke(cli, ["devnet", "status", "--help"]).output
    get = runner.invoke(cli, ["ipfs", "get", "--help"]).output
    assert "--out" in get and "--output" not in get and "-o," not in get


def test_the_owners_reads_and_cancel_never_load_torch() -> None:
    """`ovig owner status`, `list` and `cancel` read the chain alone: their module leaves torch unloaded (seconds
    of every such command, for nothing); only posting a task opens its files (``ovig_node.nodes.posting``)."""
    probe = "import sys, ovig_node.nodes.owner; print('torch loaded:', 'torch' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert run.stdout.strip() == "torch loaded: False", run.stdout + run.stderr
