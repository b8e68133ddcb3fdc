"""Helpers shared by the tests: real IPFS nodes on free ports, test data, running `ovig`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ovig_node.devnet import tools
from ovig_node.devnet.processes import ProcessRecord, start_process, terminate
from ovig_node.storage.ipfs import IpfsClient


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
        argv = tools.ipfsd_argv(self.repo, api_port=self.api_port, swarm_port=self.swarm_port, peers=self.peers)
        self.record = start_process("ipfs", argv, log=self.log, ready=self._ready, timeout=60)
        return self

    def stop(self) -> None:
        if self.record is not None:
            terminate(self.record)
            self.record = None

    def client(self, **options: float) -> IpfsClient:
        return IpfsClient(self.url, **options)

    def peer_multiaddr(self) -> str:
        with self.client() as client:
            return client.id()["Addresses"][0]

    def _ready(self) -> bool:
        try:
            return httpx.post(f"{self.url}/api/v0/id", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False


def pattern(size: int) -> bytes:
    """Bytes i % 251: no repeating 256 KiB chunk, so every leaf of a large file differs."""
    return bytes(i % 251 for i in range(size))


def run_ovig(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run the `ovig` command as a user would (a separate process)."""
    ovig = Path(sys.executable).parent / "ovig"
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([str(ovig), *args], capture_output=True, text=True, env=full_env, timeout=timeout)
