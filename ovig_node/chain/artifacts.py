"""Compiled contracts shipped inside the package, so nodes need neither Ape nor npm at run time.

`ovig compile` (Ape + the wasm solc) writes one JSON per deployable contract into
``ovig_node/chain/artifacts/`` and an ``index.json`` with the sha256 of every source it was built
from; :func:`stale_sources` compares that fingerprint with the working tree, so a test (and
`ovig deploy`) notices artifacts that no longer match the contracts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovig_node.chain.errors import DeploymentError

ARTIFACTS_DIR = Path(__file__).parent / "artifacts"
INDEX = "index.json"


@dataclass(frozen=True)
class Artifact:
    name: str
    source: str  # e.g. contracts/ProtocolMirror.sol
    abi: list[dict[str, Any]]
    bytecode: str  # creation code, 0x-prefixed
    deployed_bytecode: str  # runtime code as compiled (immutables still zero)
    compiler: str  # e.g. solc 0.8.28+commit.7893614a


def load(name: str, directory: Path = ARTIFACTS_DIR) -> Artifact:
    path = directory / f"{name}.json"
    if not path.is_file():
        known = ", ".join(names(directory)) or "none"
        raise DeploymentError(f"no compiled artifact for {name} in {directory} (have: {known}); run `ovig compile`")
    return Artifact(**json.loads(path.read_text()))


def names(directory: Path = ARTIFACTS_DIR) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.json") if p.name != INDEX)


def source_fingerprint(repo: Path) -> dict[str, str]:
    """sha256 of every Solidity source under ``contracts/`` (relative path -> hex)."""
    folder = repo / "contracts"
    return {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*.sol"))
        if ".cache" not in p.parts
    }


def stale_sources(repo: Path, directory: Path = ARTIFACTS_DIR) -> list[str]:
    """Sources added, removed or changed since the artifacts were built (empty: up to date)."""
    index_path = directory / INDEX
    built = json.loads(index_path.read_text())["sources"] if index_path.is_file() else {}
    current = source_fingerprint(repo)
    return sorted(path for path in built.keys() | current.keys() if built.get(path) != current.get(path))


def export_manifest(manifest: dict[str, Any], repo: Path, directory: Path = ARTIFACTS_DIR) -> list[str]:
    """Write artifacts of the project's own contracts (not libraries) from an Ape ``__local__.json``."""
    compiler = next((f"solc {c['version']}" for c in manifest.get("compilers", []) if c["name"] == "solidity"), "?")
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.json"):
        old.unlink()
    written = []
    for name, ctype in sorted(manifest["contractTypes"].items()):
        source = ctype.get("sourceId", "")
        bytecode = (ctype.get("deploymentBytecode") or {}).get("bytecode") or "0x"
        # Internal libraries compile to a stub nobody deploys, interfaces to no code at all, and
        # contracts/test/ holds test doubles: only deployable contracts of our own ship.
        if not source.startswith("contracts/") or ".cache" in source or source.startswith("contracts/test/"):
            continue
        # An internal library's ABI lists at most its custom errors: nothing to deploy or call.
        callable_ = any(item.get("type") != "error" for item in ctype.get("abi") or [])
        if not callable_ or bytecode == "0x":
            continue
        artifact = Artifact(
            name=name,
            source=source,
            abi=ctype["abi"],
            bytecode=bytecode,
            deployed_bytecode=(ctype.get("runtimeBytecode") or {}).get("bytecode") or "0x",
            compiler=compiler,
        )
        (directory / f"{name}.json").write_text(json.dumps(artifact.__dict__, indent=1, sort_keys=True) + "\n")
        written.append(name)
    index = {"compiler": compiler, "contracts": written, "sources": source_fingerprint(repo)}
    (directory / INDEX).write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return written
