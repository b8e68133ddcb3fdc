"""The `ovig` command: thin click wrappers; each command delegates to the module that does the work.

An error OVIG understands (an ``OvigError``) prints one line and exits with status 1; a usage error
exits with 2 (click's convention); anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from ovig_node.errors import OvigError
from ovig_node.node_cli import EXISTING_FILE, FILE, FOLDER
from ovig_node.training.chat import FORMATS as CHAT_FORMATS
from ovig_node.verify.defaults import CALIBRATION

if TYPE_CHECKING:
    from ovig_node.devnet.manager import Devnet
    from ovig_node.storage.ipfs import IpfsClient

console = Console()
err_console = Console(stderr=True)


class Renamed(click.Option):
    """An option under its one name in every command; the spellings after the first (an earlier release's) still
    work, for one release, and are shown nowhere."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        spellings, self.opts = self.opts, self.opts[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = spellings


# The devnet folder has one name on every command (the nodes' and the API's too): --devnet-dir.
data_dir_option = click.option(
    "--devnet-dir",
    "--data-dir",
    "data_dir",
    cls=Renamed,
    type=FOLDER,
    envvar="OVIG_DEVNET_DIR",
    default=None,
    help="Devnet data folder [env OVIG_DEVNET_DIR; default ~/.ovig/devnet].",
)


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


# --- devnet ------------------------------------------------------------------------------------


@cli.group()
def devnet() -> None:
    """The embedded devnet: a local anvil chain, an IPFS node and a drand beacon."""


def _devnet(data_dir: Path | None, **ports: int | float | None) -> Devnet:
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


@devnet.command("up")
@data_dir_option
@port_options
def devnet_up(data_dir: Path | None, **options: int | float | None) -> None:
    """Start the devnet (or report that it already runs) and write devnet.json."""
    net = _devnet(data_dir, **options)
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
    stopped = _devnet(data_dir).down()
    console.print(f"stopped {', '.join(stopped)}" if stopped else "devnet is not running")


@devnet.command("status")
@data_dir_option
def devnet_status(data_dir: Path | None) -> None:
    """Health of each devnet process; exit status 1 unless all are healthy."""
    net = _devnet(data_dir)
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


# --- contracts ---------------------------------------------------------------------------------


@cli.command("compile")
def compile_cmd() -> None:
    """Compile contracts/ (Ape + wasm solc, always a full build) and export artifacts into the package."""
    from ovig_node.chain.compile import compile_contracts

    written = compile_contracts()
    console.print(f"exported artifacts: {', '.join(written) or 'none'}")


@cli.command("deploy")
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
@click.option("--drand-network", default="quicknet", show_default=True, help="A network of deploy/drand.json.")
@click.option("--drand-delay", type=click.IntRange(min=1), help="Seconds from an action to its drand round.")
@click.option("--allow-blockhash", is_flag=True, help="Allow block-hash randomness off the devnet (test networks).")
@click.option(
    "--devnet-pace",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
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


# --- ipfs --------------------------------------------------------------------------------------

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
        api_url = _devnet(data_dir).info().ipfs_api_url
    return IpfsClient(api_url)


@cli.group()
def ipfs() -> None:
    """Add, fetch (verified) and pin content on an IPFS node (Kubo or the devnet's)."""


@ipfs.command("add")
@click.argument("path", type=EXISTING_FILE)
@click.option(
    "--cid-version",
    type=click.IntRange(0, 1),
    default=0,
    show_default=True,
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


# --- training ----------------------------------------------------------------------------------


def _config_option(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a value is JSON where it parses (3, 0.5, true, "x"), else a string."""
    import json

    config: dict[str, Any] = {}
    for item in values:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r}: give KEY=VALUE", param_hint="--config")
        try:
            config[key.strip()] = json.loads(text)
        except ValueError:
            config[key.strip()] = text
    return config


config_option = click.option(
    "--config",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_config_option,
    help="Change or add a workload config key (repeatable), e.g. pool=avg for vision.",
)

warmup_option = click.option(
    "--warmup-steps",
    type=click.IntRange(min=0),
    default=None,
    help="Warm the learning rate up linearly over this many steps (0: none) [default: the workload's recipe].",
)

alpha_option = click.option(
    "--alpha", type=float, default=CALIBRATION.alpha, show_default=True, help="Margin over the largest drift."
)

floor_option = click.option(
    "--floor-ulps",
    type=click.FloatRange(min=0.0, max=CALIBRATION.max_floor_ulps),
    default=CALIBRATION.floor_ulps,
    show_default=True,
    help="Rounding-scale floor: no limit below this many ulps of the claimed values at its percentile (0: none).",
)


@cli.group()
def spec() -> None:
    """Task specs: the document whose hash the contract holds."""


@spec.command("new")
@click.option("--workload", required=True, help="Workload name: vision, language, diffusion or llm.")
@click.option("--tiny", is_flag=True, help="The tiny config (trains in seconds; for tests and demos).")
@click.option("--out", "out_dir", type=FOLDER, required=True, help="Folder.")
@click.option("--steps", "total_steps", type=int, default=200, show_default=True, help="Training steps N.")
@click.option("--stride", type=int, default=10, show_default=True, help="Steps per interval s.")
@click.option("--intervals-per-batch", type=int, default=8, show_default=True, help="Intervals per commit m.")
@click.option("--sample-bps", type=int, default=2500, show_default=True, help="Share of a batch to open (bps).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="[default: the workload's]")
@click.option("--seed", type=int, default=1, show_default=True, help="The training seed (data order, init draws).")
@click.option(
    "--model",
    "model_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="llm: a Hugging Face model folder (config.json, safetensors, tokenizer) [default: SmolLM2-135M-Instruct].",
)
@click.option(
    "--data",
    "data_file",
    type=EXISTING_FILE,
    default=None,
    help="llm: conversations, one JSON per line: messages, ShareGPT, Alpaca, prompt/completion or prompt/response "
    "(docs/llm.md).",
)
@click.option(
    "--format",
    "data_format",
    type=click.Choice(["auto", *CHAT_FORMATS]),
    default="auto",
    show_default=True,
    help="llm: the format of every line of --data (auto: each line's keys name it).",
)
@click.option(
    "--exact",
    is_flag=True,
    help="Exact mode: float64 compute rounded to float32, a rounding log; replays must match bit for bit. "
    "Its threshold is calibrated here from a few steps under each CPU profile.",
)
@click.option("--force", is_flag=True, help="Write into a folder that holds files already (they may be overwritten).")
@click.option("--adapter", type=click.Choice(["lora", "none"]), help="llm: a LoRA adapter, or none (a full fine-tune).")
@click.option("--lora-rank", type=click.IntRange(min=1), help="llm: the adapter's rank r [8; tiny 4].")
@click.option("--lora-alpha", type=click.IntRange(min=1), help="llm: the adapter's alpha [16; tiny 8].")
@click.option("--lora-targets", help="llm: the modules it adapts, comma-separated [PEFT's default for the model].")
@config_option
@warmup_option
def spec_new(
    workload: str,
    tiny: bool,
    out_dir: Path,
    config: dict[str, Any],
    model_dir: Path | None,
    data_file: Path | None,
    data_format: str,
    exact: bool,
    force: bool,
    adapter: str | None,
    lora_rank: int | None,
    lora_alpha: int | None,
    lora_targets: str | None,
    **options: Any,
) -> None:
    """Write spec.json, dataset.safetensors and init.safetensors into a folder."""
    if out_dir.exists() and any(out_dir.iterdir()) and not force:  # a calibrated boundary is hours of work
        raise click.BadParameter(
            f"{out_dir} is not empty (its files would be overwritten, a calibrated boundary "
            "too): use another folder, or --force",
            param_hint="--out",
        )
    lora = {
        "rank": lora_rank,
        "alpha": lora_alpha,
        "targets": [t.strip() for t in lora_targets.split(",") if t.strip()] if lora_targets else None,
    }
    given = {key: value for key, value in lora.items() if value is not None}
    if workload != "llm" and (adapter or given):
        raise click.BadParameter("only the llm workload has an adapter", param_hint="--adapter/--lora-*")
    if adapter == "none" and given:
        raise click.BadParameter("a full fine-tune (--adapter none) has no LoRA settings", param_hint="--lora-*")
    if lora_targets is not None and not given.get("targets"):
        raise click.BadParameter("name at least one module", param_hint="--lora-targets")
    if data_format != "auto":
        if data_file is None:
            raise click.BadParameter("names the format of --data: give --data too", param_hint="--format")
        config = config | {"data_format": data_format}
    from ovig_node.training.taskfiles import prepare_task

    if adapter is not None:
        config = config | {"adapter": adapter}
    if given:
        from ovig_node.training.workloads import get_workload

        config = config | {"lora": get_workload("llm").config(tiny=tiny)["lora"] | config.get("lora", {}) | given}

    sources = {"model": model_dir, "data": data_file}
    config = config | {key: str(path.resolve()) for key, path in sources.items() if path is not None}
    try:
        prepared = prepare_task(workload, out_dir, tiny=tiny, config=config, **options)
    except KeyError as exc:
        raise click.BadParameter(str(exc.args[0]), param_hint="--workload") from None
    if exact:
        prepared = _make_exact(prepared)
    layout = prepared.spec.layout
    console.print(f"spec     {prepared.spec_path}  (specHash 0x{prepared.spec_hash.hex()})")
    console.print(f"dataset  {prepared.dataset_path}  {prepared.spec.dataset.cid}")
    console.print(f"init     {prepared.init_path}  {prepared.spec.init.cid}")
    sizes = f"N={layout.total_steps} s={layout.stride} K={layout.intervals}"
    console.print(f"layout   {sizes} m={layout.intervals_per_batch} B={layout.batches}")


def _make_exact(prepared: Any) -> Any:
    from ovig_node.training.execution import PROFILES
    from ovig_node.training.taskfiles import attach_numerics
    from ovig_node.verify.exact import calibrate_numerics

    profiles = [p for p in PROFILES.values() if p.world_size == 1 and p.device == "cpu" and p.name != "reference"]
    with console.status(f"measuring the float64 discrepancy of {len(profiles)} profiles ..."):
        numerics, discrepancies = calibrate_numerics(prepared, profiles)
    for d in discrepancies:
        largest = ", ".join(f"{phase} {value:.2g}" for phase, value in d.largest.items())
        console.print(f"  {d.profile:18} largest discrepancy (ulps; gradient: at every value): {largest}")
    thresholds = ", ".join(f"{phase} {value}" for phase, value in numerics["threshold"].items())
    console.print(
        f"exact    thresholds (ulps): {thresholds}; gradient floor: 2^-{numerics['gradient_floor']} of "
        f"the step's largest gradient; at most {numerics['max_log_entries']} log entries"
    )
    return attach_numerics(prepared.spec_path, numerics)


@spec.command("set-boundary")
@click.option("--spec", "spec_path", type=EXISTING_FILE, required=True, help="The spec to name it in (rewritten).")
@click.option("--boundary", "boundary_path", type=EXISTING_FILE, required=True, help="`ovig calibrate`'s output.")
def spec_set_boundary(spec_path: Path, boundary_path: Path) -> None:
    """Name a calibrated boundary profile in the spec (its hash changes: do this before posting)."""
    from ovig_node.training.taskfiles import attach_boundary

    prepared = attach_boundary(spec_path, boundary_path)
    assert prepared.spec.boundary is not None
    console.print(f"spec     {spec_path}  (specHash 0x{prepared.spec_hash.hex()})")
    console.print(f"boundary {boundary_path}  {prepared.spec.boundary.cid}")


@cli.command("train")
@click.option("--spec", "spec_path", type=FILE, required=True, help="The task's spec.")
@click.option(
    "--out",
    "out_dir",
    type=FOLDER,
    required=True,
    help="Evidence folder; a run found there is resumed.",
)
@click.option(
    "--profile",
    default="reference",
    show_default=True,
    help="Execution profile (ddp2, ddp4: data-parallel ranks; fsdp2, fsdp4: sharded with FSDP2).",
)
@click.option("--task", "task_id", type=int, default=0, show_default=True, help="On-chain task id.")
@click.option("--data", "data_dir", type=FOLDER, help="Dataset folder.")
@click.option("--attack", help="Cheat (for evaluation): a built-in attack name or package.module:callable.")
@click.option("--attack-intervals", default="", help="Comma-separated intervals the attack fakes.")
@click.option(
    "--attack-param",
    "attack_params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Attack parameter: a number, else text (a path).",
)
def train_cmd(
    spec_path: Path,
    out_dir: Path,
    profile: str,
    task_id: int,
    data_dir: Path | None,
    attack: str | None,
    attack_intervals: str,
    attack_params: tuple[str, ...],
) -> None:
    """Train a spec, writing evidence every stride steps; resumes after a kill."""
    from ovig_node.attacks import load_attack
    from ovig_node.nodes.training_run import run_training

    cheat = None
    if attack:
        try:
            intervals = frozenset(int(k) for k in attack_intervals.split(",") if k)
            params = {key: _number_or_text(value) for key, value in (p.split("=", 1) for p in attack_params)}
        except ValueError:
            raise click.BadParameter("use --attack-intervals 3,4 and --attack-param key=value") from None
        cheat = load_attack(attack, intervals=intervals, **params)
    run_training(
        spec_path, out_dir, profile_name=profile, task=task_id, data_dir=data_dir, attack=cheat, console=console
    )


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[..., None]]:
    """A rich progress bar over ``total`` units; yields the evaluation's log callback."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("[bold]eval"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("starting", total=total)
        started = 0

        def log(message: str, *, unit: bool = False) -> None:
            nonlocal started
            started += unit
            progress.update(bar, completed=max(0, started - 1), description=message)
            if unit and not console.is_terminal:  # a log file (nohup, CI) sees no bar: a line per unit instead
                console.print(f"eval {started}/{total}: {message}", highlight=False)

        yield log
        progress.update(bar, completed=total, description="done")


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


# --- verification ------------------------------------------------------------------------------


@cli.command("calibrate")
@click.option(
    "--spec",
    "spec_paths",
    type=FILE,
    required=True,
    multiple=True,
    help="The task's spec. Repeat it to calibrate on several honest runs of one workload and stride "
    "(other seeds): the boundary keeps the largest drift of all.",
)
@click.option(
    "--profiles",
    default=",".join(CALIBRATION.profiles),
    show_default=True,
    help="Execution profiles of the honest replays (at least 3): the default covers "
    "every family but threads, which watchers confirm under.",
)
@click.option("--claim-profile", default="reference", show_default=True, help="Profile of the honest claims.")
@click.option(
    "--intervals",
    type=int,
    default=CALIBRATION.positions,
    show_default=True,
    help="How many intervals to calibrate on.",
)
@click.option(
    "--spread/--prefix",
    default=True,
    show_default=True,
    help="Intervals spread from the first to the last (needs honest claims up to the last), or the first N.",
)
@click.option(
    "--rel-tail",
    type=float,
    default=1e-3,
    show_default=True,
    help="Tail model of rel p100: bound >= median / (2 x this); 0 for the plain maximum.",
)
@alpha_option
@floor_option
@click.option(
    "--out",
    "out_path",
    type=FILE,
    required=True,
    help="Where to write the boundary profile (JSON).",
)
@click.option(
    "--work",
    "work_dir",
    type=FOLDER,
    help="Folder for the first spec's claims (the others' go in run-2, run-3, ... inside it).",
)
@click.option(
    "--reference",
    "reference_path",
    type=FILE,
    help="Also write the first spec's reference run (the statistics of every step its honest claims "
    "trained) here, for your watchers' layer one (`watcher --reference`). Keep it private: a "
    "published reference is a template for forged statistics.",
)
def calibrate_cmd(
    spec_paths: tuple[Path, ...],
    profiles: str,
    claim_profile: str,
    intervals: int,
    spread: bool,
    rel_tail: float,
    alpha: float,
    floor_ulps: float,
    out_path: Path,
    work_dir: Path | None,
    reference_path: Path | None,
) -> None:
    """Measure honest drift across execution profiles and write the boundary profile JSON."""
    import tempfile

    from ovig_node.files import write_atomic
    from ovig_node.training.execution import get_profile
    from ovig_node.training.taskfiles import open_task
    from ovig_node.verify.boundary import calibrate, check_runs, spread_positions

    replay_profiles = [get_profile(name) for name in profiles.split(",") if name]
    if len(replay_profiles) < 3:
        raise click.BadParameter("calibration needs at least 3 execution profiles", param_hint="--profiles")
    prepared, *more = [open_task(path) for path in spec_paths]
    if any(run.spec.exact for run in (prepared, *more)):
        raise click.BadParameter(
            "an exact-mode spec has no boundary: its replays match bit for bit (its thresholds "
            "were calibrated by `ovig spec new --exact`)",
            param_hint="--spec",
        )
    try:
        check_runs([prepared, *more])
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--spec") from None
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    positions = spread_positions(prepared.spec.layout.intervals, intervals) if spread else range(intervals)
    shortest = min(run.spec.layout.intervals for run in (prepared, *more))  # calibrate keeps positions below it
    total = len({k for k in positions if 0 <= k < shortest}) * len(replay_profiles) * (1 + len(more))
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with tempfile.TemporaryDirectory() as tmp, Progress(*columns, console=console) as progress:
        bar = progress.add_task("training the claims, then replays", total=total)

        def replayed(k: int, name: str) -> None:
            progress.update(bar, advance=1, description=f"replayed interval {k} under {name}")

        claims = work_dir or Path(tmp)
        boundary = calibrate(
            prepared,
            claim_profile=get_profile(claim_profile),
            replay_profiles=replay_profiles,
            positions=positions,
            alpha=alpha,
            work_dir=claims,
            more_runs=[(run, claims / f"run-{i}") for i, run in enumerate(more, start=2)],
            rel_tail=rel_tail or None,
            floor_ulps=floor_ulps,
            on_replay=replayed,
        )
        if reference_path is not None:
            from ovig_node.verify.statistics_judge import Reference

            reference = Reference.from_claims(claims, prepared.spec)
            write_atomic(reference_path, reference.to_json())
            console.print(f"reference run: the statistics of {reference.steps} steps written to {reference_path}")
    write_atomic(out_path, boundary.model_dump_json(indent=2))
    table = Table(
        title=f"boundary of {', '.join(map(str, spec_paths))} (alpha {alpha:g}, floor {floor_ulps:g} ulps, "
        f"{boundary.replays} replays of intervals {', '.join(map(str, boundary.positions))}"
        + (f" of {boundary.runs} runs)" if more else ")")
    )
    table.add_column("signal")
    table.add_column("kind")
    for p in boundary.percentiles:
        table.add_column(f"p{p:g}", justify="right")
    for signal, bounds in boundary.signals.items():
        for kind in ("abs", "rel"):
            table.add_row(signal, kind, *(f"{v:.2e}" for v in getattr(bounds, kind)))
    console.print(table)
    console.print(f"slowest honest replay {boundary.replay_seconds_max:.2f}s; written {out_path}")


@cli.command("verify")
@click.option("--spec", "spec_path", type=FILE, required=True, help="The task's spec.")
@click.option(
    "--evidence",
    "evidence_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    required=True,
    help="The claims' folder (E_k files); missing: an error, not a verdict.",
)
@click.option("--interval", "k", type=int, required=True, help="The interval k to replay and judge.")
@click.option(
    "--boundary",
    "boundary_path",
    type=FILE,
    help="The calibrated boundary (boundary mode; an exact-mode spec needs none).",
)
@click.option(
    "--profile",
    default="reference",
    show_default=True,
    help="Execution profile of the replay; a comma-separated list confirms a rejection under the next ones.",
)
@click.option(
    "--task",
    "task_id",
    type=int,
    default=0,
    show_default=True,
    help="On-chain task id the evidence is bound to (0: none).",
)
@click.option("--digest", help="Expected sha256 (hex) of E_k, e.g. from the chain.")
@click.option("--report", "report_path", type=FILE, help="JSON report file.")
def verify_cmd(
    spec_path: Path,
    evidence_dir: Path,
    k: int,
    boundary_path: Path | None,
    profile: str,
    task_id: int,
    digest: str | None,
    report_path: Path | None,
) -> None:
    """Replay interval k and judge its claimed evidence; exit status 3 when it is faulty."""
    from ovig_node.training.execution import get_profile
    from ovig_node.training.taskfiles import open_task
    from ovig_node.verify.boundary import BoundaryError, load_boundary
    from ovig_node.verify.report import verify_interval, write_report

    prepared = open_task(spec_path)
    if not 0 <= k < prepared.spec.layout.intervals:
        raise click.BadParameter(
            f"the task has intervals 0..{prepared.spec.layout.intervals - 1}", param_hint="--interval"
        )
    boundary = None
    if boundary_path is None and not prepared.spec.exact:
        raise click.BadParameter("a boundary-mode spec is judged against its boundary", param_hint="--boundary")
    try:
        boundary = load_boundary(boundary_path.read_bytes()) if boundary_path is not None else None
    except (OSError, BoundaryError) as exc:
        raise click.BadParameter(f"{boundary_path}: {exc}", param_hint="--boundary") from None
    with console.status(f"replaying interval {k} ..."):
        profiles = [get_profile(name) for name in profile.split(",") if name]
        report = verify_interval(
            prepared, evidence_dir, k, boundary, profiles=profiles, task=task_id, end_sha256=digest
        )
    if report_path is not None:
        write_report(report, report_path)
    colour = "green" if report["verdict"] == "valid" else "red"
    replays = f" [replays: {', '.join(report['replays'])}]" if report["replays"] else ""
    console.print(f"interval {k}: [{colour}]{report['verdict']}[/] ({report['reason']}) {report['detail']}{replays}")
    for signal, kinds in report["signals"].items():
        failing = [f"{kind} p{row['p']:g}" for kind, rows in kinds.items() for row in rows if not row["ok"]]
        console.print(f"  {signal}: {'within bounds' if not failing else 'outside at ' + ', '.join(failing)}")
    if report["verdict"] != "valid":
        sys.exit(3)


@cli.command("eval")
@click.option("--workload", default="vision", show_default=True, help="vision, language, diffusion or llm.")
@click.option("--tiny/--full", default=True, show_default=True, help="The tiny config, or the full one (hours).")
@click.option("--strides", default="1,10,100", show_default=True, help="Comma-separated strides.")
@click.option(
    "--intervals",
    default="12",
    show_default=True,
    help="Intervals per evaluated task: N, or per stride as 1:210,10:210,100:40.",
)
@click.option(
    "--calibration-positions",
    type=click.IntRange(min=1),
    default=None,
    help="Calibrate on this many intervals spread over the run and judge all others "
    "[default: every other interval calibrates].",
)
@click.option(
    "--calibrate-on",
    default=None,
    metavar="K,K,...",
    help="Calibrate on exactly these intervals (e.g. only late ones) and judge all others.",
)
@click.option(
    "--calibration-seed",
    "calibration_seeds",
    type=click.IntRange(min=2),
    multiple=True,
    help="Calibrate on a separate honest run of this task seed (the evaluated run's is 1; repeatable: one run "
    "per seed), on every interval of it unless --calibration-positions says how many, and judge every "
    "interval of the evaluated run.",
)
@click.option(
    "--claim-profile",
    default="reference",
    show_default=True,
    help="The evaluated provider's profile (ddp2: data-parallel; a sharded one, fsdp2, with --attacks none); "
    "another than the reference needs "
    "--calibration-seed, so the boundary is calibrated without it.",
)
@click.option(
    "--calibration-profiles",
    "calibration_profiles",
    default=None,
    metavar="P,P,...",
    help="Calibrate under these execution profiles [default: every family but threads, which the "
    "held-out profiles vary]. Fewer profiles cost fewer replays (profiles that change nothing for a "
    "workload, such as native-conv without convolutions, only repeat the reference).",
)
@click.option(
    "--attacks",
    "only",
    default=None,
    help="Only these built-in attacks (comma-separated names; none: honest false positives only) [default: all].",
)
@click.option(
    "--attack",
    "extra",
    multiple=True,
    metavar="PACKAGE.MODULE:CALLABLE",
    help="Also evaluate this outside attack (repeatable).",
)
@alpha_option
@floor_option
@click.option(
    "--batch-size", type=click.IntRange(min=1), default=None, help="Examples per step [default: the workload's]."
)
@click.option(
    "--other-hardware/--no-other-hardware",
    default=True,
    show_default=True,
    help="Train the honest run again on another profile, the floor for the attacks' effects.",
)
@click.option(
    "--leave-one-family-out",
    "families",
    is_flag=True,
    help="Instead: honest runs only (no attacks, no run on other hardware); for each family of execution "
    "profiles (thread split, micro-batches, accumulation, each kind of kernel), calibrate without it and "
    "judge under it. Writes families.json and families.md.",
)
@click.option(
    "--layer-one",
    "layer_one",
    is_flag=True,
    help="Instead: the statistics judge (layer one) alone: each attack's score against the owner's "
    "reference run on other hardware, the honest run's, ROC area and F1 per attack. Writes "
    "layer_one.json and layer_one.md.",
)
@click.option(
    "--exact",
    is_flag=True,
    help="Evaluate exact mode: the task's spec gets numerics (threshold measured under the calibration "
    "profiles), every verdict is a bit-for-bit replay; the boundary-aware attacker aims at the boundary "
    "of the same task in boundary mode.",
)
@config_option
@warmup_option
@click.option(
    "--out",
    "out_dir",
    type=FOLDER,
    required=True,
    help="Folder for the evaluation's results (eval.json, eval.md, plots).",
)
@click.option(
    "--work-dir",
    type=FOLDER,
    default=None,
    help="Keep the work (evidence, boundary, each verdict) here until the evaluation ends: a run cut "
    "short resumes when given the same folder and options again [default: a temporary folder].",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Judge the honest intervals and run the attacks in this many processes (each holds the model "
    "and its own replays' threads); resuming with another number is fine.",
)
def eval_cmd(
    workload: str,
    tiny: bool,
    strides: str,
    intervals: str,
    calibration_positions: int | None,
    calibrate_on: str | None,
    calibration_seeds: tuple[int, ...],
    claim_profile: str,
    calibration_profiles: str | None,
    only: str | None,
    extra: tuple[str, ...],
    alpha: float,
    floor_ulps: float,
    batch_size: int,
    other_hardware: bool,
    families: bool,
    layer_one: bool,
    exact: bool,
    config: dict[str, Any],
    warmup_steps: int | None,
    out_dir: Path,
    work_dir: Path | None,
    jobs: int,
) -> None:
    """Attack success (ASR) and false positives (FPR) per stride and attack, the detection frontier, a signal
    ablation and what each attack did to the model; table, JSON and plots."""
    import json
    import shutil
    import tempfile

    from ovig_node.training.execution import get_profile
    from ovig_node.verify.evaluate import AttackCase, EvalSettings, attacks_for, evaluate, units
    from ovig_node.verify.plots import plot_honest, plot_margins
    from ovig_node.verify.summary import markdown, summarise

    stride_list = tuple(_positive_ints(strides, "--strides"))
    default, by_stride = _intervals_option(intervals)
    attacks = attacks_for(workload, config, exact=exact)
    if only is not None:
        names = {name.strip() for name in only.split(",") if name.strip()} - {"none"}
        if unknown := names - {case.name for case in attacks}:
            raise click.BadParameter(f"unknown attacks {sorted(unknown)} for {workload}", param_hint="--attacks")
        attacks = tuple(case for case in attacks if case.name in names)
    attacks += tuple(AttackCase(spec) for spec in extra)
    calibration_at: tuple[int, ...] = ()
    if calibrate_on is not None:
        calibration_at = tuple(sorted(set(_positive_ints(calibrate_on, "--calibrate-on", minimum=0))))
        shortest = min(by_stride.get(s, default) for s in stride_list)
        if calibration_at[-1] >= shortest or len(calibration_at) > shortest - 2:
            raise click.BadParameter(
                f"give intervals below {shortest}, leaving at least two of them held out", param_hint="--calibrate-on"
            )
    _profile_names(claim_profile, "--claim-profile")
    if claim_profile != "reference" and families:
        raise click.BadParameter("leaving a family out judges one-process claims", param_hint="--claim-profile")
    if get_profile(claim_profile).sharded and attacks:
        raise click.BadParameter(
            "attacks are simulated in one process or under ddp: add --attacks none to "
            "count a sharded provider's honest false positives",
            param_hint="--claim-profile",
        )
    if claim_profile != "reference" and not calibration_seeds:
        raise click.BadParameter(
            "judge another provider profile against a boundary of separate runs: add --calibration-seed",
            param_hint="--claim-profile",
        )
    if exact and (families or calibration_seeds or claim_profile != "reference"):
        raise click.BadParameter(
            "exact mode is evaluated on one-process claims of one run, with attacks", param_hint="--exact"
        )
    settings = EvalSettings(
        workload=workload,
        tiny=tiny,
        strides=stride_list,
        intervals=default,
        intervals_by_stride=by_stride,
        calibration_positions=calibration_positions,
        calibration_at=calibration_at,
        calibration_seeds=calibration_seeds,
        config=config,
        warmup_steps=warmup_steps,
        attacks=attacks,
        alpha=alpha,
        floor_ulps=floor_ulps,
        batch_size=batch_size,
        other_hardware=other_hardware,
        claim_profile=claim_profile,
        exact=exact,
    )
    if calibration_profiles is not None:
        settings.calibration_profiles = tuple(_profile_names(calibration_profiles, "--calibration-profiles"))
    out_dir.mkdir(parents=True, exist_ok=True)
    if families:
        _families(settings, out_dir)
        return
    if layer_one:
        _layer_one(settings, out_dir)
        return
    with contextlib.ExitStack() as stack:
        work = work_dir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        results = evaluate(settings, work, log=stack.enter_context(_progress(units(settings))), jobs=jobs)
    summary = summarise(settings, results)
    (out_dir / "eval.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")
    table = markdown(summary)
    (out_dir / "eval.md").write_text(table)
    plot_margins(summary, out_dir / "margin_vs_stride.png")
    plot_honest(summary, out_dir / "honest_vs_stride.png")
    console.print(table)
    console.print(f"written {out_dir}/eval.json, eval.md, margin_vs_stride.png, honest_vs_stride.png")
    if work_dir is not None:  # done: a later run with the same options evaluates afresh
        shutil.rmtree(work_dir, ignore_errors=True)


def _families(settings: Any, out_dir: Path) -> None:
    """``ovig eval --leave-one-family-out``: every family of execution profiles held out in turn."""
    from ovig_node.verify import families

    _side_evaluation(
        out_dir,
        "families",
        families.units(settings),
        families.markdown,
        lambda tmp, log: families.evaluate_families(settings, tmp, log=log),
    )


def _layer_one(settings: Any, out_dir: Path) -> None:
    """``ovig eval --layer-one``: the statistics judge alone."""
    from ovig_node.verify import layer_one_eval

    _side_evaluation(
        out_dir,
        "layer_one",
        layer_one_eval.units(settings),
        layer_one_eval.markdown,
        lambda tmp, log: layer_one_eval.evaluate_layer_one(settings, tmp, log=log),
    )


def _side_evaluation(
    out_dir: Path, name: str, units: int, markdown: Callable[[Any], str], run: Callable[[Path, Any], Any]
) -> None:
    """Run an evaluation other than the main one in a temporary folder, with progress; write NAME.json and
    NAME.md to ``out_dir`` and print the table."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, _progress(units) as log:
        result = run(Path(tmp), log)
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    table = markdown(result)
    (out_dir / f"{name}.md").write_text(table)
    console.print(table)
    console.print(f"written {out_dir}/{name}.json, {name}.md")


def _positive_ints(text: str, option: str, *, minimum: int = 1) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers", param_hint=option) from None
    if not values or min(values) < minimum:
        kind = "positive integers" if minimum == 1 else f"integers >= {minimum}"
        raise click.BadParameter(f"{text!r}: give {kind}", param_hint=option)
    return values


def _profile_names(text: str, option: str) -> list[str]:
    """Comma-separated execution profile names, each known."""
    from ovig_node.training.execution import PROFILES

    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names or any(name not in PROFILES for name in names):
        raise click.BadParameter(f"{text!r}: give known profiles ({', '.join(PROFILES)})", param_hint=option)
    return names


def _intervals_option(text: str) -> tuple[int, dict[int, int]]:
    """``N`` or ``stride:N,stride:N`` -> (default N, per-stride N)."""
    if ":" not in text:
        return _positive_ints(text, "--intervals")[0], {}
    by_stride: dict[int, int] = {}
    for part in text.split(","):
        stride, _, count = part.partition(":")
        values = _positive_ints(f"{stride},{count}", "--intervals")
        if len(values) != 2 or values[1] < 2:
            raise click.BadParameter(f"{part!r}: give stride:N with N >= 2", param_hint="--intervals")
        by_stride[values[0]] = values[1]
    return max(by_stride.values()), by_stride


# --- demo --------------------------------------------------------------------------------------


@cli.command("demo")
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
    run_demo(_devnet(data_dir, **options), stop_at_end=down, console=console, serve=dashboard, cast=cast)


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


def _add_node_commands() -> None:
    from ovig_node.api.cli import api
    from ovig_node.node_cli import COMMANDS

    for command in (*COMMANDS, api):
        cli.add_command(command)


_add_node_commands()


def main() -> None:
    try:
        cli()
    except OvigError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
