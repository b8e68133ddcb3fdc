"""The nodes on a real devnet (anvil + IPFS) with real training: a withholding provider slashed by a
keeper, an IPFS outage survived, nodes killed at the worst moments and restarted, an exact task judged by
bytes, a fake the sample missed found by its statistics and opened on request, a clear RPC error.

Every node runs its own execution profile, the demo's (``PROFILES``), so each honest interval a watcher
replays drifts from its claim and passes through the boundary, not by bit-identity. The tests assert
verdicts and state transitions, never how large the drift is: that depends on the CPU's rounding."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ovig_node.chain.accounts import devnet_account, write_keystore
from ovig_node.chain.contracts import TaskStatus, Verdict
from ovig_node.devnet.manager import Devnet
from ovig_node.devnet.processes import free_port
from ovig_node.files import file_sha256
from ovig_node.nodes.attesting import attestations, domain_of
from ovig_node.nodes.context import Connection, NodeContext, open_node
from ovig_node.nodes.demo import ALPHA, CALIBRATION_PROFILES, node_command
from ovig_node.nodes.demo import PROFILES as DEMO_PROFILES
from ovig_node.nodes.keeper import DUTIES as KEEPER_DUTIES
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.looping import chain_clock
from ovig_node.nodes.owner import PostingError, Terms, post_task, task_status
from ovig_node.nodes.trainer import TrainerNode
from ovig_node.nodes.watcher import WatcherNode
from ovig_node.protocol.attestation import Attestation, AttestedVerdict, from_document, sign, verified
from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.manifest import encode_stats
from ovig_node.protocol.retention import retained
from ovig_node.protocol.spec import parse_spec
from ovig_node.training.evidence import read_statistics
from ovig_node.training.execution import get_profile, host_cpu
from ovig_node.training.loop import evidence_path
from ovig_node.training.statistics import STATISTICS
from ovig_node.training.taskfiles import attach_boundary, attach_numerics, prepare_task
from ovig_node.verify.boundary import calibrate, spread_positions
from ovig_node.verify.statistics_judge import Reference
from support import EXACT_NUMERICS, deployed_devnet, run_ovig

ETHER = 10**18
SPEC = {"total_steps": 100, "stride": 10, "intervals_per_batch": 5, "sample_bps": 4000, "batch_size": 32}
DELIVERABLE = 9  # K - 1
# By devnet account: the demo's (trainers 1 and 2, watchers 3 and 7, auditors 4-6), and a second honest trainer
# that trains data-parallel on two processes (ddp2), judged by the watcher's one-process replays.
PROFILES = {**DEMO_PROFILES, 9: "ddp2"}
WATCHER_PROFILES = PROFILES[3]


@dataclass
class System:
    net: Devnet
    spec: Path
    boundary: Path
    folder: Path

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


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    folder = tmp_path_factory.mktemp("nodes")
    with deployed_devnet(folder) as net:
        prepared = prepare_task("vision", folder / "task", tiny=True, **SPEC)
        # As the demo calibrates: reference claims replayed under its calibration profiles, at intervals spread
        # over the run (drift grows as training goes on: the first intervals alone under-cover the last).
        positions = spread_positions(prepared.spec.layout.intervals, 4)
        boundary = calibrate(
            prepared,
            claim_profile=get_profile("reference"),
            replay_profiles=[get_profile(p) for p in CALIBRATION_PROFILES],
            positions=positions,
            alpha=ALPHA,
            work_dir=folder / "calibration",
        )
        (folder / "task" / "boundary.json").write_text(boundary.model_dump_json())
        attach_boundary(prepared.spec_path, folder / "task" / "boundary.json")
        yield System(net, prepared.spec_path, folder / "task" / "boundary.json", folder)


def wait_for(condition: Callable[[], Any], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def terms(**windows: int) -> Terms:
    w = {"opening_window": 60, "challenge_window": 20, "reveal_window": 30, **windows}
    # Replays declared at the devnet committee's maximum: a busy machine's replay must not refuse the task.
    return Terms(
        2 * ETHER,
        3 * ETHER,
        ETHER // 10,
        w["opening_window"],
        w["challenge_window"],
        w["reveal_window"],
        deadline_in=1200,
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


# --- a provider that withholds its opening -------------------------------------------------------


def test_withholding_provider_is_slashed_by_a_keeper(system: System) -> None:
    owner, provider, keeper_node = system.node("owner", 0), system.node("trainer", 7), system.node("keeper", 8)
    task = post_task(owner, system.spec, system.boundary, terms(opening_window=4))
    tasks = provider.protocol.tasks.functions
    provider.client.transact("accept", tasks.acceptTask(task), value=3 * ETHER)
    provider.client.transact("commit:0", tasks.commitBatch(task, 0, b"\x01" * 32, "bafy-never-opened"))
    keeper = Keeper(keeper_node, only_tasks=frozenset({task}))

    def slashed() -> bool:
        keeper.tick()  # draws the seed once due, then slashes once the opening window has passed
        return owner.protocol.task(task).status == TaskStatus.SLASHED

    wait_for(slashed, timeout=60, what="the slash")
    keeper_share = 3 * ETHER * 1_000 // 10_000
    assert tasks.credits(keeper_node.address).call() == keeper_share
    assert tasks.credits(owner.address).call() == 2 * ETHER + 3 * ETHER - keeper_share
    [slashed] = events(owner, "TaskSlashed", task=task)
    assert (slashed.args["j"], slashed.args["by"], slashed.args["dispute"]) == (0, keeper_node.address, 0)
    # A provider node back from an outage across the opening window's close says so (issue 46)
    end = int(owner.protocol.batch(task, 0).windowEnd)
    trainer = TrainerNode(provider, task)
    assert trainer.missed(end - 1, end) == [
        f"task {task}: batch 0's opening window closed at {chain_clock(end)} "
        "before it was opened: anyone may have the task slashed"
    ]
    assert trainer.missed(end, end + 3600) == []
    # The owner's status says what each payout is for (issue 46)
    assert [(c["account"], c["amount"], c["for"]) for c in task_status(owner, task).credits] == [
        (
            owner.address,
            2 * ETHER + 3 * ETHER - keeper_share,
            "reward and the owner's share of the slashed provider bond",
        ),
        (keeper_node.address, keeper_share, "keeper's share of the provider bond: it reported an opening not made"),
    ]


# --- outages ------------------------------------------------------------------------------------


def test_every_node_rides_out_an_ipfs_and_an_rpc_outage(system: System) -> None:
    """Issue 46: a trainer, a watcher, three auditors and a keeper run an honest task while the IPFS node stops
    (after the first commit) and then the whole devnet (anvil, IPFS and the beacon: `ovig devnet down`) for
    longer than the RPC client's own retries last (about 8 s); anvil comes back on the same state. No node
    exits: each says once that an endpoint went and once that it is back, and the task finalizes as it would
    have, every batch opened, the provider paid."""
    owner = system.node("owner", 0)
    keeper_home = system.folder / "nodes" / "keeper-8"
    keeper_log = (system.folder / "keeper-8.log").open("ab")
    env = {**os.environ, "OVIG_DEVNET_DIR": str(system.net.data_dir)}
    nodes = {("auditor", i): system.start("auditor", i) for i in (4, 5, 6)}
    nodes["watcher", 3] = system.start("watcher", 3)
    nodes["keeper", 8] = subprocess.Popen(
        [sys.executable, "-m", "ovig_node", "keeper", "--account", "8", "--home", str(keeper_home)],
        stdout=keeper_log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        wait_for_auditors(owner)
        # Windows long enough (in chain time, which runs on while anvil is down) that none closes meanwhile
        task = post_task(owner, system.spec, system.boundary, terms(opening_window=120, challenge_window=90))
        nodes["trainer", 1] = system.start("trainer", 1, "--task", str(task))
        wait_for(lambda: events(owner, "BatchCommitted", task=task), timeout=120, what="the first commit")
        assert system.net.stop_ipfs()
        # Its next pin (the opening of batch 0, or batch 1's manifest if the opening beat the outage) fails
        # and is retried: wait for that rather than for a fixed time, which a fast opening could outrun.
        met = lambda: "is unavailable" in system.log("trainer", 1)  # noqa: E731
        wait_for(met, timeout=120, what="the trainer meeting the IPFS outage")
        time.sleep(2)  # and a retry or two during it
        system.net.start_ipfs()
        wait_for(lambda: events(owner, "BatchOpened", task=task), timeout=120, what="the first opening")
        system.net.down()
        time.sleep(15)
        assert all(process.poll() is None for process in nodes.values()), "a node exited during the outage"
        system.net.up()
        wait_for(lambda: owner.protocol.task(task).status == TaskStatus.FINALIZED, timeout=300, what="finalize")
        assert nodes["trainer", 1].wait(timeout=60) == 0
        assert all(process.poll() is None for key, process in nodes.items() if key[0] != "trainer")
    finally:
        stop(*nodes.values())
    for role, index in nodes:
        log = (system.folder / f"{role}-{index}.log").read_text()
        assert "Traceback" not in log, f"{role} {index}"
        went = [line for line in log.splitlines() if "is unavailable (" in line]
        back = [line for line in log.splitlines() if "is back after" in line]
        # one line when an endpoint went, one when it came back: at least the RPC outage, each one closed
        assert any("RPC endpoint" in line for line in went), f"{role} {index}: {went}"
        assert len(went) == len(back), f"{role} {index}: {went} {back}"
    trainer_log = system.log("trainer", 1)
    assert "IPFS node at" in trainer_log.split("RPC endpoint")[0]  # the IPFS outage came first
    assert len(events(owner, "BatchOpened", task=task)) == 2
    [withdrawn] = [e for e in events(owner, "Withdrawn") if e.args["account"] == devnet_account(1).address]
    assert withdrawn.args["amount"] == 2 * ETHER + 3 * ETHER
    # The owner takes the model home (issue 46): the deliverable checked against the chain, as a state dict
    out = system.folder / "fetched"
    fetch = ("owner", "fetch", str(task), "--out", str(out), "--account", "0", "--home", str(system.folder / "o"))
    fetched = run_ovig(*fetch, env={"OVIG_DEVNET_DIR": str(system.net.data_dir)})
    assert fetched.returncode == 0, fetched.stderr
    provenance = json.loads((out / "provenance.json").read_text())
    kept = evidence_path(system.folder / "nodes" / "trainer-1" / f"task-{task}", DELIVERABLE)
    assert (provenance["task"], provenance["status"], provenance["written_as"]) == (task, "finalized", "state dict")
    assert provenance["deliverable"]["sha256"] == file_sha256(kept)
    assert (out / "model.safetensors").is_file()
    again = run_ovig(*fetch, env={"OVIG_DEVNET_DIR": str(system.net.data_dir)})
    assert again.returncode == 2 and "--out" in again.stderr and "is not empty" in again.stderr


# --- kills and restarts --------------------------------------------------------------------------


def test_nodes_killed_at_the_worst_moments_finish_the_job(system: System) -> None:
    """The trainer is killed between a commit and its opening, the watcher right as it starts
    replaying, an auditor between its vote commit and reveal; each restarts with the same command and
    the cheat is still slashed, with every protocol transaction sent exactly once. Every node on its own
    profile: the cheat's honest intervals drift on the watcher's and pass, its cheated one fails on both
    of the watcher's profiles and on both of each auditor's."""
    owner = system.node("owner", 0)
    auditors = {i: system.start("auditor", i) for i in (4, 5, 6)}
    watcher = system.start("watcher", 3)
    trainer = None
    try:
        wait_for_auditors(owner)
        # A challenge window that covers a watcher restart (torch import, resume) plus its replays.
        task = post_task(owner, system.spec, system.boundary, terms(challenge_window=90))
        cheat = ("--task", str(task), "--attack", "micro_batch_drop", "--attack-intervals", str(DELIVERABLE))
        trainer = system.start("trainer", 2, *cheat)

        wait_for(lambda: events(owner, "BatchCommitted", task=task), timeout=150, what="the first commit")
        trainer.send_signal(signal.SIGKILL)
        trainer.wait()
        trainer = system.start("trainer", 2, *cheat)

        wait_for(lambda: events(owner, "BatchOpened", task=task), timeout=120, what="the first opening")
        time.sleep(1.5)
        watcher.send_signal(signal.SIGKILL)
        watcher.wait()
        watcher = system.start("watcher", 3)

        # Killed once its verdict is committed (a second commit, replacing its provisional abstention), before the
        # reveal: killed after the abstention alone, a restart on a busy machine could miss the commit window and
        # reveal the abstention (a test of the machine's speed, not of the restart).
        def verdict_committed() -> str | None:
            panelists = [e.args["panelist"] for e in events(owner, "VoteCommitted")]
            return next((p for p in panelists if panelists.count(p) >= 2), None)

        voted = wait_for(verdict_committed, timeout=180, what="a verdict's vote commit")
        victim = next(i for i in (4, 5, 6) if devnet_account(i).address == voted)
        auditors[victim].send_signal(signal.SIGKILL)
        auditors[victim].wait()
        auditors[victim] = system.start("auditor", victim)

        wait_for(lambda: owner.protocol.task(task).status == TaskStatus.SLASHED, timeout=180, what="the slash")
        # A keeper duty pulls the lead's joined bond back (claimBond) after the faulty settlement, another
        # settles the dispute's seats (the committee pays the panel's share).
        wait_for(lambda: owner.protocol.task(task).heldBonds == 0, timeout=60, what="the joined bond claimed back")
        [opened] = events(owner, "DisputeOpened", task=task)
        wait_for(
            lambda: owner.protocol.dispute(opened.args["dispute"]).seatsSettled,
            timeout=60,
            what="the dispute's seats settled",
        )
    finally:
        stop(*auditors.values(), watcher, *([trainer] if trainer else []))
    [dispute] = events(owner, "DisputeOpened", task=task)
    assert dispute.args["k"] == DELIVERABLE
    assert owner.protocol.dispute(dispute.args["dispute"]).verdict == Verdict.FAULTY
    assert sorted(e.args["panelist"] for e in events(owner, "VoteRevealed")) == sorted(
        devnet_account(i).address for i in (4, 5, 6)
    )
    assert [e.args["j"] for e in events(owner, "BatchCommitted", task=task)] == [0, 1]
    assert sorted(e.args["j"] for e in events(owner, "BatchOpened", task=task)) == [0, 1]
    assert len(events(owner, "ChallengeCommitted", task=task)) == 1
    judged = {
        int(key.split(":")[1]): v
        for key, v in system.state("watcher", 3)["judged"].items()
        if key.split(":")[0] == str(task)
    }
    assert set(judged) == sampled(owner, task)
    verdicts = {k: (v["verdict"], v["reason"]) for k, v in judged.items()}
    assert verdicts == {**dict.fromkeys(judged, ("valid", "within_bounds")), DELIVERABLE: ("faulty", "out_of_bounds")}
    watcher_profiles = WATCHER_PROFILES.split(",")
    for k, v in judged.items():  # the first replay on the watcher's own profile; a rejection confirmed on its second
        assert report(owner, v["report"])["replays"] == watcher_profiles[: 2 if k == DELIVERABLE else 1]
    for i in (4, 5, 6):
        [vote] = system.state("auditor", i)["votes"].values()
        assert report(owner, vote["report"])["replays"] == PROFILES[i].split(",")
    nodes = [devnet_account(i).address for i in (2, 3, 4, 5, 6)]
    assert reverted_protocol_transactions(owner, nodes) == []
    # Every payout of a faulty verdict (protocol 4.2), to the wei.
    bond, reward, challenger_bond = 3 * ETHER, 2 * ETHER, ETHER // 10
    credited: dict[str, int] = {}
    for e in events(owner, "Credited", source=task):
        if e.contract == "TrainingTasks":
            credited[e.args["account"]] = credited.get(e.args["account"], 0) + e.args["amount"]
    panel = bond * 1_000 // 10_000  # handed to the committee in one sum, which pays each seat
    assert credited == {
        owner.address: reward + bond * 7_000 // 10_000,
        devnet_account(3).address: bond * 2_000 // 10_000 + challenger_bond,
        owner.protocol.committee.address: panel,
    }
    seats = [e for e in events(owner, "Credited", source=dispute.args["dispute"]) if e.contract == "AuditCommittee"]
    assert sorted((e.args["account"], e.args["amount"]) for e in seats) == sorted(
        (devnet_account(i).address, panel // 3) for i in (4, 5, 6)
    )
    assert events(owner, "Penalized") == []


# --- a hostile provider beside an honest one ----------------------------------------------------


def test_a_hostile_provider_is_slashed_whatever_its_files_hold_while_an_honest_task_finalizes(system: System) -> None:
    """Issue 16's hostile-provider suite. Every interval of the hostile task is sampled; its provider's opening
    lists, for E_1, E_2 and E_3, a CID nobody serves, a file padded past what the spec's evidence can be and
    one cut in half (``hostile_attack.FILE_KINDS``), and its E_5 to E_9 each lack an optimizer tensor (a
    replay that loaded one unchecked raised). The watcher judges each hostile interval faulty with the
    reason its files earn (the end file is fetched first, so interval 4 fails on its corrupt start E_3) and
    challenges; the auditors' panels find the task's intervals faulty and it is slashed.
    Meanwhile the same watcher judges every sampled interval of an honest task, trained data-parallel on two
    ranks (ddp2), valid and that task finalizes."""
    owner = system.node("owner", 0)
    all_sampled = prepare_task("vision", system.folder / "all-sampled", tiny=True, **{**SPEC, "sample_bps": 10_000})
    attach_boundary(all_sampled.spec_path, system.boundary)
    auditors = {i: system.start("auditor", i) for i in (4, 5, 6)}
    watcher = system.start("watcher", 3)
    trainers: list[subprocess.Popen[bytes]] = []
    try:
        wait_for_auditors(owner)
        hostile = post_task(owner, all_sampled.spec_path, system.boundary, terms(challenge_window=150))
        honest = post_task(owner, system.spec, system.boundary, terms(challenge_window=150, reveal_window=31))
        # The owner unpins its files the moment it has posted (protocol 2.4: serving them is the provider's
        # duty once it accepts): the trainers pin them again, or nothing here would keep them.
        owner_files = owner_cids(owner, honest)
        assert all(owner.ipfs.unpin(cid) for cid in owner_files)
        attack = ("--attack", "hostile_attack:hostile_files", "--attack-intervals", "5,6,7,8,9")
        trainers = [
            system.start("trainer", 1, "--task", str(hostile), *attack),
            system.start("trainer", 9, "--task", str(honest)),
        ]
        ended = {hostile: TaskStatus.SLASHED, honest: TaskStatus.FINALIZED}
        wait_for(
            lambda: all(owner.protocol.task(t).status == s for t, s in ended.items()),
            timeout=600,
            what="the hostile task slashed and the honest one finalized",
        )
        assert trainers[1].wait(timeout=120) == 0  # paid, and its evidence let go of as the task ended
    finally:
        stop(*auditors.values(), watcher, *trainers)
    judged = system.state("watcher", 3)["judged"]
    verdicts = {
        int(key.split(":")[1]): (v["verdict"], v["reason"])
        for key, v in judged.items()
        if key.split(":")[0] == str(hostile)
    }
    valid = ("valid", "within_bounds")
    assert verdicts == {
        0: valid,
        1: ("faulty", "missing"),
        2: ("faulty", "oversized"),
        3: ("faulty", "corrupt"),
        4: ("faulty", "corrupt"),
        **dict.fromkeys(range(5, 10), ("faulty", "wrong_structure")),
    }
    honest_keys = {f"{honest}:{k}" for k in sampled(owner, honest)}
    assert {(judged[key]["verdict"], judged[key]["reason"]) for key in honest_keys} == {valid}
    # Each batch manifest carries the statistics of every step of every interval, as its E_k holds them
    # (the trainer keeps the sampled intervals' files and the deliverable once the task ends).
    kept = system.folder / "nodes" / "trainer-9" / f"task-{honest}"
    rows = {
        row["k"]: row
        for e in events(owner, "BatchCommitted", task=honest)
        for row in report(owner, e.args["manifestCID"])["intervals"]
    }
    assert sorted(rows) == list(range(10))
    steps = SPEC["stride"]
    assert all(
        {name: len(base64.b64decode(value)) for name, value in row["stats"].items()}
        == dict.fromkeys(STATISTICS, 4 * steps)
        for row in rows.values()
    )
    on_disk = [k for k in rows if evidence_path(kept, k).is_file()]
    # Retention once the task has ended: the sampled intervals' start and end files and the deliverable
    assert set(on_disk) == retained(Layout(100, 10, 5), sampled(owner, honest), range(2)) >= {9}
    assert all(owner.ipfs.is_pinned(cid) for cid in owner_files)
    for k in on_disk:
        assert rows[k]["stats"] == encode_stats(read_statistics(evidence_path(kept, k), steps))
        assert rows[k]["digest"] == file_sha256(evidence_path(kept, k))
    revealed = {e.args["k"] for e in events(owner, "ChallengeRevealed", task=hostile)}
    assert revealed and revealed <= set(range(1, 10))  # the watcher challenged only what it judged faulty
    assert not events(owner, "ChallengeCommitted", task=honest)
    [slash] = events(owner, "TaskSlashed", task=hostile)
    assert slash.args["by"] == devnet_account(3).address
    assert owner.protocol.dispute(slash.args["dispute"]).verdict == Verdict.FAULTY


def test_an_exact_task_is_judged_by_bytes_on_chain(system: System) -> None:
    """An exact task (numerics, no boundary) through the whole system. The owner posts it without a boundary
    (and cannot without declaring its replay seconds: nothing measured them). The honest provider's sampled
    intervals replay bit for bit under the watcher's profile, which is not the provider's, and the task
    finalizes; a provider that drops micro-batches in the deliverable is not reproduced, challenged, found
    faulty by the panel (each auditor on its own profiles) and slashed."""
    owner = system.node("owner", 0)
    exact = attach_numerics(
        prepare_task("vision", system.folder / "exact", tiny=True, **SPEC).spec_path, EXACT_NUMERICS
    )
    with pytest.raises(PostingError, match="is exact: no boundary measured its replays"):
        post_task(owner, exact.spec_path, None, replace(terms(), replay_seconds=None))
    with pytest.raises(PostingError, match="is exact: bytes judge it, so it takes no boundary"):
        post_task(owner, exact.spec_path, system.boundary, terms())
    auditors = [system.start("auditor", i) for i in (4, 5, 6)]
    watcher = system.start("watcher", 3)
    trainers: list[subprocess.Popen[bytes]] = []
    try:
        wait_for_auditors(owner)
        honest = post_task(owner, exact.spec_path, None, terms(challenge_window=150))
        cheated = post_task(owner, exact.spec_path, None, terms(challenge_window=150))
        trainers = [
            system.start("trainer", 1, "--task", str(honest)),
            system.start(
                "trainer",
                2,
                "--task",
                str(cheated),
                "--attack",
                "micro_batch_drop",
                "--attack-intervals",
                str(DELIVERABLE),
            ),
        ]
        ended = {honest: TaskStatus.FINALIZED, cheated: TaskStatus.SLASHED}
        wait_for(
            lambda: all(owner.protocol.task(t).status == s for t, s in ended.items()),
            timeout=600,
            what="the honest exact task finalized and the cheated one slashed",
        )
    finally:
        stop(*auditors, watcher, *trainers)
    judged = system.state("watcher", 3)["judged"]
    honest_keys = {f"{honest}:{k}" for k in sampled(owner, honest)}
    assert {(judged[key]["verdict"], judged[key]["reason"]) for key in honest_keys} == {("valid", "reproduced")}
    assert (judged[f"{cheated}:{DELIVERABLE}"]["verdict"], judged[f"{cheated}:{DELIVERABLE}"]["reason"]) == (
        "faulty",
        "out_of_bounds",
    )
    cheated_keys = {f"{cheated}:{k}" for k in sampled(owner, cheated) - {DELIVERABLE}}
    assert {judged[key]["reason"] for key in cheated_keys} <= {"reproduced"}  # the intervals before the drop
    assert not events(owner, "ChallengeCommitted", task=honest)
    [slash] = events(owner, "TaskSlashed", task=cheated)
    assert owner.protocol.dispute(slash.args["dispute"]).verdict == Verdict.FAULTY
    assert [e.args["k"] for e in events(owner, "ChallengeRevealed", task=cheated)] == [DELIVERABLE]


# --- layer one and targeted openings (issue 21) --------------------------------------------------


def test_a_fake_the_sample_missed_is_found_by_its_statistics_requested_opened_and_slashed(system: System) -> None:
    """A provider fakes interval 7 (data perturbation) where sampling cannot see it: at 20% a batch of five
    intervals samples one, and the last batch's is always the deliverable (protocol 3), so batch 1 opens only
    interval 9. The watcher holds the owner's reference run (the calibration's honest claims, `ovig calibrate
    --reference`): the statistics of interval 7 in the batch manifest jump away from it, so it requests 7 and
    its predecessor 6 with the challenger bond; the provider opens both (or would be slashed); the watcher
    judges 7 faulty on its replay and challenges it; the panel finds it faulty and the task is slashed, the
    requester leading. The requests' bonds come back to the watcher once the task has ended."""
    owner = system.node("owner", 0)
    prepared = prepare_task("vision", system.folder / "screened", tiny=True, **{**SPEC, "sample_bps": 2000})
    attach_boundary(prepared.spec_path, system.boundary)  # after calibration, as an owner does: specHash changes
    reference = Reference.from_claims(system.folder / "calibration", prepared.spec)
    reference_path = system.folder / "reference.json"
    reference_path.write_bytes(reference.to_json())
    faked = 7
    auditors = [system.start("auditor", i) for i in (4, 5, 6)]
    watcher = system.start("watcher", 3, "--reference", str(reference_path))
    trainer = None
    try:
        wait_for_auditors(owner)
        task = post_task(owner, prepared.spec_path, system.boundary, terms(challenge_window=150))
        trainer = system.start(
            "trainer", 1, "--task", str(task), "--attack", "data_perturbation", "--attack-intervals", str(faked)
        )
        wait_for(lambda: owner.protocol.task(task).status == TaskStatus.SLASHED, timeout=600, what="the slash")
        refunds = lambda: [e for e in events(owner, "RequestSettled", task=task) if e.args["refunded"]]  # noqa: E731
        wait_for(
            lambda: len(refunds()) == len(events(owner, "OpeningRequested", task=task)),
            timeout=120,
            what="the requests' bonds refunded by a keeper",
        )
    finally:
        stop(*auditors, watcher, *([trainer] if trainer else []))
    assert sampled(owner, task) & {5, 6, 7, 8} == set()  # the premise: only sampling's 0..4 picks and 9
    watcher_address = devnet_account(3).address
    requests = {int(e.args["k"]): e.args["requester"] for e in events(owner, "OpeningRequested", task=task)}
    assert {6, 7} <= set(requests) <= {5, 6, 7, 8} and set(requests.values()) == {watcher_address}
    screened = system.state("watcher", 3)["screened"]
    assert screened[f"{task}:1"]["requested"][:2] == [faked, faked - 1]  # the highest score first, then before it
    assert screened[f"{task}:0"]["requested"] == []  # the honest batch: nothing above the threshold
    said = [
        line for line in system.log("watcher", 3).splitlines() if f"task {task} batch " in line and "screened" in line
    ]
    assert len(said) == 2 and "requested none" in said[0] and f"requested [{faked}, {faked - 1}" in said[1], said
    assert {int(e.args["k"]) for e in events(owner, "RequestOpened", task=task)} == set(requests)
    judged = system.state("watcher", 3)["judged"]
    assert judged[f"{task}:{faked}"]["verdict"] == "faulty" and judged[f"{task}:{faked - 1}"]["verdict"] == "valid"
    [slash] = events(owner, "TaskSlashed", task=task)
    assert owner.protocol.dispute(slash.args["dispute"]).verdict == Verdict.FAULTY
    assert slash.args["by"] == watcher_address
    assert [e.args["k"] for e in events(owner, "ChallengeRevealed", task=task)] == [faked]
    assert {int(e.args["k"]) for e in refunds()} == set(requests)


