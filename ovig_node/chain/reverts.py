"""Turning revert data into the contracts' custom errors, by name and with named arguments.

Every custom error of every artifact is indexed by its 4-byte selector, so a revert from any of our
contracts reads like the Solidity source: ``WrongBond(expected=100, sent=1)``.
"""

from __future__ import annotations

import functools
from typing import Any

from eth_abi import decode
from eth_utils import keccak, to_hex

from ovig_node.chain import artifacts
from ovig_node.chain.errors import ChainError


class ContractReverted(ChainError):
    """A call or transaction reverted; ``name`` and ``args`` are the custom error (name "" if unknown)."""

    def __init__(self, name: str, args: dict[str, Any], data: str, context: str = "") -> None:
        self.name = name
        self.args_by_name = args
        self.data = data
        shown = ", ".join(f"{k}={_show(v)}" for k, v in args.items())
        what = f"{name}({shown})" if name else f"unknown revert data {data[:74]}"
        super().__init__(f"{context}reverted: {what}" if context else f"reverted: {what}")


def _signature(entry: dict[str, Any]) -> str:
    return f"{entry['name']}({','.join(_type_of(i) for i in entry['inputs'])})"


def _type_of(param: dict[str, Any]) -> str:
    """ABI type string, with tuples spelled out (custom errors may carry structs)."""
    kind: str = param["type"]
    if kind.startswith("tuple"):
        return f"({','.join(_type_of(c) for c in param['components'])}){kind[5:]}"
    return kind


@functools.cache
def _errors_by_selector() -> dict[bytes, dict[str, Any]]:
    table: dict[bytes, dict[str, Any]] = {}
    for name in artifacts.names():
        for entry in artifacts.load(name).abi:
            if entry.get("type") == "error":
                table[keccak(text=_signature(entry))[:4]] = entry
    # Solidity's built-in Error(string) and Panic(uint256).
    table[keccak(text="Error(string)")[:4]] = {"name": "Error", "inputs": [{"name": "message", "type": "string"}]}
    table[keccak(text="Panic(uint256)")[:4]] = {"name": "Panic", "inputs": [{"name": "code", "type": "uint256"}]}
    return table


def decode_revert(data: str | bytes | None, context: str = "") -> ContractReverted:
    """The ContractReverted for revert ``data`` (hex or bytes; empty: a revert without reason)."""
    raw = bytes.fromhex(data.removeprefix("0x")) if isinstance(data, str) else bytes(data or b"")
    hex_data = to_hex(raw)
    entry = _errors_by_selector().get(raw[:4]) if len(raw) >= 4 else None
    if entry is None:
        return ContractReverted("", {}, hex_data, context)
    try:
        values = decode([_type_of(i) for i in entry["inputs"]], raw[4:])
    except Exception:  # malformed data under a known selector: show it raw
        return ContractReverted("", {}, hex_data, context)
    named = {i["name"]: v for i, v in zip(entry["inputs"], values, strict=True)}
    return ContractReverted(entry["name"], named, hex_data, context)


def _show(value: Any) -> str:
    if isinstance(value, bytes):
        return "0x" + value.hex()
    return str(value)
