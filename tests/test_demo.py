"""The README's first command: the whole system on a private devnet, an honest task finalized and a
cheated one slashed, with every payout exact to the wei."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from ovig_node.chain.contracts import TaskStatus
from ovig_node.devnet.manager import Devnet, DevnetConfig
from ovig_node.devnet.processes import free_port
from ovig_node.nodes.demo import TERMS, run_demo

ETHER = 10**18


def test_demo_finalizes_the_honest_task_and_slashes_the_cheat(tmp_path: Path) -> None:
    data_dir = tmp_path / "devnet"
    net = Devnet(DevnetConfig(data_dir=data_dir, rpc_port=free_port(), ipfs_api_port=free_port()))
    console = Console(file=(tmp_path / "demo.out").open("w"), width=120)
    try:
        result = run_demo(net, stop_at_end=True, console=console, timeout=400)
    finally:
        net.down()
    assert result.status == {result.honest: TaskStatus.FINALIZED, result.cheated: TaskStatus.SLASHED}
    bond, reward, cbond = TERMS.provider_bond, TERMS.reward, TERMS.challenger_bond
    assert result.credited[result.honest] == {"provider A": reward + bond}
    assert result.credited[result.cheated] == {
        "owner": reward + bond * 4_000 // 10_000,
        "watcher": bond * 5_000 // 10_000 + cbond,
        "auditor 1": bond * 1_000 // 10_000 // 3,
        "auditor 2": bond * 1_000 // 10_000 // 3,
        "auditor 3": bond * 1_000 // 10_000 // 3,
    }
    timeline = "\n".join(result.lines)
    assert "watcher challenges interval 19 (out_of_bounds) -> dispute" in timeline
    assert "resolved: FAULTY" in timeline
    assert timeline.count("votes faulty") == 3
    info = json.loads((data_dir / "devnet.json").read_text())
    assert set(info["contracts"]) == {"ProtocolMirror", "TrainingTasks", "AuditCommittee"}
    assert not (data_dir / "processes.json").exists()  # stopped at the end
