"""The watcher's challenges on a real anvil with the contracts as deploy/plan.py wires them, its own chain client,
journal and event index, and no IPFS or training: what it sends when a dispute's no-decision reopens the window of
an interval it challenged, and which task files it keeps on disk. A judgement is given to it as its replay would have
made it."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eth_abi import encode
from eth_utils import keccak
from web3 import Web3

from ovig_node import tools
from ovig_node.chain.accounts import devnet_account
from ovig_node.chain.client import ChainClient
from ovig_node.chain.contracts import BatchStatus, DisputeStatus, Protocol, TaskStatus, Verdict, Vote
from ovig_node.chain.deploy import Deployer, RandomnessChoice, run_plan
from ovig_node.chain.errors import RpcUnavailable
from ovig_node.chain.journal import TxJournal
from ovig_node.chain.reverts import ContractReverted
from ovig_node.chain.rpc import _Provider, connect, send
from ovig_node.chain.scanner import EventScanner
from ovig_node.devnet.processes import free_port
from ovig_node.nodes.appealing import DEFAULT_APPEAL_BUDGET, appeal_faulty_rounds, gas_reserve
from ovig_node.nodes.context import NodeContext, Timeline
from ovig_node.nodes.isolation import Isolation
from ovig_node.nodes.judging import Judgement, opened_interval
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.node_state import NodeState
from ovig_node.nodes.watcher import WatcherNode, over_budget
from ovig_node.protocol.merkle import MerkleTree, leaf_hash
from support import warp

ETHER = 10**18
PLAN = Path(__file__).resolve().parents[1] / "deploy" / "plan.py"


@pytest.fixture
def w3(tmp_path: Path) -> Iterator[Web3]:
    port = free_port()
    anvil = subprocess.Popen([str(tools.anvil()), "--port", str(port), "--silent"])
    try:
        for _ in range(100):
            try:
                w3 = connect(f"http://127.0.0.1:{port}")
                break
            except RpcUnavailable:
                time.sleep(0.1)
        yield w3
    finally:
        anvil.terminate()
        anvil.wait(10)


def _tx(w3: Web3, index: int, fn: Any, value: int = 0) -> Any:
    return send(w3, devnet_account(index), {"to": fn.address, "data": fn._encode_transaction_data(), "value": value})


def _deploy(w3: Web3, folder: Path, pace: int = 1) -> Protocol:
    """The contracts as deploy/plan.py wires them, the devnet committee's clocks ``pace`` times longer."""
    deployer = Deployer.open(
        w3, devnet_account(0), folder / "deployments.json", RandomnessChoice("blockhash"), devnet_pace=pace
    )
    return Protocol.at(w3, run_plan(PLAN, deployer).addresses())


