"""Collective coverage (protocol section 8.4): publish a watcher's attestations, and read everyone's.

A watcher that judged an opened interval sound signs an attestation (:mod:`ovig_node.protocol.attestation`),
pins the signed document to IPFS and announces it with ``attest``, an event-only call. Reading them back, a
node keeps an Attested event only if its signature recovers the watcher it names (a forged one does not), and
it came after interval k's opening (nobody replays an interval before its evidence is proven). Which of the
kept attesters a node *trusts* to skip an interval is its own choice (the watcher's ``--trust``): anyone may
attest under as many addresses as they like, so an attestation is a claim, not a proof.
"""

from __future__ import annotations

import json

from ovig_node.nodes.context import NodeContext
from ovig_node.protocol.attestation import Announced, Attestation, AttestedVerdict, Domain, announced, document, sign


def domain_of(ctx: NodeContext) -> Domain:
    return Domain(int(ctx.client.w3.eth.chain_id), ctx.protocol.tasks.address)


def publish(ctx: NodeContext, task: int, k: int, report_cid: str, profile: str) -> str:
    """Sign, pin and announce that ``ctx``'s watcher judged interval k sound; the document's CID. Idempotent:
    the document is the same bytes (the same CID) every time, and the journal sends the call once."""
    attestation = Attestation(task, k, int(AttestedVerdict.SOUND), report_cid, profile)
    domain = domain_of(ctx)
    signature = sign(attestation, domain, ctx.client.account)
    doc = document(attestation, domain, ctx.address, signature)
    cid = ctx.ipfs.add_bytes(json.dumps(doc, indent=1, sort_keys=True).encode(), name="attestation.json").cid
    fn = ctx.protocol.tasks.functions.attest(task, k, ctx.address, attestation.verdict, profile, report_cid, cid,
                                             signature)  # fmt: skip
    ctx.client.transact(f"attest:{task}:{k}", fn)
    return cid


def attestations(
    ctx: NodeContext,
    task: int,
    *,
    signers: frozenset[str] | None = None,
    checked: dict[tuple[str, int], Announced | None] | None = None,
) -> dict[int, dict[str, Announced]]:
    """k -> watcher -> its first verified attestation of interval k made after k's opening (event index).

    The first stands: a relay cannot bring back an older one, nor swap the unsigned document CID. With
    ``signers``, only the events naming one of them are checked, so a flood in other names costs no ECDSA;
    ``checked`` keeps each event's result (by block hash and log index) across calls: each is checked once."""
    domain = domain_of(ctx)
    opened = {int(e.args["k"]): (e.block_number, e.log_index) for e in ctx.scanner.events("IntervalOpened", task=task)}
    found: dict[int, dict[str, Announced]] = {}
    for event in ctx.scanner.events("Attested", task=task):
        k = int(event.args["k"])
        if k not in opened or (event.block_number, event.log_index) < opened[k]:
            continue
        if signers is not None and str(event.args["watcher"]) not in signers:
            continue
        key = (event.block_hash, event.log_index)
        if checked is not None and key in checked:
            attested = checked[key]
        else:
            attested = announced(event.args, domain)
            if checked is not None:
                checked[key] = attested
        if attested is not None:
            found.setdefault(k, {}).setdefault(attested.watcher, attested)
    return found


def sound_by(found: dict[int, dict[str, Announced]], k: int, trusted: frozenset[str]) -> set[str]:
    """The trusted watchers that attested interval k sound."""
    return {w for w, a in found.get(k, {}).items() if w in trusted and a.sound}
