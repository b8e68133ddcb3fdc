"""`ovig devnet up | status | down` as a user runs them: real anvil, real IPFS node, real processes."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from web3 import Web3

from ovig_node.chain.accounts import devnet_account
from ovig_node.chain.rpc import connect, send
from ovig_node.protocol.drand import SCHEME
from support import free_port, run_ovig


@pytest.fixture
def devnet_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A private data dir and ports; whatever happens, the devnet is stopped afterwards."""
    env = {"OVIG_DEVNET_DIR": str(tmp_path / "devnet")}
    yield env
    run_ovig("devnet", "down", env=env)


def our_processes(data_dir: Path) -> list[psutil.Process]:
    """Processes that name the data dir or run in it (the beacon's command line names neither)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status", "cwd"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        ours = str(data_dir) in cmdline or proc.info["cwd"] == str(data_dir.resolve())
        if ours and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def up(env: dict[str, str], rpc: int, ipfs: int, *extra: str) -> tuple[int, str, str]:
    result = run_ovig("devnet", "up", "--rpc-port", str(rpc), "--ipfs-port", str(ipfs), *extra, env=env)
    return result.returncode, result.stdout, result.stderr


def test_up_twice_status_down_leaves_no_process(devnet_env: dict[str, str]) -> None:
    data_dir = Path(devnet_env["OVIG_DEVNET_DIR"])
    rpc, ipfs = free_port(), free_port()
    code, out, err = up(devnet_env, rpc, ipfs)
    assert code == 0, err
    assert "devnet started" in out
    info = json.loads((data_dir / "devnet.json").read_text())
    assert info["chain_id"] == 31337
    assert info["rpc_url"] == f"http://127.0.0.1:{rpc}"
    assert info["ipfs_api_url"] == f"http://127.0.0.1:{ipfs}"
    assert info["accounts"][0]["address"] == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
    assert len(info["accounts"]) == 10
    assert (info["beacon_period"], abs(info["beacon_genesis"] - time.time()) < 120) == (3, True)
    pids = json.loads((data_dir / "processes.json").read_text())
    assert sorted(pids) == ["anvil", "beacon", "ipfs"]
    beacon = httpx.get(f"{info['beacon_url']}/info").json()
    assert (beacon["genesis_time"], beacon["period"], beacon["schemeID"]) == (info["beacon_genesis"], 3, SCHEME)

    code, out, _ = up(devnet_env, rpc, ipfs)
    assert code == 0
    assert "already running" in out
    assert json.loads((data_dir / "processes.json").read_text()) == pids

    status = run_ovig("devnet", "status", env=devnet_env)
    assert status.returncode == 0
    assert status.stdout.count("healthy") == 3
    assert (data_dir / "logs" / "anvil.log").stat().st_size > 0
    assert (data_dir / "logs" / "ipfs.log").stat().st_size > 0

    down = run_ovig("devnet", "down", env=devnet_env)
    assert down.returncode == 0
    assert down.stdout.strip() == "stopped ipfs, beacon, anvil"
    assert our_processes(data_dir) == []
    assert not any(psutil.pid_exists(p["pid"]) and psutil.Process(p["pid"]).status() != "zombie" for p in pids.values())
    stopped = run_ovig("devnet", "status", env=devnet_env)
    assert stopped.returncode == 1
    assert stopped.stdout.count("stopped") == 3
    assert run_ovig("devnet", "down", env=devnet_env).stdout.strip() == "devnet is not running"


def test_chain_state_survives_down_and_up(devnet_env: dict[str, str]) -> None:
    rpc, ipfs = free_port(), free_port()
    assert up(devnet_env, rpc, ipfs)[0] == 0
    w3 = connect(f"http://127.0.0.1:{rpc}", expected_chain_id=31337)
    recipient = Web3.to_checksum_address("0x" + "ab" * 20)
    receipt = send(w3, devnet_account(0), {"to": recipient, "value": 123_456_789})
    block = receipt["blockNumber"]
    genesis = json.loads((Path(devnet_env["OVIG_DEVNET_DIR"]) / "devnet.json").read_text())["beacon_genesis"]
    assert run_ovig("devnet", "down", env=devnet_env).returncode == 0
    time.sleep(1.1)  # a genesis taken afresh would now differ

    assert up(devnet_env, rpc, ipfs)[0] == 0
    info = json.loads((Path(devnet_env["OVIG_DEVNET_DIR"]) / "devnet.json").read_text())
    assert info["beacon_genesis"] == genesis  # contracts deployed for the beacon outlive restarts
    assert httpx.get(f"{info['beacon_url']}/info").json()["genesis_time"] == genesis
    w3 = connect(f"http://127.0.0.1:{rpc}", expected_chain_id=31337)
    assert w3.eth.get_balance(recipient) == 123_456_789
    assert w3.eth.block_number >= block
    assert w3.eth.get_transaction(receipt["transactionHash"])["value"] == 123_456_789


def test_block_time_mines_without_transactions(devnet_env: dict[str, str]) -> None:
    rpc = free_port()
    assert up(devnet_env, rpc, free_port(), "--block-time", "1")[0] == 0
    w3 = connect(f"http://127.0.0.1:{rpc}")
    first = w3.eth.block_number
    time.sleep(3.5)
    assert w3.eth.block_number >= first + 2


def test_taken_port_gives_one_line_error_and_starts_nothing(devnet_env: dict[str, str]) -> None:
    data_dir = Path(devnet_env["OVIG_DEVNET_DIR"])
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        code, _, err = up(devnet_env, taken, free_port())
    assert code == 1
    assert err.strip().splitlines() == [
        f"error: port {taken} (anvil RPC) is already in use: stop the process that holds it, "
        "or choose another port with --rpc-port"
    ]
    assert our_processes(data_dir) == []
    assert not (data_dir / "processes.json").exists()


def test_missing_tool_gives_one_line_error(devnet_env: dict[str, str], tmp_path: Path) -> None:
    fake_repo = tmp_path / "checkout"
    (fake_repo / "tools" / "ipfsd").mkdir(parents=True)
    (fake_repo / "package.json").write_text("{}")
    env = {**devnet_env, "OVIG_REPO": str(fake_repo), "PATH": "/usr/bin:/bin"}
    code, _, err = up(env, free_port(), free_port())
    assert code == 1
    assert err.strip() == "error: anvil not found: run `make setup` in the OVIG repository (it runs `npm ci`)"
