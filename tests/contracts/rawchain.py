"""Raw JSON-RPC access to anvil, for the contract tests that send thousands of transactions.

Through Ape a transaction costs ~200 ms and a view ~10-30 ms; a raw transaction costs a few ms and a raw
batch of ~200 views one round trip. The random walk (``test_invariants``) and the adversarial simulation
(``test_simulation``) both drive the contracts through this module: calldata and results from the
contracts' ABIs, event logs decoded from receipts, the custom error a reverted transaction raised.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import requests
from eth_abi import decode, encode
from eth_utils import keccak

GAS = 8_000_000  # gas limit of every transaction


class Rpc:
    """JSON-RPC over one HTTP session; a batch is one round trip."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.ids = itertools.count()

    def __call__(self, method: str, *params: Any) -> Any:
        return self.batch([(method, list(params))])[0]

    def batch(self, calls: list[tuple[str, list[Any]]]) -> list[Any]:
        if not calls:
            return []
        body = [{"jsonrpc": "2.0", "id": next(self.ids), "method": m, "params": p} for m, p in calls]
        answers = {a["id"]: a for a in self.session.post(self.url, json=body, timeout=60).json()}
        results = []
        for request in body:
            answer = answers[request["id"]]
            assert "error" not in answer, (request["method"], answer["error"])
            results.append(answer["result"])
        return results


def _type(param: dict[str, Any]) -> str:
    """The canonical ABI type of a parameter, tuples spelled out."""
    if param["type"].startswith("tuple"):
        return "(" + ",".join(_type(c) for c in param["components"]) + ")" + param["type"][5:]
    return param["type"]


def _named(param: dict[str, Any], value: Any) -> Any:
    """A decoded value with structs as namespaces (by field name) and addresses lowercased."""
    kind = param["type"]
    if kind.startswith("tuple"):
        if kind.endswith("]"):
            return [_named({**param, "type": "tuple"}, v) for v in value]
        return SimpleNamespace(**{c["name"]: _named(c, v) for c, v in zip(param["components"], value, strict=True)})
    if kind == "address":
        return value.lower()
    if kind == "address[]":
        return [v.lower() for v in value]
    return list(value) if kind.endswith("]") else value


@dataclass(frozen=True)
class Event:
    """A decoded log: the event's name, its arguments by name, and where it was emitted."""

    name: str
    args: SimpleNamespace
    address: str
    block: int


class Abi:
    """One deployed contract: calldata for its functions, decoding of their results, events and errors."""

    def __init__(self, address: str, abi: list[dict[str, Any]]) -> None:
        self.address = address.lower()
        self.functions = {f["name"]: f for f in abi if f["type"] == "function"}
        self.errors = {
            keccak(text=f"{e['name']}({','.join(_type(i) for i in e['inputs'])})")[:4]: e["name"]
            for e in abi
            if e["type"] == "error"
        }
        self.events = {
            "0x" + keccak(text=f"{e['name']}({','.join(_type(i) for i in e['inputs'])})").hex(): e
            for e in abi
            if e["type"] == "event"
        }

    def data(self, name: str, *args: Any) -> str:
        inputs = self.functions[name]["inputs"]
        signature = f"{name}({','.join(_type(i) for i in inputs)})"
        return "0x" + (keccak(text=signature)[:4] + encode([_type(i) for i in inputs], list(args))).hex()

    def call(self, name: str, *args: Any) -> tuple[str, list[Any]]:
        return ("eth_call", [{"to": self.address, "data": self.data(name, *args)}, "latest"])

    def result(self, name: str, raw: str) -> Any:
        outputs = self.functions[name]["outputs"]
        values = decode([_type(o) for o in outputs], bytes.fromhex(raw[2:]))
        named = [_named(o, v) for o, v in zip(outputs, values, strict=True)]
        return named[0] if len(named) == 1 else named

    def decode_log(self, log: dict[str, Any]) -> Event | None:
        """The event a log of this contract carries (None: another contract's log)."""
        if log["address"].lower() != self.address or log["topics"][0] not in self.events:
            return None
        event = self.events[log["topics"][0]]
        indexed = [i for i in event["inputs"] if i["indexed"]]
        plain = [i for i in event["inputs"] if not i["indexed"]]
        values: dict[str, Any] = {}
        for param, topic in zip(indexed, log["topics"][1:], strict=True):
            (values[param["name"]],) = decode([_type(param)], bytes.fromhex(topic[2:]))
        for param, value in zip(plain, decode([_type(i) for i in plain], bytes.fromhex(log["data"][2:])), strict=True):
            values[param["name"]] = value
        args = {i["name"]: _named(i, values[i["name"]]) for i in event["inputs"]}
        return Event(event["name"], SimpleNamespace(**args), self.address, int(log["blockNumber"], 16))


class Reads:
    """Reads to send in one batch, each filed under (group, key) with its decoder."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any, tuple[str, list[Any]], Callable[[Any], Any]]] = []

    def add(self, group: str, key: Any, request: tuple[str, list[Any]], decode_: Callable[[Any], Any]) -> None:
        self.items.append((group, key, request, decode_))

    def view(self, group: str, key: Any, contract: Abi, name: str, *args: Any) -> None:
        self.add(group, key, contract.call(name, *args), lambda raw: contract.result(name, raw))

    def run(self, rpc: Rpc) -> dict[str, dict[Any, Any]]:
        results = rpc.batch([request for _, _, request, _ in self.items])
        grouped: dict[str, dict[Any, Any]] = {}
        for (group, key, _, decode_), raw in zip(self.items, results, strict=True):
            grouped.setdefault(group, {})[key] = decode_(raw)
        return grouped


@dataclass(frozen=True)
class Sent:
    """A mined transaction: whether it succeeded, the custom error it reverted with, its receipt."""

    ok: bool
    error: str | None
    receipt: dict[str, Any]


def transact(
    rpc: Rpc, errors: dict[bytes, str], sender: str, contract: Abi, fn: str, *args: Any, value: int = 0
) -> Sent:
    """Send one transaction from an unlocked account with gas priced at zero (the base fee is zero, so
    the ETH of all accounts and contracts stays constant) and wait for it to be mined. ``errors``: custom
    errors by selector, to name the one a reverted transaction raised."""
    tx = {
        "from": sender,
        "to": contract.address,
        "data": contract.data(fn, *args),
        "value": hex(value),
        "gas": hex(GAS),
        "gasPrice": "0x0",
    }
    tx_hash = rpc("eth_sendTransaction", tx)
    receipt = _receipt(rpc, tx_hash)
    ok = receipt["status"] == "0x1"
    return Sent(ok, None if ok else revert_error(rpc, errors, tx_hash), receipt)


def _receipt(rpc: Rpc, tx_hash: str) -> dict[str, Any]:
    """The receipt, once anvil has mined the transaction (automine can lag the send by a moment)."""
    for _ in range(1000):
        if (receipt := rpc("eth_getTransactionReceipt", tx_hash)) is not None:
            return receipt
        time.sleep(0.01)
    raise AssertionError(f"transaction {tx_hash} was not mined")


def revert_error(rpc: Rpc, errors: dict[bytes, str], tx_hash: str) -> str:
    """The custom error a mined transaction reverted with (or what else it was)."""
    trace = rpc("debug_traceTransaction", tx_hash, {"tracer": "callTracer"})
    output = bytes.fromhex(trace.get("output", "0x")[2:])
    return errors.get(output[:4], f"not a custom error: 0x{output.hex()}")
