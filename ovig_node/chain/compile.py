"""Compile the contracts with Ape and the wasm solc, then export the package's artifacts.

Needs the development setup (`make setup`): Ape in this Python environment, `npm ci` done, and
``solc-v<version>`` in the repository's ``.tools/solcx`` (ape-solidity finds it through
``SOLCX_BINARY_PATH`` and never downloads a compiler).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ovig_node import tools
from ovig_node.chain import artifacts
from ovig_node.chain.errors import DeploymentError


def toolchain_env(repo: Path) -> dict[str, str]:
    """Environment in which Ape finds our solc and anvil offline."""
    env = dict(os.environ)
    env["SOLCX_BINARY_PATH"] = str(tools.solc_dir())
    env["PATH"] = os.pathsep.join([str(repo / "node_modules" / ".bin"), str(Path(sys.executable).parent), env["PATH"]])
    return env


def compile_contracts() -> list[str]:
    """Run ``ape compile`` in the repository and export artifacts; return the exported names."""
    repo = tools.repo_root()
    ape = shutil.which("ape", path=str(Path(sys.executable).parent)) or shutil.which("ape")
    if ape is None:
        raise DeploymentError("ape is not installed in this environment; run `make setup`")
    # Always a full build: Ape's incremental compile skips a contract whose own file is unchanged even when
    # a file it imports changed, which leaves stale bytecode (metadata hash) in the exported artifacts.
    argv = [ape, "compile", "--force"]
    result = subprocess.run(argv, cwd=repo, env=toolchain_env(repo), capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise DeploymentError(f"`ape compile` failed:\n{tail}")
    manifest = json.loads((repo / ".build" / "__local__.json").read_text())
    return artifacts.export_manifest(manifest, repo)
