"""The API's read model: SQLite tables folded from the event index, shaped for the queries it serves.

The tables are a cache of the events and nothing else: the indexer may drop them and fold every event
again (a schema change, a reorg the scanner undid), so a row is never wrong for long and never needs a
migration. One connection writes (the indexer thread); requests read through pooled read-only
connections, each request in one snapshot (WAL: the last committed poll, while the next is written).

Wei amounts are decimal TEXT: they overflow SQLite's 64-bit integers from about 9.2 ETH.
"""

from __future__ import annotations

import queue
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCHEMA_VERSION = "10"

TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    task INTEGER PRIMARY KEY, owner TEXT NOT NULL, provider TEXT, status TEXT NOT NULL, spec_cid TEXT NOT NULL,
    terms TEXT NOT NULL, reward TEXT NOT NULL, provider_bond TEXT NOT NULL, total_steps INTEGER NOT NULL,
    stride INTEGER NOT NULL, intervals_per_batch INTEGER NOT NULL, intervals INTEGER NOT NULL,
    batch_count INTEGER NOT NULL, committed_batches INTEGER NOT NULL DEFAULT 0,
    opened_batches INTEGER NOT NULL DEFAULT 0, challenge_end INTEGER NOT NULL DEFAULT 0,
    pending_commits INTEGER NOT NULL DEFAULT 0, open_disputes INTEGER NOT NULL DEFAULT 0,
    posted_block INTEGER NOT NULL, posted_hash TEXT NOT NULL, updated_block INTEGER NOT NULL,
    slashed_batch INTEGER, slashed_by TEXT, slashed_dispute INTEGER,
    lead TEXT, lead_paid INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, task);
