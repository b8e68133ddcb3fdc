"""What the two nodes that replay intervals share (the watcher and the auditor): a journal, the isolation that
keeps one bad task from stopping the rest, and a loop that warms the comparison up before its first window."""

from __future__ import annotations

import functools
from typing import ClassVar

from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.isolation import Isolation
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.looping import keep_running
from ovig_node.nodes.node_state import NodeState
from ovig_node.verify.stats import warm_up


class ReplayingNode:
    """A node's loop: ``step`` every ``poll_seconds``, riding out outages, its keeper's duties between passes, and
    ``missed`` said after an outage. Subclasses are dataclasses with ``ctx``, ``keeper`` and ``poll_seconds``."""

    JOURNAL: ClassVar[str]  # its state file's name in its home folder
    ctx: NodeContext
    keeper: Keeper | None
    poll_seconds: float

    @functools.cached_property
    def state(self) -> NodeState:
        return NodeState(self.ctx.home / self.JOURNAL)

    @functools.cached_property
    def isolation(self) -> Isolation:
        return Isolation(self.ctx.say)

    def run(self, *, until: float | None = None) -> None:
        """Work until interrupted (or until the monotonic time ``until``)."""
        warm_up()  # the comparison's compiled passes load meanwhile, not within a challenge or vote window
        keep_running(
            self.ctx, self.step, keeper=self.keeper, poll_seconds=self.poll_seconds, until=until, missed=self.missed
        )

    def step(self) -> None:
        raise NotImplementedError

    def missed(self, since: int, now: int) -> list[str]:
        """Duties whose window closed in the chain times (since, now] undone (said after an outage)."""
        raise NotImplementedError
