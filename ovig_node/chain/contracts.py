"""The deployed protocol contracts, bound for web3, with struct results readable by field name.

web3 returns Solidity structs as bare tuples; ``Protocol.view`` names every field from the ABI, so
node code reads ``task.terms.stride`` rather than ``task[0][6]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from web3 import Web3
from web3.contract import Contract

from ovig_node.chain import artifacts
from ovig_node.chain.errors import ChainError
from ovig_node.chain.randomness import Randomness
from ovig_node.protocol.sampling import sampled_intervals


class TaskStatus(IntEnum):
    NONE = 0
    POSTED = 1
    ACCEPTED = 2
    COMMITTED = 3
    FINALIZED = 4
    CANCELLED = 5
    ABANDONED = 6
    SLASHED = 7


class BatchStatus(IntEnum):
    NONE = 0
    COMMITTED = 1
    DRAWN = 2
    OPENED = 3


class Verdict(IntEnum):
    NONE = 0
    VALID = 1
    FAULTY = 2
    NO_DECISION = 3
    MOOT = 4
    UNAVAILABLE = 5  # the last round found the files not obtainable: slashed as faulty (protocol v3)


class Vote(IntEnum):
    """A panelist's ballot (protocol 4.2, v3): what its own node found."""

    NONE = 0
    SOUND = 1
    FAULTY = 2
    UNAVAILABLE = 3  # files matching the proven digests not obtained from any source in the fetch window
    ABSTAIN = 4  # no verdict by the commit deadline: counted for no outcome, never penalised, never paid


class Reason(IntEnum):
    NONE = 0
    OUT_OF_BOUNDS = 1
    UNAVAILABLE = 2


class DisputeStatus(IntEnum):
    NONE = 0
    AWAITING_PANEL = 1
    VOTING = 2
    RESOLVED = 3
    APPEALABLE = 4


class CommitStatus(IntEnum):
    NONE = 0
    PENDING = 1
    JOINED = 2  # revealed into a dispute; the bond is claimed back (claimBond) unless it settles sound
    SETTLED = 3
    EXPIRED = 4


class RequestStatus(IntEnum):
    """A targeted opening's (protocol 8.3)."""

    NONE = 0
    PENDING = 1  # the provider must open it before openBy
    OPENED = 2  # challengeable for one challenge window from openedAt
    SETTLED = 3  # its bond paid out (refunded, or split as a sound bond once the task finalized)


@dataclass(frozen=True)
class Protocol:
    """TrainingTasks and AuditCommittee at their deployed addresses, and the randomness backend they share."""

    w3: Web3
    tasks: Contract
    committee: Contract
    randomness: Randomness

    @classmethod
    def at(cls, w3: Web3, addresses: dict[str, str]) -> Protocol:
        missing = {"TrainingTasks", "AuditCommittee"} - addresses.keys()
        if missing:
            raise ChainError(f"no address for {', '.join(sorted(missing))}: deploy first (`ovig deploy`)")
        bound = {
            name: w3.eth.contract(address=Web3.to_checksum_address(addresses[name]), abi=artifacts.load(name).abi)
            for name in ("TrainingTasks", "AuditCommittee")
        }
        for name, contract in bound.items():
            if not w3.eth.get_code(contract.address):
                raise ChainError(f"no {name} code at {contract.address}: is this the chain it was deployed to?")
        tasks, committee = bound["TrainingTasks"], bound["AuditCommittee"]
        source = tasks.functions.RANDOMNESS().call()
        if committee.functions.RANDOMNESS().call() != source:
            raise ChainError(
                "TrainingTasks and AuditCommittee read different randomness backends: not an OVIG deployment"
            )
        return cls(w3, tasks, committee, Randomness.at(w3, source))

    @property
    def contracts(self) -> dict[str, Contract]:
        return {"TrainingTasks": self.tasks, "AuditCommittee": self.committee}

    def view(self, contract: Contract, name: str, *args: Any, block: int | str = "latest") -> Any:
        """Call view ``name``; a struct result comes back as a namespace with the ABI's field names."""
        fn = contract.get_function_by_name(name)(*args)
        value = fn.call(block_identifier=block)
        outputs = fn.abi["outputs"]
        return _named(outputs[0], value) if len(outputs) == 1 else tuple(map(_named, outputs, value))

    def task(self, task: int) -> Any:
        return self.view(self.tasks, "getTask", task)

    def batch(self, task: int, j: int) -> Any:
        return self.view(self.tasks, "getBatch", task, j)

    def dispute(self, dispute: int) -> Any:
        return self.view(self.committee, "getDispute", dispute)

    def sampled(self, task: int, j: int) -> list[int]:
        """Intervals of batch ``j``'s sample, ascending (empty until it is drawn)."""
        m = self.task(task).terms.intervalsPerBatch
        return sampled_intervals(self.batch(task, j).sampledBitmap, j, m)


def _named(abi: dict[str, Any], value: Any) -> Any:
    kind: str = abi["type"]
    if kind.startswith("tuple") and kind.endswith("]"):
        return [_named({**abi, "type": kind[: kind.rindex("[")]}, v) for v in value]
    if kind == "tuple":
        return SimpleNamespace(**{c["name"]: _named(c, v) for c, v in zip(abi["components"], value, strict=True)})
    if kind.endswith("]"):
        return list(value)
    return value


def deployed_addresses(deployments_file: Path) -> dict[str, str]:
    """Contract name -> address from a deployments file written by `ovig deploy`."""
    try:
        record = json.loads(deployments_file.read_text())
        return {name: entry["address"] for name, entry in record["contracts"].items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ChainError(f"cannot read deployments file {deployments_file}: {exc}") from None
