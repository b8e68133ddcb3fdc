"""Benchmark: gas of every external call of TrainingTasks and AuditCommittee, on a fresh anvil.

Deploys the pair with the production plan (deploy/plan.py, from the compiled artifacts in
ovig_node/chain/artifacts) and its drand backend (DrandBeacon, for a beacon with the devnet's published
key: every sample and panel waits for a drand round verified on-chain, as in production), then runs real
tasks with real Merkle trees and proofs built by ovig_node.protocol: the whole lifecycle, a dispute
decided each way (by a round-0 panel of 3), and every way out. Measures the gas used (receipt gasUsed:
what the sender pays for, intrinsic 21,000 and calldata included) of each call; commitBatch gas per
interval for m = 1, 10, 100, 256; openBatch gas per sampled interval at m = 100 for growing samples;
finalize for 1 batch against many. Checks the issue's targets:

- commitBatch gas independent of m, and under 1,000 gas per interval at m = 100;
- openBatch at most 30,000 gas per sampled interval (m = 100, half the batch sampled);
- a challenge's commit plus reveal at most 200,000 gas;
- drawPanel at most 1,000,000 gas for a first-round panel with 256 auditors registered;
- finalize O(1) in the number of batches.

Also the drand backend: DrandBeacon.submitRound verifying drand quicknet's round 1000 (real BLS
on the EIP-2537 precompiles; deploy/drand.json), and the same round submitted again.

Prints two tables and writes bench/results/gas.json.

    .venv/bin/python bench/gas.py
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_abi import encode
from eth_utils import keccak
from rich.console import Console
from rich.table import Table
from web3 import Web3
from web3.contract import Contract

from ovig_node import tools
from ovig_node.chain import artifacts
from ovig_node.chain.accounts import DEVNET_MNEMONIC, devnet_account
from ovig_node.chain.deploy import Deployer, RandomnessChoice, run_plan
from ovig_node.chain.rpc import connect
from ovig_node.devnet.beacon import DEVNET_BEACON_SECRET, devnet_network
from ovig_node.devnet.manager import anvil_health
from ovig_node.devnet.processes import free_port, start_process, terminate
from ovig_node.protocol import drand, merkle
from ovig_node.protocol.attestation import Attestation, AttestedVerdict, Domain, sign
from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.sampling import sampled_intervals

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "gas.json"
ACCOUNTS = 270  # owner, provider, two watchers, keeper, and auditors up to a full registry of 256
OWNER, PROVIDER, WATCHER, WATCHER2, KEEPER = range(5)
AUDITORS = range(5, 12)  # seven, so a panel of three never runs short
WINDOWS = (3600, 7200, 600)  # opening, challenge, challenge reveal (seconds)
REWARD, PROVIDER_BOND, CHALLENGER_BOND = 2 * 10**18, 3 * 10**18, 10**17
REPLAY_SECONDS = 600  # what the tasks declare, under the production committee's maxReplaySeconds
LATER = " (a later task)"  # label suffix of a challenge made once the contracts' counters are nonzero
OUT_OF_BOUNDS, VALID, FAULTY = 1, 1, 2
AWAITING_PANEL, VOTING = 1, 2  # DisputeStatus values
# Positions in AuditCommittee's Dispute struct.
DISPUTE_STATUS, DISPUTE_RUN, DISPUTE_ARMED_AT, DISPUTE_SEATS_SETTLED = 1, 5, 8, 16
BATCH_SAMPLED, BATCH_TARGET = 2, 4  # positions in TrainingTasks' Batch struct
COMMIT_MS = (1, 10, 100, 256)  # intervals per batch for the commitment cost
OPEN_SAMPLE_BPS = (100, 1000, 2500, 5000)  # m = 100: 1, 10, 25 and 50 sampled intervals
FINALIZE_BATCHES = (1, 64)
REGISTRY = 256  # AuditCommittee.MAX_AUDITORS
# Not the devnet's chain id, so deploy/plan.py deploys the production committee parameters (the devnet's
# 30-second windows would expire under the bench's clock jumps).
BENCH_CHAIN_ID = 31338
CIDV1 = "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"  # a CIDv1's 59 characters, as IPFS names files


@dataclass(frozen=True)
class Shape:
    """A task's shape: N steps, stride s, m intervals per batch, sampleBps."""

    total_steps: int
    stride: int
    per_batch: int
    sample_bps: int

    @property
    def layout(self) -> Layout:
        return Layout(self.total_steps, self.stride, self.per_batch)


