"""Helpers shared by the tests: real IPFS nodes on free ports, a deployed devnet, test data, running `ovig`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovig_node import tools
from ovig_node.devnet.errors import StartFailed
from ovig_node.devnet.manager import Devnet, DevnetConfig, ipfs_health
from ovig_node.devnet.processes import ProcessRecord, free_port, start_process, terminate
from ovig_node.nodes.deploying import DeployTarget, deploy
from ovig_node.storage.ipfs import IpfsClient

# Exact numerics every one-process CPU profile replays the tiny CNN bit for bit under (tests/test_exact.py
# shows it; tests/test_nodes_judging.py posts a task with them): thresholds in float32 ulps, and a gradient below 2^-12
# of the step's largest rounds on the grid of the float32 ulp there
EXACT_THRESHOLD = {"forward": "1e-6", "backward": "1e-6", "gradient": "1e-5", "update": "1e-6"}
EXACT_NUMERICS = {"mode": "exact", "threshold": EXACT_THRESHOLD, "max_log_entries": 200_000, "gradient_floor": 12}


@dataclass
class IpfsNode:
    """One embedded IPFS daemon with its own repository folder and ports."""

    repo: Path
    api_port: int = field(default_factory=free_port)
    swarm_port: int = field(default_factory=free_port)
    peers: tuple[str, ...] = ()
    record: ProcessRecord | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def log(self) -> Path:
        return self.repo.parent / f"{self.repo.name}.log"

    def start(self) -> IpfsNode:
        # A free port can be taken between free_port() and the daemon's bind (the other xdist worker, an
        # outgoing connection's ephemeral port): the daemon says so in one line, and new ports are picked.
        for attempt in range(3):
            argv = tools.ipfsd_argv(self.repo, api_port=self.api_port, swarm_port=self.swarm_port, peers=self.peers)
            try:
                self.record = start_process(
                    "ipfs", argv, log=self.log, ready=lambda: ipfs_health(self.url)[0], timeout=60
                )
                return self
            except StartFailed as exc:
                if "already in use" not in str(exc) or attempt == 2:
                    raise
                self.api_port, self.swarm_port = free_port(), free_port()
        raise AssertionError("unreachable")

    def stop(self) -> None:
        if self.record is not None:
            terminate(self.record)
            self.record = None

    def client(self, **options: float) -> IpfsClient:
        return IpfsClient(self.url, **options)

    def peer_multiaddr(self) -> str:
        with self.client() as client:
            return client.id()["Addresses"][0]


def warp(w3: Any, seconds: int) -> None:
    """Move an anvil's clock ``seconds`` on and mine a block there (the windows are in chain seconds)."""
    w3.provider.make_request("evm_increaseTime", [seconds])
    w3.provider.make_request("evm_mine", [])


def pattern(size: int) -> bytes:
    """Bytes i % 251: no repeating 256 KiB chunk, so every leaf of a large file differs."""
    return bytes(i % 251 for i in range(size))


def run_ovig(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run the `ovig` command as a user would (a separate process)."""
    ovig = Path(sys.executable).parent / "ovig"
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([str(ovig), *args], capture_output=True, text=True, env=full_env, timeout=timeout)


@contextmanager
def deployed_devnet(folder: Path, *, pace: int = 1) -> Iterator[Devnet]:
    """A devnet (anvil and IPFS) on free ports in ``folder/devnet`` with the contracts deployed, the committee's
    clocks ``pace`` times the devnet's; stopped on exit."""
    # Every port fixed: a devnet taken down and up again (an outage) serves its nodes at the same addresses.
    net = Devnet(
        DevnetConfig(
            data_dir=folder / "devnet", rpc_port=free_port(), ipfs_api_port=free_port(), beacon_port=free_port()
        )
    )
    net.up()
    try:
        deploy(DeployTarget(use_devnet=True, devnet_dir=net.data_dir, devnet_pace=pace))
        yield net
    finally:
        net.down()
