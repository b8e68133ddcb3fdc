"""The rounding-scale floor under a boundary's limits, and the leave-one-family-out evaluation.

The floor's tests build claims and replays whose differences are exact numbers of ulps, so nothing here
depends on how this CPU rounds a training step; the evaluation's test runs real tiny-vision training and
asserts only what holds on any CPU (which families exist, what is judged, and that kernels a workload
never calls change nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from ovig_node.training.evidence import Evidence
from ovig_node.training.execution import get_profile
from ovig_node.training.statistics import STATISTICS
from ovig_node.verify.boundary import FLOOR_ULPS, BoundaryError, BoundaryProfile, SignalBounds, load_boundary
from ovig_node.verify.check import judge
from ovig_node.verify.families import cpu_profiles, family_splits
from ovig_node.verify.stats import REL_EPS, SIGNALS, percentiles, rounding_floor
from support import run_ovig

# 1000 magnitudes: p50 -> 0.5, p90 -> 1.0, p99 -> 8.0, p99.9 and p100 -> 1024 (nearest rank: p99.9 of 1000
# values is rank ceil(99.9 / 100 * 1000) - 1, and 99.9 / 100 * 1000 is a hair above 999 in floating point)
MAGNITUDES = np.array([0.5] * 500 + [1.0] * 400 + [8.0] * 99 + [1024.0], np.float32)
AT_PERCENTILES = [0.5, 1.0, 8.0, 1024.0, 1024.0]
METADATA = {"task": "0", "spec": "0x00", "interval": "0", "step": "1"}
STEP_STATS = {name: torch.ones(1) for name in STATISTICS}  # a step's statistics, alike in claim and replay


def _signal(values: np.ndarray) -> dict[str, torch.Tensor]:
    # signs alternate: the floor reads magnitudes
    signs = np.where(np.arange(values.size) % 2 == 0, 1.0, -1.0).astype(np.float32)
    return {"w": torch.from_numpy(values * signs)}


def _ulps_up(values: np.ndarray, ulps: int) -> np.ndarray:
    moved = values.copy()
    for _ in range(ulps):
        moved = np.nextafter(moved, np.float32(np.inf), dtype=np.float32)
    return moved


def _evidence(values: np.ndarray) -> Evidence:
    signal = _signal(values)
    return Evidence(model=signal, optim=dict(signal), probe=dict(signal), metadata=METADATA, stats=STEP_STATS)


def _zero_boundary(floor_ulps: float) -> BoundaryProfile:
    """Bounds of zero below p99.9, where calibration profiles agreed bit for bit; room for one coordinate above."""
    zeros = SignalBounds(abs=[0.0, 0.0, 0.0, 1e-3, 1e-3], rel=[0.0, 0.0, 0.0, 1e-5, 1e-5])
    return BoundaryProfile(
        workload="vision",
        stride=1,
        alpha=3.0,
        signals=dict.fromkeys(SIGNALS, zeros),
        statistics=dict.fromkeys(STATISTICS, 0.0),
        claim_profile="reference",
        profiles=["micro2"],
        intervals=1,
        replays=1,
        torch="x",
        replay_seconds_max=1.0,
        floor_ulps=floor_ulps,
    )


def test_the_floor_is_ulps_of_the_claimed_values_at_each_lower_percentile_of_their_magnitude() -> None:
    assert percentiles(MAGNITUDES.astype(np.float64)) == AT_PERCENTILES
    floor = rounding_floor(_signal(MAGNITUDES), 4.0)
    steps = [4.0 * float(np.spacing(np.float32(m))) for m in AT_PERCENTILES[:3]] + [0.0, 0.0]
    assert floor["abs"] == steps == [2.0**-22, 2.0**-21, 2.0**-18, 0.0, 0.0]  # p99.9 and p100: none
    assert floor["rel"] == [step / (m + REL_EPS) for step, m in zip(steps, AT_PERCENTILES, strict=True)]
    wide = rounding_floor({"w": torch.from_numpy(MAGNITUDES.astype(np.float64))}, 4.0)
    assert wide["abs"][0] == 4.0 * 2.0**-53  # a float64 signal rounds in float64


def test_step_counters_and_the_top_percentiles_give_no_floor_a_forged_moment_could_hide_under() -> None:
    """The optimizer state holds each parameter's step counter, the largest value in it: in the magnitudes it
    would make the floor 4 ulps of the step (5e-4 at step 1500), room for a forged Adam moment that the
    next steps divide by eps. Counters stay out, and p99.9 and p100, which cap single coordinates, get none."""
    moments = np.full(1000, 1e-4, np.float32)
    optim = {
        "w/exp_avg": torch.from_numpy(moments),
        "w/exp_avg_sq": torch.from_numpy(moments * moments),
        "w/step": torch.tensor(1500.0),
    }
    floor = rounding_floor(optim, FLOOR_ULPS)
    # magnitudes: 1000 second moments of 1e-8, 1000 first moments of 1e-4; the counter is not one of them
    assert floor["abs"] == [4.0 * float(np.spacing(np.float32(m))) for m in (1e-8, 1e-4, 1e-4)] + [0.0, 0.0]
    forged = dict(optim, **{"w/exp_avg": torch.from_numpy(np.where(np.arange(1000) < 5, -4e-4, moments))})
    bounds = SignalBounds(abs=[1e-12, 1e-11, 1e-10, 1e-9, 1e-8], rel=[1e-8, 1e-7, 1e-6, 1e-5, 1e-4])
    boundary = _zero_boundary(FLOOR_ULPS).model_copy(update={"signals": dict.fromkeys(SIGNALS, bounds)})
    metadata = {**METADATA, "step": "1500"}
    weights = _signal(MAGNITUDES)
    claim = Evidence(model=weights, optim=forged, probe=weights, metadata=metadata, stats=STEP_STATS)
    replay = Evidence(model=weights, optim=optim, probe=weights, metadata=metadata, stats=STEP_STATS)
    verdict = judge(claim, replay, boundary, expected_metadata=metadata)
    assert verdict.reason == "out_of_bounds" and verdict.failing == ["optim"]
    top = verdict.signals["optim"]["abs"][4]
    assert (top["ok"], top["floor"], top["limit"]) == (False, 0.0, 3.0 * 1e-8)


def test_a_replay_off_by_rounding_passes_where_every_bound_collapsed_to_zero_and_more_fails() -> None:
    """Calibration profiles that agree bit for bit leave bounds of zero: one ulp on every coordinate (what
    other kernels do) fails them, unless the floor holds the limits at rounding's scale. Eight ulps is
    beyond it."""
    claim = _evidence(MAGNITUDES)
    one_ulp = _evidence(_ulps_up(MAGNITUDES, 1))
    plain = judge(claim, one_ulp, _zero_boundary(0.0), expected_metadata=METADATA)
    assert plain.reason == "out_of_bounds" and plain.signals["weights"]["abs"][0]["floor"] is None
    floored = judge(claim, one_ulp, _zero_boundary(FLOOR_ULPS), expected_metadata=METADATA)
    assert floored.valid and floored.reason == "within_bounds"
    row = floored.signals["weights"]["abs"][0]
    assert (row["value"], row["bound"], row["floor"], row["limit"]) == (2.0**-24, 0.0, 2.0**-22, 2.0**-22)
    beyond = judge(claim, _evidence(_ulps_up(MAGNITUDES, 8)), _zero_boundary(FLOOR_ULPS), expected_metadata=METADATA)
    assert beyond.reason == "out_of_bounds"
    assert beyond.failing == ["weights", "optim", "probe"]
    assert [row["ok"] for row in beyond.signals["weights"]["abs"]] == [False, False, False, True, True]


def test_the_floor_is_not_computed_for_a_signal_within_its_bounds() -> None:
    claim = _evidence(MAGNITUDES)
    verdict = judge(claim, claim, _zero_boundary(FLOOR_ULPS), expected_metadata=METADATA)
    assert verdict.valid and all(
        row["floor"] is None for signal in SIGNALS for rows in verdict.signals[signal].values() for row in rows
    )


def test_a_boundary_published_before_the_floor_is_judged_without_it_and_a_huge_floor_is_refused() -> None:
    document = json.loads(_zero_boundary(4.0).model_dump_json())
    del document["floor_ulps"]
    assert load_boundary(json.dumps(document)).floor_ulps == 0.0
    with pytest.raises(BoundaryError, match="floor_ulps: Input should be less than or equal to 64"):
        load_boundary(json.dumps({**document, "floor_ulps": 65}))


def test_families_are_what_each_profile_changes_and_each_is_held_out_against_the_rest() -> None:
    assert get_profile("reference").families == frozenset()
    assert get_profile("threads2-micro2").families == {"threads", "micro-batch"}
    assert get_profile("fused-optimizer").families == {"optimizer-kernels"}
    assert get_profile("cuda-tf32").families == {"device"}
    splits = {split.family: split for split in family_splits(cpu_profiles())}
    assert {family: split.held_out for family, split in splits.items()} == {
        "accumulation": ("micro4-fp64acc",),
        "attention-kernels": ("math-attention",),
        "conv-kernels": ("native-conv",),
        "micro-batch": ("micro2", "micro3", "micro4", "micro8", "micro4-fp64acc", "threads2-micro2"),
        "optimizer-kernels": ("fused-optimizer",),
        "threads": ("threads2", "threads2-micro2"),
    }
    assert splits["threads"].calibration == (
        "micro2",
        "micro3",
        "micro4",
        "micro8",
        "micro4-fp64acc",
        "native-conv",
        "math-attention",
        "fused-optimizer",
    )


def test_leave_one_family_out_judges_every_held_out_interval_under_each_family(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_ovig(
        "eval",
        "--mode",
        "families",
        "--workload",
        "vision",
        "--strides",
        "5",
        "--intervals",
        "4",
        "--out",
        str(out),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "families.json").read_text())
    assert summary["settings"]["layout"]["5"]["held_out"] == [1, 3]  # every other interval calibrates
    families = summary["strides"]["5"]["families"]
    assert set(families) == {
        "accumulation",
        "attention-kernels",
        "conv-kernels",
        "micro-batch",
        "optimizer-kernels",
        "threads",
    }
    for row in families.values():
        assert [i["interval"] for i in row["judged"]] == [1, 3] and row["intervals"] == 2
        assert all(len(i["margins"]) == len(row["held_out"]) for i in row["judged"])
        boundary = row["boundary"]
        assert boundary["profiles"] == row["calibration"] and not set(row["held_out"]) & set(boundary["profiles"])
        expected = ([0, 2], 2 * len(row["calibration"]), FLOOR_ULPS)
        assert (boundary["positions"], boundary["replays"], boundary["floor_ulps"]) == expected
    # The CNN calls no attention kernel: the plain math path changes nothing, and passes by being identical.
    attention = families["attention-kernels"]
    assert attention["inert"] and attention["false_positives"] == 0
    assert all(i["margins"] == [None] for i in attention["judged"])
    table = (out / "families.md").read_text()
    assert "| 5 | attention-kernels (inert: bit-identical) | math-attention | 0/2 | 0/2 | 0/2 | - |" in table
