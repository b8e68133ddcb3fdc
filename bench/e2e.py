"""Benchmark: the whole system's overhead per stride, next to OVIG's 1.143x (s = 2000, Qwen3-4B).

    overhead = (training with evidence + commitments + one watcher's replays of the sampled
                intervals) / plain training

For one workload and each stride s: plain training and training with evidence (real runs), the batch
roots of the real digests, a sample drawn per batch as the contract draws it (phi = sampleBps/10000),
and a replay-and-judge of every sampled interval under another execution profile (a watcher on other
hardware) against a boundary calibrated for the task (the owner's one-off cost, reported apart). The
gas of a whole task (post, accept, commit every batch, draw, open, finalize, withdraw) comes from
running it on a fresh anvil with the production contracts. Bytes: evidence written, kept after the
retention rule, and transmitted (the pinned files and the manifests).

    .venv/bin/python bench/e2e.py --steps 400 --strides 1,10,100 --sample-bps 1000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from gas import ACCOUNTS, Bench, Shape, deploy  # bench/ is not a package

from ovig_node.chain.accounts import DEVNET_MNEMONIC
from ovig_node.chain.rpc import connect
from ovig_node.devnet import tools
from ovig_node.devnet.manager import anvil_health
from ovig_node.devnet.processes import free_port, start_process, terminate
from ovig_node.protocol.sampling import draw_positions
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import TrainRun, batch_roots, evidence_path, train
from ovig_node.training.taskfiles import PreparedTask, prepare_task
from ovig_node.verify.boundary import BoundaryProfile, calibrate
from ovig_node.verify.report import verify_interval

RESULTS = Path(__file__).parent / "results"
OVIG_PUBLISHED = {"overhead": 1.143, "stride": 2000, "model": "Qwen3-4B", "hardware": "GPUs"}
WATCHER_PROFILE = "micro4"  # the watcher's "hardware" differs from the provider's (reference)


def sampled_intervals(prepared: PreparedTask, sample_bps: int, rng: random.Random) -> list[int]:
    layout = prepared.spec.layout
    sampled = []
    for j in range(layout.batches):
        ks = list(layout.batch_intervals(j))
        positions = draw_positions(rng.randbytes(32), len(ks), sample_bps, is_last=layout.is_last_batch(j))
        sampled += [ks[p] for p in positions]
    return sorted(sampled)


def task_gas(url: str, folder: Path, shape: Shape) -> int:
    """Gas of one whole honest task, every transaction of it, on a fresh deployment."""
    w3 = connect(url)
    tasks, committee = deploy(w3, folder)
    bench = Bench(w3, tasks, committee)
    first = w3.eth.block_number + 1
    ev = bench.run_to_opened(shape)
    bench.finalize(ev)
    bench.send(tasks.functions.withdraw(), 1)  # the provider (test account 1) pulls reward and bond
    total = 0
    for number in range(first, w3.eth.block_number + 1):
        for tx in w3.eth.get_block(number)["transactions"]:
            total += w3.eth.get_transaction_receipt(tx)["gasUsed"]
    return total


def measure_stride(args: argparse.Namespace, stride: int, folder: Path, plain: float, url: str) -> dict[str, Any]:
    prepared = prepare_task("vision", folder / f"task-{stride}", tiny=True, total_steps=args.steps, stride=stride,
                            intervals_per_batch=args.per_batch, sample_bps=args.sample_bps)  # fmt: skip
    run = TrainRun(prepared.spec, prepared.spec_hash, prepared.dataset_path, prepared.init_path,
                   folder / f"run-{stride}", get_profile("reference"))  # fmt: skip
    result = train(run)
    started = time.monotonic()
    batch_roots(run, result.digests)
    commit_seconds = time.monotonic() - started

    started = time.monotonic()
    boundary: BoundaryProfile = calibrate(prepared, claim_profile=get_profile("reference"),
                                          replay_profiles=[get_profile("micro2")], positions=range(1), alpha=3.0,
                                          work_dir=folder / f"calibration-{stride}")  # fmt: skip
    calibrate_seconds = time.monotonic() - started

    sampled = sampled_intervals(prepared, args.sample_bps, random.Random(stride))
    replay_seconds, failed = 0.0, 0
    for k in sampled:
        started = time.monotonic()  # reading the files, replaying, comparing: the watcher's whole work
        report = verify_interval(prepared, run.out_dir, k, boundary, profile=get_profile(WATCHER_PROFILE))
        replay_seconds += time.monotonic() - started
        failed += report["verdict"] != "valid"

    layout = prepared.spec.layout
    sizes = {k: evidence_path(run.out_dir, k).stat().st_size for k in range(layout.intervals)}
    kept = {layout.intervals - 1} | set(sampled) | {k - 1 for k in sampled if k > 0}
    manifests = 120 * layout.intervals + 200 * len(kept)  # JSON rows of batch and opening manifests
    shape = Shape(args.steps, stride, args.per_batch, args.sample_bps)
    return {
        "stride": stride,
        "intervals": layout.intervals,
        "batches": layout.batches,
        "sampled": len(sampled),
        "phi": args.sample_bps / 10_000,
        "plain_s": plain,
        "evidence_s": result.seconds,
        "commit_s": commit_seconds,
        "replay_s": replay_seconds,
        "calibrate_s": calibrate_seconds,
        "overhead": (result.seconds + commit_seconds + replay_seconds) / plain,
        "honest_replays_failed": failed,
        "gas_per_task": task_gas(url, folder / f"chain-{stride}", shape),
        "evidence_bytes": sum(sizes.values()),
        "kept_bytes": sum(sizes[k] for k in kept),
        "transmitted_bytes": sum(sizes[k] for k in kept) + manifests,
    }


def plain_seconds(args: argparse.Namespace, folder: Path) -> float:
    """Training with no evidence (the stride does not matter), after a warm-up run."""
    prepared = prepare_task("vision", folder / "plain", tiny=True, total_steps=args.steps, stride=args.steps)
    run = TrainRun(prepared.spec, prepared.spec_hash, prepared.dataset_path, prepared.init_path,
                   folder / "plain-run", get_profile("reference"))  # fmt: skip
    train(run, evidence=False)
    return min(train(run, evidence=False).seconds for _ in range(2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--strides", default="1,10,100")
    parser.add_argument("--per-batch", type=int, default=100, help="Intervals per batch m.")
    parser.add_argument("--sample-bps", type=int, default=1000, help="Share of each batch opened (phi x 10000).")
    args = parser.parse_args()
    console = Console(width=160)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [str(tools.anvil()), "--port", str(port), "--mnemonic", DEVNET_MNEMONIC,
                "--accounts", str(ACCOUNTS), "--balance", "1000000"]  # fmt: skip
        anvil = start_process("anvil", argv, log=folder / "anvil.log", ready=lambda: anvil_health(url)[0], timeout=60)
        try:
            plain = plain_seconds(args, folder)
            for stride in (int(s) for s in args.strides.split(",")):
                with console.status(f"s = {stride}: training, calibrating, replaying the sample, gas ..."):
                    rows.append(measure_stride(args, stride, folder, plain, url))
        finally:
            terminate(anvil)
    table = Table(title=f"end-to-end overhead, vision (tiny), N = {args.steps}, m = {args.per_batch}, "
                        f"phi = {args.sample_bps / 10_000:g} (OVIG: {OVIG_PUBLISHED['overhead']}x at "
                        f"s = {OVIG_PUBLISHED['stride']} on {OVIG_PUBLISHED['model']})")  # fmt: skip
    columns = ("s", "K", "sampled", "plain s", "evidence s", "replays s", "overhead", "gas / task",
               "evidence MB", "kept MB", "sent MB", "owner calibration s")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(str(r["stride"]), str(r["intervals"]), str(r["sampled"]), f"{r['plain_s']:.2f}",
                      f"{r['evidence_s']:.2f}", f"{r['replay_s']:.2f}", f"{r['overhead']:.2f}x",
                      f"{r['gas_per_task']:,}", f"{r['evidence_bytes'] / 1e6:.1f}", f"{r['kept_bytes'] / 1e6:.2f}",
                      f"{r['transmitted_bytes'] / 1e6:.2f}", f"{r['calibrate_s']:.1f}")  # fmt: skip
    console.print(table)
    machine = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}
    out = RESULTS / "e2e_vision_tiny.json"
    out.write_text(json.dumps({"machine": machine, "args": vars(args), "ovig_published": OVIG_PUBLISHED,
                               "rows": rows}, indent=2) + "\n")  # fmt: skip
    console.print(f"written {out}")


if __name__ == "__main__":
    main()
