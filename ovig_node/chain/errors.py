"""Errors of the chain layer.

OvigError
└── ChainError
    ├── RpcUnavailable (ConnectionError)    the RPC endpoint does not answer
    ├── IndexBehind (RuntimeError)          the event index lacks an event the chain's state implies
    ├── KeystoreError (ValueError)          a keystore that cannot be read or decrypted
    └── DeploymentError (RuntimeError)      a contract that cannot be compiled, found or deployed
"""

from __future__ import annotations

from ovig_node.errors import OvigError


class ChainError(OvigError):
    """Anything that went wrong with the chain, its accounts or our contracts on it."""


class RpcUnavailable(ChainError, ConnectionError):
    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"RPC endpoint {url} is unavailable: {reason}")


class IndexBehind(ChainError, RuntimeError):
    """The event index has not reached an event the chain's state implies: try again after a poll."""


class KeystoreError(ChainError, ValueError):
    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"keystore {path}: {reason}")


class DeploymentError(ChainError, RuntimeError):
    """A deployment step failed; the message names the contract and what to do."""
