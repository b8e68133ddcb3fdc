"""Hostile files give verdicts, never crashes (protocol section 5): real torch, real evidence files.

A provider's start and end evidence is rewritten in each way an attacker can (tensors renamed, dropped,
added, reshaped, retyped; NaN or infinity; wrong metadata and counters; truncated, garbage, oversized)
and judged by ``verify_interval`` exactly as ``ovig verify`` and the nodes do. Faults visible without
a replay are found before one. The owner's hostile files (a boundary lacking a signal) are refused.
"""

from __future__ import annotations

import errno
import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from pydantic import ValidationError
from test_ipfs import UNKNOWN_CID
from web3.exceptions import Web3RPCError

from ovig_node.chain.errors import RpcRefused
from ovig_node.cli import cli
from ovig_node.deadlines import DeadlinePassed
from ovig_node.nodes import fetching
from ovig_node.nodes.auditor import fetch_looked
from ovig_node.nodes.fetching import TaskRefused
from ovig_node.nodes.isolation import Isolation
from ovig_node.nodes.judging import Evidence as JudgedFiles
from ovig_node.nodes.judging import GaveWay, Opened, look_for_files
from ovig_node.nodes.watcher import WatcherNode
from ovig_node.storage.errors import ContentTooLarge, IpfsUnavailable
from ovig_node.storage.ipfs import IpfsClient
from ovig_node.training.evidence import Evidence, read_evidence, safetensors_bytes, write_evidence
from ovig_node.training.loop import evidence_path
from ovig_node.training.taskfiles import PreparedTask
from ovig_node.verify.boundary import BoundaryProfile
from ovig_node.verify.layout import layout_of
from ovig_node.verify.report import verify_interval
from support import IpfsNode, pattern, run_ovig
from verify_support import HELD_OUT, HELD_OUT_PROFILES

K = 3  # the judged interval: its start is E_2, its end E_3
Mutation = Callable[[Evidence], Evidence]


def _with(section: str, name: str, tensor: torch.Tensor | None) -> Mutation:
    """A mutation setting (or, with None, dropping) one tensor of one section."""

    def mutate(evidence: Evidence) -> Evidence:
        tensors = {key: value for key, value in getattr(evidence, section).items() if key != name}
        if tensor is not None:
            tensors[name] = tensor
        return replace(evidence, **{section: tensors})

    return mutate


def _changed(section: str, name: str, change: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[Evidence], Evidence]:
    return lambda e: _with(section, name, change(getattr(e, section)[name].clone()))(e)


def _poisoned(value: float) -> Callable[[torch.Tensor], torch.Tensor]:
    def poison(tensor: torch.Tensor) -> torch.Tensor:
        tensor.view(-1)[0] = value
        return tensor

    return poison


# (mutation of the evidence, reason, cause): each way a provider's tensors can be wrong
HOSTILE: dict[str, tuple[Mutation, str, str]] = {
    "weight_wrong_shape": (_changed("model", "fc1.bias", lambda t: t[:-1]), "wrong_structure", "wrong_shape"),
    "weight_missing": (_with("model", "fc1.weight", None), "wrong_structure", "wrong_names"),
    "optimizer_tensor_missing": (_with("optim", "fc1.weight/exp_avg_sq", None), "wrong_structure", "wrong_names"),
    "weight_wrong_dtype": (_changed("model", "fc1.bias", lambda t: t.double()), "wrong_structure", "wrong_dtype"),
    "extra_weight": (_with("model", "bogus", torch.zeros(3)), "wrong_structure", "wrong_names"),
    "extra_optimizer_state": (_with("optim", "fc1.weight/bogus", torch.zeros(3)), "wrong_structure", "wrong_names"),
    "probe_missing": (_with("probe", "fc1.bias", None), "wrong_structure", "wrong_names"),
    "optimizer_wrong_shape": (
        _changed("optim", "fc1.bias/exp_avg", lambda t: t.reshape(1, -1)),
        "wrong_structure",
        "wrong_shape",
    ),
    "wrong_metadata": (
        lambda e: replace(e, metadata={**e.metadata, "interval": "7"}),
        "wrong_structure",
        "wrong_metadata",
    ),
    "counter_off_by_one": (_changed("optim", "fc1.bias/step", lambda t: t + 1), "wrong_structure", "wrong_counter"),
    "counter_fractional": (_changed("optim", "fc1.bias/step", lambda t: t + 0.5), "wrong_structure", "wrong_counter"),
    "counter_nan": (_changed("optim", "fc1.bias/step", lambda t: t * math.nan), "wrong_structure", "wrong_counter"),
    "counter_infinite": (
        _changed("optim", "fc1.bias/step", lambda t: t * math.inf),
        "wrong_structure",
        "wrong_counter",
    ),
}
NON_FINITE: dict[str, Mutation] = {
    "nan_weight": _changed("model", "conv1.weight", _poisoned(math.nan)),
    "inf_moment": _changed("optim", "fc2.weight/exp_avg_sq", _poisoned(math.inf)),
    "minus_inf_probe": _changed("probe", "fc1.bias", _poisoned(-math.inf)),
}


