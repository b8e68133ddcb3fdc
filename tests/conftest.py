"""Shared fixtures: real IPFS nodes (tools/ipfsd on Helia) and a real devnet, on free loopback ports.

Everything runs from this checkout's toolchain (`make setup`); nothing is mocked.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
# Ape (contract tests, compile) must find our wasm solc and native anvil, whoever runs pytest.
os.environ.setdefault("SOLCX_BINARY_PATH", str(REPO / ".tools" / "solcx"))
_TOOL_DIRS = [REPO / ".tools" / "bin", REPO / "node_modules" / ".bin", Path(sys.executable).parent]
os.environ["PATH"] = os.pathsep.join([*map(str, _TOOL_DIRS), os.environ.get("PATH", "")])

from ovig_node.storage.ipfs import IpfsClient  # noqa: E402
from support import IpfsNode  # noqa: E402

# Files that take minutes (real nodes through real windows, the simulation, the attack sweep): run first, so that
# under `make test`'s two workers (pytest-xdist, one file per work unit) everything else runs beside them.
START_FIRST = (
    "test_nodes_judging.py",
    "test_nodes.py",
    "contracts/test_simulation.py",
    "test_attacks_workloads.py",
    "contracts/test_committee.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.path.as_posix()
        return next((i for i, name in enumerate(START_FIRST) if path.endswith(f"tests/{name}")), len(START_FIRST))

    items.sort(key=rank)  # stable: every file keeps its tests' order


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


@pytest.fixture(scope="session")
def vision_task(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The verification tests' tiny vision task (``verify_support``): 5 intervals of 10 steps."""
    import verify_support

    return verify_support.tiny_task(tmp_path_factory.mktemp("vision-task"))


@pytest.fixture(scope="session")
def vision_claims(vision_task: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Its honest claims, trained on the reference profile."""
    import verify_support

    return verify_support.honest_claims(vision_task, tmp_path_factory.mktemp("vision-claims"))


@pytest.fixture(scope="session")
def vision_boundary(vision_task: Any, vision_claims: Path) -> Any:
    """Its boundary, calibrated on intervals 0, 2 and 4: intervals 1 and 3 stay held out."""
    import verify_support

    return verify_support.spread_boundary(vision_task, vision_claims)


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The node tests' devnet with the contracts deployed and a calibrated task (``node_system.System``): one per
    node-test module, so the two node-test files run on both workers at once. Imported here only when asked for."""
    from node_system import build_system

    yield from build_system(tmp_path_factory)
