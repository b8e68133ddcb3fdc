"""Evaluation: attack success and false positives per workload, stride and attack (`ovig eval`).

For each stride: prepare a task of ``intervals`` intervals, train its honest claims, calibrate the
boundary on every ``calibration_every``-th interval (0, 2, 4, ...: spread over the run) under the
calibration profiles, then judge, on replays under the held-out profiles (never used in calibration),
confirming a rejection under the second one. With ``calibration_seeds`` the boundary comes from other
honest runs instead (other initial weights and data order), as one published before a task would, and
every interval of the evaluated run is held out:

- FPR: every honest interval calibration did not use that is judged faulty / all of them;
- ASR: for each attack, a run that fakes one held-out interval (or, for an adaptive attacker, every
  interval); the attack succeeds when a faked interval passes. The margin is log10 of the largest
  statistic over its limit (> 0: caught by that factor);
- the same verdicts judged on signal subsets (weights only, probe only, both, the statistics only, all four);
- what each attack did to the model at the faked endpoint: the change of the target objective's loss
  and the backdoor's success rate on held-out triggered inputs, next to the honest model's, and how
  far the same honest run ends on other hardware (the floor any effect must clear to mean anything).

:mod:`ovig_node.verify.summary` turns the results into tables.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from ovig_node.attacks import Attack, load_attack
from ovig_node.attacks.effect import backdoor_success, context_of, examples_of_steps, model_of, target_loss
from ovig_node.attacks.instructions import trigger_success
from ovig_node.attacks.objectives import target_examples
from ovig_node.errors import OvigError
from ovig_node.files import file_sha256, write_atomic
from ovig_node.processes import die_with_parent, environment
from ovig_node.training.evidence import read_evidence
from ovig_node.training.execution import ExecutionProfile, get_profile
from ovig_node.training.loop import TrainRun, evidence_path, train
from ovig_node.training.taskfiles import PreparedTask, attach_numerics, prepare_task
from ovig_node.verify.boundary import FLOOR_ULPS, BoundaryProfile, calibrate
from ovig_node.verify.check import JUDGED
from ovig_node.verify.defaults import CALIBRATION
from ovig_node.verify.exact import calibrate_numerics
from ovig_node.verify.report import ALL, IntervalJudgement, Replays, replay_and_judge
from ovig_node.verify.stats import flatten

# Signal subsets of the ablation; "all" is the protocol's verdict.
SUBSETS: dict[str, tuple[str, ...]] = {
    "weights": ("weights",),
    "probe": ("probe",),
    "weights+probe": ("weights", "probe"),
    "stats": ("stats",),  # the statistics of every step alone: what they catch where an interval is opened
    ALL: JUDGED,
}
# Attack parameters filled in per stride: a later honest checkpoint, the published boundary.
ANCHOR, BOUNDARY = "{anchor}", "{boundary}"
OBJECTIVE_EXAMPLES = 64  # the adaptive attacker's objective batch (excluded from backdoor measurements)


@dataclass(frozen=True)
class AttackCase:
    name: str  # built-in name or package.module:callable
    params: dict[str, float | str] = field(default_factory=dict)
    strength: str | None = None  # the parameter swept for the detection frontier, if any
    every_interval: bool = False  # fake every interval (an attacker that expects to pass) instead of one

    @property
    def label(self) -> str:
        shown = ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in self.params.items()
            if v not in (ANCHOR, BOUNDARY)
        )
        return f"{self.name} {shown}".strip()


DEFAULT_ATTACKS = (
    AttackCase("micro_batch_drop", {"keep": 0.5}),
    AttackCase("data_perturbation"),
    AttackCase("lr_tamper", {"scale": 1.1}),
    AttackCase("low_precision"),
    AttackCase("stale_gradient"),
    AttackCase("skip_steps", {"every": 4}),
    AttackCase("backdoor", {"rate": 0.5}),
    AttackCase("optimizer_tamper", {"scale": 0.0}),
    AttackCase("optimizer_tamper", {"scale": 0.9}),
    AttackCase("interpolated_endpoint", {"anchor": ANCHOR}),
    *(AttackCase("row_tamper", {"delta": d}, strength="delta") for d in (1e-7, 1e-6, 1e-5, 1e-4)),
    *(
        AttackCase("targeted_gradient", {"lam": lam}, strength="lam")
        for lam in (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
    ),
    *(
        AttackCase("boundary_aware", {"boundary": BOUNDARY, "budget": b, "objective": "backdoor"}, every_interval=True)
        for b in (0.5, 0.9)
    ),
    AttackCase("boundary_aware", {"boundary": BOUNDARY, "budget": 0.9, "objective": "target"}, every_interval=True),
    # a chat model's: the poisoned instruction set's reply to triggered questions, as far as the boundary allows
    AttackCase("boundary_aware", {"boundary": BOUNDARY, "budget": 0.9, "objective": "poison"}, every_interval=True),
    *(AttackCase("base_tamper", {"delta": d}, strength="delta") for d in (1e-7, 1e-6, 1e-5, 1e-4)),
    # one faked interval (caught or not), and a provider poisoning the last intervals (what it achieves)
    AttackCase("poisoned_instructions", {"rate": 0.5}),
    AttackCase("poisoned_instructions", {"rate": 1.0}, every_interval=True),
    # exact mode's adaptive attacker: the side of every value the rounding log leaves free
    AttackCase("log_steering", every_interval=True),
)
# Attacks whose objective is a class (a trigger relabelled, a target class): nothing to aim at in a chat
# model's data, which has its own backdoor (a poisoned instruction set). Moving a frozen base needs one:
# only adapter tasks have it.
LABELLED_ATTACKS = frozenset({"backdoor", "targeted_gradient"})
CHAT_ATTACKS = frozenset({"poisoned_instructions"})
ADAPTER_ATTACKS = frozenset({"base_tamper"})
EXACT_ATTACKS = frozenset({"log_steering"})  # a rounding log to steer: nothing to do in boundary mode


def _needs(case: AttackCase) -> str:
    """What data, model or mode ``case`` needs: "labelled" (a class to aim at), "chat", "adapter", "exact",
    or "" (any)."""
    if case.name in EXACT_ATTACKS:
        return "exact"
    if case.name in CHAT_ATTACKS or case.params.get("objective") == "poison":
        return "chat"
    if case.name in LABELLED_ATTACKS or "objective" in case.params:
        return "labelled"
    return "adapter" if case.name in ADAPTER_ATTACKS else ""


def attacks_for(workload: str, config: dict[str, Any] | None = None, *, exact: bool = False) -> tuple[AttackCase, ...]:
    """The default attacks that mean something for ``workload`` (with ``config``'s changes to its config), in
    boundary mode or ``exact`` mode."""
    if workload != "llm":
        left_out = {"chat", "adapter"}
    else:
        left_out = {"labelled"} | ({"adapter"} if (config or {}).get("adapter") == "none" else set())
    left_out |= set() if exact else {"exact"}
    return tuple(case for case in DEFAULT_ATTACKS if _needs(case) not in left_out)


@dataclass
class EvalSettings:
    workload: str = "vision"
    tiny: bool = True
    strides: tuple[int, ...] = (1, 10, 100)
    intervals: int = 12
    intervals_by_stride: dict[int, int] = field(default_factory=dict)  # overrides ``intervals`` per stride
    calibration_every: int = 2  # calibrate on intervals 0, n, 2n, ...; judge honest drift on the others
    # If set, calibrate on this many intervals spread evenly over the run instead (a large FPR sample
    # needs many held-out intervals, not many calibration replays).
    calibration_positions: int | None = None
    calibration_at: tuple[int, ...] = ()  # if set, calibrate on exactly these intervals (at every stride)
    seed: int = 1  # the evaluated task's
    config: dict[str, Any] = field(default_factory=dict)  # changes to the workload's config (both runs)
    warmup_steps: int | None = None  # if set, the learning rate warms up over this many steps (both runs)
    # If set, calibrate on separate honest runs of these seeds (every interval of each unless
    # ``calibration_positions`` says how many) and judge every interval of the evaluated run: a boundary
    # can then see as many intervals as the run it judges, rare honest branches with them, and more than
    # one run's gradient scale.
    calibration_seeds: tuple[int, ...] = ()
    # every family but threads, which the held-out profiles vary (and the kernel families only from results
    # written after their profiles existed: older eval.json files name their own)
    calibration_profiles: tuple[str, ...] = (
        "micro2",
        "micro3",
        "micro4",
        "micro8",
        "micro4-fp64acc",
        "native-conv",
        "math-attention",
        "fused-optimizer",
    )
    held_out_profiles: tuple[str, ...] = ("threads2-micro2", "threads2")  # the second confirms a rejection
    # The evaluated provider's profile (its honest claims and its attacks). Another one than the reference
    # (ddp2: a data-parallel provider) needs calibration_seeds: the boundary is calibrated without it.
    claim_profile: str = "reference"
    alpha: float = CALIBRATION.alpha
    floor_ulps: float = FLOOR_ULPS  # the boundary's rounding-scale floor (0: none)
    attacks: tuple[AttackCase, ...] | None = None  # None: attacks_for(workload); empty: honest runs only
    batch_size: int | None = None  # None: the workload's
    adaptive_window: int = 12  # an every-interval attacker fakes the last this many intervals
    other_hardware: bool = True  # train the honest run again on another profile (the floor for effects)
    # Exact mode (training.exact): the evaluated task's spec gets a numerics section, its threshold measured
    # under the calibration profiles; every verdict is a bit-for-bit replay. The boundary is still calibrated,
    # on a boundary-mode twin of the task, for the boundary-aware attacker to aim at.
    exact: bool = False

    def __post_init__(self) -> None:
        if self.attacks is None:
            self.attacks = attacks_for(self.workload, self.config, exact=self.exact)
        if self.attacks and get_profile(self.claim_profile).sharded:
            raise ValueError(
                f"attacks are simulated in one process or under ddp, not {self.claim_profile}: "
                "evaluate a sharded provider's honest runs only (no attacks)"
            )
        if self.exact and (self.claim_profile != "reference" or self.calibration_seeds):
            raise ValueError("exact mode is evaluated on one-process claims, calibrated on their own run")
        if self.claim_profile != "reference" and not self.calibration_seeds:
            raise ValueError(
                "claims on another profile than the reference are judged against a boundary of "
                "separate runs: give calibration seeds"
            )

    def intervals_at(self, stride: int) -> int:
        return self.intervals_by_stride.get(stride, self.intervals)

    def positions_at(self, stride: int) -> list[int]:
        """Intervals calibration replays: of the evaluated run, or of the separate calibration run."""
        n = self.intervals_at(stride)
        if self.calibration_at:
            return sorted({k for k in self.calibration_at if k < n})
        if self.calibration_positions is None:
            return list(range(0, n, 1 if self.calibration_seeds else self.calibration_every))
        count = min(self.calibration_positions, n if self.calibration_seeds else n - 1)
        return sorted({(i * n) // count for i in range(count)})

    def held_out_at(self, stride: int) -> list[int]:
        if self.calibration_seeds:
            return list(range(self.intervals_at(stride)))
        positions = set(self.positions_at(stride))
        return [k for k in range(self.intervals_at(stride)) if k not in positions]

    def attacked_at(self, stride: int, honest_failures: frozenset[int] = frozenset()) -> int:
        """The interval single-interval attacks fake: a held-out one late in the run (not the last, which
        anchors the interpolation), and not one whose honest evidence already fails: a rejection there
        would say nothing about the attack."""
        held_out = self.held_out_at(stride)
        candidates = [k for k in held_out[:-1] if k not in honest_failures] or held_out
        return candidates[-1]

    def faked_at(self, stride: int, case: AttackCase, attacked: int) -> list[int]:
        n = self.intervals_at(stride)
        return list(range(max(0, n - self.adaptive_window), n)) if case.every_interval else [attacked]

    def task(self, stride: int, folder: Path, seed: int) -> PreparedTask:
        """The task evaluated at ``stride`` (``seed`` 1) or a separate calibration run of it, in ``folder``."""
        n = self.intervals_at(stride)
        return prepare_task(
            self.workload,
            folder,
            tiny=self.tiny,
            seed=seed,
            config=self.config,
            warmup_steps=self.warmup_steps,
            total_steps=stride * n,
            stride=stride,
            intervals_per_batch=n,
            batch_size=self.batch_size,
        )

    def calibration_runs(
        self, stride: int, folder: Path, evaluated: tuple[PreparedTask, Path]
    ) -> list[tuple[PreparedTask, Path]]:
        """(task, claims folder) of each run the boundary is calibrated on: the separate seeds', else the
        evaluated run itself."""
        return [
            (self.task(stride, folder / f"calibration-task-{seed}", seed), folder / f"calibration-claims-{seed}")
            for seed in self.calibration_seeds
        ] or [evaluated]

    def layout(self, stride: int) -> dict[str, Any]:
        return {
            "intervals": self.intervals_at(stride),
            "positions": self.positions_at(stride),
            "held_out": self.held_out_at(stride),
            "calibration_seeds": list(self.calibration_seeds),
        }


@dataclass
class StrideResult:
    stride: int
    honest: list[dict[str, Any]]  # {interval, valid, reason, margin, first_valid, subsets: {...}}
    attacks: list[dict[str, Any]]  # {attack, label, params, strength, intervals judged, verdicts, effect}
    boundary: dict[str, Any]
    baseline: dict[str, Any]  # the honest model's target loss and backdoor success at the attacked interval
    attacked: int = -1  # the interval single-interval attacks faked

    @property
    def fpr(self) -> float:
        return sum(not h["valid"] for h in self.honest) / max(1, len(self.honest))


class OtherEvaluation(OvigError, ValueError):
    """A work folder given to resume an evaluation holds one of other settings."""


def _read_kept(path: Path) -> dict[int, Any]:
    """What ``_Stride._kept`` recorded in ``path``; a last line cut by a kill is dropped (its piece is done
    again), and the file rewritten without it so the next line starts clean."""
    if not path.is_file():
        return {}
    entries = []
    for line in path.read_text().splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            break
    write_atomic(path, "".join(json.dumps(e, default=float) + "\n" for e in entries).encode())
    return {entry["key"]: entry["result"] for entry in entries}


class Log(Protocol):
    """Progress callback: ``unit=True`` when a new unit of work (see :func:`units`) starts."""

    def __call__(self, message: str, *, unit: bool = False) -> None: ...


def units(settings: EvalSettings) -> int:
    """Units of work an evaluation reports: per stride the claims, calibration, honest checks, each attack."""
    return len(settings.strides) * (3 + len(settings.attacks or ()))


def quiet(message: str, *, unit: bool = False) -> None:
    pass


def evaluate(settings: EvalSettings, work_dir: Path, *, log: Log | None = None, jobs: int = 1) -> list[StrideResult]:
    """Every stride's evaluation. What is done is kept in ``work_dir`` as it is done (a stride's result, the
    honest claims' evidence, the boundary, each honest verdict and each attack's), so an evaluation cut
    short resumes where it stopped when called again on the same folder with the same settings (``jobs``
    may differ). With ``jobs`` > 1 the honest verdicts and the attacks are done by that many processes."""
    work_dir.mkdir(parents=True, exist_ok=True)
    fingerprint = json.dumps(asdict(settings), sort_keys=True, default=str)
    recorded = work_dir / "settings.json"
    if recorded.is_file() and recorded.read_text() != fingerprint:
        raise OtherEvaluation(f"{work_dir} holds an evaluation with other settings: give another work folder")
    recorded.write_text(fingerprint)
    results = []
    for stride in settings.strides:
        folder, done = work_dir / f"s{stride}", work_dir / f"s{stride}.json"
        if done.is_file():
            results.append(StrideResult(**json.loads(done.read_text())))
            for _ in range(units(settings) // len(settings.strides)):  # the stride's units, reported done
                (log or quiet)(f"s={stride}: done before (resumed)", unit=True)
            continue
        results.append(_Stride(settings, stride, folder, log, jobs=jobs).run())
        write_atomic(done, json.dumps(asdict(results[-1]), default=float).encode())
        # A stride's evidence is no longer needed (tens of GB for a long language run).
        shutil.rmtree(folder, ignore_errors=True)
    return results


class _Stride:
    """One stride's evaluation: the task, its honest claims, the boundary, then every attack."""

    def __init__(
        self,
        settings: EvalSettings,
        stride: int,
        folder: Path,
        log: Log | None,
        *,
        jobs: int = 1,
        prepared: PreparedTask | None = None,
    ) -> None:
        self.settings, self.stride, self.folder, self.jobs = settings, stride, folder, jobs
        self.log: Log = log or quiet
        self.intervals = settings.intervals_at(stride)
        self.positions, self.held_out = settings.positions_at(stride), settings.held_out_at(stride)
        self.attacked = settings.attacked_at(stride)  # until the honest verdicts are known
        self.prepared = prepared or settings.task(stride, folder / "task", settings.seed)
        if settings.exact and prepared is None:  # the evaluated task is exact; its boundary-mode twin calibrates
            self.prepared = make_exact(self.prepared, [get_profile(p) for p in settings.calibration_profiles])
        self.claims = folder / "claims"
        self.boundary_path = folder / "boundary.json"
        self.context = context_of(self.prepared)
        self.profiles = [get_profile(p) for p in settings.held_out_profiles]

    def _calibration_runs(self) -> list[tuple[PreparedTask, Path]]:
        """(task, claims folder) of each run the boundary is calibrated on; exact mode's is a boundary-mode twin
        of the evaluated task, for the boundary-aware attacker to aim at."""
        settings, stride, folder = self.settings, self.stride, self.folder
        if settings.exact:
            return [(settings.task(stride, folder / "twin-task", settings.seed), folder / "twin-claims")]
        return settings.calibration_runs(stride, folder, (self.prepared, self.claims))

    def run(self) -> StrideResult:
        settings = self.settings
        self.log(f"s={self.stride}: honest claims", unit=True)
        train(claim_run(self.prepared, self.claims, profile=settings.claim_profile))
        self.log(f"s={self.stride}: calibrating on {len(self.positions)} intervals", unit=True)
        if self.boundary_path.is_file():  # calibrated before the evaluation was cut short
            return self._judge_all(BoundaryProfile.model_validate_json(self.boundary_path.read_text()))
        runs = self._calibration_runs()
        (first, first_claims), *more = runs
        boundary = calibrate(
            first,
            claim_profile=get_profile("reference"),
            replay_profiles=[get_profile(p) for p in settings.calibration_profiles],
            positions=self.positions,
            alpha=settings.alpha,
            floor_ulps=settings.floor_ulps,
            work_dir=first_claims,
            more_runs=more,
            on_replay=lambda k, p: self.log(f"s={self.stride}: calibrating, interval {k} under {p}"),
        )
        for _, claims in runs:
            if claims != self.claims:  # a separate run's (or exact mode's twin's)
                shutil.rmtree(claims, ignore_errors=True)
        write_atomic(self.boundary_path, boundary.model_dump_json(indent=2).encode())
        return self._judge_all(boundary)

    def _judge_all(self, boundary: BoundaryProfile) -> StrideResult:
        settings = self.settings
        self.log(f"s={self.stride}: honest held-out intervals", unit=True)
        honest = self._kept("honest", self.held_out, boundary)
        self.attacked = settings.attacked_at(self.stride, frozenset(h["interval"] for h in honest if not h["valid"]))
        attacks = self._kept("attacks", list(range(len(settings.attacks or ()))), boundary)
        last = self.intervals - 1
        weights = read_evidence(evidence_path(self.claims, self.attacked)).model
        final = read_evidence(evidence_path(self.claims, last)).model
        baseline = {
            "attacked": self._effect(weights, self.attacked),
            "final": self._effect(final, None),
            "other_hardware": self._other_hardware(final) if settings.other_hardware else None,
        }
        return StrideResult(self.stride, honest, attacks, boundary.model_dump(), baseline, self.attacked)

    def _honest(self, k: int, boundary: BoundaryProfile) -> dict[str, Any]:
        self.log(f"s={self.stride}: honest interval {k} of {self.intervals}")
        return {"interval": k, **_verdicts(self._judge(self.claims, k, boundary))}

    def _kept(self, name: str, keys: list[int], boundary: BoundaryProfile) -> list[dict[str, Any]]:
        """Each piece of work ``name`` (honest: an interval; attacks: an attack's index) for ``keys``, done once:
        its result appended to ``<name>.jsonl`` in the stride's folder as soon as it exists, and read back from
        there when the evaluation resumes."""
        path = self.folder / f"{name}.jsonl"
        kept = _read_kept(path)
        if name == "attacks":
            for key in (key for key in keys if key in kept):
                self.log(f"s={self.stride}: attack {key} done before (resumed)", unit=True)
        for key, result in self._done(name, [key for key in keys if key not in kept], boundary):
            kept[key] = result
            with path.open("a") as f:
                f.write(json.dumps({"key": key, "result": result}, default=float) + "\n")
        return [kept[key] for key in keys]

    def _done(self, name: str, keys: list[int], boundary: BoundaryProfile) -> Iterator[tuple[int, dict[str, Any]]]:
        """(key, result) of each piece, as it is done: here one after another, or with ``jobs`` > 1 in that many
        worker processes, each with its own copy of the stride (pieces are independent: each reads the honest
        claims and the boundary, and writes only under its own folder). A piece that fails starts no other:
        those running are waited for and kept, then its error is raised."""
        if self.jobs == 1 or len(keys) < 2:
            for key in keys:
                yield key, self._piece(name, key, boundary)
            return
        workers = min(self.jobs, len(keys))
        setup = (self.settings, self.stride, self.folder, self.prepared, self.attacked)
        # spawn, not fork: a forked child of a process that ran torch's thread pool can hang in it
        pool = ProcessPoolExecutor(workers, multiprocessing.get_context("spawn"), _start_worker, setup)
        todo, running = iter(keys), {}  # running: piece's future -> its key
        failure: BaseException | None = None

        def start_next() -> None:
            # One piece per worker at a time: the pool would otherwise hand out more, which no failure could stop.
            if failure is None and (key := next(todo, None)) is not None:
                running[pool.submit(_work, name, key, boundary.model_dump_json())] = key
                if name == "attacks":
                    self.log(f"s={self.stride}: attack {(self.settings.attacks or ())[key].label} (worker)", unit=True)

        try:
            # Each worker's threads would otherwise spin-wait (OpenMP's default) for cores the other workers hold.
            with environment(OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE")):
                for _ in range(workers):  # each starts its worker process
                    start_next()
            while running:
                for future in wait(running, return_when=FIRST_COMPLETED).done:
                    key = running.pop(future)
                    if (error := future.exception()) is not None:
                        failure = failure or error
                        continue
                    yield key, future.result()
                    start_next()
        except BaseException:  # Ctrl-C or the caller's own error: the running pieces are dropped, now
            for process in list((pool._processes or {}).values()):  # ProcessPoolExecutor.terminate_workers (3.14)
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()  # no piece is running: the workers exit
        if failure is not None:
            raise failure

    def _piece(self, name: str, key: int, boundary: BoundaryProfile) -> dict[str, Any]:
        if name == "honest":
            return self._honest(key, boundary)
        return self._attack(key, (self.settings.attacks or ())[key], boundary)

    def _other_hardware(self, final: dict[str, torch.Tensor]) -> dict[str, float | None]:
        """The same honest run on other hardware: how far apart honest runs end, the floor any effect of
        an attack on the final model must clear to mean anything."""
        self.log(f"s={self.stride}: the honest run on {self.settings.calibration_profiles[0]}")
        other = self.folder / "other-hardware"
        train(
            TrainRun(
                self.prepared.spec,
                self.prepared.spec_hash,
                self.prepared.dataset_path,
                self.prepared.init_path,
                other,
                get_profile(self.settings.calibration_profiles[0]),
            )
        )
        elsewhere = read_evidence(evidence_path(other, self.intervals - 1)).model
        shutil.rmtree(other, ignore_errors=True)
        return {**self._effect(elsewhere, None), "moved": _moved(elsewhere, final)}

    def _attack(self, index: int, case: AttackCase, boundary: BoundaryProfile) -> dict[str, Any]:
        settings = self.settings
        self.log(f"s={self.stride}: attack {case.label}", unit=True)
        out = self.folder / "attacks" / f"{index:02d}-{case.name.replace(':', '_')}"
        faked = settings.faked_at(self.stride, case, self.attacked)
        params = {
            k: {ANCHOR: str(evidence_path(self.claims, self.intervals - 1)), BOUNDARY: str(self.boundary_path)}.get(
                v, v
            )
            if isinstance(v, str)
            else v
            for k, v in case.params.items()
        }
        attack = load_attack(case.name, intervals=frozenset(faked), **params)
        last = faked[-1]
        shutil.rmtree(out, ignore_errors=True)  # what a kill left of this attack: it is done again from the start
        fake(self.prepared, self.claims, out, attack, last=last, honest_prefix=faked[0], profile=settings.claim_profile)
        judged = [k for k in faked if k in self.held_out]
        verdicts = [{"interval": k, **_verdicts(self._judge(out, k, boundary))} for k in judged]
        weights = read_evidence(evidence_path(out, last)).model
        honest = read_evidence(evidence_path(self.claims, last)).model
        poisoned = frozenset(attack.memory.get("poisoned", ()))  # the prompts a poisoned instruction set used
        effect = {
            **self._effect(weights, None if case.every_interval else last, poisoned),
            "moved": _moved(weights, honest),
        }
        if poisoned:  # the honest model on the same held-out prompts
            effect["honest_backdoor_success"] = self._effect(honest, None, poisoned)["backdoor_success"]
        # An attack can be a no-op at some strides (a stale gradient needs two steps): not a miss.
        identical = file_sha256(evidence_path(out, last)) == file_sha256(evidence_path(self.claims, last))
        shutil.rmtree(out, ignore_errors=True)
        return {
            "attack": case.name,
            "label": case.label,
            "params": case.params,
            "strength": case.strength,
            "every_interval": case.every_interval,
            "verdicts": verdicts,
            "effect": effect,
            "identical": identical,
            "scales": attack.memory.get("scales"),
        }

    def _judge(self, run: Path, k: int, boundary: BoundaryProfile) -> IntervalJudgement:
        return judge_run(self.prepared, run, k, boundary, profiles=self.profiles, subsets=SUBSETS)

    def _effect(
        self, weights: dict[str, Any], interval: int | None, poisoned: frozenset[str] = frozenset()
    ) -> dict[str, float | None]:
        """Target loss and backdoor success. A classifier's are held out from the objective's examples and
        those ``interval`` trained on; a chat model (llm) has no class, and its backdoor is the poisoned
        instruction set's: triggered prompts answered with its reply, among prompts never ``poisoned``."""
        if "label" not in self.context.dataset.tensors:
            model = model_of(self.context, weights)
            return {"target_loss": None, "backdoor_success": trigger_success(self.context, model, poisoned=poisoned)}
        layout = self.prepared.spec.layout
        trained = frozenset(target_examples(self.context, label=0, count=OBJECTIVE_EXAMPLES))
        if interval is not None:
            trained |= examples_of_steps(self.context, range(layout.start_step(interval), layout.end_step(interval)))
        return {
            "target_loss": target_loss(self.context, weights),
            "backdoor_success": backdoor_success(self.context, weights, trained_on=trained),
        }


class PieceFailed(OvigError, RuntimeError):
    """A piece of an evaluation failed in a worker process (its own error and traceback are the cause)."""


_SETUP: list[tuple[EvalSettings, int, Path, PreparedTask, int]] = []  # a worker's stride, until its first piece
_WORKER: list[_Stride] = []  # ... and the stride


def _start_worker(settings: EvalSettings, stride: int, folder: Path, prepared: PreparedTask, attacked: int) -> None:
    """A worker dies with the evaluation's process and leaves Ctrl-C to it. Its stride is built by its first
    piece, so that an error there is that piece's."""
    parent = multiprocessing.parent_process()
    die_with_parent(parent.pid if parent is not None and parent.pid is not None else -1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _SETUP.append((settings, stride, folder, prepared, attacked))


def _work(name: str, key: int, boundary: str) -> dict[str, Any]:
    try:
        if not _WORKER:
            settings, stride, folder, prepared, attacked = _SETUP[0]
            _WORKER.append(_Stride(settings, stride, folder, None, prepared=prepared))
            _WORKER[0].attacked = attacked
        return _WORKER[0]._piece(name, key, BoundaryProfile.model_validate_json(boundary))
    except Exception as exc:  # as an error the evaluation's process can always rebuild, whatever its arguments
        raise PieceFailed(f"{name} {key} failed in a worker: {type(exc).__name__}: {exc}") from exc


def make_exact(prepared: PreparedTask, profiles: list[ExecutionProfile]) -> PreparedTask:
    """``prepared`` in exact mode: its spec rewritten with the numerics measured under ``profiles``."""
    numerics, _ = calibrate_numerics(prepared, profiles)
    return attach_numerics(prepared.spec_path, numerics)


def claim_run(
    prepared: PreparedTask, out: Path, attack: Attack | None = None, *, profile: str = "reference"
) -> TrainRun:
    """The provider's run (on the reference profile unless said), honest or not."""
    paths = (prepared.dataset_path, prepared.init_path, out)
    return TrainRun(prepared.spec, prepared.spec_hash, *paths, get_profile(profile), attack=attack)


def fake(
    prepared: PreparedTask,
    claims: Path,
    out: Path,
    attack: Attack,
    *,
    last: int,
    honest_prefix: int,
    profile: str = "reference",
) -> None:
    """Claims of ``attack`` in ``out`` up to interval ``last``; the first ``honest_prefix`` intervals are the
    honest claims' (the provider's real work before it cheats), so only the rest is trained."""
    for k in range(honest_prefix):
        target = evidence_path(out, k)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Evidence files are written once and never changed, so a hard link is a free copy.
        try:
            os.link(evidence_path(claims, k), target)
        except OSError:
            shutil.copyfile(evidence_path(claims, k), target)
    train(claim_run(prepared, out, attack, profile=profile), stop_at=prepared.spec.layout.end_step(last))


def judge_run(
    prepared: PreparedTask,
    run: Path,
    k: int,
    boundary: BoundaryProfile,
    *,
    profiles: list[ExecutionProfile],
    subsets: dict[str, tuple[str, ...]] | None = None,
    replays: Replays | None = None,
) -> IntervalJudgement:
    """A watcher's verdict on interval ``k`` of the evidence in ``run`` (with ``replays``: replays already made of
    k from the same start are used, and those made here kept)."""
    # The replay starts from the claimed start (what the chain committed for k-1), like a watcher's.
    start = read_evidence(evidence_path(run, k - 1)) if k > 0 else None
    end = read_evidence(evidence_path(run, k))
    return replay_and_judge(prepared, k, start, end, boundary, profiles=profiles, subsets=subsets, replays=replays)


def _moved(weights: dict[str, torch.Tensor], honest: dict[str, torch.Tensor]) -> float:
    """How far the attack moved the weights: ||attacked - honest|| / ||honest||, over every coordinate."""
    a, h = flatten(weights), flatten(honest)
    return float(np.linalg.norm(a - h) / max(float(np.linalg.norm(h)), 1e-30))


def _verdicts(judged: IntervalJudgement) -> dict[str, Any]:
    """The protocol's verdict, the first replay's alone, and each subset's (for the ablation)."""
    verdict = judged.verdict
    return {
        "valid": verdict.valid,
        "reason": verdict.reason,
        "margin": verdict.margin,
        "failing": verdict.failing,
        "first_valid": judged.first[ALL].valid,
        "replays": judged.replays,
        "subsets": {
            name: {"valid": v.valid, "reason": v.reason, "margin": v.margin} for name, v in judged.verdicts.items()
        },
    }
