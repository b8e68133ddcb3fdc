"""`ovig compile` and `ovig deploy`: the contracts, built and put on a chain."""

from __future__ import annotations

from pathlib import Path

import click

from ovig_node.cli.console import console
from ovig_node.cli.options import data_dir_option
from ovig_node.node_cli import EXISTING_FILE, FILE, SHOW_DEFAULTS


@click.command("compile")
def compile_cmd() -> None:
    """Compile contracts/ (Ape + wasm solc, always a full build) and export artifacts into the package."""
    from ovig_node.chain.compile import compile_contracts

    written = compile_contracts()
    console.print(f"exported artifacts: {', '.join(written) or 'none'}")


@click.command("deploy", context_settings=SHOW_DEFAULTS)
@data_dir_option
@click.option("--devnet", "use_devnet", is_flag=True, help="Deploy to the running devnet with test account 0.")
@click.option("--rpc", "rpc_url", help="JSON-RPC URL of another chain.")
@click.option("--keystore", type=EXISTING_FILE, help="Encrypted key.")
@click.option("--password-file", type=FILE, help="Keystore password file.")
@click.option("--password-env", metavar="VAR", help="Environment variable holding the keystore password.")
@click.option("--deployments", type=FILE, help="Deployments file to update.")
@click.option("--plan", type=FILE, help="Deploy plan [deploy/plan.py].")
@click.option("--no-compile", is_flag=True, help="Use the shipped artifacts even if sources changed.")
@click.option(
    "--randomness",
    type=click.Choice(["drand", "blockhash"]),
    help="Randomness backend [drand: the devnet's beacon on the devnet, --drand-network elsewhere].",
)
@click.option("--drand-network", default="quicknet", help="A network of deploy/drand.json.")
@click.option("--drand-delay", type=click.IntRange(min=1), help="Seconds from an action to its drand round.")
@click.option("--allow-blockhash", is_flag=True, help="Allow block-hash randomness off the devnet (test networks).")
@click.option(
    "--devnet-pace",
    type=click.IntRange(1, 100),
    default=1,
    help="The devnet committee's windows N times longer, for replays slower than 15 s.",
)
def deploy_cmd(
    data_dir: Path | None,
    use_devnet: bool,
    rpc_url: str | None,
    keystore: Path | None,
    password_file: Path | None,
    password_env: str | None,
    deployments: Path | None,
    plan: Path | None,
    no_compile: bool,
    randomness: str | None,
    drand_network: str,
    drand_delay: int | None,
    allow_blockhash: bool,
    devnet_pace: int,
) -> None:
    """Compile if needed, deploy the plan's contracts, and record them in a deployments file."""
    from ovig_node.nodes.deploying import DeployTarget, deploy

    if use_devnet == bool(rpc_url):
        raise click.UsageError("pass exactly one of --devnet or --rpc URL")
    target = DeployTarget(
        devnet_dir=data_dir if use_devnet else None,
        use_devnet=use_devnet,
        rpc_url=rpc_url,
        keystore=keystore,
        password_file=password_file,
        password_env=password_env,
        deployments=deployments,
        plan=plan,
        compile=not no_compile,
        randomness=randomness,
        drand_network=drand_network,
        drand_delay=drand_delay,
        allow_blockhash=allow_blockhash,
        devnet_pace=devnet_pace,
    )
    outcome = deploy(target)
    for line in outcome.log:
        console.print(f"  {line}")
    console.print(f"deployments recorded in {outcome.path}")
