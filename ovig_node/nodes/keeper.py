"""Keeper duties (protocol 4.1, 4.2): the transitions anyone may call once they are due.

Every node runs a Keeper between its own work, so no clock of the protocol depends on one party:
``drawSeed``, ``slashUnopened``, ``slashUnopenedRequest`` and ``settleRequest`` (targeted openings),
``finalize``, ``abandon``, ``expireChallenge``, ``claimBond``,
``releaseLeadShare`` (a slash's lead share, once no earlier challenge can take it),
``drawPanel`` (a panel may take several calls), ``rearm`` (a draw that can no longer complete), ``resolve``
and ``settleSeats`` (a resolved dispute's seats, a page a call); and ``submitRound``: a draw whose drand
round is not on-chain yet waits for someone to submit its signature, fetched from the node's beacon relays
and verified by the contract. What is due is read from the chain (views and the latest block), never from wall
time. When another keeper acts first, the estimate reverts and nothing is sent.

The duties share the node's one loop with its own work, and anyone can make many due at once (a junk task's
batches committed in a burst: review 25 of v3 stalled a node's ballots and challenges behind them). So a tick
stops once it has spent ``tick_seconds``, each kind of duty (disputes, challenge commits, requests, tasks) having had
one at least, and the next tick goes on where the chain then stands, from the dispute, the task and each task's batch
after the last reached (reviews 26 and 28). And it never spends what the node keeps for its own transactions
(``gas_reserve``): short of that, the duties wait, said once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ovig_node.chain.contracts import BatchStatus, CommitStatus, DisputeStatus, RequestStatus, TaskStatus, Verdict
from ovig_node.chain.errors import FundsShort
from ovig_node.chain.randomness import for_contract
from ovig_node.chain.reverts import ContractReverted
from ovig_node.nodes.appealing import gas_reserve
from ovig_node.nodes.context import NodeContext
from ovig_node.protocol.panel import TRIES_PER_SEAT, panel_size

DUTIES = (
    "submitRound",
    "drawSeed",
    "slashUnopened",
    "slashUnopenedRequest",
    "settleRequest",
    "finalize",
    "abandon",
    "expireChallenge",
    "claimBond",
    "releaseLeadShare",
    "drawPanel",
    "rearm",
    "resolve",
    "settleSeats",
)
LIVE = (TaskStatus.POSTED, TaskStatus.ACCEPTED, TaskStatus.COMMITTED)
TICK_SECONDS = 20.0  # a keeper tick's time at most, after its first duty, before the node's own work runs again


class _TickOver(Exception):
    """The tick has spent its time, or the node's funds are down to its reserve: the rest waits for the next."""