def _post(w3: Web3, protocol: Protocol, intervals: int, per_batch: int) -> Any:
    """The owner's postTask call of a task of one-step intervals, every one sampled, a day to its deadline."""
    start = int(w3.eth.get_block("latest")["timestamp"])
    return protocol.tasks.functions.postTask(
        b"\x11" * 32, "spec", b"\x22" * 32, intervals, 1, per_batch, 10_000, (ETHER // 10, ETHER // 100), 10,
        (3600, 3600, 600), start + 86_400,
    )  # fmt: skip


def _opened_task(w3: Web3, protocol: Protocol) -> int:
    """A task of 4 one-step intervals, all sampled and opened (a provider's digests, never checked here)."""
    tasks = protocol.tasks
    _tx(w3, 0, _post(w3, protocol, 4, 4), ETHER)
    task = int(tasks.functions.taskCount().call())
    _tx(w3, 1, tasks.functions.acceptTask(task), ETHER // 10)
    digests = [bytes([0x30 + k]) * 32 for k in range(4)]
    tree = MerkleTree.build([leaf_hash(task, k, k + 1, digests[k]) for k in range(4)])
    _tx(w3, 1, tasks.functions.commitBatch(task, 0, tree.root, "manifest"))
    for _ in range(3):
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    _tx(w3, 6, tasks.functions.drawSeed(task, 0))
    openings = [(0, 1, digests[0], tree.proof(0), 0, b"\x00" * 32, [])] + [
        (k, k + 1, digests[k], tree.proof(k), k, digests[k - 1], tree.proof(k - 1)) for k in range(1, 4)
    ]
    _tx(w3, 1, tasks.functions.openBatch(task, 0, "opening", openings))
    return task


def _context(w3: Web3, protocol: Protocol, role: str, index: int, home: Path) -> NodeContext:
    """A node's context for account ``index``: its real client, journal and event index (no IPFS)."""
    client = ChainClient(w3, devnet_account(index), TxJournal(home / "journal.sqlite"))
    scanner = EventScanner(client, protocol.contracts, home / "events.sqlite", confirmations=0)
    return NodeContext(role, client, protocol, None, scanner, home, Timeline(role))  # type: ignore[arg-type]


def _watcher(w3: Web3, protocol: Protocol, home: Path, **options: Any) -> WatcherNode:
    """The shipped watcher of account 2 (judgements given, as its replay would have made them)."""
    watcher = WatcherNode(ctx=_context(w3, protocol, "watcher", 2, home), attest=False, **options)
    watcher.ctx.scanner.poll()
    return watcher


@pytest.mark.parametrize("reason", ["missing", "out_of_bounds"])
def test_a_no_decision_on_its_challenge_has_the_watcher_challenge_again_on_chain(
    w3: Web3, tmp_path: Path, reason: str
) -> None:
    """Review 18 of v3: a challenge made as unavailable (files withheld) whose dispute ended with no decision was
    judged again and "challenged" again under the first challenge's journal keys: the journal returned the first
    receipts, nothing was sent, the reopened window closed and the fake was paid. Either way the files went, the
    reopening gets a second commitment on chain and the task cannot finalize while it is pending."""
    protocol = _deploy(w3, tmp_path)
    tasks, committee = protocol.tasks, protocol.committee
    task = _opened_task(w3, protocol)  # no auditor registered: every draw of its dispute fails, the round starves
    watcher = _watcher(w3, protocol, tmp_path / "watcher")
    ctx = watcher.ctx
    k, obtained = 2, reason != "missing"
    opened = opened_interval(ctx, task, k, 4)
    assert watcher._record(task, k, opened, Judgement({"verdict": "faulty", "reason": reason}, "report1", obtained))
    watcher._drive_challenges()
    assert protocol.task(task).openDisputes == 1
    dispute = int(tasks.functions.disputeCount().call())

    warp(w3, 200)  # past the devnet committee's draw delay and starvation timeout
    _tx(w3, 6, committee.functions.rearm(dispute))
    assert protocol.view(tasks, "getDispute", dispute).verdict == Verdict.NO_DECISION
    ctx.scanner.poll()
    watcher._drive_challenges()  # it answers the reopening: files not obtained are looked at again first
    if not obtained:
        assert f"{task}:{k}" not in watcher.state.get("judged", {})
        again = Judgement({"verdict": "faulty", "reason": "missing"}, "report2", False)  # still withheld
        assert watcher._record(task, k, opened, again)
    watcher._drive_challenges()
    ctx.scanner.poll()
    commits = ctx.scanner.events("ChallengeCommitted", task=task)
    assert len(commits) == 2 and len({e.args["commitment"] for e in commits}) == 2
    assert protocol.task(task).openDisputes == 1  # revealed into a second dispute of k
    warp(w3, 3_700)  # the reopened window is over; the second dispute is not
    keeper = ChainClient(w3, devnet_account(6), TxJournal(tmp_path / "keeper.sqlite"))
    with pytest.raises(ContractReverted) as refused:
        keeper.transact("finalize", tasks.functions.finalize(task))
    assert refused.value.name == "DisputeOpen" and protocol.task(task).status == TaskStatus.COMMITTED


def test_over_its_disk_budget_the_files_of_live_tasks_used_longest_ago_go(w3: Web3, tmp_path: Path) -> None:
    """Review 17 of v3: the watcher deleted ended tasks' files only, so junk tasks kept live, each with gigabytes of
    owner files, filled its disk and silenced it. Over ``disk_budget``, the files of live tasks with nothing under way
    go, least recently used first (fetched again when one of their intervals is judged)."""
    assert over_budget({1: (600, 5.0), 2: (300, 1.0), 3: (300, 9.0)}, 700) == [2, 1]  # the oldest first, until it fits
    assert over_budget({1: (600, 5.0)}, 600) == []
    protocol = _deploy(w3, tmp_path)
    tasks = protocol.tasks
    start = int(w3.eth.get_block("latest")["timestamp"])
    for _ in range(2):  # two live tasks, accepted and under way
        post = tasks.functions.postTask(
            b"\x11" * 32, "spec", b"\x22" * 32, 4, 1, 4, 10_000, (ETHER // 10, ETHER // 100), 10, (3600, 3600, 600),
            start + 86_400,
        )  # fmt: skip
        _tx(w3, 0, post, ETHER)
        _tx(w3, 1, tasks.functions.acceptTask(int(tasks.functions.taskCount().call())), ETHER // 10)
    home = tmp_path / "watcher"
    watcher = _watcher(w3, protocol, home, disk_budget=1_500)
    for task, used in ((1, 20.0), (2, 10.0)):  # task 2 used longest ago
        (home / f"task-{task}" / "files").mkdir(parents=True)
        (home / f"task-{task}" / "files" / "dataset.safetensors").write_bytes(b"\0" * 1_000)
        watcher._used_at[task] = used
    watcher._let_go()
    assert not (home / "task-2").exists() and (home / "task-1" / "files" / "dataset.safetensors").is_file()
    assert 2 not in watcher._used_at


def test_a_reveal_a_lagging_backend_refuses_is_tried_again_and_never_given_up(w3: Web3, tmp_path: Path) -> None:
    """Review 21 of v3: behind a load-balanced endpoint, the reveal sent right after the commit's receipt was estimated
    on a backend a block behind, without the commit (UnknownCommitment); the challenge was given up, never revealed,
    its bond burned and the fake paid. A refusal while the reveal window is open is tried again (StateBehind). FAKE,
    named as such: the watcher's endpoint answers estimates from the block before the latest, as such a backend
    does; a real load balancer cannot be had here."""

    class LaggingEstimates(_Provider):  # FAKE: estimates one block behind
        def make_request(self, method: Any, params: Any) -> Any:
            if method == "eth_estimateGas":
                head = int(super().make_request("eth_blockNumber", [])["result"], 16)
                params = [params[0], hex(head - 1)]
            return super().make_request(method, params)

    protocol = _deploy(w3, tmp_path)
    task = _opened_task(w3, protocol)
    lagging = Web3(LaggingEstimates(w3.provider.endpoint_uri))  # type: ignore[attr-defined]
    addresses = {name: contract.address for name, contract in protocol.contracts.items()}
    watcher = _watcher(lagging, Protocol.at(lagging, addresses), tmp_path / "watcher")
    opened = opened_interval(watcher.ctx, task, 2, 4)
    assert watcher._record(task, 2, opened, Judgement({"verdict": "faulty", "reason": "out_of_bounds"}, "report", True))
    for _ in range(3):  # judged for a while: the opening is blocks old
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    watcher._drive_challenges()  # committed; its reveal, estimated a block behind, refused
    c = watcher.state.get("challenges")[f"{task}:2"]
    assert "failed" not in c and "committed_block" in c and protocol.task(task).pendingCommits == 1
    w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]  # a block later: the backend has the commit
    watcher.isolation._failures.clear()  # its backoff passed
    watcher._drive_challenges()
    assert protocol.task(task).pendingCommits == 0 and protocol.task(task).openDisputes == 1
    assert "failed" not in watcher.state.get("challenges")[f"{task}:2"]


def test_a_commit_not_mined_in_its_wait_is_sent_again_with_no_check_holding_it_back(w3: Web3, tmp_path: Path) -> None:
    """Review 23 of v3: the watcher's funds check ran again for a commit signed already and in flight, and held back
    its sending again (and fee bump). A commit the chain has not mined (here dropped from the pool meanwhile) is sent
    again on the next pass, and revealed."""
    protocol = _deploy(w3, tmp_path)
    task = _opened_task(w3, protocol)
    watcher = _watcher(w3, protocol, tmp_path / "watcher")
    watcher.ctx.client.receipt_timeout = 0.5
    opened = opened_interval(watcher.ctx, task, 2, 4)
    assert watcher._record(task, 2, opened, Judgement({"verdict": "faulty", "reason": "out_of_bounds"}, "report", True))
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        watcher._drive_challenges()  # signed and sent, not mined within its wait: tried again
        [signed] = watcher.ctx.client.journal.hashes(f"challenge-commit:{task}:2")[:1]
        for tx_hash in watcher.ctx.client.journal.hashes(f"challenge-commit:{task}:2"):
            w3.provider.make_request("anvil_dropTransaction", [tx_hash])  # type: ignore[arg-type]  # lost from the pool
        assert protocol.task(task).pendingCommits == 0 and signed
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    watcher.isolation._failures.clear()  # its backoff passed
    watcher._drive_challenges()  # sent again under its journal key, mined, and revealed
    assert protocol.task(task).openDisputes == 1 and protocol.task(task).pendingCommits == 0
    assert "failed" not in watcher.state.get("challenges")[f"{task}:2"]


def test_a_burst_of_keeper_duties_is_done_a_few_a_pass_and_never_with_the_reserve(w3: Web3, tmp_path: Path) -> None:
    """Reviews 25 and 26 of v3: a junk task's batches committed in a burst made every keeper draw each batch's seed, a
    block each, in one tick of the node's one loop: its ballots and challenges waited behind them, and the duties spent
    the gas its reveals needed; and a task accepted first was always looked at first. A tick stops once it has spent
    its time (here none: one duty a tick, or one batch's reads) and goes on the tick after from the next task, by id,
    and from the next batch of each; short of the gas reserve, nothing is signed and the duties wait."""
    protocol = _deploy(w3, tmp_path)
    tasks = protocol.tasks
    post = _post(w3, protocol, 2, 1)  # two batches of one interval
    _tx(w3, 0, post, ETHER)
    _tx(w3, 0, post, ETHER)
    for task in (2, 1):  # accepted in this order
        _tx(w3, 1, tasks.functions.acceptTask(task), ETHER // 10)
    for task in (1, 2):
        for j in range(2):  # a batch of one interval each, committed in a burst
            _tx(w3, 1, tasks.functions.commitBatch(task, j, leaf_hash(task, j, j + 1, bytes([j]) * 32), "manifest"))
    for _ in range(3):
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]  # every seed target is there
    watcher = _watcher(w3, protocol, tmp_path / "watcher")
    keeper = Keeper(watcher.ctx, tick_seconds=0)
    address = watcher.ctx.address
    balance = w3.eth.get_balance(address)
    w3.provider.make_request("anvil_setBalance", [address, hex(gas_reserve(watcher.ctx) - 1)])  # type: ignore[arg-type]
    nonce = w3.eth.get_transaction_count(address)
    assert keeper.tick() == [] and w3.eth.get_transaction_count(address) == nonce  # nothing signed
    w3.provider.make_request("anvil_setBalance", [address, hex(balance)])  # type: ignore[arg-type]
    ticks = [keeper.tick() for _ in range(4)]  # the tick short of funds stopped in task 1: the next starts at task 2
    assert ticks == [["drawSeed:2:0"], ["drawSeed:1:0"], ["drawSeed:2:1"], ["drawSeed:1:1"]]
    assert [int(protocol.batch(t, j).status) for t in (1, 2) for j in (0, 1)] == [int(BatchStatus.DRAWN)] * 4


def test_the_provider_appeals_a_faulty_round_on_an_interval_it_trained_honestly(w3: Web3, tmp_path: Path) -> None:
    """Review 26 of v3: the shipped nodes appealed a FAULTY round only from an honest panelist's own `sound` ballot,
    so a round-0 panel of sybils that found an honest provider's interval faulty stood, and slashed it. The trainer
    appeals such a round, within its budget, once; short of funds, it waits and nothing is counted (review 27)."""
    protocol = _deploy(w3, tmp_path, pace=20)
    committee = protocol.committee
    stake = int(committee.functions.AUDITOR_STAKE().call())
    registry = range(3, 10)  # seven auditors: enough to seat an appeal's round
    for index in registry:
        _tx(w3, index, committee.functions.register(), stake)
    task = _opened_task(w3, protocol)
    watcher = _watcher(w3, protocol, tmp_path / "watcher")  # a sock puppet challenging honest interval 2
    faulty = Judgement({"verdict": "faulty", "reason": "out_of_bounds"}, "r", True)
    assert watcher._record(task, 2, opened_interval(watcher.ctx, task, 2, 4), faulty)
    watcher._drive_challenges()
    dispute = int(protocol.tasks.functions.disputeCount().call())
    while protocol.dispute(dispute).status != DisputeStatus.VOTING:
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
        with contextlib.suppress(ContractReverted):
            ChainClient(w3, devnet_account(6), TxJournal(tmp_path / "k.sqlite")).transact(
                f"draw:{w3.eth.block_number}", committee.functions.drawPanel(dispute)
            )
    run = int(protocol.dispute(dispute).run)
    seated = set(committee.functions.panelOf(dispute).call())
    sybils = [i for i in registry if devnet_account(i).address in seated]  # the round-0 panel, captured
    salt = b"\x07" * 32
    for index in sybils:  # each seat of the panel votes faulty
        address = devnet_account(index).address
        ballot = [dispute, run, Vote.FAULTY, salt, address]
        commitment = keccak(encode(["uint256", "uint256", "uint8", "bytes32", "address"], ballot))
        _tx(w3, index, committee.functions.commitVote(dispute, commitment))
    warp(w3, int(committee.functions.COMMIT_WINDOW().call()))
    for index in sybils:
        _tx(w3, index, committee.functions.revealVote(dispute, Vote.FAULTY, salt))
    warp(w3, int(committee.functions.REVEAL_WINDOW().call()))
    _tx(w3, 6, committee.functions.resolve(dispute))
    assert (protocol.dispute(dispute).status, protocol.dispute(dispute).round) == (DisputeStatus.APPEALABLE, 0)

    ctx = _context(w3, protocol, "trainer", 1, tmp_path / "trainer")
    client = ctx.client
    ctx.scanner.poll()
    state, settled, isolation = NodeState(ctx.home / "trainer.json"), set[str](), Isolation(ctx.say)
    balance = w3.eth.get_balance(client.address)
    bond = 2 * int(protocol.tasks.functions.MIN_CHALLENGER_BOND().call())
    w3.provider.make_request("anvil_setBalance", [client.address, hex(bond + gas_reserve(ctx) - 1)])  # type: ignore[arg-type]
    appeal_faulty_rounds(ctx, state, task, DEFAULT_APPEAL_BUDGET, settled, isolation)  # short of funds: it waits
    assert (settled, state.get("appeals", [])) == (set(), []) and not isolation.ready(f"appeal {dispute}:0")
    w3.provider.make_request("anvil_setBalance", [client.address, hex(balance)])  # type: ignore[arg-type]
    isolation._failures.clear()  # its backoff passed
    appeal_faulty_rounds(ctx, state, task, DEFAULT_APPEAL_BUDGET, settled, isolation)
    appeal_faulty_rounds(ctx, state, task, DEFAULT_APPEAL_BUDGET, settled, isolation)  # once
    d = protocol.dispute(dispute)
    assert (d.status, d.round, settled) == (DisputeStatus.AWAITING_PANEL, 1, {f"{dispute}:0"})
    assert balance - w3.eth.get_balance(client.address) >= bond and state.get("appeals") == [f"{dispute}:0"]
