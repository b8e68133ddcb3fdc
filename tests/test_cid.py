"""CIDs and the UnixFS importer against values Kubo gives for the same bytes and options."""

from __future__ import annotations

import hashlib
import io

import pytest

from ovig_node.storage.cid import DAG_PB, RAW, Cid, b58decode, b58encode, decode_varint, encode_varint
from ovig_node.storage.errors import InvalidCid
from ovig_node.storage.unixfs import (
    TYPE_FILE,
    FileImporter,
    cid_of_bytes,
    cid_of_stream,
    decode_pbnode,
    decode_unixfs,
)
from support import pattern

HELLO = b"hello world\n"


# (bytes, cid_version, expected CID). Sources: "hello world\n" v0 is Kubo's documented CID; the empty
# file is Kubo's well-known empty-file CID (v0) and sha256("") as a raw block (v1); the multi-chunk
# values were computed independently by ipfs-only-hash (go-ipfs-compatible importer, npm) and by
# Helia with Kubo's options, which agreed.
VECTORS = [
    (HELLO, 0, "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"),
    (HELLO, 1, "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4"),
    (b"", 0, "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH"),
    (b"", 1, "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"),
    (pattern(300_000), 0, "QmWU4cq12z1Fq8kiWASSMzcpsxbQpY74z1X2koCz2TUnaU"),
    (pattern(300_000), 1, "bafybeih7gz5kvvg2zafb7vue6izhy6c4tglvwpi3rgunwdag2fidn2y6eq"),
    (pattern(3 * 1024 * 1024), 0, "QmbEanQifXGk5Y2i9swd25nRbdLPXoXgwE7riTuQtoVFzA"),
    (pattern(3 * 1024 * 1024), 1, "bafybeidci4gr2nydwtknrbh5u4piscvvpwbwzy6cog5ihoupkl4bsbbcni"),
]


@pytest.mark.parametrize(("data", "version", "expected"), VECTORS, ids=lambda v: str(v)[:24])
def test_importer_gives_kubo_cid(data: bytes, version: int, expected: str) -> None:
    assert str(cid_of_bytes(data, cid_version=version)) == expected


def test_importer_streaming_equals_one_shot_for_odd_write_sizes() -> None:
    data = pattern(700_001)
    importer = FileImporter()
    for start in range(0, len(data), 99_991):
        importer.update(data[start : start + 99_991])
    assert importer.finish() == cid_of_bytes(data) == cid_of_stream(io.BytesIO(data))


def test_importer_builds_a_second_tree_level_past_174_leaves() -> None:
    # 175 chunks of 16 bytes: a root over a full node of 174 leaves and a node of 1 leaf.
    blocks: dict[Cid, bytes] = {}
    importer = FileImporter(chunk_size=16, on_block=lambda cid, block: blocks.setdefault(cid, block))
    importer.update(pattern(16 * 175))
    root = decode_pbnode(blocks[importer.finish()])
    sizes = [decode_unixfs(decode_pbnode(blocks[link.cid]).data or b"").blocksizes for link in root.links]
    assert [len(s) for s in sizes] == [174, 1]
    assert decode_unixfs(root.data or b"").blocksizes == (174 * 16, 16)


def test_single_chunk_v0_is_one_file_leaf() -> None:
    blocks: list[bytes] = []
    cid = FileImporter(on_block=lambda _cid, block: blocks.append(block))
    cid.update(HELLO)
    root = cid.finish()
    assert len(blocks) == 1 and len(blocks[0]) == 20  # Kubo reports Size "20" for this file
    node = decode_pbnode(blocks[0])
    assert node.links == ()
    assert decode_unixfs(node.data or b"").type == TYPE_FILE
    assert root.digest == hashlib.sha256(blocks[0]).digest()


@pytest.mark.parametrize(
    "text",
    [
        "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o",
        "bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4",
        "bafybeidci4gr2nydwtknrbh5u4piscvvpwbwzy6cog5ihoupkl4bsbbcni",
    ],
)
def test_cid_round_trips_through_text_and_bytes(text: str) -> None:
    cid = Cid.parse(text)
    assert str(cid) == text
    assert Cid.from_binary(cid.to_bytes()) == cid
    assert Cid.parse(f"/ipfs/{text}") == cid


def test_cid_fields() -> None:
    v0 = Cid.parse("QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o")
    v1 = Cid.parse("bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4")
    assert (v0.version, v0.codec) == (0, DAG_PB)
    assert (v1.version, v1.codec) == (1, RAW)
    assert v1.digest == hashlib.sha256(HELLO).digest()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("hello", "not CIDv0"),
        ("QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5O", "'O' is not base58"),
        ("bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2deve", "multihash length does not match"),
        # dag-cbor: a valid CID, but not a codec our files use
        (
            "bafyrgqhai26anf3i7pips7q22coa4sz2fr4gk4q4sqdtymvvjyginfzaqewveaeqdh524nsktaq43j65v22xxrybrtertmcfxufdam3da3hbk",
            "unsupported codec 0x71",
        ),
    ],
)
def test_invalid_cids_raise_invalid_cid(text: str, reason: str) -> None:
    with pytest.raises(InvalidCid) as info:
        Cid.parse(text)
    assert str(info.value) == f"invalid CID {text!r}: " + info.value.reason
    assert reason in info.value.reason


def test_base58_and_varint_round_trip() -> None:
    for data in (b"", b"\0\0\x01", bytes(range(40))):
        assert b58decode(b58encode(data)) == data
    for value in (0, 1, 127, 128, 300, 2**63 - 1):
        assert decode_varint(encode_varint(value)) == (value, len(encode_varint(value)))
