"""The nodes' chain layer on a real anvil: idempotent transactions across restarts, decoded custom
errors, RPC outages, and the event scanner's confirmations, restarts and reorgs."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eth_utils import keccak
from web3 import Web3
from web3.exceptions import TransactionNotFound

from ovig_node import tools
from ovig_node.chain import artifacts
from ovig_node.chain.accounts import devnet_account
from ovig_node.chain.client import ChainClient
from ovig_node.chain.deploy import create_address
from ovig_node.chain.errors import BroadcastRefused, ChainError, FundsShort, NotMined, RpcUnavailable, StateBehind
from ovig_node.chain.journal import TxJournal
from ovig_node.chain.reverts import ContractReverted, decode_revert
from ovig_node.chain.rpc import _Provider, block_seconds, connect, send
from ovig_node.chain.scanner import EventScanner
from ovig_node.devnet.processes import free_port

COMMITTEE = (10**17, 4, 5, 7200, 3600, 1800, 1800, 3600, 7200, 900, 3, 3, 1000, 10**12)  # CommitteeParams, in order
SHARES = (2000, 1000, 7000, 5000, 1000, 4000)
MIN_BONDS = (10**17, 10**16)  # provider, challenger: the smallest bonds a task may carry
WINDOWS = (3600, 7200, 600)


@pytest.fixture(scope="module")
def anvil() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([str(tools.anvil()), "--port", str(port), "--silent"])
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            connect(url)
            break
        except RpcUnavailable:
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def w3(anvil: str) -> Iterator[Web3]:
    """The chain, reverted to where it was after each test."""
    w3 = connect(anvil)
    snapshot = w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
    yield w3
    w3.provider.make_request("evm_revert", [snapshot])  # type: ignore[arg-type]


@pytest.fixture
def tasks(w3: Web3) -> Any:
    """The contract pair, deployed as deploy/plan.py wires it."""
    deployer = devnet_account(9)
    nonce = w3.eth.get_transaction_count(deployer.address)
    blockhash, committee_art, tasks_art = (
        artifacts.load(name) for name in ("BlockhashRandomness", "AuditCommittee", "TrainingTasks")
    )
    build = w3.eth.contract(abi=blockhash.abi, bytecode=blockhash.bytecode)
    randomness = send(w3, deployer, {"data": build.constructor(2, False).data_in_transaction})["contractAddress"]
    build = w3.eth.contract(abi=committee_art.abi, bytecode=committee_art.bytecode)
    code = build.constructor(create_address(deployer.address, nonce + 2), randomness, COMMITTEE).data_in_transaction
    committee = send(w3, deployer, {"data": code})["contractAddress"]
    build = w3.eth.contract(abi=tasks_art.abi, bytecode=tasks_art.bytecode)
    # keeper share 10%, 4 requests per requester and batch
    code = build.constructor(randomness, 1000, SHARES, MIN_BONDS, 4, committee).data_in_transaction
    receipt = send(w3, deployer, {"data": code})
    return w3.eth.contract(address=receipt["contractAddress"], abi=tasks_art.abi)


def client(w3: Web3, tmp_path: Path, index: int = 0) -> ChainClient:
    return ChainClient(w3, devnet_account(index), TxJournal(tmp_path / f"journal{index}.sqlite"))


def post(tasks: Any, deadline: int, reward: int = 10**18) -> Any:
    return tasks.functions.postTask(
        b"\x01" * 32, "bafyspec", b"\x02" * 32, 100, 10, 4, 5000, (3 * 10**18, 10**17), 60, WINDOWS, deadline
    )


def mine(w3: Web3, blocks: int) -> None:
    for _ in range(blocks):
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]


def now(w3: Web3) -> int:
    return int(w3.eth.get_block("latest")["timestamp"])


# --- transactions --------------------------------------------------------------------------------


def test_a_keyed_transaction_is_sent_once_across_restarts(w3: Web3, tasks: Any, tmp_path: Path) -> None:
    first = client(w3, tmp_path)
    receipt = first.transact("post:1", post(tasks, now(w3) + 86_400), value=10**18)
    assert receipt["status"] == 1
    assert tasks.functions.taskCount().call() == 1
    first.journal.close()
    # A restarted node asking for the same key gets the same receipt, and no second task.
    again = client(w3, tmp_path)
    assert again.transact("post:1", post(tasks, now(w3) + 86_400), value=10**18) == receipt
    assert tasks.functions.taskCount().call() == 1
    assert w3.eth.get_transaction_count(again.address) == receipt_nonce(w3, receipt) + 1


def receipt_nonce(w3: Web3, receipt: Any) -> int:
    return int(w3.eth.get_transaction(receipt["transactionHash"])["nonce"])


def test_a_transaction_signed_before_a_crash_is_rebroadcast_not_resigned(w3: Web3, tasks: Any, tmp_path: Path) -> None:
    """The crash falls between journaling and broadcasting: on restart the same bytes go out."""
    node = client(w3, tmp_path)
    entry = node._sign_and_record("post:crash", post(tasks, now(w3) + 86_400), 10**18)
    assert w3.eth.get_transaction_count(node.address) == entry.nonce  # never broadcast
    restarted = client(w3, tmp_path)
    [receipt] = restarted.resume()
    assert receipt["transactionHash"].to_0x_hex() == entry.tx_hash
    assert tasks.functions.taskCount().call() == 1
    assert restarted.journal.get("post:crash").status == "mined"  # type: ignore[union-attr]
    assert restarted.resume() == []


def test_submitted_transactions_are_mined_together_and_awaited_by_their_keys(
    w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Review 12 of v3: a trainer that awaited each requested opening before sending the next could be outrun by a
    burst of requests. Submitted ones take consecutive nonces and go into one block; a transact with the key
    awaits it, without a second transaction. A wait that runs out is NotMined, which a node retries (a
    TimeoutError: transient), never a refusal that gives a seat up; and the transaction goes out again with higher
    fees (a fee bump), so one stuck below the market does not stay stuck."""
    node = client(w3, tmp_path)
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        for i in (1, 2):
            node.submit(f"post:{i}", post(tasks, now(w3) + 86_400), value=10**18)
        node.receipt_timeout = 0.5
        original = w3.eth.get_transaction(node.journal.hashes("post:1")[0])
        with pytest.raises(NotMined, match="not mined within 0 s; sent again with fees raised") as caught:
            node.transact("post:1", post(tasks, now(w3) + 86_400), value=10**18)
        assert isinstance(caught.value, TimeoutError)
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    first, second = (node.transact(f"post:{i}", post(tasks, now(w3) + 86_400), value=10**18) for i in (1, 2))
    assert first["blockNumber"] == second["blockNumber"] and tasks.functions.taskCount().call() == 2
    assert receipt_nonce(w3, second) == receipt_nonce(w3, first) + 1
    # The fee bump: post:1 went out again under its nonce with both fees raised by an eighth at least, and that
    # signing is the one mined; the first is kept in the journal (it could have been mined instead).
    latest, earlier = node.journal.hashes("post:1")
    assert earlier == original["hash"].to_0x_hex() and first["transactionHash"].to_0x_hex() == latest
    bumped = w3.eth.get_transaction(latest)
    assert bumped["nonce"] == original["nonce"] and bumped["input"] == original["input"]
    for fee in ("maxFeePerGas", "maxPriorityFeePerGas"):
        assert bumped[fee] >= -(-original[fee] * 9 // 8)


def test_a_nonce_another_process_of_the_account_used_first_is_signed_afresh(
    w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Review 18 of v3: an auditor and a watcher of one operator run as two processes with one key and a journal
    each. Both signed under the same pending nonce; the one mined second was refused ("nonce too low") and its
    entry stayed "sent" for good, every later call of its key raising (a ballot or a challenge lost). Now the
    refused entry is found never mined under a nonce the chain has passed, forgotten, and signed afresh."""
    auditor, watcher = client(w3, tmp_path / "auditor"), client(w3, tmp_path / "watcher")
    deadline = now(w3) + 86_400  # each process's call its own (the same call signed alike would be one transaction)
    first = auditor._sign_and_record("post:auditor", post(tasks, deadline), 10**18)  # signed, not yet sent ...
    raced = watcher._sign_and_record("post:watcher", post(tasks, deadline + 1), 10**18)  # ... as the other signs
    assert raced.nonce == first.nonce
    watcher.transact("post:watcher", post(tasks, deadline + 1), value=10**18)  # mined first, under that nonce
    # Passed by fewer blocks than the client's confirmations (3), the nonce is not yet taken as someone else's (a
    # lagging backend could be showing this very transaction as not mined): refused for now, tried again
    with pytest.raises(BroadcastRefused):
        auditor.transact("post:auditor", post(tasks, deadline), value=10**18)
    mine(w3, 3)
    receipt = auditor.transact("post:auditor", post(tasks, deadline), value=10**18)
    assert receipt["status"] == 1 and receipt_nonce(w3, receipt) == first.nonce + 1
    assert auditor.journal.get("post:auditor").status == "mined"  # type: ignore[union-attr]
    assert tasks.functions.taskCount().call() == 2  # each call once
    # A restart that finds such an entry forgets it (once its nonce is 3 blocks deep) and leaves it to the node's
    # next call of its key
    stale = auditor._sign_and_record("post:stale", post(tasks, deadline), 10**18)
    mined = watcher.transact("post:again", post(tasks, deadline + 1), value=10**18)
    assert receipt_nonce(w3, mined) == stale.nonce
    assert client(w3, tmp_path / "auditor").resume() == [] and auditor.journal.get("post:stale") is not None
    mine(w3, 3)
    assert client(w3, tmp_path / "auditor").resume() == [] and auditor.journal.get("post:stale") is None
    assert tasks.functions.taskCount().call() == 3


def test_a_transaction_a_lagging_backend_shows_unmined_is_never_signed_again(
    w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Review 20 of v3: behind a load-balanced endpoint the nonce count came from an up-to-date backend and the
    receipt lookup from one a block behind: the node's own mined transaction was taken for one whose nonce another
    process used, forgotten, and sent again (a task posted twice; a watcher's commit refused as existing, given up,
    and its bond burned). FAKE, named as such: the client's lookups of a transaction (receipt, or known at all) miss
    those of the latest block, as such a backend would; a real load balancer cannot be had here."""
    node = client(w3, tmp_path)
    deadline = now(w3) + 86_400
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        node.receipt_timeout = 0.5
        with pytest.raises(NotMined):  # not mined in time: the node tries again on its next pass
            node.transact("post:1", post(tasks, deadline), value=10**18)
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]

    def behind(lookup: Any) -> Any:
        def missing_the_latest_block(tx_hash: str) -> Any:
            found = lookup(tx_hash)
            try:
                mined_in = w3.eth.get_transaction_receipt(tx_hash)["blockNumber"]  # type: ignore[arg-type]
            except TransactionNotFound:  # a signing of it that was not mined
                return found
            return None if mined_in == w3.eth.block_number else found

        return missing_the_latest_block

    node._receipt = behind(node._receipt)  # type: ignore[method-assign]
    node._known = behind(node._known)  # type: ignore[method-assign]
    with pytest.raises(BroadcastRefused):  # tried again later, never signed anew
        node.transact("post:1", post(tasks, deadline), value=10**18)
    assert tasks.functions.taskCount().call() == 1
    mine(w3, 1)  # the backend catches up
    assert node.transact("post:1", post(tasks, deadline), value=10**18)["status"] == 1
    assert tasks.functions.taskCount().call() == 1 and node.journal.get("post:1").status == "mined"  # type: ignore[union-attr]


def test_a_broadcast_refused_for_now_is_tried_again_and_signed_afresh_once_its_nonce_is_taken(
    w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Review 19 of v3: with the other process's transaction at the same nonce still in the mempool, the node refuses
    the second ("replacement transaction underpriced"): that was final until a restart (an appeal so refused was never
    sent). Now it is BroadcastRefused, a TimeoutError nodes try again; once the other is mined, the next try signs the
    call afresh."""
    auditor, watcher = client(w3, tmp_path / "auditor"), client(w3, tmp_path / "watcher")
    deadline = now(w3) + 86_400
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        auditor._sign_and_record("post:auditor", post(tasks, deadline), 10**18)  # both sign at one pending nonce
        watcher.submit("post:watcher", post(tasks, deadline + 1), value=10**18)  # in the mempool first, not mined
        with pytest.raises(BroadcastRefused, match="refused the transaction for now") as refused:
            auditor.transact("post:auditor", post(tasks, deadline), value=10**18)
        assert isinstance(refused.value, TimeoutError)
        assert auditor.journal.get("post:auditor").status == "sent"  # type: ignore[union-attr]
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    mine(w3, 3)  # the other's 3 blocks deep (the client's confirmations)
    taken = auditor.journal.get("post:auditor").nonce  # type: ignore[union-attr]
    receipt = auditor.transact("post:auditor", post(tasks, deadline), value=10**18)
    assert receipt["status"] == 1 and receipt_nonce(w3, receipt) == taken + 1
    assert tasks.functions.taskCount().call() == 2


def test_a_transaction_the_account_cannot_pay_is_never_signed_and_holds_no_nonce(
    w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Review 21 of v3: the estimate checks a call's value against the balance, not its gas too; a transaction signed
    and then refused for want of funds kept its nonce in the journal, and every later one of the node was signed past
    it and never mined (an owner chose a challenger bond just under a watcher's balance). Now such a call is
    FundsShort (a TimeoutError: tried again) before anything is signed, and the next call takes the nonce."""
    node = client(w3, tmp_path)
    deadline = now(w3) + 86_400
    balance = w3.eth.get_balance(node.address)
    nonce = w3.eth.get_transaction_count(node.address)
    with pytest.raises(FundsShort, match=r"add funds \(nothing was signed\)") as short:
        node.transact("post:all", post(tasks, deadline), value=balance - 10**9)  # its value, not its gas, is there
    assert isinstance(short.value, TimeoutError) and node.journal.get("post:all") is None
    with pytest.raises(FundsShort):  # a value beyond the balance, which the node refuses to estimate (review 23)
        node.transact("post:more", post(tasks, deadline), value=balance + 1)
    with pytest.raises(FundsShort, match=r"kept for the node's next transactions"):  # its gas would eat what it keeps
        node.transact("post:kept", post(tasks, deadline), value=10**18, keep=balance - 10**18)
    assert node.journal.get("post:kept") is None
    receipt = node.transact("post:some", post(tasks, deadline), value=10**18)
    assert receipt_nonce(w3, receipt) == nonce and tasks.functions.taskCount().call() == 1


def test_a_transaction_mined_and_never_awaited_again_is_not_counted_as_still_to_pay(
    w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Review 22 of v3: a node often never awaits a key again once the chain shows its call done (a commit seen
    pending, an appeal's round moved on), so its entry stays "sent" after it was mined; the funds check counted its
    value again, and the next reveal or ballot was FundsShort until its window closed. Only transactions not mined yet
    (at or past the account's mined count) are counted."""
    node = client(w3, tmp_path)
    node.receipt_timeout = 0.5
    w3.provider.make_request("anvil_setBalance", [node.address, hex(3 * 10**18 // 2)])  # type: ignore[arg-type]
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        with pytest.raises(NotMined):  # the bond put up; not mined within the wait
            node.transact("post:bond", post(tasks, now(w3) + 86_400), value=10**18)
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]  # mined since: never awaited again
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    assert node.journal.get("post:bond").status == "sent"  # type: ignore[union-attr]
    assert node.transact("cancel", tasks.functions.cancel(1))["status"] == 1  # gas only: the half ETH left pays it


class _RefusesOneEstimate(_Provider):
    """A FAKE endpoint answering one eth_estimateGas with a JSON-RPC error (a rate limit answered as JSON, or a
    backend behind the funds just added): anvil has no such answer."""

    refusals = 1

    def make_request(self, method: Any, params: Any) -> Any:
        response = super().make_request(method, params)
        if method == "eth_estimateGas" and self.refusals:
            type(self).refusals -= 1
            return {"jsonrpc": "2.0", "id": response["id"], "error": {"code": -32005, "message": "rate limited"}}
        return response


def test_an_estimate_the_endpoint_refuses_without_a_revert_is_tried_again(
    anvil: str, w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Review 29 of v3: a JSON-RPC error answered to an estimate was a ChainError, which a node's isolation leaves alone
    until a restart: one rate limit abandoned an appeal, a challenge or a seat for good. It is StateBehind (a
    TimeoutError: tried again), and nothing is signed."""
    refusing = Web3(_RefusesOneEstimate(anvil))
    contract = refusing.eth.contract(address=tasks.address, abi=tasks.abi)
    node = ChainClient(refusing, devnet_account(0), TxJournal(tmp_path / "j.sqlite"))
    with pytest.raises(StateBehind, match="the RPC endpoint refused to estimate it") as refused:
        node.transact("post", post(contract, now(w3) + 86_400), value=10**18)
    assert isinstance(refused.value, TimeoutError) and node.journal.get("post") is None
    assert node.transact("post", post(contract, now(w3) + 86_400), value=10**18)["status"] == 1


def test_a_revert_at_estimation_is_the_decoded_custom_error(w3: Web3, tasks: Any, tmp_path: Path) -> None:
    node = client(w3, tmp_path)
    node.transact("post", post(tasks, now(w3) + 86_400), value=10**18)
    with pytest.raises(ContractReverted) as caught:
        node.transact("accept", tasks.functions.acceptTask(1), value=1)
    assert caught.value.name == "WrongBond"
    assert caught.value.args_by_name == {"expected": 3 * 10**18, "sent": 1}
    assert str(caught.value) == f"acceptTask: reverted: WrongBond(expected={3 * 10**18}, sent=1)"
    assert node.journal.get("accept") is None  # nothing was signed
    with pytest.raises(ContractReverted, match=r"WrongTaskStatus\(task=7, status=0\)"):
        node.call(tasks.functions.cancel(7))


def test_a_revert_after_inclusion_is_decoded_and_the_key_can_be_retried(w3: Web3, tasks: Any, tmp_path: Path) -> None:
    """Two signed cancels of one task: the second is mined after the first and reverts on-chain."""
    node = client(w3, tmp_path)
    node.transact("post", post(tasks, now(w3) + 86_400), value=10**18)
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        first = node._sign_and_record("cancel:a", tasks.functions.cancel(1), 0)
        second = node._sign_and_record("cancel:b", tasks.functions.cancel(1), 0)
        assert second.nonce == first.nonce + 1
        node._broadcast(first)
        node._broadcast(second)
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    assert [r["status"] for r in node.resume()] == [1, 0]
    assert node.journal.get("cancel:a").status == "mined"  # type: ignore[union-attr]
    assert node.journal.get("cancel:b").status == "reverted"  # type: ignore[union-attr]
    receipt = w3.eth.get_transaction_receipt(second.tx_hash)
    assert str(node._revert_reason(second, receipt, "cancel")) == "cancel: reverted: WrongTaskStatus(task=1, status=5)"
    # Asking again under the reverted key tries afresh: it is estimated, reverts, and nothing is signed.
    with pytest.raises(ContractReverted, match=r"WrongTaskStatus\(task=1, status=5\)"):
        node.transact("cancel:b", tasks.functions.cancel(1))
    assert node.journal.get("cancel:b") is None


def test_rpc_outage_is_a_clear_error_after_bounded_retries(tmp_path: Path) -> None:
    port = free_port()
    dead = Web3(Web3.HTTPProvider(f"http://127.0.0.1:{port}", request_kwargs={"timeout": 1}))
    node = ChainClient(dead, devnet_account(0), TxJournal(tmp_path / "j.sqlite"), attempts=3, backoff=0.05)
    started = time.monotonic()
    with pytest.raises(RpcUnavailable, match=f"127.0.0.1:{port} is unavailable"):
        node.retry(lambda: dead.eth.block_number)
    assert time.monotonic() - started >= 0.05 + 0.1  # two waits: 0.05 s then 0.1 s


def test_a_block_the_endpoint_has_not_got_is_an_outage_waited_out(w3: Web3, tmp_path: Path) -> None:
    """Review 25 of v3: a load-balanced endpoint's backend a block behind answered "block not found" for a block
    another had announced, and web3's BlockNotFound ended the node. It is retried, then an outage (RpcUnavailable)."""
    node = ChainClient(w3, devnet_account(0), TxJournal(tmp_path / "j.sqlite"), attempts=2, backoff=0.01)
    ahead = w3.eth.block_number + 5
    with pytest.raises(RpcUnavailable, match="a block it announced is not found"):
        node.retry(lambda: w3.eth.get_block(ahead))
    w3.provider.make_request("anvil_mine", [5])  # type: ignore[arg-type]
    assert node.retry(lambda: w3.eth.get_block(ahead))["number"] == ahead


def test_unknown_revert_data_is_shown_raw() -> None:
    assert decode_revert("0xdeadbeef").name == ""
    assert "unknown revert data 0xdeadbeef" in str(decode_revert("0xdeadbeef"))
    panic = decode_revert(keccak(text="Panic(uint256)")[:4] + (0x11).to_bytes(32, "big"))
    assert (panic.name, panic.args_by_name) == ("Panic", {"code": 0x11})


# --- event scanner -------------------------------------------------------------------------------


def scanner(w3: Web3, tasks: Any, tmp_path: Path, **options: Any) -> EventScanner:
    start = w3.eth.block_number + 1
    return EventScanner(w3, {"TrainingTasks": tasks}, tmp_path / "events.sqlite", start_block=start, **options)


def test_scanner_reads_confirmed_events_once_and_decodes_structs(w3: Web3, tasks: Any, tmp_path: Path) -> None:
    events = scanner(w3, tasks, tmp_path, confirmations=2)
    node = client(w3, tmp_path)
    deadline = now(w3) + 86_400
    receipt = node.transact("post", post(tasks, deadline), value=10**18)
    assert events.poll() == []  # one block deep: not confirmed yet
    w3.provider.make_request("anvil_mine", [2])  # type: ignore[arg-type]
    [posted] = events.poll()
    assert (posted.name, posted.contract, posted.block_number) == (
        "TaskPosted",
        "TrainingTasks",
        receipt["blockNumber"],
    )
    assert posted.args["task"] == 1 and posted.args["owner"] == node.address and posted.args["specCID"] == "bafyspec"
    assert posted.args["terms"]["reward"] == 10**18
    assert posted.args["terms"]["specHash"] == "0x" + "01" * 32
    assert posted.args["terms"]["windows"] == {
        "openingWindow": 3600,
        "challengeWindow": 7200,
        "challengeRevealWindow": 600,
    }
    assert posted.args["terms"]["deadline"] == deadline
    assert events.poll() == []
    assert events.cursor == w3.eth.block_number - 2
    assert [e.args["task"] for e in events.events("TaskPosted", owner=node.address)] == [1]
    assert events.events("TaskPosted", owner=devnet_account(5).address) == []


def test_scanner_resumes_from_its_cursor_without_duplicates(w3: Web3, tasks: Any, tmp_path: Path) -> None:
    first = scanner(w3, tasks, tmp_path, confirmations=0, rescan=5)
    start = first.cursor + 1
    node = client(w3, tmp_path)
    node.transact("post:1", post(tasks, now(w3) + 86_400), value=10**18)
    assert [e.name for e in first.poll()] == ["TaskPosted"]
    cursor = first.cursor
    first.close()
    node.transact("post:2", post(tasks, now(w3) + 86_400), value=10**18)
    again = EventScanner(w3, {"TrainingTasks": tasks}, tmp_path / "events.sqlite", start_block=start, confirmations=0)
    assert again.cursor == max(start - 1, cursor - 12)  # went back `rescan` blocks
    assert [e.args["task"] for e in again.poll()] == [2]  # task 1 read again but stored once
    assert [e.args["task"] for e in again.events("TaskPosted")] == [1, 2]


def test_scanner_drops_events_of_reorged_blocks(w3: Web3, tasks: Any, tmp_path: Path) -> None:
    events = scanner(w3, tasks, tmp_path, confirmations=0)
    node = client(w3, tmp_path)
    fork_point = w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
    node.transact("post:a", post(tasks, now(w3) + 86_400, reward=10**18), value=10**18)
    node.transact("cancel:a", tasks.functions.cancel(1))
    assert [e.name for e in events.poll()] == ["TaskPosted", "TaskCancelled", "Credited"]
    # Another history replaces those two blocks: one post, of another reward, and one more block.
    w3.provider.make_request("evm_revert", [fork_point])  # type: ignore[arg-type]
    other = client(w3, tmp_path, index=1)
    other.transact("post:b", post(tasks, now(w3) + 86_400), value=5)
    w3.provider.make_request("anvil_mine", [1])  # type: ignore[arg-type]
    fresh = events.poll()
    assert [(e.name, e.args["owner"]) for e in fresh] == [("TaskPosted", other.address)]
    assert [(e.name, e.args["terms"]["reward"]) for e in events.events()] == [("TaskPosted", 5)]


def test_block_seconds_is_the_median_time_between_the_latest_blocks_and_at_least_one(w3: Web3) -> None:
    """What a node's room to act is counted in (review 16 of v3): blocks of 12 s read 12, one jump of the clock
    among them changing nothing; blocks mined in the same second (a devnet mining each transaction at once) read 1."""
    w3.provider.make_request("anvil_mine", [hex(16), hex(12)])  # type: ignore[arg-type]
    w3.provider.make_request("evm_increaseTime", [3600])  # type: ignore[arg-type]
    w3.provider.make_request("anvil_mine", [hex(1), hex(12)])  # type: ignore[arg-type]
    assert block_seconds(w3) == 12.0
    w3.provider.make_request("anvil_mine", [hex(17), hex(0)])  # type: ignore[arg-type]
    assert block_seconds(w3) == 1.0


def test_anvil_keeps_no_old_states_on_disk(w3: Web3) -> None:
    """Our anvil (``.tools/bin/anvil``, which Ape runs too) drops the states that leave its in-memory window.
    Plain anvil moves them to ~/.foundry/anvil/tmp and never deletes them: 316 MB for 2,048 empty blocks,
    some 2 GB per test session, which once filled CI's disk."""
    cache = Path.home() / ".foundry" / "anvil" / "tmp"
    before = set(cache.iterdir()) if cache.exists() else set()
    w3.provider.make_request("anvil_mine", [hex(2048)])  # type: ignore[arg-type]
    after = set(cache.iterdir()) if cache.exists() else set()
    assert after - before == set()


class _CappedLogs(_Provider):
    """A FAKE endpoint cap (anvil has none): eth_getLogs answering more than ``cap`` logs is refused with the error
    hosted endpoints give ("query returned more than 10000 results"), or (``timeout``) its proxy gives up on it, as a
    gateway's 504 or a read timeout reaches the node: RpcUnavailable."""

    cap = 2
    timeout = False
    receipts = True  # eth_getBlockReceipts answered (no cap limits it)

    def make_request(self, method: Any, params: Any) -> Any:
        response = super().make_request(method, params)
        if method == "eth_getBlockReceipts" and not self.receipts:
            return {"jsonrpc": "2.0", "id": response["id"], "error": {"code": -32005, "message": "refused"}}
        if method == "eth_getLogs" and len(response.get("result", [])) > self.cap:
            if self.timeout:
                raise RpcUnavailable(str(self.endpoint_uri), "HTTP 504")
            return {"jsonrpc": "2.0", "id": response["id"], "error": {"code": -32005, "message": "too many results"}}
        return response


def test_scanner_halves_a_log_query_the_endpoint_refuses_down_to_one_block(
    anvil: str, w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Review 25 of v3: anyone can emit thousands of events cheaply, an endpoint capping a log query's results refused
    the scanner's fixed range for good, and every node on it stopped. The range is halved until the endpoint answers;
    a single block it still refuses is read from its receipts (review 28), and one whose receipts it refuses too is an
    error of the pass (the node's loop says it and tries again), the cursor left before it: nothing is left out."""
    capped = Web3(_CappedLogs(anvil))
    start = w3.eth.block_number + 1
    events = EventScanner(capped, {"TrainingTasks": tasks}, tmp_path / "e.sqlite", start_block=start, confirmations=0)
    node = client(w3, tmp_path)
    for n in range(3):  # three blocks of one log each: three logs together are refused
        node.transact(f"post:{n}", post(tasks, now(w3) + 86_400), value=10**18)
    assert [e.args["task"] for e in events.poll()] == [1, 2, 3] and events.cursor == w3.eth.block_number
    node.transact("cancel:1", tasks.functions.cancel(1))  # one block of two logs (TaskCancelled, Credited) ...
    _CappedLogs.cap = 1  # ... more than the endpoint now answers for one query: read from the block's receipts
    try:
        assert [e.name for e in events.poll()] == ["TaskCancelled", "Credited"]
        _CappedLogs.cap, _CappedLogs.receipts = -1, False  # an endpoint that answers neither
        node.transact("post:3", post(tasks, now(w3) + 86_400), value=10**18)
        with pytest.raises(ChainError, match=f"refuses the logs of block {w3.eth.block_number} .* and its receipts"):
            events.poll()
        assert events.cursor == w3.eth.block_number - 1
    finally:
        _CappedLogs.cap, _CappedLogs.receipts = 2, True
    assert [e.args["task"] for e in events.poll()] == [4]


def test_scanner_halves_a_query_its_endpoint_times_out_on_and_reads_a_refused_block_from_its_receipts(
    anvil: str, w3: Web3, tasks: Any, tmp_path: Path
) -> None:
    """Reviews 26 to 28 of v3: a query a proxy times out on (a 504, a read timeout: RpcUnavailable) was an outage for
    good on the same range; and a block of spam, more logs than the endpoint answers, stopped the scanner there. A
    range timed out on is halved too, while the endpoint answers at all; a block still refused is read from its
    receipts, every event of it kept; a node that never reads attestations asks for none."""
    capped = Web3(_CappedLogs(anvil))
    start = w3.eth.block_number + 1
    contracts = {"TrainingTasks": tasks}
    events = EventScanner(capped, contracts, tmp_path / "e.sqlite", start_block=start, confirmations=0)
    node = client(w3, tmp_path)
    _CappedLogs.timeout, _CappedLogs.cap = True, 1
    try:
        for n in range(2):  # a log a block: two together time out
            node.transact(f"post:{n}", post(tasks, now(w3) + 86_400), value=10**18)
        assert [e.args["task"] for e in events.poll()] == [1, 2]
        w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
        for n in range(2):  # two attestations in one block (spam: more of a kind than the endpoint answers) ...
            attest = tasks.functions.attest(1, n, 1, "reference", "bafyreport", "bafydoc", b"")
            node.submit(f"attest:{n}", attest)
        node.submit("post:2", post(tasks, now(w3) + 86_400), value=10**18)  # ... and a task posted beside them
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
        spammed = w3.eth.block_number
        assert [e.name for e in events.poll()] == ["Attested", "Attested", "TaskPosted"]
        assert events.cursor == spammed and [e.args["k"] for e in events.events("Attested")] == [0, 1]
        skip = frozenset({"Attested"})
        lean = EventScanner(capped, contracts, tmp_path / "l.sqlite", start_block=start, confirmations=0, skip=skip)
        assert len(lean.poll()) == 3 and lean.events("Attested") == []  # never asked for: the spam is no query's
    finally:
        _CappedLogs.timeout, _CappedLogs.cap = False, 2
