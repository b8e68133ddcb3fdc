"""The Python protocol mirror (ovig_node.protocol) against the contracts' answers in tests/vectors/.

The vectors were computed by ProtocolMirror on a chain (tests/vectors/generate.py explains how), so
these checks need no chain and run in well under a second.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ovig_node.protocol import merkle, panel, sampling

VECTORS = Path(__file__).parent / "vectors"


@cache
def load(name: str) -> dict[str, Any]:
    return json.loads((VECTORS / name).read_text())


def raw(value: str) -> bytes:
    return bytes.fromhex(value.removeprefix("0x"))


def test_batch_seeds() -> None:
    for v in load("sampling.json")["seeds"]:
        assert sampling.batch_seed(raw(v["block_hash"]), v["task"], v["j"]) == raw(v["seed"]), v


def test_sample_sizes() -> None:
    for v in load("sampling.json")["sample_sizes"]:
        assert sampling.sample_count(v["n"], v["sample_bps"]) == v["q"], v


def test_draws_in_draw_order() -> None:
    draws = load("sampling.json")["draws"]
    for v in draws:
        got = sampling.draw_positions(raw(v["seed"]), v["n"], v["sample_bps"], is_last=v["is_last"])
        assert got == v["positions"], v
    # The vectors cover both kinds of batch, single-interval batches and full samples.
    assert {v["is_last"] for v in draws} == {False, True}
    assert any(v["n"] == 1 for v in draws) and any(v["sample_bps"] == 10_000 for v in draws)


def test_vectors_pinned_elsewhere_agree() -> None:
    # tests/test_protocol.py pins these draws from the seed of block hash 0x11..11, task 1, batch 0.
    seed = "0xe8b4839877f2cf91d8dc0c11f4d511afcdcadf219cff6b08fbc164a1a916c29c"
    by_input = {
        (v["seed"], v["n"], v["sample_bps"], v["is_last"]): v["positions"] for v in load("sampling.json")["draws"]
    }
    assert by_input[(seed, 10, 2500, False)] == [3, 1, 6]
    assert by_input[(seed, 10, 2500, True)] == [5, 2, 9]
    # tests/contracts/test_sampling.py pins these from the zero seed.
    assert by_input[("0x" + "00" * 32, 8, 5000, True)] == [0, 4, 2, 7]


def test_leaf_hashes() -> None:
    for v in load("merkle.json")["leaves"]:
        assert merkle.leaf_hash(v["task"], v["k"], v["end_step"], raw(v["digest"])) == raw(v["leaf"]), v


def test_depths() -> None:
    for v in load("merkle.json")["depths"]:
        assert merkle.depth(v["leaf_count"]) == v["depth"], v


@pytest.mark.parametrize("tree", load("merkle.json")["trees"], ids=lambda t: f"{len(t['leaves'])}-leaves")
def test_roots_and_proofs(tree: dict[str, Any]) -> None:
    leaves = [raw(x) for x in tree["leaves"]]
    built = merkle.MerkleTree.build(leaves)
    assert built.root == raw(tree["root"])
    for p in tree["proofs"]:
        proof = [raw(x) for x in p["proof"]]
        assert built.proof(p["index"]) == proof
        assert merkle.verify(proof, built.root, leaves[p["index"]], p["index"], len(leaves))


def test_rejected_proofs() -> None:
    rejected = load("merkle.json")["rejected"]
    for v in rejected:
        proof = [raw(x) for x in v["proof"]]
        assert not merkle.verify(proof, raw(v["root"]), raw(v["leaf"]), v["index"], v["leaf_count"]), v["why"]
    assert {v["why"] for v in rejected} >= {"too long", "too short", "another index", "another leaf"}


def test_panel_seeds_and_sizes() -> None:
    vectors = load("panel.json")
    for v in vectors["seeds"]:
        assert panel.panel_seed(raw(v["value"]), v["dispute"], v["round"]) == raw(v["seed"]), v
    for v in vectors["sizes"]:
        assert panel.panel_size(v["panel_size"], v["round"]) == v["size"], v


def test_panel_draws_in_draw_order() -> None:
    draws = load("panel.json")["draws"]
    zero = "0x" + "00" * 20
    for v in draws:
        occupants = [None if o == zero else o for o in v["occupants"]]
        eligible = {o for o, ok in zip(v["occupants"], v["eligible"], strict=True) if ok}
        got = panel.draw_panel(raw(v["seed"]), occupants, eligible.__contains__, v["want"])
        assert got == v["panel"], v
    # The vectors cover a full registry, empty slots, and rounds that cannot seat everyone.
    assert any(len(v["occupants"]) == 256 for v in draws)
    assert any(len(v["panel"]) < v["want"] for v in draws)
