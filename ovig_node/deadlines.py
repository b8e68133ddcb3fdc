"""A deadline for the work of one thread: long work (a replay's steps, an IPFS download's pieces) checks it
between two pieces and stops there.

An auditor's seat has a commit deadline; whatever a provider or owner put in the files (a stride of millions of
steps, a dataset served a byte a second), the work for that seat must not hold the node's worker past it.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from ovig_node.errors import OvigError

# When this thread's work must stop (time.monotonic()), or None.
_STOP_AT: contextvars.ContextVar[float | None] = contextvars.ContextVar("stop_at", default=None)
_T = TypeVar("_T")


class DeadlinePassed(OvigError, RuntimeError):
    """Work passed the deadline it was given (:func:`stop_at`) and stopped between two pieces."""


@contextlib.contextmanager
def stop_at(deadline: float) -> Iterator[None]:
    """Work in this thread (and context) stops at the monotonic time ``deadline``, between two pieces."""
    token = _STOP_AT.set(deadline)
    try:
        yield
    finally:
        _STOP_AT.reset(token)


def check(what: str) -> None:
    """Raise DeadlinePassed (naming ``what`` was under way) once this thread's deadline has passed."""
    deadline = _STOP_AT.get()
    if deadline is not None and time.monotonic() >= deadline:
        raise DeadlinePassed(f"{what}: its deadline passed")


def remaining() -> float | None:
    """Seconds left to this thread's deadline (None: it has none): a single request that may wait (an IPFS
    block searched for among peers) asks for no more than that, so no request outlives the deadline."""
    deadline = _STOP_AT.get()
    return None if deadline is None else deadline - time.monotonic()


def run_until(deadline: float, work: Callable[[], _T]) -> _T:
    """``work()`` stopped (DeadlinePassed) at the monotonic ``deadline``: what a worker thread runs, since a pool's
    threads do not inherit the submitting thread's deadline."""
    with stop_at(deadline):
        return work()
