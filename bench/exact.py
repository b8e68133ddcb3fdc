"""Benchmark: exact mode on one workload, next to boundary mode (training.exact, verify.exact).

For the workload's tiny config (or its full one, ``--full``): the float64 discrepancy each CPU profile
shows against the reference (what the threshold must absorb) and the threshold calibration picks; one run
trained in boundary mode and the same spec in exact mode, in this process one after the other (the
training-time ratio, and the bytes of E_k against the rounding log's entries and bytes per interval); and
every interval of the exact run replayed under every CPU profile, applying the claim's log: reproduced
bit for bit, or what was wrong; and the same spec trained by data-parallel providers (ddp2, ddp4), each
interval judged by a one-process replay.
Writes bench/results/exact_<workload>_tiny.json (``--full``: exact_<workload>.json) and prints a table.

    .venv/bin/python bench/exact.py --workload vision [--steps 40 --stride 10]
    .venv/bin/python bench/exact.py --workload language --full --steps 20 --batch-size 16 --providers ''
        # to bench/results/exact_language.json (about 90 minutes here, and 13 GB: run nothing large beside it)

A profile whose discrepancy the probe threshold (0.01 ulps) cannot absorb is recorded with its faults and
left out of the threshold (calibrating a spec with it refuses: ``ovig spec new --exact`` says why); its
replays are still judged, and their verdicts say what a watcher on such hardware would see.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from ovig_node.training.evidence import read_evidence
from ovig_node.training.exact import decode_log
from ovig_node.training.execution import PROFILES, get_profile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.taskfiles import attach_numerics, prepare_task
from ovig_node.verify.exact import FLOORS, LOG_SAFETY, gradient_floor_for, measure_discrepancy, threshold_for
from ovig_node.verify.report import replay_and_judge

RESULTS = Path(__file__).parent / "results"
ONE_PROCESS = [p.name for p in PROFILES.values() if p.world_size == 1 and p.device == "cpu"]
DATA_PARALLEL = ("ddp2", "ddp4")  # sharded profiles refuse exact mode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="vision")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--stride", type=int, default=10)
    parser.add_argument("--calibration-steps", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="the workload's full config, not its tiny one")
    parser.add_argument("--batch-size", type=int, help="the workload's by default")
    every = ",".join(ONE_PROCESS)
    parser.add_argument("--profiles", default=every, help="one-process profiles that calibrate and replay")
    parser.add_argument("--providers", default=",".join(DATA_PARALLEL), help="data-parallel providers ('' for none)")
    args = parser.parse_args()
    args.profiles = args.profiles.split(",")
    args.providers = [name for name in args.providers.split(",") if name]
    if args.profiles[0] != "reference" or not set(args.profiles) <= set(ONE_PROCESS):
        parser.error(f"--profiles: reference first, then any of {', '.join(ONE_PROCESS)}")
    if not set(args.providers) <= set(DATA_PARALLEL):
        parser.error(f"--providers: any of {', '.join(DATA_PARALLEL)}")
    console = Console()
    folder = Path(tempfile.mkdtemp(prefix="ovig-exact-"))
    try:
        result = run(args, folder, console)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"exact_{args.workload}{'' if args.full else '_tiny'}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    show(result, console)
    console.print(f"written {out}")


def run(args: argparse.Namespace, folder: Path, console: Console) -> dict[str, object]:
    sizes = {
        "total_steps": args.steps,
        "stride": args.stride,
        "intervals_per_batch": args.steps // args.stride,
        "tiny": not args.full,
        "batch_size": args.batch_size,
    }
    boundary_task = prepare_task(args.workload, folder / "boundary-task", **sizes)
    others = [get_profile(name) for name in args.profiles[1:]]
    console.print(f"measuring the discrepancy of {len(others)} profiles ...")
    discrepancies = measure_discrepancy(boundary_task, get_profile("reference"), others, steps=args.calibration_steps)
    absorbed = [d for d in discrepancies if not d.faults]
    floor, gradient = gradient_floor_for(absorbed)
    threshold = threshold_for(absorbed, gradient)
    exact_task = prepare_task(args.workload, folder / "exact-task", **sizes)
    cap = 2**26  # the largest the spec allows; the cap calibration would write is measured below (LOG_SAFETY x)
    numerics = {"mode": "exact", "threshold": threshold, "max_log_entries": cap}
    exact_task = attach_numerics(exact_task.spec_path, numerics | {"gradient_floor": floor})

    seconds = {}
    for mode, task in (("boundary", boundary_task), ("exact", exact_task)):
        console.print(f"training in {mode} mode ...")
        started = time.monotonic()
        train(
            TrainRun(
                task.spec,
                task.spec_hash,
                task.dataset_path,
                task.init_path,
                folder / f"run-{mode}",
                get_profile("reference"),
            )
        )
        seconds[mode] = time.monotonic() - started

    intervals = exact_task.spec.layout.intervals
    logs = [decode_log(read_evidence(evidence_path(folder / "run-exact", k)).rounding, cap) for k in range(intervals)]
    log_bytes = [
        sum(
            t.numel() * t.element_size()
            for t in read_evidence(evidence_path(folder / "run-exact", k)).rounding.values()
        )
        for k in range(intervals)
    ]
    evidence_bytes = evidence_path(folder / "run-boundary", intervals - 1).stat().st_size

    distributed: dict[str, list[dict[str, object]]] = {}
    for name in args.providers:
        console.print(f"training in exact mode under {name} (gloo ranks), each interval replayed in one process ...")
        run_folder = folder / f"run-{name}"
        train(
            TrainRun(
                exact_task.spec,
                exact_task.spec_hash,
                exact_task.dataset_path,
                exact_task.init_path,
                run_folder,
                get_profile(name),
            )
        )
        distributed[name] = []
        for k in range(intervals):
            start = read_evidence(evidence_path(run_folder, k - 1)) if k else None
            end = read_evidence(evidence_path(run_folder, k))
            judged = replay_and_judge(exact_task, k, start, end, None, profiles=[get_profile("reference")])
            distributed[name].append({"interval": k, "valid": judged.verdict.valid, "cause": judged.verdict.cause})

    replays: dict[str, list[dict[str, object]]] = {}
    for name in args.profiles:
        console.print(f"replaying every interval under {name} ...")
        replays[name] = []
        for k in range(intervals):
            start = read_evidence(evidence_path(folder / "run-exact", k - 1)) if k else None
            end = read_evidence(evidence_path(folder / "run-exact", k))
            judged = replay_and_judge(exact_task, k, start, end, None, profiles=[get_profile(name)])
            replays[name].append(
                {
                    "interval": k,
                    "valid": judged.verdict.valid,
                    "cause": judged.verdict.cause,
                    "detail": judged.verdict.detail[:300],
                }
            )
    return {
        "workload": args.workload,
        "tiny": not args.full,
        "batch_size": exact_task.spec.batch_size,
        "steps": args.steps,
        "stride": args.stride,
        "threshold": threshold,
        "gradient_floor": floor,
        "calibration_steps": args.calibration_steps,
        # the gradient's largest at every value, with no floor (in "largest") and at the chosen floor
        "discrepancies": [
            {
                **{k: v for k, v in d.__dict__.items() if k != "gradient"},
                "gradient_at_floor": d.gradient[FLOORS.index(floor)],
            }
            for d in discrepancies
        ],
        "train_seconds": seconds,
        "time_ratio": seconds["exact"] / seconds["boundary"],
        "log_entries": [len(log) for log in logs],
        "log_bytes": log_bytes,
        "evidence_bytes": evidence_bytes,
        "spec_log_cap": LOG_SAFETY * max(len(log) for log in logs),
        "replays": replays,
        # data-parallel providers' intervals, each judged by a one-process replay; no calibration profile runs
        # ddp4's four-term all-reduce order
        "distributed_claims": distributed,
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "loadavg_after": os.getloadavg()[0],
        },  # above ~1.5: something else ran, the time ratio is off
    }


def show(result: dict[str, object], console: Console) -> None:
    size = "tiny" if result["tiny"] else "full"
    table = Table(
        title=f"exact mode: {result['workload']} {size}, threshold {result['threshold']} ulps, gradient "
        f"floor {result['gradient_floor']}"
    )
    for column in ("profile", "discrepancy (ulps)", "intervals reproduced"):
        table.add_column(column)
    discrepancy = {d["profile"]: d for d in result["discrepancies"]}  # type: ignore[index, union-attr]
    for name, verdicts in result["replays"].items():  # type: ignore[union-attr]
        d = discrepancy.get(name)
        largest = None if d is None else max(d["largest"].values())
        shown = "-" if d is None else f"{largest:.2g}" + (" (beyond the probe)" if d["faults"] else "")
        table.add_row(name, shown, f"{sum(v['valid'] for v in verdicts)}/{len(verdicts)}")
    console.print(table)
    console.print(f"training time exact / boundary: {result['time_ratio']:.2f}x")
    console.print(f"log entries per interval {result['log_entries']}, bytes {result['log_bytes']}")
    console.print(f"E_k in boundary mode: {result['evidence_bytes']} bytes")


if __name__ == "__main__":
    main()
