"""Child processes that must not outlive the process that started them."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterator

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """In a child: be killed when ``parent`` dies (Linux), or exit now if it already has."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """``values`` set in ``os.environ`` (children started in the block inherit them), then restored."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
