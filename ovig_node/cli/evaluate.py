"""`ovig eval`: the evaluation of the boundary (or of exact mode) against every attack, and the side evaluations
(leave one family out, layer one alone); tables, JSON and plots."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from ovig_node.cli.console import console
from ovig_node.cli.options import alpha_option, config_option, floor_option, warmup_option
from ovig_node.node_cli import FOLDER, SHOW_DEFAULTS

# What `ovig eval --mode` evaluates: the main evaluation, leave one family out, layer one alone, exact mode.
MODES = ("main", "families", "layer-one", "exact")


@click.command("eval", context_settings=SHOW_DEFAULTS)
@click.option("--workload", default="vision", help="vision, language, diffusion or llm.")
@click.option("--tiny/--full", default=True, help="The tiny config, or the full one (hours).")
@click.option("--strides", default="1,10,100", help="Comma-separated strides.")
@click.option(
    "--intervals",
    default="12",
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
    help="Train the honest run again on another profile, the floor for the attacks' effects.",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="main",
    help="What to evaluate. main: the boundary against every attack (eval.json, eval.md, plots). families: "
    "honest runs only (no attacks, no run on other hardware); for each family of execution profiles (thread "
    "split, micro-batches, accumulation, each kind of kernel), calibrate without it and judge under it "
    "(families.json, families.md). layer-one: the statistics judge (layer one) alone: each attack's score "
    "against the owner's reference run on other hardware, the honest run's, ROC area and F1 per attack "
    "(layer_one.json, layer_one.md). exact: the main evaluation in exact mode: the task's spec gets numerics "
    "(threshold measured under the calibration profiles), every verdict is a bit-for-bit replay; the "
    "boundary-aware attacker aims at the boundary of the same task in boundary mode.",
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
    mode: str,
    config: dict[str, Any],
    warmup_steps: int | None,
    out_dir: Path,
    work_dir: Path | None,
    jobs: int,
) -> None:
    """Attack success (ASR) and false positives (FPR) per stride and attack, the detection frontier, a signal
    ablation and what each attack did to the model; table, JSON and plots."""
    # The modes' own limits first: they need no import (torch takes seconds to load).
    if mode in ("families", "exact") and claim_profile != "reference":
        raise click.BadParameter(
            f"{mode} judges one-process claims (the reference profile): leave --claim-profile out", param_hint="--mode"
        )
    if mode == "exact" and calibration_seeds:
        raise click.BadParameter(
            "exact judges claims against their own run's calibration: leave --calibration-seed out", param_hint="--mode"
        )

    import json
    import shutil
    import tempfile

    from ovig_node.training.execution import get_profile
    from ovig_node.verify.evaluate import AttackCase, EvalSettings, attacks_for, evaluate, units
    from ovig_node.verify.plots import plot_honest, plot_margins
    from ovig_node.verify.summary import markdown, summarise

    stride_list = tuple(_positive_ints(strides, "--strides"))
    default, by_stride = _intervals_option(intervals)
    exact = mode == "exact"
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
    if mode == "families":
        _families(settings, out_dir)
        return
    if mode == "layer-one":
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
    """``ovig eval --mode families``: every family of execution profiles held out in turn."""
    from ovig_node.verify import families

    _side_evaluation(
        out_dir,
        "families",
        families.units(settings),
        families.markdown,
        lambda tmp, log: families.evaluate_families(settings, tmp, log=log),
    )


def _layer_one(settings: Any, out_dir: Path) -> None:
    """``ovig eval --mode layer-one``: the statistics judge alone."""
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
