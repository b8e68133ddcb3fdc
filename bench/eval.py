"""Evaluation of the boundary against every attack, per workload and stride (`ovig eval` for each).

    .venv/bin/python bench/eval.py [--workloads vision,diffusion,language] [--main | --families | --floor]
    .venv/bin/python bench/eval.py --full-language
    .venv/bin/python bench/eval.py --llm-real [--llm-poison] [--llm-real-s100]
    .venv/bin/python bench/eval.py --ddp
    .venv/bin/python bench/eval.py --exact --workloads vision,diffusion
    .venv/bin/python bench/eval.py --exact-steering --workloads vision,diffusion,language,llm
    .venv/bin/python bench/eval.py --layer-one --workloads vision,diffusion,language

Tiny configs: strides 1, 10 and 100, with enough intervals for the issue's false-positive sample:
12 intervals spread over the run calibrate, and every other one is an honest held-out interval
(108 at s = 1 and 10, 32 at s = 100), judged on replays under profiles calibration never used.
Writes bench/results/eval_<workload>_tiny/{eval.json, eval.md, margin_vs_stride.png, honest_vs_stride.png}.
``--main`` runs only these main evaluations (the README's columns), not the runs behind the choices below.

Language tiny warms its learning rate up over 500 steps, and its boundary comes from every other interval
of a separate honest run (seed 2), so that the warm-up's drift is in it at every stride; every interval
of the evaluated run is held out (120 at s = 1 and 10). Its s = 100 runs as a second process beside s = 1
and 10, lighter so that it fits in the same two hours on these two cores: 36 intervals, calibrated on 12
of each of two separate runs (seeds 2 and 3), the attacks that need no sweep or adaptive run, and no
second honest run on other hardware; it writes bench/results/eval_language_tiny_s100/ (and, calibrated on
18 intervals of seed 2 alone, eval_language_tiny_s100_seed2_only/). The other language processes keep the
measurements that led there (docs/evaluation.md, "Language: why the tiny recipe warms up"): the constant
rate from the first step, with 12 calibrated intervals (eval_language_tiny_constant/,
eval_language_tiny_s100_constant/) and with the boundary from late intervals only
(eval_language_tiny_s100_constant_late_calibration/); the warm-up with 12 calibrated intervals of the
same run (eval_language_tiny_warmup500/, eval_language_tiny_s100_warmup500/); and the warm-up at s = 10
against 60 intervals of the separate run, before it was the main evaluation
(eval_language_tiny_s10_warmup500_separate_calibration/), and against its first 60 intervals, as the
protocol calibrates (eval_language_tiny_s10_first60/: the attacks closest to the boundary).

Vision runs two more processes beside its main one (the CNN with average pooling, the default), both
about max-pooling (docs/evaluation.md, "The CNN: why average pooling"): the same evaluation of the CNN
with max-pooling (``--config pool=max``, to bench/results/eval_vision_tiny_maxpool/), and that CNN at
s = 10 with the boundary calibrated on every interval of a separate honest run of seed 2, judging all 120
intervals of the evaluated run (to bench/results/eval_vision_tiny_maxpool_s10_separate_calibration/).

``--families`` runs the leave-one-family-out evaluation instead (``ovig eval --mode families``:
honest runs only; each family of execution profiles held out of calibration in turn and judged under),
with each workload's main layout, to bench/results/families_<workload>_tiny/{families.json, families.md};
two processes at a time: vision and diffusion in one after the other, language's beside them (only at
s = 10, on 100 intervals: its steps cost ten times the others', and every interval is replayed under every
profile, which at s = 1 and 100 with the main layouts would take hours more).

``--floor`` measures what the rounding floor costs in sensitivity: the row-tamper and targeted-gradient
sweeps at s = 1, 10, 100 (language: 1 and 10) with the floor and without it (``--floor-ulps 0``), on a
smaller layout (24 intervals, 12 at s = 100, 6 calibrated), to bench/results/floor_<workload>_tiny{,_none}/.
Language's run with the floor judges every non-adaptive attack too: its main evaluation takes hours.

``--layer-one`` measures the statistics judge alone (``ovig eval --mode layer-one``): every attack's score against
the owner's reference run on other hardware, and the honest run's, on each workload's main layout (language at
s = 1 and 10), to bench/results/layer_one_<workload>_tiny/{layer_one.json, layer_one.md}; bench/tables.py
multiplies its flags with the main evaluation's replay verdicts into the catch rate with targeted openings.

LLM tiny (the 2-layer Llama of SmolLM2's tokenizer, on every English chatterbot-corpus conversation so
that the poisoned instructions' success is measured on questions they never poisoned) runs s = 1 and
10 with 100 held-out intervals each (12 calibrate), and s = 100 as a second process, lighter: 36 intervals,
6 calibrated, no second honest run; a third process runs the boundary-aware attacker (aiming at the poisoned
reply, added after the first) alone on the s = 10 layout, to bench/results/eval_llm_tiny_adaptive/. All
calibrate under the four profiles that change an llm step
(:data:`LLM_PROFILES`: a batch of 4 makes micro8 micro4, and there is no convolution for native-conv).
``--llm-real`` evaluates SmolLM2-135M-Instruct with LoRA at s = 10: 66 intervals, 6 calibrated, 60 held
out (about 2.5 s a step on one core), to bench/results/eval_llm/; ``--llm-poison`` runs the poisoned
instruction set on a shorter run of its own (20 intervals, 4 calibrated), to bench/results/eval_llm_poison/.
``--llm-real-s100`` evaluates it at s = 100 on what fits a few hours of these two cores: 8 intervals, 2 calibrated,
6 held out, the attacks that fake one interval and need no adaptive run (an every-interval attack fakes all 8),
judged and run two at a time (``ovig eval --jobs 2``); to bench/results/eval_llm_s100/.

``--ddp`` evaluates a data-parallel provider: the tiny CNN's honest claims and attacks trained under ddp2
(two gloo ranks), judged by one-process replays against a boundary calibrated on 12 intervals of a
separate one-process run (seed 2), which never saw a data-parallel run: s = 1 and 10 with 112 intervals,
s = 100 with 36, every interval held out; the attacks that need no sweep. Writes
bench/results/eval_vision_tiny_ddp2/.

``--exact`` evaluates exact mode (``ovig eval --mode exact``) on each of ``--workloads`` in turn: s = 10, 24 intervals,
every default attack, the boundary-aware attacker aiming at the boundary of a boundary-mode twin of the
task (4 intervals calibrate it); to bench/results/exact_eval_<workload>_tiny/. ``--exact-llm-adaptive`` runs the
chat model's boundary-aware attacker (aiming at the poisoned reply, added after its exact evaluation) alone on
that layout, to bench/results/exact_eval_llm_tiny_adaptive/. ``--exact-steering`` runs exact mode's own adaptive
attacker (attacks.steering: the side of every value the log leaves free, also added after) alone on that layout
for each of ``--workloads``, to bench/results/exact_eval_<workload>_tiny_steering/.

``--full-language`` evaluates the full language config (MiniLM-L6, batch 16 x 64 tokens) at s = 1 and
10 with as many intervals as about half an hour of these two CPU cores allows, and the attacks that
need no long sweep; the same command runs unchanged on a GPU with more intervals. Writes
bench/results/eval_language_full/.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
WORK = Path(__file__).resolve().parent.parent / ".cache" / "eval"  # resumable work (ovig eval --work-dir)
TINY = ["--tiny", "--intervals", "1:120,10:120,100:44", "--calibration-positions", "12"]
NO_SWEEP = (
    "micro_batch_drop,data_perturbation,lr_tamper,low_precision,stale_gradient,skip_steps,backdoor,"
    "optimizer_tamper,interpolated_endpoint,row_tamper"
)
S100_LIGHT = ["--tiny", "--strides", "100", "--intervals", "100:36", "--no-other-hardware", "--attacks", NO_SWEEP]
# The execution profiles that change an llm step: its batch of 4 makes micro8 micro4, and it has no convolution.
LLM_PROFILES = ["--calibration-profiles", "micro2,micro4-fp64acc,math-attention,fused-optimizer"]
TINY_LLM = ["--tiny", "--config", "max_examples=0", *LLM_PROFILES]
# (options, output suffix) per process
# Language tiny warms its learning rate up over 500 steps (LanguageWorkload.optimizer), so its honest drift
# peaks at steps 40-100; every other interval of a separate honest run (seed 2) calibrates, so that phase
# is in the boundary at every stride, and every interval of the evaluated run is held out.
SEPARATE = ["--calibration-seed", "2", "--calibration-positions"]
# (options, output suffix) per process
GROUPS = {
    "language": [
        (["--tiny", "--strides", "1,10", "--intervals", "120", *SEPARATE, "60"], ""),
        # s = 100: 12 intervals of each of two separate runs. Interval 0 is a fifth of the warm-up, and its
        # drift follows the run's gradient scale (seed 2's is 3x smaller than seeds 1 and 3's)
        (
            [
                "--tiny",
                "--strides",
                "100",
                "--intervals",
                "36",
                "--no-other-hardware",
                "--attacks",
                NO_SWEEP,
                "--calibration-seed",
                "2",
                "--calibration-seed",
                "3",
                "--calibration-positions",
                "12",
            ],
            "_s100",
        ),
        # ... and from 18 intervals of seed 2 alone: one false positive, interval 0
        (
            [
                "--tiny",
                "--strides",
                "100",
                "--intervals",
                "36",
                "--no-other-hardware",
                "--attacks",
                NO_SWEEP,
                *SEPARATE,
                "18",
            ],
            "_s100_seed2_only",
        ),
        # before the warm-up: a constant rate from the first step (docs/evaluation.md: why the tiny recipe warms up)
        ([*TINY, "--strides", "1,10", "--warmup-steps", "0"], "_constant"),
        ([*S100_LIGHT, "--calibration-positions", "6", "--warmup-steps", "0"], "_s100_constant"),
        ([*S100_LIGHT, "--calibrate-on", "6,12,18,24,30", "--warmup-steps", "0"], "_s100_constant_late_calibration"),
        # the warm-up with the sparse same-run boundary of the other workloads (12 intervals)
        ([*TINY, "--strides", "1,10", "--warmup-steps", "500"], "_warmup500"),
        ([*S100_LIGHT, "--calibration-positions", "6", "--warmup-steps", "500"], "_s100_warmup500"),
        (
            [
                "--tiny",
                "--strides",
                "10",
                "--intervals",
                "10:120",
                "--calibration-seed",
                "2",
                "--calibration-positions",
                "60",
                "--warmup-steps",
                "500",
                "--no-other-hardware",
            ],
            "_s10_warmup500_separate_calibration",
        ),
        # the protocol's own calibration: the first 60 intervals (of the separate run), warm-up included
        (
            [
                "--tiny",
                "--strides",
                "10",
                "--intervals",
                "10:120",
                "--calibration-seed",
                "2",
                "--calibrate-on",
                ",".join(str(k) for k in range(60)),
                "--no-other-hardware",
                "--attacks",
                "lr_tamper,low_precision,row_tamper",
            ],
            "_s10_first60",
        ),
    ],
    "llm": [
        ([*TINY_LLM, "--strides", "1,10", "--intervals", "112", "--calibration-positions", "12"], ""),
        (
            [*TINY_LLM, "--strides", "100", "--intervals", "36", "--calibration-positions", "6", "--no-other-hardware"],
            "_s100",
        ),
        # the boundary-aware attacker aiming at the poisoned reply, added after the main run: its layout at s = 10
        (
            [
                *TINY_LLM,
                "--strides",
                "10",
                "--intervals",
                "112",
                "--calibration-positions",
                "12",
                "--attacks",
                "boundary_aware",
            ],
            "_adaptive",
        ),
    ],
    "vision": [
        ([*TINY, "--strides", "1,10,100"], ""),
        ([*TINY, "--strides", "1,10,100", "--config", "pool=max"], "_maxpool"),
        (
            ["--tiny", "--strides", "10", "--intervals", "10:120", "--calibration-seed", "2", "--config", "pool=max"],
            "_maxpool_s10_separate_calibration",
        ),
    ],
}
ALL_STRIDES = [([*TINY, "--strides", "1,10,100"], "")]
MAIN = ("", "_s100")  # the main evaluation's processes (--main): each workload's first, and language's s = 100
# Leave one family out, on each workload's main layout (language: its separate calibration runs).
# Two lanes side by side, each a list of (output folder, workload, options) run one after the other.
LOFO = ["--mode", "families"]
FAMILIES = [
    [
        ("families_vision_tiny", "vision", [*LOFO, *TINY, "--strides", "1,10,100"]),
        ("families_diffusion_tiny", "diffusion", [*LOFO, *TINY, "--strides", "1,10,100"]),
    ],
    # language only at s = 10, on 100 intervals calibrated from 20 of a separate run (seed 2): its steps cost ten
    # times the others', and every interval is replayed under every profile
    [
        (
            "families_language_tiny",
            "language",
            [*LOFO, "--tiny", "--strides", "10", "--intervals", "100", *SEPARATE, "20"],
        )
    ],
]
# What the rounding floor costs in sensitivity: the swept attacks' frontiers with the floor and without it
# (--floor-ulps 0), on a small layout (the attacked interval is one whose honest evidence passes).
NO_FLOOR = ["--floor-ulps", "0"]
SWEEP = [
    "--tiny",
    "--strides",
    "1,10,100",
    "--intervals",
    "1:24,10:24,100:12",
    "--calibration-positions",
    "6",
    "--attacks",
    "row_tamper,targeted_gradient",
    "--no-other-hardware",
]
# Language at s = 1 and 10 only (at s = 100 its calibration alone would take half an hour); with the floor it runs
# every non-adaptive attack too: its main evaluation (hours) was not re-run with the floor.
SWEEP_LANGUAGE = [*SWEEP[:2], "1,10", *SWEEP[3:]]
EVERY_ATTACK_LANGUAGE = [*SWEEP_LANGUAGE[:-3], "--attacks", f"{NO_SWEEP},targeted_gradient", "--no-other-hardware"]
FLOOR = [
    [
        ("floor_vision_tiny", "vision", SWEEP),
        ("floor_vision_tiny_none", "vision", [*SWEEP, *NO_FLOOR]),
        ("floor_diffusion_tiny", "diffusion", SWEEP),
        ("floor_diffusion_tiny_none", "diffusion", [*SWEEP, *NO_FLOOR]),
    ],
    [
        ("floor_language_tiny", "language", EVERY_ATTACK_LANGUAGE),
        ("floor_language_tiny_none", "language", [*SWEEP_LANGUAGE, *NO_FLOOR]),
    ],
]
# Layer one (ovig eval --mode layer-one): the statistics judge alone, on each workload's main layout (the same task and
# faked interval as its main evaluation; language at s = 1 and 10, whose intervals of the evaluated run are all
# held out against seed 2's, the way its main evaluation's are).
LAYER_ONE = [
    [
        (f"layer_one_{workload}_tiny", workload, ["--mode", "layer-one", *TINY, "--strides", "1,10,100"])
        for workload in ("vision", "diffusion")
    ],
    [
        (
            "layer_one_language_tiny",
            "language",
            ["--mode", "layer-one", "--tiny", "--strides", "1,10", "--intervals", "120", *SEPARATE, "60"],
        )
    ],
]
REAL_LLM = [
    "--full",
    "--strides",
    "10",
    "--intervals",
    "66",
    "--calibration-positions",
    "6",
    *LLM_PROFILES,
    "--no-other-hardware",
]
# ... and the poisoned instruction set on it, on a shorter run of its own (20 intervals, 4 calibrated)
REAL_LLM_POISON = [
    "--full",
    "--strides",
    "10",
    "--intervals",
    "20",
    "--calibration-positions",
    "4",
    *LLM_PROFILES,
    "--no-other-hardware",
    "--attacks",
    "poisoned_instructions",
]
# ... and at s = 100: 8 intervals (800 steps), 2 calibrated; the attacks that fake one interval, two at a time
REAL_LLM_S100 = [
    "--full",
    "--strides",
    "100",
    "--intervals",
    "8",
    "--calibration-positions",
    "2",
    *LLM_PROFILES,
    "--no-other-hardware",
    "--attacks",
    NO_SWEEP.replace("backdoor,", "") + ",base_tamper",
    "--jobs",
    "2",
]
DDP = [
    "--tiny",
    "--claim-profile",
    "ddp2",
    "--calibration-seed",
    "2",
    "--calibration-positions",
    "12",
    "--strides",
    "1,10,100",
    "--intervals",
    "1:112,10:112,100:36",
    "--attacks",
    NO_SWEEP,
]
# Exact mode (ovig eval --mode exact): bit-for-bit verdicts, every attack (the boundary-aware attacker aiming at the
# boundary of a boundary-mode twin of the task), at s = 10 on 24 intervals, 4 of them calibrating that boundary.
EXACT = [
    "--tiny",
    "--mode",
    "exact",
    "--strides",
    "10",
    "--intervals",
    "24",
    "--calibration-positions",
    "4",
    "--no-other-hardware",
]
EXACT_LLM_ADAPTIVE = [*EXACT, "--attacks", "boundary_aware"]
EXACT_STEERING = [*EXACT, "--attacks", "log_steering"]
FULL_LANGUAGE = [
    "--full",
    "--strides",
    "1,10",
    "--intervals",
    "1:40,10:16",
    "--calibration-positions",
    "4",
    "--batch-size",
    "16",
    "--attacks",
    NO_SWEEP.replace("backdoor,", ""),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="vision,diffusion,language,llm")
    parser.add_argument("--full-language", action="store_true", help="the full language config instead")
    parser.add_argument("--llm-real", action="store_true", help="SmolLM2-135M-Instruct with LoRA instead")
    parser.add_argument("--llm-poison", action="store_true", help="its poisoned instruction set on a run of its own")
    parser.add_argument("--llm-real-s100", action="store_true", help="SmolLM2 with LoRA at s = 100")
    parser.add_argument("--ddp", action="store_true", help="a data-parallel provider (ddp2) instead")
    parser.add_argument("--exact", action="store_true", help="exact mode on --workloads, one after another, instead")
    parser.add_argument("--exact-llm-adaptive", action="store_true", help="the chat model's adaptive attacker, exact")
    parser.add_argument("--exact-steering", action="store_true", help="exact mode's log-steering attacker")
    parser.add_argument("--main", action="store_true", help="only the main evaluation (the README's columns)")
    parser.add_argument("--families", action="store_true", help="leave one family out instead")
    parser.add_argument("--floor", action="store_true", help="the swept attacks with and without the floor instead")
    parser.add_argument("--layer-one", action="store_true", help="the statistics judge alone instead")
    args = parser.parse_args()
    ovig = Path(sys.executable).parent / "ovig"
    if args.families or args.floor or args.layer_one:
        wanted = args.workloads.split(",")
        chosen = FAMILIES if args.families else FLOOR if args.floor else LAYER_ONE
        lanes = [[run for run in lane if run[1] in wanted] for lane in chosen]
        sys.exit(_run_lanes(ovig, lanes))
    if args.full_language:
        runs = [[("language", "full", FULL_LANGUAGE)]]
    elif args.ddp:
        runs = [[("vision", "tiny_ddp2", DDP)]]
    elif args.exact:
        runs = [[(workload, "tiny_exact", EXACT)] for workload in args.workloads.split(",")]
    elif args.exact_llm_adaptive:
        runs = [[("llm", "tiny_exact_adaptive", EXACT_LLM_ADAPTIVE)]]
    elif args.exact_steering:
        runs = [[(workload, "tiny_exact_steering", EXACT_STEERING)] for workload in args.workloads.split(",")]
    elif args.llm_real or args.llm_poison or args.llm_real_s100:
        runs = [[("llm", "", REAL_LLM)]] if args.llm_real else []
        runs += [[("llm", "poison", REAL_LLM_POISON)]] if args.llm_poison else []
        runs += [[("llm", "s100", REAL_LLM_S100)]] if args.llm_real_s100 else []
    else:
        runs = [
            [
                (workload, f"tiny{suffix}", options)
                for options, suffix in GROUPS.get(workload, ALL_STRIDES)
                if not args.main or suffix in MAIN
            ]
            for workload in args.workloads.split(",")
        ]
    for group in runs:  # workloads one after another, a workload's processes side by side
        processes = []
        for workload, size, options in group:
            name = "_".join(["eval", workload, size]).rstrip("_")
            if size.startswith("tiny_exact"):  # the place for exact mode's results: bench/results/exact_*
                name = f"exact_eval_{workload}_tiny{size.removeprefix('tiny_exact')}"
            # the work is kept under .cache/ (git ignores it): an evaluation cut short resumes when run again
            argv = [str(ovig), "eval", "--workload", workload, *options, "--out", str(RESULTS / name)]
            processes.append(subprocess.Popen([*argv, "--work-dir", str(WORK / name)]))
        if any([process.wait() != 0 for process in processes]):  # a list: wait for every one
            sys.exit("an evaluation failed")


def _run_lanes(ovig: Path, lanes: list[list[tuple[str, str, list[str]]]]) -> str | None:
    """Run each lane's evaluations one after another, the lanes side by side; an error message or None."""
    scripts = [
        " && ".join(
            shlex.join([str(ovig), "eval", "--workload", workload, *options, "--out", str(RESULTS / out)])
            for out, workload, options in lane
        )
        for lane in lanes
        if lane
    ]
    processes = [subprocess.Popen(["bash", "-c", script]) for script in scripts]
    return "an evaluation failed" if any([process.wait() != 0 for process in processes]) else None


if __name__ == "__main__":
    main()
