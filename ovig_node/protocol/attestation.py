"""Attestations (protocol section 8.4): a watcher's signed claim that it replayed interval k and judged it.

An attestation is an EIP-712 signature over ``Attestation(uint256 task,uint256 k,bytes32 endDigest,uint8
verdict,string reportCID,string profile)`` under the domain (name "OVIG", version "1", the chain id,
TrainingTasks' address): it names one deployment on one chain, and the very evidence k was opened with
(``endDigest``, E_k's sha256 as IntervalOpened proved it), so a signature over another opening (a redeployed
devnet, a fork, a task id reused after a reorg) verifies nowhere else. The contract's ``attest`` only
announces it, in its sender's name (an event, nothing checked or stored): a reader keeps it when it is well
formed and the signature, over the end digest the reader saw opened, recovers that sender (:func:`announced`).

The signed document, pinned to IPFS, is the same fields and the signature as JSON (:func:`document`), so an
attestation can be checked without the chain's events, by anyone holding the document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import IntEnum
from typing import Any

from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_account.signers.local import LocalAccount
from eth_keys.exceptions import BadSignature, ValidationError
from eth_utils import to_checksum_address

DOMAIN_NAME, DOMAIN_VERSION = "OVIG", "1"
TYPES = {
    "Attestation": [
        {"name": "task", "type": "uint256"},
        {"name": "k", "type": "uint256"},
        {"name": "endDigest", "type": "bytes32"},
        {"name": "verdict", "type": "uint8"},
        {"name": "reportCID", "type": "string"},
        {"name": "profile", "type": "string"},
    ]
}
# What readers keep. Task ids and intervals count up from 1 and 0: one past SQLite's integers is no OVIG
# interval (and would overflow the API's tables). A CID is base32 or base58; a profile is a profile's name and
# a CPU model: anything else (markup, ";", control characters) would reach a terminal or a tooltip as is.
MAX_ID = 2**63 - 1
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
CID = re.compile(r"[A-Za-z0-9]{1,128}")
PROFILE = re.compile(r"[A-Za-z0-9 ,.()@+/:_-]{1,128}")


class AttestedVerdict(IntEnum):
    SOUND = 1  # the replay was within the boundary
    # Out of bounds within the near-tie band (protocol 5): judged, neither challenged nor vouched for. Partners count
    # it as covered, so a provider conceding small faults on every sampled interval cannot make them all replay
    # everything (review 13 of v3); an owner's coverage counts sound ones only.
    INDETERMINATE = 2


@dataclass(frozen=True)
class Attestation:
    """What a watcher signs."""

    task: int
    k: int
    end_digest: bytes  # E_k's sha256, as k's opening proved it on-chain
    verdict: int
    report_cid: str
    profile: str

    def message(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "k": self.k,
            "endDigest": self.end_digest,
            "verdict": self.verdict,
            "reportCID": self.report_cid,
            "profile": self.profile,
        }


@dataclass(frozen=True)
class Domain:
    """Which deployment an attestation is about."""

    chain_id: int
    contract: str  # TrainingTasks' address

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": DOMAIN_NAME,
            "version": DOMAIN_VERSION,
            "chainId": self.chain_id,
            "verifyingContract": to_checksum_address(self.contract),
        }


def _typed(attestation: Attestation, domain: Domain) -> Any:
    return encode_typed_data(
        full_message={
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"},
                ],
                **TYPES,
            },
            "primaryType": "Attestation",
            "domain": domain.as_dict(),
            "message": attestation.message(),
        }
    )


def sign(attestation: Attestation, domain: Domain, account: LocalAccount) -> bytes:
    """The 65-byte signature (r, s, v) of ``account`` over ``attestation``."""
    return bytes(account.sign_message(_typed(attestation, domain)).signature)


def well_formed(attestation: Attestation) -> bool:
    """Whether a reader keeps ``attestation`` at all, before any signature is checked (protocol 8.4)."""
    return (
        0 <= attestation.task <= MAX_ID
        and 0 <= attestation.k <= MAX_ID
        and len(attestation.end_digest) == 32
        and attestation.verdict in set(AttestedVerdict)
        and CID.fullmatch(attestation.report_cid) is not None
        and PROFILE.fullmatch(attestation.profile) is not None
    )


def profile_text(text: str) -> str:
    """``text`` with every character a profile may not hold replaced by a space, cut to the longest allowed."""
    cleaned = " ".join("".join(c if PROFILE.fullmatch(c) else " " for c in text).split())
    return cleaned[:128] or "unknown"


def signer_of(attestation: Attestation, domain: Domain, signature: bytes) -> str | None:
    """The checksummed address that signed ``attestation`` (None: not a signature of it at all, or the
    malleable twin of one: s in the upper half, or v other than 27 or 28, as EIP-2 and OpenZeppelin's ECDSA
    refuse, so one signature has one form)."""
    if len(signature) != 65 or signature[64] not in (27, 28):
        return None
    if int.from_bytes(signature[32:64], "big") > SECP256K1_N // 2:
        return None
    try:
        return str(Account.recover_message(_typed(attestation, domain), signature=signature))
    except (ValueError, TypeError, BadSignature, ValidationError):  # s too high, v not 27/28, no such point
        return None


def verified(attestation: Attestation, domain: Domain, signature: bytes, watcher: str) -> bool:
    """Whether ``signature`` is ``watcher``'s over ``attestation``: a forged one recovers another address."""
    signer = signer_of(attestation, domain, signature)
    return signer is not None and signer == to_checksum_address(watcher)


def document(attestation: Attestation, domain: Domain, watcher: str, signature: bytes) -> dict[str, Any]:
    """The JSON document pinned to IPFS: enough to check the attestation with no chain index."""
    fields = {**asdict(attestation), "end_digest": "0x" + attestation.end_digest.hex()}
    return {
        "domain": domain.as_dict(),
        "attestation": fields,
        "watcher": to_checksum_address(watcher),
        "signature": "0x" + signature.hex(),
    }


def from_document(doc: Mapping[str, Any]) -> Attestation:
    """The attestation a :func:`document` holds (KeyError, TypeError or ValueError if it holds none)."""
    fields = dict(doc["attestation"])
    return Attestation(**{**fields, "end_digest": bytes.fromhex(str(fields["end_digest"]).removeprefix("0x"))})


@dataclass(frozen=True)
class Announced:
    """A verified attestation, as an Attested event announced it (sound, or within the near-tie band)."""

    attestation: Attestation
    watcher: str  # checksummed signer
    attestation_cid: str  # its signed document on IPFS

    @property
    def sound(self) -> bool:
        return self.attestation.verdict == AttestedVerdict.SOUND


def announced(args: Mapping[str, Any], domain: Domain, end_digest: bytes) -> Announced | None:
    """The attestation an Attested event's decoded ``args`` announce (bytes as 0x-hex) of interval k opened
    with ``end_digest``, or None unless it is well formed (:func:`well_formed`) and its signature, over that
    digest, is its sender's (the event's ``watcher``)."""
    try:
        attestation = Attestation(
            int(args["task"]),
            int(args["k"]),
            end_digest,
            int(args["verdict"]),
            str(args["reportCID"]),
            str(args["profile"]),
        )
        signature = bytes.fromhex(str(args["signature"]).removeprefix("0x"))
        watcher = to_checksum_address(str(args["watcher"]))
        cid = str(args["attestationCID"])
    except (KeyError, ValueError, TypeError):
        return None
    if not well_formed(attestation) or CID.fullmatch(cid) is None:
        return None
    if not verified(attestation, domain, signature, watcher):
        return None
    return Announced(attestation, watcher, cid)
