"""The `ovig` command: thin click wrappers; each command delegates to the module that does the work.

An error OVIG understands (an ``OvigError``) prints one line and exits with status 1; a usage error
exits with 2 (click's convention); anything else is a bug and shows its traceback.

This package holds the root group, which lists the commands by role, and ``main()``. The commands live by group:
devnet (``devnet``), chain (``compile``, ``deploy``), ipfs, spec, train (``train``, ``calibrate``, ``verify``),
evaluate (``eval``) and demo; the options several of them take in options, the consoles in console; the nodes' and
the owner's commands in :mod:`ovig_node.node_cli`, the API's in :mod:`ovig_node.api.cli`. No module imports torch
or a workload when imported: a command imports what it needs when it runs, after its options are checked.
"""

from __future__ import annotations

import sys

import click

from ovig_node.api.cli import api
from ovig_node.cli.chain import compile_cmd, deploy_cmd
from ovig_node.cli.console import err_console
from ovig_node.cli.demo import demo_cmd
from ovig_node.cli.devnet import devnet
from ovig_node.cli.evaluate import eval_cmd
from ovig_node.cli.ipfs import ipfs
from ovig_node.cli.spec import spec
from ovig_node.cli.train import calibrate_cmd, train_cmd, verify_cmd
from ovig_node.errors import OvigError
from ovig_node.node_cli import COMMANDS

__all__ = ["cli", "main"]


class RoleGroups(click.Group):
    """`ovig --help` lists the commands by who runs them."""

    SECTIONS = (
        ("Owner", ("spec", "calibrate", "owner", "api")),
        ("Nodes", ("trainer", "watcher", "auditor", "keeper")),
        ("Devnet and chain", ("devnet", "deploy", "compile", "ipfs", "demo")),
        ("Research", ("train", "verify", "eval")),
    )

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed: set[str] = set()
        limit = max(30, formatter.width - 16)  # one line each, as click's own listing
        for title, names in self.SECTIONS:
            rows = [(n, self.commands[n].get_short_help_str(limit)) for n in names if n in self.commands]
            listed.update(names)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [(n, c.get_short_help_str(limit)) for n, c in self.commands.items() if n not in listed and not c.hidden]
        if rest:
            with formatter.section("Other"):
                formatter.write_dl(rest)


@click.group(cls=RoleGroups)
@click.version_option(package_name="ovig-node")
def cli() -> None:
    """OVIG: optimistic verification of outsourced training."""


for _command in (
    devnet,
    compile_cmd,
    deploy_cmd,
    ipfs,
    spec,
    train_cmd,
    calibrate_cmd,
    verify_cmd,
    eval_cmd,
    demo_cmd,
    *COMMANDS,
    api,
):
    cli.add_command(_command)


def main() -> None:
    try:
        cli()
    except OvigError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
