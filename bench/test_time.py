"""Benchmark: how long the test suite takes, one process against `make test`'s two pytest-xdist workers.

Runs pytest on this checkout with ``--durations=0`` (or reads the output of such a run) and records, under
a label, pytest's own session time, the counts it reports, and the seconds spent in each test file, in
bench/results/test_time.json (other labels are kept).

    .venv/bin/python bench/test_time.py run --label two-workers -- -n 2 --dist loadfile --no-loadscope-reorder
    .venv/bin/python bench/test_time.py run --label one-process
    .venv/bin/python bench/test_time.py read LOG --label one-process   # a run whose output was saved

Run it on an otherwise idle machine: the figure is wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "test_time.json"
SUMMARY = re.compile(r"^=*\s*(?P<counts>\d+ \w+.*?) in (?P<seconds>[\d.]+)s")
DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?:setup|call|teardown)\s+(?P<file>[^:\s]+)::")
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped)")


def parse(output: str) -> dict[str, Any]:
    """Session seconds, counts and per-file seconds from pytest's output (``--durations=0``)."""
    summary = None
    files: Counter[str] = Counter()
    for line in output.splitlines():
        if match := DURATION.match(line):
            files[match["file"]] += float(match["seconds"])
        if match := SUMMARY.match(line):
            summary = match
    if summary is None:
        raise SystemExit("no pytest summary line (`N passed ... in Xs`) in the output")
    counts = {
        kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in COUNT.findall(summary["counts"])
    }
    return {
        "session_seconds": float(summary["seconds"]),
        "counts": counts,
        "file_seconds": {name: round(seconds, 1) for name, seconds in files.most_common()},
    }


def record(label: str, result: dict[str, Any], pytest_args: list[str]) -> None:
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data["machine"] = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}
    data.setdefault("runs", {})[label] = {"pytest_args": pytest_args, **result}
    RESULTS.write_text(json.dumps(data, indent=2) + "\n")
    failed = result["counts"].get("failed", 0) + result["counts"].get("error", 0)
    print(f"{label}: {result['session_seconds']:.0f} s, {result['counts']}" + (" (NOT A CLEAN RUN)" if failed else ""))
    print(f"written {RESULTS}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run pytest and record it")
    run.add_argument("--label", required=True)
    run.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments")
    read = commands.add_parser("read", help="record a saved run's output")
    read.add_argument("log", type=Path)
    read.add_argument("--label", required=True)
    read.add_argument("--pytest-args", default="", help="the arguments that run was given, for the record")
    args = parser.parse_args()
    if args.command == "run":
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0", *args.pytest_args]
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
        print("\n".join(line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))))
        record(args.label, parse(done.stdout), args.pytest_args)
    else:
        record(args.label, parse(args.log.read_text()), args.pytest_args.split())


if __name__ == "__main__":
    main()
