"""How a dispute round's panel is drawn (protocol section 4.2), as AuditCommittee draws it.

A round armed at block a is drawn from the committee's history *as of a* (the state after block a - 1)
and the seed ``keccak256(abi.encode(value, dispute, round))``, where ``value`` is the randomness
backend's value of the target it named when armed (``panelTarget``: a drand round, or on devnets the
block ``a + DELAY``). Try t = 0, 1, ..., 16 * P_r - 1 lands on slot
``uint256(keccak256(abi.encode(seed, t))) % slots``; its occupant is seated if it was eligible then and
is not seated yet; the draw stops at ``P_r = panelSize * 2^r + 2^r - 1`` seated. Fewer seated after
every try: the round cannot seat and is re-armed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from eth_abi import encode
from eth_utils import keccak

TRIES_PER_SEAT = 16


def panel_seed(value: bytes, dispute: int, round_: int) -> bytes:
    """The round's seed from the backend's value for its target."""
    return keccak(encode(["bytes32", "uint256", "uint256"], [value, dispute, round_]))


def panel_size(first: int, round_: int) -> int:
    """P_r = first * 2^r + (2^r - 1)."""
    scale = 1 << round_
    return first * scale + scale - 1


def slot_of(seed: bytes, t: int, slots: int) -> int:
    """The slot try t lands on."""
    return int.from_bytes(keccak(encode(["bytes32", "uint256"], [seed, t])), "big") % slots


def draw_panel(seed: bytes, occupants: Sequence[str | None], eligible: Callable[[str], bool], want: int) -> list[str]:
    """The seated auditors in draw order; ``occupants`` is each slot's occupant as of the arm block
    (None: empty), ``eligible`` the round's eligibility as of then."""
    panel: list[str] = []
    for t in range(TRIES_PER_SEAT * want):
        if len(panel) == want or not occupants:
            break
        candidate = occupants[slot_of(seed, t, len(occupants))]
        if candidate is not None and candidate not in panel and eligible(candidate):
            panel.append(candidate)
    return panel
