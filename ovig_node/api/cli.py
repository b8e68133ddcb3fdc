"""`ovig api serve`: the owner's API and dashboard over the embedded devnet or any deployment."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console

from ovig_node.node_cli import EXISTING_FILE, FOLDER, checksummed_addresses

if TYPE_CHECKING:  # imported when serving: `ovig --help` stays quick
    from ovig_node.api.settings import ApiSettings

console = Console(highlight=False)


@click.group()
def api() -> None:
    """The owner's API and dashboard over indexed contract state."""


@api.command("serve")
@click.option("--devnet", "use_devnet", is_flag=True, help="Serve the embedded devnet (devnet.json).")
@click.option(
    "--devnet-dir",
    type=FOLDER,
    envvar="OVIG_DEVNET_DIR",
    help="Devnet data folder [env OVIG_DEVNET_DIR; default ~/.ovig/devnet].",
)
@click.option("--rpc", "rpc_url", help="JSON-RPC URL (not the devnet).")
@click.option("--deployments", type=EXISTING_FILE, help="Deployments file.")
@click.option("--ipfs", "ipfs_url", help="IPFS (Kubo RPC) API the reports are fetched from [devnet: its node].")
@click.option("--gateway", help="IPFS gateway URL the dashboard links content to, e.g. https://ipfs.io.")
@click.option(
    "--watcher-home",
    "watcher_homes",
    multiple=True,
    type=FOLDER,
    help="A watcher node's --home: its verdicts mark intervals verified, its account's attestations are "
    "trusted (repeatable) [devnet: its watcher nodes' folders are read without it].",
)
@click.option("--label", "labels", multiple=True, metavar="ADDRESS=NAME", help="Show NAME for ADDRESS (repeatable).")
@click.option(
    "--trust-attester",
    "trusted",
    multiple=True,
    metavar="ADDRESS",
    callback=checksummed_addresses,
    help="Another watcher whose attestations mark intervals verified (repeatable); all are shown. "
    "Your own watcher nodes' are trusted without it.",
)
@click.option("--home", type=FOLDER, help="Index folder.")
@click.option("--confirmations", type=int, help="Blocks under the head before indexing [devnet 0, else 3].")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=int, default=8000, show_default=True, help="Port to listen on.")
def serve_cmd(
    use_devnet: bool,
    devnet_dir: Path | None,
    rpc_url: str | None,
    deployments: Path | None,
    ipfs_url: str | None,
    gateway: str | None,
    watcher_homes: tuple[Path, ...],
    labels: tuple[str, ...],
    trusted: frozenset[str],
    home: Path | None,
    confirmations: int | None,
    host: str,
    port: int,
) -> None:
    """Index the contracts' events and serve the JSON API (/docs) and the dashboard (/) until Ctrl-C."""
    from ovig_node.api.main import create_app
    from ovig_node.api.server import serve
    from ovig_node.api.settings import chain_settings, devnet_settings
    from ovig_node.devnet.manager import default_data_dir

    if use_devnet == (rpc_url is not None):
        raise click.UsageError("choose --devnet, or --rpc URL with --deployments FILE")

    options: dict[str, object] = {
        "gateway": gateway,
        "watcher_homes": watcher_homes,
        "labels": parse_labels(labels),
        "trusted_attesters": trusted,
    }
    options |= {
        name: value for name, value in (("confirmations", confirmations), ("ipfs_url", ipfs_url)) if value is not None
    }
    if use_devnet:
        settings = devnet_settings(devnet_dir or default_data_dir(), home=home, **options)
    elif deployments is None:
        raise click.UsageError("--rpc needs --deployments FILE (written by `ovig deploy`)")
    else:
        assert rpc_url is not None
        # One index per deployment: a deployments file is named after its chain (deployments/<chain id>.json).
        home = home or Path.home() / ".ovig" / "api" / deployments.stem
        settings = chain_settings(rpc_url, deployments, home=home, **options)
    app = create_app(settings)
    console.print(f"OVIG dashboard at http://{host}:{port}/  (API docs /docs; Ctrl-C to stop)")
    console.print(f"indexing {settings.rpc_url} into {settings.home}")
    console.print(trusted_line(settings), soft_wrap=True)  # one line, however narrow the terminal
    serve(app, host=host, port=port)


def trusted_line(settings: ApiSettings) -> str:
    """Whose attestations colour intervals verified, and why: a first-time owner sees its watcher was found."""
    found = ", ".join(
        f"your watcher node {node} ({address})" if node else f"{address} (--trust-attester)"
        for address, node in settings.trusted_nodes()
    )
    return f"verified by: {found or 'no watcher yet (run one, or name one with --trust-attester)'}"


def parse_labels(labels: tuple[str, ...]) -> dict[str, str]:
    from web3 import Web3

    parsed: dict[str, str] = {}
    for label in labels:
        address, _, name = label.partition("=")
        if not name or not Web3.is_address(address):
            raise click.BadParameter(f"{label!r}: use ADDRESS=NAME", param_hint="--label")
        parsed[Web3.to_checksum_address(address.lower())] = name
    return parsed