def test_two_watchers_split_a_task_by_coverage_and_forged_attestations_count_for_nothing(system: System) -> None:
    """Watchers 3 and 7 trust each other (``--trust``): each replays the opened intervals the other has not
    attested, one per pass, its own share of each batch's sample first, and attests the ones it judged sound,
    so together they judge every sampled interval once, each exactly its share. Account 8 attacks the split:
    the moment each interval is opened it announces an attestation of it signed by another key (account 9's: a
    signature it holds is not its own) and a genuine one of its own, which neither watcher trusts; nobody can
    announce in a watcher's name (``attest`` names its sender). Neither watcher skips anything for them; the
    owner's reading keeps each watcher's genuine attestations and account 8's own, never the one signed by a
    key that did not send it; every pinned document checks on its own.
    """
    owner, forger = system.node("owner", 0), system.node("watcher", 8)
    a_ctx, b_ctx = system.node("watcher", 3), system.node("watcher", 7)
    a = WatcherNode(a_ctx, profile_name=PROFILES[3], trusted=frozenset({b_ctx.address}))
    b = WatcherNode(b_ctx, profile_name=PROFILES[7], trusted=frozenset({a_ctx.address}))
    task = post_task(owner, system.spec, system.boundary, terms(challenge_window=90))
    trainer = system.start("trainer", 1, "--task", str(task))
    domain = domain_of(forger)
    forged: set[int] = set()

    def forge_the_new_openings() -> None:
        for event in events(forger, "IntervalOpened", task=task):
            k = int(event.args["k"])
            if k in forged:
                continue
            end = bytes.fromhex(str(event.args["endDigest"]).removeprefix("0x"))
            attestation = Attestation(task, k, end, int(AttestedVerdict.SOUND), "QmNotAReplay", "forged")
            for key in (devnet_account(9), forger.client.account):  # not its own key, then its own
                signature = sign(attestation, domain, key)
                call = forger.protocol.tasks.functions.attest(
                    task, k, attestation.verdict, "forged", "QmNotAReplay", "QmNotADocument", signature
                )
                forger.client.transact(f"forge:{task}:{k}:{key.address}", call)
            forged.add(k)

    def done() -> bool:
        judged = {**a.state.get("judged", {}), **b.state.get("judged", {})}
        opened = {int(e.args["j"]) for e in events(owner, "BatchOpened", task=task)}
        return opened == {0, 1} and {f"{task}:{k}" for k in sampled(owner, task)} <= set(judged)

    def passes(node: WatcherNode) -> None:
        """Passes of ``node`` until what it started judging is judged and attested: the two watchers take turns, as
        if each were much faster than the other (each judges in the background; side by side they would also
        replay what the other has under way, unattested)."""
        node.step()
        while node.judging:
            time.sleep(0.2)
            node.step()

    try:
        deadline = time.monotonic() + 600
        while not done():
            assert time.monotonic() < deadline, "timed out waiting for the watchers to judge every sampled interval"
            forge_the_new_openings()
            passes(a)
            forge_the_new_openings()
            passes(b)
            time.sleep(0.5)
        a.step()  # one more pass each (the windows are still open): each sees the other's last attestation
        b.step()
        wait_for(lambda: owner.protocol.task(task).status == TaskStatus.FINALIZED, timeout=300, what="the finalize")
    finally:
        stop(trainer)
    ours = {f"{task}:{k}" for k in sampled(owner, task)}
    judged_a = {key for key in a.state.get("judged", {}) if key.startswith(f"{task}:")}
    judged_b = {key for key in b.state.get("judged", {}) if key.startswith(f"{task}:")}
    assert judged_a and judged_b and judged_a.isdisjoint(judged_b) and judged_a | judged_b == ours
    # Each took its share: a batch's sample in turn, in order of k, the team sorted by address.
    team = sorted([a_ctx.address, b_ctx.address])
    shares: dict[str, set[str]] = {address: set() for address in team}
    for j in (0, 1):
        for position, k in enumerate(sorted(owner.protocol.sampled(task, j))):
            shares[team[position % 2]].add(f"{task}:{k}")
    assert (judged_a, judged_b) == (shares[a_ctx.address], shares[b_ctx.address])
    assert set(a.state.get("covered", {})) == judged_b and set(b.state.get("covered", {})) == judged_a
    assert {v["verdict"] for v in [*a.state.get("judged").values(), *b.state.get("judged").values()]} == {"valid"}
    owner.scanner.poll()
    kept = attestations(owner, task)
    assert forged == {int(key.split(":")[1]) for key in ours}  # every sampled interval was a forgery's target
    for key in ours:
        k, (index, node) = int(key.split(":")[1]), (3, a) if key in judged_a else (7, b)
        assert set(kept[k]) == {node.ctx.address, forger.address}, k
        assert kept[k][forger.address].attestation.profile == "forged"  # its own, first: account 9's was dropped
        mine = kept[k][node.ctx.address]
        assert mine.attestation.profile == f"{PROFILES[index]} on {host_cpu()}"
        assert mine.attestation.report_cid == node.state.get("judged")[key]["report"]
        doc = json.loads(owner.ipfs.cat_bytes(mine.attestation_cid, max_bytes=1 << 16))
        signed = from_document(doc)
        assert signed == mine.attestation and doc["watcher"] == node.ctx.address
        assert verified(signed, domain, bytes.fromhex(doc["signature"][2:]), node.ctx.address)
    # The owner's command line shows the same: every sampled interval attested by two (its judge and account
    # 8), and one row per attester (the forgeries in 3's and 7's names add nothing).
    status = run_ovig(
        "owner",
        "status",
        str(task),
        "--account",
        "0",
        "--home",
        str(system.folder / "owner-status"),
        env={"OVIG_DEVNET_DIR": str(system.net.data_dir), "COLUMNS": "250"},
    )
    assert status.returncode == 0, status.stderr
    batches, watchers = status.stdout.split("watchers' verified attestations")
    assert all(f" {key.split(':')[1]}:2" in batches for key in ours), status.stdout
    rows = {line.split()[1] for line in watchers.split("payouts")[0].split("dispute ")[0].splitlines() if "0x" in line}
    assert rows == {a_ctx.address, b_ctx.address, forger.address}, status.stdout
    for ctx in (owner, forger, a_ctx, b_ctx):
        ctx.close()


