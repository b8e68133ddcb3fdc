"""Raw JSON-RPC access to anvil, for the contract tests that send thousands of transactions.

Through Ape a transaction costs ~200 ms and a view ~10-30 ms; a raw transaction costs a few ms and a raw
batch of ~200 views one round trip. The random walk (``test_invariants``) and the adversarial simulation
(``test_simulation``) both drive the contracts through this module: calldata and results from the
contracts' ABIs, event logs decoded from receipts, the custom error a reverted transaction raised.
"""

from __future__ import annotations

import http.client
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

from eth_abi import decode, encode
from eth_utils import keccak

GAS = 8_000_000  # gas limit of every transaction


class Rpc:
    """JSON-RPC over one kept-alive HTTP connection; a batch is one round trip. (``http.client`` rather than
    ``requests``: a call costs a third as much, and the simulation makes hundreds of thousands.)"""

    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path or "/"
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        self.ids = itertools.count()

    def __call__(self, method: str, *params: Any) -> Any:
        return self.batch([(method, list(params))])[0]

    def batch(self, calls: list[tuple[str, list[Any]]]) -> list[Any]:
        if not calls:
            return []
        body = [{"jsonrpc": "2.0", "id": next(self.ids), "method": m, "params": p} for m, p in calls]
        answers = {a["id"]: a for a in self._post(json.dumps(body).encode())}
        results = []
        for request in body:
            answer = answers[request["id"]]
            assert "error" not in answer, (request["method"], answer["error"])
            results.append(answer["result"])
        return results

    def answers(self, calls: list[tuple[str, list[Any]]]) -> list[dict[str, Any]]:
        """One batch whose calls may fail: each call's raw answer (``result`` or ``error``), in order."""
        if not calls:
            return []
        body = [{"jsonrpc": "2.0", "id": next(self.ids), "method": m, "params": p} for m, p in calls]
        by_id = {a["id"]: a for a in self._post(json.dumps(body).encode())}
        return [by_id[request["id"]] for request in body]

    def _post(self, payload: bytes) -> Any:
        headers = {"Content-Type": "application/json"}
        for attempt in (1, 2):
            try:
                self.connection.request("POST", self.path, payload, headers)
                return json.loads(self.connection.getresponse().read())
            except (http.client.HTTPException, ConnectionError):
                # The server closed the kept-alive connection: open a fresh one, once.
                self.connection.close()
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


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


Decoder = Callable[[bytes, int], Any]


def _static(param: dict[str, Any]) -> tuple[int, Decoder] | None:
    """For a static ABI type (no strings, bytes or dynamic arrays): its size in words and a decoder giving
    what ``_named`` would, reading words by hand (eth_abi takes ~20x longer, and the simulation decodes
    hundreds of thousands of structs). None for a dynamic type."""
    kind = param["type"]
    if kind.endswith("]"):
        inner, size = kind[: kind.rindex("[")], kind[kind.rindex("[") + 1 : -1]
        if not size:
            return None
        element = _static({**param, "type": inner})
        if element is None:
            return None
        words, decode_one = element
        count = int(size)
        return words * count, lambda data, at: [decode_one(data, at + 32 * words * i) for i in range(count)]
    if kind == "tuple":
        fields = [(c["name"], _static(c)) for c in param["components"]]
        if any(f is None for _, f in fields):
            return None
        layout: list[tuple[str, int, Decoder]] = []
        offset = 0
        for name, field_ in fields:
            assert field_ is not None
            layout.append((name, offset, field_[1]))
            offset += field_[0]
        return offset, lambda data, at: SimpleNamespace(**{n: d(data, at + 32 * o) for n, o, d in layout})
    if kind.startswith("uint"):
        return 1, lambda data, at: int.from_bytes(data[at : at + 32], "big")
    if kind.startswith("int"):
        return 1, lambda data, at: int.from_bytes(data[at : at + 32], "big", signed=True)
    if kind == "address":
        return 1, lambda data, at: "0x" + data[at + 12 : at + 32].hex()
    if kind == "bool":
        return 1, lambda data, at: data[at + 31] != 0
    if kind.startswith("bytes") and kind != "bytes":
        width = int(kind[5:])
        return 1, lambda data, at: data[at : at + width]
    return None


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
        self._static: dict[str, list[tuple[int, Decoder]] | None] = {}  # fast decoders of functions with static outputs
        # Calldata by function and arguments, and selectors with argument types: views are read again and again.
        self._calldata: dict[tuple[str, tuple[Any, ...]], str] = {}
        self._selectors: dict[str, tuple[bytes, list[str]]] = {}
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
        try:
            return self._calldata[(name, args)]
        except KeyError:
            pass
        except TypeError:  # unhashable arguments (lists of openings): encoded every time
            return self._encode(name, args)
        self._calldata[(name, args)] = data = self._encode(name, args)
        return data

    def _encode(self, name: str, args: tuple[Any, ...]) -> str:
        if name not in self._selectors:
            types = [_type(i) for i in self.functions[name]["inputs"]]
            self._selectors[name] = (keccak(text=f"{name}({','.join(types)})")[:4], types)
        selector, types = self._selectors[name]
        return "0x" + (selector + encode(types, list(args))).hex()

    def call(self, name: str, *args: Any) -> tuple[str, list[Any]]:
        return ("eth_call", [{"to": self.address, "data": self.data(name, *args)}, "latest"])

    def result(self, name: str, raw: str) -> Any:
        outputs = self.functions[name]["outputs"]
        data = bytes.fromhex(raw[2:])
        if name not in self._static:
            decoders = [_static(o) for o in outputs]
            self._static[name] = None if None in decoders else decoders  # type: ignore[assignment]
        fast = self._static[name]
        if fast is not None:
            at, named = 0, []
            for size, decoder in fast:
                named.append(decoder(data, at))
                at += 32 * size
            return named[0] if len(named) == 1 else named
        values = decode([_type(o) for o in outputs], data)
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
    # Anvil's eth_sendTransactionSync answers with the receipt: one round trip, no polling.
    receipt = rpc("eth_sendTransactionSync", tx)
    ok = receipt["status"] == "0x1"
    return Sent(ok, None if ok else revert_error(rpc, errors, receipt["transactionHash"]), receipt)


def revert_error(rpc: Rpc, errors: dict[bytes, str], tx_hash: str) -> str:
    """The custom error a mined transaction reverted with (or what else it was)."""
    trace = rpc("debug_traceTransaction", tx_hash, {"tracer": "callTracer", "tracerConfig": {"onlyTopCall": True}})
    output = bytes.fromhex(trace.get("output", "0x")[2:])
    return errors.get(output[:4], f"not a custom error: 0x{output.hex()}")


def deploy(rpc: Rpc, sender: str, abi: list[dict[str, Any]], bytecode: str, *args: Any) -> Abi:
    """Deploy a contract from its creation bytecode and constructor arguments; returns it."""
    (constructor,) = [e for e in abi if e["type"] == "constructor"] or [{"inputs": []}]
    data = bytecode + encode([_type(i) for i in constructor["inputs"]], list(args)).hex()
    receipt = rpc("eth_sendTransactionSync", {"from": sender, "data": data, "gas": hex(30_000_000), "gasPrice": "0x0"})
    assert receipt["status"] == "0x1", f"deploying with {args} failed"
    return Abi(receipt["contractAddress"], abi)
