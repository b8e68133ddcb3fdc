"""Posting a task: ``post_task`` pins the spec, dataset, initial checkpoint and boundary (an exact task has none;
their CIDs, computed with Kubo's rules, must be the spec's), then posts the task with the reward escrowed. It opens
the task's files to check them first, so it loads torch: the owner's other commands (:mod:`ovig_node.nodes.owner`)
do not.
"""

from __future__ import annotations

from pathlib import Path

from web3.logs import DISCARD

from ovig_node.files import file_sha256
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.fetching import MAX_BATCH_MANIFEST_BYTES
from ovig_node.nodes.node_state import NodeState
from ovig_node.nodes.owner import PostingError, Terms, declared_replay_seconds
from ovig_node.protocol.manifest import manifest_limit
from ovig_node.protocol.spec import ContentRef
from ovig_node.training.taskfiles import boundary_mismatch, open_task
from ovig_node.verify.boundary import load_boundary


def post_task(ctx: NodeContext, spec_path: Path, boundary_path: Path | None, terms: Terms) -> int:
    """Pin the task's files and post it; returns the task id. An exact task (``numerics``) has no boundary
    (``boundary_path`` None) and must declare its replay seconds. Posting the same spec again from the
    same owner state returns the task already posted (the journal never sends it twice)."""
    prepared = open_task(spec_path)
    spec = prepared.spec
    files: list[tuple[Path, ContentRef | None]] = [
        (spec_path, None),
        (prepared.dataset_path, spec.dataset),
        (prepared.init_path, spec.init),
    ]
    slowest = 0.0  # an exact task's replays: only the owner's declaration, checked by each trainer's preflight
    if (manifest := manifest_limit(spec.layout, spec.intervals_per_batch)) > MAX_BATCH_MANIFEST_BYTES:
        raise PostingError(
            f"{spec_path}: its batch manifests could be {manifest} bytes, more than nodes read "
            f"({MAX_BATCH_MANIFEST_BYTES}): fewer intervals a batch, or a shorter stride"
        )
    if spec.exact:
        if boundary_path is not None or spec.boundary is not None:
            raise PostingError(f"{spec_path} is exact: bytes judge it, so it takes no boundary")
        if terms.replay_seconds is None:
            raise PostingError(
                f"{spec_path} is exact: no boundary measured its replays, so declare their seconds (--replay-seconds)"
            )
    else:
        if spec.boundary is None:
            raise PostingError(f"{spec_path} names no boundary: run `ovig spec set-boundary` first")
        if boundary_path is None:
            raise PostingError(f"{spec_path} is judged against its boundary: give its file (--boundary)")
        if file_sha256(boundary_path) != spec.boundary.sha256:
            raise PostingError(f"{boundary_path} is not the boundary the spec names (sha256 {spec.boundary.sha256})")
        if (problem := boundary_mismatch(spec, boundary_path.read_bytes())) is not None:
            raise PostingError(f"{boundary_path}: {problem}")  # before anything is pinned or sent
        files.append((boundary_path, spec.boundary))
        slowest = load_boundary(boundary_path.read_bytes()).replay_seconds_max
    balance = int(ctx.client.retry(lambda: ctx.client.w3.eth.get_balance(ctx.address)))
    if balance < terms.reward:  # before anything is pinned or sent
        raise PostingError(
            f"{ctx.address} holds {balance / 1e18:g} ETH; posting escrows the reward, {terms.reward / 1e18:g} ETH, "
            "plus gas"
        )
    for path, ref in files:
        cid = ctx.ipfs.add_file(path).cid
        if ref is not None and cid != ref.cid:
            raise PostingError(f"{path} was pinned as {cid}, but the spec names {ref.cid}")
        if ref is None:
            spec_cid = cid
    pinned = "spec, dataset and initial checkpoint" if spec.exact else "spec, dataset, initial checkpoint and boundary"
    ctx.say(f"pinned the {pinned} (spec {spec_cid})")
    state = NodeState(ctx.home / "owner.json")
    posts = state.get("posts", {})
    key = f"post:0x{prepared.spec_hash.hex()}:{posts.get(prepared.spec_hash.hex(), 0)}"
    deadline = ctx.now() + terms.deadline_in
    windows = (terms.opening_window, terms.challenge_window, terms.reveal_window)
    replay = declared_replay_seconds(terms, slowest, int(ctx.protocol.committee.functions.maxReplaySeconds().call()))
    bonds = (terms.provider_bond, terms.challenger_bond)
    fn = ctx.protocol.tasks.functions.postTask(
        prepared.spec_hash,
        spec_cid,
        bytes.fromhex(spec.init.sha256),
        spec.total_steps,
        spec.stride,
        spec.intervals_per_batch,
        spec.sample_bps,
        bonds,
        replay,
        windows,
        deadline,
    )
    receipt = ctx.client.transact(key, fn, value=terms.reward)
    task = int(ctx.protocol.tasks.events.TaskPosted().process_receipt(receipt, errors=DISCARD)[0]["args"]["task"])
    posts[prepared.spec_hash.hex()] = posts.get(prepared.spec_hash.hex(), 0) + 1
    state.set("posts", posts)
    ctx.say(
        f"posted task {task}: reward {terms.reward / 1e18:g} ETH, bond {terms.provider_bond / 1e18:g} ETH, "
        f"replays of {replay}s"
    )
    return task
