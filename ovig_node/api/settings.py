"""What the API reads from (chain, contracts, IPFS) and what the dashboard shows (gateway, labels).

Built from the embedded devnet's ``devnet.json`` (``--devnet``) or from an RPC URL and a deployments
file written by ``ovig deploy`` (``--rpc``, ``--deployments``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ovig_node.chain.deploy import Deployments
from ovig_node.chain.errors import ChainError
from ovig_node.devnet.errors import DevnetNotRunning
from ovig_node.devnet.manager import Devnet, DevnetConfig

CONTRACTS = ("TrainingTasks", "AuditCommittee")


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
    return ApiSettings(
        rpc_url=info.rpc_url,
        contracts={name: info.contracts[name] for name in CONTRACTS},
        home=home or net.data_dir / "api",
        start_block=start,
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
