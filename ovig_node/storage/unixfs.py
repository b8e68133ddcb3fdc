"""UnixFS files as Kubo builds them: decode nodes (to verify fetched content) and compute CIDs.

A file is a DAG: leaves hold chunks of bytes (a ``raw`` block, or a ``dag-pb`` node wrapping a
UnixFS ``File``), parents list their children with each child's byte count (``blocksizes``). Kubo's
import defaults are fixed-size 256 KiB chunks and a *balanced* tree of at most 174 children per node;
CIDv0 wraps leaves in dag-pb, CIDv1 uses raw leaves. :class:`FileImporter` reproduces exactly that,
so a node can know the CID of a file before (or without) adding it, and a test can check a node's
CIDs against an independent computation.

The protobuf wire format is written by hand: two tiny messages do not justify a generated module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

from ovig_node.storage.cid import DAG_PB, RAW, Cid, decode_varint, encode_varint

DEFAULT_CHUNK_SIZE = 262_144  # Kubo's `size-262144` chunker
MAX_CHILDREN = 174  # Kubo's balanced layout: links per node

# UnixFS Data.Type values
TYPE_RAW = 0
TYPE_DIRECTORY = 1
TYPE_FILE = 2


@dataclass(frozen=True)
class PBLink:
    """A dag-pb link: child CID, name (always empty in files) and the child's cumulative DAG size."""

    cid: Cid
    name: str = ""
    tsize: int = 0


@dataclass(frozen=True)
class PBNode:
    """A dag-pb node: its links and its opaque ``data`` (a UnixFS message for UnixFS nodes)."""

    links: tuple[PBLink, ...] = ()
    data: bytes | None = None


@dataclass(frozen=True)
class UnixFSData:
    """The UnixFS message inside a dag-pb node's data."""

    type: int
    data: bytes = b""  # bytes held by this node itself (leaves; rarely before a parent's children)
    filesize: int | None = None
    blocksizes: tuple[int, ...] = field(default=())  # bytes under each child link, in order


# --- protobuf wire format ------------------------------------------------------------------------


def _key(field_number: int, wire_type: int) -> bytes:
    return encode_varint(field_number << 3 | wire_type)


def _len_field(field_number: int, payload: bytes) -> bytes:
    return _key(field_number, 2) + encode_varint(len(payload)) + payload


def _varint_field(field_number: int, value: int) -> bytes:
    return _key(field_number, 0) + encode_varint(value)


def _fields(buf: bytes) -> Iterable[tuple[int, int | bytes]]:
    """Yield (field number, value) for varint and length-delimited fields; reject other types."""
    pos = 0
    while pos < len(buf):
        key, pos = decode_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = decode_varint(buf, pos)
            yield number, value
        elif wire_type == 2:
            size, pos = decode_varint(buf, pos)
            if pos + size > len(buf):
                raise ValueError("truncated protobuf field")
            yield number, buf[pos : pos + size]
            pos += size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")


def encode_pbnode(node: PBNode) -> bytes:
    """dag-pb canonical bytes: links (field 2) first, then data (field 1)."""
    out = bytearray()
    for link in node.links:
        body = _len_field(1, link.cid.to_bytes()) + _len_field(2, link.name.encode()) + _varint_field(3, link.tsize)
        out += _len_field(2, body)
    if node.data is not None:
        out += _len_field(1, node.data)
    return bytes(out)


def decode_pbnode(block: bytes) -> PBNode:
    links: list[PBLink] = []
    data: bytes | None = None
    for number, value in _fields(block):
        if number == 2 and isinstance(value, bytes):
            links.append(_decode_link(value))
        elif number == 1 and isinstance(value, bytes):
            data = value
        else:
            raise ValueError(f"unexpected dag-pb field {number}")
    return PBNode(links=tuple(links), data=data)


def _decode_link(buf: bytes) -> PBLink:
    cid: Cid | None = None
    name, tsize = "", 0
    for number, value in _fields(buf):
        if number == 1 and isinstance(value, bytes):
            cid = Cid.from_binary(value)
        elif number == 2 and isinstance(value, bytes):
            name = value.decode()
        elif number == 3 and isinstance(value, int):
            tsize = value
    if cid is None:
        raise ValueError("dag-pb link without a hash")
    return PBLink(cid=cid, name=name, tsize=tsize)


def encode_unixfs(msg: UnixFSData) -> bytes:
    out = _varint_field(1, msg.type)
    if msg.data:
        out += _len_field(2, msg.data)
    if msg.filesize is not None:
        out += _varint_field(3, msg.filesize)
    for size in msg.blocksizes:  # proto2 `repeated uint64`, not packed
        out += _varint_field(4, size)
    return out


def decode_unixfs(buf: bytes) -> UnixFSData:
    kind, data, filesize, sizes = None, b"", None, []
    for number, value in _fields(buf):
        if number == 1 and isinstance(value, int):
            kind = value
        elif number == 2 and isinstance(value, bytes):
            data = value
        elif number == 3 and isinstance(value, int):
            filesize = value
        elif number == 4 and isinstance(value, int):
            sizes.append(value)
        elif number == 4 and isinstance(value, bytes):  # tolerate a packed encoding
            pos = 0
            while pos < len(value):
                size, pos = decode_varint(value, pos)
                sizes.append(size)
    if kind is None:
        raise ValueError("UnixFS data without a type")
    return UnixFSData(type=kind, data=data, filesize=filesize, blocksizes=tuple(sizes))


