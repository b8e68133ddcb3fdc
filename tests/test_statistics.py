"""The statistics of every step E_k holds (training.statistics), on real tiny-vision training.

At a stride of 1 each interval is one step, and its statistics follow from the evidence alone: the applied
gradient of step k is the probe gradient E_{k-1} holds (the same weights, the same batch, the same
profile), the update is E_k's weights minus E_{k-1}'s, and step k's cosine pairs its gradient with step
k + 1's, E_k's probe."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from ovig_node.files import file_sha256
from ovig_node.nodes.fetching import FetchedTask, TaskRefused
from ovig_node.nodes.fetching import _read_spec as read_task_spec
from ovig_node.nodes.judging import Opened, _manifest_problem
from ovig_node.nodes.owner import PostingError, Terms
from ovig_node.nodes.posting import post_task
from ovig_node.protocol.manifest import (
    ManifestError,
    ManifestRow,
    batch_manifest,
    encode_stats,
    manifest_limit,
    parse_batch_manifest,
)
from ovig_node.protocol.merkle import MerkleTree, leaf_hash
from ovig_node.storage.ipfs import IpfsClient
from ovig_node.training.evidence import EvidenceError, read_evidence, read_statistics
from ovig_node.training.execution import get_profile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.statistics import STATISTICS
from ovig_node.training.taskfiles import PreparedTask, prepare_task
from ovig_node.verify.boundary import BoundaryProfile
from ovig_node.verify.report import replay_and_judge
from verify_support import HELD_OUT_PROFILES

STEPS = 4


@pytest.fixture(scope="module")
def stepwise(tmp_path_factory: pytest.TempPathFactory) -> tuple[PreparedTask, Path, list[float]]:
    folder = tmp_path_factory.mktemp("stepwise")
    task = prepare_task("vision", folder / "task", tiny=True, total_steps=STEPS, stride=1, intervals_per_batch=STEPS)
    result = train(
        TrainRun(task.spec, task.spec_hash, task.dataset_path, task.init_path, folder / "run", get_profile("reference"))
    )
    return task, folder / "run", result.losses


def _norm(tensors: list[torch.Tensor]) -> float:
    return math.sqrt(sum(float((t.double() ** 2).sum()) for t in tensors))


def test_every_step_s_statistics_follow_from_the_evidence(stepwise: tuple[PreparedTask, Path, list[float]]) -> None:
    _, run, losses = stepwise
    evidence = [read_evidence(evidence_path(run, k)) for k in range(STEPS)]
    for k in range(1, STEPS):
        before, after = evidence[k - 1], evidence[k]
        assert set(after.stats) == set(STATISTICS)
        assert all(t.dtype == torch.float32 and t.shape == (1,) for t in after.stats.values())
        names = sorted(after.probe)
        gradient, following = [before.probe[n] for n in names], [after.probe[n] for n in names]
        dot = sum(float((a.double() * b.double()).sum()) for a, b in zip(gradient, following, strict=True))
        expected = {
            "loss": losses[k],
            "grad_norm": _norm(gradient),
            "update_norm": _norm([after.model[n] - before.model[n] for n in names]),
            "grad_cosine": dot / (_norm(gradient) * _norm(following)),
        }
        for name, value in expected.items():
            assert after.stats[name].item() == pytest.approx(value, rel=1e-5), (k, name)
        assert read_statistics(evidence_path(run, k), 1) == {n: t.tolist() for n, t in after.stats.items()}


def test_the_last_interval_s_statistics_cover_its_steps_only(tmp_path: Path) -> None:
    task = prepare_task("vision", tmp_path / "task", tiny=True, total_steps=7, stride=3, intervals_per_batch=3)
    train(
        TrainRun(
            task.spec, task.spec_hash, task.dataset_path, task.init_path, tmp_path / "run", get_profile("reference")
        )
    )
    files = [evidence_path(tmp_path / "run", k) for k in range(3)]
    lengths = [
        {len(v) for v in read_statistics(path, steps).values()} for path, steps in zip(files, (3, 3, 1), strict=True)
    ]
    assert lengths == [{3}, {3}, {1}]
    # what a watcher reads of a provider's file: the header says how many values, before any is read
    with pytest.raises(EvidenceError, match=r"stats/\w+ is not 3 float32 values"):
        read_statistics(files[2], 3)


def test_statistics_that_lie_are_out_of_bounds_where_opened(
    vision_task: PreparedTask, vision_boundary: BoundaryProfile, vision_claims: Path
) -> None:
    """Everything else honest, the claimed losses of interval 3 a tenth lower: only the statistics fail."""
    start, claim = (read_evidence(evidence_path(vision_claims, k)) for k in (2, 3))
    honest = replay_and_judge(vision_task, 3, start, claim, vision_boundary, profiles=HELD_OUT_PROFILES).verdict
    assert honest.valid
    lying = replace(claim, stats={**claim.stats, "loss": claim.stats["loss"] * 0.9})
    verdict = replay_and_judge(vision_task, 3, start, lying, vision_boundary, profiles=HELD_OUT_PROFILES).verdict
    assert (verdict.verdict, verdict.reason, verdict.failing) == ("faulty", "out_of_bounds", ["stats/loss"])
    [row] = verdict.signals["stats/loss"]["rel"]
    assert row["value"] == pytest.approx(1 / 9, rel=1e-4) and row["limit"] < 1e-3


@pytest.mark.parametrize(
    ("stats", "cause"),
    [
        (lambda s: {k: v for k, v in s.items() if k != "grad_cosine"}, "wrong_names"),
        (lambda s: {**s, "extra": s["loss"]}, "wrong_names"),
        (lambda s: {**s, "loss": s["loss"][:-1]}, "wrong_shape"),
        (lambda s: {**s, "loss": s["loss"].double()}, "wrong_shape"),
    ],
)
def test_statistics_of_the_wrong_shape_are_faulty_before_any_replay(
    vision_task: PreparedTask, vision_boundary: BoundaryProfile, vision_claims: Path, stats: object, cause: str
) -> None:
    start, claim = (read_evidence(evidence_path(vision_claims, k)) for k in (2, 3))
    hostile = replace(claim, stats=stats(claim.stats))  # type: ignore[operator]
    verdict = replay_and_judge(vision_task, 3, start, hostile, vision_boundary, profiles=HELD_OUT_PROFILES).verdict
    assert (verdict.verdict, verdict.reason, verdict.cause) == ("faulty", "wrong_structure", cause)
    assert verdict.detail.startswith("stats")


def _manifest_rows(task: PreparedTask, claims: Path, j: int) -> list[ManifestRow]:
    layout = task.spec.layout
    files = {k: evidence_path(claims, k) for k in layout.batch_intervals(j)}
    return [
        ManifestRow(k, layout.end_step(k), bytes.fromhex(file_sha256(path)), encode_stats(read_statistics(path, 10)))
        for k, path in files.items()
    ]


def _root(task: int, rows: list[ManifestRow]) -> bytes:
    return MerkleTree.build([leaf_hash(task, r.k, r.end_step, r.digest) for r in rows]).root


def test_a_batch_manifest_is_checked_whole_against_the_batch_s_root(
    vision_task: PreparedTask, vision_claims: Path
) -> None:
    layout, task = vision_task.spec.layout, 7
    rows = _manifest_rows(vision_task, vision_claims, 0)
    root = _root(task, rows)
    raw = batch_manifest(task, 0, layout, rows)
    parsed = parse_batch_manifest(raw, task=task, j=0, layout=layout, root=root)
    assert list(parsed) == [0, 1, 2, 3, 4] and parsed[3] == rows[3]
    assert len(raw) <= manifest_limit(layout, layout.intervals_per_batch)
    document = json.loads(raw)
    lower = {
        **rows[3].stats,
        "loss": encode_stats({**read_statistics(evidence_path(vision_claims, 3), 10), "loss": [0.0] * 10})["loss"],
    }

    def refused(change: object) -> str:
        hostile = json.loads(raw)
        change(hostile)  # type: ignore[operator]
        with pytest.raises(ManifestError) as error:
            parse_batch_manifest(json.dumps(hostile).encode(), task=task, j=0, layout=layout, root=root)
        return str(error.value)

    # statistics a watcher cannot see are bound only by E_k's digest: the parse takes them as listed
    document["intervals"][3]["stats"] = lower
    assert (
        parse_batch_manifest(json.dumps(document).encode(), task=task, j=0, layout=layout, root=root)[3].stats == lower
    )
    assert "do not give the batch's on-chain root" in refused(lambda d: d["intervals"][3].update(digest="00" * 32))
    assert "missing or out of order" in refused(lambda d: d["intervals"].reverse())
    assert "missing or out of order" in refused(lambda d: d["intervals"][0].update(k=True))
    assert "list the batch's 5 intervals" in refused(lambda d: d["intervals"].pop())
    assert "end_step is not 40" in refused(lambda d: d["intervals"][3].update(end_step=41))
    assert "not 32 bytes of hex" in refused(lambda d: d["intervals"][3].update(digest="zz"))
    assert "stats must name" in refused(lambda d: d["intervals"][3]["stats"].pop("loss"))
    assert "hold 10 float32 values" in refused(lambda d: d["intervals"][3]["stats"].update(loss="AAAA"))
    assert "not base64" in refused(lambda d: d["intervals"][3]["stats"].update(loss="!!"))
    assert "not version 2 of task 7's batch 0" in refused(lambda d: d.update(batch=1))
    with pytest.raises(ManifestError, match="more than a manifest of this task can have"):
        parse_batch_manifest(b" " * (manifest_limit(layout, 5) + 1), task=task, j=0, layout=layout, root=root)
    with pytest.raises(ManifestError, match="not JSON"):
        parse_batch_manifest(b"[" * 5_000, task=task, j=0, layout=layout, root=root)


def test_a_watcher_finds_an_opening_faulty_whose_manifest_row_is_not_e_k_s(
    vision_task: PreparedTask, vision_claims: Path, ipfs: IpfsClient
) -> None:
    """nodes.judging's check of the batch manifest, against a real IPFS node: before any replay."""
    task = 7
    fetched = FetchedTask(task, vision_task, None, None)
    rows = _manifest_rows(vision_task, vision_claims, 0)
    root = _root(task, rows)
    digest = rows[3].digest.hex()

    def problem(listed: list[ManifestRow] | None, cid: str | None = None) -> tuple[str, str, str] | None:
        if listed is not None:
            cid = ipfs.add_bytes(batch_manifest(task, 0, vision_task.spec.layout, listed), name="manifest.json").cid
        opened = Opened(3, "00" * 32, digest, "unused", cid, root)
        return _manifest_problem(SimpleNamespace(ipfs=ipfs), fetched, opened, vision_claims)  # type: ignore[arg-type]

    assert problem(rows) is None
    # a provider whose manifest lists other statistics for an interval than E_k holds (root unchanged)
    lying = [replace(r, stats={**r.stats, "loss": rows[2].stats["loss"]}) if r.k == 3 else r for r in rows]
    wrong = problem(lying)
    assert wrong is not None and wrong[:2] == ("wrong_structure", "manifest_mismatch")
    # ... or another interval's digest, so the rows no longer give the on-chain root
    swapped = [replace(r, digest=rows[2].digest) if r.k == 3 else r for r in rows]
    wrong = problem(swapped)
    assert wrong is not None and wrong[:2] == ("corrupt", "batch_manifest") and "on-chain root" in wrong[2]
    garbage = ipfs.add_bytes(b"{not json", name="manifest.json").cid
    wrong = problem(None, garbage)
    assert wrong is not None and wrong[:2] == ("corrupt", "batch_manifest")
    assert problem(None) == ("missing", "batch_manifest", "no batch manifest indexed for interval 3")


def test_a_task_whose_manifests_no_node_would_read_is_refused(tmp_path: Path) -> None:
    """256 intervals a batch of 20,000 steps each: manifests of about 107 MB, over what nodes read."""
    task = prepare_task("vision", tmp_path, tiny=True, total_steps=256 * 20_000, stride=20_000, intervals_per_batch=256)
    with pytest.raises(PostingError, match=r"its batch manifests could be \d+ bytes, more than nodes read"):
        post_task(None, task.spec_path, None, Terms(1, 1, 1, 60, 60, 60, 600))  # type: ignore[arg-type]
    with pytest.raises(TaskRefused, match=r"task 3: its batch manifests could be \d+ bytes, over this node's"):
        read_task_spec(3, task.spec_path)
