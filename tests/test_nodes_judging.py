"""The nodes on a real devnet (anvil + IPFS) with real training, judging: a hostile provider slashed whatever
its files hold while an honest task finalizes, an exact task judged by bytes on chain, a fake the sample missed
found by its statistics, requested, opened and slashed. The system is ``node_system``'s, built once for this file.

Every node runs its own execution profile, the demo's (``PROFILES``), so each honest interval a watcher
replays drifts from its claim and passes through the boundary, not by bit-identity. The tests assert
verdicts and state transitions, never how large the drift is: that depends on the CPU's rounding."""

from __future__ import annotations

import base64
import subprocess
from dataclasses import replace

import pytest

from node_system import (
    DELIVERABLE,
    SPEC,
    System,
    events,
    hurry,
    owner_cids,
    report,
    sampled,
    stop,
    terms,
    until_ended,
    wait_for,
    wait_for_auditors,
    watched,
)
from ovig_node.chain.accounts import devnet_account
from ovig_node.chain.contracts import TaskStatus, Verdict
from ovig_node.files import file_sha256
from ovig_node.nodes.context import NodeContext
from ovig_node.nodes.owner import PostingError
from ovig_node.nodes.posting import post_task
from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.manifest import encode_stats
from ovig_node.protocol.retention import retained
from ovig_node.training.evidence import read_statistics
from ovig_node.training.loop import evidence_path
from ovig_node.training.statistics import STATISTICS
from ovig_node.training.taskfiles import attach_boundary, attach_numerics, prepare_task
from ovig_node.verify.statistics_judge import Reference
from support import EXACT_NUMERICS

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
        until_ended(system, owner, ended, cheat=hostile, what="the hostile task slashed and the honest one finalized")
        assert trainers[1].wait(timeout=120 * system.pace) == 0  # paid, and its evidence let go of as the task ended
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
        what = "the honest exact task finalized and the cheated one slashed"
        until_ended(system, owner, ended, cheat=cheated, what=what)
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

        def done(ctx: NodeContext) -> bool:
            """Both batches screened, and every sampled and requested interval judged and on the chain."""
            screened = set(system.state("watcher", 3).get("screened", {}))
            requested = {int(e.args["k"]) for e in events(ctx, "OpeningRequested", task=task)}
            expect = sampled(ctx, task) | requested
            return {f"{task}:0", f"{task}:1"} <= screened and watched(ctx, system, task, 3, expect=expect)

        with hurry(system, {task}, done, cheats=frozenset({task})):
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
