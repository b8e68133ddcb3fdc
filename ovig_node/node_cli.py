"""Commands of the running system: `ovig trainer|watcher|auditor|keeper` and `ovig owner ...`.

Every node connects the same way: ``--devnet`` with a test account (``--account N``), or ``--rpc``,
``--deployments``, ``--ipfs`` and an encrypted ``--keystore`` with its password in a file or an
environment variable. Its journal, event index and files live in ``--home``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal, Inexact, localcontext
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ovig_node.chain.accounts import DEVNET_ACCOUNTS
from ovig_node.chain.contracts import Protocol
from ovig_node.devnet.manager import default_data_dir
from ovig_node.nodes.context import DISK_BUDGET_GIB, REPLAY_PROFILES, Connection, NodeContext, open_node

console = Console(highlight=False)
# Paths the commands take: a file they read must be there (a usage error naming the option otherwise).
EXISTING_FILE = click.Path(dir_okay=False, exists=True, path_type=Path)
EXISTING_FOLDER = click.Path(file_okay=False, exists=True, path_type=Path)
FILE = click.Path(dir_okay=False, path_type=Path)
FOLDER = click.Path(file_okay=False, path_type=Path)
# A command that shows every default in its --help ("[default: ...]") says so once, not on each option.
SHOW_DEFAULTS: dict[str, Any] = {"show_default": True}


def connection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--devnet-dir",
            type=FOLDER,
            envvar="OVIG_DEVNET_DIR",
            help="Devnet data folder [env OVIG_DEVNET_DIR; default ~/.ovig/devnet].",
        ),
        click.option(
            "--account",
            "account_index",
            type=click.IntRange(0, DEVNET_ACCOUNTS - 1),
            help=f"Devnet test account index, 0..{DEVNET_ACCOUNTS - 1} (devnet only).",
        ),
        click.option("--rpc", "rpc_url", help="JSON-RPC URL (not the devnet)."),
        click.option("--deployments", type=FILE, help="Deployments file."),
        click.option("--ipfs", "ipfs_url", help="IPFS (Kubo RPC) API URL."),
        click.option(
            "--keystore",
            type=EXISTING_FILE,
            help="Encrypted keystore (JSON) of the account to sign with (not the devnet).",
        ),
        click.option(
            "--password-file",
            type=FILE,
            help="File holding the keystore's password (never the password on the command line).",
        ),
        click.option("--password-env", metavar="VAR", help="Environment variable holding the keystore's password."),
        click.option("--home", type=FOLDER, help="Node state folder."),
        click.option(
            "--beacon",
            "beacon_urls",
            multiple=True,
            metavar="URL",
            help="drand HTTP relay, repeatable (not the devnet) [the network's relays in deploy/drand.json].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _open(
    role: str, options: dict[str, Any], *, reader: bool = False, admit: Callable[[Protocol, str], None] | None = None
) -> NodeContext:
    """The node's context; a ``reader`` (a command that only reads) needs no account and, without one, keeps
    its event index in one shared ``nodes/reader`` folder. ``admit`` may refuse the account before anything is
    written (see ``open_node``)."""
    home: Path | None = options.pop("home")
    connection = Connection(use_devnet=options["rpc_url"] is None, **options)
    if home is None:
        base = (connection.devnet_dir or default_data_dir()) if connection.use_devnet else Path.home() / ".ovig"
        signer = connection.account_index if connection.use_devnet else connection.keystore
        name = "reader" if reader and signer is None else f"{role}-{signer if connection.use_devnet else 'key'}"
        home = base / "nodes" / name
    return open_node(role, home, connection, console=console, reader=reader, admit=admit)


def _amount(value: str, option: str) -> int:
    """An amount of ETH given as a decimal, in wei (exactly: a fraction of a wei is refused, never rounded); a
    usage error naming ``option`` otherwise."""
    try:
        with localcontext() as exact:
            exact.prec, exact.traps[Inexact] = 100, True
            wei = Decimal(value).scaleb(18)
            whole = wei.is_finite() and wei == wei.to_integral_value()
    except ArithmeticError:  # not a number, or not exact
        whole = False
    if not whole or not 0 <= wei < 2**128:
        raise click.BadParameter(f"{value!r} is not an amount of ETH (a decimal such as 0.1)", param_hint=option)
    return int(wei)


def _appeal_budget(ctx: click.Context, param: click.Parameter, value: str) -> dict[str, int]:
    """``--appeal-budget``: a multiple of the smallest challenger bond ("30x") or ETH ("0.5"), as the
    keyword arguments of ``nodes.appealing.AppealBudget`` (built after the heavy imports)."""
    if value.endswith("x"):
        if not value[:-1].isdigit():
            raise click.BadParameter(
                f"{value!r} is not a multiple of the smallest challenger bond (such as 30x)", ctx, param
            )
        return {"multiple": int(value[:-1])}
    return {"wei": _amount(value, "--appeal-budget")}


appeal_budget_option = click.option(
    "--appeal-budget",
    default="30x",
    callback=_appeal_budget,
    help="The most to put up in appeals on one dispute against rounds its own work contradicts (a watcher's or "
    "auditor's replay, a trainer's training): a multiple "
    "of the smallest challenger bond, the unit of appeal bonds (30x reaches the round a fifth of sybils "
    "capture with odds below one in a million) or ETH; 0 never appeals.",
)


# --- nodes ---------------------------------------------------------------------------------------


class NodeCommand(click.Command):
    """A node: `ovig trainer --task 1`. The spelling of earlier releases, `ovig trainer run --task 1`, still works
    for one release (a leading `run` is dropped) and is shown nowhere."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, args[1:] if args[:1] == ["run"] else args)


