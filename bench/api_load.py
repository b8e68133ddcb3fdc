"""Benchmark: latency of the owner API with 1,000 tasks indexed, under a loopback load generator.

The history is real, not synthesised rows: a private devnet (anvil + IPFS) gets the protocol deployed
and 1,000 tasks posted by the owner account; the provider accepts every other one, commits the first
batch of every fourth, and the owner cancels every tenth untaken one (transactions signed locally and
sent back to back). `ovig api serve` then runs as its own process, indexes those events through the
EventScanner, and answers 8 threads of keep-alive httpx clients (8 requests in flight) on the same two cores.

Scenarios: the task list (the dashboard's first page, and filtered pages at random offsets) and a task
page (one task's detail, its interval grid, its timeline). Prints a table and writes
bench/results/api_load.json.

    .venv/bin/python bench/api_load.py [--tasks 1000] [--requests 2000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil
from rich.console import Console
from rich.table import Table
from web3 import Web3

from ovig_node.chain.accounts import devnet_account
from ovig_node.chain.contracts import Protocol
from ovig_node.chain.rpc import connect
from ovig_node.devnet.manager import Devnet, DevnetConfig
from ovig_node.devnet.processes import free_port
from ovig_node.nodes.deploying import DeployTarget, deploy

RESULTS = Path(__file__).parent / "results" / "api_load.json"
ETHER = 10**18
OWNER, PROVIDER = 0, 1
TARGET_P95_MS = 50.0


def send_all(w3: Web3, index: int, calls: list[tuple[Any, int]]) -> None:
    """Sign ``calls`` (function, value) with consecutive nonces and send them without waiting in between;
    then wait for the last receipt (anvil mines them in order)."""
    account = devnet_account(index)
    nonce = w3.eth.get_transaction_count(account.address)
    chain_id = w3.eth.chain_id
    fee = 2 * int(w3.eth.get_block("latest")["baseFeePerGas"]) + 10**9
    last = None
    for offset, (fn, value) in enumerate(calls):
        # Gas, fees and nonce given: building the transaction asks the node nothing.
        tx = fn.build_transaction(
            {
                "from": account.address,
                "value": value,
                "gas": 1_000_000,
                "nonce": nonce + offset,
                "chainId": chain_id,
                "maxFeePerGas": fee,
                "maxPriorityFeePerGas": 10**9,
            }
        )
        last = w3.eth.send_raw_transaction(account.sign_transaction(tx).raw_transaction)
    if last is not None:
        receipt = w3.eth.wait_for_transaction_receipt(last, timeout=300)
        assert receipt["status"] == 1, "the last transaction of the batch reverted"


def build_history(w3: Web3, protocol: Protocol, tasks: int) -> dict[str, int]:
    f = protocol.tasks.functions
    first = int(f.taskCount().call()) + 1
    deadline = int(w3.eth.get_block("latest")["timestamp"]) + 7 * 24 * 3600
    ids = range(first, first + tasks)
    # N = 1,000 steps of stride 10 in batches of 10: each task has 100 intervals in 10 batches.
    post = f.postTask(
        b"\x11" * 32,
        "QmSpec",
        b"\x22" * 32,
        1000,
        10,
        10,
        2500,
        (3 * ETHER, ETHER // 10, ETHER // 100),
        600,
        (600, 600, 600),
        deadline,
    )
    send_all(w3, OWNER, [(post, 2 * ETHER + ETHER // 100)] * tasks)
    accepted = [t for t in ids if t % 2 == 0]
    send_all(w3, PROVIDER, [(f.acceptTask(t), 3 * ETHER) for t in accepted])
    committed = [t for t in accepted if t % 4 == 0]
    send_all(w3, PROVIDER, [(f.commitBatch(t, 0, b"\x33" * 32, f"QmManifest{t}"), 0) for t in committed])
    cancelled = [t for t in ids if t % 10 == 1]
    send_all(w3, OWNER, [(f.cancel(t), 0) for t in cancelled])
    return {
        "posted": tasks,
        "accepted": len(accepted),
        "committed_batch_0": len(committed),
        "cancelled": len(cancelled),
        "block": int(w3.eth.block_number),
    }


def wait_indexed(url: str, block: int, timeout: float = 300) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            health = httpx.get(f"{url}/health", timeout=5).json()
            if (health.get("indexed_block") or -1) >= block:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the API did not index block {block} within {timeout:.0f} s")


def load(
    url: str, paths: Callable[[random.Random], str], *, requests: int, concurrency: int, server: psutil.Process
) -> dict[str, Any]:
    """``requests`` GETs of ``paths(rng)`` from ``concurrency`` threads, each with its own keep-alive httpx
    client (threads of sync clients cost this machine half the CPU per request of one AsyncClient, and
    the generator shares the two cores with the server); latency of each, in ms."""
    rng = random.Random(7)
    todo = [paths(rng) for _ in range(requests)]
    lock = threading.Lock()
    latencies: list[float] = []
    errors = 0

    def worker() -> None:
        nonlocal errors
        with httpx.Client(base_url=url, timeout=30) as client:
            while True:
                with lock:
                    if not todo:
                        return
                    path = todo.pop()
                started = time.perf_counter()
                response = client.get(path)
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(elapsed)
                    errors += response.status_code != 200

    cpu = server.cpu_times()
    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    used = server.cpu_times()
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "requests": requests,
        "errors": errors,
        "p50_ms": cuts[49],
        "p95_ms": cuts[94],
        "p99_ms": cuts[98],
        "max_ms": max(latencies),
        "req_per_s": requests / seconds,
        "server_cpu_ms_per_request": (used.user + used.system - cpu.user - cpu.system) / requests * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=2000, help="per scenario")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    console = Console(width=110)
    folder = Path(tempfile.mkdtemp(prefix="ovig-api-load-"))
    net = Devnet(DevnetConfig(data_dir=folder / "devnet", rpc_port=free_port(), ipfs_api_port=free_port()))
    server = None
    try:
        with console.status("devnet and contracts ..."):
            net.up()
            deploy(DeployTarget(use_devnet=True, devnet_dir=net.data_dir))
            info = net.info()
            w3 = connect(info.rpc_url)
        with console.status(f"posting {args.tasks} tasks ..."):
            started = time.monotonic()
            history = build_history(w3, Protocol.at(w3, info.contracts), args.tasks)
            history["seconds"] = time.monotonic() - started
        console.print(f"history: {history}")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [
            sys.executable,
            "-m",
            "ovig_node",
            "api",
            "serve",
            "--devnet",
            "--devnet-dir",
            str(net.data_dir),
            "--home",
            str(folder / "api"),
            "--port",
            str(port),
        ]
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=(folder / "api.log").open("wb"))
        with console.status("indexing ..."):
            index_seconds = wait_indexed(url, history["block"])
        total = httpx.get(f"{url}/api/tasks", params={"limit": 1}).json()["total"]
        assert total >= args.tasks, f"only {total} tasks indexed"
        console.print(f"indexed {total} tasks in {index_seconds:.1f} s")
        statuses = ("posted", "accepted", "committed", "cancelled")
        scenarios: dict[str, Callable[[random.Random], str]] = {
            "task list (first page, 50)": lambda rng: "/api/tasks?limit=50",
            "task list (filtered, random page)": lambda rng: (
                f"/api/tasks?limit=50&status={rng.choice(statuses)}&offset={rng.randrange(0, 200)}"
            ),
            "task page: detail": lambda rng: f"/api/tasks/{rng.randint(1, total)}",
            "task page: interval grid": lambda rng: f"/api/tasks/{rng.randint(1, total)}/intervals",
            "task page: timeline": lambda rng: f"/api/tasks/{rng.randint(1, total)}/timeline",
        }
        for path in ("/api/tasks", "/api/tasks/1", "/api/tasks/1/intervals"):  # warm-up
            httpx.get(url + path)
        load_before = os.getloadavg()
        results = {}
        for name, paths in scenarios.items():
            with console.status(f"{name} ..."):
                results[name] = load(
                    url, paths, requests=args.requests, concurrency=args.concurrency, server=psutil.Process(server.pid)
                )
        table = Table(title=f"owner API, {total} tasks indexed, {args.concurrency} requests in flight (loopback)")
        for column in ("scenario", "p50 ms", "p95 ms", "p99 ms", "req/s", "server CPU ms/req", "errors"):
            table.add_column(column, justify="left" if column == "scenario" else "right")
        for name, r in results.items():
            colour = "green" if r["p95_ms"] <= TARGET_P95_MS else "red"
            table.add_row(
                name,
                f"{r['p50_ms']:.1f}",
                f"[{colour}]{r['p95_ms']:.1f}[/]",
                f"{r['p99_ms']:.1f}",
                f"{r['req_per_s']:.0f}",
                f"{r['server_cpu_ms_per_request']:.2f}",
                str(r["errors"]),
            )
        console.print(table)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(
            json.dumps(
                {
                    "history": {**history, "source": "posted on a private devnet (anvil), indexed by `ovig api serve`"},
                    "indexed_tasks": total,
                    "index_seconds": index_seconds,
                    "concurrency": args.concurrency,
                    "target_p95_ms": TARGET_P95_MS,
                    "scenarios": results,
                    "machine": {
                        "cpus": os.cpu_count(),
                        "python": platform.python_version(),
                        "loadavg_before": load_before,
                        "loadavg_after": os.getloadavg(),
                    },
                },
                indent=2,
            )
            + "\n"
        )
        console.print(f"written {RESULTS}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(30)
        net.down()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
