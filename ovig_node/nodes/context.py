"""What every node runs on: a signing chain client, the deployed contracts, an IPFS client, an event
scanner, a state folder, and a timeline to print what it does.

A node connects either to the embedded devnet (``devnet.json`` names the RPC, IPFS and contracts; the
signer is a published test account by index) or to any chain (RPC URL, deployments file, IPFS API,
and an encrypted keystore whose password comes from a file or an environment variable).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eth_typing import ChecksumAddress
from rich.console import Console

from ovig_node import tools
from ovig_node.chain.accounts import devnet_account, load_keystore, read_password
from ovig_node.chain.client import ChainClient
from ovig_node.chain.contracts import Protocol, deployed_addresses
from ovig_node.chain.errors import ChainError, KeystoreError
from ovig_node.chain.journal import TxJournal
from ovig_node.chain.randomness import BeaconRelays
from ovig_node.chain.rpc import block_seconds, connect
from ovig_node.chain.scanner import EventScanner
from ovig_node.devnet.errors import DevnetNotRunning, ToolMissing
from ovig_node.devnet.manager import DEVNET_CHAIN_ID, Devnet, DevnetConfig, default_data_dir
from ovig_node.files import write_atomic
from ovig_node.protocol.drand import known_networks
from ovig_node.storage.ipfs import IpfsClient

# Watchers and auditors replay under the first profile; a rejection stands only if a replay under the
# second rejects too, as in the evaluation that measured the false-positive rate (a replay that took
# the other side of a rounding tie is not fraud).
REPLAY_PROFILES = "reference,threads2"
# GiB of task files (the owners' and evidence) a watcher keeps beyond those of judgements under way (`--disk-budget`)
DISK_BUDGET_GIB = 20.0
# Roles whose work never reads attestations: their event index leaves them out (anyone can emit thousands cheaply)
NO_ATTESTATIONS = frozenset({"auditor", "trainer", "keeper"})
# Seconds a node's IPFS client searches peers for a block: on the devnet, whose one IPFS node has a block or
# nobody has, a missing one must not eat into vote windows of half a minute; on a public network blocks may
# take a while to find.
DEVNET_FETCH_TIMEOUT = 5.0
PUBLIC_FETCH_TIMEOUT = 60.0
# A watcher's or auditor's IPFS store keeps every block it downloaded (a provider's junk included) until a sweep
# deletes those no pin holds: at most this often, and only while the node fetches nothing (review 12 of v3: a full
# store had the node's own errors taken for files not obtained).
SWEEP_SECONDS = 600.0
# Blocks a node allows itself between seeing a chain event and its answer mined (the event indexed, files pinned, a
# transaction signed, broadcast and included): the floor on any window it must act in. 10 blocks: two minutes on
# Ethereum, ten seconds on the devnet.
ACT_BLOCKS = 10
# The chain, deployment (TrainingTasks address) and account whose node state a home holds
IDENTITY = "identity.json"
BLOCK_SECONDS_TTL = 600.0  # seconds a measure of the chain's block time is used before it is taken again


@dataclass(frozen=True)
class Connection:
    """Where a node connects and who it signs as."""

    devnet_dir: Path | None = None  # the devnet (default folder if use_devnet and None)
    use_devnet: bool = True
    account_index: int | None = None  # devnet test account
    rpc_url: str | None = None
    deployments: Path | None = None
    ipfs_url: str | None = None
    keystore: Path | None = None
    password_file: Path | None = None
    password_env: str | None = None
    beacon_urls: tuple[str, ...] = ()  # drand relays (not the devnet: its own beacon); default: deploy/drand.json's


@dataclass
class Timeline:
    """One line per thing a node does, prefixed with its role and the chain time."""

    role: str
    console: Console = field(default_factory=lambda: Console(highlight=False))

    def __call__(self, message: str, *, style: str = "") -> None:
        stamp = time.strftime("%H:%M:%S")
        # soft_wrap: a line is never cut at the console's width, so a log keeps one event a line
        self.console.print(f"[dim]{stamp}[/] [bold]{self.role:<10}[/] {message}", style=style, soft_wrap=True)


@dataclass
class NodeContext:
    role: str
    client: ChainClient
    protocol: Protocol
    ipfs: IpfsClient
    scanner: EventScanner
    home: Path
    say: Timeline
    beacon: BeaconRelays = field(default_factory=lambda: BeaconRelays(()))  # where keepers fetch drand rounds
    # Seconds between sweeps of the IPFS store of blocks no pin holds (None: never; a devnet's one store is shared
    # by every role, whose fetch windows are seconds long, and a sweep holds the store's lock)
    sweep_every: float | None = None
    _block_seconds: tuple[float, float] | None = field(default=None, init=False, repr=False)  # (value, when measured)

    @property
    def address(self) -> ChecksumAddress:
        return self.client.address

    def head(self) -> Any:
        """The latest block (number, timestamp): every window is judged against chain time."""
        return self.client.retry(lambda: self.client.w3.eth.get_block("latest"))

    def now(self) -> int:
        return int(self.head()["timestamp"])

    def room_to_act(self, poll_seconds: float) -> float:
        """Seconds this node needs between a chain event and its answer mined: ACT_BLOCKS of this chain's blocks
        plus one pass of its loop. A window shorter than that (an owner sets a task's; review 16 of v3: an opening
        window of seconds on a 12 s chain, a reveal window of one) is one it cannot act in, and it says so before
        it bonds anything, rather than after."""
        cached = self._block_seconds
        if cached is None or time.monotonic() - cached[1] > BLOCK_SECONDS_TTL:
            cached = self._block_seconds = (self.client.retry(lambda: block_seconds(self.client.w3)), time.monotonic())
        return ACT_BLOCKS * cached[0] + poll_seconds

    def close(self) -> None:
        self.scanner.close()
        self.client.journal.close()
        self.ipfs.close()


def open_node(
    role: str,
    home: Path,
    connection: Connection,
    *,
    console: Console | None = None,
    reader: bool = False,
    admit: Callable[[Protocol, str], None] | None = None,
) -> NodeContext:
    """Connect ``role``'s node, keeping its journal, event index and files under ``home``. A ``reader`` needs
    no account (nor keystore): it signs nothing, and any transaction it tries is refused. ``admit(protocol,
    address)`` may refuse the account (by raising) before anything is written."""
    if connection.use_devnet:
        net = Devnet(DevnetConfig(data_dir=connection.devnet_dir or default_data_dir()))
        if not net.info_path.is_file():
            raise DevnetNotRunning(str(net.data_dir))
        info = net.info()
        rpc_url, ipfs_url, addresses = info.rpc_url, info.ipfs_api_url, info.contracts
        beacon_urls: tuple[str, ...] = (info.beacon_url,) if info.beacon_url else ()
        if connection.account_index is None and not reader:
            raise KeystoreError("-", "on the devnet, choose a test account with --account N")
        account = None if connection.account_index is None else devnet_account(connection.account_index)
        deployments = Path(info.deployments_file) if info.deployments_file else None
    else:
        if not (connection.rpc_url and connection.deployments and connection.ipfs_url):
            raise ChainError("outside the devnet a node needs --rpc, --deployments and --ipfs")
        if connection.keystore is None and not reader:
            raise ChainError("outside the devnet a node signs with an encrypted --keystore")
        rpc_url, ipfs_url = connection.rpc_url, connection.ipfs_url
        deployments = connection.deployments
        addresses = deployed_addresses(deployments)
        beacon_urls = connection.beacon_urls
        account = None
        if connection.keystore is not None:
            password = read_password(password_file=connection.password_file, env_var=connection.password_env)
            account = load_keystore(connection.keystore, password)
    w3 = connect(rpc_url)
    protocol = Protocol.at(w3, addresses)
    identity = {
        "chain_id": int(w3.eth.chain_id),
        "tasks": protocol.tasks.address,
        "account": account and account.address,
    }
    if account is not None:  # a reader's home (one for every deployment: an index of events) is not marked
        _check_home(home, identity)
        if admit is not None:
            admit(protocol, account.address)
    home.mkdir(parents=True, exist_ok=True)  # only once the connection is whole: a failed command leaves no folder
    if account is not None and not (home / IDENTITY).is_file():
        write_atomic(home / IDENTITY, json.dumps(identity, indent=1).encode())
    # anvil never reorganises, nor lags behind itself; a public chain (and a load-balanced endpoint) may, so events
    # are read, and a transaction's nonce taken as passed, a few blocks deep there.
    confirmations = 0 if connection.use_devnet else 3
    client = ChainClient(w3, account, TxJournal(home / "journal.sqlite"), confirmations=confirmations)
    start = _deployment_block(deployments, "TrainingTasks")
    say = Timeline(role, console or Console(highlight=False))
    scanner = EventScanner(
        client,
        protocol.contracts,
        home / "events.sqlite",
        start_block=start,
        confirmations=confirmations,
        # attestations are the watchers' and the owner's to read; anyone emits them at the price of gas (review 26)
        skip=frozenset({"Attested"}) if role in NO_ATTESTATIONS else frozenset(),
    )
    fetch_timeout = DEVNET_FETCH_TIMEOUT if connection.use_devnet else PUBLIC_FETCH_TIMEOUT
    ipfs = IpfsClient(ipfs_url, fetch_timeout=fetch_timeout)
    beacon = BeaconRelays(beacon_urls or _known_relays(protocol))
    if protocol.randomness.network is not None and not beacon.urls:
        say(
            "no drand relay known for this deployment's beacon: this node submits no rounds (pass --beacon URL)",
            style="yellow",
        )
    if protocol.randomness.network is None and w3.eth.chain_id != DEVNET_CHAIN_ID:
        say(
            "this deployment draws from block hashes, which block builders can grind: fit for test networks only",
            style="yellow",
        )
    sweep = None if connection.use_devnet else SWEEP_SECONDS
    return NodeContext(role, client, protocol, ipfs, scanner, home, say, beacon, sweep_every=sweep)


def _check_home(home: Path, identity: dict[str, Any]) -> None:
    """Refuse a home that holds another chain's, deployment's or account's node state: its journal would answer this
    deployment's calls with that one's receipts, its judged intervals and ballots would stand for this one's (review
    19 of v3: the default home off the devnet is the same for every chain and deployment)."""
    path = home / IDENTITY
    if not path.is_file():
        return  # a new home, or one from before homes were marked: marked now
    held = json.loads(path.read_text())
    if held != identity:
        differs = ", ".join(
            f"{name} {held.get(name)} there, {value} here"
            for name, value in identity.items()
            if held.get(name) != value
        )
        raise ChainError(f"{home} holds another node's state ({differs}): give this node its own --home")


def _known_relays(protocol: Protocol) -> tuple[str, ...]:
    """The relays deploy/drand.json lists for the drand network the contracts verify (none if unknown)."""
    network = protocol.randomness.network
    if network is None:
        return ()
    try:
        path = tools.repo_root() / "deploy" / "drand.json"
    except ToolMissing:
        return ()
    for known in known_networks(path).values() if path.is_file() else ():
        if known.network == network:
            return tuple(known.relays)
    return ()


def _deployment_block(deployments: Path | None, name: str) -> int:
    """The block the contract was deployed in (0 if unknown: scan from genesis)."""
    if deployments is None or not deployments.is_file():
        return 0
    record = json.loads(deployments.read_text())
    return int(record.get("contracts", {}).get(name, {}).get("block", 0))
