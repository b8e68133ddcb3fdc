"""`ovig train`, `ovig calibrate` and `ovig verify`: one task by hand. Train a spec, writing its evidence (optionally
cheating, for evaluation); measure honest drift across execution profiles into the boundary profile (the owner's
step); replay one interval and judge its claimed evidence, as a watcher would."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from ovig_node.cli.console import console
from ovig_node.cli.options import alpha_option, floor_option
from ovig_node.node_cli import EXISTING_FOLDER, FILE, FOLDER, SHOW_DEFAULTS
from ovig_node.verify.defaults import CALIBRATION


@click.command("train")
@click.option("--spec", "spec_path", type=FILE, required=True, help="The task's spec.")
@click.option("--out", "out_dir", type=FOLDER, required=True, help="Evidence folder; a run found there is resumed.")
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


def _number_or_text(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


@click.command("calibrate", context_settings=SHOW_DEFAULTS)
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
    help="Execution profiles of the honest replays (at least 3): the default covers "
    "every family but threads, which watchers confirm under.",
)
@click.option("--claim-profile", default="reference", help="Profile of the honest claims.")
@click.option(
    "--intervals",
    type=int,
    default=CALIBRATION.positions,
    help="How many intervals to calibrate on.",
)
@click.option(
    "--spread/--prefix",
    default=True,
    help="Intervals spread from the first to the last (needs honest claims up to the last), or the first N.",
)
@click.option(
    "--rel-tail",
    type=float,
    default=1e-3,
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


@click.command("verify", context_settings=SHOW_DEFAULTS)
@click.option("--spec", "spec_path", type=FILE, required=True, help="The task's spec.")
@click.option(
    "--evidence",
    "evidence_dir",
    type=EXISTING_FOLDER,
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
    help="Execution profile of the replay; a comma-separated list confirms a rejection under the next ones.",
)
@click.option(
    "--task",
    "task_id",
    type=int,
    default=0,
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
