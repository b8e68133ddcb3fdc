"""Serving the app with uvicorn: in the foreground until Ctrl-C (`ovig api serve`, the demo), or in a
background thread (tests, benchmarks)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI

from ovig_node.devnet.errors import PortTaken
from ovig_node.devnet.processes import port_free


def _server(app: FastAPI, host: str, port: int) -> uvicorn.Server:
    if not port_free(host, port):
        raise PortTaken(port, "API", "--port")
    # Our own lines say where the dashboard is; uvicorn's access log would drown the demo's output.
    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))


def serve(app: FastAPI, *, host: str, port: int) -> None:
    """Serve until Ctrl-C or SIGTERM, then return (the caller may still clean up)."""
    # uvicorn shuts down gracefully on SIGINT, then raises the signal again for the default handler:
    # here stopping the server was all the user asked for.
    with contextlib.suppress(KeyboardInterrupt):
        _server(app, host, port).run()


@contextmanager
def serving(app: FastAPI, *, host: str = "127.0.0.1", port: int, timeout: float = 30.0) -> Iterator[str]:
    """Serve in a background thread for the ``with`` block; yields the base URL."""
    server = _server(app, host, port)
    thread = threading.Thread(target=server.run, name="ovig-api-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the API server did not start on {host}:{port}")
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
