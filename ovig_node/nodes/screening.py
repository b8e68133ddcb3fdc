"""Layer one on the chain (protocol 8.2 and 8.3): score a just-opened batch's unopened intervals by their
statistics and ask the provider to open the most anomalous ones.

When batch j is opened, its challenge window runs; within it anyone may ``requestOpening`` (with the challenger
bond) an interval the sample left unopened, up to MAX_REQUESTS_PER_BATCH per requester and batch. The watcher
scores every interval of batches 0..j from their batch manifests (each checked whole against its batch's on-chain
root, by :func:`ovig_node.nodes.judging.fetch_batch_manifest`) against the owner's reference run
(:mod:`ovig_node.verify.statistics_judge`), and requests those above the threshold. A requested interval, once
opened, is judged and challenged like a sampled one. A manifest that cannot be fetched or checked leaves its
rows unscored: the sampled openings' judgement names that fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ovig_node.chain.contracts import RequestStatus
from ovig_node.chain.reverts import ContractReverted
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.fetching import FetchedTask
from ovig_node.nodes.judging import committed_manifest, fetch_batch_manifest
from ovig_node.protocol.manifest import ManifestError, decode_stats
from ovig_node.storage.errors import IpfsError, IpfsUnavailable
from ovig_node.verify.statistics_judge import Reference, scores, to_request


@dataclass(frozen=True)
class Screening:
    """What layer one made of batch j: every scored interval's score, what was requested, and whether the
    batch's window had closed before it could be screened (nothing to request then)."""

    scores: dict[int, float]
    requested: list[int]
    closed: bool = False


# A batch's checked statistics by (task, j): a manifest is fetched and checked against its root once, not at
# every later batch's screening (each can be tens of MB).
Checked = dict[tuple[int, int], dict[int, dict[str, list[float]]]]


def screen_batch(
    ctx: NodeContext,
    fetched: FetchedTask,
    j: int,
    reference: Reference,
    *,
    threshold: float,
    checked: Checked,
    max_bond: int | None = None,
    keep: Callable[[], int] = lambda: 0,
) -> Screening:
    """Score batch j's intervals (and the earlier batches', their baseline) and request the anomalous unopened
    ones this watcher still has room for in the batch, unless a request's bond is above ``max_bond`` (wei); a
    request is signed only with ``keep()`` wei left beside it (the funds its challenges need: read only when a
    request is made). A
    request the contract refuses (another asked first, the window closed meanwhile) is skipped. IpfsUnavailable
    (our own node down) propagates: try again later."""
    task, layout = fetched.task, fetched.prepared.spec.layout
    tasks = ctx.protocol.tasks
    batch = ctx.protocol.batch(task, j)
    if ctx.now() >= int(batch.windowEnd):
        return Screening({}, [], closed=True)
    claimed = {}
    for i in range(j + 1):
        if (task, i) not in checked:
            checked[(task, i)] = _manifest_stats(ctx, fetched, i)
        claimed.update(checked[(task, i)])
    scored = scores(claimed, reference, layout)
    first = j * layout.intervals_per_batch
    candidates = [
        k
        for k in layout.batch_intervals(j)
        if not (int(batch.openedBitmap) >> (k - first)) & 1
        and ctx.protocol.view(tasks, "getRequest", task, k).status == RequestStatus.NONE
    ]
    room = int(tasks.functions.MAX_REQUESTS_PER_BATCH().call()) - int(
        tasks.functions.requestsBy(task, j, ctx.address).call()
    )
    picked = to_request({k: scored[k] for k in layout.batch_intervals(j) if k in scored}, candidates, room, threshold)
    bond = fetched.terms.challengerBond
    if max_bond is not None and bond > max_bond and picked:
        ctx.say(
            f"task {task} batch {j}: intervals {picked} score above the threshold, but a request's bond of "
            f"{bond / 1e18:g} ETH is above --max-bond ({max_bond / 1e18:g} ETH): none requested",
            style="yellow",
        )
        picked = []
    requested = []
    for k in picked:
        try:
            ctx.client.transact(f"request:{task}:{k}", tasks.functions.requestOpening(task, k), value=bond, keep=keep())
        except ContractReverted as exc:
            ctx.say(f"task {task} interval {k}: the request was refused ({exc}); skipped", style="yellow")
            continue
        requested.append(k)
        ctx.say(
            f"task {task} interval {k}: its statistics score {scored.get(k, 0.0):.3g} (threshold {threshold:g}): "
            f"requested its opening (bond {bond / 1e18:g} ETH)",
            style="magenta",
        )
    unopened = [k for k in layout.batch_intervals(j) if k in candidates]
    top = max(((scored.get(k, 0.0), k) for k in unopened), default=None)
    highest = f"; highest {top[0]:.3g} (interval {top[1]})" if top is not None else ""
    ctx.say(
        f"task {task} batch {j}: screened {len(unopened)} unopened intervals against the reference "
        f"(threshold {threshold:g}{highest}); requested {requested or 'none'}"
    )
    return Screening(scored, requested)


def _manifest_stats(ctx: NodeContext, fetched: FetchedTask, j: int) -> dict[int, dict[str, list[float]]]:
    """Batch j's claimed statistics by interval, from its manifest checked against the on-chain root ({} if the
    manifest cannot be fetched or is not the one the root allows)."""
    return manifest_stats(ctx, fetched, j, committed_manifest(ctx, fetched.task, j))


def manifest_stats(
    ctx: NodeContext, fetched: FetchedTask, j: int, named: tuple[str, bytes] | None
) -> dict[int, dict[str, list[float]]]:
    """:func:`_manifest_stats` given the manifest's (CID, root) from the event index: IPFS work only, for a
    worker thread (a watcher's loop never downloads: a manifest trickled to it would hold every duty back)."""
    if named is None:
        return {}
    try:
        rows = fetch_batch_manifest(ctx, fetched, j, *named)
    except IpfsUnavailable:
        raise
    except (IpfsError, ManifestError):
        return {}
    return {k: decode_stats(row.stats) for k, row in rows.items()}
