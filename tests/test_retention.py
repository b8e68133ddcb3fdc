"""Retention (protocol 2.4): which evidence files a provider must still keep, as the chain moves on.

A task of K = 7 intervals in batches of m = 3 (batches 0..2 hold 0-2, 3-5 and 6). E_k is interval k's end
file and interval k + 1's start file, so it stays while either batch can still be asked for an opening
(protocol 8.3)."""

from __future__ import annotations

from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.retention import retained

LAYOUT = Layout(total_steps=70, stride=10, intervals_per_batch=3)


def test_every_file_stays_while_every_batch_can_be_asked() -> None:
    assert retained(LAYOUT, [], closed_batches=set()) == set(range(7))


def test_a_closed_batch_lets_go_of_its_unopened_files_but_not_the_start_of_the_next_batch() -> None:
    # batch 0 closed, interval 1 sampled: E_0 and E_1 stay (its start and end), E_2 stays as interval 3's
    # start while batch 1 can still be asked
    assert retained(LAYOUT, [1], closed_batches={0}) == {0, 1, 2, 3, 4, 5, 6}
    assert retained(LAYOUT, [1, 4], closed_batches={0, 1}) == {0, 1, 3, 4, 5, 6}


def test_once_the_task_ended_only_opened_intervals_and_the_deliverable_stay() -> None:
    every = range(LAYOUT.batches)
    assert retained(LAYOUT, [], every) == {6}
    assert retained(LAYOUT, [0, 4, 6], every) == {0, 3, 4, 5, 6}


def test_a_request_keeps_its_interval_and_start_file_whatever_the_batch() -> None:
    # interval 3 requested (its start E_2 lies in batch 0): both stay after both windows closed
    assert retained(LAYOUT, [3], closed_batches={0, 1, 2}) == {2, 3, 6}
