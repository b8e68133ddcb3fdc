"""The project's exception base.

Every error OVIG raises on purpose derives from :class:`OvigError`, so a CLI or a node can tell
"something we understand went wrong" (print one line, keep state) from a bug (traceback). Each
subpackage adds its own subclasses, which also inherit the fitting builtin (``ValueError``,
``ConnectionError``, ...) so generic callers keep working:

    OvigError
    ├── storage.errors.IpfsError ...      (IPFS node and content problems)
    ├── devnet.errors.DevnetError ...     (local chain + IPFS processes)
    └── chain.errors.ChainError ...       (RPC, accounts, deployments)
"""

from __future__ import annotations


class OvigError(Exception):
    """Base of every error OVIG raises deliberately; its message is fit to show a user as is."""
