"""A reorg-safe event scanner that keeps the contracts' decoded events in SQLite.

- Only blocks at least ``confirmations`` deep are read, so shallow reorgs never reach the store.
- The cursor (last block scanned, with its hash) is persisted; a restarted scanner goes back
  ``rescan`` blocks and reads them again.
- Events are keyed by (block hash, log index): reading a block twice stores its events once.
- Before each poll the scanner checks that the blocks it stored are still on the chain; where one is
  not (a reorg deeper than the confirmations), events from that height on are dropped and re-read.
- A log query the endpoint refuses or times out on (a cap on results or on the range, a proxy's 504: anyone
  can emit thousands of events cheaply) is asked again for half the range, down to one block, and the range
  that answered is kept for the next queries (reviews 25 and 26 of v3: a fixed range refused for good stopped
  every node on it). Events a node never reads are not asked for (``skip``); a single block the endpoint
  still refuses is read from its receipts, so spam can never hold the scanner at a block, and no event is ever
  left out.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_utils import event_abi_to_log_topic
from hexbytes import HexBytes
from web3 import Web3
from web3._utils.events import get_event_data
from web3.exceptions import Web3RPCError
from web3.types import LogReceipt

from ovig_node.chain.client import ChainClient
from ovig_node.chain.errors import ChainError, RpcUnavailable

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    block_number INTEGER NOT NULL,
    block_hash TEXT NOT NULL,
    log_index INTEGER NOT NULL,
    tx_hash TEXT NOT NULL,
    contract TEXT NOT NULL,
    name TEXT NOT NULL,
    args TEXT NOT NULL,
    PRIMARY KEY (block_hash, log_index)
);
CREATE INDEX IF NOT EXISTS events_by_name ON events (name, block_number, log_index);
CREATE TABLE IF NOT EXISTS blocks (number INTEGER PRIMARY KEY, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cursor (id INTEGER PRIMARY KEY CHECK (id = 1), block INTEGER NOT NULL);
"""
# Hashes of blocks scanned in this many recent blocks are kept to detect reorgs deeper than the
# confirmation depth; a reorg deeper still is beyond what any L1 finalizes.
REMEMBERED_BLOCKS = 256


@dataclass(frozen=True)
class Event:
    """One decoded event; ``args`` holds plain JSON values (bytes as 0x-hex, structs as dicts)."""

    block_number: int
    log_index: int
    block_hash: str
    tx_hash: str
    contract: str
    name: str
    args: dict[str, Any]


