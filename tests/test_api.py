"""The owner API and dashboard against a private devnet holding a real history, built in-process with no
training: an honest task (sampled, opened with real Merkle proofs, finalized, paid, withdrawn), a task
slashed by a dispute (challenge with a report on IPFS, a panel of three voting faulty), and a task still
posted. JSON is checked to the wei and against the contracts' views; the dashboard in headless Chromium;
the OpenAPI schema with schemathesis.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from eth_abi import encode
from eth_utils import keccak
from hypothesis import HealthCheck, settings
from rich.console import Console
from web3 import Web3
from web3.logs import DISCARD

from ovig_node.api import models as m
from ovig_node.api import queries
from ovig_node.api.dashboard import TASK_COLUMNS, WORDS, eth
from ovig_node.api.main import create_app
from ovig_node.api.routers.health import trusted_watchers
from ovig_node.api.server import serving
from ovig_node.api.settings import ApiSettings, devnet_settings
from ovig_node.api.watchers import WatcherVerdicts
from ovig_node.chain.accounts import devnet_account
from ovig_node.chain.client import ChainClient
from ovig_node.chain.contracts import Protocol, TaskStatus
from ovig_node.chain.errors import ChainError
from ovig_node.chain.journal import TxJournal
from ovig_node.chain.randomness import BeaconRelays, for_contract
from ovig_node.chain.rpc import connect
from ovig_node.devnet.processes import free_port
from ovig_node.nodes.context import Connection, open_node
from ovig_node.protocol.attestation import Attestation, Domain, sign
from ovig_node.protocol.merkle import MerkleTree, leaf_hash
from ovig_node.storage.ipfs import IpfsClient
from support import deployed_devnet

REPO = Path(__file__).resolve().parents[1]
ETHER = 10**18
OWNER, PROVIDER_A, PROVIDER_B, WATCHER, AUDITORS = 0, 1, 2, 3, (4, 5, 6)
WATCHER_2, UNKNOWN, COPIER = 7, 8, 9  # attesters: a watcher the API trusts, one it knows nothing of, a copier
N, S, M, SAMPLE_BPS = 120, 10, 4, 5000  # K = 12 intervals in B = 3 batches; two of each batch sampled
K, B = 12, 3
REWARD, PROVIDER_BOND, CHALLENGER_BOND = 2 * ETHER, 3 * ETHER, ETHER // 10
REPLAY_SECONDS = 10  # under the devnet committee's maxReplaySeconds
WINDOWS = (30, 8, 20)  # opening, challenge, challenge reveal (seconds)
CHALLENGED = K - 1  # the deliverable: always sampled
FAULTY = 2  # vote
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 100.0)
# The numbers a report table shows in each row, as text.
SHOWN_NUMBERS = "rows => rows.map(r => ['value', 'bound', 'limit'].map(c => r.querySelector(`.${c}`).textContent))"


def address(index: int) -> str:
    return devnet_account(index).address


def digest(task: int, k: int) -> bytes:
    """Stand-in evidence digest of E_k (sha256 of a label: nothing here trains)."""
    return hashlib.sha256(f"evidence of task {task} interval {k}".encode()).digest()


def end_step(k: int) -> int:
    return min((k + 1) * S, N)


def synthetic_report(task: int) -> dict[str, Any]:
    """The shape ovig_node.verify.report writes: every signal within its limit but the probe gradient,
    which is out from p99 up (so the judge computed its rounding floor: none at p99.9 and p100)."""
    signals: dict[str, Any] = {}
    for name, base in (("weights", 1e-7), ("optim", 1e-9), ("probe", 1e-6)):
        signals[name] = {}
        for kind, scale in (("abs", 1.0), ("rel", 1e3)):
            rows = []
            for i, p in enumerate(PERCENTILES):
                bound = base * scale * 10 ** (i / 2)
                limit = 3 * bound
                value = limit * 2000 if name == "probe" and p >= 99 else bound / 2
                floor = (bound / 100 if p < 99.9 else 0.0) if name == "probe" else None
                rows.append(
                    {"p": p, "value": value, "bound": bound, "floor": floor, "limit": limit, "ok": value <= limit}
                )
            signals[name][kind] = rows
    return {
        "task": task,
        "interval": CHALLENGED,
        "end_step": N,
        "verdict": "faulty",
        "reason": "out_of_bounds",
        "detail": "probe outside the boundary",
        "signals": signals,
        "margin": 3.3,
        "profile": {"name": "threads2"},
        "replays": ["threads2"],
        "seconds": {"replay": 1.5, "compare": 0.1},
    }


# --- the history ---------------------------------------------------------------------------------


@dataclass
class Chain:
    """Devnet test accounts sending protocol transactions, and anvil's clock."""

    w3: Web3
    protocol: Protocol
    folder: Path
    beacon: BeaconRelays
    clients: dict[int, ChainClient] = field(default_factory=dict)
    sent: int = 0

    def send(self, index: int, fn: Any, *, value: int = 0) -> Any:
        if index not in self.clients:
            self.clients[index] = ChainClient(self.w3, devnet_account(index), TxJournal(self.folder / f"{index}.db"))
        self.sent += 1
        return self.clients[index].transact(f"tx{self.sent}", fn, value=value)

    def mine(self, blocks: int) -> None:
        self.w3.provider.make_request("anvil_mine", [hex(blocks)])  # type: ignore[arg-type]

    def skip(self, seconds: int) -> None:
        """Move chain time on (the windows are in seconds); safe: nothing else acts on this chain."""
        self.w3.provider.make_request("evm_increaseTime", [seconds])  # type: ignore[arg-type]
        self.mine(1)

    def now(self) -> int:
        return int(self.w3.eth.get_block("latest")["timestamp"])

    def reach(self, target: int) -> None:
        """Make drand round ``target`` ready as a keeper does: once chain time reaches it (the devnet beacon
        keeps the chain's clock), fetch it from the devnet beacon and submit it."""
        source = self.protocol.randomness
        assert source.network is not None, "the devnet deploys the drand backend"
        if source.value(target)[0]:
            return
        if self.now() < source.network.round_time(target):
            self.skip(source.network.round_time(target) - self.now())
        [signature] = self.beacon.signatures(target)
        self.send(WATCHER, source.contract.functions.submitRound(target, for_contract(signature)))


def trees(task: int) -> list[MerkleTree]:
    return [
        MerkleTree.build([leaf_hash(task, k, end_step(k), digest(task, k)) for k in range(j * M, min((j + 1) * M, K))])
        for j in range(B)
    ]