def evidence_folder(claims: Path, out: Path, *, start: Mutation | None = None, end: Mutation | None = None) -> Path:
    """E_{K-1} and E_K of the honest claims in ``out``, each rewritten by its mutation if given."""
    for k, mutate in ((K - 1, start), (K, end)):
        if mutate is None:
            evidence_path(out, k).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(evidence_path(claims, k), evidence_path(out, k))
        else:
            write_evidence(evidence_path(out, k), mutate(read_evidence(evidence_path(claims, k))))
    return out


def judged(task: PreparedTask, boundary: BoundaryProfile, folder: Path, **options: Any) -> dict[str, Any]:
    return verify_interval(task, folder, K, boundary, profiles=HELD_OUT_PROFILES, **options)


def outcome(report: dict[str, Any]) -> tuple[str, str, str]:
    return report["verdict"], report["reason"], report["cause"]


@pytest.mark.parametrize("side", ["start", "end"])
@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_evidence_is_faulty_with_its_reason(
    vision_task: PreparedTask,
    vision_claims: Path,
    vision_boundary: BoundaryProfile,
    tmp_path: Path,
    case: str,
    side: str,
) -> None:
    mutate, reason, cause = HOSTILE[case]
    report = judged(vision_task, vision_boundary, evidence_folder(vision_claims, tmp_path, **{side: mutate}))
    assert outcome(report) == ("faulty", reason, cause)
    if side == "start":  # found before a replay: nothing was loaded into a model
        assert report["detail"].startswith("start evidence: ")
        assert report["replays"] == [] and report["profile"] is None
    else:  # names, shapes and dtypes need no replay; metadata and counters are compared with one
        assert report["replays"] == ([] if cause in ("wrong_names", "wrong_shape", "wrong_dtype") else HELD_OUT[:1])


@pytest.mark.parametrize("case", NON_FINITE)
def test_nan_or_infinity_in_the_start_is_out_of_bounds(
    vision_task: PreparedTask, vision_claims: Path, vision_boundary: BoundaryProfile, tmp_path: Path, case: str
) -> None:
    report = judged(vision_task, vision_boundary, evidence_folder(vision_claims, tmp_path, start=NON_FINITE[case]))
    assert outcome(report) == ("faulty", "out_of_bounds", "non_finite") and report["replays"] == []
    assert "holds NaN or infinity" in report["detail"]


@pytest.mark.parametrize("case", NON_FINITE)
def test_nan_or_infinity_in_the_end_where_the_replay_has_none_is_out_of_bounds(
    vision_task: PreparedTask, vision_claims: Path, vision_boundary: BoundaryProfile, tmp_path: Path, case: str
) -> None:
    report = judged(vision_task, vision_boundary, evidence_folder(vision_claims, tmp_path, end=NON_FINITE[case]))
    assert (report["verdict"], report["reason"]) == ("faulty", "out_of_bounds")
    assert report["replays"] == HELD_OUT  # confirmed under the second profile too
    signal = {"nan_weight": "weights", "inf_moment": "optim", "minus_inf_probe": "probe"}[case]
    assert not report["signals"][signal]["abs"][-1]["ok"]


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _huge_header(data: bytes) -> bytes:
    return (1 << 60).to_bytes(8, "little") + data[8:]


def _outside_sections(data: bytes) -> bytes:
    return safetensors_bytes({"junk/x": torch.zeros(2), "model/fc1.bias": torch.zeros(2)})


def _garbage(data: bytes) -> bytes:
    return pattern(len(data))