@click.command("trainer", cls=NodeCommand)
@click.option("--task", "task_id", type=int, required=True, help="The task to accept (or carry on) and train.")
@click.option(
    "--profile",
    default="reference",
    show_default=True,
    help="Execution profile (ddp2, ddp4: data-parallel ranks; fsdp2, fsdp4: sharded with FSDP2).",
)
@click.option("--attack", help="Cheat (for demonstrations): a built-in attack or package.module:callable.")
@click.option("--attack-intervals", default="", help="Comma-separated intervals the attack fakes.")
@click.option(
    "--attack-param",
    "attack_params",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter of the attack (repeatable), e.g. keep=0.5.",
)
@click.option("--no-keeper", is_flag=True, help="Do not perform keeper duties.")
@appeal_budget_option
@connection_options
def trainer(
    task_id: int,
    profile: str,
    attack: str | None,
    attack_intervals: str,
    attack_params: tuple[str, ...],
    no_keeper: bool,
    appeal_budget: dict[str, int],
    **options: Any,
) -> None:
    """The provider: accept the task, train it with evidence, commit, open, get paid; until it ends. Safe to kill
    and run again."""
    from ovig_node.attacks import load_attack
    from ovig_node.nodes.appealing import AppealBudget
    from ovig_node.nodes.keeper import Keeper
    from ovig_node.nodes.trainer import TrainerNode
    from ovig_node.training import distributed
    from ovig_node.training.execution import get_profile

    cheat = None
    if attack:
        intervals = frozenset(int(k) for k in attack_intervals.split(",") if k)
        params = {key: float(value) for key, value in (p.split("=", 1) for p in attack_params)}
        cheat = load_attack(attack, intervals=intervals, **params)
    distributed.refuse_sharded_attack(get_profile(profile), cheat)  # before anything touches the chain
    ctx = _open("trainer", options)
    keeper = None if no_keeper else Keeper(ctx, only_tasks=frozenset({task_id}))
    budget = AppealBudget(**appeal_budget)
    status = TrainerNode(ctx, task_id, profile_name=profile, attack=cheat, keeper=keeper, appeal_budget=budget).run()
    console.print(f"task {task_id} ended: {status.name.lower()}")