def test_an_owner_lists_its_tasks_and_cancels_one_nobody_accepted(system: System) -> None:
    """`ovig owner list` shows the owner's tasks; `ovig owner cancel` takes back a posted one (its reward
    credited), refusing, in one line and before any transaction, another account's task or a task no
    longer posted."""
    owner = system.node("owner", 0)
    task = post_task(owner, system.spec, system.boundary, terms())
    env = {"OVIG_DEVNET_DIR": str(system.net.data_dir)}

    def ovig(*argv: str, account: int = 0) -> subprocess.CompletedProcess[str]:
        home = system.folder / "nodes" / f"owner-cli-{account}"
        return run_ovig("owner", *argv, "--account", str(account), "--home", str(home), env=env)

    listed = ovig("list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    zero = "0x" + "00" * 20
    assert {"task": task, "status": "posted", "provider": zero, "reward_wei": str(2 * ETHER)} in rows
    assert [row["task"] for row in rows] == sorted(row["task"] for row in rows)
    credits = owner.protocol.tasks.functions.credits
    before = credits(owner.address).call()
    other = ovig("cancel", str(task), account=1)
    assert other.returncode == 1
    assert other.stderr.strip().splitlines() == [
        f"error: task {task} is {owner.address}'s, not {devnet_account(1).address}'s: only its owner cancels it"
    ]
    cancelled = ovig("cancel", str(task))
    assert cancelled.returncode == 0, cancelled.stderr
    assert owner.protocol.task(task).status == TaskStatus.CANCELLED
    assert credits(owner.address).call() - before == 2 * ETHER
    # Anyone reads a task's status, no account needed; --json labels each payout (issue 46).
    read = run_ovig("owner", "status", str(task), "--json", env=env)
    assert read.returncode == 0, read.stderr
    report = json.loads(read.stdout)
    assert (report["status"], report["provider"], report["disputes"]) == ("cancelled", zero, [])
    assert report["payouts"] == [
        {
            "account": owner.address,
            "amount_wei": str(2 * ETHER),
            "for": "reward back: cancelled",
        }
    ]
    assert (system.net.data_dir / "nodes" / "reader").is_dir()
    again = ovig("cancel", str(task))
    assert again.returncode == 1
    assert again.stderr.strip().splitlines() == [
        f"error: task {task} is cancelled: only a task nobody accepted yet can be cancelled"
    ]
    # Bad input is one line, and leaves nothing behind (issue 46)
    home = system.folder / "nodes" / "never-made"
    env = {"OVIG_DEVNET_DIR": str(system.net.data_dir)}
    wrong_account = run_ovig("owner", "list", "--account", "12", "--home", str(home), env=env)
    assert wrong_account.returncode == 2 and "--account" in wrong_account.stderr and not home.exists()
    for argv, line in (
        (("--task", "999"), "error: there is no task 999 on this chain"),
        (("--task", str(task)), f"error: task {task} is cancelled; its provider is {zero}, not this account"),
    ):
        trainer = run_ovig("trainer", "--account", "2", "--home", str(system.folder / "t2"), *argv, env=env)
        assert trainer.returncode == 1 and trainer.stderr.strip().splitlines() == [line], trainer.stderr
    owner_home = str(system.folder / "nodes" / "owner-cli-0")
    post = (
        "owner",
        "post-task",
        "--spec",
        str(system.spec),
        "--boundary",
        str(system.boundary),
        "--provider-bond",
        "3",
        "--challenger-bond",
        "0.1",
        "--account",
        "0",
        "--home",
        owner_home,
    )
    for extra, code, said in (
        (("--reward", "abc"), 2, "Invalid value for --reward: 'abc' is not an amount of ETH"),
        (("--reward", "1", "--windows", "90,90"), 2, "Invalid value for --windows: '90,90': three whole seconds"),
        (("--reward", "50000"), 1, f"error: {owner.address} holds"),
    ):
        refused = run_ovig(*post, *extra, env=env)
        assert refused.returncode == code and said in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    out = system.folder / "never-fetched"
    unfinished = ovig("fetch", str(task), "--out", str(out))
    assert unfinished.returncode == 1 and not out.exists()
    assert unfinished.stderr.strip().splitlines() == [
        f"error: task {task} is cancelled, not finalized: nothing vouches for its model (--unverified takes it anyway)"
    ]


def test_an_unreachable_rpc_is_one_clear_line(tmp_path: Path) -> None:
    deployments = tmp_path / "deployments.json"
    deployments.write_text('{"contracts": {}}')
    keystore = write_keystore(devnet_account(3), tmp_path / "key.json", "pw")
    port = free_port()
    result = run_ovig(
        "owner",
        "status",
        "1",
        "--rpc",
        f"http://127.0.0.1:{port}",
        "--deployments",
        str(deployments),
        "--ipfs",
        "http://127.0.0.1:1",
        "--keystore",
        str(keystore),
        "--password-env",
        "NOPE_PW",
        env={"NOPE_PW": "pw"},
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"error: RPC endpoint http://127.0.0.1:{port} is unavailable: ConnectionError"]
