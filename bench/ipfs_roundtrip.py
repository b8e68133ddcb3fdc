"""Benchmark: add and verified read-back through the Kubo RPC client, on the embedded IPFS node.

For each file size: seconds and MB/s to add (streamed upload, CIDv0 and CIDv1 raw leaves), seconds
and MB/s to read back with every block hash-checked, the client's peak Python allocation, and the
daemon's peak resident memory. Prints a table and writes bench/results/ipfs_roundtrip.json.

    .venv/bin/python bench/ipfs_roundtrip.py [--sizes 1,16,64,256]   (MiB)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

from ovig_node import tools
from ovig_node.devnet.manager import ipfs_health
from ovig_node.devnet.processes import free_port, start_process, terminate
from ovig_node.storage.ipfs import AddOptions, IpfsClient

RESULTS = Path(__file__).parent / "results" / "ipfs_roundtrip.json"


def write_file(path: Path, mib: int) -> None:
    with path.open("wb") as out:
        for _ in range(mib):
            out.write(os.urandom(16) * 65536)  # 1 MiB, distinct per MiB


class RssSampler(threading.Thread):
    """Samples a process's resident memory every 50 ms; ``peak`` in bytes."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.peak = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.05)


def measure(client: IpfsClient, pid: int, path: Path, cid_version: int) -> dict[str, float]:
    """Time add and verified read-back; then read again under tracemalloc for the memory figure
    (tracemalloc slows allocation-heavy code, so it never runs while the clock does)."""
    size = path.stat().st_size
    copy = path.with_suffix(".copy")
    sampler = RssSampler(pid)
    sampler.start()
    started = time.perf_counter()
    cid = client.add_file(path, options=AddOptions(cid_version=cid_version)).cid
    added = time.perf_counter()
    client.get_file(cid, copy)
    read = time.perf_counter()
    sampler.running = False
    sampler.join()
    tracemalloc.start()
    client.get_file(cid, copy)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    copy.unlink()
    client.unpin(cid)
    return {
        "mib": size / 2**20,
        "cid_version": cid_version,
        "add_s": added - started,
        "add_mb_s": size / 1e6 / (added - started),
        "read_s": read - added,
        "read_mb_s": size / 1e6 / (read - added),
        "client_peak_mib": peak / 2**20,
        "daemon_peak_rss_mib": sampler.peak / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,16,64,256", help="file sizes in MiB, comma-separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    console = Console()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "ipfs"
        port = free_port()
        argv = tools.ipfsd_argv(repo, api_port=port)
        url = f"http://127.0.0.1:{port}"
        record = start_process("ipfs", argv, log=Path(tmp) / "ipfs.log", ready=lambda: ipfs_health(url)[0], timeout=60)
        try:
            with IpfsClient(url, fetch_timeout=120) as client:
                for mib in sizes:
                    path = Path(tmp) / f"{mib}.bin"
                    write_file(path, mib)
                    for version in (0, 1):
                        with console.status(f"{mib} MiB, CIDv{version} ..."):
                            rows.append(measure(client, record.pid, path, version))
                    path.unlink()
        finally:
            terminate(record)

    table = Table(title="IPFS round trip (embedded node, loopback)")
    for column in ("MiB", "CID", "add s", "add MB/s", "read s", "read MB/s", "client peak MiB", "daemon RSS MiB"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            f"{r['mib']:.0f}",
            f"v{r['cid_version']}",
            f"{r['add_s']:.2f}",
            f"{r['add_mb_s']:.1f}",
            f"{r['read_s']:.2f}",
            f"{r['read_mb_s']:.1f}",
            f"{r['client_peak_mib']:.2f}",
            f"{r['daemon_peak_rss_mib']:.0f}",
        )
    console.print(table)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine, "results": rows}, indent=2) + "\n")
    console.print(f"written {RESULTS}")


if __name__ == "__main__":
    main()
