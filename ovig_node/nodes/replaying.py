"""What the two nodes that replay intervals share (the watcher and the auditor): a journal, the isolation that
keeps one bad task from stopping the rest, and a loop that warms the comparison up before its first window."""

from __future__ import annotations

import contextlib
import functools
import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar

from ovig_node.chain.contracts import DisputeStatus
from ovig_node.deadlines import stop_at
from ovig_node.errors import OvigError
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.fetching import FetchedTask, TaskSources, fetch_task
from ovig_node.nodes.isolation import Isolation
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.looping import keep_running
from ovig_node.nodes.node_state import NodeState
from ovig_node.verify.stats import warm_up

OVERDUE = 6  # sweep intervals after which a node sweeps even with fetches under way


class ReplayingNode:
    """A node's loop: ``step`` every ``poll_seconds``, riding out outages, its keeper's duties between passes, and
    ``missed`` said after an outage. Subclasses are dataclasses with ``ctx``, ``keeper`` and ``poll_seconds``."""

    JOURNAL: ClassVar[str]  # its state file's name in its home folder
    FETCH_WORKERS: ClassVar[int] = 8  # files fetched at once, apart from the replays (IPFS waits, mostly)
    ctx: NodeContext
    keeper: Keeper | None
    poll_seconds: float
    _fetched: dict[int, FetchedTask]  # task -> its files (the owner's), fetched once
    _locks: dict[int, threading.Lock]  # task -> held while its files are fetched

    @functools.cached_property
    def state(self) -> NodeState:
        return NodeState(self.ctx.home / self.JOURNAL)

    @functools.cached_property
    def isolation(self) -> Isolation:
        return Isolation(self.ctx.say)

    @functools.cached_property
    def _pool(self) -> ThreadPoolExecutor:
        """The replay worker(s): one replay at a time each, since an execution profile's settings are
        process-wide."""
        return ThreadPoolExecutor(max_workers=self.replay_workers, thread_name_prefix=f"{self.JOURNAL}-replay")

    @functools.cached_property
    def _fetches(self) -> ThreadPoolExecutor:
        """The fetch workers: a file served slowly (or withheld) holds one of them until its fetch deadline, never
        the replay worker nor the node's loop."""
        return ThreadPoolExecutor(max_workers=self.FETCH_WORKERS, thread_name_prefix=f"{self.JOURNAL}-fetch")

    @property
    def replay_workers(self) -> int:
        return 1

    def _task_files(self, sources: TaskSources, wait: float = -1, fetch_by: float | None = None) -> FetchedTask:
        """The task's files (the owner's), fetched once, in a worker (every fetch of them shares one: a prefetch,
        a seat, a judgement); one fetch of a task at a time. Waiting for another fetch of them is this node's own
        business, not the owner's: at most ``wait`` seconds (-1: as long as it takes), then FilesBusy, never "not
        obtained" (the demo under CI's load: an auditor's seat waited for its own slow prefetch past the fetch
        window and voted `unavailable` on files that were served). The download alone stops at ``fetch_by``
        (DeadlinePassed: not obtained in time)."""
        task = sources.task
        lock = self._locks.setdefault(task, threading.Lock())
        if not lock.acquire(timeout=wait):
            raise FilesBusy(f"task {task}'s files: this node's other fetch of them still holds them")
        try:
            if task not in self._fetched:
                with stop_at(fetch_by) if fetch_by is not None else contextlib.nullcontext():
                    self._fetched[task] = fetch_task(self.ctx, task, self.ctx.home / f"task-{task}" / "files", sources)
            return self._fetched[task]
        finally:
            lock.release()

    def _disputes_over(self, task: int) -> bool:
        """Whether every dispute of ``task`` has resolved (none: true)."""
        disputes = [int(e.args["dispute"]) for e in self.ctx.scanner.events("DisputeOpened", task=task)]
        return all(self._resolved(dispute) for dispute in disputes)

    def _resolved(self, dispute: int) -> bool:
        return DisputeStatus(self.ctx.protocol.dispute(dispute).status) == DisputeStatus.RESOLVED

    def _drop_task_files(self, task: int) -> None:
        """Delete everything this node keeps of ``task`` on disk (the owner's files, evidence left over)."""
        with self._locks.setdefault(task, threading.Lock()):
            self._fetched.pop(task, None)
            shutil.rmtree(self.ctx.home / f"task-{task}", ignore_errors=True)

    @functools.cached_property
    def _swept(self) -> list[float]:
        return [time.monotonic()]  # when the store was last swept (the first sweep one interval after the start)

    def sweep(self, busy: bool) -> None:
        """Delete the blocks no pin holds from this node's IPFS store (what it downloaded, judged and deleted, and
        what it re-shared and unpinned), every ``ctx.sweep_every`` seconds while nothing is ``busy`` (a sweep holds
        the store's lock, and a fetch waits on it), and after OVERDUE intervals even so: a provider keeping one
        judgement always under way must not fill the disk (review 14 of v3); a fetch it holds up looks again."""
        every = self.ctx.sweep_every
        if every is None or time.monotonic() < self._swept[0] + every * (OVERDUE if busy else 1):
            return
        self._swept[0] = time.monotonic()
        deleted = self.ctx.ipfs.gc()
        if deleted:
            self.ctx.say(f"IPFS store swept: {deleted} blocks no pin holds deleted", style="dim")

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


def replay_queued(work: Future[Any]) -> Future[Any]:
    """The future to wait on for a judgement begun as ``work`` in a fetch worker: the replay it queued (the future
    it returned) once its files are in, else ``work`` itself."""
    if work.done() and work.exception() is None and isinstance(queued := work.result(), Future):
        return queued
    return work


class FilesBusy(OvigError, RuntimeError):
    """This node's other fetch of a task's files held them past the time this work could wait: no verdict (the
    node was busy), never a claim that the files were not served."""
