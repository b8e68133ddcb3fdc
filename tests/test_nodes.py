"""The nodes on a real devnet (anvil + IPFS) with real training, keeping going: a withholding provider
slashed by a keeper, an IPFS and an RPC outage survived, nodes killed at the worst moments and restarted, two
watchers splitting a task by coverage, an owner listing and cancelling its tasks, a clear RPC error. The judging
scenarios are in ``test_nodes_judging.py``; the system both build is ``node_system``.

Every node runs its own execution profile, the demo's (``PROFILES``), so each honest interval a watcher
replays drifts from its claim and passes through the boundary, not by bit-identity. The tests assert
verdicts and state transitions, never how large the drift is: that depends on the CPU's rounding."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from node_system import (
    DELIVERABLE,
    ETHER,
    PROFILES,
    WATCHER_PROFILES,
    System,
    events,
    hurry,
    report,
    reverted_protocol_transactions,
    sampled,
    stop,
    terms,
    wait_for,
    wait_for_auditors,
    watched,
)
from ovig_node.chain.accounts import devnet_account, write_keystore
from ovig_node.chain.contracts import TaskStatus, Verdict
from ovig_node.devnet.processes import free_port
from ovig_node.files import file_sha256
from ovig_node.nodes.attesting import attestations, domain_of
from ovig_node.nodes.keeper import Keeper
from ovig_node.nodes.looping import chain_clock
from ovig_node.nodes.owner import task_status
from ovig_node.nodes.posting import post_task
from ovig_node.nodes.trainer import TrainerNode
from ovig_node.nodes.watcher import WatcherNode
from ovig_node.protocol.attestation import Attestation, AttestedVerdict, from_document, sign, verified
from ovig_node.training.execution import host_cpu
from ovig_node.training.loop import evidence_path
from support import run_ovig

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
    # A task only posted has no keeper duty: a keeper of every task looks at accepted ones alone, so thousands
    # posted for the price of gas cost it nothing per pass.
    posted_only = post_task(owner, system.spec, system.boundary, terms(opening_window=4))
    looked_at = list(Keeper(keeper_node)._tasks())
    assert task in looked_at and posted_only not in looked_at
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
        # Review 25 of v3: an auditor's account watching takes itself off the panels of what it challenges: refused
        home = system.folder / "nodes" / "watcher-4"
        argv = [sys.executable, "-m", "ovig_node", "watcher", "--account", "4", "--home", str(home)]
        refused = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120 * system.pace)
        assert refused.returncode == 2 and "is a registered auditor" in refused.stderr and "--account" in refused.stderr
        assert not home.exists()  # nothing left behind
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
        with hurry(system, {task}, lambda ctx: watched(ctx, system, task, 3)):
            wait_for(lambda: owner.protocol.task(task).status == TaskStatus.FINALIZED, timeout=300, what="finalize")
        assert nodes["trainer", 1].wait(timeout=60 * system.pace) == 0
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
        # The vote commit window is waited out: an auditor is killed between its commit and its reveal
        done = lambda ctx: watched(ctx, system, task, 3)  # noqa: E731
        with hurry(system, {task}, done, cheats=frozenset({task}), commit_windows=False):
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
        deadline = time.monotonic() + 600 * system.pace
        while not done():
            assert time.monotonic() < deadline, "timed out waiting for the watchers to judge every sampled interval"
            forge_the_new_openings()
            passes(a)
            forge_the_new_openings()
            passes(b)
            time.sleep(0.5)
        a.step()  # one more pass each (the windows are still open): each sees the other's last attestation
        b.step()
        with hurry(system, {task}, lambda ctx: True):  # nothing more to do: each watcher's passes were its last
            wait_for(lambda: owner.protocol.task(task).status == TaskStatus.FINALIZED, timeout=300, what="finalize")
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
