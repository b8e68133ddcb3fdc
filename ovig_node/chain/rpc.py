"""Connecting to an Ethereum JSON-RPC endpoint and sending signed transactions."""

from __future__ import annotations

import itertools
import statistics
from typing import Any

import requests
from eth_account.signers.local import LocalAccount
from web3 import HTTPProvider, Web3
from web3.exceptions import BlockNotFound, Web3Exception
from web3.types import RPCEndpoint, TxParams, TxReceipt, Wei

from ovig_node.chain.errors import ChainError, RpcRefused, RpcUnavailable

GAS_HEADROOM = 1.2  # estimates can fall short when state moves between estimate and inclusion
MAX_BLOCK_SECONDS = 60.0  # the most block_seconds reads: a chain that mines on demand is not one of slow blocks


class _Provider(HTTPProvider):
    """web3's HTTP provider, with every transport failure raised as RpcUnavailable: whatever path a call takes
    (a view, a transaction, a receipt wait, a log query), an outage reaches the node's loop as one typed error
    it rides out, never as a requests traceback."""

    def make_request(self, method: RPCEndpoint, params: Any) -> Any:
        try:
            return super().make_request(method, params)
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if status >= 500 or status in (408, 425, 429):  # the endpoint or its proxy is away, or busy
                raise RpcUnavailable(str(self.endpoint_uri), f"HTTP {status}") from None
            if status == 400 and (answer := _rpc_error(exc.response)) is not None:
                return answer  # a JSON-RPC error sent as HTTP 400 (a revert, "already known"): web3 reads it as such
            body = exc.response.text[:200] if exc.response is not None else ""
            # a wrong URL or key, or a request the endpoint refuses: an error, never an outage to wait out
            raise RpcRefused(f"RPC endpoint {self.endpoint_uri} answered HTTP {status}: {body}") from None
        except requests.RequestException as exc:  # refused, reset, timed out
            raise RpcUnavailable(str(self.endpoint_uri), type(exc).__name__) from None


def _rpc_error(response: requests.Response | None) -> Any:
    """The JSON-RPC error answer an HTTP 400 carries, or None (review 31 of v3: such an answer was taken for a refusal
    of the endpoint, and a revert or "already known" went undecoded)."""
    try:
        answer = response.json() if response is not None else None
    except ValueError:
        return None
    return answer if isinstance(answer, dict) and isinstance(answer.get("error"), dict) else None


def block_seconds(w3: Web3, span: int = 16) -> float:
    """The chain's median seconds between two of its last ``span + 1`` blocks, within [1, MAX_BLOCK_SECONDS] (a devnet
    mining a block per transaction between its timed ones makes several a second; one that mines only when sent a
    transaction, minutes apart). A median, so one jump of its clock (a devnet moved forward) does not read as slow
    blocks. Read back from the latest block: a block an endpoint does not have (a load-balanced one whose backends
    disagree a moment) is an outage, waited out, never an error."""
    try:
        latest = w3.eth.get_block("latest")
        number = int(latest["number"])
        stamps = [int(latest["timestamp"])]
        stamps += [int(w3.eth.get_block(n)["timestamp"]) for n in range(number - 1, max(-1, number - span - 1), -1)]
    except BlockNotFound:
        raise RpcUnavailable(
            str(getattr(w3.provider, "endpoint_uri", "")), "a block it announced is not found"
        ) from None
    gaps = sorted(later - earlier for later, earlier in itertools.pairwise(stamps))
    return min(MAX_BLOCK_SECONDS, max(1.0, float(statistics.median(gaps)))) if gaps else 1.0


def connect(url: str, *, timeout: float = 30.0, expected_chain_id: int | None = None) -> Web3:
    """A Web3 on ``url`` that has answered once; refuses a chain with another id than expected."""
    # web3's validation asks the endpoint for its chain id before every eth_call: cached, that halves the
    # requests of a node's idle pass (about half its CPU). Nothing else is cached; the id is checked below.
    provider = _Provider(
        url,
        request_kwargs={"timeout": timeout},
        cache_allowed_requests=True,
        cacheable_requests={RPCEndpoint("eth_chainId")},
    )
    w3 = Web3(provider)
    try:
        chain_id = w3.eth.chain_id
    except RpcUnavailable:
        raise
    except (requests.RequestException, OSError, Web3Exception) as exc:
        raise RpcUnavailable(url, type(exc).__name__) from None
    if expected_chain_id is not None and chain_id != expected_chain_id:
        raise ChainError(f"{url} serves chain {chain_id}, expected {expected_chain_id}")
    return w3


def fees(w3: Web3) -> TxParams:
    """EIP-1559 fees that survive a doubling of the base fee (legacy gas price on chains without one)."""
    base_fee = w3.eth.get_block("latest").get("baseFeePerGas")
    if base_fee is None:
        return {"gasPrice": w3.eth.gas_price}
    tip = w3.eth.max_priority_fee
    return {"maxPriorityFeePerGas": tip, "maxFeePerGas": Wei(2 * base_fee + tip)}


def send(w3: Web3, account: LocalAccount, tx: dict[str, Any], *, timeout: float = 120.0) -> TxReceipt:
    """Fill nonce, gas and fees, sign locally, send, and wait; a reverted receipt raises ChainError."""
    params: TxParams = {"from": account.address, "chainId": w3.eth.chain_id, **tx}  # type: ignore[typeddict-item]
    params["nonce"] = w3.eth.get_transaction_count(account.address, "pending")
    params["gas"] = int(w3.eth.estimate_gas(params) * GAS_HEADROOM)
    params.update(fees(w3))
    # eth_account annotates a plain dict; web3's TxParams TypedDict is the transaction it signs.
    signed = account.sign_transaction(params)  # type: ignore[arg-type]
    tx_hash = w3.eth.send_raw_transaction(signed.raw_transaction)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=timeout)
    if receipt["status"] != 1:
        raise ChainError(f"transaction {tx_hash.hex()} reverted in block {receipt['blockNumber']}")
    return receipt
