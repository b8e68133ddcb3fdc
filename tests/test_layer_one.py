"""Layer one (verify.statistics_judge): scoring every interval's claimed statistics against a reference run,
and which unopened intervals a watcher then requests.

Exact values on made-up statistics (every number below is chosen to be exact in binary), then the
reference file's round trip and its refusals, and one real tiny-vision run: the owner's calibration claims
make a reference that scores the same claims 0 and a faked interval's above the threshold."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ovig_node.attacks.base import load_attack
from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.spec import training_hash
from ovig_node.training.evidence import read_statistics
from ovig_node.training.loop import evidence_path, train
from ovig_node.training.statistics import STATISTICS
from ovig_node.training.taskfiles import attach_boundary, prepare_task
from ovig_node.verify.evaluate import claim_run
from ovig_node.verify.statistics_judge import THRESHOLD, NotAReference, Reference, departures, scores, to_request
from ovig_node.verify.stats import REL_EPS

LAYOUT = Layout(total_steps=8, stride=2, intervals_per_batch=2)  # intervals 0..3 of 2 steps each


def rel(claimed: float, honest: float) -> float:
    """A relative departure, as the judge computes it (in float64, the same on every CPU)."""
    return abs(claimed - honest) / (abs(honest) + REL_EPS)


def reference(loss: list[float], cosine: list[float] | None = None) -> Reference:
    values = claim(loss, cosine)
    return Reference("ab" * 32, {name: np.asarray(v) for name, v in values.items()})


def claim(loss: list[float], cosine: list[float] | None = None) -> dict[str, list[float]]:
    return {
        "loss": loss,
        "grad_norm": [1.0] * len(loss),
        "update_norm": [1.0] * len(loss),
        "grad_cosine": cosine if cosine is not None else [0.5] * len(loss),
    }


def test_a_departure_is_relative_for_the_loss_and_norms_and_absolute_for_the_cosine() -> None:
    gone = departures(claim([2.0, 3.0], cosine=[0.25, 0.5]), reference([2.0, 4.0], cosine=[0.5, 0.5]).values)
    assert gone == {"loss": rel(3.0, 4.0), "grad_norm": 0.0, "update_norm": 0.0, "grad_cosine": 0.25}


def test_a_claimed_nan_or_infinity_departs_infinitely() -> None:
    assert departures(claim([math.nan, 1.0]), reference([1.0, 1.0]).values)["loss"] == math.inf
    assert departures(claim([1.0, -math.inf]), reference([1.0, 1.0]).values)["loss"] == math.inf


def test_an_interval_scores_its_jump_over_the_earlier_intervals_largest_departure() -> None:
    # Departures of the loss by interval: 0, 2^-11 (under the floor 1e-3), 2^-7, 2^-3.
    ref = reference([1.0] * 8)
    claimed = {k: claim([1.0, 1.0 + d]) for k, d in enumerate([0.0, 2.0**-11, 2.0**-7, 2.0**-3])}
    got = scores(claimed, ref, LAYOUT)
    d1, d2, d3 = rel(1 + 2.0**-11, 1.0), rel(1 + 2.0**-7, 1.0), rel(1 + 2.0**-3, 1.0)
    assert got == {0: 0.0, 1: d1 / 1e-3, 2: d2 / 1e-3, 3: d3 / d2}


def test_the_intervals_after_a_jump_carry_it_and_do_not_score_high() -> None:
    ref = reference([1.0] * 8)
    claimed = {0: claim([1.0, 1.0]), 1: claim([1.0, 1.5]), 2: claim([1.5, 1.5]), 3: claim([1.5, 1.5])}
    got = scores(claimed, ref, LAYOUT)
    assert got == {0: 0.0, 1: rel(1.5, 1.0) / 1e-3, 2: 1.0, 3: 1.0}


def test_a_missing_interval_leaves_the_baseline_and_one_beyond_the_reference_is_not_scored() -> None:
    ref = reference([1.0] * 6)  # reaches intervals 0..2
    claimed = {0: claim([1.0, 1.25]), 2: claim([1.0, 1.5]), 3: claim([9.0, 9.0])}
    assert scores(claimed, ref, LAYOUT) == {0: rel(1.25, 1.0) / 1e-3, 2: rel(1.5, 1.0) / rel(1.25, 1.0)}


def test_the_highest_scores_are_requested_first_each_with_its_predecessor() -> None:
    scored = {4: 1.0, 5: 9.0, 6: 30.0, 7: 5.0}
    # 6, its predecessor 5; 5 (in already), its predecessor 4; 7 (its predecessor 6 in already)
    assert to_request(scored, [4, 5, 6, 7], room=4) == [6, 5, 4, 7]
    assert to_request(scored, [4, 5, 6, 7], room=3) == [6, 5, 4]
    assert to_request(scored, [4, 6, 7], room=4) == [6, 7]  # 5 was sampled (opened already): not a candidate
    assert to_request(scored, [4, 5, 6, 7], room=4, threshold=50.0) == []
    assert to_request({4: 8.0, 5: 8.0}, [4, 5], room=4) == [4, 5]  # ties: the earlier first


def test_a_reference_round_trips_and_refuses_what_it_did_not_write(tmp_path: Path) -> None:
    ref = reference([2.0, 1.5, 1.25])
    back = Reference.from_json(ref.to_json())
    assert back.training_hash == ref.training_hash
    assert {name: v.tolist() for name, v in back.values.items()} == {name: v.tolist() for name, v in ref.values.items()}
    doc = json.loads(ref.to_json())
    for broken, why in [
        ("[]", "TypeError"),
        ("{", "JSONDecodeError"),
        (json.dumps({**doc, "version": 2}), "wrong version"),
        (json.dumps({**doc, "statistics": {**doc["statistics"], "loss": [1.0]}}), "unequal lengths"),
        (json.dumps({**doc, "statistics": {k: [[1.0]] * 3 for k in STATISTICS}}), "not one per step"),
        (json.dumps({k: v for k, v in doc.items() if k != "training_hash"}), "KeyError"),
    ]:
        with pytest.raises(NotAReference, match=why):
            Reference.from_json(broken)


def test_a_reference_from_calibration_claims_matches_the_task_after_its_boundary_is_attached(tmp_path: Path) -> None:
    """The reference of an honest run scores that run 0 everywhere and a faked interval above the threshold;
    it names the task by its training hash, which attaching a boundary (after calibration) leaves alone."""
    prepared = prepare_task("vision", tmp_path / "task", tiny=True, total_steps=12, stride=3, intervals_per_batch=2)
    layout = prepared.spec.layout
    honest = tmp_path / "honest"
    train(claim_run(prepared, honest))
    ref = Reference.from_claims(honest, prepared.spec)
    assert ref.steps == 12
    assert ref.values["loss"].tolist() == [
        v for k in range(layout.intervals) for v in read_statistics(evidence_path(honest, k), 3)["loss"]
    ]
    boundary = tmp_path / "boundary.json"
    boundary.write_text('{"workload": "vision", "stride": 3}')  # all attach_boundary reads of it
    posted = attach_boundary(prepared.spec_path, boundary)
    assert posted.spec_hash != prepared.spec_hash and ref.training_hash == training_hash(posted.spec).hex()

    def claimed(folder: Path) -> dict[int, dict[str, list[float]]]:
        return {k: read_statistics(evidence_path(folder, k), 3) for k in range(layout.intervals)}

    assert scores(claimed(honest), ref, layout) == dict.fromkeys(range(layout.intervals), 0.0)
    faked = tmp_path / "faked"
    train(claim_run(prepared, faked, load_attack("data_perturbation", intervals=frozenset({2}))))
    got = scores(claimed(faked), ref, layout)
    assert got[0] == got[1] == 0.0 and got[2] > THRESHOLD
