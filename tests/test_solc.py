"""The wasm-backed solc: native-compatible CLI, import resolution, and agreement with Ape's compile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ovig_node import tools
from ovig_node.chain import artifacts

REPO = tools.repo_root()
SOLC = tools.solc_dir() / "solc-v0.8.28"
PRAGMA = "// SPDX-License-Identifier: MIT\npragma solidity 0.8.28;\n"

# Runs Ape's own compile path (ape-solidity, through our solc) and records the exact standard JSON
# it built, so the test can hand the very same input to solc-js directly.
APE_COMPILE = """
import json, sys
from ape import compilers, project
from ape_solidity._models import SourceTree
compiler = compilers.registered_compilers[".sol"]
with project.isolate_in_tempdir() as pm:
    paths = [pm.path / "contracts" / "ProtocolMirror.sol"]
    tree = SourceTree.from_source_files(paths, pm)
    inputs = compiler.get_standard_input_json_from_version_map(
        compiler.get_version_map_from_imports(paths, tree, project=pm), tree, project=pm)
    types = {c.name: c for c in compiler._compile(paths, project=pm)}
(standard_input,) = inputs.values()
mirror = types["ProtocolMirror"]
json.dump({"input": standard_input, "bytecode": mirror.deployment_bytecode.bytecode,
           "runtime": mirror.runtime_bytecode.bytecode,
           "abi": [a.model_dump(mode="json", by_alias=True) for a in mirror.abi]}, open(sys.argv[1], "w"))
"""

# Ape's own compile of every contract, as `ovig compile` runs it but in a temporary copy of the project (so
# neither .build/ nor the committed artifacts change): the project manifest `ovig compile` exports from.
APE_COMPILE_ALL = """
import json, sys
from ape import project
with project.isolate_in_tempdir() as pm:
    pm.load_contracts(use_cache=False)
    json.dump(pm.manifest.model_dump(mode="json", by_alias=True), open(sys.argv[1], "w"))
"""
DEPLOYABLE = {"TrainingTasks", "AuditCommittee", "ProtocolMirror"}

SOLCJS_COMPILE = """
const solc = require("solc");
const input = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).input;
process.stdout.write(solc.compile(JSON.stringify(input)));
"""


def solc(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SOLC), *args], input=stdin, capture_output=True, text=True, timeout=120)


def standard_json(sources: dict[str, dict[str, str]]) -> str:
    selection = {"*": {"*": ["abi", "evm.bytecode.object"]}}
    return json.dumps({"language": "Solidity", "sources": sources, "settings": {"outputSelection": selection}})


def test_version_answers_like_native_solc() -> None:
    result = solc("--version")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "solc, the solidity compiler commandline interface"
    assert lines[1].startswith("Version: 0.8.28+commit.7893614a")


def test_ape_compile_equals_solcjs_on_the_same_standard_json(tmp_path: Path) -> None:
    recorded = tmp_path / "ape.json"
    subprocess.run([sys.executable, "-c", APE_COMPILE, str(recorded)], cwd=REPO, check=True, timeout=300)
    ape = json.loads(recorded.read_text())
    direct = subprocess.run(
        [str(tools.node22()), "-e", SOLCJS_COMPILE, str(recorded)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    output = json.loads(direct.stdout)
    assert not [e for e in output.get("errors", []) if e["severity"] == "error"]
    mirror = output["contracts"]["contracts/ProtocolMirror.sol"]["ProtocolMirror"]
    assert "0x" + mirror["evm"]["bytecode"]["object"] == ape["bytecode"]
    assert "0x" + mirror["evm"]["deployedBytecode"]["object"] == ape["runtime"]
    assert mirror["abi"] == ape["abi"]
    # And the artifact shipped in the package is that same code.
    assert artifacts.load("ProtocolMirror").bytecode == ape["bytecode"]


def test_committed_artifacts_equal_a_fresh_compile_of_every_contract(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    subprocess.run([sys.executable, "-c", APE_COMPILE_ALL, str(manifest)], cwd=REPO, check=True, timeout=600)
    fresh = tmp_path / "artifacts"
    written = artifacts.export_manifest(json.loads(manifest.read_text()), REPO, fresh)
    assert set(written) >= DEPLOYABLE
    assert artifacts.names() == sorted(written), "run `ovig compile` and commit ovig_node/chain/artifacts/"
    for name in written:
        committed, compiled = artifacts.load(name), artifacts.load(name, fresh)
        assert committed.bytecode == compiled.bytecode, f"{name}: creation bytecode differs; run `ovig compile`"
        assert committed.deployed_bytecode == compiled.deployed_bytecode, f"{name}: runtime bytecode differs"
        assert committed == compiled, f"{name}: artifact differs from a fresh compile; run `ovig compile`"
    index = artifacts.ARTIFACTS_DIR / artifacts.INDEX
    assert index.read_text() == (fresh / artifacts.INDEX).read_text(), "artifacts/index.json is stale"


def test_imports_resolve_from_node_modules_and_include_paths(tmp_path: Path) -> None:
    lib = tmp_path / "lib" / "Two.sol"
    lib.parent.mkdir()
    lib.write_text(PRAGMA + "library Two { function two() internal pure returns (uint256) { return 2; } }\n")
    source = (
        PRAGMA
        + 'import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";\n'
        + 'import {Two} from "Two.sol";\n'
        + "contract C { function f(uint256 x) external pure returns (uint256) { return Math.max(x, Two.two()); } }\n"
    )
    result = solc(
        "--standard-json",
        "--base-path",
        str(REPO),
        "--include-path",
        str(lib.parent),
        stdin=standard_json({"C.sol": {"content": source}}),
    )
    output = json.loads(result.stdout)
    assert result.returncode == 0
    assert not output.get("errors"), output.get("errors")
    assert output["contracts"]["C.sol"]["C"]["evm"]["bytecode"]["object"]
    assert "@openzeppelin/contracts/utils/math/Math.sol" in output["sources"]


def test_import_outside_allowed_paths_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "Secret.sol"
    secret.parent.mkdir()
    secret.write_text(PRAGMA + "contract Secret {}\n")
    source = PRAGMA + f'import "{secret}";\ncontract D {{}}\n'
    base = tmp_path / "project"
    base.mkdir()
    refused = json.loads(
        solc("--standard-json", "--base-path", str(base), stdin=standard_json({"D.sol": {"content": source}})).stdout
    )
    messages = " ".join(e["message"] for e in refused["errors"])
    assert "outside of allowed directories" in messages
    allowed = json.loads(
        solc(
            "--standard-json",
            "--base-path",
            str(base),
            "--allow-paths",
            str(secret.parent),
            stdin=standard_json({"D.sol": {"content": source}}),
        ).stdout
    )
    assert not [e for e in allowed.get("errors", []) if e["severity"] == "error"]


def test_missing_import_and_bad_flag_give_clear_errors(tmp_path: Path) -> None:
    source = PRAGMA + 'import "nowhere/Missing.sol";\ncontract E {}\n'
    output = json.loads(
        solc(
            "--standard-json", "--base-path", str(tmp_path), stdin=standard_json({"E.sol": {"content": source}})
        ).stdout
    )
    assert any("File not found" in e["message"] for e in output["errors"])
    bad = solc("--bin", "x.sol")
    assert bad.returncode == 1
    assert bad.stderr.startswith("solc (wasm): unsupported option: --bin")


@pytest.mark.parametrize("flag", ["--base-path"])
def test_flag_without_value_fails(flag: str) -> None:
    result = solc("--standard-json", flag)
    assert result.returncode == 1
    assert f"option {flag} needs a value" in result.stderr
