"""What an owner declares when it posts a task (protocol 4.2): the slowest honest replay of one interval.

A declaration below the boundary's own slowest calibration replay would have panelists miss their
reveals, and one above the committee's cap is refused on-chain; both are refused before any
transaction, with the numbers in the message. A hostile owner who skips that check reaches the chain (the
contract knows no boundary): every node that fetches the task then refuses it.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ovig_node.nodes.fetching import TaskRefused, check_declared_replay
from ovig_node.nodes.owner import PostingError, Terms, declared_replay_seconds
from ovig_node.nodes.trainer import check_deadline, check_windows, second_profile
from ovig_node.protocol.intervals import Layout
from ovig_node.training.execution import get_profile

TERMS = Terms(
    reward=1, provider_bond=1, challenger_bond=1, opening_window=1, challenge_window=1, reveal_window=1, deadline_in=1
)


def test_by_default_twice_the_slowest_calibration_replay_rounded_up() -> None:
    assert declared_replay_seconds(TERMS, 3.2, 900) == 7
    assert declared_replay_seconds(TERMS, 0.01, 900) == 1  # never zero: the contract refuses 0


def test_the_owner_s_own_figure_is_kept_when_it_covers_the_boundary() -> None:
    terms = Terms(**{**TERMS.__dict__, "replay_seconds": 15})
    assert declared_replay_seconds(terms, 14.9, 15) == 15


@pytest.mark.parametrize(
    ("declared", "slowest", "cap", "message"),
    [
        (5, 5.5, 900, "below the boundary's slowest honest replay (5.5s)"),
        (901, 1.0, 900, "above the committee's maximum 900"),
        (None, 500.0, 900, "replay seconds 1000 is above the committee's maximum 900"),
    ],
)
def test_a_declaration_nodes_or_the_contract_would_refuse_is_refused_before_posting(
    declared: int | None, slowest: float, cap: int, message: str
) -> None:
    terms = Terms(**{**TERMS.__dict__, "replay_seconds": declared})
    with pytest.raises(PostingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        declared_replay_seconds(terms, slowest, cap)


@pytest.mark.parametrize(("declared", "slowest"), [(1, 1.5), (14, 14.01)])
def test_a_node_refuses_a_task_declaring_replays_faster_than_its_boundary_measured(
    declared: int, slowest: float
) -> None:
    with pytest.raises(TaskRefused, match=rf"task 7: it declares replays of {declared}s, but its boundary's slowest"):
        check_declared_replay(7, declared, slowest)


def test_a_node_accepts_a_declaration_that_covers_its_boundary() -> None:
    check_declared_replay(7, 15, 15.0)  # no exception: equal is enough


def test_a_trainer_refuses_a_deadline_its_run_cannot_meet() -> None:
    """Reviews 12 and 16 of v3: a deadline shorter than the run let the owner abandon an honest provider's task and
    take its bond. Ten intervals at 4 s need 60 s with the safety factor, and two batch commits at 12 s each 24 s
    more (a commit is mined before the next batch's)."""
    check_deadline(7, 84, 10, 4.0, 2, 12.0)  # no exception: just enough
    with pytest.raises(TaskRefused, match=r"task 7: its commit deadline is 83s away; 10 intervals .* need 84s"):
        check_deadline(7, 83, 10, 4.0, 2, 12.0)


def test_a_trainer_refuses_an_opening_window_it_cannot_open_a_whole_batch_in() -> None:
    """Review 16 of v3: an owner's opening window of seconds on a chain of slow blocks slashed the provider that
    accepted it. An interval trains in 4 s and an opening takes 11 s to be mined: 15 s opens a batch of 64 (one
    transaction), a batch of 65 takes two (26 s)."""
    windows = SimpleNamespace(openingWindow=15, challengeWindow=60, challengeRevealWindow=30)
    check_windows(7, windows, 10.0, 4.0, 11.0, Layout(640, 10, 64))  # no exception: just enough
    with pytest.raises(TaskRefused, match=r"task 7: its opening window of 15s .* each of 2 opening transactions"):
        check_windows(7, windows, 10.0, 4.0, 11.0, Layout(650, 10, 65))
    short = SimpleNamespace(openingWindow=14, challengeWindow=60, challengeRevealWindow=30)
    with pytest.raises(TaskRefused, match=r"task 7: its opening window of 14s leaves no time to open a sample"):
        check_windows(7, short, 10.0, 4.0, 11.0, Layout(640, 10, 64))


@pytest.mark.parametrize(
    ("own", "named", "second"),
    [
        ("micro4", ["reference", "micro3"], "reference"),  # the boundary's first honest profile
        ("reference", ["reference", "ddp2", "micro3"], "micro3"),  # never its own, never a data-parallel one
        ("micro4", ["someone-elses"], "reference"),  # none it knows: a fixed one
        ("reference", [], "threads2"),
    ],
)
def test_a_boundary_preflight_replays_under_a_second_profile(own: str, named: list[str], second: str) -> None:
    """Review 12 of v3: the trainer's own profile reproduces its claim whatever the bounds, so a boundary too narrow
    for any other machine (every bound 0) passed its preflight and the auditors' replays slashed it."""
    assert second_profile(get_profile(own), named).name == second
