"""The chain client nodes use: bounded RPC retries, idempotent transactions, decoded reverts.

``transact(key, fn)`` sends each keyed transaction at most once, across crashes: the signed bytes are
journaled before broadcast (see ``journal``), so a restarted node re-broadcasts them rather than
signing a second transaction (one whose nonce another process of the account used first is forgotten and
signed afresh: ``NonceTaken``). One not mined within ``receipt_timeout`` is signed again under its nonce
with fees raised by at least ``FEE_BUMP`` (or to the market's, if higher) and NotMined is raised, which
nodes retry: a fee spike cannot leave a challenge or a ballot stuck below the market until its window
closes. A revert, at estimation or after inclusion, raises ContractReverted with the contract's custom
error decoded.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import requests
from eth_account.signers.local import LocalAccount
from eth_account.typed_transactions import TypedTransaction
from eth_typing import ChecksumAddress
from hexbytes import HexBytes
from web3 import Web3
from web3.contract.contract import ContractFunction
from web3.exceptions import (
    BlockNotFound,
    ContractCustomError,
    ContractLogicError,
    TimeExhausted,
    TransactionNotFound,
    Web3RPCError,
)
from web3.types import BlockIdentifier, TxParams, TxReceipt

from ovig_node.chain.errors import (
    BroadcastRefused,
    ChainError,
    FundsShort,
    NonceTaken,
    NotMined,
    RpcUnavailable,
    StateBehind,
)
from ovig_node.chain.journal import JournalEntry, TxJournal
from ovig_node.chain.reverts import ContractReverted, decode_revert
from ovig_node.chain.rpc import GAS_HEADROOM, fees

T = TypeVar("T")
READER = Web3.to_checksum_address("0x0000000000000000000000000000000000000000")  # the `from` of a reader's view calls
# A block the endpoint has not got is transient too: a load-balanced endpoint's backend a block behind the one that
# announced it (review 25 of v3: one such answer to the event scanner ended the node)
TRANSIENT = (requests.ConnectionError, requests.Timeout, ConnectionError, TimeoutError, BlockNotFound)
# A replacement must raise both EIP-1559 fees by at least 10% for nodes to take it (geth's rule); 12.5% clears it.
FEE_BUMP = 1.125


@dataclass
class ChainClient:
    """One signing account on one chain, with its transaction journal (or none: a reader, whose every
    transaction is refused)."""

    w3: Web3
    account: LocalAccount | None
    journal: TxJournal
    attempts: int = 4  # RPC calls are tried this often before RpcUnavailable
    backoff: float = 0.5  # seconds before the first retry; doubles each time
    receipt_timeout: float = 120.0
    # Blocks by which another transaction must have passed a journaled one's nonce before it is forgotten: a
    # load-balanced endpoint's backends lag each other, and one reading of a nonce passed with no receipt found could
    # be this very transaction mined on one backend and not yet on another (review 20 of v3: it was forgotten, signed
    # again and sent twice). 0 on the devnet's one anvil.
    confirmations: int = 3

    @property
    def address(self) -> ChecksumAddress:
        return self.account.address if self.account is not None else READER

    def call(self, fn: ContractFunction, *, block: BlockIdentifier = "latest") -> Any:
        """A view call, retried on transient RPC errors; a revert raises ContractReverted."""
        try:
            return self.retry(lambda: fn.call({"from": self.address}, block_identifier=block))
        except ContractCustomError as exc:
            raise decode_revert(_custom_error_data(exc), f"{fn.fn_name}: ") from None

    def transact(self, key: str, fn: ContractFunction, *, value: int = 0, keep: int = 0) -> TxReceipt:
        """Send ``fn`` once under idempotency ``key`` and wait for it to be mined.

        If ``key`` is journaled, nothing new is signed: a mined transaction returns its receipt, a sent
        one is re-broadcast and awaited. A reverted one is forgotten, so the call is tried afresh.
        ``keep``: wei the account must still hold after this transaction and its others not mined yet, or it is
        FundsShort and nothing is signed (a bond that leaves gas for its reveal). It is checked only when signing:
        a transaction signed already is sent again (and bumped) whatever the balance (review 23 of v3).
        """
        try:
            return self._complete(self._entry(key, fn, value, keep), fn.fn_name)
        except NonceTaken:  # forgotten: signed afresh under the account's next nonce
            return self._complete(self._entry(key, fn, value, keep), fn.fn_name)

    def submit(self, key: str, fn: ContractFunction, *, value: int = 0) -> None:
        """Sign and broadcast ``fn`` under ``key`` without waiting for it to be mined; a later ``transact`` with the
        same key waits for it (and raises its revert). Several submitted in a row take consecutive nonces and are
        mined together: a node with many transactions due before one deadline waits for one block, not one each."""
        entry = self._entry(key, fn, value)
        if entry.status == "sent" and self._receipt_of(entry) is None:
            try:
                self._broadcast(entry)
            except NonceTaken:  # forgotten: signed afresh under the account's next nonce
                self._broadcast(self._entry(key, fn, value))

    def resume(self) -> list[TxReceipt]:
        """Complete every journaled transaction still marked sent (call once at start-up); returns their
        receipts, reverted ones included (status 0, marked reverted in the journal)."""
        receipts = []
        for entry in self.journal.unsettled(self.address):
            # forgotten (its nonce taken) or refused for now: the node's next call of its key sends or signs it
            with contextlib.suppress(NonceTaken, BroadcastRefused):
                receipts.append(self._complete(entry, entry.key, raise_revert=False))
        return receipts

    def retry(self, action: Callable[[], T]) -> T:
        """Run ``action``; on a transient RPC error wait and try again, up to ``attempts`` times."""
        delay = self.backoff
        for attempt in range(self.attempts):
            try:
                return action()
            except TRANSIENT as exc:
                if attempt == self.attempts - 1:
                    if isinstance(exc, RpcUnavailable):  # the provider's own, with the transport's reason
                        raise
                    missing = isinstance(exc, BlockNotFound)
                    reason = "a block it announced is not found" if missing else type(exc).__name__
                    raise RpcUnavailable(str(self.w3.provider.endpoint_uri), reason) from None  # type: ignore[attr-defined]
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    # --- internal ------------------------------------------------------------------------------

    def _entry(self, key: str, fn: ContractFunction, value: int, keep: int = 0) -> JournalEntry:
        """The journaled transaction of ``key``: the one signed before, or ``fn`` signed and recorded now (a
        reverted one is forgotten, so the call is tried afresh)."""
        if self.account is None:
            raise ChainError(f"{fn.fn_name}: this command only reads the chain; it has no account to sign with")
        entry = self.journal.get(key)
        if entry is not None and entry.status == "reverted":
            self.journal.forget(key)
            entry = None
        return entry if entry is not None else self._sign_and_record(key, fn, value, keep)

    def unmined_spend(self) -> int:
        """The most the account's signed transactions not mined yet (at or past its mined count) may still take: their
        value and their gas at their fee caps. One mined and never awaited again has spent already (review 22 of v3)."""
        mined = self.retry(lambda: self.w3.eth.get_transaction_count(self.address, "latest"))
        waiting = [e for e in self.journal.unsettled(self.address) if e.nonce >= mined]
        return sum(_most_spent(_decoded(e.raw)) for e in waiting)

    def _sign_and_record(self, key: str, fn: ContractFunction, value: int, keep: int = 0) -> JournalEntry:
        # Never a transaction the account cannot pay, beside its transactions not mined yet and what it must keep:
        # refused at broadcast, it would keep its nonce, and every later one would wait behind it (review 21 of v3).
        # Its value first (an estimate of a value beyond the balance is refused as no revert: review 23), then its gas
        # once estimated.
        waiting = self.unmined_spend() + keep
        balance = int(self.retry(lambda: self.w3.eth.get_balance(self.address)))
        if balance < value + waiting:
            raise FundsShort(self._short(fn, balance, value + waiting, keep))
        chain_nonce = self.retry(lambda: self.w3.eth.get_transaction_count(self.address, "pending"))
        nonce = max(chain_nonce, self.journal.next_nonce(self.address) or 0)
        params: TxParams = {"from": self.address, "value": value, "nonce": nonce}  # type: ignore[typeddict-item]
        try:
            tx = self.retry(lambda: fn.build_transaction(params))  # estimates gas: a revert shows here
        except ContractCustomError as exc:
            raise decode_revert(_custom_error_data(exc), f"{fn.fn_name}: ") from None
        except ContractLogicError as exc:
            raise ContractReverted("", {}, str(exc.data or ""), f"{fn.fn_name}: ") from None
        except Web3RPCError as exc:
            # No revert: the endpoint's own answer (a rate limit, a backend behind the funds just added): tried again,
            # never left alone (review 29 of v3: one such answer abandoned an appeal, a challenge or a seat for good)
            raise StateBehind(f"{fn.fn_name}: the RPC endpoint refused to estimate it: {exc}") from None
        tx["gas"] = int(tx["gas"] * GAS_HEADROOM)
        for name in ("maxFeePerGas", "maxPriorityFeePerGas", "gasPrice"):
            tx.pop(name, None)  # type: ignore[misc]
        tx.update(self.retry(lambda: fees(self.w3)))
        if balance < (needed := _most_spent(dict(tx)) + waiting):
            raise FundsShort(self._short(fn, balance, needed, keep))
        assert self.account is not None  # transact refuses a reader before it gets here
        # eth_account annotates a plain dict; web3's TxParams TypedDict is the transaction it signs.
        signed = self.account.sign_transaction(tx)  # type: ignore[arg-type]
        self.journal.record(key, self.address, nonce, signed.hash.to_0x_hex(), bytes(signed.raw_transaction))
        return self.journal.get(key)  # type: ignore[return-value]

    def _short(self, fn: ContractFunction, balance: int, needed: int, keep: int) -> str:
        kept = f" (of which {keep / 1e18:g} ETH kept for the node's next transactions)" if keep else ""
        return (
            f"{fn.fn_name}: {self.address} holds {balance / 1e18:g} ETH; this transaction and those not mined yet may "
            f"need {needed / 1e18:g} ETH{kept}: add funds (nothing was signed)"
        )

    def _complete(self, entry: JournalEntry, what: str, *, raise_revert: bool = True) -> TxReceipt:
        receipt = self._receipt_of(entry)
        if receipt is None:
            self._broadcast(entry)
            receipt = self._await(entry)
        if receipt["status"] != 1:
            self.journal.settle(entry.key, status="reverted", block=receipt["blockNumber"])
            if raise_revert:
                raise self._revert_reason(entry, receipt, what)
            return receipt
        self.journal.settle(entry.key, status="mined", block=receipt["blockNumber"])
        return receipt

    def _broadcast(self, entry: JournalEntry) -> None:
        try:
            self.retry(lambda: self.w3.eth.send_raw_transaction(entry.raw))
        except (ValueError, Web3RPCError) as exc:
            # Already known to the node (a re-broadcast after a crash) is fine; anything else is not.
            if "already" in str(exc).lower() or "known" in str(exc).lower():
                return
            if self._nonce_taken(entry):
                self.journal.forget(entry.key)
                raise NonceTaken(
                    f"{entry.key}: nonce {entry.nonce} was used by another transaction of {self.address} (another "
                    "process signing with this key?): it is signed again"
                ) from None
            raise BroadcastRefused(f"{entry.key}: the node refused the transaction for now: {exc}") from None

    def _nonce_taken(self, entry: JournalEntry) -> bool:
        """Whether ``entry``'s nonce was mined in a transaction it never signed: passed ``confirmations`` blocks ago
        (read first: none of its signings can be mined after that), and none of its signings known to the node, mined
        or pending."""
        head = int(self.retry(lambda: self.w3.eth.block_number))
        settled = max(0, head - self.confirmations)
        mined = self.retry(lambda: self.w3.eth.get_transaction_count(self.address, settled))
        signings = self.journal.hashes(entry.key) or [entry.tx_hash]
        return mined > entry.nonce and not any(self._known(tx_hash) for tx_hash in signings)

    def _known(self, tx_hash: str) -> bool:
        """Whether the node knows the transaction ``tx_hash`` (mined or pending)."""
        try:
            self.retry(lambda: self.w3.eth.get_transaction(HexBytes(tx_hash)))
        except TransactionNotFound:
            return False
        return True

    def _receipt(self, tx_hash: str) -> TxReceipt | None:
        try:
            return self.retry(lambda: self.w3.eth.get_transaction_receipt(HexBytes(tx_hash)))
        except TransactionNotFound:
            return None

    def _receipt_of(self, entry: JournalEntry) -> TxReceipt | None:
        """The receipt of ``entry``'s transaction under any hash it was signed under (a fee bump's included)."""
        for tx_hash in self.journal.hashes(entry.key) or [entry.tx_hash]:
            if (receipt := self._receipt(tx_hash)) is not None:
                return receipt
        return None

    def _await(self, entry: JournalEntry) -> TxReceipt:
        try:
            return self.retry(
                lambda: self.w3.eth.wait_for_transaction_receipt(HexBytes(entry.tx_hash), timeout=self.receipt_timeout)
            )
        except TimeExhausted:
            pass
        if (receipt := self._receipt_of(entry)) is not None:  # an earlier signing was mined meanwhile
            return receipt
        bumped = self._bump(entry)
        raise NotMined(f"transaction {entry.tx_hash} not mined within {self.receipt_timeout:.0f} s{bumped}")

    def _bump(self, entry: JournalEntry) -> str:
        """Sign ``entry``'s transaction again under its nonce with both fees raised by FEE_BUMP, or to the market's
        if higher, journal it and broadcast it; what was done, for the NotMined message. A legacy transaction
        (chains without EIP-1559) is left as it is."""
        if self.account is None or entry.raw[:1] != b"\x02":
            return ""
        signature = ("v", "r", "s")
        tx = {k: v for k, v in TypedTransaction.from_bytes(HexBytes(entry.raw)).as_dict().items() if k not in signature}
        market = self.retry(lambda: fees(self.w3))
        tip = max(math.ceil(tx["maxPriorityFeePerGas"] * FEE_BUMP), int(market.get("maxPriorityFeePerGas", 0)))
        cap = max(math.ceil(tx["maxFeePerGas"] * FEE_BUMP), int(market.get("maxFeePerGas", 0)), tip)
        signed = self.account.sign_transaction({**tx, "maxPriorityFeePerGas": tip, "maxFeePerGas": cap})
        self.journal.replace(entry.key, signed.hash.to_0x_hex(), bytes(signed.raw_transaction))
        with contextlib.suppress(ChainError):  # refused (its nonce mined meanwhile, say): the next look sees which
            self._broadcast(self.journal.get(entry.key))  # type: ignore[arg-type]
        return f"; sent again with fees raised to {cap / 1e9:g} gwei (tip {tip / 1e9:g})"

    def _revert_reason(self, entry: JournalEntry, receipt: TxReceipt, what: str) -> ContractReverted:
        """Replays the reverted transaction to read its revert data: on the state after its block (what
        usually made it revert is an earlier transaction of the same block), then on the state before.
        """
        # The signing that was mined (an earlier one, before a fee bump, may have been)
        tx = self.retry(lambda: self.w3.eth.get_transaction(receipt["transactionHash"]))
        call: TxParams = {"from": tx["from"], "to": tx["to"], "data": tx["input"], "value": tx["value"]}
        for block in (receipt["blockNumber"], receipt["blockNumber"] - 1):
            try:
                self.w3.eth.call(call, block_identifier=block)
            except ContractCustomError as exc:
                return decode_revert(_custom_error_data(exc), f"{what}: ")
            except ContractLogicError as exc:
                return ContractReverted("", {}, str(exc.data or ""), f"{what}: ")
        return ContractReverted("", {}, "", f"{what} (mined in block {receipt['blockNumber']}): ")


def _decoded(raw: bytes) -> dict[str, Any]:
    """A signed transaction's fields (value, gas, fees)."""
    if raw[:1] == b"\x02":
        return dict(TypedTransaction.from_bytes(HexBytes(raw)).as_dict())
    from eth_account._utils.legacy_transactions import Transaction  # a legacy one: chains without EIP-1559

    return Transaction.from_bytes(raw).as_dict()


def _most_spent(tx: dict[str, Any]) -> int:
    """The most a transaction may take from its sender: its value and its gas at its fee cap."""
    price = tx.get("maxFeePerGas", tx.get("gasPrice", 0))
    return int(tx.get("value", 0)) + int(tx["gas"]) * int(price)


def _custom_error_data(exc: ContractCustomError) -> str:
    """The revert data of a custom error: web3 types ContractLogicError.data ``str | dict | None`` (a dict for
    OffchainLookup), but raises ContractCustomError with the hex string it decoded the selector from."""
    return cast(str, exc.data)