@pytest.mark.parametrize(
    ("which", "damage", "reason"),
    [
        (K, _truncated, "wrong_structure"),
        (K - 1, _truncated, "wrong_structure"),
        (K, _huge_header, "wrong_structure"),
        (K - 1, _garbage, "wrong_structure"),
        (K - 1, _outside_sections, "wrong_structure"),
    ],
    ids=["truncated_end", "truncated_start", "header_length_past_the_file", "garbage_start", "tensor_outside"],
)
def test_unreadable_files_are_faulty(
    vision_task: PreparedTask,
    vision_claims: Path,
    vision_boundary: BoundaryProfile,
    tmp_path: Path,
    which: int,
    damage: Callable[[bytes], bytes],
    reason: str,
) -> None:
    """Files as the node judges them: obtained, their bytes the committed ones (fetching checked the digests), but no
    safetensors file the spec's layout holds: the provider's fault, faulty like any structural one. Review 12 of v3:
    they were "corrupt", which counts as not obtained, so a provider that committed the digest of garbage had honest
    panels answer unavailable."""
    folder = evidence_folder(vision_claims, tmp_path)
    path = evidence_path(folder, which)
    path.write_bytes(damage(path.read_bytes()))
    report = judged(vision_task, vision_boundary, folder)
    assert (report["verdict"], report["reason"], report["replays"]) == ("faulty", reason, [])


@pytest.mark.parametrize("which", [K - 1, K])
def test_a_file_larger_than_the_specs_evidence_is_oversized_and_not_read(
    vision_task: PreparedTask, vision_claims: Path, vision_boundary: BoundaryProfile, tmp_path: Path, which: int
) -> None:
    folder = evidence_folder(vision_claims, tmp_path)
    limit = layout_of(vision_task.spec).max_bytes
    with evidence_path(folder, which).open("r+b") as stream:
        stream.truncate(limit + 1)  # sparse: a file too large to read costs no disk here
    report = judged(vision_task, vision_boundary, folder)
    assert outcome(report) == ("faulty", "oversized", "oversized") and str(limit) in report["detail"]


def test_missing_start_and_wrong_digest_of_the_end(
    vision_task: PreparedTask, vision_claims: Path, vision_boundary: BoundaryProfile, tmp_path: Path
) -> None:
    folder = evidence_folder(vision_claims, tmp_path)
    assert outcome(judged(vision_task, vision_boundary, folder, end_sha256="0" * 64)) == (
        "faulty",
        "corrupt",
        "corrupt",
    )
    evidence_path(folder, K - 1).unlink()
    assert outcome(judged(vision_task, vision_boundary, folder)) == ("faulty", "missing", "missing")


def test_the_layout_is_exactly_what_honest_evidence_holds(vision_task: PreparedTask, vision_claims: Path) -> None:
    layout = layout_of(vision_task.spec)
    for k in range(vision_task.spec.layout.intervals):
        path = evidence_path(vision_claims, k)
        assert layout.problem(read_evidence(path), k) is None
        assert path.stat().st_size <= layout.max_bytes < 2 * path.stat().st_size  # a cap, not a guess


def test_honest_claims_pass_the_checks_before_a_replay(
    vision_task: PreparedTask, vision_claims: Path, vision_boundary: BoundaryProfile, tmp_path: Path
) -> None:
    report = judged(vision_task, vision_boundary, evidence_folder(vision_claims, tmp_path))
    assert outcome(report) == ("valid", "within_bounds", "")


# --- the owner's files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda b: b["signals"].pop("probe"), "signals must be"),
        (lambda b: b["signals"]["weights"].update(abs=[1.0, 2.0]), "weights.abs must hold 5 finite bounds"),
        (lambda b: b["signals"]["optim"]["rel"].__setitem__(0, -1.0), "optim.rel must hold 5 finite bounds"),
        (lambda b: b.update(percentiles=[50.0, 100.0]), "percentiles must be"),
        (lambda b: b["signals"]["probe"].pop("rel"), "Field required"),
    ],
    ids=["signal_missing", "percentile_missing", "negative_bound", "other_percentiles", "kind_missing"],
)
def test_a_boundary_that_cannot_judge_every_value_is_refused(
    vision_boundary: BoundaryProfile, edit: Callable[[dict[str, Any]], object], message: str
) -> None:
    document = json.loads(vision_boundary.model_dump_json())
    edit(document)
    with pytest.raises(ValidationError, match=message):
        BoundaryProfile.model_validate_json(json.dumps(document))


def test_ovig_verify_refuses_a_boundary_lacking_a_signal_with_one_clear_error(
    vision_task: PreparedTask, vision_claims: Path, vision_boundary: BoundaryProfile, tmp_path: Path
) -> None:
    document = json.loads(vision_boundary.model_dump_json())
    del document["signals"]["optim"]
    broken = tmp_path / "boundary.json"
    broken.write_text(json.dumps(document))
    result = run_ovig(
        "verify",
        "--spec",
        str(vision_task.spec_path),
        "--evidence",
        str(vision_claims),
        "--interval",
        str(K),
        "--boundary",
        str(broken),
    )
    assert result.returncode == 2 and "--boundary" in result.stderr and "signals must be" in result.stderr
    assert "Traceback" not in result.stderr


