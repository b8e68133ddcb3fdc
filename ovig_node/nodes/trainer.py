"""The trainer (provider) node: accept a task, train it with evidence, commit, open, get paid.

One loop, re-deriving what to do from the chain and the disk on every pass, so a killed trainer
restarted with the same command carries on: training resumes from the last evidence on disk, every
transaction goes through the journal (never sent twice), pins are idempotent.

    Posted     preflight (spec and terms agree; replay interval 0; windows fit) -> acceptTask
    Accepted   pin the owner's files (serving them is the provider's duty from here); train in a
               background thread; commit each batch once its evidence is complete
    Drawn      pin the sample's start and end evidence and an opening manifest -> openBatch
    Requested  a watcher asked for an unsampled interval (protocol 8.3): pin it likewise -> openRequested
    Closed     a batch's request window closed: delete evidence the retention rule lets go (protocol 2.4)
    Disputed   a round found faulty an interval it trained honestly: appeal it, within --appeal-budget
               (nobody else may: a round-0 panel of sybils would slash an honest provider); a trainer
               running a demonstration's attack appeals nothing
    ended      delete the rest the retention rule lets go; withdraw credits
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovig_node.attacks import Attack
from ovig_node.chain.contracts import BatchStatus, RequestStatus, TaskStatus
from ovig_node.chain.reverts import ContractReverted
from ovig_node.errors import OvigError
from ovig_node.files import file_sha256
from ovig_node.nodes.appealing import DEFAULT_APPEAL_BUDGET, AppealBudget, appeal_faulty_rounds
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.fetching import FetchedTask, TaskRefused, fetch_task
from ovig_node.nodes.isolation import Isolation
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.looping import chain_clock, keep_running
from ovig_node.nodes.node_state import NodeState
from ovig_node.nodes.payouts import withdraw_credits
from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.manifest import ManifestRow, batch_manifest, encode_stats
from ovig_node.protocol.merkle import MerkleTree, leaf_hash
from ovig_node.protocol.retention import retained
from ovig_node.storage.unixfs import cid_of_bytes
from ovig_node.training import distributed
from ovig_node.training.evidence import read_evidence, read_statistics
from ovig_node.training.exact import LogError, LogTooLong, decode_log
from ovig_node.training.execution import PROFILES, ExecutionProfile, get_profile, one_process
from ovig_node.training.loop import StepInfo, TrainRun, evidence_path, train
from ovig_node.verify.exact import numerics_problem
from ovig_node.verify.report import verify_interval

ENDED = (TaskStatus.FINALIZED, TaskStatus.SLASHED, TaskStatus.ABANDONED, TaskStatus.CANCELLED)
# The commit deadline must leave this many times the run's training time (interval 0's, timed in the preflight,
# times the intervals): the commits, seed draws and openings between batches take time of their own.
DEADLINE_SAFETY = 1.5
# Openings one openBatch carries: about 60 KB of calldata at the deepest batch (256 intervals), half of the 128 KiB
# nodes relay (review 16 of v3: a whole sample of 157 or more in one transaction was never relayed, and the
# provider slashed).
OPENINGS_PER_TX = 64
# The second profile of a boundary-mode preflight when the boundary names no other known one.
FALLBACK_PROFILES = ("reference", "threads2")


class TrainerStopped(OvigError, RuntimeError):
    """The trainer cannot go on with this task (refused, taken by another provider, training failed)."""


@dataclass
class TrainerNode:
    ctx: NodeContext
    task: int
    profile_name: str = "reference"
    attack: Attack | None = None
    keeper: Keeper | None = None
    poll_seconds: float = 1.0
    appeal_budget: AppealBudget = DEFAULT_APPEAL_BUDGET
    _fetched: FetchedTask | None = None
    _appeal_done: set[str] = field(default_factory=set)  # "dispute:round" FAULTY rounds settled (appealed or not)
    _isolation: Isolation = field(init=False)  # each appeal on its own
    _thread: threading.Thread | None = None
    _failure: BaseException | None = None
    _digests: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # before any bond is posted: train() would refuse it only once the task is accepted
        distributed.refuse_sharded_attack(get_profile(self.profile_name), self.attack)
        self._isolation = Isolation(self.ctx.say)

    @property
    def folder(self) -> Path:
        return self.ctx.home / f"task-{self.task}"

    @functools.cached_property
    def state(self) -> NodeState:
        return NodeState(self.folder / "trainer.json")

    def run(self) -> TaskStatus:
        """Work until the task has ended and every credit is withdrawn; return its final status."""
        final: list[TaskStatus] = []

        def step() -> bool:
            status = self.step()
            if status in ENDED:
                final.append(status)
            return bool(final)

        keep_running(
            self.ctx,
            step,
            keeper=self.keeper,
            poll_seconds=self.poll_seconds,
            fatal=(TrainerStopped, TaskRefused),
            missed=self.missed,
        )
        return final[0]

    def missed(self, since: int, now: int) -> list[str]:
        """Its duties whose window closed in the chain times (since, now] undone: an opening, a requested
        opening, the commit deadline (said after an outage: each lets anyone end the task against it)."""
        t = self.ctx.protocol.task(self.task)
        if t.provider != self.ctx.address or t.status not in (
            TaskStatus.ACCEPTED,
            TaskStatus.COMMITTED,
            TaskStatus.SLASHED,
            TaskStatus.ABANDONED,
        ):
            return []
        lines = []
        for j in range(t.committedBatches):
            b = self.ctx.protocol.batch(self.task, j)
            if b.status == BatchStatus.DRAWN and since < int(b.windowEnd) <= now:
                lines.append(
                    f"task {self.task}: batch {j}'s opening window closed at {chain_clock(b.windowEnd)} "
                    "before it was opened: anyone may have the task slashed"
                )
        for event in self.ctx.scanner.events("OpeningRequested", task=self.task):
            k = int(event.args["k"])
            r = self.ctx.protocol.view(self.ctx.protocol.tasks, "getRequest", self.task, k)
            if r.status == RequestStatus.PENDING and since < int(r.openBy) <= now:
                lines.append(
                    f"task {self.task}: the requested opening of interval {k} was due at "
                    f"{chain_clock(r.openBy)}: anyone may have the task slashed"
                )
        unfinished = t.status != TaskStatus.SLASHED and t.committedBatches < t.batchCount
        if unfinished and since < int(t.terms.deadline) <= now:
            left = t.batchCount - t.committedBatches
            lines.append(
                f"task {self.task}: its commit deadline passed at {chain_clock(t.terms.deadline)} with "
                f"{left} batches uncommitted: the owner may abandon it"
            )
        return lines

    def step(self) -> TaskStatus:
        """One pass: do whatever the task's state calls for; return its status."""
        if self._failure is not None:
            raise TrainerStopped(f"task {self.task}: training failed: {self._failure}") from self._failure
        t = self.ctx.protocol.task(self.task)
        if t.status == TaskStatus.NONE:
            raise TrainerStopped(f"there is no task {self.task} on this chain")
        if t.status != TaskStatus.POSTED and t.provider != self.ctx.address and not self.state.get("preflight"):
            status = TaskStatus(t.status).name.lower()
            raise TrainerStopped(f"task {self.task} is {status}; its provider is {t.provider}, not this account")
        if t.status == TaskStatus.POSTED:
            self._accept(t)
        elif t.status in (TaskStatus.ACCEPTED, TaskStatus.COMMITTED):
            if t.provider != self.ctx.address:
                raise TrainerStopped(f"task {self.task} was accepted by another provider ({t.provider})")
            self._train_in_background()
            self._commit_ready_batches(t)
            self._open_drawn_batches(t)
            self._open_requested()
            if self.attack is None:  # a demonstration's cheat appeals nothing: its fakes spill past its intervals
                state, budget, done = self.state, self.appeal_budget, self._appeal_done
                appeal_faulty_rounds(self.ctx, state, self.task, budget, done, self._isolation)  # never raises
            self._serve_owner_files()  # after the duties with a deadline: a failure here never holds them up
            self._let_go_of_evidence(t)
        elif t.status in ENDED:
            self._finish(TaskStatus(t.status))
        return TaskStatus(t.status)

    # --- posted: preflight and accept ----------------------------------------------------------

    def _accept(self, t: Any) -> None:
        fetched = self._task_files()
        if not self.state.get("preflight"):
            self.state.set("preflight", self._preflight(fetched))
        self.ctx.client.transact(
            f"accept:{self.task}", self.ctx.protocol.tasks.functions.acceptTask(self.task), value=t.terms.providerBond
        )
        self.ctx.say(f"accepted task {self.task} with a bond of {t.terms.providerBond / 1e18:g} ETH")

    def _preflight(self, fetched: FetchedTask) -> dict[str, Any]:
        """Train interval 0, replay it on this machine, judge it against the task's boundary (exact mode: check
        the numerics hold this machine's discrepancy, then reproduce it bit for bit), and check the windows
        leave time for this machine's replays (protocol 6)."""
        work = self.folder / "preflight"
        numerics = fetched.prepared.spec.numerics
        # a watcher replays in one process, whatever the provider's world size; in exact mode under a second
        # profile too (its own reproduces its claim whatever the thresholds: another one tests them)
        replayers = [one_process(get_profile(self.profile_name))]
        if numerics is None and fetched.boundary is not None:
            # and under another profile, one the boundary says honest replays ran under where it names one: its
            # own profile reproduces its claim whatever the bounds, so an owner's boundary too narrow for any other
            # machine's drift (every bound 0) would pass, and the auditors' replays slash the honest provider
            # (review 12 of v3)
            replayers.append(second_profile(replayers[0], fetched.boundary.profiles))
        if numerics is not None:
            replayers.append(get_profile("micro2" if replayers[0].name == "micro3" else "micro3"))
            try:
                problem = numerics_problem(fetched.prepared, replayers[1:])
            except (ValueError, LogTooLong) as exc:  # a model exact mode cannot round (LogError is a ValueError)
                raise TaskRefused(f"task {self.task}: its exact numerics cannot be measured here: {exc}") from None
            if problem is not None:
                raise TaskRefused(f"task {self.task}: {problem}: honest replays elsewhere could differ")
        run = TrainRun(
            fetched.prepared.spec,
            fetched.prepared.spec_hash,
            fetched.prepared.dataset_path,
            fetched.prepared.init_path,
            work,
            get_profile(self.profile_name),
            self.task,
        )
        started = time.monotonic()
        try:
            train(run, stop_at=fetched.prepared.spec.layout.end_step(0))
        except (LogTooLong, LogError, distributed.RankFailed) as exc:  # not accepted yet: refused, not retried
            raise TaskRefused(f"task {self.task}: interval 0 cannot be trained here: {exc}") from None
        train_seconds = time.monotonic() - started
        if numerics is not None:
            _check_log_room(self.task, work, numerics.max_log_entries)
        judged_by = "is not reproduced bit for bit" if numerics is not None else "fails the boundary"
        slowest = 0.0  # the slowest of this machine's replays: any of them may be the one a dispute waits for
        for replayer in replayers:
            report = verify_interval(fetched.prepared, work, 0, fetched.boundary, profile=replayer, task=self.task)
            if report["verdict"] != "valid":
                raise TaskRefused(
                    f"task {self.task}: a replay of interval 0 under {replayer.name} on this machine "
                    f"{judged_by} ({report.get('reason')}): its claims would be challenged"
                )
            slowest = max(slowest, report["seconds"]["replay"])
        calibrated = fetched.boundary.replay_seconds_max if fetched.boundary is not None else 0.0
        layout = fetched.prepared.spec.layout
        room = self.ctx.room_to_act(self.poll_seconds)
        check_windows(self.task, fetched.terms.windows, max(slowest, calibrated), train_seconds, room, layout)
        left = int(fetched.terms.deadline) - int(self.ctx.now())
        check_deadline(self.task, left, layout.intervals, train_seconds, layout.batches, room)
        if fetched.terms.replaySeconds < slowest:
            declared = fetched.terms.replaySeconds
            raise TaskRefused(
                f"task {self.task}: it declares replays of {declared}s, this machine's took "
                f"{slowest:.1f}s: its disputes could stall"
            )
        judged = "bit for bit" if fetched.boundary is None else "within the boundary"
        self.ctx.say(f"preflight of task {self.task}: interval 0 replays {judged} ({slowest:.1f}s)")
        return {"verdict": "valid", "replay_seconds": slowest, "train_seconds": train_seconds}

    # --- accepted: train, commit, open ---------------------------------------------------------

    def _task_files(self) -> FetchedTask:
        if self._fetched is None:
            self._fetched = fetch_task(self.ctx, self.task, self.folder / "files")
        return self._fetched

    def _run(self) -> TrainRun:
        prepared = self._task_files().prepared
        return TrainRun(
            prepared.spec,
            prepared.spec_hash,
            prepared.dataset_path,
            prepared.init_path,
            self.folder,
            get_profile(self.profile_name),
            self.task,
            self.attack,
        )

    def _train_in_background(self) -> None:
        layout = self._task_files().prepared.spec.layout
        if self._thread is not None or self._evidence_count() == layout.intervals:
            return

        def work() -> None:
            try:
                train(self._run(), on_step=self._progress())
            except BaseException as exc:
                self._failure = exc

        self._thread = threading.Thread(target=work, name=f"train-{self.task}", daemon=True)
        self._thread.start()
        self.ctx.say(f"training task {self.task}" + (f" [red](attack: {self.attack.name})[/]" if self.attack else ""))

    def _progress(self) -> Callable[[StepInfo], None]:
        """One line a batch trained: the step, the batch's mean loss, and when the run should end."""
        layout = self._task_files().prepared.spec.layout
        started, losses = time.monotonic(), []
        first: list[int] = []  # the first step this run trains (a resumed run starts past 0)

        def on_step(info: StepInfo) -> None:
            losses.append(info.loss)
            first[:1] = first[:1] or [info.step]
            k = info.interval_done
            if k is None or ((k + 1) % layout.intervals_per_batch and k != layout.intervals - 1):
                return  # not the last interval of a batch
            done, left = info.step + 1 - first[0], layout.total_steps - info.step - 1
            eta = (time.monotonic() - started) / done * left
            mean = sum(losses) / len(losses)
            step = f"step {info.step + 1}/{layout.total_steps}"
            self.ctx.say(
                f"task {self.task}: batch {layout.batch_of(k)} trained ({step}, loss {mean:.4f}, "
                f"about {eta:.0f} s to go)"
            )
            losses.clear()

        return on_step

    def _evidence_count(self) -> int:
        """How many intervals have evidence (files appear atomically, in order); digests cached."""
        layout = self._task_files().prepared.spec.layout
        known = self.state.get("digests", {})
        k = len(known)
        while k < layout.intervals and evidence_path(self.folder, k).is_file():
            known[str(k)] = file_sha256(evidence_path(self.folder, k))
            k += 1
        if len(known) != len(self.state.get("digests", {})):
            self.state.set("digests", known)
        return k

    def _digest(self, k: int) -> bytes:
        return bytes.fromhex(self.state.get("digests")[str(k)])

    def _commit_ready_batches(self, t: Any) -> None:
        layout = self._task_files().prepared.spec.layout
        done = self._evidence_count()
        for j in range(t.committedBatches, layout.batches):
            intervals = layout.batch_intervals(j)
            if done < intervals.stop:
                return
            tree = self._tree(j)
            # the statistics of every interval, so a watcher can judge the ones it never replays
            stats = {k: read_statistics(evidence_path(self.folder, k), layout.steps(k)) for k in intervals}
            rows = [ManifestRow(k, layout.end_step(k), self._digest(k), encode_stats(stats[k])) for k in intervals]
            manifest = batch_manifest(self.task, j, layout, rows)
            cid = self.ctx.ipfs.add_bytes(manifest, name="manifest.json").cid
            fn = self.ctx.protocol.tasks.functions.commitBatch(self.task, j, tree.root, cid)
            self.ctx.client.transact(f"commit:{self.task}:{j}", fn)
            self.ctx.say(f"committed batch {j} of task {self.task} (root 0x{tree.root.hex()[:12]}…)")

    def _tree(self, j: int) -> MerkleTree:
        layout = self._task_files().prepared.spec.layout
        leaves = [leaf_hash(self.task, k, layout.end_step(k), self._digest(k)) for k in layout.batch_intervals(j)]
        return MerkleTree.build(leaves)

    def _open_drawn_batches(self, t: Any) -> None:
        """Open every drawn batch's sample: in transactions of at most OPENINGS_PER_TX openings, each mined before
        the next is signed (its gas estimate then sees the openings before it), skipping those already opened."""
        tasks = self.ctx.protocol.tasks
        m = self._task_files().prepared.spec.layout.intervals_per_batch
        for j in range(t.committedBatches):
            b = self.ctx.protocol.batch(self.task, j)
            if b.status != BatchStatus.DRAWN:
                continue
            sampled = self.ctx.protocol.sampled(self.task, j)
            files = self._pin_files(sampled)
            manifest = {"version": 1, "task": self.task, "batch": j, "files": files}
            cid = self.ctx.ipfs.add_bytes(json.dumps(manifest, sort_keys=True).encode(), name="opening.json").cid
            left = [k for k in sampled if not (int(b.openedBitmap) >> (k - j * m)) & 1]
            for i in range(0, len(left), OPENINGS_PER_TX):
                chunk = left[i : i + OPENINGS_PER_TX]
                key = f"open:{self.task}:{j}" if len(sampled) <= OPENINGS_PER_TX else f"open:{self.task}:{j}:{chunk[0]}"
                fn = tasks.functions.openBatch(self.task, j, cid, [self._opening(k) for k in chunk])
                self.ctx.client.transact(key, fn)
            self.ctx.say(f"opened batch {j} of task {self.task}: intervals {list(sampled)}")

    def _open_requested(self) -> None:
        """Open every interval a watcher requested (an unopened request slashes the task as an unopened batch
        would), each with an opening manifest of its own: earliest deadline first, every opening sent before any is
        awaited, so a burst of requests costs one block's wait, not one each (review 12 of v3: sybils requesting in
        one block could outrun an opening window one confirmation at a time)."""
        tasks = self.ctx.protocol.tasks
        self.ctx.scanner.poll()
        requested = self.ctx.scanner.events("OpeningRequested", task=self.task)
        now = self.ctx.now() if requested else 0  # no chain read on the common pass, with nothing requested
        due = []
        for event in requested:
            k = int(event.args["k"])
            r = self.ctx.protocol.view(tasks, "getRequest", self.task, k)
            if r.status != RequestStatus.PENDING or now >= int(r.openBy):
                continue  # opened, or too late: the request slashes the task, and nothing here changes that
            due.append((int(r.openBy), k, event.args["requester"]))
        sent = []
        for _, k, requester in sorted(due):
            files = self._pin_files([k])
            manifest = {"version": 1, "task": self.task, "requested": k, "files": files}
            cid = self.ctx.ipfs.add_bytes(json.dumps(manifest, sort_keys=True).encode(), name="opening.json").cid
            fn = tasks.functions.openRequested(self.task, cid, self._opening(k))
            key = f"openRequested:{self.task}:{k}"
            try:
                self.ctx.client.submit(key, fn)
            except ContractReverted as exc:  # one refused opening must not keep the others (and keeping) back
                self.ctx.say(f"task {self.task}: opening requested interval {k} was refused: {exc}", style="red")
                continue
            sent.append((k, requester, key, fn))
        for k, requester, key, fn in sent:
            try:
                self.ctx.client.transact(key, fn)
            except ContractReverted as exc:
                self.ctx.say(f"task {self.task}: opening requested interval {k} was refused: {exc}", style="red")
                continue
            self.ctx.say(f"opened interval {k} of task {self.task}, as {requester[:10]} requested")

    def _pin_files(self, sampled: list[int]) -> dict[str, str]:
        """Pins E_k and E_{k-1} of every sampled k (and the deliverable once trained): digest -> CID."""
        layout = self._task_files().prepared.spec.layout
        needed = {k for k in sampled} | {k - 1 for k in sampled if k > 0}
        if self._evidence_count() == layout.intervals:
            needed.add(layout.intervals - 1)
        cids = self.state.get("cids", {})
        files = {}
        for k in sorted(needed):
            digest = self._digest(k).hex()
            if digest not in cids:
                cids[digest] = self._publish(k, digest)
                self.state.set("cids", cids)
            files[digest] = cids[digest]
        return files

    def _publish(self, k: int, digest: str) -> str:
        """Pin E_k (or what an attack publishes in its place) and return the CID the manifest lists."""
        path = evidence_path(self.folder, k)
        published = path if self.attack is None else self.attack.publish(k, path, self.folder / "published")
        if published is None:  # a CID of content this node never adds: nobody can fetch it
            return str(cid_of_bytes(f"withheld E_{k} {digest}".encode()))
        return self.ctx.ipfs.add_file(published).cid

    def _opening(self, k: int) -> tuple[Any, ...]:
        layout = self._task_files().prepared.spec.layout
        m = layout.intervals_per_batch
        end = (k, layout.end_step(k), self._digest(k), self._tree(k // m).proof(k % m))
        if k == 0:
            return (*end, 0, b"\x00" * 32, [])
        return (*end, layout.end_step(k - 1), self._digest(k - 1), self._tree((k - 1) // m).proof((k - 1) % m))

    def _serve_owner_files(self) -> None:
        """Pin the owner's files (spec, dataset, initial checkpoint, boundary) on this node's IPFS: from acceptance
        on, the provider answers for every file a replay needs (protocol 2.4), so an owner who unpins its own
        files after honest training cannot have panelists find them unavailable and the provider slashed."""
        if self.state.get("owner_files_pinned"):
            return
        prepared = self._task_files().prepared
        spec = prepared.spec
        posted = self.ctx.scanner.events("TaskPosted", task=self.task)
        if not posted:
            return  # not indexed yet: a later pass
        files = [
            (prepared.spec_path, str(posted[0].args["specCID"])),
            (prepared.dataset_path, spec.dataset.cid),
            (prepared.init_path, spec.init.cid),
        ]
        if spec.boundary is not None:
            files.append((prepared.spec_path.parent / "boundary.json", spec.boundary.cid))
        for path, cid in files:
            # Added from the copies it checked against the chain: the same CIDs, and no network fetch, when the
            # owner used the default import; otherwise the owner's own DAG is pinned by its CID (a ninth review:
            # pinning what re-adding gave served a CID nobody asks for). Its blocks are in this node's store
            # since the walk that fetched them.
            if self.ctx.ipfs.add_file(path).cid != cid:
                self.ctx.ipfs.pin(cid)
        self.state.set("owner_files_pinned", True)

    def _let_go_of_evidence(self, t: Any) -> None:
        """Delete the evidence the retention rule (protocol 2.4) lets go once a batch's request window closes.
        Only after training: a resumed run reads E_0, E_1, ... in order from the disk."""
        layout = self._task_files().prepared.spec.layout
        if (self._thread is not None and self._thread.is_alive()) or self._evidence_count() < layout.intervals:
            return
        closed = set(self.state.get("closed_batches", []))
        indexed = None
        for j in range(t.committedBatches):
            if j in closed:
                continue
            b = self.ctx.protocol.batch(self.task, j)
            if b.status != BatchStatus.OPENED:
                continue
            if indexed is None:
                indexed = self._indexed_time()
            # Closed only once the event index holds a block at or past the window's end: every request made
            # in time (in a block before windowEnd) is then indexed, and its files are kept.
            if indexed >= int(b.windowEnd):
                closed.add(j)
        if len(closed) != len(self.state.get("closed_batches", [])):
            self.state.set("closed_batches", sorted(closed))
            self._delete_evidence(closed)

    # --- ended ---------------------------------------------------------------------------------

    def _finish(self, status: TaskStatus) -> None:
        if self._thread is not None:
            self._thread.join()
        if self.state.get("finished"):
            return
        paid = withdraw_credits(self.ctx, self.state)
        self.ctx.say(f"task {self.task} {status.name.lower()}; the provider was paid {paid / 1e18:g} ETH")
        self._delete_evidence(range(self._task_files().prepared.spec.layout.batches))  # every window is over
        self.state.set("finished", True)

    def _indexed_time(self) -> int:
        """The timestamp of the last block the event index has read (it reads confirmed blocks only)."""
        self.ctx.scanner.poll()
        cursor = self.ctx.scanner.cursor
        return int(self.ctx.client.retry(lambda: self.ctx.client.w3.eth.get_block(cursor))["timestamp"])

    def _delete_evidence(self, closed_batches: set[int] | range) -> None:
        """Delete every evidence file the retention rule (protocol 2.4) no longer asks this node to keep."""
        layout = self._task_files().prepared.spec.layout
        self.ctx.scanner.poll()  # a trainer restarted after the task ended has not indexed its last requests
        opened = [int(e.args["k"]) for e in self.ctx.scanner.events("OpeningRequested", task=self.task)]
        for j in range(layout.batches):
            opened += self.ctx.protocol.sampled(self.task, j)
        keep = retained(layout, opened, closed_batches)
        for k in range(layout.intervals):
            path = evidence_path(self.folder, k)
            if k not in keep and path.is_file():
                path.unlink()


# An exact task's log cap, against its first interval's log: later intervals log a few percent more (calibration
# sets the cap at 4x), and a provider over the cap cannot commit after accepting, which costs it its bond
LOG_ROOM = 2


def _check_log_room(task: int, work: Path, cap: int) -> None:
    """Refuse an exact task whose rounding-log cap leaves less than LOG_ROOM times interval 0's log."""
    entries = len(decode_log(read_evidence(evidence_path(work, 0)).rounding, cap))
    if cap < LOG_ROOM * entries:
        raise TaskRefused(
            f"task {task}: its rounding log may hold {cap} entries an interval, and interval 0 "
            f"alone logged {entries}: later intervals could exceed it"
        )


def check_windows(task: int, windows: Any, replay: float, train_seconds: float, room: float, layout: Layout) -> None:
    """Refuse a task whose windows this machine cannot act in: a challenge window no longer than its ``replay``; an
    opening window shorter than an interval's training (one may be under way when a draw comes) plus ``room``
    seconds (:meth:`NodeContext.room_to_act`) for each opening transaction of a whole batch (every interval is
    sampled when a batch's randomness is gone; OPENINGS_PER_TX a transaction). Anyone may draw the moment it can,
    and the provider that opens late is slashed (review 16 of v3: an owner's window of seconds on a chain of 12 s
    blocks slashed the provider that accepted it)."""
    if windows.challengeWindow <= replay or windows.openingWindow <= train_seconds:
        raise TaskRefused(
            f"task {task}: windows too short for this machine (replay {replay:.1f}s, "
            f"interval {train_seconds:.1f}s, windows {windows})"
        )
    sends = -(-layout.intervals_per_batch // OPENINGS_PER_TX)
    if windows.openingWindow < train_seconds + sends * room:
        raise TaskRefused(
            f"task {task}: its opening window of {windows.openingWindow}s leaves no time to open a sample: an "
            f"interval trains in {train_seconds:.1f}s here, and each of {sends} opening transactions takes "
            f"{room:.0f}s to be mined on this chain"
        )


def check_deadline(task: int, left: int, intervals: int, train_seconds: float, batches: int, room: float) -> None:
    """Refuse a task whose commit deadline, ``left`` seconds away, cannot be met at ``train_seconds`` an interval
    and ``room`` seconds to get each of its ``batches`` commits mined: the owner would abandon it and take the
    provider bond (reviews 12 and 16 of v3)."""
    needed = intervals * train_seconds * DEADLINE_SAFETY + batches * room
    if left < needed:
        raise TaskRefused(
            f"task {task}: its commit deadline is {left}s away; {intervals} intervals at this machine's "
            f"{train_seconds:.1f}s each and {batches} commits at {room:.0f}s each need {needed:.0f}s"
        )


def second_profile(own: ExecutionProfile, named: list[str]) -> ExecutionProfile:
    """A one-process profile on ``own``'s device other than ``own`` for the preflight's second replay: the first of
    the boundary's ``named`` ones this node knows, else a fixed one."""
    for name in [*named, *FALLBACK_PROFILES, "cuda", "cuda-tf32"]:
        profile = PROFILES.get(name)
        if profile is not None and name != own.name and profile.world_size == 1 and profile.device == own.device:
            return profile
    raise TaskRefused(f"no second {own.device} profile to replay the preflight under")
