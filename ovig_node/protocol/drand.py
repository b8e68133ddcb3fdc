"""drand's ``bls-unchained-g1-rfc9380`` scheme (quicknet), as ``DrandBeacon`` checks it (protocol section 3).

Round r's signature is the BLS signature on G1 of ``sha256(uint64 r, big-endian)`` under the network's
key on G2, hash-to-curve with :data:`DST`; its randomness is ``sha256`` of the 48-byte compressed
signature. drand publishes points compressed (ZCash's encoding); the contract takes them uncompressed in
EIP-2537's encoding (each Fp element 64 bytes, big-endian), so this module converts between the two,
and checks what a relay serves before a keeper spends gas on it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from py_ecc.bls.hash_to_curve import hash_to_G1
from py_ecc.bls.point_compression import compress_G1, compress_G2, decompress_G1, decompress_G2
from py_ecc.bls.typing import G1Compressed, G2Compressed
from py_ecc.optimized_bls12_381 import FQ, FQ2, G2, curve_order, is_inf, multiply, normalize, pairing
from py_ecc.typing import Optimized_Point3D

DST = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_"
SCHEME = "bls-unchained-g1-rfc9380"
G1_COMPRESSED = 48
G2_COMPRESSED = 96
Point = TypeVar("Point", Optimized_Point3D[FQ], Optimized_Point3D[FQ2])


class DrandError(ValueError):
    """A signature or key that is not a valid point of the scheme, or a signature that does not verify."""


@dataclass(frozen=True)
class Network:
    """A drand network as ``DrandBeacon`` is deployed for it (drand's ``/info``)."""

    public_key: bytes  # compressed G2, 96 bytes
    genesis: int  # Unix time of round 1
    period: int  # seconds between rounds

    def round_at(self, timestamp: int) -> int:
        """The first round published at or after ``timestamp`` (``DrandBeacon.roundAt``)."""
        if timestamp <= self.genesis:
            return 1
        return (timestamp - self.genesis + self.period - 1) // self.period + 1

    def latest_round(self, now: float) -> int:
        """The last round published by ``now`` (0 before genesis)."""
        if now < self.genesis:
            return 0
        return int(now - self.genesis) // self.period + 1

    def round_time(self, round_: int) -> int:
        """When round ``round_`` is published."""
        check_round(round_)
        return self.genesis + (round_ - 1) * self.period


@dataclass(frozen=True)
class KnownNetwork:
    """A public drand network of deploy/drand.json, with one round it published (a known answer)."""

    network: Network
    chain_hash: str
    relays: list[str]
    known_round: int
    known_signature: bytes
    known_randomness: bytes


def known_networks(path: Path) -> dict[str, KnownNetwork]:
    """The networks of a ``deploy/drand.json``, by name."""
    raw = json.loads(path.read_text())
    networks = {}
    for name, n in raw.items():
        if name.startswith("_"):
            continue
        if n["scheme"] != SCHEME:
            raise DrandError(f"{path}: {name} uses {n['scheme']}; DrandBeacon verifies {SCHEME} only")
        known = n["known_round"]
        networks[name] = KnownNetwork(
            network=Network(bytes.fromhex(n["public_key"]), int(n["genesis_time"]), int(n["period"])),
            chain_hash=n["chain_hash"],
            relays=list(n["relays"]),
            known_round=int(known["round"]),
            known_signature=bytes.fromhex(known["signature"]),
            known_randomness=bytes.fromhex(known["randomness"]),
        )
    return networks


def check_round(round_: int) -> None:
    """Raise :class:`DrandError` unless ``round_`` is a round number drand and ``DrandBeacon`` can have."""
    if not 1 <= round_ < 2**64:
        raise DrandError(f"round {round_} is not in 1 .. 2^64 - 1 (drand's rounds start at 1)")


def message(round_: int) -> bytes:
    """What round ``round_``'s signature signs: ``sha256`` of the round as 8 big-endian bytes."""
    check_round(round_)
    return hashlib.sha256(round_.to_bytes(8, "big")).digest()


def randomness(signature: bytes) -> bytes:
    """A round's value from its compressed signature: drand's ``randomness``, ``DrandBeacon``'s value."""
    return hashlib.sha256(signature).digest()


def _fp(value: int) -> bytes:
    return value.to_bytes(64, "big")


def _g1_point(signature: bytes) -> Optimized_Point3D[FQ]:
    if len(signature) != G1_COMPRESSED:
        raise DrandError(f"a G1 signature is {G1_COMPRESSED} bytes, not {len(signature)}")
    try:
        point = decompress_G1(G1Compressed(int.from_bytes(signature, "big")))
    except ValueError as e:  # py_ecc's refusals: bad flags, x off the curve, x not below p
        raise DrandError(f"not a G1 point: {e}") from None
    return _in_subgroup(point, "G1")


def _g2_point(public_key: bytes) -> Optimized_Point3D[FQ2]:
    if len(public_key) != G2_COMPRESSED:
        raise DrandError(f"a G2 public key is {G2_COMPRESSED} bytes, not {len(public_key)}")
    z1, z2 = int.from_bytes(public_key[:48], "big"), int.from_bytes(public_key[48:], "big")
    try:
        point = decompress_G2(G2Compressed((z1, z2)))
    except ValueError as e:
        raise DrandError(f"not a G2 point: {e}") from None
    return _in_subgroup(point, "G2")


def _in_subgroup(point: Point, group: str) -> Point:
    """``point`` unless it is infinity or outside the prime-order subgroup (what EIP-2537's pairing refuses)."""
    if is_inf(point) or not is_inf(multiply(point, curve_order)):
        raise DrandError(f"not a point of the {group} subgroup")
    return point


def g1_for_contract(signature: bytes) -> bytes:
    """A compressed G1 signature in EIP-2537's 128-byte encoding, what ``DrandBeacon.submitRound`` takes."""
    x, y = normalize(_g1_point(signature))
    return _fp(int(x)) + _fp(int(y))


def g2_for_contract(public_key: bytes) -> bytes:
    """A compressed G2 public key in EIP-2537's 256-byte encoding (x.c0, x.c1, y.c0, y.c1)."""
    x, y = normalize(_g2_point(public_key))
    return b"".join(_fp(int(c)) for c in (*x.coeffs, *y.coeffs))


def g2_from_contract(public_key: bytes) -> bytes:
    """An EIP-2537 256-byte G2 public key (as ``DrandBeacon.publicKey`` returns it), compressed as drand
    publishes it."""
    if len(public_key) != 256:
        raise DrandError(f"an EIP-2537 G2 point is 256 bytes, not {len(public_key)}")
    c = [int.from_bytes(public_key[i : i + 64], "big") for i in range(0, 256, 64)]
    z1, z2 = compress_G2((FQ2(c[0:2]), FQ2(c[2:4]), FQ2.one()))
    return z1.to_bytes(48, "big") + z2.to_bytes(48, "big")


def verify(public_key: bytes, round_: int, signature: bytes) -> None:
    """Raise :class:`DrandError` unless ``signature`` is round ``round_``'s under ``public_key``."""
    # py_ecc annotates hash_function as a hash object (HASH) but calls it: it wants the constructor.
    hashed = hash_to_G1(message(round_), DST, hashlib.sha256)  # type: ignore[arg-type]
    if pairing(G2, _g1_point(signature)) != pairing(_g2_point(public_key), hashed):
        raise DrandError(f"not the signature of round {round_} under this key")


def public_key_of(secret: int) -> bytes:
    """The compressed G2 public key of a secret scalar (the devnet beacon's)."""
    z1, z2 = compress_G2(multiply(G2, secret))
    return z1.to_bytes(48, "big") + z2.to_bytes(48, "big")


def sign(secret: int, round_: int) -> bytes:
    """Round ``round_``'s compressed G1 signature under a secret scalar (the devnet beacon's)."""
    # py_ecc annotates hash_function as a hash object (HASH) but calls it: it wants the constructor.
    hashed = hash_to_G1(message(round_), DST, hashlib.sha256)  # type: ignore[arg-type]
    return compress_G1(multiply(hashed, secret)).to_bytes(48, "big")
