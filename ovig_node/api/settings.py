"""What the API reads from (chain, contracts, IPFS) and what the dashboard shows (gateway, labels).

Built from the embedded devnet's ``devnet.json`` (``--devnet``) or from an RPC URL and a deployments
file written by ``ovig deploy`` (``--rpc``, ``--deployments``).

The owner's own watcher nodes are trusted without being named: the API reads their folders (``--watcher-home``,
and on the devnet every ``watcher-N`` folder its nodes keep there), and the accounts they sign as are trusted
attesters as if named by ``--trust-attester``. A first-time owner's own watcher's attestations then colour
intervals *verified* with no flag at all.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from web3 import Web3

from ovig_node.chain.deploy import Deployments
from ovig_node.chain.errors import ChainError
from ovig_node.devnet.errors import DevnetNotRunning
from ovig_node.devnet.manager import Devnet, DevnetConfig

CONTRACTS = ("TrainingTasks", "AuditCommittee")
# Where the devnet's watcher nodes keep their state, relative to its data folder: `ovig watcher --account N`'s
# default --home (nodes/<role>-<account>) and `ovig demo`'s nodes (demo/nodes/<role>-<account>).
DEVNET_NODE_FOLDERS = ("nodes", "demo/nodes")
DEVNET_WATCHER = re.compile(r"watcher-(\d+)")  # the folder name carries the test account's index
JOURNAL = "journal.sqlite"  # a node's TxJournal in its --home (ovig_node.nodes.context.open_node)


@dataclass(frozen=True)
class ApiSettings:
    rpc_url: str  # JSON-RPC endpoint the indexer polls
    contracts: dict[str, str]  # name -> address of TrainingTasks and AuditCommittee
    home: Path  # the event index and the read model live here (both rebuildable from the chain)
    start_block: int = 0  # the deployment block: no protocol event can be older
    confirmations: int = 0  # blocks under the head before an event is indexed (0 on a devnet: no reorgs)
    ipfs_url: str | None = None  # Kubo RPC API the challengers' reports are fetched through
    gateway: str | None = None  # an IPFS gateway the dashboard links CIDs to (none: no links)
    watcher_homes: tuple[Path, ...] = ()  # watcher node folders whose verdicts mark intervals verified
    labels: dict[str, str] = field(default_factory=dict)  # checksummed address -> name shown for it
    trusted_attesters: frozenset[str] = frozenset()  # checksummed watchers whose attestations mark "verified"
    poll_seconds: float = 1.0  # the indexer's period
    # checksummed address -> the watcher node folder (relative to the devnet's folder, or its name) it signs from:
    # the owner's own watchers, trusted as the trusted_attesters are
    own_watchers: dict[str, str] = field(default_factory=dict)

    @property
    def trusted(self) -> frozenset[str]:
        """Every watcher whose attestations mark intervals verified: the owner's own, and those named."""
        return self.trusted_attesters | self.own_watchers.keys()

    def trusted_nodes(self) -> list[tuple[str, str | None]]:
        """(address, its watcher node's folder) of every trusted watcher: the owner's own first, in folder order,
        then those only --trust-attester named (no folder), by address."""
        named = sorted(self.trusted_attesters - self.own_watchers.keys())
        return [*self.own_watchers.items(), *((address, None) for address in named)]


def devnet_settings(devnet_dir: Path, *, home: Path | None = None, **options: object) -> ApiSettings:
    """Settings for the embedded devnet in ``devnet_dir`` (it must be running and deployed)."""
    net = Devnet(DevnetConfig(data_dir=devnet_dir))
    if not net.info_path.is_file():
        raise DevnetNotRunning(str(net.data_dir))
    info = net.info()
    if not set(CONTRACTS) <= info.contracts.keys():
        raise ChainError(f"the devnet in {net.data_dir} has no deployed protocol: run `ovig deploy --devnet`")
    start = _start_block(Path(info.deployments_file)) if info.deployments_file else 0
    options.setdefault("ipfs_url", info.ipfs_api_url)
    # The devnet's own watcher nodes are the owner's: always read, whatever --watcher-home adds.
    named = cast(tuple[Path, ...], options.pop("watcher_homes", ()))
    homes = _unique((*devnet_watcher_homes(net.data_dir), *named))
    accounts = {a.index: Web3.to_checksum_address(a.address.lower()) for a in info.accounts}
    options["own_watchers"] = own_watchers(homes, base=net.data_dir, devnet_accounts=accounts)
    return ApiSettings(
        rpc_url=info.rpc_url,
        contracts={name: info.contracts[name] for name in CONTRACTS},
        home=home or net.data_dir / "api",
        start_block=start,
        watcher_homes=homes,
        **options,  # type: ignore[arg-type]
    )