CREATE INDEX IF NOT EXISTS tasks_by_provider ON tasks (provider, task);
CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status, task);
CREATE TABLE IF NOT EXISTS batches (
    task INTEGER NOT NULL, j INTEGER NOT NULL, status TEXT NOT NULL, root TEXT NOT NULL,
    manifest_cid TEXT NOT NULL, committed_block INTEGER NOT NULL, seed TEXT, sampled TEXT,
    opening_window_end INTEGER, opening_cid TEXT, challenge_window_end INTEGER,
    PRIMARY KEY (task, j)
);
CREATE TABLE IF NOT EXISTS openings (
    task INTEGER NOT NULL, k INTEGER NOT NULL, start_digest TEXT NOT NULL, end_digest TEXT NOT NULL,
    block INTEGER NOT NULL, extended_until INTEGER, lead_seq INTEGER, PRIMARY KEY (task, k)
);
CREATE TABLE IF NOT EXISTS challenges (
    commitment TEXT NOT NULL, task INTEGER NOT NULL, challenger TEXT NOT NULL, reveal_by INTEGER NOT NULL,
    status TEXT NOT NULL, k INTEGER, reason TEXT, report_cid TEXT, dispute INTEGER, block INTEGER NOT NULL,
    seq INTEGER NOT NULL, PRIMARY KEY (challenger, commitment)
);
CREATE INDEX IF NOT EXISTS challenges_by_task ON challenges (task);
CREATE INDEX IF NOT EXISTS challenges_by_seq ON challenges (seq);
CREATE TABLE IF NOT EXISTS disputes (
    dispute INTEGER PRIMARY KEY, task INTEGER NOT NULL, k INTEGER NOT NULL, reason TEXT NOT NULL,
    status TEXT NOT NULL, verdict TEXT NOT NULL, round INTEGER NOT NULL, challenger TEXT, report_cid TEXT,
    commitment TEXT, opened_block INTEGER NOT NULL, joined INTEGER NOT NULL DEFAULT 0, outcome TEXT,
    appeal_until INTEGER
);
CREATE INDEX IF NOT EXISTS disputes_by_task ON disputes (task, k);
CREATE TABLE IF NOT EXISTS rounds (
    dispute INTEGER NOT NULL, round INTEGER NOT NULL, panel TEXT NOT NULL, commit_end INTEGER NOT NULL,
    reveal_end INTEGER NOT NULL, block INTEGER NOT NULL, PRIMARY KEY (dispute, round, block)
);
CREATE TABLE IF NOT EXISTS appeals (
    dispute INTEGER NOT NULL, round INTEGER NOT NULL, appellant TEXT NOT NULL, wanted TEXT NOT NULL,
    bond TEXT NOT NULL, block INTEGER NOT NULL, refunded TEXT, PRIMARY KEY (dispute, round)
);
CREATE TABLE IF NOT EXISTS votes (
    dispute INTEGER NOT NULL, round INTEGER NOT NULL, panelist TEXT NOT NULL, committed_block INTEGER NOT NULL,
    vote INTEGER, revealed_block INTEGER, PRIMARY KEY (dispute, round, panelist)
);
CREATE TABLE IF NOT EXISTS payouts (
    block_hash TEXT NOT NULL, log_index INTEGER NOT NULL, block INTEGER NOT NULL, tx TEXT NOT NULL,
    contract TEXT NOT NULL, account TEXT NOT NULL, task INTEGER, dispute INTEGER, amount TEXT NOT NULL,
    PRIMARY KEY (block_hash, log_index)
);
CREATE INDEX IF NOT EXISTS payouts_by_account ON payouts (account, block, log_index);
CREATE INDEX IF NOT EXISTS payouts_by_task ON payouts (task, block, log_index);
CREATE TABLE IF NOT EXISTS balances (
    contract TEXT NOT NULL, account TEXT NOT NULL, credited TEXT NOT NULL, withdrawn TEXT NOT NULL,
    PRIMARY KEY (contract, account)
);
CREATE TABLE IF NOT EXISTS auditors (
    address TEXT PRIMARY KEY, stake TEXT NOT NULL, locked TEXT NOT NULL, registered_block INTEGER NOT NULL,
    exit_at INTEGER, exited INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS timeline (
    block_hash TEXT NOT NULL, log_index INTEGER NOT NULL, task INTEGER NOT NULL, block INTEGER NOT NULL,
    tx TEXT NOT NULL, contract TEXT NOT NULL, name TEXT NOT NULL, args TEXT NOT NULL,
    PRIMARY KEY (block_hash, log_index)
);
CREATE INDEX IF NOT EXISTS timeline_by_task ON timeline (task, block, log_index);
CREATE TABLE IF NOT EXISTS attestations (
    task INTEGER NOT NULL, k INTEGER NOT NULL, watcher TEXT NOT NULL, verdict INTEGER NOT NULL, profile TEXT NOT NULL,
    report_cid TEXT NOT NULL, attestation_cid TEXT NOT NULL, block INTEGER NOT NULL, block_hash TEXT NOT NULL,
    log_index INTEGER NOT NULL, tx TEXT NOT NULL, PRIMARY KEY (task, k, watcher)
);
CREATE TABLE IF NOT EXISTS blocks (hash TEXT PRIMARY KEY, number INTEGER NOT NULL, timestamp INTEGER NOT NULL);
"""
# Everything the projection writes; `blocks` survives a re-fold (a block hash's timestamp never changes).
FOLDED = (
    "tasks",
    "batches",
    "openings",
    "challenges",
    "disputes",
    "rounds",
    "appeals",
    "votes",
    "payouts",
    "balances",
    "auditors",
    "timeline",
    "attestations",
)


class Store:
    """The read model in ``path``; creating it makes the file and tables (dropping an older schema)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        db = self.writer()
        try:
            db.executescript(TABLES)
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != SCHEMA_VERSION:
                # An older layout: drop it; the indexer sees zero events folded and re-folds them all.
                for table in (*FOLDED, "meta"):
                    db.execute(f"DROP TABLE IF EXISTS {table}")
                db.executescript(TABLES)
                db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                db.execute("INSERT INTO meta VALUES ('events', '0')")
            db.commit()
        finally:
            db.close()

    def writer(self) -> sqlite3.Connection:
        """A new read-write connection (the indexer keeps one, in its own thread)."""
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # a crash loses at most the last poll: it is re-read
        return db

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection holding one consistent snapshot for the ``with`` block."""
        try:
            db = self._idle.get_nowait()
        except queue.Empty:
            db = sqlite3.connect(
                f"file:{self.path}?mode=ro", uri=True, timeout=30, check_same_thread=False, isolation_level=None
            )
            db.row_factory = sqlite3.Row
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("ROLLBACK")
            self._idle.put(db)
