"""The node tests' system (tests/test_nodes.py, tests/test_nodes_judging.py): a real devnet (anvil + IPFS) with the
contracts deployed and a boundary calibrated as the demo calibrates, nodes started as separate processes, and the
helpers the tests read the chain and the nodes' state with. Two files, so that `make test`'s two workers each take
one: each builds its own system once (about a minute), and together they take half the time one file did.

The windows follow the work: a busy machine (other jobs on the cores) starts, trains and replays slowly, and fixed
windows made nodes miss them. So the system measures, as it starts, how long a node process takes to start (what
every node does first: import torch and the node), and stretches every window, wait and committee clock by that pace
(``OVIG_TEST_PACE`` sets it).

The windows are long, so that a busy machine still makes them, and the tests need not sit them out: ``hurry`` moves
the devnet's clock to the end of the next window once everything that window is for has happened (every vote
committed, every ballot revealed, every sampled interval judged), as if the window had passed with nothing more to
do. Only time nodes would spend idle is skipped: a node that has not done its part yet holds the clock back."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ovig_node.chain.accounts import devnet_account
from ovig_node.chain.contracts import DisputeStatus, TaskStatus, Verdict, Vote
from ovig_node.devnet.manager import Devnet
from ovig_node.nodes.context import Connection, NodeContext, open_node
from ovig_node.nodes.demo import CALIBRATION_PROFILES, calibrate_boundary, node_command
from ovig_node.nodes.demo import PROFILES as DEMO_PROFILES
from ovig_node.nodes.keeper import DUTIES as KEEPER_DUTIES
from ovig_node.nodes.owner import Terms
from ovig_node.protocol.spec import parse_spec
from ovig_node.training.taskfiles import attach_boundary, prepare_task
from support import deployed_devnet, warp

ETHER = 10**18
SPEC = {"total_steps": 100, "stride": 10, "intervals_per_batch": 5, "sample_bps": 4000, "batch_size": 32}
DELIVERABLE = 9  # K - 1
# By devnet account: the demo's (trainers 1 and 2, watchers 3 and 7, auditors 4-6), and a second honest trainer
# that trains data-parallel on two processes (ddp2), judged by the watcher's one-process replays.
PROFILES = {**DEMO_PROFILES, 9: "ddp2"}
WATCHER_PROFILES = PROFILES[3]
# A node process's start (interpreter, torch, the node modules) takes about 4.5 s on an idle core of the machine the
# windows were set on; each further PACE_STEP_SECONDS of it stretches every window once more, up to MAX_PACE times.
PACE_STEP_SECONDS = 7.5
MAX_PACE = 4
# The pace of the system this process built (each pytest worker builds its own): read by terms() and wait_for().
PACE = 1


def measured_pace() -> int:
    """How many times the windows stretch on this machine now (``OVIG_TEST_PACE``, or measured: one node start)."""
    if given := os.environ.get("OVIG_TEST_PACE"):
        return max(1, int(given))
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import ovig_node.nodes.watcher, ovig_node.nodes.trainer"], check=True)
    seconds = time.monotonic() - started
    pace = max(1, min(MAX_PACE, math.ceil(seconds / PACE_STEP_SECONDS)))
    print(f"node tests: a node starts in {seconds:.1f} s here now, so their windows run at pace {pace}")
    return pace


@dataclass
class System:
    net: Devnet
    spec: Path
    boundary: Path
    folder: Path
    pace: int

    def node(self, role: str, index: int) -> NodeContext:
        connection = Connection(devnet_dir=self.net.data_dir, use_devnet=True, account_index=index)
        console = Console(file=(self.folder / f"{role}-{index}.out").open("a"), width=120)
        return open_node(role, self.folder / "nodes" / f"{role}-{index}-inproc", connection, console=console)

    def start(self, role: str, index: int, *extra: str) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{role}-{index}.log").open("ab")
        argv = node_command(role, index, self.folder / "nodes" / f"{role}-{index}", PROFILES[index], *extra)
        if role == "auditor":  # three of them, idle but for their votes: a pass every 2 s leaves CPU to the rest
            argv += ["--poll", "2"]
        # The tests folder on the path: a trainer may load a plugin attack from it (hostile_attack).
        path = os.pathsep.join([str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])])
        env = {**os.environ, "OVIG_DEVNET_DIR": str(self.net.data_dir), "PYTHONPATH": path}
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)

    def log(self, role: str, index: int) -> str:
        return (self.folder / f"{role}-{index}.log").read_text()

    def state(self, role: str, index: int) -> dict[str, Any]:
        """The persisted state of the ``role`` process of account ``index``."""
        return json.loads((self.folder / "nodes" / f"{role}-{index}" / f"{role}.json").read_text())


def build_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    global PACE
    folder = tmp_path_factory.mktemp("nodes")
    PACE = measured_pace()
    with deployed_devnet(folder, pace=PACE) as net:
        prepared = prepare_task("vision", folder / "task", tiny=True, **SPEC)
        boundary = calibrate_boundary(prepared, CALIBRATION_PROFILES, 4, folder / "calibration")  # as the demo does
        (folder / "task" / "boundary.json").write_text(boundary.model_dump_json())
        attach_boundary(prepared.spec_path, folder / "task" / "boundary.json")
        yield System(net, prepared.spec_path, folder / "task" / "boundary.json", folder, PACE)


def wait_for(condition: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """``condition``'s first true value, looked for every 0.5 s for ``timeout`` seconds times the pace."""
    deadline = time.monotonic() + timeout * PACE
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what} ({timeout * PACE:.0f} s at pace {PACE})")


