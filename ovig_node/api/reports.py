"""Challengers' replay reports (protocol section 5, step 4), fetched from IPFS by the CID a challenge
revealed, through the verifying client: a gateway or node we do not trust cannot change a number.

Content is addressed, so a report fetched once is kept (a bounded number of them, in memory).

OvigError
└── ReportError
    ├── ReportNotFound (LookupError)        no such CID on IPFS within the timeout, or no IPFS configured
    ├── ReportUnreadable (ValueError)       bytes that are not a JSON report, or an invalid CID
    └── ReportFetchFailed (ConnectionError) our IPFS node does not answer
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from ovig_node.errors import OvigError
from ovig_node.storage.errors import ContentNotFound, IpfsError, IpfsUnavailable
from ovig_node.storage.ipfs import IpfsClient

MAX_REPORT_BYTES = 4 << 20  # a report is a few KiB of numbers; anything this large is not one
CACHED_REPORTS = 64


class ReportError(OvigError):
    """A report could not be served."""


class ReportNotFound(ReportError, LookupError):
    def __init__(self, cid: str, why: str) -> None:
        super().__init__(f"report {cid}: {why}")


class ReportUnreadable(ReportError, ValueError):
    def __init__(self, cid: str, why: str) -> None:
        super().__init__(f"report {cid} is not a readable report: {why}")


class ReportFetchFailed(ReportError, ConnectionError):
    def __init__(self, cid: str, why: str) -> None:
        super().__init__(f"report {cid} could not be fetched: {why}")


class Reports:
    def __init__(self, ipfs_url: str | None, *, fetch_timeout: float = 10.0) -> None:
        self.ipfs_url = ipfs_url
        self.fetch_timeout = fetch_timeout
        self._cache: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, cid: str) -> dict[str, Any]:
        with self._lock:
            if cid in self._cache:
                self._cache.move_to_end(cid)
                return self._cache[cid]
        report = self._fetch(cid)
        with self._lock:
            self._cache[cid] = report
            while len(self._cache) > CACHED_REPORTS:
                self._cache.popitem(last=False)
        return report

    def _fetch(self, cid: str) -> dict[str, Any]:
        if self.ipfs_url is None:
            raise ReportNotFound(cid, "the API runs without an IPFS node (--ipfs)")
        try:
            with IpfsClient(self.ipfs_url, timeout=5.0, fetch_timeout=self.fetch_timeout, retries=2) as ipfs:
                data = ipfs.cat_bytes(cid, length=MAX_REPORT_BYTES + 1)
        except IpfsUnavailable as exc:
            raise ReportFetchFailed(cid, str(exc)) from None
        except ContentNotFound as exc:
            raise ReportNotFound(cid, str(exc)) from None
        except (IpfsError, ValueError) as exc:  # a bad CID, a block that does not hash, not a file
            raise ReportUnreadable(cid, str(exc)) from None
        if len(data) > MAX_REPORT_BYTES:
            raise ReportUnreadable(cid, f"larger than {MAX_REPORT_BYTES} bytes")
        try:
            # NaN and infinities (json.dumps writes them) are not JSON a browser can parse: null.
            report = json.loads(data, parse_constant=lambda _: None)
        except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than any report's
            raise ReportUnreadable(cid, f"not JSON ({exc})") from None
        if not isinstance(report, dict):
            raise ReportUnreadable(cid, "not a JSON object")
        return report
