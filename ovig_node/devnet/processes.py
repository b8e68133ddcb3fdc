"""Background processes we start, recognise later by pid *and* start time, and stop gracefully."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from ovig_node.devnet.errors import StartFailed

STOP_GRACE_SECONDS = 15.0


@dataclass
class ProcessRecord:
    name: str
    pid: int
    create_time: float  # psutil's start time: tells our process from a later one with a recycled pid
    argv: list[str]
    log: str


def start_process(
    name: str,
    argv: list[str],
    *,
    log: Path,
    ready: Callable[[], bool],
    timeout: float,
    cwd: Path | None = None,
) -> ProcessRecord:
    """Start ``argv`` detached, output appended to ``log``; return once ``ready()`` is true.

    Raises StartFailed (with the log's last line) if the process exits or is not ready in time.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        out.write(f"\n--- {time.strftime('%Y-%m-%dT%H:%M:%S')} starting: {' '.join(argv)}\n".encode())
        out.flush()
        # A new session: the process outlives its starter and ignores the terminal's Ctrl-C.
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
        )
    record = ProcessRecord(name, proc.pid, psutil.Process(proc.pid).create_time(), argv, str(log))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StartFailed(name, f"exited with code {proc.returncode}: {last_line(log)}", str(log))
        if ready():
            return record
        time.sleep(0.2)
    terminate(record)
    raise StartFailed(name, f"no answer within {timeout:g}s", str(log))


def owns(record: ProcessRecord) -> bool:
    """Whether ``record.pid`` is still the process we started (not a recycled pid, not a zombie)."""
    try:
        proc = psutil.Process(record.pid)
        if abs(proc.create_time() - record.create_time) > 0.05:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def terminate(record: ProcessRecord) -> bool:
    """SIGTERM, wait, then SIGKILL; True if it was running. Reaps it when it is our child."""
    if not owns(record):
        return False
    proc = psutil.Process(record.pid)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_SECONDS)
    except psutil.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    return True


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR as anvil and Node set it: a port in TIME_WAIT is free for them too.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"