def opening(task: int, k: int) -> tuple[Any, ...]:
    """The Opening struct for interval k: its end leaf's proof and (k > 0) its start leaf's."""
    batch_trees = trees(task)
    end_proof = batch_trees[k // M].proof(k % M)
    if k == 0:
        return (k, end_step(k), digest(task, k), end_proof, 0, bytes(32), [])
    start_proof = batch_trees[(k - 1) // M].proof((k - 1) % M)
    return (k, end_step(k), digest(task, k), end_proof, end_step(k - 1), digest(task, k - 1), start_proof)


@dataclass
class History:
    url: str
    app: Any
    chain: Chain
    settings: ApiSettings
    honest: int
    slashed: int
    posted: int
    dispute: int
    report: dict[str, Any]
    report_cid: str
    sampled: dict[int, list[int]]  # task -> sampled intervals, ascending, as the contract reports them
    opening_cids: dict[tuple[int, int], str]
    attested: dict[str, int]  # the slashed task's intervals attest_the_slashed_task attested (k1, k2, unopened)

    def get(self, path: str, **params: Any) -> Any:
        response = httpx.get(f"{self.url}{path}", params=params, timeout=10)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()


def build_history(chain: Chain, ipfs_url: str) -> dict[str, Any]:
    tasks = chain.protocol.tasks.functions
    committee = chain.protocol.committee.functions
    deadline = chain.now() + 3600
    ids = []
    for _ in range(3):
        receipt = chain.send(
            OWNER,
            tasks.postTask(
                b"\x11" * 32,
                "QmSpecOfTheTask",
                b"\x22" * 32,
                N,
                S,
                M,
                SAMPLE_BPS,
                (PROVIDER_BOND, CHALLENGER_BOND),
                REPLAY_SECONDS,
                WINDOWS,
                deadline,
            ),
            value=REWARD,
        )
        ids.append(int(chain.protocol.tasks.events.TaskPosted().process_receipt(receipt)[0]["args"]["task"]))
    honest, slashed, posted = ids
    for auditor in AUDITORS:  # early: auditors must be registered warmupBlocks before the reveal
        chain.send(auditor, committee.register(), value=ETHER)
    providers = {honest: PROVIDER_A, slashed: PROVIDER_B}
    for task, provider in providers.items():
        chain.send(provider, tasks.acceptTask(task), value=PROVIDER_BOND)
        for j, tree in enumerate(trees(task)):
            chain.send(provider, tasks.commitBatch(task, j, tree.root, f"QmManifest{task}x{j}"))
    sampled: dict[int, list[int]] = {}
    opening_cids = {}
    for task, provider in providers.items():
        for j in range(B):
            chain.reach(chain.protocol.batch(task, j).seedTarget)
            chain.send(WATCHER, tasks.drawSeed(task, j))
            ks = chain.protocol.sampled(task, j)
            sampled.setdefault(task, []).extend(sorted(ks))
            opening_cids[(task, j)] = f"QmOpening{task}x{j}"
            chain.send(provider, tasks.openBatch(task, j, opening_cids[(task, j)], [opening(task, k) for k in ks]))

    # The watcher challenges the deliverable of the slashed task, with its report on IPFS.
    report = synthetic_report(slashed)
    with IpfsClient(ipfs_url) as ipfs:
        report_cid = ipfs.add_bytes(json.dumps(report).encode(), name="report.json").cid
    salt = b"\x33" * 32
    commitment = keccak(
        encode(["uint256", "uint256", "uint8", "bytes32", "address"], [slashed, CHALLENGED, 1, salt, address(WATCHER)])
    )
    chain.send(WATCHER, tasks.commitChallenge(slashed, commitment), value=CHALLENGER_BOND)
    receipt = chain.send(WATCHER, tasks.revealChallenge(slashed, CHALLENGED, 1, salt, report_cid))
    [revealed] = chain.protocol.tasks.events.ChallengeRevealed().process_receipt(receipt, errors=DISCARD)
    dispute = int(revealed["args"]["dispute"])

    # The panel (all three auditors) votes faulty; windows are skipped with anvil's clock.
    chain.reach(committee.panelTarget(dispute).call())
    chain.send(WATCHER, committee.drawPanel(dispute))
    for auditor in AUDITORS:
        vote_hash = keccak(
            encode(
                ["uint256", "uint256", "uint8", "bytes32", "address"],
                [dispute, 0, FAULTY, bytes([auditor]) * 32, address(auditor)],
            )
        )
        chain.send(auditor, committee.commitVote(dispute, vote_hash))
    chain.skip(31)
    for auditor in AUDITORS:
        chain.send(auditor, committee.revealVote(dispute, FAULTY, bytes([auditor]) * 32))
    chain.skip(21)
    chain.send(WATCHER, committee.resolve(dispute))  # round 0 decided: appealable for the devnet's 10 s
    chain.skip(11)
    chain.send(WATCHER, committee.resolve(dispute))  # unappealed: the verdict stands
    chain.send(WATCHER, committee.settleSeats(dispute))  # the committee pays the panel's share to its seats
    chain.send(WATCHER, tasks.claimBond(slashed, address(WATCHER), commitment))  # the joined bond comes back
    chain.send(WATCHER, tasks.finalize(honest))
    chain.send(PROVIDER_A, tasks.withdraw())
    attested = attest_the_slashed_task(chain, slashed, sampled[slashed])
    return {
        "attested": attested,
        "honest": honest,
        "slashed": slashed,
        "posted": posted,
        "dispute": dispute,
        "report": report,
        "report_cid": report_cid,
        "sampled": sampled,
        "opening_cids": opening_cids,
    }


def attest_the_slashed_task(chain: Chain, task: int, sampled: list[int]) -> dict[str, int]:
    """Attestations of the slashed task's sound intervals (protocol 8.4), each in its sender's name: the trusted
    watcher 2 (account 7) and an unknown watcher (account 8) attest k1, the unknown one k2. What readers must
    not keep: account 9 announcing watcher 2's signature of k2 (a copy: the signer is not the sender), watcher
    2's attestation of an unopened interval, one signed for another chain, one signed over another opening of
    k2, watcher 2's k1 again with another document CID (its first stands), and malformed ones."""
    domain = Domain(int(chain.w3.eth.chain_id), chain.protocol.tasks.address)
    tasks = chain.protocol.tasks.functions
    k1, k2 = sampled[0], sampled[1]
    unopened = next(k for k in range(K) if k not in sampled)

    def announce(
        sender: int,
        k: int,
        *,
        signer: int | None = None,
        on: Domain = domain,
        end: bytes | None = None,
        doc: str | None = None,
        at: int = task,
        verdict: int = 1,
        profile: str | None = None,
    ) -> None:
        who = sender if signer is None else signer
        a = Attestation(
            at,
            k,
            digest(task, k) if end is None else end,
            verdict,
            f"QmReport{who}x{k}",
            f"profile of {who}" if profile is None else profile,
        )
        signature = sign(a, on, devnet_account(who))
        chain.send(sender, tasks.attest(at, k, verdict, a.profile, a.report_cid, doc or f"QmDoc{who}x{k}", signature))

    announce(WATCHER_2, k1)
    announce(UNKNOWN, k1)
    announce(UNKNOWN, k2)
    announce(COPIER, k2, signer=WATCHER_2)  # watcher 2's signature, sent by someone else
    announce(WATCHER_2, unopened)  # nothing was opened to replay
    announce(WATCHER_2, k2, on=Domain(1, chain.protocol.tasks.address))  # another chain's
    announce(WATCHER_2, k2, end=hashlib.sha256(b"another opening").digest())  # another opening's
    announce(WATCHER_2, k1, doc="QmSwapped")  # again: the first stands
    # What no reader may choke on: ids past SQLite's integers, markup in a profile, a verdict nobody defined.
    announce(COPIER, 2**255, at=2**200)
    announce(COPIER, k2, profile="[bold]x[/bold]; trusted")
    announce(COPIER, k2, verdict=3)
    return {"k1": k1, "k2": k2, "unopened": unopened}


def write_watcher_state(home: Path, honest: int, slashed: int, sampled: dict[int, list[int]]) -> None:
    """What a watcher node persists (``watcher.json``): valid verdicts on the honest task's sample."""
    judged = {
        f"{honest}:{k}": {"verdict": "valid", "reason": "within_bounds", "report": "QmWatch"} for k in sampled[honest]
    }
    judged[f"{slashed}:{CHALLENGED}"] = {"verdict": "faulty", "reason": "out_of_bounds", "report": "QmChallenge"}
    # Layer one's scores of the slashed task's first batch (a claimed NaN scores infinite).
    screened = {f"{slashed}:0": {"requested": [1], "scores": {str(k): score for k, score in LAYER_ONE.items()}}}
    home.mkdir(parents=True, exist_ok=True)
    (home / "watcher.json").write_text(json.dumps({"judged": judged, "screened": screened}))


LAYER_ONE = {0: 0.0, 1: 7.5, 2: math.inf}


def own_node(devnet_dir: Path, index: int) -> Path:
    """Where `ovig watcher --account INDEX` keeps its state by default (docs/operations.md)."""
    return devnet_dir / "nodes" / f"watcher-{index}"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    folder = tmp_path_factory.mktemp("api")
    with deployed_devnet(folder) as net:
        info = net.info()
        w3 = connect(info.rpc_url)
        assert info.beacon_url is not None
        chain = Chain(w3, Protocol.at(w3, info.contracts), folder / "journals", BeaconRelays((info.beacon_url,)))
        chain.folder.mkdir()
        built = build_history(chain, info.ipfs_api_url)
        # The owner's own watcher nodes, where `ovig watcher --account N` keeps them: the API
        # finds them with no flag, reads the verdicts in their state and trusts their accounts' attestations.
        for index in (WATCHER, WATCHER_2):
            connection = Connection(devnet_dir=net.data_dir, account_index=index)
            open_node("watcher", own_node(net.data_dir, index), connection, console=Console(quiet=True)).close()
        write_watcher_state(own_node(net.data_dir, WATCHER), built["honest"], built["slashed"], built["sampled"])
        labels = {
            address(OWNER): "owner",
            address(WATCHER): "watcher",
            address(PROVIDER_A): "provider A",
            address(PROVIDER_B): "provider B",
            address(WATCHER_2): "watcher 2",
            **{address(a): f"auditor {a - 3}" for a in AUDITORS},
        }
        # No --watcher-home, no --trust-attester: what a first-time owner runs.
        api_settings = devnet_settings(net.data_dir, home=folder / "api", labels=labels, gateway="https://ipfs.example")
        app = create_app(api_settings)
        with serving(app, port=free_port()) as url:
            assert app.state.ovig.indexer.wait_for_block(w3.eth.block_number, timeout=60), "the indexer lags"
            yield History(url, app, chain, api_settings, **built)


# --- JSON ----------------------------------------------------------------------------------------


def test_task_list_filters_and_pages(history: History) -> None:
    h = history
    page = h.get("/api/tasks", order="asc")
    assert page["total"] == 3 and (page["limit"], page["offset"]) == (50, 0)
    assert [(t["task"], t["status"], t["provider"]) for t in page["items"]] == [
        (h.honest, "finalized", address(PROVIDER_A)),
        (h.slashed, "slashed", address(PROVIDER_B)),
        (h.posted, "posted", None),
    ]
    first = page["items"][0]
    assert first["owner"] == address(OWNER)
    assert (first["reward"], first["provider_bond"]) == (str(REWARD), str(PROVIDER_BOND))
    counts = (first["intervals"], first["batch_count"], first["committed_batches"], first["opened_batches"])
    assert counts == (K, B, B, B)
    assert first["posted_at"] > 0
    assert [t["task"] for t in h.get("/api/tasks")["items"]] == [h.posted, h.slashed, h.honest]  # newest first
    assert [t["task"] for t in h.get("/api/tasks", status="slashed")["items"]] == [h.slashed]
    assert [t["task"] for t in h.get("/api/tasks", provider=address(PROVIDER_A).lower())["items"]] == [h.honest]
    assert h.get("/api/tasks", owner=address(OWNER))["total"] == 3
    assert h.get("/api/tasks", owner=address(WATCHER))["total"] == 0
    one = h.get("/api/tasks", order="asc", limit=1, offset=1)
    assert (one["total"], [t["task"] for t in one["items"]]) == (3, [h.slashed])
    # Pages are serialised by SQLite, single tasks by the models: the same fields, the same values.
    for t in page["items"]:
        detail = h.get(f"/api/tasks/{t['task']}")
        assert t == {key: detail[key] for key in t}
    # The index agrees with the contract on every task.
    for t in page["items"]:
        assert t["status"] == TaskStatus(h.chain.protocol.task(t["task"]).status).name.lower()


def test_honest_task_has_its_batches_samples_openings_and_payout(history: History) -> None:
    h = history
    task = h.get(f"/api/tasks/{h.honest}")
    assert task["status"] == "finalized" and task["slashed"] is None
    assert task["terms"]["windows"] == {"opening": 30, "challenge": 8, "reveal": 20}
    assert (task["terms"]["challenger_bond"], task["terms"]["sample_bps"]) == (str(CHALLENGER_BOND), SAMPLE_BPS)
    assert task["spec_cid"] == "QmSpecOfTheTask"
    views = h.chain.protocol
    for batch, tree in zip(task["batches"], trees(h.honest), strict=True):
        j = batch["j"]
        assert batch["status"] == "opened"
        assert batch["root"] == "0x" + tree.root.hex()
        assert batch["manifest_cid"] == f"QmManifest{h.honest}x{j}"
        assert batch["opening_cid"] == h.opening_cids[(h.honest, j)]
        assert batch["sampled"] == views.sampled(h.honest, j)
        assert batch["challenge_window_end"] == views.batch(h.honest, j).windowEnd
    # Half of each batch; the last batch's draw always includes the deliverable.
    assert [len(b["sampled"]) for b in task["batches"]] == [M // 2] * B and K - 1 in task["batches"][-1]["sampled"]
    assert task["disputes"] == []
    assert [(p["contract"], p["account"], p["amount"]) for p in task["payouts"]] == [
        ("TrainingTasks", address(PROVIDER_A), str(REWARD + PROVIDER_BOND)),  # the owner is credited nothing
    ]
    assert (task["terms"]["reward"], task["terms"]["replay_seconds"]) == (str(REWARD), REPLAY_SECONDS)
    openings = h.get(f"/api/tasks/{h.honest}/openings")
    assert [o["k"] for o in openings] == h.sampled[h.honest]
    for o in openings:
        start = digest(h.honest, o["k"] - 1) if o["k"] else b"\x22" * 32  # interval 0 starts at initDigest
        assert (o["start_digest"], o["end_digest"]) == ("0x" + start.hex(), "0x" + digest(h.honest, o["k"]).hex())
        assert o["opening_cid"] == h.opening_cids[(h.honest, o["k"] // M)]
    intervals = h.get(f"/api/tasks/{h.honest}/intervals")["items"]
    assert [iv["status"] for iv in intervals] == [
        "verified" if k in h.sampled[h.honest] else "committed" for k in range(K)
    ]
    assert [iv["end_step"] for iv in intervals] == [end_step(k) for k in range(K)]


def test_slashed_task_dispute_votes_report_and_payouts(history: History) -> None:
    h = history
    task = h.get(f"/api/tasks/{h.slashed}")
    assert task["status"] == "slashed"
    assert task["slashed"] == {
        "batch": B - 1,
        "by": address(WATCHER),
        "dispute": h.dispute,
        "lead": address(WATCHER),
        "lead_paid": True,
    }
    intervals = {iv["k"]: iv for iv in h.get(f"/api/tasks/{h.slashed}/intervals")["items"]}
    assert intervals[CHALLENGED]["status"] == "faulty" and intervals[CHALLENGED]["disputes"] == [h.dispute]
    assert intervals[CHALLENGED]["watcher"] == {
        "verdict": "faulty",
        "reason": "out_of_bounds",
        "report_cid": "QmChallenge",
    }
    for k in range(K - 1):  # k1: watcher 2, whom the API trusts, attested it sound
        expected_status = (
            "verified" if k == h.attested["k1"] else "opened" if k in h.sampled[h.slashed] else "committed"
        )
        assert intervals[k]["status"] == expected_status
    expected = {**{k: None for k in range(K)}, **LAYER_ONE, 2: sys.float_info.max}  # JSON has no infinity
    assert {k: iv["layer_one_score"] for k, iv in intervals.items()} == expected
    assert [iv["status"] for iv in h.get(f"/api/tasks/{h.posted}/intervals")["items"]] == ["pending"] * K

    dispute = h.get(f"/api/disputes/{h.dispute}")
    assert {key: dispute[key] for key in ("task", "k", "reason", "status", "verdict", "round", "challenger")} == {
        "task": h.slashed,
        "k": CHALLENGED,
        "reason": "out_of_bounds",
        "status": "resolved",
        "verdict": "faulty",
        "round": 0,
        "challenger": address(WATCHER),
    }
    assert dispute["report_cid"] == h.report_cid
    # What round 0 decided (RoundDecided), kept after the dispute resolved; its appeals closed unused.
    [decided] = h.chain.protocol.committee.events.RoundDecided().get_logs(from_block=0)
    assert (dispute["outcome"], dispute["appeal_until"]) == ("faulty", decided["args"]["appealUntil"])
    [round_0] = dispute["rounds"]
    assert dispute["appeals"] == []  # round 0 decided and nobody appealed within the window
    assert sorted(round_0["panel"]) == sorted(address(a) for a in AUDITORS)
    assert sorted((v["panelist"], v["committed"], v["vote"]) for v in round_0["votes"]) == sorted(
        (address(a), True, "faulty") for a in AUDITORS
    )
    assert round_0["reveal_end"] - round_0["commit_end"] == 20  # the devnet committee's reveal window

    # Protocol 4.2, faulty: the provider bond 20% lead, 10% panel, 70% owner; reward and the lead's bond back.
    # The panel's 10% is handed to the committee in one sum (v3), which pays each seat as it settles them.
    panel = PROVIDER_BOND * 1_000 // 10_000
    committee = h.chain.protocol.committee
    expected = {
        address(WATCHER): PROVIDER_BOND * 2_000 // 10_000 + CHALLENGER_BOND,
        address(OWNER): PROVIDER_BOND * 7_000 // 10_000 + REWARD,
        committee.address: panel,
        **{address(a): panel // 3 for a in AUDITORS},
    }
    paid: dict[str, int] = {}
    for p in dispute["payouts"]:
        paid[p["account"]] = paid.get(p["account"], 0) + int(p["amount"])
    assert paid == expected
    # The task's payouts are the same credits, one row each: the lead's share at the settlement, then its
    # joined bond when claimed back.
    assert dispute["payouts"] == task["payouts"]
    assert [(p["account"], p["amount"]) for p in task["payouts"] if p["account"] == address(WATCHER)] == [
        (address(WATCHER), str(PROVIDER_BOND * 2_000 // 10_000)),
        (address(WATCHER), str(CHALLENGER_BOND)),
    ]
    payouts = h.get("/api/payouts", task=h.slashed)
    assert (payouts["total"], payouts["items"]) == (7, task["payouts"])
    seats = {c["account"]: int(c["credited"]) for c in h.get("/api/credits") if c["contract"] == "AuditCommittee"}
    assert seats == {address(a): panel // 3 for a in AUDITORS}
    assert h.get(f"/api/disputes/{h.dispute}/report") == h.report
    assert h.get("/api/disputes", task=h.slashed)["items"] == [
        {k: v for k, v in dispute.items() if k not in ("commitment", "opened_block", "rounds", "appeals", "payouts")}
    ]
    assert h.get("/api/disputes", status="voting")["total"] == 0


def test_attestations_are_kept_when_signed_by_who_they_name_and_trusted_ones_mark_verified(history: History) -> None:
    h = history
    k1, k2, unopened = h.attested["k1"], h.attested["k2"], h.attested["unopened"]
    intervals = {iv["k"]: iv for iv in h.get(f"/api/tasks/{h.slashed}/intervals")["items"]}
    block = {iv["k"]: [a.pop("block") for a in iv["attestations"]] for iv in intervals.values()}

    def attestation(who: int, k: int, *, name: str | None, trusted: bool) -> dict[str, Any]:
        return {
            "watcher": address(who),
            "name": name,
            "trusted": trusted,
            "sound": True,
            "profile": f"profile of {who}",
            "report_cid": f"QmReport{who}x{k}",
            "attestation_cid": f"QmDoc{who}x{k}",
        }

    assert intervals[k1]["attestations"] == [  # trusted first; the swapped document CID did not replace the first
        attestation(WATCHER_2, k1, name="watcher 2", trusted=True),
        attestation(UNKNOWN, k1, name=None, trusted=False),
    ]
    assert [iv["attested_by"] for iv in (intervals[k1], intervals[k2])] == [2, 1]
    assert block[k1] == sorted(block[k1])
    # The forged one (watcher 2's name, account 8's key) and the other chain's are not kept: k2 stays "opened".
    assert intervals[k2]["attestations"] == [attestation(UNKNOWN, k2, name=None, trusted=False)]
    assert (intervals[k1]["status"], intervals[k2]["status"]) == ("verified", "opened")
    assert intervals[unopened]["attestations"] == [] and intervals[unopened]["status"] == "committed"
    assert all(iv["attestations"] == [] for k, iv in intervals.items() if k not in (k1, k2))
    coverage = h.get(f"/api/tasks/{h.slashed}/coverage")
    assert coverage == {
        "intervals": K,
        "opened": len(h.sampled[h.slashed]),
        "attested": 2,
        "trusted_attested": 1,
        "by_watchers": [len(h.sampled[h.slashed]) - 2, 1, 1],
        "profiles": 2,
        "watcher_count": 2,
        "watchers": [
            {
                "watcher": address(WATCHER_2),
                "name": "watcher 2",
                "trusted": True,
                "intervals": 1,
                "profiles": [f"profile of {WATCHER_2}"],
            },
            {
                "watcher": address(UNKNOWN),
                "name": None,
                "trusted": False,
                "intervals": 2,
                "profiles": [f"profile of {UNKNOWN}"],
            },
        ],
    }
    assert h.get(f"/api/tasks/{h.honest}/coverage")["by_watchers"] == [len(h.sampled[h.honest])]
    assert h.get(f"/api/tasks/{h.posted}/coverage")["opened"] == 0
    lines = [e["text"] for e in h.get(f"/api/tasks/{h.slashed}/timeline") if e["kind"] == "attested"]
    # The timeline tells only the trusted watchers' (a flood by throwaway keys would bury it).
    assert lines == [f"watcher 2 attests interval {k1} sound (replayed on profile of {WATCHER_2})"]


def test_a_node_home_refuses_another_account_s_node_and_leaves_its_state(history: History) -> None:
    """Review 19 of v3: a home holds one chain's, one deployment's and one account's node state (its journal answers
    calls with its receipts; its judged intervals and ballots stand for that deployment's), and the default home off
    the devnet is the same for every chain and deployment. A node opened on a home marked for another refuses, in one
    line, before it touches anything there."""
    devnet = history.settings.home.parent / "devnet"
    home = own_node(devnet, WATCHER)
    marked = json.loads((home / "identity.json").read_text())
    assert marked == {"chain_id": 31337, "tasks": history.chain.protocol.tasks.address, "account": address(WATCHER)}
    before = sorted((p.name, p.stat().st_mtime_ns) for p in home.iterdir())
    connection = Connection(devnet_dir=devnet, account_index=WATCHER_2)
    with pytest.raises(ChainError) as refused:
        open_node("watcher", home, connection, console=Console(quiet=True))
    assert str(refused.value) == (
        f"{home} holds another node's state (account {address(WATCHER)} there, {address(WATCHER_2)} here): "
        "give this node its own --home"
    )
    assert sorted((p.name, p.stat().st_mtime_ns) for p in home.iterdir()) == before


def test_the_devnet_s_own_watcher_nodes_are_trusted_without_a_flag(history: History) -> None:
    """A first-time owner passes no --watcher-home and no --trust-attester: the API finds the devnet's watcher
    nodes (nodes/watcher-N), trusts the accounts they sign as, and says which attester made what verified."""
    h = history
    devnet = h.settings.home.parent / "devnet"
    assert h.settings.trusted_attesters == frozenset()
    assert h.settings.watcher_homes == (own_node(devnet, WATCHER), own_node(devnet, WATCHER_2))
    assert h.settings.own_watchers == {
        address(WATCHER): f"nodes/watcher-{WATCHER}",
        address(WATCHER_2): f"nodes/watcher-{WATCHER_2}",
    }
    assert h.get("/api/config")["trusted"] == [
        {"watcher": address(WATCHER), "name": "watcher", "node": f"nodes/watcher-{WATCHER}"},
        {"watcher": address(WATCHER_2), "name": "watcher 2", "node": f"nodes/watcher-{WATCHER_2}"},
    ]
    k1, k2 = h.attested["k1"], h.attested["k2"]
    slashed = {iv["k"]: iv for iv in h.get(f"/api/tasks/{h.slashed}/intervals")["items"]}
    # k1: watcher 2's node attested it (account 8 too, untrusted); k2: only account 8 did.
    assert (slashed[k1]["status"], slashed[k1]["verified_by"]) == (
        "verified",
        {"kind": "attestation", "watcher": address(WATCHER_2), "name": "watcher 2", "dispute": None},
    )
    assert (slashed[k2]["status"], slashed[k2]["verified_by"]) == ("opened", None)
    assert (slashed[CHALLENGED]["status"], slashed[CHALLENGED]["verified_by"]) == ("faulty", None)
    # The honest task's sample: valid in watcher 3's node's state, never attested on-chain.
    honest = h.get(f"/api/tasks/{h.honest}/intervals")["items"]
    assert [iv["verified_by"] for iv in honest] == [
        {"kind": "watcher_state", "watcher": None, "name": None, "dispute": None} if k in h.sampled[h.honest] else None
        for k in range(K)
    ]


def test_named_watchers_and_watcher_homes_are_trusted_as_well(history: History, tmp_path: Path) -> None:
    """The flags still add to what the API found: --trust-attester an address, --watcher-home a node folder
    anywhere, whose journal says which account it signs as (a node off the devnet: ovig_node.nodes.context)."""
    h = history
    devnet = h.settings.home.parent / "devnet"
    elsewhere = tmp_path / "watcher-key"
    elsewhere.mkdir()
    journal = TxJournal(elsewhere / "journal.sqlite")  # what the node's ChainClient records before it sends
    journal.record("attest:1:2", address(UNKNOWN), 0, "0x" + "ab" * 32, b"signed")
    journal.close()
    named = devnet_settings(
        devnet,
        home=tmp_path / "unused",
        watcher_homes=(elsewhere, own_node(devnet, WATCHER)),
        trusted_attesters=frozenset({address(COPIER)}),
    )
    assert named.watcher_homes == (own_node(devnet, WATCHER), own_node(devnet, WATCHER_2), elsewhere)  # each once
    assert named.own_watchers == {
        address(WATCHER): f"nodes/watcher-{WATCHER}",
        address(WATCHER_2): f"nodes/watcher-{WATCHER_2}",
        address(UNKNOWN): "watcher-key",
    }
    assert named.trusted == {address(WATCHER), address(WATCHER_2), address(UNKNOWN), address(COPIER)}
    # The routers' queries over the fixture's read model, with these settings' watchers (no second index).
    state = h.app.state.ovig
    with state.store.snapshot() as db:
        page = queries.task_intervals(
            db,
            h.slashed,
            WatcherVerdicts(named.watcher_homes),
            limit=K,
            offset=0,
            names=state.names,
            trusted=named.trusted,
        )
        coverage = queries.task_coverage(db, h.slashed, names=state.names, trusted=named.trusted)
    assert page is not None and coverage is not None
    k2 = page.items[h.attested["k2"]]
    assert (k2.status, k2.verified_by) == (
        "verified",
        m.VerifiedBy(kind="attestation", watcher=address(UNKNOWN), name=None, dispute=None),
    )
    assert (coverage.trusted_attested, [w.trusted for w in coverage.watchers]) == (2, [True, True])
    assert [(t.watcher, t.node) for t in trusted_watchers(named, state.names)] == [
        (address(WATCHER), f"nodes/watcher-{WATCHER}"),
        (address(WATCHER_2), f"nodes/watcher-{WATCHER_2}"),
        (address(UNKNOWN), "watcher-key"),
        (address(COPIER), None),
    ]


def test_credits_and_auditors_match_the_contracts(history: History) -> None:
    h = history
    views = h.chain.protocol
    credits = {(c["contract"], c["account"]): c for c in h.get("/api/credits")}
    provider = credits[("TrainingTasks", address(PROVIDER_A))]
    assert (provider["credited"], provider["withdrawn"], provider["unpaid"]) == (
        str(REWARD + PROVIDER_BOND),
        str(REWARD + PROVIDER_BOND),
        "0",
    )
    for (contract, account), c in credits.items():
        on_chain = (views.tasks if contract == "TrainingTasks" else views.committee).functions.credits(account).call()
        assert int(c["unpaid"]) == on_chain
    assert h.get("/api/credits", account=address(WATCHER).lower()) == [credits[("TrainingTasks", address(WATCHER))]]
    auditors = h.get("/api/auditors")
    assert [a["address"] for a in auditors] == [address(a) for a in AUDITORS]
    for a in auditors:
        view = views.view(views.committee, "getAuditor", a["address"])
        assert (a["stake"], a["locked"], a["registered_block"]) == (
            str(view.stake),
            str(view.openSeats * views.committee.functions.PENALTY().call()),
            view.registeredBlock,
        )
        # Registered with 1 ETH, above the devnet's stake of L x penalty: the whole value is the stake.
        assert (a["stake"], a["locked"], a["exit_requested"], a["exited"]) == (str(ETHER), "0", False, False)
    assert h.get(f"/api/auditors/{address(4)}") == auditors[0]


def test_timeline_tells_the_slashed_task_in_order(history: History) -> None:
    h = history
    timeline = h.get(f"/api/tasks/{h.slashed}/timeline")
    kinds = [e["kind"] for e in timeline]
    first_seen = sorted(set(kinds), key=kinds.index)
    assert first_seen[:5] == ["posted", "accepted", "committed", "seed", "opening"]
    assert {"window", "challenge", "dispute", "vote", "slashed", "payout"} <= set(kinds)
    texts = [e["text"] for e in timeline]
    assert f"task {h.slashed} SLASHED" in texts
    assert f"dispute {h.dispute} resolved: FAULTY" in texts
    assert f"task {h.slashed}: watcher challenges interval {CHALLENGED} (out_of_bounds) -> dispute {h.dispute}" in texts
    assert [e["time"] for e in timeline] == sorted(e["time"] for e in timeline)
    closed = [e for e in timeline if e["kind"] == "window"]
    assert f"batch {B - 1}: challenge window closed" in [e["text"] for e in closed]
    assert not any(e["upcoming"] for e in closed)
    honest = [e["kind"] for e in h.get(f"/api/tasks/{h.honest}/timeline")]
    assert "finalized" in honest and "slashed" not in honest


def test_unknown_ids_are_404_and_bad_parameters_422(history: History) -> None:
    h = history
    for path in (
        "/api/tasks/999",
        "/api/tasks/999/intervals",
        "/api/tasks/999/timeline",
        "/api/tasks/999/openings",
        "/api/disputes/999",
        "/api/disputes/999/report",
        f"/api/auditors/{address(9)}",
    ):
        response = httpx.get(h.url + path)
        assert response.status_code == 404, path
        assert "no " in response.json()["detail"]
    for path, params in (
        ("/api/tasks", {"limit": -1}),
        ("/api/tasks", {"limit": 0}),
        ("/api/tasks", {"offset": -5}),
        ("/api/tasks", {"status": "bogus"}),
        ("/api/tasks", {"owner": "0x1234"}),
        ("/api/tasks", {"order": "sideways"}),
        ("/api/tasks/0", {}),
        ("/api/tasks/abc", {}),
        ("/api/tasks/99999999999999999999999", {}),
        ("/api/disputes", {"status": "bogus"}),
        ("/api/payouts", {"account": "nobody"}),
        ("/api/auditors/0xnothex", {}),
    ):
        assert httpx.get(h.url + path, params=params).status_code == 422, (path, params)


def test_health_reports_head_index_and_lag(history: History) -> None:
    health = history.get("/health")
    assert health["ok"] is True and health["error"] is None
    assert health["chain_id"] == 31337
    assert health["indexed_block"] <= health["head_block"] and health["lag_blocks"] <= 2
    assert health["events"] > 40 and health["last_poll_seconds_ago"] < 5
    config = history.get("/api/config")
    assert config["gateway"] == "https://ipfs.example" and config["reports"] is True
    assert config["contracts"] == history.settings.contracts
    assert httpx.get(history.url + "/docs").status_code == 200


def test_an_unreachable_chain_shows_in_health_and_nothing_fails(tmp_path: Path) -> None:
    rpc = f"http://127.0.0.1:{free_port()}"
    contracts = {"TrainingTasks": address(8), "AuditCommittee": address(9)}
    app = create_app(ApiSettings(rpc_url=rpc, contracts=contracts, home=tmp_path, poll_seconds=0.2))
    with serving(app, port=free_port()) as url:
        deadline = time.monotonic() + 10
        while (health := httpx.get(f"{url}/health").json())["error"] is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert health["ok"] is False and health["head_block"] is None
        assert health["error"] == f"RpcUnavailable: RPC endpoint {rpc} is unavailable: ConnectionError"
        assert httpx.get(f"{url}/api/tasks").json() == {"total": 0, "limit": 50, "offset": 0, "items": []}
        assert httpx.get(f"{url}/api/tasks/1").status_code == 404


def test_a_fresh_index_and_a_refold_serve_the_same_json(history: History, tmp_path: Path) -> None:
    """The read model is a cache of the events: indexing from scratch, and re-folding after the model
    loses count, give the very same answers."""
    fresh = create_app(replace(history.settings, home=tmp_path / "fresh"))
    indexer = fresh.state.ovig.indexer
    with serving(fresh, port=free_port()) as url, httpx.Client(base_url=url) as client:
        assert indexer.wait_for_block(history.chain.w3.eth.block_number, timeout=60)
        paths = [
            f"/api/tasks/{history.slashed}",
            f"/api/disputes/{history.dispute}",
            "/api/credits",
            "/api/auditors",
            f"/api/tasks/{history.honest}/intervals",
        ]
        before = {p: client.get(p).json() for p in paths}
        assert before == {p: history.get(p) for p in paths}
        with sqlite3.connect(tmp_path / "fresh" / "api.sqlite") as db:
            db.execute("UPDATE meta SET value = '0' WHERE key = 'events'")
        target = history.chain.w3.eth.block_number + 2
        history.chain.mine(2)
        assert indexer.wait_for_block(target, timeout=30)
        with sqlite3.connect(tmp_path / "fresh" / "api.sqlite") as db:
            assert int(db.execute("SELECT value FROM meta WHERE key = 'events'").fetchone()[0]) == indexer.status.events
        assert {p: client.get(p).json() for p in paths} == before


def test_ovig_api_serve_serves_the_devnet_and_stops_on_ctrl_c(history: History, tmp_path: Path) -> None:
    port = free_port()
    devnet_dir = history.settings.home.parent / "devnet"
    label = f"{address(OWNER).lower()}=the owner"
    argv = [
        str(Path(sys.executable).parent / "ovig"),
        "api",
        "serve",
        "--devnet",
        "--devnet-dir",
        str(devnet_dir),
        "--home",
        str(tmp_path / "index"),
        "--port",
        str(port),
        "--label",
        label,
        "--trust-attester",
        address(COPIER).lower(),
    ]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/tasks", timeout=2).json()["total"] == 3:
                    break
            except (httpx.HTTPError, KeyError):
                pass
            time.sleep(0.3)
        else:
            raise AssertionError("`ovig api serve` did not index the devnet's three tasks")
        config = httpx.get(f"http://127.0.0.1:{port}/api/config").json()
        assert config["labels"] == {address(OWNER): "the owner"}
        # The devnet's own watcher nodes, found with no flag, then the one the flag named.
        assert [(t["watcher"], t["node"]) for t in config["trusted"]] == [
            (address(WATCHER), f"nodes/watcher-{WATCHER}"),
            (address(WATCHER_2), f"nodes/watcher-{WATCHER_2}"),
            (address(COPIER), None),
        ]
        assert "<title>OVIG dashboard</title>" in httpx.get(f"http://127.0.0.1:{port}/").text
        server.send_signal(signal.SIGINT)
        output, _ = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, output
    assert f"OVIG dashboard at http://127.0.0.1:{port}/" in output
    assert (
        f"verified by: your watcher node nodes/watcher-{WATCHER} ({address(WATCHER)}), your watcher node "
        f"nodes/watcher-{WATCHER_2} ({address(WATCHER_2)}), {address(COPIER)} (--trust-attester)\n" in output
    )


def test_the_dashboard_page_arrives_with_the_task_list_in_it(history: History) -> None:
    """`/` holds the newest tasks before any script runs (a plain screenshot shows them), rendered from the
    JSON API's query, with a tooltip on every column header."""
    h = history
    page = httpx.get(h.url + "/").text
    rows = re.findall(r'<tr data-task="(\d+)">.*?data-status="(\w+)"', page, re.S)
    assert [(int(task), status) for task, status in rows] == [
        (h.posted, "posted"),
        (h.slashed, "slashed"),
        (h.honest, "finalized"),
    ]
    headers = re.findall(r'<th(?: class="num")? title="([^"]*)">([^<]*)</th>', page)
    assert [label for _, label in headers] == [label for label, _ in TASK_COLUMNS]
    assert [html.unescape(tip) for tip, _ in headers] == [WORDS["headers"][label] for label, _ in TASK_COLUMNS]
    assert "chain 31337 · head " in page and "<!--" not in page.split("</head>")[1]  # every marker filled in
    owner = address(OWNER)
    assert f'<td><span class="mono" title="{owner}">owner ({owner[:6]}…{owner[-4:]})</span></td>' in page
    assert page.count('<td class="num">2 ETH</td>') == 3  # REWARD, as app.js's eth() writes it
    assert (eth("1500000000000000001"), eth("0")) == ("1.5 ETH", "0 ETH")  # cut at 6 decimals, not rounded


def test_every_state_the_api_names_has_a_badge_colour_and_a_meaning() -> None:
    """A badge shows the state's own name, so each state needs its colour (style.css) and its tooltip."""
    css = (REPO / "ovig_node" / "api" / "static" / "style.css").read_text()
    coloured = set(re.findall(r"\.badge\.(\w+)", css))
    states = {s.value for enum in (m.TaskState, m.BatchState, m.DisputeState, m.VerdictName) for s in enum}
    states |= set(queries.BALLOTS.values())
    assert "appealable" in states and states - coloured == set()
    assert states - WORDS["states"].keys() == set()


# --- the dashboard in a real browser -------------------------------------------------------------


def test_dashboard_shows_the_slashed_task_and_its_dispute(history: History, tmp_path: Path) -> None:
    if not CHROMIUM.is_file():
        pytest.skip("no /usr/bin/chromium: `make setup` installs Debian's chromium where apt-get is available")
    from playwright.sync_api import expect, sync_playwright

    h = history
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            # With no script at all (a screenshot taken before app.js fetched anything): the task list is there.
            bare = browser.new_page(viewport={"width": 1440, "height": 600}, java_script_enabled=False)
            bare.goto(h.url + "/")
            shown = bare.locator("#tasks tbody tr").evaluate_all("rows => rows.map(r => r.dataset.task)")
            assert shown == [str(h.posted), str(h.slashed), str(h.honest)]
            assert headers_without_their_words(bare) == []
            bare.screenshot(path=str(tmp_path / "dashboard-no-script.png"))
            bare.close()

            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(h.url + "/")
            expect(page.locator("#tasks tbody tr")).to_have_count(3)
            expect(page.locator(f"#tasks tr[data-task='{h.slashed}'] [data-status]")).to_have_text("slashed")
            page.click(f"a[href='#/tasks/{h.slashed}']")
            expect(page.locator("#timeline li").first).to_be_visible()

            # The timeline, as shown.
            entries = page.locator("#timeline li").evaluate_all(
                "items => items.map(li => [li.dataset.kind, li.querySelector('.text').textContent])"
            )
            kinds = [kind for kind, _ in entries]
            assert {
                "posted",
                "accepted",
                "committed",
                "seed",
                "opening",
                "window",
                "challenge",
                "vote",
                "slashed",
            } <= set(kinds)
            assert kinds[0] == "posted"
            assert ["slashed", f"task {h.slashed} SLASHED"] in [list(e) for e in entries]

            # The interval grid: the faulty cell in the legend's faulty colour; every cell as the API says.
            cells = page.locator("#intervals [data-k]").evaluate_all(
                "cells => cells.map(c => [Number(c.dataset.k), c.dataset.status])"
            )
            api = h.get(f"/api/tasks/{h.slashed}/intervals")["items"]
            assert [tuple(c) for c in cells] == [(iv["k"], iv["status"]) for iv in api]
            faulty = page.locator(f"#intervals [data-k='{CHALLENGED}']")
            colour = faulty.evaluate("c => getComputedStyle(c).backgroundColor")
            legend = page.locator("#legend [data-legend='faulty']").evaluate("c => getComputedStyle(c).backgroundColor")
            assert colour == legend == "rgb(220, 38, 38)"
            assert faulty.get_attribute("data-status") == "faulty"
            assert page.locator("#intervals [data-k='1']").get_attribute("data-score") == "7.5"
            assert "layer-one score 7.50" in (page.locator("#intervals [data-k='1']").get_attribute("title") or "")
            # Coverage: each cell's count of sound attestations, and who attested how much.
            attested = page.locator("#intervals [data-k]").evaluate_all("cells => cells.map(c => c.dataset.attested)")
            assert attested == [str(sum(a["sound"] and a["trusted"] for a in iv["attestations"])) for iv in api]
            k1 = page.locator(f"#intervals [data-k='{h.attested['k1']}']")
            expect(k1.locator("sup.attested")).to_have_text("1")  # trusted watchers only: keys are free
            assert f"attested sound by watcher 2 (trusted) on profile of {WATCHER_2}" in (
                k1.get_attribute("title") or ""
            )
            rows = page.locator("#attesters tbody tr").evaluate_all(
                "rows => rows.map(r => [r.cells[1].textContent, r.cells[2].textContent])"
            )
            assert rows == [["your watcher node nodes/watcher-7", "1"], ["not trusted", "2"]]  # trusted first
            expect(page.locator("#coverage")).to_contain_text(f"2 of {len(h.sampled[h.slashed])} opened")
            # Verified with no trust flag: watcher 2's own node attested k1, and the cell says so.
            assert (k1.get_attribute("data-status"), k1.get_attribute("data-verified-by")) == (
                "verified",
                address(WATCHER_2),
            )
            first = h.attested["k1"]
            assert (k1.get_attribute("title") or "").startswith(
                f"interval {first} (batch {first // M}, steps to {end_step(first)}): verified, verified by "
                f"watcher 2's attestation: your watcher node nodes/watcher-{WATCHER_2}; end digest "
            )
            expect(page.locator("#trusted")).to_have_text(
                f"trusted watchers{short('watcher', WATCHER)} your watcher node nodes/watcher-{WATCHER}; "
                f"{short('watcher 2', WATCHER_2)} your watcher node nodes/watcher-{WATCHER_2}"
            )
            opened = len(h.sampled[h.slashed])
            expect(page.locator("#by-keys")).to_have_text(
                f"opened intervals by attesting keys{opened - 2} by no key, 1 by 1 key, 1 by 2 keys"
            )
            # Every column header and coverage term explains itself on hover, in words.json's words.
            assert headers_without_their_words(page) == []
            terms = page.locator("#coverage .facts > div").evaluate_all(
                "facts => facts.map(f => [f.querySelector('small').textContent, f.title])"
            )
            assert [tip for _, tip in terms] == [WORDS["facts"][term] for term, _ in terms] and len(terms) == 6
            # Badges say their state's own name: the resolved dispute reads "resolved", its verdict "faulty".
            assert badges_unlike_their_state(page) == []
            expect(page.locator("#disputes tbody tr").first.locator("[data-status]")).to_have_text(
                ["resolved", "faulty"]
            )
            shot = tmp_path / "dashboard-task.png"
            page.screenshot(path=str(shot), full_page=True)
            if os.environ.get("OVIG_UPDATE_SCREENSHOT"):  # the README's picture, refreshed on request only
                shutil.copyfile(shot, REPO / "docs" / "dashboard.png")

            # The faulty cell leads to its dispute: the report's percentiles against the boundary.
            faulty.click()
            expect(page.locator("#report figure")).to_have_count(6)
            for name, kinds_ in h.report["signals"].items():
                for kind, rows in kinds_.items():
                    figure = page.locator(f"#report figure[data-signal='{name}'][data-kind='{kind}']")
                    expect(figure.locator("svg.chart circle")).to_have_count(len(rows))
                    shown = figure.locator("tbody tr").evaluate_all(SHOWN_NUMBERS)
                    for (value, bound, limit), row in zip(shown, rows, strict=True):
                        assert float(value) == pytest.approx(row["value"], rel=1e-3)
                        assert float(bound) == pytest.approx(row["bound"], rel=1e-3)
                        assert float(limit) == pytest.approx(row["limit"], rel=1e-3)
                    outside = figure.locator("svg.chart circle.out").count()
                    assert outside == sum(not row["ok"] for row in rows)
            expect(page.locator("#round-0 tbody tr")).to_have_count(3)
            expect(page.locator("h1 .badge")).to_have_text("resolved")  # the status, as on the task page
            assert page.locator("h1 .badge").get_attribute("data-status") == "resolved"
            expect(page.locator("#dispute-status .badge")).to_have_text("resolved")
            expect(page.locator("#dispute-verdict .badge")).to_have_text("faulty")
            assert badges_unlike_their_state(page) == [] and headers_without_their_words(page) == []

            # The same dispute while it was appealable (its JSON as the API served it then): the badge reads
            # "appealable", and the verdict is what round 0 decided, standing unless appealed.
            served = h.get(f"/api/disputes/{h.dispute}")
            then = {**served, "status": "appealable", "verdict": "none"}
            page.route(f"**/api/disputes/{h.dispute}", lambda route: route.fulfill(json=then))
            page.reload()
            expect(page.locator(f"#view[data-ready='#/disputes/{h.dispute}']")).to_have_count(1)
            expect(page.locator("h1 .badge")).to_have_text("appealable")
            expect(page.locator("#dispute-status .badge")).to_have_text("appealable")
            expect(page.locator("#dispute-verdict .badge")).to_have_text("faulty")
            expect(page.locator("#dispute-verdict")).to_contain_text("decided; stands unless appealed by ")
            assert badges_unlike_their_state(page) == []
            page.screenshot(path=str(tmp_path / "dashboard-dispute.png"), full_page=True)
        finally:
            browser.close()


def test_the_documented_screenshot_command_captures_a_rendered_task_page(history: History, tmp_path: Path) -> None:
    """docs/api.md's command: Chromium's virtual time budget lets app.js fetch and render a hash-routed page
    before the capture (`/` itself needs no budget: the server renders its task list)."""
    if not CHROMIUM.is_file():
        pytest.skip("no /usr/bin/chromium")
    h = history
    url = f"{h.url}/#/tasks/{h.slashed}"
    flags = [str(CHROMIUM), *CHROMIUM_FLAGS, "--window-size=1440,2000", "--virtual-time-budget=10000"]
    shot = tmp_path / "task.png"
    subprocess.run([*flags, f"--screenshot={shot}", url], check=True, capture_output=True, timeout=60)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The same flags, the document instead of its picture: what the screenshot showed.
    dom = subprocess.run([*flags, "--dump-dom", url], check=True, capture_output=True, text=True, timeout=60).stdout
    assert f'data-ready="#/tasks/{h.slashed}"' in dom
    assert dom.count('class="cell s-') == K and f'data-verified-by="{address(WATCHER_2)}"' in dom


def short(name: str, index: int) -> str:
    """How the dashboard shows a labelled account."""
    return f"{name} ({address(index)[:6]}…{address(index)[-4:]})"


def headers_without_their_words(page: Any) -> list[str]:
    """Column headers whose tooltip is not words.json's explanation of them."""
    cells = page.locator("th").evaluate_all("ths => ths.map(th => [th.textContent, th.title])")
    return [label for label, tip in cells if not tip or tip != WORDS["headers"].get(label)]


def badges_unlike_their_state(page: Any) -> list[list[str]]:
    """Badges whose text is not their state's name, or that do not say what it means."""
    shown = page.locator(".badge").evaluate_all("bs => bs.map(b => [b.dataset.status, b.textContent, b.title])")
    return [b for b in shown if b[1] != b[0].replace("_", " ") or b[2] != WORDS["states"].get(b[0])]


# --- the OpenAPI schema, fuzzed ------------------------------------------------------------------


@pytest.fixture(scope="module")
def api_schema(history: History) -> Any:
    return schemathesis.openapi.from_url(f"{history.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_openapi_schema_holds_and_nothing_is_a_server_error(case: Any) -> None:
    case.call_and_validate()
