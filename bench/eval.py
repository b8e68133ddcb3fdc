"""Evaluation of the boundary against every attack, per workload and stride (`ovig eval` for each).

    .venv/bin/python bench/eval.py [--workloads vision,diffusion,language]

Writes bench/results/eval_<workload>_tiny/{eval.json, eval.md, margin_vs_stride.png, honest_vs_stride.png}.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
# Strides per workload: the language workload's evidence is ~76 MB a file even in its tiny config.
STRIDES = {"vision": "5,20,50", "diffusion": "5,20,50", "language": "5,20"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="vision,diffusion,language")
    args = parser.parse_args()
    ovig = Path(sys.executable).parent / "ovig"
    for workload in args.workloads.split(","):
        out = RESULTS / f"eval_{workload}_tiny"
        argv = [str(ovig), "eval", "--workload", workload, "--tiny", "--strides", STRIDES[workload], "--out", str(out)]
        subprocess.run(argv, check=True)


if __name__ == "__main__":
    main()
