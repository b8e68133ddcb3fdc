"""Shared fixtures: real IPFS nodes (tools/ipfsd on Helia) and a real devnet, on free loopback ports.

Everything runs from this checkout's toolchain (`make setup`); nothing is mocked.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Ape (contract tests, compile) must find our wasm solc and native anvil, whoever runs pytest.
os.environ.setdefault("SOLCX_BINARY_PATH", str(REPO / ".tools" / "solcx"))
_TOOL_DIRS = [REPO / ".tools" / "bin", REPO / "node_modules" / ".bin", Path(sys.executable).parent]
os.environ["PATH"] = os.pathsep.join([*map(str, _TOOL_DIRS), os.environ.get("PATH", "")])

from ovig_node.storage.ipfs import IpfsClient  # noqa: E402
from support import IpfsNode  # noqa: E402


@pytest.fixture
def spawn_ipfs(tmp_path: Path) -> Iterator[Callable[..., IpfsNode]]:
    """Factory: start an IPFS node in a fresh folder; every node is stopped after the test."""
    nodes: list[IpfsNode] = []

    def spawn(name: str = "ipfs", **options: object) -> IpfsNode:
        node = IpfsNode(repo=tmp_path / name, **options)  # type: ignore[arg-type]
        nodes.append(node)
        return node.start()

    yield spawn
    for node in nodes:
        node.stop()


@pytest.fixture(scope="session")
def ipfs_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IpfsNode]:
    """One IPFS node shared by the tests that only add and read."""
    node = IpfsNode(repo=tmp_path_factory.mktemp("shared-ipfs") / "repo").start()
    yield node
    node.stop()


@pytest.fixture
def ipfs(ipfs_node: IpfsNode) -> Iterator[IpfsClient]:
    with ipfs_node.client(fetch_timeout=10) as client:
        yield client
