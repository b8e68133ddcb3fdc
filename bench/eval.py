"""Evaluation of the boundary against every attack, per workload and stride (`ovig eval` for each).

    .venv/bin/python bench/eval.py [--workloads vision,diffusion,language] [--full-language]

Tiny configs: strides 1, 10 and 100, with enough intervals for the issue's false-positive sample:
12 intervals spread over the run calibrate, and every other one is an honest held-out interval
(108 at s = 1 and 10, 32 at s = 100), judged on replays under profiles calibration never used.
Writes bench/results/eval_<workload>_tiny/{eval.json, eval.md, margin_vs_stride.png, honest_vs_stride.png}.
The language workload's s = 100 runs as a second process beside s = 1 and 10 (its 4,400-step runs are
most of the work; two processes keep both cores busy) and writes bench/results/eval_language_tiny_s100/.

``--full-language`` evaluates the full language config (MiniLM-L6, batch 16 x 64 tokens) at s = 1 and
10 with as many intervals as about half an hour of these two CPU cores allows, and the attacks that
need no long sweep; the same command runs unchanged on a GPU with more intervals. Writes
bench/results/eval_language_full/.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
TINY = ["--tiny", "--intervals", "1:120,10:120,100:44", "--calibration-positions", "12"]
# (strides, output suffix) per process
STRIDE_GROUPS = {"language": [("1,10", ""), ("100", "_s100")]}
ALL_STRIDES = [("1,10,100", "")]
FULL_LANGUAGE = ["--full", "--strides", "1,10", "--intervals", "1:40,10:16", "--calibration-positions", "4",
                 "--batch-size", "16", "--attacks", "micro_batch_drop,data_perturbation,lr_tamper,low_precision,"
                 "stale_gradient,skip_steps,optimizer_tamper,interpolated_endpoint,row_tamper"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="vision,diffusion,language")
    parser.add_argument("--full-language", action="store_true", help="the full language config instead")
    args = parser.parse_args()
    ovig = Path(sys.executable).parent / "ovig"
    if args.full_language:
        runs = [[("language", "full", FULL_LANGUAGE)]]
    else:
        runs = [[(workload, f"tiny{suffix}", [*TINY, "--strides", strides])
                 for strides, suffix in STRIDE_GROUPS.get(workload, ALL_STRIDES)]
                for workload in args.workloads.split(",")]  # fmt: skip
    for group in runs:  # workloads one after another, a workload's processes side by side
        processes = [subprocess.Popen([str(ovig), "eval", "--workload", workload, *options,
                                       "--out", str(RESULTS / f"eval_{workload}_{size}")])
                     for workload, size, options in group]  # fmt: skip
        if any([process.wait() != 0 for process in processes]):  # a list: wait for every one
            sys.exit("an evaluation failed")


if __name__ == "__main__":
    main()
