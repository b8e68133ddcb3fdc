"""The README's first command does what it says: devnet up, deploy, pin and read back, report."""

from __future__ import annotations

import json
from pathlib import Path

from support import free_port, run_ovig


def test_demo_runs_end_to_end_and_stops_cleanly(tmp_path: Path) -> None:
    data_dir = tmp_path / "devnet"
    env = {"OVIG_DEVNET_DIR": str(data_dir)}
    ports = ["--rpc-port", str(free_port()), "--ipfs-port", str(free_port())]
    try:
        result = run_ovig("demo", "--down", *ports, env=env, timeout=300)
    finally:
        run_ovig("devnet", "down", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ProtocolMirror: deployed at 0x" in result.stdout
    assert "(equal)" in result.stdout
    assert "identical bytes" in result.stdout
    assert "pinned: True" in result.stdout
    info = json.loads((data_dir / "devnet.json").read_text())
    assert set(info["contracts"]) == {"ProtocolMirror", "TrainingTasks", "AuditCommittee"}
    assert not (data_dir / "processes.json").exists()  # --down stopped both processes