class EventScanner:
    """Scans ``contracts`` (name -> web3 contract) from ``start_block`` into the SQLite file ``db``."""

    def __init__(
        self,
        client: ChainClient | Web3,
        contracts: dict[str, Any],
        db: Path,
        *,
        start_block: int = 0,
        confirmations: int = 2,
        rescan: int = 12,
        chunk: int = 2_000,
        skip: frozenset[str] = frozenset(),
    ) -> None:
        self._w3 = client.w3 if isinstance(client, ChainClient) else client
        self._retry = client.retry if isinstance(client, ChainClient) else (lambda action: action())
        self.confirmations = confirmations
        self.chunk = chunk
        self._span = chunk  # blocks a query asks for now: halved while refused, doubled back once answered
        self._by_address = {Web3.to_checksum_address(c.address): name for name, c in contracts.items()}
        # By (address, topic): two contracts may declare the same event signature (both emit Credited).
        self._abis: dict[tuple[str, bytes], tuple[str, dict[str, Any]]] = {}
        for name, contract in contracts.items():
            for entry in contract.abi:
                if entry.get("type") == "event" and entry["name"] not in skip:
                    topic = bytes(event_abi_to_log_topic(entry))
                    self._abis[(Web3.to_checksum_address(contract.address), topic)] = (name, entry)
        self._topics = sorted({"0x" + topic.hex() for _, topic in self._abis})  # the events asked for
        db.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(db, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)
        stored = self._db.execute("SELECT block FROM cursor WHERE id = 1").fetchone()
        if stored is None:
            self._set_cursor(start_block - 1)
        else:
            # A restart reads the last blocks again: what was stored stays stored once (and is not
            # returned again), whatever was missed is added.
            self._set_cursor(max(start_block - 1, stored[0] - rescan))

    @property
    def cursor(self) -> int:
        """The last block scanned (start_block - 1 before the first poll)."""
        return int(self._db.execute("SELECT block FROM cursor WHERE id = 1").fetchone()[0])

    def poll(self) -> list[Event]:
        """Read every confirmed block past the cursor; return the events stored by this poll, in order."""
        self._undo_reorged_blocks()
        head = self._retry(lambda: self._w3.eth.block_number)
        target = head - self.confirmations
        new: list[Event] = []
        while self.cursor < target:
            first = self.cursor + 1
            last, logs = self._logs_from(first, min(target, first + self.chunk - 1))
            hashes = {n: self._block_hash(n) for n in {first, last, *(log["blockNumber"] for log in logs)}}
            events = [event for log in logs if (event := self._decode(log)) is not None]
            with self._db:  # one transaction: events, remembered blocks and cursor move together
                self._db.execute("BEGIN")
                for event in events:
                    if self._store(event):
                        new.append(event)
                self._db.executemany("INSERT OR REPLACE INTO blocks VALUES (?, ?)", hashes.items())
                self._db.execute("DELETE FROM blocks WHERE number < ?", (last - REMEMBERED_BLOCKS,))
                self._set_cursor(last)
        return new

    def events(self, name: str | None = None, **match: Any) -> list[Event]:
        """Stored events, in chain order; optionally of one name whose args equal ``match``."""
        # block_number, log_index, block_hash, tx_hash, contract, name, args (JSON)
        rows: Iterable[tuple[int, int, str, str, str, str, str]] = (
            self._db.execute(
                "SELECT block_number, log_index, block_hash, tx_hash, contract, name, args FROM events"
                " WHERE name = ? ORDER BY block_number, log_index",
                (name,),
            )
            if name
            else self._db.execute(
                "SELECT block_number, log_index, block_hash, tx_hash, contract, name, args FROM events"
                " ORDER BY block_number, log_index"
            )
        )
        found = (Event(*row[:6], args=json.loads(row[6])) for row in rows)
        return [e for e in found if all(e.args.get(k) == _plain(v) for k, v in match.items())]

    def close(self) -> None:
        self._db.close()

    # --- internal ------------------------------------------------------------------------------

    def _logs_from(self, first: int, last: int) -> tuple[int, list[LogReceipt]]:
        """(last block read, the logs of ``first``..that block): a range the endpoint refuses or times out on is
        halved at once (asked once, not retried: a 30 s timeout retried at each of eleven halvings held a node for
        20 minutes, review 27 of v3), while the endpoint answers at all (else an outage, RpcUnavailable)."""
        last = min(last, first + self._span - 1)
        while last > first:
            try:
                logs = self._logs(first, last)
                self._span = min(self.chunk, 2 * (last - first + 1))
                return last, logs
            except (Web3RPCError, ValueError, ChainError) as exc:  # a cap, a timeout, a 504
                self._answering(exc)
            last = first + (last - first) // 2
            self._span = last - first + 1
        return last, self._one_block(first)

    def _one_block(self, block: int) -> list[LogReceipt]:
        """The logs of ``block``; if the endpoint refuses the query (thousands of logs in the block: spam), taken
        from the block's receipts, which no result cap limits. Nothing is ever left out: a block whose receipts it
        refuses too is an error of the pass, the cursor left before it (review 28 of v3: a kind of event left out on
        a refusal, whatever its cause, moved the cursor past a node's own panel draw)."""
        try:
            return self._retry(functools.partial(self._logs, block, block))
        except (Web3RPCError, ValueError, ChainError) as exc:
            self._answering(exc)
            refused = exc
        try:
            receipts = self._retry(lambda: self._w3.eth.get_block_receipts(block))
        except (Web3RPCError, ValueError) as exc:
            why = f"the RPC endpoint refuses the logs of block {block} ({refused}) and its receipts ({exc})"
            raise ChainError(why) from None
        return [log for receipt in receipts for log in receipt["logs"]]  # others' and skipped ones: _decode drops them

    def _answering(self, failed: Exception) -> None:
        """After a query timed out on (RpcUnavailable): whether the endpoint answers at all, else that outage raised."""
        if isinstance(failed, RpcUnavailable):
            self._retry(lambda: self._w3.eth.block_number)

    def _logs(self, first: int, last: int) -> list[LogReceipt]:
        where = {"fromBlock": first, "toBlock": last, "address": list(self._by_address), "topics": [self._topics]}
        return self._w3.eth.get_logs(where)  # type: ignore[arg-type]

    def _decode(self, log: Any) -> Event | None:
        if not log["topics"]:
            return None
        known = self._abis.get((Web3.to_checksum_address(log["address"]), bytes(log["topics"][0])))
        if known is None:
            return None
        contract, abi = known
        data = get_event_data(self._w3.codec, abi, log)
        return Event(
            block_number=log["blockNumber"],
            log_index=log["logIndex"],
            block_hash=HexBytes(log["blockHash"]).to_0x_hex(),
            tx_hash=HexBytes(log["transactionHash"]).to_0x_hex(),
            contract=contract,
            name=data["event"],
            args={k: _plain(v) for k, v in data["args"].items()},
        )

    def _store(self, event: Event) -> bool:
        """Insert ``event`` unless it is stored already; True if it was new."""
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                event.block_number,
                event.block_hash,
                event.log_index,
                event.tx_hash,
                event.contract,
                event.name,
                json.dumps(event.args, sort_keys=True),
            ),
        )
        return cursor.rowcount == 1

    def _block_hash(self, number: int) -> str:
        block = self._retry(lambda: self._w3.eth.get_block(number))
        return HexBytes(block["hash"]).to_0x_hex()

    def _undo_reorged_blocks(self) -> None:
        """Rewinds below the highest remembered block still on the chain, if the newest one is not.

        Hashes chain each block to its parent, so if the newest remembered block is still there, so is
        everything below it: one RPC call per poll when nothing happened.
        """
        remembered = self._db.execute("SELECT number, hash FROM blocks ORDER BY number DESC").fetchall()
        for i, (number, stored_hash) in enumerate(remembered):
            if self._block_hash(number) == stored_hash:
                if i > 0:
                    self._rewind_to(number)
                return
        if remembered:  # the whole remembered window was replaced: read it all again
            self._rewind_to(remembered[-1][0] - 1)

    def _rewind_to(self, block: int) -> None:
        """Forgets everything read above ``block`` (those blocks left the chain) and reads it again."""
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM events WHERE block_number > ?", (block,))
            self._db.execute("DELETE FROM blocks WHERE number > ?", (block,))
            self._set_cursor(block)

    def _set_cursor(self, block: int) -> None:
        self._db.execute("INSERT OR REPLACE INTO cursor (id, block) VALUES (1, ?)", (block,))


def _plain(value: Any) -> Any:
    """JSON-ready: bytes to 0x-hex, tuples and lists to lists, mappings to dicts."""
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    if isinstance(value, dict) or hasattr(value, "items"):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