@dataclass
class Keeper:
    ctx: NodeContext
    duties: frozenset[str] = frozenset(DUTIES)
    only_tasks: frozenset[int] | None = None  # None: every task on the contract
    # ("task", id), ("dispute", id), ("batch", "task:j") or ("commit", commitment hex) that need no more duties.
    tick_seconds: float = TICK_SECONDS
    _done: set[tuple[str, int | str]] = field(default_factory=set)
    _params: dict[str, int] = field(default_factory=dict)
    _until: float = 0.0  # monotonic time the running tick ends at
    _first_task: int = 0  # the task the next tick's task duties start from (the one after the last it reached)
    _first_dispute: int = 0  # likewise for disputes
    _first_commit: int = 0  # and for challenge commits and requests, by the position of their event in the chain
    _first_request: int = 0
    _next_batch: dict[int, int] = field(default_factory=dict)  # task -> the batch its next look starts from
    _drawn_until: dict[tuple[int, int], int] = field(default_factory=dict)  # (task, j) drawn -> its window's end
    _short: bool = False  # said that the duties wait for funds
    _did: list[str] = field(default_factory=list)  # the running tick's duties done
    _tried: bool = False  # the running tick has tried one (done, or reverted: another keeper was first)

    def tick(self) -> list[str]:
        """Perform the due duties, each once, for ``tick_seconds`` at most after the first of each kind (disputes,
        challenge commits, requests, tasks); return what was done."""
        self.ctx.scanner.poll()
        head = self.ctx.head()
        self._until, self._did = time.monotonic() + self.tick_seconds, []
        disputes = self._rotation(sorted(self._disputes()), "_first_dispute")
        tasks = self._rotation(sorted(self._tasks()), "_first_task")  # by id, not acceptance (review 26 of v3)
        sections: list[Callable[[], object]] = [
            lambda: [self._dispute_duties(d, head) for d in disputes],
            lambda: self._commit_duties(head),
            lambda: self._request_duties(head),
            lambda: [self._task_duties(t, head) for t in tasks],
        ]
        failed: Exception | None = None
        for section in sections:  # each kind gets a duty a tick, however many of another are due (review 28)
            self._tried = False
            try:
                section()
            except _TickOver:
                pass
            except ConnectionError:  # the endpoint is away: no other kind can get on either, and the loop says so
                raise
            except Exception as exc:  # the later kinds still get their turn (review 30); the loop hears of it after
                failed = failed or exc
        if failed is not None:
            raise failed
        return self._did

    def _rotation(self, items: list[Any], cursor: str) -> Iterator[Any]:
        """``items`` from the one at or after ``cursor``'s value round to the one before it; ``cursor`` follows (the
        next tick starts after the last one reached). Each past the first waits for time left: reads take time too
        (thousands of junk tasks)."""
        start = next((i for i, item in enumerate(items) if item >= getattr(self, cursor)), 0)
        for i, item in enumerate(items[start:] + items[:start]):
            if i and time.monotonic() >= self._until:
                raise _TickOver
            # The next tick starts after it even if its duties stop this one: one task's thousands of junk batches must
            # not hold the others' duties (its own batches go on from where they stopped: ``_next_batch``)
            setattr(self, cursor, item + 1)
            yield item
        setattr(self, cursor, 0)

    # --- what to look at -----------------------------------------------------------------------

    def _events_in_turn(self, name: str, cursor: str, done: Callable[[Any], tuple[str, str]]) -> Iterator[Any]:
        """The events ``name`` still to look at (not ``done``, of a watched task), in rotation from where the last tick
        stopped, the time bound checked at each (review 29 of v3: thousands of junk requests read on every tick held
        the node's own work back; review 30: settled ones counted against it)."""
        events = self.ctx.scanner.events(name)
        live = [i for i, e in enumerate(events) if done(e) not in self._done and self._watched(int(e.args["task"]))]
        for i in self._rotation(live, cursor):
            yield events[i]

    def _tasks(self) -> Iterable[int]:
        """Tasks a provider accepted: one only posted has no duty (nothing to draw, slash, finalize or abandon
        before acceptance), and anyone may post thousands at the price of gas, which would otherwise cost every
        keeper a read of each on every pass, and its timely draws and resolutions (review 12 of v3)."""
        for event in self.ctx.scanner.events("TaskAccepted"):
            task = int(event.args["task"])
            if ("task", task) in self._done or (self.only_tasks is not None and task not in self.only_tasks):
                continue
            yield task

    def _disputes(self) -> Iterable[int]:
        for event in self.ctx.scanner.events("DisputeOpened"):
            dispute = int(event.args["dispute"])
            if ("dispute", dispute) not in self._done and self._watched(int(event.args["task"])):
                yield dispute

    def _watched(self, task: int) -> bool:
        return self.only_tasks is None or task in self.only_tasks

    # --- duties --------------------------------------------------------------------------------

    def _task_duties(self, task: int, head: Any) -> list[str]:
        p, tasks = self.ctx.protocol, self.ctx.protocol.tasks
        t = p.task(task)
        # slashUnopened, finalize, abandon and releaseLeadShare all wait until no challenge can still decide
        # the task (or who is paid for it).
        quiet = t.pendingCommits == 0 and t.openDisputes == 0
        if t.waitingLeadSeq:
            if not quiet:
                return []
            return self._act(
                "releaseLeadShare",
                f"releaseLeadShare:{task}",
                tasks.functions.releaseLeadShare(task),
                f"task {task}: the lead's share of its slash paid out",
            )
        if t.status not in LIVE:
            self._done.add(("task", task))
            return []
        done = []
        now = int(head["timestamp"])
        # A window a no-decision reopened holds back slashUnopened and abandon too, so its watcher can challenge
        # again before the task ends (finalize waits for it anyway: challengeEnd is never earlier).
        reopened_over = now >= t.reopenedUntil
        # From the batch the last tick stopped at, the time checked at each: a task of thousands of batches must not
        # hold a tick in its reads (review 26 of v3); a drawn batch is not read again before its window ends
        count = int(t.committedBatches)
        first = self._next_batch.get(task, 0) % max(1, count)
        for n, j in enumerate([*range(first, count), *range(first)]):
            if n and time.monotonic() >= self._until:
                raise _TickOver
            if ("batch", f"{task}:{j}") not in self._done and now >= self._drawn_until.get((task, j), 0):
                done += self._batch_duties(task, j, now, ready=quiet and reopened_over)
            self._next_batch[task] = j + 1  # done with it (a duty that stopped the tick is looked at again)
        opened = t.unopenedRequests == 0  # a request left unopened is slashed (below), never finalized
        if (
            t.status == TaskStatus.COMMITTED
            and t.openedBatches == t.batchCount
            and now >= t.challengeEnd
            and quiet
            and opened
        ):
            done += self._act("finalize", f"finalize:{task}", tasks.functions.finalize(task), f"finalized task {task}")
        if t.status == TaskStatus.ACCEPTED and now >= t.terms.deadline and quiet and reopened_over:
            done += self._act(
                "abandon", f"abandon:{task}", tasks.functions.abandon(task), f"task {task} abandoned: deadline passed"
            )
        return done

    def _batch_duties(self, task: int, j: int, now: int, *, ready: bool) -> list[str]:
        """Batch j's seed to draw, or its task to slash for an opening missed (``ready``: nothing holds that back)."""
        p, tasks = self.ctx.protocol, self.ctx.protocol.tasks
        b = p.batch(task, j)
        if b.status == BatchStatus.OPENED:  # a batch never leaves Opened: no duty of it is left
            self._done.add(("batch", f"{task}:{j}"))
        elif b.status == BatchStatus.COMMITTED and self._target_value(b.seedTarget, now)[0]:
            return self._act(
                "drawSeed",
                f"drawSeed:{task}:{j}",
                tasks.functions.drawSeed(task, j),
                f"drew the sample of task {task} batch {j} from {p.randomness.describe(b.seedTarget)}",
            )
        elif b.status == BatchStatus.DRAWN and now < b.windowEnd:
            self._drawn_until[(task, j)] = int(b.windowEnd)
        elif b.status == BatchStatus.DRAWN and ready:
            return self._act(
                "slashUnopened",
                f"slashUnopened:{task}:{j}",
                tasks.functions.slashUnopened(task, j),
                f"slashed task {task}: batch {j} was not opened in time",
            )
        return []

    def _commit_duties(self, head: Any) -> list[str]:
        tasks = self.ctx.protocol.tasks
        done = []
        for event in self._events_in_turn("ChallengeCommitted", "_first_commit", _commit_key):
            task, commitment, challenger = int(event.args["task"]), event.args["commitment"], event.args["challenger"]
            key = f"{challenger}:{commitment}"
            if ("commit", key) in self._done or not self._watched(task):
                continue
            raw = bytes.fromhex(commitment[2:])
            c = self.ctx.protocol.view(tasks, "getCommit", challenger, raw)
            if c.status == CommitStatus.JOINED:
                verdict = self.ctx.protocol.view(tasks, "getDispute", c.dispute).verdict
                if verdict == Verdict.VALID:  # a sound settlement paid its joined bonds out itself
                    self._done.add(("commit", key))
                elif verdict != Verdict.NONE:  # faulty, undecided or moot: the bond goes back to its owner
                    done += self._act(
                        "claimBond",
                        f"claim:{key}",
                        tasks.functions.claimBond(task, challenger, raw),
                        f"claimed a joined bond back for {challenger[:10]} (task {task})",
                    )
                continue
            if c.status != CommitStatus.PENDING:
                self._done.add(("commit", key))
                continue
            t, seq = self.ctx.protocol.task(task), c.seq
            if t.status not in LIVE:  # a commit is moot only once its task has ended
                # A requester's commit may lead from its first request's place, as expireChallenge judges it.
                requested = int(tasks.functions.firstRequestSeq(task, challenger).call())
                seq = min(seq, requested) if requested else seq
            if _moot(t, seq) or int(head["timestamp"]) >= int(event.args["revealBy"]):
                fn = tasks.functions.expireChallenge(task, challenger, raw)
                done += self._act(
                    "expireChallenge", f"expire:{key}", fn, f"expired an unrevealed challenge of task {task}"
                )
        return done

    def _request_duties(self, head: Any) -> list[str]:
        """Targeted openings: slash a task whose request was not opened in time; pay a request's bond out once
        its task has ended."""
        tasks = self.ctx.protocol.tasks
        done = []
        for event in self._events_in_turn("OpeningRequested", "_first_request", _request_key):
            task, k = int(event.args["task"]), int(event.args["k"])
            if ("request", f"{task}:{k}") in self._done or not self._watched(task):
                continue
            r = self.ctx.protocol.view(tasks, "getRequest", task, k)
            if r.status in (RequestStatus.NONE, RequestStatus.SETTLED):
                self._done.add(("request", f"{task}:{k}"))
                continue
            t = self.ctx.protocol.task(task)
            if t.status not in LIVE:
                done += self._act(
                    "settleRequest",
                    f"settleRequest:{task}:{k}",
                    tasks.functions.settleRequest(task, k),
                    f"paid out the bond of the request to open interval {k} of task {task}",
                )
            elif (
                r.status == RequestStatus.PENDING
                and int(head["timestamp"]) >= max(r.openBy, t.reopenedUntil)  # a reopened window holds it back too
                and t.pendingCommits == 0
                and t.openDisputes == 0
            ):
                fn = tasks.functions.slashUnopenedRequest(task, k)
                done += self._act(
                    "slashUnopenedRequest",
                    f"slashUnopenedRequest:{task}:{k}",
                    fn,
                    f"slashed task {task}: requested interval {k} was not opened in time",
                )
        return done

    def _dispute_duties(self, dispute: int, head: Any) -> list[str]:
        p, committee = self.ctx.protocol, self.ctx.protocol.committee
        d = p.dispute(dispute)
        if d.status == DisputeStatus.RESOLVED:
            if d.seatsSettled:
                self._done.add(("dispute", dispute))
                return []
            # Penalties taken, shares paid and seats released a page at a time (exits wait for their seats).
            return self._act(
                "settleSeats",
                f"settleSeats:{dispute}:{d.settledSeats}",
                committee.functions.settleSeats(dispute),
                f"settled seats of dispute {dispute} from seat {d.settledSeats}",
            )
        now = int(head["timestamp"])
        moot = p.tasks.functions.isMoot(dispute).call()
        if moot:
            return self._act(
                "resolve",
                f"resolve:{dispute}:moot",
                committee.functions.resolve(dispute),
                f"dispute {dispute} is moot: ended",
            )
        if d.status == DisputeStatus.AWAITING_PANEL:
            expired = now >= d.armedAt + self._param("maxDrawDelay")
            target = committee.functions.panelTarget(dispute).call()
            ready, value = (False, bytes(32)) if expired else self._target_value(target, now)
            if not expired and not ready:
                return []
            tries_left = d.tries < TRIES_PER_SEAT * panel_size(self._param("panelSize"), d.round)
            gone = value == bytes(32)  # ready with no value: the target is gone, the round re-arms
            if tries_left and not expired and not gone:
                return self._act(
                    "drawPanel",
                    f"drawPanel:{dispute}:{d.round}:{d.armBlock}:{d.tries}",
                    committee.functions.drawPanel(dispute),
                    f"drew the panel of dispute {dispute} (round {d.round}) from {p.randomness.describe(target)}",
                )
            return self._act(
                "rearm",
                f"rearm:{dispute}:{d.round}:{d.armBlock}",
                committee.functions.rearm(dispute),
                f"re-armed the draw of dispute {dispute} (round {d.round})",
            )
        if d.status == DisputeStatus.APPEALABLE and now >= d.decidedAt + self._param("appealWindow"):
            return self._act(
                "resolve",
                f"resolve-run:{dispute}:{d.decidedRun}:decided",
                committee.functions.resolve(dispute),
                f"dispute {dispute}: round {d.round}'s verdict stands, unappealed",
            )
        reveal_end = d.drawnAt + self._param("commitWindow") + self._param("revealWindow")
        if d.status == DisputeStatus.VOTING and now >= reveal_end:
            # Keyed by run: a voided run is drawn again in the same round, and its resolve is a new transaction
            # (keyed by round, the keeper found the first run's receipt and sent nothing: review 18 of v3); a key of
            # its own, which no round-keyed one in a journal from before can shadow (review 20)
            return self._act(
                "resolve",
                f"resolve-run:{dispute}:{d.run}",
                committee.functions.resolve(dispute),
                f"resolved round {d.round} of dispute {dispute}",
            )
        return []

    # --- randomness ----------------------------------------------------------------------------

    def _target_value(self, target: int, now: int) -> tuple[bool, bytes]:
        """``target``'s (ready, value) on-chain; a drand round published by ``now`` (chain time) is submitted
        first, from the first relay whose signature the contract accepts."""
        source = self.ctx.protocol.randomness
        ready, value = source.value(target)
        if ready:
            return ready, value
        if source.network is None or now < source.network.round_time(target) or "submitRound" not in self.duties:
            return ready, value  # a block mines by itself; a round nobody has published yet cannot be fetched
        for signature in self.ctx.beacon.signatures(target):
            encoded = for_contract(signature)
            if encoded is None:
                continue
            fn = source.contract.functions.submitRound(target, encoded)
            key = f"submitRound:{source.contract.address}:{target}"
            if self._act("submitRound", key, fn, f"submitted drand round {target} (verified)"):
                break
        return source.value(target)  # submitted now, or by another keeper meanwhile

    # --- helpers -------------------------------------------------------------------------------

    def _act(self, duty: str, key: str, fn: Any, message: str) -> list[str]:
        if duty not in self.duties:
            return []
        if self._tried and time.monotonic() >= self._until:  # the rest after the node's own work
            raise _TickOver
        self._tried = True
        try:
            self.ctx.client.transact(f"keeper:{key}", fn, keep=gas_reserve(self.ctx))
        except ContractReverted:
            return []  # another keeper was first, or the chain moved on since the check
        except FundsShort as exc:
            if not self._short:
                self.ctx.say(f"keeper duties wait: {exc}", style="yellow")
                self._short = True
            raise _TickOver from None
        self._short = False
        self.ctx.say(message, style="cyan")
        self._did.append(key)
        return [key]

    def _param(self, name: str) -> int:
        if not self._params:
            p = self.ctx.protocol
            self._params = {
                "commitWindow": p.committee.functions.COMMIT_WINDOW().call(),
                "revealWindow": p.committee.functions.REVEAL_WINDOW().call(),
                "maxDrawDelay": p.committee.functions.MAX_DRAW_DELAY().call(),
                "appealWindow": p.committee.functions.APPEAL_WINDOW().call(),
                "panelSize": p.committee.functions.PANEL_SIZE().call(),
            }
        return self._params[name]


def _commit_key(event: Any) -> tuple[str, str]:
    return ("commit", f"{event.args['challenger']}:{event.args['commitment']}")


def _request_key(event: Any) -> tuple[str, str]:
    return ("request", f"{event.args['task']}:{event.args['k']}")


def _moot(task: Any, seq: int) -> bool:
    """Whether a pending commit with sequence number ``seq`` can no longer change the task's outcome (so anyone
    may expire it, refunded): the task ended, and it was not made before a slash's waiting lead's commit."""
    return task.status not in LIVE and not (0 < seq < task.waitingLeadSeq)
