"""Write the shared protocol vectors, computed by the contracts' own code, for any implementation to check.

    .venv/bin/python tests/vectors/generate.py

Starts a private anvil, deploys ``ProtocolMirror`` (the compiled artifact in ovig_node/chain/artifacts,
which exposes the libraries TrainingTasks uses: LeafHash, OrderedMerkle, Sampling), asks it, and
writes three files next to this script:

- ``sampling.json`` (protocol section 3): ``seeds`` (block hash, task, j -> seed_j), ``sample_sizes``
  (n, sample_bps -> q) and ``draws`` (seed, n, sample_bps, is_last -> positions in draw order), all
  returned by the mirror. The inputs include the vectors already pinned in tests/test_protocol.py and
  tests/contracts/test_sampling.py, so the three agree.
- ``merkle.json`` (protocol section 2.4): ``leaves`` (task, k, end_step, digest -> leaf) and ``depths``
  (leaf_count -> depth) from the mirror; ``trees`` (leaves -> root, and proofs of some indices) and
  ``rejected`` proofs. The mirror has no root function, so each root is built here with
  ovig_node.protocol.merkle and then pinned by the contract: ``OrderedMerkle.verify`` accepts the
  proof of *every* leaf of the tree against it (which only the true root of the ordered tree can
  satisfy), and returns false for every entry of ``rejected``.
- ``panel.json`` (protocol section 4.2): ``seeds`` (value, dispute, round -> seed), ``sizes`` (panel
  size, round -> P_r) and ``draws`` (seed, slot occupants as of the arm block with empty slots, which
  of them are eligible, seats wanted -> the panel in draw order), all returned by the mirror, which
  runs the committee's own PanelDraw library; some draws cannot seat everyone.

Bytes are 0x-prefixed lowercase hex. Run it again only when the protocol's hashing or sampling rules
change; tests/test_vectors.py checks the Python mirror against these files without a chain.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

from eth_utils import keccak
from web3 import Web3
from web3.contract import Contract

from ovig_node import tools
from ovig_node.chain import artifacts
from ovig_node.chain.rpc import connect
from ovig_node.devnet.manager import anvil_health
from ovig_node.devnet.processes import free_port, start_process, terminate
from ovig_node.protocol import merkle

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RNG_SEED = 20240611  # inputs are random but fixed

# Already pinned elsewhere: tests/contracts/test_sampling.py's PINNED, and tests/test_protocol.py's
# shared vectors (seed of block hash 0x11..11, task 1, batch 0).
PINNED_SEEDS = [bytes(32), keccak(text="ovig")]
PINNED_DRAWS = [(8, 5000, False), (8, 5000, True), (10, 3000, False), (2, 10000, True)]
PROTOCOL_BLOCK_HASH = bytes([0x11]) * 32
PROTOCOL_DRAWS = [(10, 2500, False), (10, 2500, True), (256, 500, False)]

SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 100, 129, 255, 256]  # batch sizes n
TREE_SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 100, 256]  # leaf counts
BPS = [1, 500, 2500, 3334, 5000, 9999, 10000]


def hexed(value: bytes) -> str:
    return "0x" + value.hex()


def deploy_mirror(w3: Web3) -> Contract:
    artifact = artifacts.load("ProtocolMirror")
    factory = w3.eth.contract(abi=artifact.abi, bytecode=artifact.bytecode)
    receipt = w3.eth.wait_for_transaction_receipt(factory.constructor().transact({"from": w3.eth.accounts[0]}))
    return w3.eth.contract(address=receipt["contractAddress"], abi=artifact.abi)


def sampling_vectors(mirror: Contract, rng: random.Random) -> dict[str, Any]:
    f = mirror.functions
    seed_inputs = [(PROTOCOL_BLOCK_HASH, 1, 0)] + [
        (rng.randbytes(32), rng.randrange(1, 2**32), rng.randrange(64)) for _ in range(8)
    ]
    seeds = [
        {"block_hash": hexed(h), "task": task, "j": j, "seed": hexed(f.seedOf(h, task, j).call())}
        for h, task, j in seed_inputs
    ]
    sample_sizes = [{"n": n, "sample_bps": bps, "q": f.sampleSize(n, bps).call()} for n in SIZES for bps in BPS]
    protocol_seed = f.seedOf(PROTOCOL_BLOCK_HASH, 1, 0).call()
    draw_inputs = [(seed, *args) for seed in PINNED_SEEDS for args in PINNED_DRAWS]
    draw_inputs += [(protocol_seed, *args) for args in PROTOCOL_DRAWS]
    for n in SIZES:
        for bps in rng.sample(BPS, 3):
            draw_inputs += [(rng.randbytes(32), n, bps, False), (rng.randbytes(32), n, bps, True)]
    draws = [
        {
            "seed": hexed(seed),
            "n": n,
            "sample_bps": bps,
            "is_last": last,
            "positions": list(f.sampleBatch(seed, n, bps, last).call()),
        }
        for seed, n, bps, last in draw_inputs
    ]
    return {"seeds": seeds, "sample_sizes": sample_sizes, "draws": draws}


def merkle_vectors(mirror: Contract, rng: random.Random) -> dict[str, Any]:
    f = mirror.functions
    leaf_inputs = [(1, 0, 10, bytes(32))] + [
        (rng.randrange(1, 2**64), rng.randrange(2**16), rng.randrange(1, 2**40), rng.randbytes(32)) for _ in range(15)
    ]
    leaves = [
        {
            "task": task,
            "k": k,
            "end_step": end,
            "digest": hexed(digest),
            "leaf": hexed(f.leaf(task, k, end, digest).call()),
        }
        for task, k, end, digest in leaf_inputs
    ]
    depths = [{"leaf_count": n, "depth": f.depth(n).call()} for n in range(1, 257)]
    trees, rejected = [], []
    for size in TREE_SIZES:
        # Real leaves of a batch: task 7, intervals 0 .. size-1 of stride 10.
        digests = [keccak(text=f"evidence 7/{k}") for k in range(size)]
        batch = [merkle.leaf_hash(7, k, 10 * (k + 1), digests[k]) for k in range(size)]
        tree = merkle.MerkleTree.build(batch)
        for index in range(size):
            assert f.verify(tree.proof(index), tree.root, batch[index], index, size).call(), (size, index)
        shown = sorted({0, size - 1, *rng.sample(range(size), min(size, 4))})
        proofs = [{"index": i, "proof": [hexed(s) for s in tree.proof(i)]} for i in shown]
        trees.append({"leaves": [hexed(x) for x in batch], "root": hexed(tree.root), "proofs": proofs})
        rejected += rejected_proofs(mirror, tree, batch, size)
    return {"leaves": leaves, "depths": depths, "trees": trees, "rejected": rejected}


def rejected_proofs(mirror: Contract, tree: merkle.MerkleTree, batch: list[bytes], size: int) -> list[dict[str, Any]]:
    """Proofs the contract refuses: too long, too short, at another index, another leaf, another depth."""
    proof, leaf = tree.proof(size - 1), batch[size - 1]
    cases = [
        ("too long", [*proof, bytes(32)], leaf, size - 1, size),
        ("leaf past the end", proof, leaf, size, size),
        ("another leaf", proof, keccak(text="forged"), size - 1, size),
        ("leaf count of another depth", proof, leaf, size - 1, 2 * size),
    ]
    if proof:
        cases.append(("too short", proof[:-1], leaf, size - 1, size))
    if size > 1:
        cases.append(("another index", proof, leaf, size - 2, size))
    out = []
    for why, p, lf, index, count in cases:
        assert not mirror.functions.verify(p, tree.root, lf, index, count).call(), (size, why)
        out.append(
            {
                "why": why,
                "proof": [hexed(s) for s in p],
                "root": hexed(tree.root),
                "leaf": hexed(lf),
                "index": index,
                "leaf_count": count,
            }
        )
    return out


def panel_vectors(mirror: Contract, rng: random.Random) -> dict[str, Any]:
    f = mirror.functions
    seed_inputs = [(bytes(32), 1, 0)]
    seed_inputs += [(rng.randbytes(32), rng.randrange(1, 2**32), rng.randrange(8)) for _ in range(8)]
    seeds = [
        {"value": hexed(v), "dispute": d, "round": r, "seed": hexed(f.panelSeed(v, d, r).call())}
        for v, d, r in seed_inputs
    ]
    sizes = [{"panel_size": p, "round": r, "size": f.panelSize(p, r).call()} for p in (3, 5, 7) for r in range(8)]
    draws = []
    for slots, want, empty, ineligible in [
        (1, 3, 0.0, 0.0),
        (3, 3, 0.0, 0.0),
        (5, 3, 0.2, 0.2),
        (20, 3, 0.1, 0.3),
        (20, 7, 0.1, 0.3),
        (40, 15, 0.2, 0.2),
        (256, 3, 0.0, 0.0),
        (256, 15, 0.3, 0.3),
        (6, 7, 0.0, 0.0),
        (30, 7, 0.5, 0.6),
    ]:
        seed = rng.randbytes(32)
        occupants = [
            "0x" + "00" * 20 if rng.random() < empty else Web3.to_checksum_address(rng.randbytes(20))
            for _ in range(slots)
        ]
        eligible = [rng.random() >= ineligible for _ in range(slots)]
        panel = list(f.drawPanel(seed, occupants, eligible, want).call())
        draws.append({"seed": hexed(seed), "occupants": occupants, "eligible": eligible, "want": want, "panel": panel})
    return {"seeds": seeds, "sizes": sizes, "draws": draws}


def main() -> None:
    stale = artifacts.stale_sources(REPO)
    if stale:
        raise SystemExit(f"artifacts are older than {', '.join(stale)}: run `ovig compile` first")
    rng = random.Random(RNG_SEED)
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        anvil = start_process(
            "anvil",
            [str(tools.anvil()), "--port", str(port)],
            log=Path(tmp) / "anvil.log",
            ready=lambda: anvil_health(url)[0],
            timeout=60,
        )
        try:
            mirror = deploy_mirror(connect(url))
            files = {
                "sampling.json": sampling_vectors(mirror, rng),
                "merkle.json": merkle_vectors(mirror, rng),
                "panel.json": panel_vectors(mirror, random.Random(RNG_SEED + 1)),
            }
        finally:
            terminate(anvil)
    for name, vectors in files.items():
        (HERE / name).write_text(json.dumps(vectors, indent=1) + "\n")
        print(f"written {HERE / name}")


if __name__ == "__main__":
    main()