def terms(**windows: int) -> Terms:
    """The tests' task terms, each window (given or default) stretched by the pace."""
    w = {"opening_window": 60, "challenge_window": 20, "reveal_window": 30, **windows}
    w = {name: seconds * PACE for name, seconds in w.items()}
    # Replays declared at the devnet committee's maximum: a busy machine's replay must not refuse the task.
    return Terms(
        2 * ETHER,
        3 * ETHER,
        ETHER // 10,
        w["opening_window"],
        w["challenge_window"],
        w["reveal_window"],
        deadline_in=1200 * PACE,
        replay_seconds=15,
    )


def wait_for_auditors(owner: NodeContext) -> None:
    """Until auditors 4, 5 and 6 have staked: a panel drawn before would seat no one."""
    committee = owner.protocol.committee
    wait_for(
        lambda: all(owner.protocol.view(committee, "getAuditor", devnet_account(i).address).stake for i in (4, 5, 6)),
        timeout=120,
        what="auditors to register",
    )


def stop(*processes: subprocess.Popen[bytes]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=30)


def events(ctx: NodeContext, name: str, **match: Any) -> list[Any]:
    ctx.scanner.poll()
    return ctx.scanner.events(name, **match)


def sampled(ctx: NodeContext, task: int) -> set[int]:
    """The intervals sampled in every opened batch of ``task``."""
    return {k for e in events(ctx, "BatchOpened", task=task) for k in ctx.protocol.sampled(task, int(e.args["j"]))}


def owner_cids(ctx: NodeContext, task: int) -> list[str]:
    """The CIDs of a task's spec, dataset, initial checkpoint and boundary, as its owner posted them."""
    [posted] = events(ctx, "TaskPosted", task=task)
    spec, _ = parse_spec(ctx.ipfs.cat_bytes(posted.args["specCID"], max_bytes=1 << 20))
    assert spec.boundary is not None
    return [posted.args["specCID"], spec.dataset.cid, spec.init.cid, spec.boundary.cid]


def report(ctx: NodeContext, cid: str) -> dict[str, Any]:
    """A replay report a node pinned."""
    return json.loads(ctx.ipfs.cat_bytes(cid, max_bytes=1 << 20))


def reverted_protocol_transactions(ctx: NodeContext, accounts: list[str]) -> list[str]:
    """Transactions of ``accounts`` that reverted on-chain, except keeper duties (nodes race for those
    by design: the loser's transaction reverts, which costs gas and nothing else)."""
    bad = []
    w3 = ctx.client.w3
    for number in range(w3.eth.block_number + 1):
        for tx in w3.eth.get_block(number, full_transactions=True)["transactions"]:
            if tx["from"] in accounts and w3.eth.get_transaction_receipt(tx["hash"])["status"] != 1:
                contract = ctx.protocol.tasks if tx["to"] == ctx.protocol.tasks.address else ctx.protocol.committee
                name = contract.decode_function_input(tx["input"])[0].fn_name
                if name not in KEEPER_DUTIES:  # the keeper's own list of calls anyone may make
                    bad.append(f"{tx['from']} {name}")
    return bad


# --- the clock: windows skipped once nothing is left to do in them ------------------------------------------------


