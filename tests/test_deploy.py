"""`ovig deploy` on a real devnet and through a keystore on any RPC; artifacts match the sources."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from eth_abi import encode
from eth_utils import keccak
from web3.exceptions import ContractCustomError

from ovig_node import tools
from ovig_node.chain import artifacts
from ovig_node.chain.accounts import devnet_account, write_keystore
from ovig_node.chain.randomness import Randomness
from ovig_node.chain.rpc import connect, send
from ovig_node.devnet.beacon import devnet_network
from ovig_node.devnet.manager import Devnet, DevnetConfig, DevnetInfo, anvil_health
from ovig_node.devnet.processes import start_process, terminate
from ovig_node.protocol import drand
from support import free_port, run_ovig


@pytest.fixture(scope="module")
def devnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Devnet]:
    net = Devnet(
        DevnetConfig(
            data_dir=tmp_path_factory.mktemp("deploy") / "devnet", rpc_port=free_port(), ipfs_api_port=free_port()
        )
    )
    net.up()
    yield net
    net.down()


def env_of(net: Devnet) -> dict[str, str]:
    return {"OVIG_DEVNET_DIR": str(net.data_dir)}


def test_artifacts_are_up_to_date_with_sources() -> None:
    assert artifacts.stale_sources(tools.repo_root()) == [], "run `ovig compile` and commit the artifacts"
    deployable = ["AuditCommittee", "BlockhashRandomness", "DrandBeacon", "ProtocolMirror", "TrainingTasks"]
    assert artifacts.names() == deployable


def test_deploy_to_devnet_records_and_reuses(devnet: Devnet) -> None:
    first = run_ovig("deploy", "--devnet", env=env_of(devnet))
    assert first.returncode == 0, first.stderr
    assert "ProtocolMirror: deployed at 0x" in first.stdout
    info = DevnetInfo.model_validate_json(devnet.info_path.read_text())
    record = json.loads((devnet.data_dir / "deployments.json").read_text())
    address = record["contracts"]["ProtocolMirror"]["address"]
    tasks_address = record["contracts"]["TrainingTasks"]["address"]
    committee_address = record["contracts"]["AuditCommittee"]["address"]
    beacon_address = record["contracts"]["DrandBeacon"]["address"]
    assert info.contracts == {
        "DrandBeacon": beacon_address,
        "ProtocolMirror": address,
        "TrainingTasks": tasks_address,
        "AuditCommittee": committee_address,
    }
    assert record["chain_id"] == 31337
    w3 = connect(info.rpc_url)
    assert record["genesis_hash"] == w3.eth.get_block(0)["hash"].to_0x_hex()
    # The devnet mines a block a second anyway: the deployer's nonce tells whether anything was sent.
    sent = w3.eth.get_transaction_count(devnet_account(0).address)

    again = run_ovig("deploy", "--devnet", env=env_of(devnet))
    assert again.returncode == 0, again.stderr
    assert f"ProtocolMirror: reused at {address}" in again.stdout
    assert f"DrandBeacon: reused at {beacon_address}" in again.stdout
    assert f"TrainingTasks: reused at {tasks_address}" in again.stdout
    assert f"AuditCommittee: reused at {committee_address}" in again.stdout
    assert w3.eth.get_transaction_count(devnet_account(0).address) == sent  # no transaction sent

    # The deployed code computes the protocol's leaf and tree depth (section 2.4).
    mirror = w3.eth.contract(address=address, abi=artifacts.load("ProtocolMirror").abi)
    digest = bytes(range(32))
    inner = keccak(encode(["uint256", "uint256", "uint256", "bytes32"], [7, 3, 400, digest]))
    assert mirror.functions.leaf(7, 3, 400, digest).call() == keccak(inner)
    assert [mirror.functions.depth(n).call() for n in (1, 2, 3, 4, 5, 256)] == [0, 1, 2, 2, 3, 8]
    # TrainingTasks got the plan's constructor arguments.
    tasks = w3.eth.contract(address=tasks_address, abi=artifacts.load("TrainingTasks").abi)
    assert tasks.functions.KEEPER_BPS().call() == 1000
    # The two are wired to each other, and to the drand backend of the devnet's beacon (DELAY: one period).
    committee = w3.eth.contract(address=committee_address, abi=artifacts.load("AuditCommittee").abi)
    assert tasks.functions.ADJUDICATOR().call() == committee_address
    assert committee.functions.taskContract().call() == tasks_address
    assert tasks.functions.RANDOMNESS().call() == committee.functions.RANDOMNESS().call() == beacon_address
    beacon = w3.eth.contract(address=beacon_address, abi=artifacts.load("DrandBeacon").abi).functions
    network = devnet_network(info.beacon_genesis or 0, info.beacon_period or 0)
    assert beacon.publicKey().call() == drand.g2_for_contract(network.public_key)
    assert (beacon.GENESIS().call(), beacon.PERIOD().call(), beacon.DELAY().call()) == (network.genesis, 3, 3)
    assert Randomness.at(w3, beacon_address).network == network


def test_deploy_rewires_the_pair_when_the_task_contract_is_gone(devnet: Devnet, tmp_path: Path) -> None:
    deployments = tmp_path / "pair.json"
    assert run_ovig("deploy", "--devnet", "--deployments", str(deployments), env=env_of(devnet)).returncode == 0
    record = json.loads(deployments.read_text())
    record["contracts"]["TrainingTasks"]["address"] = "0x" + "00" * 19 + "02"  # no code there
    deployments.write_text(json.dumps(record))
    result = run_ovig("deploy", "--devnet", "--deployments", str(deployments), env=env_of(devnet))
    assert result.returncode == 0, result.stderr
    assert "AuditCommittee: deployed at" in result.stdout and "TrainingTasks: deployed at" in result.stdout
    contracts = json.loads(deployments.read_text())["contracts"]
    w3 = connect(devnet.info().rpc_url)
    committee = w3.eth.contract(
        address=contracts["AuditCommittee"]["address"], abi=artifacts.load("AuditCommittee").abi
    )
    assert committee.functions.taskContract().call() == contracts["TrainingTasks"]["address"]


def test_deploy_redeploys_when_code_is_gone(devnet: Devnet, tmp_path: Path) -> None:
    deployments = tmp_path / "other.json"
    assert run_ovig("deploy", "--devnet", "--deployments", str(deployments), env=env_of(devnet)).returncode == 0
    record = json.loads(deployments.read_text())
    old = record["contracts"]["ProtocolMirror"]["address"]
    record["contracts"]["ProtocolMirror"]["address"] = "0x" + "00" * 19 + "01"  # no code there
    deployments.write_text(json.dumps(record))
    result = run_ovig("deploy", "--devnet", "--deployments", str(deployments), env=env_of(devnet))
    assert result.returncode == 0
    assert "ProtocolMirror: deployed at" in result.stdout
    assert json.loads(deployments.read_text())["contracts"]["ProtocolMirror"]["address"] not in (
        old,
        "0x" + "00" * 19 + "01",
    )


def test_a_paced_devnet_committee_stretches_its_clocks_and_a_plain_deploy_restores_them(
    devnet: Devnet, tmp_path: Path
) -> None:
    """`--devnet-pace 4` (the real chat model's demo): every clock of the devnet committee 4 times longer,
    the committee and its task contract redeployed as a pair; pace 1 again deploys the plain pair back."""
    deployments = tmp_path / "paced.json"
    args = ("deploy", "--devnet", "--deployments", str(deployments))
    assert run_ovig(*args, env=env_of(devnet)).returncode == 0
    plain = json.loads(deployments.read_text())["contracts"]
    paced_run = run_ovig(*args, "--devnet-pace", "4", env=env_of(devnet))
    assert paced_run.returncode == 0, paced_run.stderr
    paced = json.loads(deployments.read_text())["contracts"]
    assert paced["ProtocolMirror"]["address"] == plain["ProtocolMirror"]["address"]  # only the pair moves
    assert paced["AuditCommittee"]["address"] != plain["AuditCommittee"]["address"]
    w3 = connect(devnet.info().rpc_url)

    def clocks(address: str) -> tuple[int, ...]:
        committee = w3.eth.contract(address=address, abi=artifacts.load("AuditCommittee").abi).functions
        return (
            committee.COMMIT_WINDOW().call(),
            committee.REVEAL_WINDOW().call(),
            committee.APPEAL_WINDOW().call(),
            committee.maxReplaySeconds().call(),
        )

    assert clocks(plain["AuditCommittee"]["address"]) == (30, 20, 10, 15)
    assert clocks(paced["AuditCommittee"]["address"]) == (120, 80, 40, 60)
    tasks = w3.eth.contract(address=paced["TrainingTasks"]["address"], abi=artifacts.load("TrainingTasks").abi)
    assert tasks.functions.ADJUDICATOR().call() == paced["AuditCommittee"]["address"]
    back = run_ovig(*args, env=env_of(devnet))
    assert back.returncode == 0 and "AuditCommittee: deployed at" in back.stdout
    restored = json.loads(deployments.read_text())["contracts"]["AuditCommittee"]["address"]
    assert clocks(restored) == (30, 20, 10, 15)


def test_deploy_with_keystore_to_rpc(devnet: Devnet, tmp_path: Path) -> None:
    account = devnet_account(3)
    keystore = write_keystore(account, tmp_path / "key.json", "correct horse")
    password = tmp_path / "password"
    password.write_text("correct horse\n")
    deployments = tmp_path / "deployments" / "31337.json"
    rpc = devnet.info().rpc_url
    args = ["deploy", "--rpc", rpc, "--keystore", str(keystore), "--deployments", str(deployments)]

    result = run_ovig(*args, "--password-file", str(password))
    assert result.returncode == 0, result.stderr
    record = json.loads(deployments.read_text())
    tx = connect(rpc).eth.get_transaction(record["contracts"]["ProtocolMirror"]["tx"])
    assert tx["from"] == account.address
    assert "correct horse" not in result.stdout + result.stderr

    by_env = run_ovig(*args, "--password-env", "OVIG_TEST_PW", env={"OVIG_TEST_PW": "correct horse"})
    assert by_env.returncode == 0
    assert "reused" in by_env.stdout


def test_deploy_errors_are_one_line(devnet: Devnet, tmp_path: Path) -> None:
    keystore = write_keystore(devnet_account(4), tmp_path / "key.json", "right")
    wrong = tmp_path / "pw"
    wrong.write_text("wrong\n")
    bad = run_ovig("deploy", "--rpc", devnet.info().rpc_url, "--keystore", str(keystore), "--password-file", str(wrong))
    assert bad.returncode == 1
    assert bad.stderr.startswith(f"error: keystore {keystore}: cannot decrypt")
    assert len(bad.stderr.strip().splitlines()) == 1

    right = tmp_path / "pw-right"
    right.write_text("right\n")
    port = free_port()
    unreachable = run_ovig(
        "deploy", "--rpc", f"http://127.0.0.1:{port}", "--keystore", str(keystore), "--password-file", str(right)
    )
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith(f"error: RPC endpoint http://127.0.0.1:{port} is unavailable")
    assert len(unreachable.stderr.strip().splitlines()) == 1

    stopped = run_ovig("deploy", "--devnet", env={"OVIG_DEVNET_DIR": str(tmp_path / "none")})
    assert stopped.returncode == 1
    assert (
        stopped.stderr.strip() == f"error: no devnet is running in {tmp_path / 'none'}: start one with `ovig devnet up`"
    )

    both = run_ovig("deploy", "--devnet", "--rpc", "http://x")
    assert both.returncode == 2

    paced = run_ovig("deploy", "--rpc", "http://x", "--devnet-pace", "2")  # refused before any connection
    assert paced.returncode == 1
    assert paced.stderr.strip() == "error: a devnet pace of 2: give 1 to 100, and only with --devnet"


@pytest.fixture(scope="module")
def public_chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An anvil posing as a public chain (chain id 5, not the devnet's)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("chain5") / "anvil.log"
    argv = [str(tools.anvil()), "--port", str(port), "--chain-id", "5", "--silent"]
    proc = start_process("anvil", argv, log=log, ready=lambda: anvil_health(url)[0], timeout=60)
    yield url
    terminate(proc)


def test_block_hash_randomness_is_refused_off_the_devnet_unless_allowed(public_chain: str, tmp_path: Path) -> None:
    account = devnet_account(4)
    keystore = write_keystore(account, tmp_path / "key.json", "pw")
    password = tmp_path / "password"
    password.write_text("pw\n")
    deployments = tmp_path / "5.json"
    args = [
        "deploy",
        "--rpc",
        public_chain,
        "--keystore",
        str(keystore),
        "--password-file",
        str(password),
        "--deployments",
        str(deployments),
        "--randomness",
        "blockhash",
    ]
    w3 = connect(public_chain)
    refused = run_ovig(*args)
    assert refused.returncode != 0
    assert "block-hash randomness can be ground by block builders: refused on chain 5" in refused.stderr
    assert w3.eth.get_transaction_count(account.address) == 0  # refused before anything was sent
    # The contract refuses too, whoever deploys it and however.
    build = artifacts.load("BlockhashRandomness")
    factory = w3.eth.contract(abi=build.abi, bytecode=build.bytecode)
    with pytest.raises(ContractCustomError) as raised:
        send(w3, account, {"data": factory.constructor(2, False).data_in_transaction})
    assert raised.value.data == "0x" + (keccak(text="BlockhashOffDevnet(uint256)")[:4] + encode(["uint256"], [5])).hex()
    allowed = run_ovig(*args, "--allow-blockhash")
    assert allowed.returncode == 0, allowed.stderr
    record = json.loads(deployments.read_text())["contracts"]
    randomness = w3.eth.contract(address=record["BlockhashRandomness"]["address"], abi=build.abi).functions
    assert randomness.DELAY().call() == 2
    tasks = w3.eth.contract(address=record["TrainingTasks"]["address"], abi=artifacts.load("TrainingTasks").abi)
    assert tasks.functions.RANDOMNESS().call() == record["BlockhashRandomness"]["address"]
