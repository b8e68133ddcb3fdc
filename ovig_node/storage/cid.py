"""Content identifiers (CIDv0 and CIDv1) with SHA2-256 multihashes: parse, print, verify.

Only what IPFS content of this project uses: codecs ``dag-pb`` and ``raw``, hash ``sha2-256`` (and
``identity``, which Kubo uses for tiny inlined blocks). A CID is verified by hashing the block bytes
it names, which is what lets a client trust bytes from any node.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from ovig_node.storage.errors import InvalidCid

DAG_PB = 0x70
RAW = 0x55
SHA2_256 = 0x12
IDENTITY = 0x00

_CODECS = {DAG_PB: "dag-pb", RAW: "raw"}
_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(_B58_ALPHABET)}


def b58encode(data: bytes) -> str:
    """Bitcoin-alphabet base58, the encoding of CIDv0 and of libp2p peer ids."""
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, rem = divmod(number, 58)
        out = _B58_ALPHABET[rem] + out
    leading_zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * leading_zeros + out


def b58decode(text: str) -> bytes:
    number = 0
    for char in text:
        if char not in _B58_INDEX:
            raise ValueError(f"character {char!r} is not base58")
        number = number * 58 + _B58_INDEX[char]
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    leading_ones = len(text) - len(text.lstrip("1"))
    return b"\0" * leading_ones + body


def encode_varint(value: int) -> bytes:
    """Unsigned LEB128, as used by multiformats and protobuf."""
    if value < 0:
        raise ValueError("varint of a negative number")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    """Decode a varint at ``pos``; return (value, position after it)."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 64 bits")


@dataclass(frozen=True)
class Cid:
    """A parsed CID. ``str(cid)`` prints CIDv0 in base58btc and CIDv1 in base32 (Kubo's defaults)."""

    version: int  # 0 or 1
    codec: int  # DAG_PB or RAW
    hash_code: int  # SHA2_256 or IDENTITY
    digest: bytes  # the multihash digest: sha256(block) or, for identity, the block itself

    @classmethod
    def parse(cls, text: str) -> Cid:
        """Parse ``Qm...``/``bafy...``, also behind ``/ipfs/``; raise InvalidCid with the reason."""
        raw = text.strip()
        raw = raw.removeprefix("/ipfs/")
        if not raw:
            raise InvalidCid(text, "empty")
        try:
            if len(raw) == 46 and raw.startswith("Qm"):
                return cls._from_multihash(0, DAG_PB, b58decode(raw), text)
            if raw[0] == "b":
                padded = raw[1:].upper() + "=" * (-len(raw[1:]) % 8)
                return cls.from_bytes(base64.b32decode(padded), text)
            if raw[0] == "z":
                return cls.from_bytes(b58decode(raw[1:]), text)
        except InvalidCid:
            raise
        except ValueError as exc:  # binascii.Error is a ValueError
            raise InvalidCid(text, str(exc)) from None
        raise InvalidCid(text, "not CIDv0 (Qm...) nor a base32/base58btc CIDv1")

    @classmethod
    def from_binary(cls, data: bytes) -> Cid:
        """A CID as dag-pb links store it: a bare sha2-256 multihash (v0) or binary CIDv1."""
        if data[:2] == bytes([SHA2_256, 32]) and len(data) == 34:
            return cls._from_multihash(0, DAG_PB, data, data.hex())
        return cls.from_bytes(data)

    @classmethod
    def from_bytes(cls, data: bytes, text: str = "") -> Cid:
        """Binary CIDv1: ``<varint 1><varint codec><multihash>``."""
        label = text or data.hex()
        version, pos = decode_varint(data)
        if version != 1:
            raise InvalidCid(label, f"unsupported CID version {version}")
        codec, pos = decode_varint(data, pos)
        if codec not in _CODECS:
            raise InvalidCid(label, f"unsupported codec 0x{codec:x}")
        return cls._from_multihash(1, codec, data[pos:], label)

    @classmethod
    def _from_multihash(cls, version: int, codec: int, multihash: bytes, label: str) -> Cid:
        code, pos = decode_varint(multihash)
        size, pos = decode_varint(multihash, pos)
        digest = multihash[pos:]
        if code not in (SHA2_256, IDENTITY):
            raise InvalidCid(label, f"unsupported hash function 0x{code:x} (only sha2-256)")
        if len(digest) != size or (code == SHA2_256 and size != 32):
            raise InvalidCid(label, "multihash length does not match its digest")
        return cls(version=version, codec=codec, hash_code=code, digest=digest)

    @classmethod
    def of_block(cls, block: bytes, *, version: int, codec: int) -> Cid:
        """The sha2-256 CID of ``block``."""
        if version == 0 and codec != DAG_PB:
            raise ValueError("CIDv0 is always dag-pb")
        return cls(version=version, codec=codec, hash_code=SHA2_256, digest=hashlib.sha256(block).digest())

    @property
    def multihash(self) -> bytes:
        return encode_varint(self.hash_code) + encode_varint(len(self.digest)) + self.digest

    @property
    def codec_name(self) -> str:
        return _CODECS[self.codec]

    def to_bytes(self) -> bytes:
        if self.version == 0:
            return self.multihash
        return encode_varint(1) + encode_varint(self.codec) + self.multihash

    def block_digest(self, block: bytes) -> bytes:
        """What the multihash of ``block`` would hold; equals ``digest`` exactly when it matches."""
        return block if self.hash_code == IDENTITY else hashlib.sha256(block).digest()

    def __str__(self) -> str:
        if self.version == 0:
            return b58encode(self.multihash)
        return "b" + base64.b32encode(self.to_bytes()).decode().lower().rstrip("=")
