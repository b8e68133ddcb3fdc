"""Collective coverage (protocol section 8.4): publish a watcher's attestations, and read everyone's.

A watcher that judged an opened interval sound (or within the near-tie band, protocol 5) signs an attestation
(:mod:`ovig_node.protocol.attestation`), pins the signed document to IPFS and announces it with ``attest``, an
event-only call in its own name. Reading
them back, a node keeps an Attested event only if it came after interval k's opening (nobody replays an
interval before its evidence is proven) and its signature, over the end digest that opening proved, recovers
its sender (one signed for another opening, or by another key, does not). Which of the
kept attesters a node *trusts* to skip an interval is its own choice (the watcher's ``--trust``): anyone may
attest under as many addresses as they like, so an attestation is a claim, not a proof.
"""

from __future__ import annotations

import json

from ovig_node.nodes.appealing import gas_reserve
from ovig_node.nodes.context import NodeContext
from ovig_node.protocol.attestation import Announced, Attestation, AttestedVerdict, Domain, announced, document, sign


def domain_of(ctx: NodeContext) -> Domain:
    return Domain(int(ctx.client.w3.eth.chain_id), ctx.protocol.tasks.address)


def publish(
    ctx: NodeContext,
    task: int,
    k: int,
    end_digest: bytes,
    report_cid: str,
    profile: str,
    verdict: AttestedVerdict = AttestedVerdict.SOUND,
) -> str:
    """Sign, pin and announce that ``ctx``'s watcher judged interval k (opened with ``end_digest``) ``verdict``;
    the document's CID. Idempotent: the document is the same bytes (the same CID: ECDSA signatures here are
    deterministic, RFC 6979) every time, and the journal sends the call once."""
    attestation = Attestation(task, k, end_digest, int(verdict), report_cid, profile)
    domain = domain_of(ctx)
    assert ctx.client.account is not None  # a watcher node signs: only a reader has no account, and it never attests
    signature = sign(attestation, domain, ctx.client.account)
    doc = document(attestation, domain, ctx.address, signature)
    cid = ctx.ipfs.add_bytes(json.dumps(doc, indent=1, sort_keys=True).encode(), name="attestation.json").cid
    fn = ctx.protocol.tasks.functions.attest(task, k, attestation.verdict, profile, report_cid, cid, signature)
    ctx.client.transact(f"attest:{task}:{k}", fn, keep=gas_reserve(ctx))  # never the gas its reveals need
    return cid


def attestations(
    ctx: NodeContext,
    task: int,
    *,
    signers: frozenset[str] | None = None,
    checked: dict[tuple[str, int], Announced | None] | None = None,
) -> dict[int, dict[str, Announced]]:
    """k -> watcher -> its first verified attestation of interval k made after k's opening (event index).

    A watcher's first stands: announcing again changes nothing (and costs a reader no ECDSA). With ``signers``,
    only their events are checked, so a flood from other keys costs none either; ``checked`` keeps each
    event's result (by block hash and log index) across calls: each is checked once."""
    domain = domain_of(ctx)
    opened = {
        int(e.args["k"]): (e.block_number, e.log_index, bytes.fromhex(str(e.args["endDigest"]).removeprefix("0x")))
        for e in ctx.scanner.events("IntervalOpened", task=task)
    }
    found: dict[int, dict[str, Announced]] = {}
    for event in ctx.scanner.events("Attested", task=task):
        k, watcher = int(event.args["k"]), str(event.args["watcher"])
        if k not in opened or (event.block_number, event.log_index) < opened[k][:2]:
            continue
        if (signers is not None and watcher not in signers) or watcher in found.get(k, {}):
            continue
        key = (event.block_hash, event.log_index)
        if checked is not None and key in checked:
            attested = checked[key]
        else:
            attested = announced(event.args, domain, opened[k][2])
            if checked is not None:
                checked[key] = attested
        if attested is not None:
            found.setdefault(k, {}).setdefault(attested.watcher, attested)
    return found


def judged_by(found: dict[int, dict[str, Announced]], k: int, trusted: frozenset[str]) -> set[str]:
    """The trusted watchers that attested interval k: sound, or within the near-tie band (neither needs another
    replay by a partner: a fault shows as neither)."""
    return {w for w in found.get(k, {}) if w in trusted}
