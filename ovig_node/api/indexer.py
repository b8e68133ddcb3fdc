"""The background indexer: every second, the EventScanner reads new blocks and the projection folds
their events into the read model, with each event block's timestamp.

Lifecycle: ``start`` spawns the thread (connecting happens inside it, so an RPC that is down at start
is retried like any later outage), ``stop`` ends it. The scanner's SQLite connection belongs to the
thread that opened it, so the scanner is created and used only inside this thread.

Consistency: the read model records how many events it folded. If the event index holds a different
number than that plus what a poll returned, the scanner dropped events (a reorg it undid) or the read
model is new or reset: every table is re-folded from the index, in one transaction.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import requests
from hexbytes import HexBytes
from web3 import Web3
from web3.exceptions import Web3Exception

from ovig_node.api.projection import Projection
from ovig_node.api.settings import ApiSettings
from ovig_node.api.store import FOLDED, Store
from ovig_node.chain.contracts import Protocol
from ovig_node.chain.rpc import connect
from ovig_node.chain.scanner import Event, EventScanner
from ovig_node.errors import OvigError
from ovig_node.protocol.attestation import Domain

log = logging.getLogger(__name__)
# What a poll may fail with and be retried on the next tick: the RPC, the node's answers, the disk.
TRANSIENT = (OvigError, requests.RequestException, OSError, Web3Exception, sqlite3.OperationalError)


@dataclass(frozen=True)
class IndexerStatus:
    chain_id: int | None = None
    head: int | None = None  # the chain's latest block at the last poll
    head_time: int | None = None  # its timestamp: windows are judged against chain time
    indexed: int | None = None  # the last block the event index has read
    events: int = 0  # events folded into the read model
    polled_at: float | None = None  # time.time() of the last successful poll
    error: str | None = None  # why the last poll failed (None: it did not)

    @property
    def lag(self) -> int | None:
        """Blocks the index is behind the chain head."""
        return None if self.head is None or self.indexed is None else max(0, self.head - self.indexed)


class Indexer:
    def __init__(self, settings: ApiSettings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.index_path = settings.home / "events.sqlite"
        self._status = IndexerStatus()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._progress = threading.Condition()
        self._thread: threading.Thread | None = None

    @property
    def status(self) -> IndexerStatus:
        with self._lock:
            return self._status

    def start(self) -> None:
        """Start the thread (once; later calls do nothing)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ovig-api-indexer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def wait_for_block(self, block: int, *, timeout: float) -> bool:
        """Wait until every block up to ``block`` is indexed; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._progress:
            while (self.status.indexed or -1) < block:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._progress.wait(left)
        return True

    # --- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        session: _Session | None = None
        try:
            while not self._stop.is_set():
                try:
                    session = session or _Session.open(self.settings, self.store, self.index_path)
                    self._set(session.poll(), error=None)
                except TRANSIENT as exc:
                    error = f"{type(exc).__name__}: {exc}".splitlines()[0]
                    if error != self.status.error:  # an outage is one line in the log, not one a second
                        log.warning("indexer: %s", error)
                    self._set(None, error=error)
                except Exception as exc:
                    # A bug: the server keeps answering from what is indexed, and /health shows the error.
                    log.exception("indexer failed")
                    self._set(None, error=f"{type(exc).__name__}: {exc}".splitlines()[0])
                self._stop.wait(self.settings.poll_seconds)
        finally:
            if session is not None:
                session.close()

    def _set(self, status: IndexerStatus | None, *, error: str | None) -> None:
        with self._lock:
            self._status = replace(status or self._status, error=error)
        with self._progress:
            self._progress.notify_all()


@dataclass
class _Session:
    """One connection to the chain and the databases, owned by the indexer thread."""

    w3: Web3
    chain_id: int
    scanner: EventScanner
    index: sqlite3.Connection  # read-only view of the scanner's table, to count its events
    db: sqlite3.Connection  # the read model's writer
    projection: Projection

    @classmethod
    def open(cls, settings: ApiSettings, store: Store, index_path: Path) -> _Session:
        w3 = connect(settings.rpc_url)
        protocol = Protocol.at(w3, settings.contracts)
        scanner = EventScanner(
            w3, protocol.contracts, index_path, start_block=settings.start_block, confirmations=settings.confirmations
        )
        index = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
        db = store.writer()
        penalty = int(protocol.committee.functions.PENALTY().call())
        chain_id = int(w3.eth.chain_id)
        projection = Projection(db, penalty=penalty, domain=Domain(chain_id, protocol.tasks.address))
        return cls(w3, chain_id, scanner, index, db, projection)

    def poll(self) -> IndexerStatus:
        new = self.scanner.poll()
        (indexed_events,) = self.index.execute("SELECT COUNT(*) FROM events").fetchone()
        folded = int(self.db.execute("SELECT value FROM meta WHERE key = 'events'").fetchone()[0])
        if folded + len(new) != indexed_events:
            self._fold(self.scanner.events(), total=indexed_events, refold=True)
        elif new:
            self._fold(new, total=indexed_events, refold=False)
        head = self.w3.eth.get_block("latest")
        return IndexerStatus(
            chain_id=self.chain_id,
            head=int(head["number"]),
            head_time=int(head["timestamp"]),
            indexed=self.scanner.cursor,
            events=indexed_events,
            polled_at=time.time(),
        )

    def _fold(self, events: list[Event], *, total: int, refold: bool) -> None:
        times = self._block_times(events)  # RPC calls first: the write transaction stays short
        with self.db:
            if refold:
                for table in FOLDED:
                    self.db.execute(f"DELETE FROM {table}")
            self.db.executemany("INSERT OR IGNORE INTO blocks VALUES (?, ?, ?)", times)
            for event in events:
                self.projection.apply(event)
            self.db.execute("UPDATE meta SET value = ? WHERE key = 'events'", (str(total),))

    def _block_times(self, events: Iterable[Event]) -> list[tuple[str, int, int]]:
        """(hash, number, timestamp) of the events' blocks not stored yet."""
        wanted = {e.block_hash: e.block_number for e in events}
        known = {
            row[0]
            for chunk in _chunks(list(wanted), 500)
            for row in self.db.execute(
                f"SELECT hash FROM blocks WHERE hash IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
        }
        times = []
        for block_hash, number in wanted.items():
            if block_hash not in known:
                block = self.w3.eth.get_block(HexBytes(block_hash))
                times.append((block_hash, number, int(block["timestamp"])))
        return times

    def close(self) -> None:
        self.scanner.close()
        self.index.close()
        self.db.close()


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
