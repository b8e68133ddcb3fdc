"""`ovig train`: a training run in a terminal, with a progress bar and a report of what to commit."""

from __future__ import annotations

import errno
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from ovig_node.attacks import Attack
from ovig_node.errors import OvigError
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import StepInfo, TrainRun, completed_intervals, train
from ovig_node.training.taskfiles import open_task


class TrainingFailed(OvigError, RuntimeError):
    """Training stopped on an outside cause (disk full, ...); complete evidence is kept."""


def run_training(
    spec_path: Path,
    out_dir: Path,
    *,
    profile_name: str,
    task: int,
    data_dir: Path | None,
    console: Console,
    attack: Attack | None = None,
) -> None:
    prepared = open_task(spec_path, data_dir=data_dir)
    profile = get_profile(profile_name)
    paths = (prepared.dataset_path, prepared.init_path, out_dir)
    run = TrainRun(prepared.spec, prepared.spec_hash, *paths, profile, task, attack)
    if attack is not None:
        console.print(f"[bold red]attack[/] {attack.name} in intervals {sorted(attack.intervals)}")
    layout = prepared.spec.layout
    done_before = completed_intervals(run)
    first = layout.end_step(len(done_before) - 1) if done_before else 0
    if done_before:
        console.print(f"resuming after interval {len(done_before) - 1} (step {first})")
    columns = (
        TextColumn("[bold]train"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.4f}"),
        TextColumn("{task.fields[rate]:.1f} steps/s"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("train", total=layout.total_steps, completed=first, loss=float("nan"), rate=0.0)

        def on_step(info: StepInfo) -> None:
            speed = progress.tasks[bar].speed or 0.0
            progress.update(bar, completed=info.step + 1, loss=info.loss, rate=speed)

        try:
            result = train(run, on_step=on_step)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise TrainingFailed(
                    f"disk full while writing to {out_dir}; complete evidence is kept, "
                    "free space and run the same command to resume"
                ) from None
            raise
    table = Table(title=f"evidence of {spec_path} (profile {profile.name}, task {task})")
    for column in ("k", "end step"):
        table.add_column(column, justify="right")
    table.add_column("digest (sha256)", overflow="fold")
    for k, digest in enumerate(result.digests):
        table.add_row(str(k), str(layout.end_step(k)), digest)
    console.print(table)
    console.print(f"K = {layout.intervals} intervals in {layout.batches} batches; {result.seconds:.1f}s")
    for j, root in enumerate(result.batch_roots):
        console.print(f"batch {j} root 0x{root.hex()}")
