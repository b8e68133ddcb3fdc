"""Start, stop and check the embedded devnet: one anvil, one IPFS node and one drand beacon in a data
directory.

Layout of the data directory::

    devnet.json        what clients need: RPC, IPFS and beacon URLs, chain id, test accounts, contracts
    processes.json     the processes *we* started: pid, start time, argv, log (for `down`)
    anvil/state.json   chain state, dumped on exit and every few seconds, reloaded on start
    ipfs/              the IPFS node's blockstore, datastore (pins) and identity
    logs/*.log         each process's output

`down` stops only processes recorded in processes.json whose pid still belongs to the process we
started (same start time), so a recycled pid is never killed.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from ovig_node import tools
from ovig_node.chain.accounts import DEVNET_ACCOUNTS, DEVNET_MNEMONIC, devnet_account
from ovig_node.devnet.errors import DevnetNotRunning, PortTaken
from ovig_node.devnet.processes import ProcessRecord, free_port, owns, port_free, start_process, terminate
from ovig_node.files import write_atomic

DEVNET_CHAIN_ID = 31337


def default_data_dir() -> Path:
    """``$OVIG_DEVNET_DIR``, else ``~/.ovig/devnet``."""
    return Path(os.environ.get("OVIG_DEVNET_DIR") or Path.home() / ".ovig" / "devnet").expanduser()


@dataclass(frozen=True)
class DevnetConfig:
    data_dir: Path = field(default_factory=default_data_dir)
    host: str = "127.0.0.1"  # loopback only: the test keys are public
    rpc_port: int = 8545
    ipfs_api_port: int = 5001
    ipfs_swarm_port: int = 0  # 0: any free port; devnet.json records the address
    beacon_port: int = 0  # the drand beacon's HTTP port; 0: any free port, devnet.json records the URL
    beacon_period: int = 3  # seconds between the beacon's rounds, as drand's quicknet
    chain_id: int = DEVNET_CHAIN_ID
    # Seconds between blocks when nothing happens (transactions are still mined at once), so time-based
    # windows and seed blocks arrive on an idle devnet; 0 or None: a block only per transaction.
    block_time: float | None = 1.0
    balance_eth: int = 10_000  # per test account
    start_timeout: float = 60.0  # seconds a process may take to answer its health check


class DevnetAccount(BaseModel):
    index: int
    address: str
    private_key: str  # a published test key of the devnet mnemonic, never a real secret


class DevnetInfo(BaseModel):
    """The contents of devnet.json: everything a client needs to use the devnet."""

    version: int = 1
    chain_id: int
    rpc_url: str
    ipfs_api_url: str
    ipfs_peer: str  # swarm multiaddr with /p2p/<id>, for a second IPFS node to dial
    data_dir: str
    mnemonic: str = DEVNET_MNEMONIC
    accounts: list[DevnetAccount]
    contracts: dict[str, str] = {}  # name -> address, kept in step with deployments_file
    deployments_file: str | None = None
    # The drand beacon (ovig_node.devnet.beacon): its URL, and round 1's Unix time, fixed when the devnet
    # is first started (the chain state, and a DrandBeacon deployed on it, outlive restarts).
    beacon_url: str | None = None
    beacon_genesis: int | None = None
    beacon_period: int | None = None


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    pid: int | None
    running: bool
    healthy: bool
    detail: str


@dataclass(frozen=True)
class UpResult:
    info: DevnetInfo
    already_running: bool


class Devnet:
    """The devnet in ``config.data_dir``; every method is safe to call in any state."""

    def __init__(self, config: DevnetConfig | None = None) -> None:
        self.config = config or DevnetConfig()
        self.data_dir = self.config.data_dir.expanduser().resolve()

    # --- paths ---------------------------------------------------------------------------------

    @property
    def info_path(self) -> Path:
        return self.data_dir / "devnet.json"

    @property
    def processes_path(self) -> Path:
        return self.data_dir / "processes.json"

    @property
    def state_path(self) -> Path:
        return self.data_dir / "anvil" / "state.json"

    @property
    def ipfs_repo(self) -> Path:
        return self.data_dir / "ipfs"

    def log_path(self, name: str) -> Path:
        return self.data_dir / "logs" / f"{name}.log"

    # --- public --------------------------------------------------------------------------------

    def up(self) -> UpResult:
        """Start anvil, the IPFS node and the beacon unless they already run; write devnet.json."""
        with self._locked():
            records = self._read_records()
            if records and all(owns(r) for r in records.values()) and self.info_path.exists():
                return UpResult(info=self.info(), already_running=True)
            # A half-dead devnet (one process crashed): stop what is left, start both afresh.
            self._stop(records)
            self._check_ports()
            started: dict[str, ProcessRecord] = {}
            try:
                started["anvil"] = self._start("anvil", self._anvil_argv(), lambda: anvil_health(self._rpc_url())[0])
                self._write_records(started)
                started["ipfs"] = self._start("ipfs", self._ipfs_argv(), lambda: ipfs_health(self._ipfs_url())[0])
                self._write_records(started)
                beacon_url = f"http://{self.config.host}:{self.config.beacon_port or free_port(self.config.host)}"
                genesis = self._beacon_genesis()
                beacon = self._beacon_argv(beacon_url, genesis)
                started["beacon"] = self._start("beacon", beacon, lambda: beacon_health(beacon_url)[0])
                self._write_records(started)
                info = self._write_info(beacon_url, genesis)
            except BaseException:
                self._stop(started)
                raise
            return UpResult(info=info, already_running=False)

    def down(self) -> list[str]:
        """Stop the processes this devnet started (state is kept); return their names."""
        with self._locked():
            records = self._read_records()
            stopped = self._stop(records)
            return stopped

    def stop_ipfs(self) -> bool:
        """Stop only the IPFS node (an outage; anvil keeps running); True if it was running."""
        with self._locked():
            records = self._read_records()
            record = records.pop("ipfs", None)
            stopped = record is not None and terminate(record)
            self._write_records(records)
            return stopped

    def start_ipfs(self) -> None:
        """Start the IPFS node again after `stop_ipfs`, on the same port and repository."""
        with self._locked():
            records = self._read_records()
            if "ipfs" in records and owns(records["ipfs"]):
                return
            records["ipfs"] = self._start("ipfs", self._ipfs_argv(), lambda: ipfs_health(self._ipfs_url())[0])
            self._write_records(records)

    def status(self) -> list[ServiceStatus]:
        """Each service: recorded pid, whether it runs, and whether it answers its health check."""
        records = self._read_records()
        # The ports of the running devnet are in devnet.json, whatever this command's options say.
        info = self.info() if self.info_path.exists() else None
        urls = {
            "anvil": (info.rpc_url if info else self._rpc_url(), anvil_health),
            "ipfs": (info.ipfs_api_url if info else self._ipfs_url(), ipfs_health),
            "beacon": ((info.beacon_url or "") if info else "", beacon_health),
        }
        rows = []
        for name, (url, check) in urls.items():
            record = records.get(name)
            running = record is not None and owns(record)
            healthy, detail = check(url) if running else (False, "not running")
            rows.append(ServiceStatus(name, record.pid if record else None, running, healthy, detail))
        return rows

    def info(self) -> DevnetInfo:
        """devnet.json of a devnet that has been started here."""
        if not self.info_path.exists():
            raise DevnetNotRunning(str(self.data_dir))
        return DevnetInfo.model_validate_json(self.info_path.read_text())

    def update_info(self, **changes: Any) -> DevnetInfo:
        """Rewrite devnet.json with ``changes`` (e.g. deployed contracts), atomically."""
        info = self.info().model_copy(update=changes)
        write_atomic(self.info_path, info.model_dump_json(indent=2))
        return info

    def is_running(self) -> bool:
        records = self._read_records()
        return bool(records) and all(owns(r) for r in records.values())

    # --- processes -----------------------------------------------------------------------------

    def _anvil_argv(self) -> list[str]:
        c = self.config
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            str(tools.anvil()),
            "--host",
            c.host,
            "--port",
            str(c.rpc_port),
            "--chain-id",
            str(c.chain_id),
            "--mnemonic",
            DEVNET_MNEMONIC,
            "--accounts",
            str(DEVNET_ACCOUNTS),
            "--balance",
            str(c.balance_eth),
            # --state loads the file if present and dumps on exit; the interval bounds what a
            # SIGKILL can lose to a few seconds.
            "--state",
            str(self.state_path),
            "--state-interval",
            "2",
        ]
        if c.block_time:
            argv += ["--block-time", f"{c.block_time:g}", "--mixed-mining"]
        return argv

    def _ipfs_argv(self) -> list[str]:
        c = self.config
        return tools.ipfsd_argv(self.ipfs_repo, host=c.host, api_port=c.ipfs_api_port, swarm_port=c.ipfs_swarm_port)

    def _beacon_argv(self, url: str, genesis: int) -> list[str]:
        port = url.rsplit(":", 1)[1]
        return [
            sys.executable,
            "-m",
            "ovig_node.devnet.beacon",
            "--host",
            self.config.host,
            "--port",
            port,
            "--genesis",
            str(genesis),
            "--period",
            str(self.config.beacon_period),
            "--rpc",
            self._rpc_url(),
        ]

    def _beacon_genesis(self) -> int:
        """Round 1's time: kept from the devnet's first start, since contracts on its chain may rely on it."""
        previous = DevnetInfo.model_validate_json(self.info_path.read_text()) if self.info_path.exists() else None
        if previous and previous.beacon_genesis:
            return previous.beacon_genesis
        return int(time.time())

    def _start(self, name: str, argv: list[str], ready: Callable[[], bool]) -> ProcessRecord:
        return start_process(
            name,
            argv,
            log=self.log_path(name),
            ready=ready,
            timeout=self.config.start_timeout,
            cwd=self.data_dir,
        )

    def _stop(self, records: dict[str, ProcessRecord]) -> list[str]:
        # IPFS first: it may hold connections; anvil last so its final state dump is the latest.
        stopped = [name for name in sorted(records, key=lambda n: n == "anvil") if terminate(records[name])]
        self.processes_path.unlink(missing_ok=True)
        return stopped

    # --- health --------------------------------------------------------------------------------

    def _rpc_url(self) -> str:
        return f"http://{self.config.host}:{self.config.rpc_port}"

    def _ipfs_url(self) -> str:
        return f"http://{self.config.host}:{self.config.ipfs_api_port}"

    # --- files ---------------------------------------------------------------------------------

    def _check_ports(self) -> None:
        c = self.config
        for port, service, option in (
            (c.rpc_port, "anvil RPC", "--rpc-port"),
            (c.ipfs_api_port, "IPFS API", "--ipfs-port"),
            (c.ipfs_swarm_port, "IPFS swarm", "--swarm-port"),
            (c.beacon_port, "drand beacon", "--beacon-port"),
        ):
            if port and not port_free(c.host, port):
                raise PortTaken(port, service, option)

    def _write_info(self, beacon_url: str, beacon_genesis: int) -> DevnetInfo:
        peer = httpx.post(f"{self._ipfs_url()}/api/v0/id", timeout=5.0).json()
        previous = DevnetInfo.model_validate_json(self.info_path.read_text()) if self.info_path.exists() else None
        accounts = [devnet_account(i) for i in range(DEVNET_ACCOUNTS)]
        info = DevnetInfo(
            chain_id=self.config.chain_id,
            rpc_url=self._rpc_url(),
            ipfs_api_url=self._ipfs_url(),
            ipfs_peer=peer["Addresses"][0],
            data_dir=str(self.data_dir),
            accounts=[
                DevnetAccount(index=i, address=a.address, private_key="0x" + a.key.hex().removeprefix("0x"))
                for i, a in enumerate(accounts)
            ],
            # The chain state survives a restart, so do the addresses deployed on it.
            contracts=previous.contracts if previous else {},
            deployments_file=previous.deployments_file if previous else None,
            beacon_url=beacon_url,
            beacon_genesis=beacon_genesis,
            beacon_period=self.config.beacon_period,
        )
        write_atomic(self.info_path, info.model_dump_json(indent=2))
        return info

    def _read_records(self) -> dict[str, ProcessRecord]:
        if not self.processes_path.exists():
            return {}
        try:
            raw = json.loads(self.processes_path.read_text())
            return {name: ProcessRecord(**fields) for name, fields in raw.items()}
        except (ValueError, TypeError):
            # A torn or hand-edited file: we cannot prove any pid is ours, so we touch none.
            return {}

    def _write_records(self, records: dict[str, ProcessRecord]) -> None:
        write_atomic(self.processes_path, json.dumps({n: asdict(r) for n, r in records.items()}, indent=2))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise up/down on one data dir (two terminals, or a test and a demo)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with (self.data_dir / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def anvil_health(url: str) -> tuple[bool, str]:
    try:
        chain_id = int(_rpc(url, "eth_chainId"), 16)
        block = int(_rpc(url, "eth_blockNumber"), 16)
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        return False, f"RPC {url} does not answer ({type(exc).__name__})"
    return True, f"{url} chain {chain_id}, block {block}"


def ipfs_health(url: str) -> tuple[bool, str]:
    try:
        peer = httpx.post(f"{url}/api/v0/id", timeout=2.0).json()["ID"]
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        return False, f"API {url} does not answer ({type(exc).__name__})"
    return True, f"{url} peer {peer}"


def beacon_health(url: str) -> tuple[bool, str]:
    try:
        latest = httpx.get(f"{url}/public/latest", timeout=2.0)
        detail = f"round {latest.json()['round']}" if latest.status_code == 200 else "before round 1"
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        return False, f"{url or 'beacon'} does not answer ({type(exc).__name__})"
    return True, f"{url} {detail}"


def _rpc(url: str, method: str, params: list[Any] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}
    return httpx.post(url, json=body, timeout=2.0).json()["result"]
