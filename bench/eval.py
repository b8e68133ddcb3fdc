"""Evaluation of the boundary against every attack, per workload and stride (`ovig eval` for each).

    .venv/bin/python bench/eval.py [--workloads vision,diffusion] [--intervals 12]

Writes bench/results/eval_<workload>_tiny/{eval.json, eval.md, margin_vs_stride.png, honest_vs_stride.png}.
The language workload is left out by default: each of its tiny evidence files is 76 MB and each replay
spends seconds building the model, so its evaluation takes hours here; `bench/compare_cost.py` measures
what verification costs on it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
STRIDES = {"vision": "1,10,100", "diffusion": "1,10,100", "language": "1,10"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="vision,diffusion")
    parser.add_argument("--intervals", default="12", help="intervals per task: every other one calibrates")
    args = parser.parse_args()
    ovig = Path(sys.executable).parent / "ovig"
    for workload in args.workloads.split(","):
        out = RESULTS / f"eval_{workload}_tiny"
        argv = [str(ovig), "eval", "--workload", workload, "--tiny", "--strides", STRIDES[workload],
                "--intervals", args.intervals, "--out", str(out)]  # fmt: skip
        subprocess.run(argv, check=True)


if __name__ == "__main__":
    main()