def _replay_profiles(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Known one-process profiles: a replay never runs data-parallel."""
    from ovig_node.training.execution import PROFILES

    for name in value.split(","):
        if name not in PROFILES or PROFILES[name].world_size != 1:
            raise click.BadParameter(f"{name!r} is not a one-process execution profile a replay can run under")
    return value


def checksummed_addresses(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> frozenset[str]:
    """A repeatable ADDRESS option's values, checksummed (a click callback; a bad one is a usage error)."""
    from ovig_node.chain.accounts import checksum_addresses

    try:
        return checksum_addresses(values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


replay_profile_option = click.option(
    "--profile",
    default=REPLAY_PROFILES,
    show_default=True,
    callback=_replay_profiles,
    help="Replay profiles 'a,b': replay under a; a rejection stands only if b's replay rejects too.",
)


@click.command("watcher", cls=NodeCommand, context_settings=SHOW_DEFAULTS)
@click.option("--task", "task_ids", type=int, multiple=True, help="Watch only these tasks [all].")
@replay_profile_option
@click.option("--workers", type=click.IntRange(1, 64), default=1, help="Parallel replays.")
@click.option("--for", "seconds", type=float, help="Stop after this many seconds [run until Ctrl-C].")
@click.option(
    "--reference",
    "reference_paths",
    type=EXISTING_FILE,
    multiple=True,
    help="An owner's reference run (`ovig calibrate --reference`): tasks of its spec are "
    "screened by their statistics, and their anomalous unopened intervals requested (repeatable).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="Layer one's score above which an unopened interval is requested [statistics_judge.THRESHOLD].",
)
@click.option(
    "--trust",
    "trusted",
    multiple=True,
    callback=checksummed_addresses,
    help="A partner watcher's address: intervals it attested are left to it, and this watcher replays "
    "those fewest partners attested first (repeatable) [none: replay every opened interval].",
)
@click.option(
    "--enough",
    type=click.IntRange(min=1),
    default=1,
    help="How many trusted partners' attestations leave an interval to them.",
)
@click.option(
    "--attest/--no-attest",
    default=True,
    help="Announce an attestation (a transaction) of every interval judged sound.",
)
@click.option(
    "--max-bond",
    default=None,
    callback=lambda ctx, param, value: None if value is None else _amount(value, "--max-bond"),
    help="The largest challenger bond to put up, in ETH: a task asking more is judged and attested, never "
    "challenged nor requested (what a watcher may lose to a bait or a junk dispute is the task's bond) [any].",
)
@click.option(
    "--disk-budget",
    type=click.FloatRange(min=0),
    default=DISK_BUDGET_GIB,
    help="GiB of task files (owners' files, evidence) kept beyond the judgements under way: over it, the files of "
    "live tasks used longest ago are deleted and fetched again when needed.",
)
@appeal_budget_option
@connection_options
def watcher(
    task_ids: tuple[int, ...],
    profile: str,
    workers: int,
    seconds: float | None,
    reference_paths: tuple[Path, ...],
    threshold: float | None,
    trusted: frozenset[str],
    enough: int,
    attest: bool,
    appeal_budget: dict[str, int],
    max_bond: int | None,
    disk_budget: float,
    **options: Any,
) -> None:
    """Replay opened intervals, challenge those outside the boundary, attest the sound ones; until interrupted."""
    import time

    from ovig_node.nodes.appealing import AppealBudget
    from ovig_node.nodes.keeper import Keeper
    from ovig_node.nodes.watcher import WatcherNode
    from ovig_node.verify.statistics_judge import THRESHOLD, NotAReference, Reference

    references = {}
    for path in reference_paths:
        try:
            reference = Reference.from_json(path.read_bytes())
        except NotAReference as exc:
            raise click.BadParameter(f"{path}: {exc}", param_hint="--reference") from None
        references[reference.training_hash] = reference

    def not_an_auditor(protocol: Protocol, address: str) -> None:
        # A challenge or a request makes its account interested in the whole task, and an interested auditor is never
        # drawn for it: honest auditors who watched with their own keys left every panel of a fake they challenged to
        # the rest, sybils among them (review 25 of v3)
        if protocol.view(protocol.committee, "getAuditor", address).registeredBlock:
            raise click.BadParameter(
                f"{address} is a registered auditor: a challenge from it would take it off every panel of the task "
                "it challenged; watch with another account",
                param_hint="--account" if options.get("account_index") is not None else "--keystore",
            )

    ctx = _open("watcher", options, admit=not_an_auditor)
    only = frozenset(task_ids) or None
    node = WatcherNode(
        ctx,
        profile_name=profile,
        only_tasks=only,
        keeper=Keeper(ctx, only_tasks=only),
        workers=workers,
        references=references,
        threshold=threshold or THRESHOLD,
        attest=attest,
        trusted=trusted,
        enough=enough,
        appeal_budget=AppealBudget(**appeal_budget),
        max_bond=max_bond,
        disk_budget=int(disk_budget * 2**30),
    )
    node.run(until=None if seconds is None else time.monotonic() + seconds)


@click.command("auditor", cls=NodeCommand, context_settings=SHOW_DEFAULTS)
@replay_profile_option
@click.option("--for", "seconds", type=float, help="Stop after this many seconds [run until Ctrl-C].")
@appeal_budget_option
@click.option(
    "--poll",
    "poll_seconds",
    type=click.FloatRange(0.1, 600),
    default=1.0,
    help="Seconds between passes: each reads its panels and keeper duties from the chain.",
)
@connection_options
def auditor(
    profile: str, seconds: float | None, appeal_budget: dict[str, int], poll_seconds: float, **options: Any
) -> None:
    """A staked committee member: register (if needed) and answer every panel it is drawn for; until
    interrupted."""
    import time

    from ovig_node.nodes.appealing import AppealBudget
    from ovig_node.nodes.auditor import AuditorNode
    from ovig_node.nodes.keeper import Keeper

    ctx = _open("auditor", options)
    budget = AppealBudget(**appeal_budget)
    node = AuditorNode(ctx, profile_name=profile, keeper=Keeper(ctx), appeal_budget=budget, poll_seconds=poll_seconds)
    node.run(until=None if seconds is None else time.monotonic() + seconds)


@click.command("keeper", cls=NodeCommand)
@click.option("--for", "seconds", type=float, help="Stop after this many seconds [run until Ctrl-C].")
@connection_options
def keeper(seconds: float | None, **options: Any) -> None:
    """Call the protocol's due transitions anyone may call (drand rounds, seeds, slashes, panels, resolutions,
    finalization); every other node does too."""
    import time

    from ovig_node.nodes.keeper import Keeper
    from ovig_node.nodes.looping import keep_running

    ctx = _open("keeper", options)
    end = None if seconds is None else time.monotonic() + seconds
    # Its only work is the duties: the node loop runs them every second and rides out outages.
    keep_running(ctx, lambda: False, keeper=Keeper(ctx), poll_seconds=1.0, until=end)


# --- owner ---------------------------------------------------------------------------------------


@click.group()
def owner() -> None:
    """Post tasks, follow them, withdraw."""


@owner.command("post-task", context_settings=SHOW_DEFAULTS)
@click.option("--spec", "spec_path", type=EXISTING_FILE, required=True, help="The task's spec, its boundary named.")
@click.option("--boundary", "boundary_path", type=EXISTING_FILE, help="The boundary the spec names (not for exact).")
@click.option("--reward", required=True, help="Reward in ETH (escrowed now).")
@click.option("--provider-bond", required=True, help="Provider bond in ETH.")
@click.option("--challenger-bond", required=True, help="Challenger bond in ETH.")
@click.option(
    "--replay-seconds",
    type=int,
    default=None,
    help="Slowest honest replay of an interval [twice the boundary's slowest; exact: required].",
)
@click.option(
    "--windows",
    default="3600,7200,1800",
    help="Opening, challenge and challenge-reveal windows in seconds.",
)
@click.option(
    "--deadline",
    "deadline_in",
    type=int,
    default=7 * 24 * 3600,
    help="Seconds from now to commit every batch.",
)
@connection_options
def owner_post(
    spec_path: Path,
    boundary_path: Path | None,
    reward: str,
    provider_bond: str,
    challenger_bond: str,
    replay_seconds: int | None,
    windows: str,
    deadline_in: int,
    **options: Any,
) -> None:
    """Pin the spec, dataset, initial checkpoint and boundary (an exact spec has none), and post the task."""
    amounts = {
        name: _amount(value, name)
        for name, value in (
            ("--reward", reward),
            ("--provider-bond", provider_bond),
            ("--challenger-bond", challenger_bond),
        )
    }
    try:
        opening, challenge, reveal = (int(w) for w in windows.split(","))
        if min(opening, challenge, reveal) <= 0:
            raise ValueError("a window of no time")
    except ValueError:
        raise click.BadParameter(
            f"{windows!r}: three whole seconds, opening,challenge,reveal (e.g. 90,90,30)", param_hint="--windows"
        ) from None
    from ovig_node.nodes.owner import Terms
    from ovig_node.nodes.posting import post_task  # the options checked first: this loads torch

    terms = Terms(
        amounts["--reward"],
        amounts["--provider-bond"],
        amounts["--challenger-bond"],
        opening,
        challenge,
        reveal,
        deadline_in,
        replay_seconds,
    )
    task = post_task(_open("owner", options), spec_path, boundary_path, terms)
    console.print(f"task {task}")


@owner.command("status")
@click.argument("task_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="The whole report as one JSON object, for scripts.")
@connection_options
def owner_status(task_id: int, as_json: bool, **options: Any) -> None:
    """Batches, samples, openings, disputes, votes and payouts of a task. Anyone may read it: no account
    is needed."""
    from ovig_node.nodes.owner import task_status

    report = task_status(_open("owner", options, reader=True), task_id)
    if as_json:
        click.echo(json.dumps(_status_document(report), indent=2))
        return
    _print_status(report)


def _status_document(report: Any) -> dict[str, Any]:
    """``owner status --json``: amounts in wei as strings (no float rounds them)."""
    terms = report.terms
    return {
        "task": report.task,
        "status": report.status.name.lower(),
        "owner": report.owner,
        "provider": report.provider,
        "reward_wei": str(terms.reward),
        "provider_bond_wei": str(terms.providerBond),
        "challenger_bond_wei": str(terms.challengerBond),
        "batches": report.batches,
        "attested_sound": {str(k): sorted(w for w, a in by.items() if a.sound) for k, by in report.attested.items()},
        "disputes": report.disputes,
        "payouts": [{"account": c["account"], "amount_wei": str(c["amount"]), "for": c["for"]} for c in report.credits],
    }


def _print_status(report: Any) -> None:
    from rich.markup import escape

    console.print(
        f"[bold]task {report.task}[/]: {report.status.name.lower()}; owner {report.owner}, "
        f"provider {report.provider}; reward {report.terms.reward / 1e18:g} ETH"
    )
    batches = Table(title="batches")
    for column in ("j", "status", "sampled", "opening manifest", "attested sound (interval: keys, any)"):
        batches.add_column(column)
    sound = {k: sorted(w for w, a in by.items() if a.sound) for k, by in report.attested.items()}
    for b in report.batches:
        attested = " ".join(
            f"{k}:{len(sound[k])}" for k in sorted(sound) if k // report.terms.intervalsPerBatch == b["j"]
        )
        batches.add_row(str(b["j"]), b["status"], ",".join(map(str, b["sampled"])), b["opening"], attested)
    console.print(batches)
    if by_watcher := {w for ws in sound.values() for w in ws}:
        watchers = Table(
            title="watchers' verified attestations (signatures checked; who holds each key is yours to judge)"
        )
        for column in ("watcher", "intervals", "profiles"):
            watchers.add_column(column)
        for w in sorted(by_watcher):
            mine = [by[w] for by in report.attested.values() if w in by and by[w].sound]
            profiles = sorted({a.attestation.profile for a in mine})
            watchers.add_row(
                w,
                ",".join(str(a.attestation.k) for a in sorted(mine, key=lambda a: a.attestation.k)),
                escape("; ".join(profiles)),
            )
        console.print(watchers)
    for d in report.disputes:
        panel = Table(
            title=f"dispute {d['dispute']}: interval {d['k']}, {d['reason']}; {d['status']}, verdict "
            f"{d['verdict']}, round {d['round']}"
        )
        panel.add_column("panelist (current run)")
        panel.add_column("ballot")
        for a, vote in d["votes"].items():
            panel.add_row(a, "committed or silent" if vote == "none" else vote)
        console.print(panel)
    credits = Table(title="payouts (credits to withdraw)")
    for column in ("account", "ETH", "for"):
        credits.add_column(column, justify="right" if column == "ETH" else "left")
    for c in report.credits:
        credits.add_row(c["account"], f"{c['amount'] / 1e18:.6f}", c["for"])
    console.print(credits)


@owner.command("cancel")
@click.argument("task_id", type=int)
@connection_options
def owner_cancel(task_id: int, **options: Any) -> None:
    """Cancel a task of yours nobody has accepted yet: its reward is credited back (then `ovig owner
    withdraw`)."""
    from ovig_node.nodes.owner import cancel_task

    credited = cancel_task(_open("owner", options), task_id)
    console.print(f"task {task_id} cancelled; {credited / 1e18:g} ETH credited back (ovig owner withdraw)")


@owner.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per task, for scripts.")
@connection_options
def owner_list(as_json: bool, **options: Any) -> None:
    """Your tasks, oldest first, with their status now."""
    from ovig_node.nodes.owner import my_tasks

    tasks = my_tasks(_open("owner", options))
    if as_json:
        for t in tasks:
            click.echo(
                json.dumps(
                    {
                        "task": t.task,
                        "status": t.status.name.lower(),
                        "provider": t.provider,
                        "reward_wei": str(t.reward),
                    }
                )
            )
        return
    table = Table(title="your tasks")
    for column in ("task", "status", "provider", "reward (ETH)"):
        table.add_column(column)
    for t in tasks:
        accepted = t.provider != "0x0000000000000000000000000000000000000000"
        table.add_row(str(t.task), t.status.name.lower(), t.provider if accepted else "-", f"{t.reward / 1e18:g}")
    console.print(table)


@owner.command("fetch")
@click.argument("task_id", type=int)
@click.option(
    "--out",
    "out",
    type=FOLDER,
    required=True,
    help="An empty or new folder for the model, its tokenizer and provenance.json.",
)
@click.option("--merge", is_flag=True, help="LoRA: merge the adapter into the base (one model folder).")
@click.option("--unverified", is_flag=True, help="Take the model of a task that did not finalize anyway.")
@connection_options
def owner_fetch(task_id: int, out: Path, merge: bool, unverified: bool, **options: Any) -> None:
    """The trained model of a finalized task, checked against the chain, in the format your tools load (llm:
    a PEFT adapter folder and its base, or with --merge one Hugging Face model folder)."""
    if out.exists() and any(out.iterdir()):  # before the node opens and torch loads
        raise click.BadParameter(f"{out} is not empty", param_hint="--out")
    from ovig_node.nodes.deliverable import fetch_deliverable

    done = fetch_deliverable(_open("owner", options), task_id, out, merge=merge, unverified=unverified)
    console.print(f"task {task_id}: {done.exported.kind} written to {out} (provenance.json says what was checked)")
    console.print(f"load it with: {done.exported.loads_with}", soft_wrap=True)


@owner.command("withdraw")
@connection_options
def owner_withdraw(**options: Any) -> None:
    """Withdraw the owner's credits (refunds, compensation)."""
    from ovig_node.nodes.node_state import NodeState
    from ovig_node.nodes.payouts import withdraw_credits

    ctx = _open("owner", options)
    paid = withdraw_credits(ctx, NodeState(ctx.home / "owner.json"))
    console.print(f"withdrew {paid / 1e18:g} ETH")


COMMANDS = (trainer, watcher, auditor, keeper, owner)
