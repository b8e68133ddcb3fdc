"""`ovig ipfs add|get|pins`: content on an IPFS node (Kubo's, or the devnet's by default)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ovig_node.cli.devnet import open_devnet
from ovig_node.cli.options import Renamed, data_dir_option
from ovig_node.node_cli import EXISTING_FILE, FILE, SHOW_DEFAULTS

if TYPE_CHECKING:
    from ovig_node.storage.ipfs import IpfsClient

api_option = click.option(
    "--api",
    "api_url",
    envvar="OVIG_IPFS_API",
    default=None,
    help="Kubo RPC URL [env OVIG_IPFS_API; devnet's].",
)


def _ipfs(api_url: str | None, data_dir: Path | None) -> IpfsClient:
    from ovig_node.storage.ipfs import IpfsClient

    if api_url is None:
        api_url = open_devnet(data_dir).info().ipfs_api_url
    return IpfsClient(api_url)


@click.group()
def ipfs() -> None:
    """Add, fetch (verified) and pin content on an IPFS node (Kubo or the devnet's)."""


@ipfs.command("add", context_settings=SHOW_DEFAULTS)
@click.argument("path", type=EXISTING_FILE)
@click.option(
    "--cid-version",
    type=click.IntRange(0, 1),
    default=0,
    help="CID version: 0 (Qm..., Kubo's default) or 1 (raw leaves).",
)
@api_option
@data_dir_option
def ipfs_add(path: Path, cid_version: int, api_url: str | None, data_dir: Path | None) -> None:
    """Add and pin a file; print its CID."""
    from ovig_node.storage.ipfs import AddOptions

    with _ipfs(api_url, data_dir) as client:
        click.echo(client.add_file(path, options=AddOptions(cid_version=cid_version)).cid)


@ipfs.command("get")
@click.argument("cid")
@click.option(
    "--out",
    "-o",
    "--output",
    "output",
    cls=Renamed,
    type=FILE,
    required=True,
    help="The file to write (atomically).",
)
@click.option("--sha256", help="Also require this sha256 (hex) of the whole file.")
@api_option
@data_dir_option
def ipfs_get(cid: str, output: Path, sha256: str | None, api_url: str | None, data_dir: Path | None) -> None:
    """Fetch a file, verifying every block against the CID; write it atomically."""
    with _ipfs(api_url, data_dir) as client:
        client.get_file(cid, output, sha256=sha256)
    click.echo(str(output))


@ipfs.command("pins")
@api_option
@data_dir_option
def ipfs_pins(api_url: str | None, data_dir: Path | None) -> None:
    """List recursive pins."""
    with _ipfs(api_url, data_dir) as client:
        for cid in sorted(client.pins()):
            click.echo(cid)
