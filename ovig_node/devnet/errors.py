"""Errors of the devnet manager; each message says what to do about it.

OvigError
├── ToolMissing (FileNotFoundError)         anvil, Node 22 or the IPFS daemon is not installed (ovig_node.tools)
└── DevnetError
    ├── PortTaken (OSError)                 another process listens on a port we need
    ├── StartFailed (RuntimeError)          a process exited or never became healthy
    └── DevnetNotRunning (RuntimeError)     an action needs a running devnet
"""

from __future__ import annotations

from ovig_node.errors import OvigError
from ovig_node.tools import ToolMissing  # where the programs are looked up, below the devnet

__all__ = ["DevnetError", "DevnetNotRunning", "PortTaken", "StartFailed", "ToolMissing"]


class DevnetError(OvigError):
    """Anything that went wrong managing the devnet's processes or files."""


class PortTaken(DevnetError, OSError):
    def __init__(self, port: int, service: str, option: str) -> None:
        self.port = port
        self.service = service
        super().__init__(
            f"port {port} ({service}) is already in use: stop the process that holds it, "
            f"or choose another port with {option}"
        )


class StartFailed(DevnetError, RuntimeError):
    def __init__(self, service: str, reason: str, log: str) -> None:
        self.service = service
        self.log = log
        super().__init__(f"{service} did not start: {reason} (see {log})")


class DevnetNotRunning(DevnetError, RuntimeError):
    def __init__(self, data_dir: str) -> None:
        super().__init__(f"no devnet is running in {data_dir}: start one with `ovig devnet up`")