def chain_settings(rpc_url: str, deployments: Path, *, home: Path, **options: object) -> ApiSettings:
    """Settings for any chain the protocol was deployed to with ``ovig deploy``."""
    record = _deployments(deployments)
    missing = set(CONTRACTS) - record.contracts.keys()
    if missing:
        raise ChainError(f"{deployments} records no {', '.join(sorted(missing))}: deploy first (`ovig deploy`)")
    # A public chain may reorganise its last blocks: index only events a few blocks deep.
    options.setdefault("confirmations", 3)
    options["own_watchers"] = own_watchers(cast(tuple[Path, ...], options.get("watcher_homes", ())))
    return ApiSettings(
        rpc_url=rpc_url,
        contracts={name: record.contracts[name].address for name in CONTRACTS},
        home=home,
        start_block=min(record.contracts[name].block for name in CONTRACTS),
        **options,  # type: ignore[arg-type]
    )


def _deployments(path: Path) -> Deployments:
    try:
        return Deployments.model_validate_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise ChainError(f"cannot read deployments file {path}: {exc}") from None


def _start_block(path: Path) -> int:
    if not path.is_file():
        return 0
    record = _deployments(path)
    return min((record.contracts[name].block for name in CONTRACTS if name in record.contracts), default=0)


def devnet_watcher_homes(devnet_dir: Path) -> tuple[Path, ...]:
    """The devnet's watcher node folders (``watcher-N``), in name order."""
    return tuple(
        home
        for folder in DEVNET_NODE_FOLDERS
        for home in sorted((devnet_dir / folder).glob("watcher-*"))
        if home.is_dir() and DEVNET_WATCHER.fullmatch(home.name)
    )


def own_watchers(
    homes: Iterable[Path], *, base: Path | None = None, devnet_accounts: Mapping[int, str] | None = None
) -> dict[str, str]:
    """Checksummed address -> the folder (relative to ``base`` when under it) of the watcher node signing as it.

    A node's journal records every transaction it signed, with its sender: that is its account on any chain. A
    devnet watcher that has sent nothing yet is known by its folder's name (``watcher-N``: test account N)."""
    found: dict[str, str] = {}
    for home in homes:
        shown = str(home.relative_to(base)) if base is not None and home.is_relative_to(base) else home.name
        senders = _journal_senders(home / JOURNAL)
        named = DEVNET_WATCHER.fullmatch(home.name)
        if devnet_accounts is not None and named and int(named[1]) in devnet_accounts:
            senders.add(devnet_accounts[int(named[1])])
        for address in sorted(senders):
            found.setdefault(address, shown)
    return found


def _journal_senders(path: Path) -> set[str]:
    """The accounts a node's journal sent from; none if it has no journal (or one this code cannot read)."""
    if not path.is_file():
        return set()
    try:
        # Read-only: the node may be running and writing it.
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT DISTINCT sender FROM transactions").fetchall()
    except sqlite3.Error:
        return set()
    return {Web3.to_checksum_address(str(sender).lower()) for (sender,) in rows if Web3.is_address(sender)}


def _unique(homes: Iterable[Path]) -> tuple[Path, ...]:
    """``homes`` in order, each folder once (the same folder named twice, or found and named)."""
    seen: dict[Path, Path] = {}
    for home in homes:
        seen.setdefault(home.resolve(), home)
    return tuple(seen.values())