# --- downloads and isolation ---------------------------------------------------------------------


def test_downloads_stop_at_their_cap(ipfs: IpfsClient, tmp_path: Path) -> None:
    cid = ipfs.add_bytes(pattern(600_000)).cid  # three leaves of 256 KiB: the cap falls inside the second
    with pytest.raises(ContentTooLarge, match="larger than 300000 bytes"):
        ipfs.get_file(cid, tmp_path / "out.bin", max_bytes=300_000)
    assert list(tmp_path.iterdir()) == []  # no partial file left behind
    with pytest.raises(ContentTooLarge):
        ipfs.cat_bytes(cid, max_bytes=599_999)
    assert len(ipfs.cat_bytes(cid, max_bytes=600_000)) == 600_000


@pytest.mark.parametrize(
    ("error", "refused"),
    [
        (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 GB"), False),
        (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), False),
        (RuntimeError("shape '[3, 4]' is invalid for input of size 7"), True),
        (RecursionError("maximum recursion depth exceeded"), False),  # review 18: this interpreter's stack
        (OSError(errno.ENOMEM, "Cannot allocate memory"), False),  # an mmap the kernel refused
        (OSError(errno.ENOSPC, "No space left on device"), None),  # the error itself: the isolation retries it
        (OSError(errno.EINVAL, "Invalid argument"), True),
    ],
)
def test_running_out_of_memory_on_a_dataset_is_this_machines_limit_never_a_refusal(
    vision_task: PreparedTask, monkeypatch: pytest.MonkeyPatch, error: Exception, refused: bool | None
) -> None:
    """A ninth review: torch's out-of-memory error is a RuntimeError, and the dataset check refused the task on
    any exception, so a small machine's ballot was `faulty` where a large one's was `sound`; review 18 found a
    recursion too deep and an allocation the kernel refused alike, and a full disk. FAKE, named as such: the
    workload's check raises the error, since running a machine out of memory is no test."""

    class Exhausted:
        def check_dataset(self, *_: Any) -> None:
            raise error

    monkeypatch.setattr(fetching, "get_workload", lambda _name: Exhausted())
    with pytest.raises(TaskRefused if refused else MemoryError if refused is False else OSError) as raised:
        fetching._check_dataset(7, vision_task)
    assert refused is not None or raised.value is error


def test_a_unit_that_raises_is_logged_once_and_the_others_go_on() -> None:
    said: list[str] = []
    now = [0.0]
    isolation = Isolation(lambda message, **_: said.append(message), clock=lambda: now[0])

    def outage() -> None:
        raise IpfsUnavailable("http://127.0.0.1:1", "ConnectError")

    def hostile() -> None:
        raise RuntimeError("Error(s) in loading state_dict")

    def rate_limited() -> None:  # an endpoint's error answer (review 29 of v3: it left an appeal alone for good)
        raise Web3RPCError("rate limited")

    def quota() -> None:  # an endpoint's HTTP refusal (review 30)
        raise RpcRefused("RPC endpoint http://127.0.0.1:1 answered HTTP 403: quota")

    for _ in range(3):  # three passes: the failing units fail again or wait, the good one always runs
        assert isolation.call("task 1", hostile) is None
        assert isolation.call("task 2 interval 4", outage) is None
        assert isolation.call("appeal 5:0", rate_limited) is None
        assert isolation.call("seat 6", quota) is None
        assert isolation.call("task 3", lambda: "judged") == "judged"
        now[0] += 0.5
    assert said == [
        "task 1: RuntimeError: Error(s) in loading state_dict; left alone until a restart",
        "task 2 interval 4: IpfsUnavailable: IPFS node at http://127.0.0.1:1 is unavailable: "
        "ConnectError; retrying with backoff",
        "appeal 5:0: Web3RPCError: rate limited; retrying with backoff",
        "seat 6: RpcRefused: RPC endpoint http://127.0.0.1:1 answered HTTP 403: quota; retrying with backoff",
    ]
    assert not isolation.ready("task 1")  # the same files would fail the same way
    now[0] += isolation.max_delay
    assert isolation.ready("appeal 5:0") and isolation.ready("seat 6")  # the endpoint's, not the unit's: tried again
    assert isolation.ready("task 2 interval 4")  # our outage: tried again after its backoff
    assert isolation.call("task 2 interval 4", lambda: "judged") == "judged"
    assert said[-1] == "task 2 interval 4: recovered"


