"""Benchmark: the cost of keeping evidence while training, and what sampling lets a provider delete.

For one workload: plain training (no evidence) against training that writes E_k every s steps, for
each stride s; the wall-time ratio, the evidence bytes written, and the bytes that must be kept after
sampling at phi in {0.05, 0.1} (start and end of each sampled interval, and the deliverable)
relative to keeping evidence of every step. Prints a table and writes
bench/results/train_overhead_<workload>.json.

Every run is timed through bench/harness.py, ``--repeats`` times (default 3), one repeat of each configuration in
turn: the overhead is the ratio of the median CPU seconds (the machine's other work does not move it; the
wall-clock ratio is recorded beside it), with each repeat's record, and a row with a disturbed repeat says so
(harness.py's guard).

    .venv/bin/python bench/train_overhead.py --workload vision --tiny --steps 400 --strides 1,10,100
    .venv/bin/python bench/train_overhead.py --workload llm --steps 200 --strides 10,100   # SmolLM2 with LoRA
    .venv/bin/python bench/train_overhead.py --workload vision --tiny --profile ddp2        # against plain DDP
    .venv/bin/python bench/train_overhead.py --workload vision --tiny --profile fsdp2 --repeats 3  # the gather's cost
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from harness import Timed, summarise
from rich.console import Console
from rich.table import Table

from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.sampling import draw_positions
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import TrainRun, train
from ovig_node.training.taskfiles import prepare_task

RESULTS = Path(__file__).parent / "results"
PHIS = (0.05, 0.1)
INTERVALS_PER_BATCH = 200  # large enough that q = ceil(phi * m) tells phi = 0.05 from 0.1
SEEDS = 20  # sampling draws averaged per (stride, phi)
MEASURE = "median CPU seconds (bench/harness.py)"  # what "overhead" compares; results before it: fastest wall


def kept_files(layout: Layout, sample_bps: int, rng: random.Random) -> int:
    """Evidence files a provider keeps: E_k and E_{k-1} of every sampled k, and the deliverable."""
    keep = {layout.intervals - 1}
    for j in range(layout.batches):
        ks = list(layout.batch_intervals(j))
        for position in draw_positions(rng.randbytes(32), len(ks), sample_bps, is_last=layout.is_last_batch(j)):
            keep.update({ks[position], ks[position] - 1} - {-1})  # E_{-1} is the initial checkpoint
    return len(keep)


def training_run(args: argparse.Namespace, folder: Path, stride: int, name: str) -> TrainRun:
    """The task at ``stride`` (plain training: its cost does not depend on the stride) and its run, in
    ``folder``/``name``."""
    sizes = {"total_steps": args.steps, "stride": stride, "batch_size": args.batch_size}
    prepared = prepare_task(
        args.workload, folder / name / "task", tiny=args.tiny, intervals_per_batch=INTERVALS_PER_BATCH, **sizes
    )
    paths = (prepared.dataset_path, prepared.init_path, folder / name / "run")
    return TrainRun(prepared.spec, prepared.spec_hash, *paths, get_profile(args.profile))


def time_interleaved(runs: dict[str, tuple[TrainRun, bool]], repeats: int, console: Console) -> dict[str, Any]:
    """Each of ``runs`` (name -> (run, evidence)) from scratch ``repeats`` times, through the harness, one repeat
    of every run in turn: a machine that drifts (another tenant, a clock) moves every configuration alike instead
    of the one timed while it drifted."""
    records: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    for repeat in range(repeats):
        for name, (run, evidence) in runs.items():
            with console.status(f"repeat {repeat + 1} of {repeats}: {name} ..."):
                shutil.rmtree(run.out_dir, ignore_errors=True)
                with Timed() as timing:
                    train(run, evidence=evidence)
                records[name].append(timing.record)
    return {name: summarise(found) for name, found in records.items()}


def row_of(
    args: argparse.Namespace, run: TrainRun, stride: int, plain: dict[str, Any], ran: dict[str, Any]
) -> dict[str, Any]:
    """One stride's row: overhead against plain training, evidence written, and what sampling lets go."""
    files = sorted((run.out_dir / "evidence").glob("E_*.safetensors"))
    file_bytes = sum(f.stat().st_size for f in files)
    per_file = file_bytes / len(files)
    every_step = per_file * args.steps  # what s = 1 with no sampling would keep
    row: dict[str, Any] = {
        "stride": stride,
        "intervals": len(files),
        "plain_s": plain["wall"]["median"],
        "evidence_s": ran["wall"]["median"],
        "overhead": ran["cpu"]["median"] / plain["cpu"]["median"] - 1.0,
        "overhead_wall": ran["wall"]["median"] / plain["wall"]["median"] - 1.0,
        "disturbed": ran["disturbed"] or plain["disturbed"],
        "evidence_bytes": file_bytes,
        "timed": ran,
    }
    rng = random.Random(stride)
    for phi in PHIS:
        kept = sum(kept_files(run.spec.layout, int(phi * 10_000), rng) for _ in range(SEEDS)) / SEEDS
        row[f"kept_bytes_phi_{phi}"] = kept * per_file
        row[f"reduction_phi_{phi}"] = every_step / (kept * per_file)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="vision")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=None, help="examples per step [the workload's]")
    parser.add_argument("--strides", default="1,10,100", help="comma-separated strides")
    parser.add_argument("--profile", default="reference", help="execution profile (ddp2: against plain DDP)")
    parser.add_argument("--repeats", type=int, default=3, help="time each run this many times: medians and spread")
    args = parser.parse_args()
    strides = [int(s) for s in args.strides.split(",") if int(s) <= args.steps]
    console = Console(width=150)
    with tempfile.TemporaryDirectory() as tmp:
        plain_run = training_run(args, Path(tmp), args.steps, "plain")
        train(plain_run, evidence=False, stop_at=min(20, args.steps))  # imports, allocator and thread-pool warm-up
        runs = {"plain": (plain_run, False)} | {
            f"s={s}": (training_run(args, Path(tmp), s, f"s{s}"), True) for s in strides
        }
        ran = time_interleaved(runs, args.repeats, console)
        plain = ran["plain"]
        rows = [row_of(args, runs[f"s={s}"][0], s, plain, ran[f"s={s}"]) for s in strides]

    table = Table(
        title=f"evidence overhead: {args.workload}{' (tiny)' if args.tiny else ''}, {args.steps} steps, "
        f"profile {args.profile}"
    )
    for column in (
        "s",
        "K",
        "plain s",
        "with evidence s",
        "overhead (CPU)",
        "overhead (wall)",
        "evidence MB",
        *(f"kept MB phi={p}" for p in PHIS),
        *(f"reduction phi={p}" for p in PHIS),
    ):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            str(r["stride"]),
            str(r["intervals"]),
            f"{r['plain_s']:.2f}",
            f"{r['evidence_s']:.2f}",
            f"{100 * r['overhead']:.1f}%" + (" DISTURBED" if r["disturbed"] else ""),
            f"{100 * r['overhead_wall']:.1f}%",
            f"{r['evidence_bytes'] / 1e6:.1f}",
            *(f"{r[f'kept_bytes_phi_{p}'] / 1e6:.2f}" for p in PHIS),
            *(f"{r[f'reduction_phi_{p}']:.0f}x" for p in PHIS),
        )
    console.print(table)
    machine = {"cpus": os.cpu_count(), "torch": torch.__version__, "platform": platform.platform()}
    profile = "" if args.profile == "reference" else f"_{args.profile}"
    out = RESULTS / f"train_overhead_{args.workload}{'_tiny' if args.tiny else ''}{profile}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"args": vars(args), "machine": machine, "measure": MEASURE, "order": "interleaved", "plain": plain}
    record["results"] = rows
    out.write_text(json.dumps(record, indent=2) + "\n")
    console.print(f"written {out}")


if __name__ == "__main__":
    main()