@dataclass
class Evidence:
    """An honest provider's digests and batch trees for one task (protocol 2.3-2.4)."""

    task: int
    layout: Layout
    init_digest: bytes
    trees: dict[int, merkle.MerkleTree] = field(default_factory=dict)

    def digest(self, k: int) -> bytes:
        return hashlib.sha256(f"evidence {self.task}/{k}".encode()).digest()  # stands in for a file's sha256

    def tree(self, j: int) -> merkle.MerkleTree:
        if j not in self.trees:
            leaves = [
                merkle.leaf_hash(self.task, k, self.layout.end_step(k), self.digest(k))
                for k in self.layout.batch_intervals(j)
            ]
            self.trees[j] = merkle.MerkleTree.build(leaves)
        return self.trees[j]

    def proof(self, k: int) -> list[bytes]:
        m = self.layout.intervals_per_batch
        return self.tree(k // m).proof(k % m)

    def opening(self, k: int) -> tuple[Any, ...]:
        """The contract's `Opening` for interval k: end leaf and proof, and (k > 0) start leaf and proof."""
        end = (k, self.layout.end_step(k), self.digest(k), self.proof(k))
        if k == 0:
            return (*end, 0, bytes(32), [])
        return (*end, self.layout.end_step(k - 1), self.digest(k - 1), self.proof(k - 1))


class Bench:
    """The deployed pair on a private anvil, and helpers to drive tasks and disputes through it."""

    def __init__(self, w3: Web3, tasks: Contract, committee: Contract, network: drand.Network) -> None:
        self.w3, self.tasks, self.committee, self.network = w3, tasks, committee, network
        self.accounts = w3.eth.accounts
        self.gas: dict[str, int] = {}
        beacon = tasks.functions.RANDOMNESS().call()
        self.beacon = w3.eth.contract(address=beacon, abi=artifacts.load("DrandBeacon").abi)

    # --- chain ------------------------------------------------------------------------------------

    def send(self, fn: Any, sender: int, *, value: int = 0, label: str | None = None) -> Any:
        """Send a transaction from test account ``sender``; record its gas under ``label``."""
        tx_hash = fn.transact({"from": self.accounts[sender], "value": value})
        receipt = self.w3.eth.wait_for_transaction_receipt(tx_hash)
        assert receipt["status"] == 1, f"{fn.fn_name} reverted"
        if label is not None:
            self.gas.setdefault(label, receipt["gasUsed"])  # the first occurrence: one typical call
        return receipt

    def now(self) -> int:
        return int(self.w3.eth.get_block("latest")["timestamp"])

    def warp(self, seconds: int) -> None:
        self.w3.provider.make_request("evm_increaseTime", [seconds])  # type: ignore[arg-type]
        self.mine(1)

    def mine(self, blocks: int) -> None:
        self.w3.provider.make_request("anvil_mine", [hex(blocks)])  # type: ignore[arg-type]

    def reach(self, round_: int, *, labels: bool = False) -> None:
        """Wait (in chain time) for drand round ``round_`` and submit it, signed with the devnet beacon's key."""
        due = self.network.round_time(round_)
        if self.now() < due:
            self.warp(due - self.now())
        if self.beacon.functions.randomnessOf(round_).call() == bytes(32):
            signature = drand.g1_for_contract(drand.sign(DEVNET_BEACON_SECRET, round_))
            label = "DrandBeacon.submitRound (a target round)" if labels else None
            self.send(self.beacon.functions.submitRound(round_, signature), KEEPER, label=label)

    # --- tasks ------------------------------------------------------------------------------------

    def post(self, shape: Shape, *, label: str | None = None) -> Evidence:
        init = hashlib.sha256(b"initial checkpoint").digest()
        deadline = self.now() + 30 * 24 * 3600
        fn = self.tasks.functions.postTask(
            keccak(text="spec"),
            "bafyspec",
            init,
            shape.total_steps,
            shape.stride,
            shape.per_batch,
            shape.sample_bps,
            (PROVIDER_BOND, CHALLENGER_BOND),
            REPLAY_SECONDS,
            WINDOWS,
            deadline,
        )
        self.send(fn, OWNER, value=REWARD, label=label)
        return Evidence(self.tasks.functions.taskCount().call(), shape.layout, init)

    def accept(self, ev: Evidence, *, label: str | None = None) -> None:
        self.send(self.tasks.functions.acceptTask(ev.task), PROVIDER, value=PROVIDER_BOND, label=label)

    def commit(self, ev: Evidence, j: int, *, label: str | None = None) -> int:
        fn = self.tasks.functions.commitBatch(ev.task, j, ev.tree(j).root, f"bafymanifest{j}")
        return int(self.send(fn, PROVIDER, label=label)["gasUsed"])

    def draw(self, ev: Evidence, j: int, *, label: str | None = None) -> list[int]:
        """Reach the batch's drand round, draw its sample; the sampled intervals, ascending."""
        self.reach(self.tasks.functions.getBatch(ev.task, j).call()[BATCH_TARGET], labels=label is not None)
        self.send(self.tasks.functions.drawSeed(ev.task, j), KEEPER, label=label)
        return self.sampled(ev, j)

    def sampled(self, ev: Evidence, j: int) -> list[int]:
        bitmap = self.tasks.functions.getBatch(ev.task, j).call()[BATCH_SAMPLED]
        return sampled_intervals(bitmap, j, ev.layout.intervals_per_batch)

    def open(self, ev: Evidence, j: int, sampled: list[int], *, label: str | None = None) -> int:
        openings = [ev.opening(k) for k in sampled]
        fn = self.tasks.functions.openBatch(ev.task, j, f"bafyopening{j}", openings)
        return int(self.send(fn, PROVIDER, label=label)["gasUsed"])

    def run_to_opened(self, shape: Shape, *, labels: bool = False) -> Evidence:
        """Post, accept, commit, draw and open every batch of a task."""
        ev = self.post(shape, label="postTask" if labels else None)
        self.accept(ev, label="acceptTask" if labels else None)
        for j in range(shape.layout.batches):
            self.commit(ev, j, label="commitBatch" if labels else None)
        for j in range(shape.layout.batches):
            sampled = self.draw(ev, j, label="drawSeed" if labels else None)
            self.open(ev, j, sampled, label=f"openBatch ({len(sampled)} of m = {shape.per_batch})" if labels else None)
        return ev

    def finalize(self, ev: Evidence, *, label: str | None = None) -> int:
        self.warp(WINDOWS[1] + 1)
        return int(self.send(self.tasks.functions.finalize(ev.task), KEEPER, label=label)["gasUsed"])

    # --- challenges and the committee -------------------------------------------------------------

    def commit_challenge(self, ev: Evidence, k: int, watcher: int, salt: bytes, *, label: str | None = None) -> bytes:
        types = ["uint256", "uint256", "uint8", "bytes32", "address"]
        commitment = keccak(encode(types, [ev.task, k, OUT_OF_BOUNDS, salt, self.accounts[watcher]]))
        fn = self.tasks.functions.commitChallenge(ev.task, commitment)
        self.send(fn, watcher, value=CHALLENGER_BOND, label=label)
        return commitment

    def challenge(self, ev: Evidence, k: int, *, labels: bool = False, tag: str = "") -> int:
        """Commit and reveal an out_of_bounds challenge of interval k; the dispute it opens. Gas is recorded
        as commitChallenge and revealChallenge, ``tag`` appended."""
        salt = keccak(text=f"salt {ev.task}/{k}")
        self.commit_challenge(ev, k, WATCHER, salt, label=f"commitChallenge{tag}" if labels else None)
        fn = self.tasks.functions.revealChallenge(ev.task, k, OUT_OF_BOUNDS, salt, "bafyreport")
        self.send(fn, WATCHER, label=f"revealChallenge{tag}" if labels else None)
        return int(self.tasks.functions.disputeCount().call())

    def decide(self, dispute: int, vote: int, *, label: str, labels: bool = False) -> list[int]:
        """Draw the panel, have every panelist commit and reveal ``vote``, resolve (gas under ``label``), settle
        the seats; the gas of each settleSeats call."""
        self.vote_round(dispute, vote, labels=labels)
        # A decided round may be appealed; unappealed, its outcome stands once the appeal window has passed.
        self.warp(self.committee.functions.APPEAL_WINDOW().call())
        self.send(self.committee.functions.resolve(dispute), KEEPER, label=label)
        return self.settle_seats(dispute, label="settleSeats (3 seats)" if labels else None)

    def vote_round(self, dispute: int, vote: int, *, labels: bool = False) -> None:
        """Draw the current round's panel (as many calls as it takes), have every panelist commit and reveal
        ``vote``, resolve the round."""
        c = self.committee.functions
        self.reach(c.panelTarget(dispute).call())
        first = True
        while c.getDispute(dispute).call()[DISPUTE_STATUS] == AWAITING_PANEL:
            self.send(c.drawPanel(dispute), KEEPER, label="drawPanel" if labels and first else None)
            first = False
        panel = c.panelOf(dispute).call()
        run = c.getDispute(dispute).call()[DISPUTE_RUN]
        salt = keccak(text="vote salt")
        types = ["uint256", "uint256", "uint8", "bytes32", "address"]
        for panelist in panel:
            commitment = keccak(encode(types, [dispute, run, vote, salt, panelist]))
            self.send(
                c.commitVote(dispute, commitment), self.accounts.index(panelist), label="commitVote" if labels else None
            )
        self.warp(c.COMMIT_WINDOW().call())
        for panelist in panel:
            fn = c.revealVote(dispute, vote, salt)
            self.send(fn, self.accounts.index(panelist), label="revealVote" if labels else None)
        self.warp(c.REVEAL_WINDOW().call())
        self.send(c.resolve(dispute), KEEPER, label="resolve (round decided)" if labels else None)

    def settle_seats(self, dispute: int, *, label: str | None = None) -> list[int]:
        """settleSeats until every seat of the resolved dispute is settled; each call's gas."""
        c = self.committee.functions
        gas = []
        while not c.getDispute(dispute).call()[DISPUTE_SEATS_SETTLED]:
            gas.append(int(self.send(c.settleSeats(dispute), KEEPER, label=label)["gasUsed"]))
        return gas

    def register_auditors(self) -> None:
        stake = self.committee.functions.AUDITOR_STAKE().call()
        for i in AUDITORS:
            self.send(self.committee.functions.register(), i, value=stake, label="register")
        self.mine(self.committee.functions.WARMUP_BLOCKS().call())


# --- scenarios ------------------------------------------------------------------------------------


def every_call(bench: Bench) -> None:
    """The lifecycle, both verdicts and every way out, each call's gas recorded once."""
    t, c = bench.tasks.functions, bench.committee.functions
    shape = Shape(total_steps=100, stride=10, per_batch=4, sample_bps=5000)  # K = 10 in 3 batches
    bench.register_auditors()
    # Lifecycle: a dispute found valid, a commit left to expire, then finalize.
    ev = bench.run_to_opened(shape, labels=True)
    # A targeted opening: a watcher asks for an interval batch 0's sample left unopened; the provider opens it.
    unsampled = next(k for k in range(shape.per_batch) if k not in bench.sampled(ev, 0))
    bench.send(t.requestOpening(ev.task, unsampled), WATCHER2, value=CHALLENGER_BOND, label="requestOpening")
    bench.send(t.openRequested(ev.task, "bafyrequested", ev.opening(unsampled)), PROVIDER, label="openRequested")
    # An attestation (protocol 8.4) of the requested interval, as a watcher announces one: real signature and CIDs.
    attestation = Attestation(
        ev.task, unsampled, ev.digest(unsampled), int(AttestedVerdict.SOUND), CIDV1, "micro8,micro3 on AMD EPYC"
    )
    signature = sign(attestation, Domain(bench.w3.eth.chain_id, bench.tasks.address), devnet_account(WATCHER2))
    bench.send(
        t.attest(ev.task, unsampled, attestation.verdict, attestation.profile, CIDV1, CIDV1, signature),
        WATCHER2,
        label="attest",
    )
    dispute = bench.challenge(ev, bench.sampled(ev, 0)[0], labels=True)
    commitment = bench.commit_challenge(ev, 0, WATCHER2, keccak(text="never revealed"))
    bench.warp(WINDOWS[2])
    bench.send(t.expireChallenge(ev.task, bench.accounts[WATCHER2], commitment), KEEPER, label="expireChallenge")
    bench.decide(dispute, VALID, label="resolve (valid)", labels=True)
    bench.send(t.withdraw(), PROVIDER, label="withdraw (tasks)")  # its share of the challenger bond
    bench.finalize(ev, label="finalize")
    bench.send(t.settleRequest(ev.task, unsampled), KEEPER, label="settleRequest")
    # A dispute found faulty: the task is slashed. The first challenge of this task, but not of the contracts:
    # their counters (commits, disputes) are no longer zero, as on any chain after its first dispute.
    ev = bench.run_to_opened(shape)
    dispute = bench.challenge(ev, bench.sampled(ev, 1)[0], labels=True, tag=LATER)
    bench.decide(dispute, FAULTY, label="resolve (faulty)")
    # A faulty verdict while a dispute led by an earlier commit is still open: the slash's lead share waits
    # for that dispute, which is judged on (found faulty too, it takes the share), then is released.
    ev = bench.run_to_opened(shape)
    first, second = bench.sampled(ev, 1)[:2]
    earlier = bench.challenge(ev, first)
    later = bench.challenge(ev, second)
    bench.decide(later, FAULTY, label="resolve (faulty, lead's share waiting)")
    assert not t.isMoot(earlier).call(), "a dispute led by an earlier commit is judged on after the slash"
    if bench.now() >= c.getDispute(earlier).call()[DISPUTE_ARMED_AT] + c.MAX_DRAW_DELAY().call():
        bench.send(c.rearm(earlier), KEEPER)  # its first draw expired while the other dispute was voted on
    bench.decide(earlier, FAULTY, label="resolve (faulty, after the slash)")
    bench.send(t.releaseLeadShare(ev.task), KEEPER, label="releaseLeadShare")
    # The ways out: cancel, abandon, slashUnopened.
    ev = bench.post(shape)
    bench.send(t.cancel(ev.task), OWNER, label="cancel")
    ev = bench.post(shape)
    bench.accept(ev)
    bench.commit(ev, 0)
    bench.warp(31 * 24 * 3600)
    bench.send(t.abandon(ev.task), KEEPER, label="abandon")
    ev = bench.post(shape)
    bench.accept(ev)
    bench.commit(ev, 0)
    bench.draw(ev, 0)
    bench.warp(WINDOWS[0])
    bench.send(t.slashUnopened(ev.task, 0), KEEPER, label="slashUnopened")
    ev = bench.run_to_opened(shape)
    unsampled = next(k for k in range(shape.per_batch) if k not in bench.sampled(ev, 0))
    bench.send(t.requestOpening(ev.task, unsampled), WATCHER2, value=CHALLENGER_BOND)
    bench.warp(WINDOWS[0])
    bench.send(t.slashUnopenedRequest(ev.task, unsampled), KEEPER, label="slashUnopenedRequest")
    # An auditor leaves; credits are pulled.
    auditor = AUDITORS[0]
    bench.send(c.requestExit(), auditor, label="requestExit")
    bench.warp(c.COOLDOWN().call())
    bench.send(c.exit(), auditor, label="exit")
    bench.send(c.withdraw(), auditor, label="withdraw (committee)")


def commit_cost(bench: Bench) -> list[dict[str, Any]]:
    """commitBatch gas of the first, a middle and the last batch, for each m."""
    rows = []
    for m in COMMIT_MS:
        ev = bench.post(Shape(total_steps=3 * m, stride=1, per_batch=m, sample_bps=10000))
        bench.accept(ev)
        first, middle, last = (bench.commit(ev, j) for j in range(3))
        rows.append({"m": m, "first": first, "middle": middle, "last": last, "per_interval": middle / m})
    return rows


def open_cost(bench: Bench) -> list[dict[str, Any]]:
    """openBatch gas of batch 1 of a task with m = 100 (so every start proof is a real one), by sample."""
    rows = []
    for bps in OPEN_SAMPLE_BPS:
        ev = bench.post(Shape(total_steps=300, stride=1, per_batch=100, sample_bps=bps))
        bench.accept(ev)
        for j in range(3):
            bench.commit(ev, j)
        sampled = bench.draw(ev, 1)
        gas = bench.open(ev, 1, sampled)
        rows.append({"sample_bps": bps, "sampled": len(sampled), "gas": gas, "per_interval": gas / len(sampled)})
    # The cost of one more interval, from the two largest samples: what the fixed overhead hides.
    a, b = rows[-2], rows[-1]
    for row in rows:
        row["marginal_per_interval"] = (b["gas"] - a["gas"]) / (b["sampled"] - a["sampled"])
    return rows


def panel_cost(bench: Bench) -> dict[str, Any]:
    """drawPanel of a first round once the registry is full: rejection sampling costs grow with the
    panel, not with the registry. Then that dispute runs through rounds of 3, 7, 15 and 31 seats (each decided
    faulty and appealed but the last) and its 56 seats are settled: each settleSeats call settles at most
    SEATS_PER_CALL of them, so no call grows with the panel."""
    c = bench.committee.functions
    stake = c.AUDITOR_STAKE().call()
    newcomer = AUDITORS[-1] + 1
    while c.auditorCount().call() < REGISTRY:
        bench.send(c.register(), newcomer, value=stake)
        newcomer += 1
    bench.mine(c.WARMUP_BLOCKS().call())
    ev = bench.run_to_opened(Shape(total_steps=10, stride=10, per_batch=1, sample_bps=10000))
    dispute = bench.challenge(ev, 0)
    bench.reach(c.panelTarget(dispute).call())
    receipt = bench.send(c.drawPanel(dispute), KEEPER)
    assert c.getDispute(dispute).call()[DISPUTE_STATUS] == VOTING, "a first-round panel of 3 takes one call"
    drawn = {"auditors": int(c.auditorCount().call()), "gas": int(receipt["gasUsed"])}
    bond = bench.tasks.functions.MIN_CHALLENGER_BOND().call()  # the unit of an appeal bond
    for round_ in range(4):
        bench.vote_round(dispute, FAULTY)
        if round_ < 3:
            bench.send(c.appeal(dispute), OWNER, value=bond << (round_ + 1))
    bench.warp(c.APPEAL_WINDOW().call())
    bench.send(c.resolve(dispute), KEEPER)
    pages = bench.settle_seats(dispute)
    seats = len(c.seatsOf(dispute).call())
    return {**drawn, "settle_seats": seats, "settle_gas": pages, "seats_per_call": int(c.SEATS_PER_CALL().call())}


def finalize_cost(bench: Bench) -> list[dict[str, Any]]:
    """finalize of a task with one batch against one with many, the provider's credit zero before each
    (crediting an empty balance costs 17,100 more gas than adding to one, whatever the task)."""
    rows = []
    tasks = bench.tasks.functions
    for batches in FINALIZE_BATCHES:
        ev = bench.run_to_opened(Shape(total_steps=batches, stride=1, per_batch=1, sample_bps=10000))
        if tasks.credits(bench.accounts[PROVIDER]).call():
            bench.send(tasks.withdraw(), PROVIDER)
        rows.append({"batches": batches, "gas": bench.finalize(ev)})
    return rows


def targets(
    gas: dict[str, int],
    commits: list[dict[str, Any]],
    opens: list[dict[str, Any]],
    finals: list[dict[str, Any]],
    panel: dict[str, Any],
) -> list[dict[str, Any]]:
    """The issue's targets, each with its limit, the measured value and whether it is met."""
    m100 = next(r for r in commits if r["m"] == 100)
    spread = max(r["middle"] for r in commits) - min(r["middle"] for r in commits)
    # "Independent" allows what calldata alone explains: a root or index with more zero bytes is cheaper.
    calldata_noise = 100
    most = opens[-1]
    challenge = gas[f"commitChallenge{LATER}"] + gas[f"revealChallenge{LATER}"]
    final_spread = max(r["gas"] for r in finals) - min(r["gas"] for r in finals)
    rows = [
        {
            "target": "commitBatch gas independent of m (spread over m = 1..256)",
            "limit": calldata_noise,
            "measured": spread,
        },
        {"target": "commitBatch gas per interval at m = 100", "limit": 1000, "measured": m100["per_interval"]},
        {
            "target": f"openBatch gas per sampled interval (m = 100, {most['sampled']} sampled)",
            "limit": 30000,
            "measured": most["per_interval"],
        },
        {
            "target": "commitChallenge + revealChallenge gas (a task's first challenge, not the chain's)",
            "limit": 200000,
            "measured": challenge,
        },
        {
            "target": f"drawPanel gas, first round, {panel['auditors']} auditors",
            "limit": 1_000_000,
            "measured": panel["gas"],
        },
        {
            "target": f"finalize gas spread, {FINALIZE_BATCHES[0]} vs {FINALIZE_BATCHES[-1]} batches",
            "limit": calldata_noise,
            "measured": final_spread,
        },
        {
            "target": f"settleSeats gas per call, {panel['settle_seats']} seats in {len(panel['settle_gas'])} "
            f"calls of at most {panel['seats_per_call']}",
            "limit": 2_000_000,
            "measured": max(panel["settle_gas"]),
        },
    ]
    for row in rows:
        row["met"] = row["measured"] <= row["limit"]
    return rows


# --- running --------------------------------------------------------------------------------------


def drand_cost(bench: Bench) -> None:
    """A round's verification on DrandBeacon deployed for quicknet, then the same round again."""
    quicknet = drand.known_networks(REPO / "deploy" / "drand.json")["quicknet"]
    artifact = artifacts.load("DrandBeacon")
    factory = bench.w3.eth.contract(abi=artifact.abi, bytecode=artifact.bytecode)
    network = quicknet.network
    key = drand.g2_for_contract(network.public_key)
    delay = network.period
    deploy_tx = factory.constructor(key, network.genesis, network.period, delay).transact(
        {"from": bench.accounts[OWNER]}
    )
    address = bench.w3.eth.wait_for_transaction_receipt(deploy_tx)["contractAddress"]
    beacon = bench.w3.eth.contract(address=address, abi=artifact.abi).functions
    signature, round_ = drand.g1_for_contract(quicknet.known_signature), quicknet.known_round
    bench.send(beacon.submitRound(round_, signature), KEEPER, label="DrandBeacon.submitRound (verifies a round)")
    assert beacon.randomnessOf(round_).call() == quicknet.known_randomness, "drand's published randomness"
    bench.send(beacon.submitRound(round_, signature), KEEPER, label="DrandBeacon.submitRound (a round already there)")


def deploy(w3: Web3, folder: Path, network: drand.Network) -> tuple[Contract, Contract]:
    """The production plan (deploy/plan.py) on this chain, drand backend for ``network``; the pair."""
    choice = RandomnessChoice("drand", network)  # the plan's delay for a chain other than the devnet
    deployer = Deployer.open(w3, devnet_account(0), folder / "deployments.json", choice)
    addresses = run_plan(REPO / "deploy" / "plan.py", deployer).addresses()
    return tuple(  # type: ignore[return-value]
        w3.eth.contract(address=addresses[name], abi=artifacts.load(name).abi)
        for name in ("TrainingTasks", "AuditCommittee")
    )


def open_bench(w3: Web3, folder: Path) -> Bench:
    """The production plan deployed on this chain, drawing from a beacon with the devnet's published key
    whose round 1 is now."""
    network = devnet_network(int(w3.eth.get_block("latest")["timestamp"]), period=3)
    tasks, committee = deploy(w3, folder, network)
    return Bench(w3, tasks, committee, network)


def measure(url: str, folder: Path, console: Console) -> dict[str, Any]:
    w3 = connect(url)
    bench = open_bench(w3, folder)
    with console.status("every call ..."):
        every_call(bench)
    with console.status("commitBatch by m ..."):
        commits = commit_cost(bench)
    with console.status("openBatch by sample size ..."):
        opens = open_cost(bench)
    with console.status("finalize by batch count ..."):
        finals = finalize_cost(bench)
    with console.status(f"drawPanel with {REGISTRY} auditors ..."):
        panel = panel_cost(bench)
    with console.status("DrandBeacon ..."):
        drand_cost(bench)
    return {
        "calls": bench.gas,
        "commit_batch": commits,
        "open_batch": opens,
        "finalize": finals,
        "draw_panel": panel,
        "targets": targets(bench.gas, commits, opens, finals, panel),
    }


def print_tables(console: Console, results: dict[str, Any]) -> None:
    calls = Table(title="gas per call (receipt gasUsed)")
    calls.add_column("call")
    calls.add_column("gas", justify="right")
    for name, gas in results["calls"].items():
        calls.add_row(name, f"{gas:,}")
    console.print(calls)
    scaling = Table(title="scaling")
    for column in ("measure", "value"):
        scaling.add_column(column, justify="right" if column == "value" else "left")
    for r in results["commit_batch"]:
        gas = f"{r['first']:,} / {r['middle']:,} / {r['last']:,}"
        scaling.add_row(
            f"commitBatch, m = {r['m']} (first / middle / last batch)", f"{gas} = {r['per_interval']:,.0f} per interval"
        )
    for r in results["open_batch"]:
        scaling.add_row(
            f"openBatch, m = 100, {r['sampled']} sampled", f"{r['gas']:,} = {r['per_interval']:,.0f} per interval"
        )
    scaling.add_row(
        "openBatch, one more sampled interval (marginal)", f"{results['open_batch'][0]['marginal_per_interval']:,.0f}"
    )
    for r in results["finalize"]:
        scaling.add_row(f"finalize, {r['batches']} batches", f"{r['gas']:,}")
    scaling.add_row(
        f"drawPanel, first round, {results['draw_panel']['auditors']} auditors", f"{results['draw_panel']['gas']:,}"
    )
    console.print(scaling)
    goals = Table(title="targets")
    for column in ("target", "limit", "measured", "met"):
        goals.add_column(column, justify="left" if column == "target" else "right")
    for t in results["targets"]:
        met = "[green]yes" if t["met"] else "[red]no"
        goals.add_row(t["target"], f"{t['limit']:,}", f"{t['measured']:,.0f}", met)
    console.print(goals)


def main() -> None:
    stale = artifacts.stale_sources(REPO)
    if stale:
        raise SystemExit(f"artifacts are older than {', '.join(stale)}: run `ovig compile` first")
    console = Console(width=150)
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [
            str(tools.anvil()),
            "--port",
            str(port),
            "--mnemonic",
            DEVNET_MNEMONIC,
            "--accounts",
            str(ACCOUNTS),
            "--balance",
            "1000000",
            "--chain-id",
            str(BENCH_CHAIN_ID),
        ]
        anvil = start_process(
            "anvil", argv, log=Path(tmp) / "anvil.log", ready=lambda: anvil_health(url)[0], timeout=60
        )
        try:
            results = measure(url, Path(tmp), console)
        finally:
            terminate(anvil)
    print_tables(console, results)
    machine = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}
    compiler = artifacts.load("TrainingTasks").compiler
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": machine, "compiler": compiler, **results}, indent=2) + "\n")
    console.print(f"written {RESULTS}")


if __name__ == "__main__":
    main()
