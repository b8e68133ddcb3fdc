"""`ovig deploy`: compile if the sources moved, pick chain and signer, run the deploy plan.

On the devnet the signer is test account 0 and the deployments file lives in the devnet's data
directory (its addresses are copied into devnet.json). On any other chain the signer is an
encrypted keystore whose password comes from a file or an environment variable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ovig_node import tools
from ovig_node.chain import artifacts
from ovig_node.chain.accounts import devnet_account, load_keystore, read_password
from ovig_node.chain.compile import compile_contracts
from ovig_node.chain.deploy import Deployer, Deployments, RandomnessChoice, run_plan
from ovig_node.chain.errors import DeploymentError, KeystoreError
from ovig_node.chain.rpc import connect
from ovig_node.devnet.beacon import devnet_network
from ovig_node.devnet.errors import DevnetNotRunning, ToolMissing
from ovig_node.devnet.manager import Devnet, DevnetConfig, default_data_dir
from ovig_node.protocol.drand import Network, known_networks

MAX_DEVNET_PACE = 100  # the devnet committee's clocks at most 100 times longer: a dispute of 100 minutes


@dataclass(frozen=True)
class DeployTarget:
    use_devnet: bool
    devnet_dir: Path | None = None  # None: the default devnet data directory
    rpc_url: str | None = None
    keystore: Path | None = None
    password_file: Path | None = None
    password_env: str | None = None
    deployments: Path | None = None  # None: <devnet>/deployments.json or deployments/<chain id>.json
    plan: Path | None = None  # None: deploy/plan.py of the repository
    compile: bool = True  # recompile when the sources differ from the shipped artifacts
    # The randomness backend: "drand" or "blockhash"; None: drand (on the devnet, its own beacon's).
    randomness: str | None = None
    drand_network: str = "quicknet"  # a network of deploy/drand.json (not on the devnet)
    drand_delay: int | None = None  # seconds from an action to its target round; None: the plan's default
    allow_blockhash: bool = False  # deploy block-hash randomness on a chain other than the devnet
    # The devnet committee's clocks this many times longer (deploy/plan.py): for tasks whose replays take
    # more than the devnet's 15 s. Only on the devnet.
    devnet_pace: int = 1


@dataclass(frozen=True)
class DeployOutcome:
    path: Path
    deployments: Deployments
    log: list[str]
    compiled: list[str]


def deploy(target: DeployTarget) -> DeployOutcome:
    if not 1 <= target.devnet_pace <= MAX_DEVNET_PACE or (target.devnet_pace != 1 and not target.use_devnet):
        pace = target.devnet_pace
        raise DeploymentError(f"a devnet pace of {pace}: give 1 to {MAX_DEVNET_PACE}, and only with --devnet")
    compiled = _compile_if_stale() if target.compile else []
    if target.use_devnet:
        net = Devnet(DevnetConfig(data_dir=target.devnet_dir or default_data_dir()))
        if not net.is_running():
            raise DevnetNotRunning(str(net.data_dir))
        info = net.info()
        beacon = (
            devnet_network(info.beacon_genesis, info.beacon_period)
            if info.beacon_genesis and info.beacon_period
            else None
        )
        w3 = connect(info.rpc_url, expected_chain_id=info.chain_id)
        account = devnet_account(0)
        path = target.deployments or net.data_dir / "deployments.json"
    else:
        assert target.rpc_url is not None
        if target.keystore is None:
            raise KeystoreError("-", "deploying to a real chain needs --keystore and a password source")
        password = read_password(password_file=target.password_file, env_var=target.password_env)
        account = load_keystore(target.keystore, password)
        w3 = connect(target.rpc_url)
        path = target.deployments or Path("deployments") / f"{w3.eth.chain_id}.json"
        beacon = None

    deployer = Deployer.open(w3, account, path, _randomness(target, beacon), devnet_pace=target.devnet_pace)
    deployments = run_plan(target.plan or tools.repo_root() / "deploy" / "plan.py", deployer)
    if target.use_devnet:
        net.update_info(contracts=deployments.addresses(), deployments_file=str(path.resolve()))
    return DeployOutcome(path=path, deployments=deployments, log=deployer.log, compiled=compiled)


def _randomness(target: DeployTarget, devnet_beacon: Network | None) -> RandomnessChoice:
    """The backend to deploy: block hashes if asked for; drand otherwise, for the devnet's own beacon on
    the devnet and for a network of deploy/drand.json elsewhere."""
    if target.randomness not in (None, "drand", "blockhash"):
        raise DeploymentError(f"unknown randomness backend {target.randomness!r}: choose drand or blockhash")
    if target.randomness == "blockhash":
        return RandomnessChoice("blockhash", allow_any_chain=target.allow_blockhash)
    if target.use_devnet:
        if devnet_beacon is None:
            raise DeploymentError(
                "this devnet runs no drand beacon: restart it (`ovig devnet up`), or deploy with --randomness blockhash"
            )
        return RandomnessChoice("drand", devnet_beacon, target.drand_delay)
    networks = known_networks(tools.repo_root() / "deploy" / "drand.json")
    if target.drand_network not in networks:
        raise DeploymentError(
            f"no drand network {target.drand_network!r} in deploy/drand.json (known: {', '.join(networks)})"
        )
    return RandomnessChoice("drand", networks[target.drand_network].network, target.drand_delay)


def _compile_if_stale() -> list[str]:
    """Recompile when a checkout's contracts differ from the artifacts; outside a checkout, do nothing."""
    try:
        repo = tools.repo_root()
    except ToolMissing:
        return []
    if not artifacts.stale_sources(repo):
        return []
    return compile_contracts()