# --- importer (CID computation) -----------------------------------------------------------------


@dataclass(frozen=True)
class _Built:
    cid: Cid
    tsize: int  # cumulative serialized DAG size (what a parent's link records)
    filesize: int  # file bytes under this node


class FileImporter:
    """Streaming CID computation with Kubo's defaults: feed bytes, then ``finish()``.

    Memory is one chunk plus at most ``MAX_CHILDREN`` links per tree level, whatever the file size.
    ``on_block(cid, block)`` (optional) sees every block built, e.g. to store them.
    """

    def __init__(
        self,
        *,
        cid_version: int = 0,
        raw_leaves: bool | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        on_block: Callable[[Cid, bytes], None] | None = None,
    ) -> None:
        if cid_version not in (0, 1):
            raise ValueError("cid_version must be 0 or 1")
        if chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        self.cid_version = cid_version
        # Kubo's rule: raw leaves by default exactly when the CID version is 1.
        self.raw_leaves = cid_version == 1 if raw_leaves is None else raw_leaves
        if self.raw_leaves and cid_version == 0:
            raise ValueError("raw leaves need CIDv1")
        self.chunk_size = chunk_size
        self._on_block = on_block
        self._pending = bytearray()
        self._levels: list[list[_Built]] = [[]]
        self._done = False

    def update(self, data: bytes) -> None:
        if self._done:
            raise RuntimeError("importer already finished")
        self._pending += data
        while len(self._pending) >= self.chunk_size:
            chunk = bytes(self._pending[: self.chunk_size])
            del self._pending[: self.chunk_size]
            self._push(0, self._leaf(chunk))

    def finish(self) -> Cid:
        """Flush the last chunk and the tree; return the root CID."""
        self._done = True
        if self._pending or (len(self._levels) == 1 and not self._levels[0]):
            self._push(0, self._leaf(bytes(self._pending)))  # an empty file is one empty leaf
            self._pending.clear()
        level = 0
        while True:
            items = self._levels[level]
            higher = any(self._levels[level + 1 :])
            if len(items) == 1 and not higher:
                return items[0].cid
            if items:
                self._levels[level] = []
                self._push(level + 1, self._parent(items))
            level += 1

    def _push(self, level: int, built: _Built) -> None:
        while len(self._levels) <= level:
            self._levels.append([])
        self._levels[level].append(built)
        if len(self._levels[level]) == MAX_CHILDREN:
            # A full node is final in the balanced layout: reduce it at once to bound memory.
            items, self._levels[level] = self._levels[level], []
            self._push(level + 1, self._parent(items))

    def _emit(self, cid: Cid, block: bytes) -> None:
        if self._on_block is not None:
            self._on_block(cid, block)

    def _leaf(self, chunk: bytes) -> _Built:
        if self.raw_leaves:
            cid = Cid.of_block(chunk, version=1, codec=RAW)
            self._emit(cid, chunk)
            return _Built(cid=cid, tsize=len(chunk), filesize=len(chunk))
        data = encode_unixfs(UnixFSData(type=TYPE_FILE, data=chunk, filesize=len(chunk)))
        block = encode_pbnode(PBNode(data=data))
        cid = Cid.of_block(block, version=self.cid_version, codec=DAG_PB)
        self._emit(cid, block)
        return _Built(cid=cid, tsize=len(block), filesize=len(chunk))

    def _parent(self, children: list[_Built]) -> _Built:
        filesize = sum(c.filesize for c in children)
        data = encode_unixfs(
            UnixFSData(type=TYPE_FILE, filesize=filesize, blocksizes=tuple(c.filesize for c in children))
        )
        block = encode_pbnode(PBNode(links=tuple(PBLink(cid=c.cid, tsize=c.tsize) for c in children), data=data))
        cid = Cid.of_block(block, version=self.cid_version, codec=DAG_PB)
        self._emit(cid, block)
        return _Built(cid=cid, tsize=len(block) + sum(c.tsize for c in children), filesize=filesize)


def cid_of_bytes(
    data: bytes, *, cid_version: int = 0, raw_leaves: bool | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> Cid:
    """The CID Kubo's ``ipfs add`` gives ``data`` with these options."""
    importer = FileImporter(cid_version=cid_version, raw_leaves=raw_leaves, chunk_size=chunk_size)
    importer.update(data)
    return importer.finish()


def cid_of_stream(
    stream: BinaryIO,
    *,
    cid_version: int = 0,
    raw_leaves: bool | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> Cid:
    """Like :func:`cid_of_bytes`, reading ``stream`` chunk by chunk."""
    importer = FileImporter(cid_version=cid_version, raw_leaves=raw_leaves, chunk_size=chunk_size)
    while block := stream.read(chunk_size):
        importer.update(block)
    return importer.finish()
