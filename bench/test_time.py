"""Benchmark: how long the test suite takes, one process against `make test`'s two pytest-xdist workers.

Runs pytest on this checkout with ``--durations=0`` (or reads the output of such a run) and records, under
a label, pytest's own session time, the counts it reports, and the seconds spent in each test file, in
bench/results/test_time.json (other labels are kept). A run it starts also records the CPU seconds of the whole
run (every process it reaped) and of each file (bench/pytest_cpu.py, in every worker), what other work used
meanwhile and the load (bench/harness.py): wall time on two cores is bounded below by CPU seconds / 2, so the
CPU figure says what a faster suite must cut, whatever else the machine was doing.

Guard, fixed before any run: a run with a failed test or an error, or disturbed by other work (harness.py's
rule), is recorded with ``"clean": false`` and printed as NOT A CLEAN RUN.

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
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from harness import Timed

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
    failed = result["counts"].get("failed", 0) + result["counts"].get("error", 0)
    clean = not failed and not result.get("disturbed", False)
    data.setdefault("runs", {})[label] = {"pytest_args": pytest_args, "clean": clean, **result}
    RESULTS.write_text(json.dumps(data, indent=2) + "\n")
    cpu = f", {result['cpu_seconds']:.0f} CPU s" if "cpu_seconds" in result else ""
    verdict = "" if clean else " (NOT A CLEAN RUN)"
    print(f"{label}: {result['session_seconds']:.0f} s{cpu}, {result['counts']}{verdict}")
    print(f"written {RESULTS}")


def run_pytest(pytest_args: list[str], log: Path) -> dict[str, Any]:
    """Run pytest with the CPU plugin; its parsed output plus CPU seconds and load. Its whole output goes to
    ``log``: a failure in a suite of a thousand tests needs more than its name."""
    with tempfile.TemporaryDirectory(prefix="ovig-test-cpu-") as folder:
        bench = str(Path(__file__).resolve().parent)
        env = {**os.environ, "OVIG_TEST_CPU_DIR": folder}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [bench, os.environ.get("PYTHONPATH")]))
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_cpu", "--durations=0"]
        with Timed() as timed:
            done = subprocess.run([*argv, *pytest_args], cwd=REPO, env=env, capture_output=True, text=True, check=False)
        files: Counter[str] = Counter()
        for worker in Path(folder).glob("*.json"):
            files.update(json.loads(worker.read_text())["files"])
    log.write_text(done.stdout + done.stderr)
    print("\n".join(line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))))
    print(f"pytest's output: {log}")
    return {
        **parse(done.stdout),
        "cpu_seconds": round(timed.record["cpu_s"], 1),
        "other_cores": timed.record["other_cores"],
        "load": timed.record["load"],
        "disturbed": timed.record["disturbed"],
        "file_cpu_seconds": {name: round(seconds, 1) for name, seconds in files.most_common()},
    }


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
        log = Path(tempfile.gettempdir()) / f"test_time-{args.label.replace(' ', '-')}.log"
        record(args.label, run_pytest(args.pytest_args, log), args.pytest_args)
    else:
        record(args.label, parse(args.log.read_text()), args.pytest_args.split())


if __name__ == "__main__":
    main()
