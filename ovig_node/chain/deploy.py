"""Deploy contracts from the package's artifacts and record them in a deployments file.

A deployments file is tied to one chain (chain id *and* genesis hash, so a wiped devnet with the
same id is not mistaken for the old one). Re-running a deployment reuses every contract whose
recorded address still holds the code we deployed there from the same creation code and arguments;
anything else is deployed afresh. The file is rewritten after each contract, so an interrupted run
resumes where it stopped.

What gets deployed, in which order and with which arguments, is the plan in ``deploy/plan.py``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import rlp
from eth_account.signers.local import LocalAccount
from eth_utils import keccak, to_canonical_address, to_checksum_address
from pydantic import BaseModel
from web3 import Web3
from web3.contract import Contract

from ovig_node.chain import artifacts
from ovig_node.chain.errors import DeploymentError
from ovig_node.chain.rpc import send
from ovig_node.files import write_atomic
from ovig_node.protocol.drand import Network


@dataclass(frozen=True)
class RandomnessChoice:
    """The randomness backend a plan deploys (protocol section 3): drand, verified on-chain against
    ``network``'s key, or block hashes (devnets; another chain only with ``allow_any_chain``)."""

    kind: Literal["drand", "blockhash"]
    network: Network | None = None  # drand: the network whose rounds DrandBeacon verifies
    delay: int | None = None  # drand: seconds from an action to its target round; None: the plan's default
    allow_any_chain: bool = False  # blockhash: deploy off the devnet anyway (a test network)


class DeployedContract(BaseModel):
    address: str
    block: int
    tx: str
    init_code_hash: str  # keccak of creation code + constructor arguments
    code_hash: str  # keccak of the runtime code found at the address right after deployment
    abi: list[dict[str, Any]]


class Deployments(BaseModel):
    """The deployments file: what is deployed where on one chain."""

    chain_id: int
    genesis_hash: str
    contracts: dict[str, DeployedContract] = {}

    @classmethod
    def load_or_new(cls, path: Path, *, chain_id: int, genesis_hash: str) -> Deployments:
        if path.is_file():
            try:
                existing = cls.model_validate_json(path.read_text())
            except ValueError as exc:
                raise DeploymentError(f"deployments file {path} is not valid: {exc}") from None
            if existing.chain_id == chain_id and existing.genesis_hash == genesis_hash:
                return existing
        return cls(chain_id=chain_id, genesis_hash=genesis_hash)

    def save(self, path: Path) -> None:
        write_atomic(path, self.model_dump_json(indent=2))

    def addresses(self) -> dict[str, str]:
        return {name: c.address for name, c in self.contracts.items()}


@dataclass
class Deployer:
    """Handed to a plan: deploys contracts idempotently and records each one."""

    w3: Web3
    account: LocalAccount
    path: Path
    deployments: Deployments
    randomness: RandomnessChoice
    artifacts_dir: Path = artifacts.ARTIFACTS_DIR
    log: list[str] = field(default_factory=list)  # one line per contract: deployed or reused
    # How many times slower the devnet committee's clocks run (deploy/plan.py); 1 off the devnet.
    devnet_pace: int = 1

    @classmethod
    def open(
        cls, w3: Web3, account: LocalAccount, path: Path, randomness: RandomnessChoice, *, devnet_pace: int = 1
    ) -> Deployer:
        genesis = w3.eth.get_block(0)["hash"]
        assert genesis is not None
        deployments = Deployments.load_or_new(path, chain_id=w3.eth.chain_id, genesis_hash=genesis.to_0x_hex())
        return cls(
            w3=w3, account=account, path=path, deployments=deployments, randomness=randomness, devnet_pace=devnet_pace
        )

    def deploy(self, name: str, *args: Any, value: int = 0) -> Contract:
        """Deploy ``name`` with constructor ``args``, or reuse the recorded one if it is identical."""
        artifact = artifacts.load(name, self.artifacts_dir)
        init_code = self._init_code(name, args)
        recorded = self.deployments.contracts.get(name)
        if recorded and self.unchanged(name, *args):
            self.log.append(f"{name}: reused at {recorded.address}")
            return self.w3.eth.contract(address=recorded.address, abi=artifact.abi)  # type: ignore[call-overload]
        receipt = send(self.w3, self.account, {"data": init_code, "value": value})
        address = receipt["contractAddress"]
        if address is None:
            raise DeploymentError(f"{name}: deployment transaction created no contract")
        self.deployments.contracts[name] = DeployedContract(
            address=address,
            block=receipt["blockNumber"],
            tx=receipt["transactionHash"].to_0x_hex(),
            init_code_hash=keccak(hexstr=init_code).hex(),
            code_hash=self._code_hash(address),
            abi=artifact.abi,
        )
        self.deployments.save(self.path)
        self.log.append(f"{name}: deployed at {address} in block {receipt['blockNumber']}")
        return self.w3.eth.contract(address=address, abi=artifact.abi)

    def unchanged(self, name: str, *args: Any) -> bool:
        """Whether ``name`` is recorded with these constructor ``args`` and its code is still on chain."""
        recorded = self.deployments.contracts.get(name)
        return (
            recorded is not None
            and recorded.init_code_hash == keccak(hexstr=self._init_code(name, args)).hex()
            and self._code_hash(recorded.address) == recorded.code_hash
        )

    def recorded_address(self, name: str) -> str | None:
        """Where ``name`` was last deployed on this chain (None: never)."""
        recorded = self.deployments.contracts.get(name)
        return recorded.address if recorded else None

    def next_address(self, offset: int = 0) -> str:
        """Address of the contract the account's deployment ``offset`` transactions from now creates.

        For contracts that name each other in their constructors: deploy the first at the address
        the second will get.
        """
        nonce = self.w3.eth.get_transaction_count(self.account.address, "pending")
        return create_address(self.account.address, nonce + offset)

    def _init_code(self, name: str, args: tuple[Any, ...]) -> str:
        artifact = artifacts.load(name, self.artifacts_dir)
        factory = self.w3.eth.contract(abi=artifact.abi, bytecode=artifact.bytecode)
        return factory.constructor(*args).data_in_transaction

    def _code_hash(self, address: str) -> str:
        code = self.w3.eth.get_code(Web3.to_checksum_address(address))
        return keccak(bytes(code)).hex() if code else ""


def create_address(sender: str, nonce: int) -> str:
    """The address a CREATE from ``sender`` at ``nonce`` yields: keccak(rlp([sender, nonce]))[12:]."""
    return to_checksum_address(keccak(rlp.encode([to_canonical_address(sender), nonce]))[12:])


def load_plan(plan_path: Path) -> ModuleType:
    """The plan module at ``plan_path``: its ``plan(deployer)`` and the parameters it deploys with."""
    spec = importlib.util.spec_from_file_location("ovig_deploy_plan", plan_path)
    if spec is None or spec.loader is None or not plan_path.is_file():
        raise DeploymentError(f"deploy plan {plan_path} not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_plan(plan_path: Path, deployer: Deployer) -> Deployments:
    """Load ``plan_path`` (a module with ``plan(deployer)``) and run it."""
    module = load_plan(plan_path)
    if not callable(getattr(module, "plan", None)):
        raise DeploymentError(f"deploy plan {plan_path} defines no plan(deployer) function")
    module.plan(deployer)
    deployer.deployments.save(deployer.path)
    return deployer.deployments
