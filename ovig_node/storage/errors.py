"""Errors of the storage layer (IPFS).

OvigError
└── IpfsError
    ├── IpfsUnavailable (ConnectionError)   the node does not answer
    ├── IpfsRequestError (RuntimeError)     the node answered with an error we do not map
    ├── ContentNotFound (LookupError)       no block for a CID within the timeout
    ├── DigestMismatch (ValueError)         bytes do not hash to what they should
    ├── InvalidContent (ValueError)         well-hashed blocks that are not a UnixFS file
    ├── ContentTooLarge (ValueError)        a file larger than the caller allows: not fetched further
    └── InvalidCid (ValueError)             text that is not a CID we support
"""

from __future__ import annotations

from ovig_node.errors import OvigError


class IpfsError(OvigError):
    """Anything that went wrong talking to an IPFS node or with content from it."""


class IpfsUnavailable(IpfsError, ConnectionError):
    """The IPFS API at ``url`` could not be reached (after bounded retries)."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        super().__init__(f"IPFS node at {url} is unavailable: {reason}")


class IpfsRequestError(IpfsError, RuntimeError):
    """The node answered ``endpoint`` with an error status and message."""

    def __init__(self, endpoint: str, status: int, message: str) -> None:
        self.endpoint = endpoint
        self.status = status
        self.message = message
        super().__init__(f"IPFS {endpoint} failed ({status}): {message}")


class ContentNotFound(IpfsError, LookupError):
    """No node could provide ``cid`` in time."""

    def __init__(self, cid: str, detail: str) -> None:
        self.cid = cid
        self.detail = detail
        super().__init__(f"content {cid} not found: {detail}")


class DigestMismatch(IpfsError, ValueError):
    """Bytes fetched for ``cid`` hash to ``got`` instead of ``expected`` (hex digests)."""

    def __init__(self, cid: str, expected: str, got: str) -> None:
        self.cid = cid
        self.expected = expected
        self.got = got
        super().__init__(f"content of {cid} is corrupt: expected digest {expected}, got {got}")


class InvalidCid(IpfsError, ValueError):
    """``text`` is not a CID this client can verify."""

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"invalid CID {text!r}: {reason}")


class InvalidContent(IpfsError, ValueError):
    """``cid`` names blocks that hash correctly but do not form a UnixFS file."""

    def __init__(self, cid: str, reason: str) -> None:
        self.cid = cid
        self.reason = reason
        super().__init__(f"content {cid} is not a readable file: {reason}")


class ContentTooLarge(IpfsError, ValueError):
    """``cid`` holds more than ``limit`` bytes; the download stopped there (content is untrusted)."""

    def __init__(self, cid: str, limit: int) -> None:
        self.cid = cid
        self.limit = limit
        super().__init__(f"content {cid} is larger than {limit} bytes: not downloaded further")
