"""`ovig demo`: the whole system on the devnet, end to end, then the owner's dashboard over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ovig_node.cli.console import console
from ovig_node.cli.devnet import open_devnet, port_options
from ovig_node.cli.options import data_dir_option


@click.command("demo")
@data_dir_option
@port_options
@click.option("--down/--keep-running", default=False, help="Stop the devnet at the end [keep it running].")
@click.option("--serve/--no-serve", default=True, help="Serve the dashboard at the end until Ctrl-C [serve].")
@click.option(
    "--workload",
    type=click.Choice(["vision", "llm"]),
    default="vision",
    show_default=True,
    help="What the providers train: the tiny CNN, or the tiny chat model with a LoRA adapter.",
)
@click.option("--full", is_flag=True, help="llm: the real chat model, SmolLM2-135M-Instruct (slow: 540 MB a node).")
def demo_cmd(
    data_dir: Path | None, down: bool, serve: bool, workload: str, full: bool, **options: int | float | None
) -> None:
    """The main job: the whole system on the devnet, an honest task and a cheated one, end to end."""
    from ovig_node.nodes.demo import CASTS, run_demo

    if full and workload != "llm":
        raise click.UsageError("--full is for --workload llm (the real chat model); vision has only a tiny demo")
    cast = CASTS[f"{workload}-full" if full else workload]
    dashboard = _serve_demo_dashboard if serve else None
    run_demo(open_devnet(data_dir, **options), stop_at_end=down, console=console, serve=dashboard, cast=cast)


def _serve_demo_dashboard(net: Any, folder: Path) -> None:
    """The owner's dashboard over what the demo just did, until Ctrl-C."""
    from ovig_node.api.main import create_app
    from ovig_node.api.server import serve
    from ovig_node.api.settings import devnet_settings
    from ovig_node.chain.accounts import devnet_account
    from ovig_node.devnet.processes import free_port, port_free
    from ovig_node.nodes.demo import ROLES, WATCHERS

    labels = {devnet_account(i).address: role for i, role in ROLES.items()}
    homes = tuple(folder / "nodes" / f"watcher-{i}" for i in WATCHERS)
    trusted = frozenset(devnet_account(i).address for i in WATCHERS)
    app = create_app(devnet_settings(net.data_dir, labels=labels, watcher_homes=homes, trusted_attesters=trusted))
    port = 8000 if port_free("127.0.0.1", 8000) else free_port()
    console.print(f"dashboard: [bold]http://127.0.0.1:{port}/[/]  (API docs: /docs). Ctrl-C to stop serving.")
    serve(app, host="127.0.0.1", port=port)
