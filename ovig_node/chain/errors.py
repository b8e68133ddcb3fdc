"""Errors of the chain layer.

OvigError
└── ChainError
    ├── RpcUnavailable (ConnectionError)    the RPC endpoint does not answer
    ├── NotMined (TimeoutError)             a transaction not mined within the client's wait
    │   ├── NonceTaken                      its nonce used by another transaction of the account
    │   ├── BroadcastRefused                the RPC node refused it for now
    │   ├── FundsShort                      the account cannot pay for it yet: nothing signed
    │   └── StateBehind                     an endpoint answered from a state behind one already seen
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


class RpcRefused(ChainError):
    """The RPC endpoint answered an HTTP error that is not an outage (a quota answered 402 or 403, a key refreshed
    answered 401, a wrong URL's 404): a command fails on it at once, and a node's unit (a seat, a challenge, an
    appeal) tries it again with backoff, never left alone while its window runs (review 30 of v3)."""


class NotMined(ChainError, TimeoutError):
    """A transaction sent was not mined within the client's wait: a busy chain, not a refusal. Worth another try
    (its key re-broadcasts the same transaction); a node must never give a seat or a challenge up for it (review 12
    of v3)."""


class NonceTaken(NotMined):
    """A journaled transaction's nonce was used by another transaction of the same account (a second process
    signing with the key: an auditor and a watcher of one operator), so it can never be mined: the client forgot
    it, and the next try signs the call afresh (review 18 of v3: the entry stayed "sent" for good, and every later
    call of its key raised, a ballot or a challenge lost)."""


class BroadcastRefused(NotMined):
    """The RPC node refused to take a journaled transaction for now (another transaction of the account at its nonce
    in the mempool pays more, the account is short of gas money): worth another try, which sends the same
    transaction, or signs it afresh once its nonce is taken (review 19 of v3: a refusal was final until a restart,
    and an appeal so refused was never sent)."""


class FundsShort(NotMined):
    """The account cannot pay a transaction's value and the most its gas may cost, beside its transactions not mined
    yet: nothing is signed or journaled, and the call is tried again (its operator adds funds). Review 21 of v3: a
    transaction signed and refused for want of funds kept its nonce, and every later one of the node waited behind it
    for good (an owner chose a challenger bond just under a watcher's balance, and every fake after was paid)."""


class StateBehind(NotMined):
    """The RPC endpoint answered from a state behind one the node already saw (a load-balanced endpoint's backends lag
    each other): a call the chain still allows was refused at estimation. Tried again (review 21 of v3: a reveal
    estimated on a backend without the commit just mined was given up, its bond burned and the fake paid)."""


class IndexBehind(ChainError, RuntimeError):
    """The event index has not reached an event the chain's state implies: try again after a poll."""


class KeystoreError(ChainError, ValueError):
    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"keystore {path}: {reason}")


class DeploymentError(ChainError, RuntimeError):
    """A deployment step failed; the message names the contract and what to do."""