def test_a_trickled_interval_whose_replay_cannot_finish_is_not_obtained_and_a_slow_replay_is_no_claim(
    vision_task: PreparedTask, vision_claims: Path, vision_boundary: BoundaryProfile, tmp_path: Path
) -> None:
    # The watcher's replay worker (WatcherNode._replay) on a real replay of interval K. ``late`` stands for the
    # not-obtained judgement the watcher makes of files that came after their serving deadline (review 12 of v3:
    # a decoy's files trickled ahead of the fake's held the one worker past the fake's commit cutoff).
    def replay(decide_in: float, replay_seconds: int, late: Callable[[], Any] | None, start: float = 0.2) -> Any:
        folder = evidence_folder(vision_claims, tmp_path / f"evidence-{len(list(tmp_path.iterdir()))}")

        def work() -> dict[str, Any]:
            time.sleep(start)  # a replay slow to start (its model loading): its steps begin only then
            return judged(vision_task, vision_boundary, folder)

        evidence = JudgedFiles(folder, problem=None, available=True)
        return WatcherNode._replay(work, evidence, time.monotonic() + decide_in, replay_seconds, late)

    def late() -> str:
        return "not obtained: came after its serving deadline"

    # Its turn came at or after the commit cutoff: late files are not obtained; others, no claim (as before). Late
    # files with less than the declared replay time left are decided at once, without a replay.
    assert replay(0.0, 60, late) == late()
    assert replay(0.0, 60, None) == "its turn on the replay worker came too late for a verdict to be committed"
    assert replay(30.0, 60, late) == late()
    # Stopped at the cutoff mid-replay (its steps begin 2 s in, the cutoff 1.5 s in, within twice a declared
    # second): late files are not obtained; others, no claim.
    assert replay(1.5, 1, late, start=2.0) == late()
    with pytest.raises(DeadlinePassed):
        replay(1.5, 1, None, start=2.0)
    # Stopped at its cap (twice a declared replay time of 0 s) with the cutoff far away: the replay was too long
    # for what the task declared, not the files too late, so no claim either way.
    with pytest.raises(DeadlinePassed):
        replay(60.0, 0, late)
    # In time, the verdict is the replay's, late files or not.
    assert replay(120.0, 60, late)["verdict"] == "valid"


def test_a_look_for_files_not_found_gives_way_to_an_interval_closing_sooner(ipfs_node: IpfsNode) -> None:
    """Review 16 of v3: looks for a junk task's withheld files, opened first, held every worker of a watcher until
    a fake opened after them had closed its window unjudged. A look whose files are not found ends when told to
    give way (its worker goes to the interval closing sooner), and is no verdict; past its fetch deadline it is
    the files not obtained, as before. The task's files are asked of the real IPFS node, which has none of them."""
    opened = Opened(k=3, start_digest="", end_digest="", opening_cid=None)
    with ipfs_node.client(fetch_timeout=1) as client:

        def task_files(wait: float, fetch_by: float) -> Any:
            return client.cat_bytes(UNKNOWN_CID)  # ContentNotFound: withheld (or not announced yet)

        def look(fetch_by: float, give_way: Callable[[], bool] | None) -> Any:
            ctx: Any = None  # never reached: the look ends at the owner's files
            return look_for_files(
                ctx, task_files, opened, fetch_by=fetch_by, looked=True, who="watch", profile="x", give_way=give_way
            )

        gave_way = look(time.monotonic() + 600, lambda: True)
        assert isinstance(gave_way, GaveWay) and gave_way.why.startswith(f"the task's files: content {UNKNOWN_CID}")
        assert look(time.monotonic(), lambda: True).startswith(f"the task's files: content {UNKNOWN_CID}")  # deadline


@pytest.mark.parametrize(
    ("window", "late_by", "looked"),
    [
        (15, 7.5, True),  # the devnet's fetch window: half of it is the grace
        (15, 8, False),
        (15, 20, False),  # begun after the window had closed: never a look (review 16 of v3)
        (200, 60, True),  # FETCH_START_GRACE
        (200, 61, False),
        (10_800, 2_700, True),  # the deploy's: a quarter of the window
        (10_800, 2_701, False),
    ],
)
def test_an_auditor_fetch_begun_late_in_its_window_claims_nothing(window: float, late_by: float, looked: bool) -> None:
    """A seat's fetch that began late (its node busy or down) answers what it did not obtain with an abstention, not
    `unavailable`: it did not look through the window."""
    assert fetch_looked(late_by, window) is looked


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["watcher", "run", "--trust", "0x12"], "--trust"),
        (["api", "serve", "--devnet", "--trust-attester", "nope"], "--trust-attester"),
    ],
)
def test_a_trusted_address_that_is_not_one_is_a_usage_error(argv: list[str], option: str) -> None:
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2
    assert f"Invalid value for '{option}': '{argv[-1]}' is not an address" in result.output
