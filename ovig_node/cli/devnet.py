"""`ovig devnet up|down|status`, and how every command opens the devnet (its folder, ports and block time)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from ovig_node.cli.console import console
from ovig_node.cli.options import data_dir_option

if TYPE_CHECKING:
    from ovig_node.devnet.manager import Devnet


def open_devnet(data_dir: Path | None, **ports: int | float | None) -> Devnet:
    """The devnet in ``data_dir`` (default ~/.ovig/devnet), with the ports and block time given (others: defaults)."""
    # Imports inside commands keep `ovig --help` fast (web3 and torch are slow to import).
    from ovig_node.devnet.manager import Devnet, DevnetConfig, default_data_dir

    overrides = {k: v for k, v in ports.items() if v is not None}
    return Devnet(DevnetConfig(data_dir=data_dir or default_data_dir(), **overrides))  # type: ignore[arg-type]


def port_options(command: Callable[..., None]) -> Callable[..., None]:
    """The devnet's ports and block time, shared by `devnet up` and `demo`."""
    for option in reversed(
        [
            click.option("--rpc-port", type=int, default=None, help="anvil JSON-RPC port [8545]."),
            click.option("--ipfs-port", "ipfs_api_port", type=int, default=None, help="IPFS API port [5001]."),
            click.option("--swarm-port", "ipfs_swarm_port", type=int, default=None, help="IPFS libp2p port [any]."),
            click.option("--beacon-port", type=int, default=None, help="drand beacon HTTP port [any]."),
            click.option(
                "--block-time",
                type=float,
                default=None,
                help="Seconds per block when idle; transactions are mined at once [1; 0: only per transaction].",
            ),
        ]
    ):
        command = option(command)
    return command


@click.group()
def devnet() -> None:
    """The embedded devnet: a local anvil chain, an IPFS node and a drand beacon."""


@devnet.command("up")
@data_dir_option
@port_options
def devnet_up(data_dir: Path | None, **options: int | float | None) -> None:
    """Start the devnet (or report that it already runs) and write devnet.json."""
    net = open_devnet(data_dir, **options)
    result = net.up()
    info = result.info
    verb = "already running" if result.already_running else "started"
    console.print(f"devnet {verb} in {info.data_dir}")
    console.print(f"  chain   {info.rpc_url}  (chain id {info.chain_id})")
    console.print(f"  ipfs    {info.ipfs_api_url}  peer {info.ipfs_peer}")
    console.print(f"  beacon  {info.beacon_url}  (drand, round 1 at {info.beacon_genesis})")
    console.print(f"  config  {net.info_path}")


@devnet.command("down")
@data_dir_option
def devnet_down(data_dir: Path | None) -> None:
    """Stop the devnet's processes; chain state and IPFS content are kept for the next `up`."""
    stopped = open_devnet(data_dir).down()
    console.print(f"stopped {', '.join(stopped)}" if stopped else "devnet is not running")


@devnet.command("status")
@data_dir_option
def devnet_status(data_dir: Path | None) -> None:
    """Health of each devnet process; exit status 1 unless all are healthy."""
    net = open_devnet(data_dir)
    rows = net.status()
    table = Table(title=f"devnet {net.data_dir}")
    for column in ("service", "pid", "state", "detail"):
        table.add_column(column)
    for row in rows:
        state = "[green]healthy" if row.healthy else ("[yellow]unhealthy" if row.running else "[red]stopped")
        table.add_row(row.name, str(row.pid or "-"), state, row.detail)
    console.print(table)
    if not all(row.healthy for row in rows):
        sys.exit(1)
