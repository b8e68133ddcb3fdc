"""The main job (`make demo` / `ovig demo`): a local OVIG deployment, end to end, explained.

Today it brings the embedded devnet up, deploys the contracts, and stores a file on IPFS and reads it
back through a verifying client. Later stages of the protocol (training, commitments, challenges)
join this script as they land, so one command always shows everything that works.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ovig_node.chain.rpc import connect
from ovig_node.devnet.manager import Devnet
from ovig_node.files import file_sha256
from ovig_node.nodes.deploying import DeployTarget, deploy
from ovig_node.storage.ipfs import IpfsClient
from ovig_node.storage.unixfs import cid_of_stream

DEMO_FILE_BYTES = 3 * 1024 * 1024 + 12_345  # several 256 KiB chunks, so the file is a real DAG


def run_demo(net: Devnet, *, stop_at_end: bool, console: Console) -> None:
    started = time.monotonic()
    summary = Table(title="OVIG demo", show_header=True)
    summary.add_column("step")
    summary.add_column("result", overflow="fold")

    console.rule("1. devnet")
    with console.status("starting anvil and the IPFS node ..."):
        up = net.up()
    info = up.info
    console.print(
        f"{'already running' if up.already_running else 'started'}: chain {info.rpc_url} "
        f"(id {info.chain_id}), IPFS {info.ipfs_api_url}"
    )
    summary.add_row("devnet", f"{info.rpc_url} chain {info.chain_id}; IPFS {info.ipfs_api_url}")

    console.rule("2. contracts")
    with console.status("compiling (if sources changed) and deploying ..."):
        outcome = deploy(DeployTarget(use_devnet=True, devnet_dir=net.data_dir))
    for line in outcome.log:
        console.print(f"  {line}")
    w3 = connect(info.rpc_url, expected_chain_id=info.chain_id)
    summary.add_row("contracts", ", ".join(f"{n} {a}" for n, a in outcome.deployments.addresses().items()))
    summary.add_row("chain head", f"block {w3.eth.block_number}")

    console.rule("3. IPFS: pin and read back")
    with tempfile.TemporaryDirectory() as tmp, IpfsClient(info.ipfs_api_url) as client:
        source = Path(tmp) / "evidence-sample.bin"
        source.write_bytes(_demo_bytes(DEMO_FILE_BYTES))
        with source.open("rb") as stream:
            local_cid = str(cid_of_stream(stream))
        added = client.add_file(source)
        console.print(f"  added {source.name} ({DEMO_FILE_BYTES:,} bytes) as {added.cid}")
        console.print(
            f"  CID computed locally with Kubo's rules: {local_cid} "
            f"({'equal' if local_cid == added.cid else 'DIFFERENT'})"
        )
        back = client.get_file(added.cid, Path(tmp) / "read-back.bin")
        same = file_sha256(back) == file_sha256(source)
        console.print(f"  read back with every block verified: {'identical' if same else 'DIFFERENT'} bytes")
        pinned = client.is_pinned(added.cid)
        console.print(f"  pinned: {pinned}; node holds {len(client.pins())} pins")
        summary.add_row("ipfs", f"{added.cid} pinned={pinned} read-back={'ok' if same else 'MISMATCH'}")
        if local_cid != added.cid or not same or not pinned:
            raise RuntimeError("IPFS round trip failed; see the lines above")

    if stop_at_end:
        net.down()
        summary.add_row("devnet", "stopped (state kept)")
    console.rule("summary")
    console.print(summary)
    console.print(f"done in {time.monotonic() - started:.1f}s. devnet config: {net.info_path}")
    if not stop_at_end:
        console.print("the devnet keeps running; stop it with `ovig devnet down` (`.venv/bin/ovig` in the repo)")


def _demo_bytes(size: int) -> bytes:
    """Deterministic bytes: the same CID on every run and every machine."""
    block = hashlib.sha256(b"ovig-demo").digest() * (65536 // 32)
    return (block * (size // len(block) + 1))[:size]
