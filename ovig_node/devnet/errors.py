"""Errors of the devnet manager; each message says what to do about it.

OvigError
└── DevnetError
    ├── ToolMissing (FileNotFoundError)     anvil, Node 22 or the IPFS daemon is not installed
    ├── PortTaken (OSError)                 another process listens on a port we need
    ├── StartFailed (RuntimeError)          a process exited or never became healthy
    └── DevnetNotRunning (RuntimeError)     an action needs a running devnet
"""

from __future__ import annotations

from ovig_node.errors import OvigError


class DevnetError(OvigError):
    """Anything that went wrong managing the devnet's processes or files."""


class ToolMissing(DevnetError, FileNotFoundError):
    def __init__(self, tool: str, hint: str) -> None:
        self.tool = tool
        super().__init__(f"{tool} not found: {hint}")


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