def skip_to(ctx: NodeContext, moment: int) -> None:
    """The devnet's clock moved forward to ``moment`` (chain seconds) when it is behind, and a block mined there.
    Nodes judge every window by chain time, and the devnet's beacon follows the chain's time when it is ahead."""
    w3 = ctx.client.w3
    if (ahead := moment - int(w3.eth.get_block("latest")["timestamp"])) > 0:
        warp(w3, ahead)


class Clock:
    """Skips what is left of the next window to close, among the windows of ``tasks`` and of their disputes, once
    nothing is left to do in any of them:

    - ``done(ctx)`` holds (``ctx``: the clock's own, its thread's): the test's word that every interval it
      expects judged was judged, and its attestation or its challenge is on the chain (``watched``);
    - the chain holds, for each task, no challenge commit to reveal, no requested opening to make, no drawn batch
      to open;
    - each dispute of theirs is voting and every panelist of its run has committed its verdict (its auditor's state
      holds a ballot that is no longer the provisional abstention, and the chain, since the run's draw, every commit
      that ballot took), or is past its commit window and every panelist of its run has revealed, or was decided
      faulty by every panelist of the deciding run on a task of ``cheats`` (a provider running an attack appeals
      nothing, where an honest one appeals every faulty round on its task; a panelist appeals a round decided
      against its ballot), or is resolved.

    A task not accepted yet, a dispute waiting for its panel, or one whose panelists are not all the test's
    auditors, holds the clock."""

    def __init__(
        self,
        system: System,
        tasks: set[int],
        done: Callable[[NodeContext], bool],
        *,
        cheats: set[int],
        commit_windows: bool,
        stopped: threading.Event,
    ) -> None:
        self.system, self.tasks, self.done, self.cheats = system, tasks, done, cheats
        self.commit_windows, self.stopped = commit_windows, stopped
        self.auditors = {devnet_account(i).address: i for i in (4, 5, 6)}
        self.ctx: NodeContext  # opened in the clock's thread

    def tick(self) -> None:
        """One look: skip to the next window's end if nothing is left to do before it."""
        ctx = self.ctx
        ctx.scanner.poll()
        now = int(ctx.client.w3.eth.get_block("latest")["timestamp"])
        ends: list[tuple[int, str]] = []  # (end, what) of every window still open
        for task in self.tasks:
            t = ctx.protocol.task(task)
            if t.status == TaskStatus.POSTED:
                return
            if t.status not in (TaskStatus.ACCEPTED, TaskStatus.COMMITTED):
                continue
            if t.pendingCommits or t.unopenedRequests or t.openedBatches != t.committedBatches:
                return
            ends += [(int(t.challengeEnd), f"task {task}'s challenge windows")] if t.challengeEnd > now else []
            for j in range(int(t.committedBatches)):
                if (end := int(ctx.protocol.batch(task, j).windowEnd)) > now:
                    ends.append((end, f"task {task} batch {j}'s window"))
        disputes = {
            int(e.args["dispute"]) for task in self.tasks for e in ctx.scanner.events("DisputeOpened", task=task)
        }
        for dispute in sorted(disputes):
            window = self._dispute_window(dispute, now)
            if window is None:
                return  # a dispute in a phase that holds the clock
            if window:
                ends.append(window)
        if not ends or not self.done(ctx) or self.stopped.is_set():
            return
        end, what = min(ends)
        skip_to(ctx, end)
        ctx.say(f"skipped the last {end - now} s of {what}")

    def _dispute_window(self, dispute: int, now: int) -> tuple[int, str] | tuple[()] | None:
        """The end of ``dispute``'s current window, if everything due in it was done; () if it has none (resolved);
        None if it holds the clock."""
        ctx = self.ctx
        d = ctx.protocol.dispute(dispute)
        if d.status == DisputeStatus.RESOLVED:
            return ()
        if d.status not in (DisputeStatus.VOTING, DisputeStatus.APPEALABLE):
            return None
        drawn = [e for e in ctx.scanner.events("PanelDrawn", dispute=dispute) if e.args["run"] == d.run]
        if not drawn or any(p not in self.auditors for p in drawn[0].args["panel"]):
            return None
        panel, since = set(drawn[0].args["panel"]), drawn[0].block_number

        def of_this_run(name: str) -> list[Any]:
            """The run's events: a round drawn again (a silent run) seats the same auditors, under the same round."""
            return [e for e in ctx.scanner.events(name, dispute=dispute, round=d.round) if e.block_number >= since]

        revealed = {e.args["panelist"]: e.args["vote"] for e in of_this_run("VoteRevealed")}
        if d.status == DisputeStatus.APPEALABLE:
            [decided] = of_this_run("RoundDecided")
            unanimous = set(revealed) == panel and set(revealed.values()) == {Vote.FAULTY}
            if decided.args["outcome"] == Verdict.FAULTY and unanimous and int(d.task) in self.cheats:
                return int(decided.args["appealUntil"]), f"dispute {dispute}'s appeal window"
            return None
        commit_end, reveal_end = drawn[0].args["commitEnd"], drawn[0].args["revealEnd"]
        if now < commit_end:
            commits = [e.args["panelist"] for e in of_this_run("VoteCommitted")]
            for panelist in panel:
                votes = self.system.state("auditor", self.auditors[panelist]).get("votes", {})
                ballot = votes.get(f"{dispute}:{d.run}")
                if not self.commit_windows or ballot is None or ballot.get("provisional"):
                    return None
                if commits.count(panelist) < 1 + len(ballot.get("replaced", [])):
                    return None
            return commit_end, f"dispute {dispute}'s commit window"
        if now < reveal_end and set(revealed) == panel:
            return reveal_end, f"dispute {dispute}'s reveal window"
        return None


