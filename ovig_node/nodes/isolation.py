"""Each unit of a node's work (a task, an interval, a dispute, a challenge) fails on its own.

A provider or owner chooses every file a node reads, so whatever one task's files do must not stop
the node serving the others (protocol section 5). A unit that raises is logged once, with its key and
the error, and then:

- if the cause is ours to wait out (our RPC endpoint or IPFS node down, content not found yet), it is
  tried again after a backoff that doubles up to ``max_delay`` (short enough to stay inside a
  challenge window);
- otherwise (a task refused, or anything unexpected) it is left alone until the node restarts: a
  retry would fail the same way, and logging it every pass would bury everything else.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from web3.exceptions import Web3RPCError

from ovig_node.chain.errors import IndexBehind, RpcRefused, RpcUnavailable
from ovig_node.storage.errors import ContentNotFound, IpfsUnavailable

_T = TypeVar("_T")
# Our infrastructure, not the unit's content: worth another try.
TRANSIENT: tuple[type[BaseException], ...] = (
    IpfsUnavailable,
    RpcUnavailable,
    IndexBehind,
    ContentNotFound,
    ConnectionError,
    TimeoutError,
    # an endpoint's error answer (a rate limit answered as JSON, a lagging backend's "header not found"): review 29
    # of v3, one such answer left a seat, a challenge or an appeal alone until a restart, its window closing meanwhile
    Web3RPCError,
    RpcRefused,
)

# A full disk (or quota) is this machine's to free, then the unit is tried again: never "left alone until a restart"
# (review 16 of v3: a sybil's junk files filled a watcher's disk, and every interval after was never judged).
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


@dataclass
class _Failure:
    retry_at: float | None  # monotonic time of the next attempt; None: not before a restart
    delay: float


@dataclass
class Isolation:
    say: Callable[..., None]  # the node's timeline
    first_delay: float = 1.0  # seconds before the first retry of a transient failure
    max_delay: float = 30.0  # the longest wait between retries
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, _Failure] = field(default_factory=dict)

    def ready(self, key: str) -> bool:
        """Whether ``key`` may be tried now (never failed, or its backoff has passed)."""
        failure = self._failures.get(key)
        return failure is None or (failure.retry_at is not None and self.clock() >= failure.retry_at)

    def call(self, key: str, work: Callable[[], _T], *, reraise: tuple[type[Exception], ...] = ()) -> _T | None:
        """``work()``, or None if it raised (recorded against ``key``; the node carries on) or ``key`` is
        not :meth:`ready`. Errors of the ``reraise`` types are the caller's to handle, and propagate."""
        if not self.ready(key):
            return None
        try:
            result = work()
        except reraise:
            raise
        except Exception as exc:  # the point: no unit's failure reaches the node's loop
            self._failed(key, exc)
            return None
        if self._failures.pop(key, None) is not None:
            self.say(f"{key}: recovered", style="green")
        return result

    def _failed(self, key: str, exc: Exception) -> None:
        known = self._failures.get(key)
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:  # this machine's, never the unit's: said as such
            exc = OSError(exc.errno, f"this machine's disk is full ({exc}); free space, and it goes on")
        if isinstance(exc, TRANSIENT) or (isinstance(exc, OSError) and exc.errno in DISK_FULL):
            delay = self.first_delay if known is None else min(self.max_delay, known.delay * 2)
            self._failures[key] = _Failure(self.clock() + delay, delay)
            if known is None:
                self.say(f"{key}: {type(exc).__name__}: {exc}; retrying with backoff", style="yellow")
            return
        self._failures[key] = _Failure(None, 0.0)
        self.say(f"{key}: {type(exc).__name__}: {exc}; left alone until a restart", style="yellow")
