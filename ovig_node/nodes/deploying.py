"""`ovig deploy`: compile if the sources moved, pick chain and signer, run the deploy plan.

On the devnet the signer is test account 0 and the deployments file lives in the devnet's data
directory (its addresses are copied into devnet.json). On any other chain the signer is an
encrypted keystore whose password comes from a file or an environment variable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ovig_node.chain import artifacts
from ovig_node.chain.accounts import devnet_account, load_keystore, read_password
from ovig_node.chain.compile import compile_contracts
from ovig_node.chain.deploy import Deployer, Deployments, run_plan
from ovig_node.chain.errors import KeystoreError
from ovig_node.chain.rpc import connect
from ovig_node.devnet import tools
from ovig_node.devnet.errors import DevnetNotRunning, ToolMissing
from ovig_node.devnet.manager import Devnet, DevnetConfig, default_data_dir


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


@dataclass(frozen=True)
class DeployOutcome:
    path: Path
    deployments: Deployments
    log: list[str]
    compiled: list[str]


def deploy(target: DeployTarget) -> DeployOutcome:
    compiled = _compile_if_stale() if target.compile else []
    if target.use_devnet:
        net = Devnet(DevnetConfig(data_dir=target.devnet_dir or default_data_dir()))
        if not net.is_running():
            raise DevnetNotRunning(str(net.data_dir))
        info = net.info()
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

    deployer = Deployer.open(w3, account, path)
    deployments = run_plan(target.plan or tools.repo_root() / "deploy" / "plan.py", deployer)
    if target.use_devnet:
        net.update_info(contracts=deployments.addresses(), deployments_file=str(path.resolve()))
    return DeployOutcome(path=path, deployments=deployments, log=deployer.log, compiled=compiled)


def _compile_if_stale() -> list[str]:
    """Recompile when a checkout's contracts differ from the artifacts; outside a checkout, do nothing."""
    try:
        repo = tools.repo_root()
    except ToolMissing:
        return []
    if not artifacts.stale_sources(repo):
        return []
    return compile_contracts()
