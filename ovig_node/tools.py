"""Where the devnet's programs live: the repository's node_modules and tools/ folders.

They come from the npm registry (`npm ci`): anvil as a native binary inside `@foundry-rs/anvil`,
Node 22 as the `node` package, and our IPFS daemon in `tools/ipfsd`. `OVIG_REPO` overrides where the
repository is; otherwise it is found from this package (editable install) or the working directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

from ovig_node.errors import OvigError

_SETUP_HINT = "run `make setup` in the OVIG repository (it runs `npm ci`)"


class ToolMissing(OvigError, FileNotFoundError):
    """anvil, Node 22, the IPFS daemon or solc is not installed where the repository keeps them."""

    def __init__(self, tool: str, hint: str) -> None:
        self.tool = tool
        super().__init__(f"{tool} not found: {hint}")


def _is_repo(path: Path) -> bool:
    return (path / "package.json").is_file() and (path / "tools" / "ipfsd").is_dir()


@cache
def repo_root() -> Path:
    """The OVIG repository holding node_modules and tools/."""
    if env := os.environ.get("OVIG_REPO"):
        if _is_repo(Path(env)):
            return Path(env).resolve()
        raise ToolMissing("OVIG repository", f"OVIG_REPO={env} has no package.json and tools/ipfsd")
    for start in (Path(__file__).resolve(), Path.cwd().resolve()):
        for candidate in (start, *start.parents):
            if _is_repo(candidate):
                return candidate
    raise ToolMissing("OVIG repository", "set OVIG_REPO to a checkout of the repository")


def anvil() -> Path:
    """The native anvil binary (not the npm wrapper script, so a pid is anvil itself)."""
    root = repo_root()
    linked = root / ".tools" / "bin" / "anvil"
    natives = sorted((root / "node_modules" / "@foundry-rs").glob("anvil-*/bin/anvil"))
    for candidate in (linked, *natives):
        if candidate.is_file():
            return candidate
    if found := shutil.which("anvil"):
        return Path(found)
    raise ToolMissing("anvil", _SETUP_HINT)


@cache
def node22() -> Path:
    """A Node.js >= 22 (Helia's dependencies need it): the npm `node` package, else the PATH's."""
    candidates = [repo_root() / "node_modules" / ".bin" / "node"]
    if found := shutil.which("node"):
        candidates.append(Path(found))
    for candidate in candidates:
        if candidate.is_file() and _node_major(candidate) >= 22:
            return candidate
    raise ToolMissing("Node.js 22", _SETUP_HINT)


def _node_major(node: Path) -> int:
    try:
        out = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=20, check=True)
        return int(out.stdout.strip().lstrip("v").split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError):
        return 0


def ipfsd_script() -> Path:
    script = repo_root() / "tools" / "ipfsd" / "ipfsd.mjs"
    if not script.is_file() or not (repo_root() / "node_modules" / "helia").is_dir():
        raise ToolMissing("the IPFS daemon (tools/ipfsd with Helia)", _SETUP_HINT)
    return script


def solc_dir() -> Path:
    """The folder holding ``solc-v<version>`` for py-solc-x / ape-solidity (``SOLCX_BINARY_PATH``)."""
    return repo_root() / ".tools" / "solcx"


def ipfsd_argv(
    repo_dir: Path, *, host: str = "127.0.0.1", api_port: int = 5001, swarm_port: int = 0, peers: tuple[str, ...] = ()
) -> list[str]:
    """Command line of the embedded IPFS node (``tools/ipfsd``) for one repository folder."""
    argv = [str(node22()), str(ipfsd_script()), "--repo", str(repo_dir), "--api-host", host]
    argv += ["--api-port", str(api_port), "--swarm-port", str(swarm_port)]
    for peer in peers:
        argv += ["--peer", peer]
    return argv