@contextmanager
def hurry(
    system: System,
    tasks: set[int],
    done: Callable[[NodeContext], bool],
    *,
    cheats: frozenset[int] = frozenset(),
    commit_windows: bool = True,
) -> Iterator[Clock]:
    """``Clock`` looking every second, in a thread (its own connection: SQLite's are one thread's), while the block
    runs. ``cheats``: the tasks whose provider runs an attack. ``commit_windows=False``: a dispute's vote commit
    window is waited out (a test that kills a panelist between its commit and its reveal)."""
    stopped = threading.Event()
    clock = Clock(system, tasks, done, cheats=set(cheats), commit_windows=commit_windows, stopped=stopped)

    def run() -> None:
        connection = Connection(devnet_dir=system.net.data_dir, use_devnet=True, account_index=0)
        console = Console(file=(system.folder / "clock.out").open("a"), width=120)
        clock.ctx = open_node("owner", system.folder / "nodes" / "clock", connection, console=console)
        try:
            while not stopped.wait(1.0):
                try:
                    clock.tick()
                except Exception as exc:  # an auditor's state not written yet, the devnet down for a test: again
                    clock.ctx.say(f"{type(exc).__name__}: {exc}")
        finally:
            clock.ctx.close()

    thread = threading.Thread(target=run, name="clock", daemon=True)
    thread.start()
    try:
        yield clock
    finally:
        stopped.set()
        thread.join(timeout=30)


def until_ended(system: System, owner: NodeContext, ended: dict[int, TaskStatus], *, cheat: int, what: str) -> None:
    """Until each task of ``ended`` has its status (600 s at pace 1), the clock skipping the idle end of each window
    once watcher 3 has judged every sampled interval of each (``watched``). ``cheat``: the task whose provider
    runs an attack."""

    def done(ctx: NodeContext) -> bool:
        return all(watched(ctx, system, task, 3) for task in ended)

    with hurry(system, set(ended), done, cheats=frozenset({cheat})):
        wait_for(lambda: all(owner.protocol.task(t).status == s for t, s in ended.items()), timeout=600, what=what)


def watched(ctx: NodeContext, system: System, task: int, watcher: int, *, expect: set[int] | None = None) -> bool:
    """Whether every batch of ``task`` is opened and watcher ``watcher`` has judged each of ``expect`` (default: the
    sampled intervals), with each verdict on the chain while the task is live: a valid or indeterminate one attested,
    a faulty one's latest challenge revealed (or given up: a challenge made again after a no-decision is a new one)."""
    ctx.scanner.poll()
    t = ctx.protocol.task(task)
    live = t.status in (TaskStatus.ACCEPTED, TaskStatus.COMMITTED)
    if live and t.openedBatches != t.batchCount:
        return False
    state = system.state("watcher", watcher)
    judged, challenges = state.get("judged", {}), state.get("challenges", {})
    address = devnet_account(watcher).address
    attested = {int(e.args["k"]) for e in ctx.scanner.events("Attested", task=task, watcher=address)}
    for k in sampled(ctx, task) if expect is None else expect:
        verdict = judged.get(f"{task}:{k}", {}).get("verdict")
        challenge = challenges.get(f"{task}:{k}", {})
        if verdict is None:
            return False
        settled = "revealed_block" in challenge or "failed" in challenge
        attests = verdict in ("valid", "indeterminate")
        if live and not ((attests and k in attested) or (verdict == "faulty" and settled)):
            return False
    return True
