"""The randomness backend both contracts read (protocol section 3), as nodes see it.

``TrainingTasks.RANDOMNESS`` (the committee's is the same contract) is a ``DrandBeacon`` or, on devnets, a
``BlockhashRandomness``. A draw waits for a target: a block comes by itself; a drand round is on-chain once
someone submits its signature, which keepers fetch from a beacon's HTTP API (the devnet's beacon, or any
drand relay) and the contract verifies. A relay is trusted for nothing: a wrong signature reverts, and the
keeper tries the next relay.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import requests
from web3 import Web3
from web3.contract import Contract
from web3.exceptions import BadFunctionCallOutput, ContractLogicError

from ovig_node.chain import artifacts
from ovig_node.protocol.drand import G1_COMPRESSED, DrandError, Network, check_round, g1_for_contract, g2_from_contract

RELAY_TIMEOUT = 5.0  # seconds per relay request (connect, and each read)
RELAY_BUDGET = 10.0  # seconds for all relays of one round: a slow relay must not hold up a keeper's other duties
MAX_RELAY_BYTES = 64 * 1024  # drand's JSON for a round is a few hundred bytes


@dataclass(frozen=True)
class Randomness:
    """The backend at ``contract``: drand (``network`` set) or block hashes (``network`` None)."""

    contract: Contract
    network: Network | None

    @classmethod
    def at(cls, w3: Web3, address: str) -> Randomness:
        """Bind the backend at ``address``, telling the two kinds apart by what the contract answers."""
        address = Web3.to_checksum_address(address)
        beacon = w3.eth.contract(address=address, abi=artifacts.load("DrandBeacon").abi)
        try:
            key, genesis, period = (
                beacon.functions.publicKey().call(),
                beacon.functions.GENESIS().call(),
                beacon.functions.PERIOD().call(),
            )
        except (ContractLogicError, BadFunctionCallOutput):  # no such functions: a BlockhashRandomness
            blockhash = w3.eth.contract(address=address, abi=artifacts.load("BlockhashRandomness").abi)
            return cls(blockhash, None)
        return cls(beacon, Network(public_key=g2_from_contract(bytes(key)), genesis=genesis, period=period))

    def value(self, target: int) -> tuple[bool, bytes]:
        """(ready, value) of ``target``, as the contracts read it."""
        ready, value = self.contract.functions.valueOf(target).call()
        return bool(ready), bytes(value)

    def describe(self, target: int) -> str:
        return f"block {target}" if self.network is None else f"drand round {target}"


@dataclass(frozen=True)
class BeaconRelays:
    """drand HTTP relays (``/public/{round}``), tried in order. A relay is hostile until checked: whatever it
    answers (garbage, a wrong round, a trickle of bytes) costs at most ``budget`` seconds and never raises."""

    urls: tuple[str, ...]
    budget: float = RELAY_BUDGET

    def signatures(self, round_: int) -> Iterator[bytes]:
        """Round ``round_``'s compressed signature from each relay that serves one, lazily: a caller that is
        satisfied with the first stops asking the others."""
        check_round(round_)
        deadline = time.monotonic() + self.budget
        seen: set[bytes] = set()
        for url in self.urls:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            signature = _fetch(f"{url.rstrip('/')}/public/{round_}", round_, left)
            if signature is not None and signature not in seen:
                seen.add(signature)
                yield signature


def _fetch(url: str, round_: int, seconds: float) -> bytes | None:
    """One relay's signature of ``round_``, or None: down, slow, not published yet, or not drand's JSON."""
    started = time.monotonic()
    try:
        with requests.get(url, timeout=min(seconds, RELAY_TIMEOUT), stream=True) as response:
            if response.status_code != 200:
                return None
            body = b""
            for chunk in response.iter_content(4096):
                body += chunk
                if len(body) > MAX_RELAY_BYTES or time.monotonic() - started > seconds:
                    return None  # drand's answer is a few hundred bytes, sent at once
        data = json.loads(body)
        signature = bytes.fromhex(str(data["signature"]))
        if int(data["round"]) != round_ or len(signature) != G1_COMPRESSED:
            return None
    except (requests.RequestException, ValueError, KeyError, TypeError, AttributeError):
        return None
    return signature


def for_contract(signature: bytes) -> bytes | None:
    """``signature`` in the 128-byte encoding ``submitRound`` takes; None if it is not a G1 point."""
    try:
        return g1_for_contract(signature)
    except DrandError:
        return None
