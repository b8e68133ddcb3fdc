"""The calibration settings every command starts from: one home for them (issue 47).

`ovig calibrate`'s defaults, the demo, the evaluation and the benchmarks read them here; where one of them
differs (the demo calibrates on fewer profiles, to run in minutes), it says so and why. Kept free of torch,
so the command line reads its defaults without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CalibrationDefaults:
    # An interval passes while every value <= alpha x the largest honest drift calibration saw.
    alpha: float = 3.0
    # A limit is at least this many ulps of the claimed values at its percentile (0: no floor).
    floor_ulps: float = 4.0
    # A boundary may not claim more: past that the floor would be a tolerance, not rounding.
    max_floor_ulps: float = 64.0
    # The honest replays' execution profiles: every family but threads, which watchers confirm under.
    profiles: tuple[str, ...] = (
        "micro2",
        "micro4",
        "micro4-fp64acc",
        "native-conv",
        "math-attention",
        "fused-optimizer",
    )
    # How many intervals, spread from the first to the last, calibration replays.
    positions: int = 4


CALIBRATION = CalibrationDefaults()
