"""A crash-safe journal of the transactions a node sends, in SQLite.

Each transaction has an idempotency key that names what it does ("commitBatch:7:3"). It is signed
and written to the journal *before* it is broadcast, so after a crash the node finds it by key and
re-broadcasts the very same signed bytes (same nonce, same hash) instead of sending a second one.
Nonces come from the journal and the chain, whichever is ahead. A transaction left unmined is signed
again with higher fees under the same nonce (a fee bump); its earlier hashes are kept, since any one
of them may be the one mined.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS transactions (
    key TEXT PRIMARY KEY,
    sender TEXT NOT NULL,
    nonce INTEGER NOT NULL,
    tx_hash TEXT NOT NULL,
    raw BLOB NOT NULL,
    status TEXT NOT NULL,  -- sent, mined, reverted
    block INTEGER
);
CREATE INDEX IF NOT EXISTS by_sender_nonce ON transactions (sender, nonce);
-- Earlier signings of a key's transaction (its nonce, lower fees), replaced by a fee bump: one may still be mined.
CREATE TABLE IF NOT EXISTS replaced (
    key TEXT NOT NULL,
    tx_hash TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class JournalEntry:
    key: str
    sender: str
    nonce: int
    tx_hash: str
    raw: bytes
    status: str
    block: int | None


class TxJournal:
    """Signed transactions by idempotency key; safe to reopen after a crash."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None)  # autocommit: every write is durable at once
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)

    def get(self, key: str) -> JournalEntry | None:
        row = self._db.execute(
            "SELECT key, sender, nonce, tx_hash, raw, status, block FROM transactions WHERE key = ?", (key,)
        ).fetchone()
        return JournalEntry(*row) if row else None

    def next_nonce(self, sender: str) -> int | None:
        """One past the highest nonce journaled for ``sender`` (None: nothing journaled)."""
        row = self._db.execute("SELECT MAX(nonce) FROM transactions WHERE sender = ?", (sender,)).fetchone()
        return None if row[0] is None else row[0] + 1

    def record(self, key: str, sender: str, nonce: int, tx_hash: str, raw: bytes) -> None:
        self._db.execute(
            "INSERT INTO transactions (key, sender, nonce, tx_hash, raw, status) VALUES (?, ?, ?, ?, ?, 'sent')",
            (key, sender, nonce, tx_hash, raw),
        )

    def replace(self, key: str, tx_hash: str, raw: bytes) -> None:
        """``key``'s transaction signed again (same nonce, higher fees): the new one is sent from now on."""
        old = self.get(key)
        assert old is not None, key
        self._db.execute("INSERT INTO replaced (key, tx_hash) VALUES (?, ?)", (key, old.tx_hash))
        self._db.execute("UPDATE transactions SET tx_hash = ?, raw = ? WHERE key = ?", (tx_hash, raw, key))

    def hashes(self, key: str) -> list[str]:
        """Every hash ``key``'s transaction was signed under, the latest first."""
        entry = self.get(key)
        earlier = self._db.execute("SELECT tx_hash FROM replaced WHERE key = ? ORDER BY rowid DESC", (key,))
        return ([entry.tx_hash] if entry else []) + [row[0] for row in earlier.fetchall()]

    def settle(self, key: str, *, status: str, block: int) -> None:
        self._db.execute("UPDATE transactions SET status = ?, block = ? WHERE key = ?", (status, block, key))

    def unsettled(self, sender: str) -> list[JournalEntry]:
        """Transactions of ``sender`` sent but not seen mined, by nonce."""
        rows = self._db.execute(
            "SELECT key, sender, nonce, tx_hash, raw, status, block FROM transactions"
            " WHERE sender = ? AND status = 'sent' ORDER BY nonce",
            (sender,),
        ).fetchall()
        return [JournalEntry(*row) for row in rows]

    def forget(self, key: str) -> None:
        """Drop a reverted transaction, so its key may be tried again."""
        self._db.execute("DELETE FROM transactions WHERE key = ?", (key,))
        self._db.execute("DELETE FROM replaced WHERE key = ?", (key,))

    def close(self) -> None:
        self._db.close()
