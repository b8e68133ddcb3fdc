"""What evidence a provider must keep, and until when (protocol section 2.4, retention).

Anyone may ask for any unopened interval of a batch while that batch's challenge window is open (protocol
8.3), and an interval the provider then cannot open slashes the task. So a provider keeps every E_k until
the request windows of both interval k's batch and interval k + 1's batch have closed (E_k is interval
k + 1's start file), and the start and end evidence of every sampled or requested interval, with the
deliverable E_{K-1}, until the task ends. Anything else it may delete. (Version 2 let a provider delete
unsampled evidence as soon as a batch was opened: a request for one of them then slashed an honest
provider at no cost to the requester, attack 5 of docs/dispute-game.md.)
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from ovig_node.protocol.intervals import Layout


def retained(layout: Layout, opened: Iterable[int], closed_batches: Collection[int]) -> set[int]:
    """The intervals k whose end evidence E_k the provider must still keep.

    ``opened``: every interval sampled or requested so far (a pending request included). ``closed_batches``:
    the batches whose request window has closed (opened, and their challenge window over); once the task has
    ended, pass every batch."""
    last = layout.intervals - 1
    keep = {last}
    for k in opened:
        keep |= {k, k - 1} if k > 0 else {k}
    for k in range(last):
        if layout.batch_of(k) not in closed_batches or layout.batch_of(k + 1) not in closed_batches:
            keep.add(k)
    return keep
