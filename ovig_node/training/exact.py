"""Exact numerics: float64 compute, float32 results, and a rounding log (spec ``numerics.mode = "exact"``).

Boundary mode tolerates the drift between execution profiles; exact mode removes it, after Srivastava
et al. (arXiv 2403.09603). A step runs in float64 and every value that matters is rounded to float32 at
fixed *rounding sites*. Two profiles compute a float64 value to within a tiny discrepancy of each other,
so they round it to the same float32 value, unless it lies within that discrepancy of a rounding
midpoint (halfway between two neighbouring float32 values). The trainer logs every value it rounds
within its phase's ``threshold`` (below) float32 ulps of a midpoint: where it is and which neighbour it took. A replay
under any profile rounds those positions as the log says, every other one to nearest, and so
reproduces the trainer's evidence bit for bit.

Rounding sites, in the order a step meets them (the ``phase`` of a log entry):

    FORWARD   each float output of every leaf module (``site``: its index in ``named_modules()``,
              ``call``: which call of it in this forward pass, ``element``: which output of a tuple)
    BACKWARD  the gradient flowing into such an output, for per-example outputs (a tensor shared by
              the batch, such as a position embedding, gets a gradient summed over the batch, which a
              micro-batch sees only part of: it flows on unrounded into its parameter's gradient)
    GRADIENT  each trainable parameter's gradient, once summed over micro-batches (``site``: its index
              in ``named_parameters()``)
    UPDATE    each trainable parameter (``element`` 0) and each float optimizer-state tensor (1, 2, ...
              in sorted name order) after the optimizer's step

A per-example output's ``position`` counts in the whole batch (example index x the example's size +
offset), so a replay that splits the batch into micro-batches names the same positions, and so does each
rank of a data-parallel run, whose logs are gathered into one (:attr:`ExactNumerics.combine`); which outputs
are per-example is learnt from two small forward passes of 2 and 3 examples (:meth:`learn_sites`).

A log is an int64 tensor of rows ``(step, phase, site, call, element, position, up)``, sorted and unique;
``up`` is 1 when the larger neighbour was taken. E_k stores it compactly (:func:`encode_log`): each key
``(step, phase, site, call, element)`` once with its count of entries, the positions, and the directions
as packed bits: about 8 bytes an entry. The probe gradient of E_k is computed at step ``b_k``,
so its entries carry that step. A replay applying a log checks it (:attr:`ExactNumerics.faults`):

- an entry whose value in the replay is not within ``1.25 * threshold`` ulps of a midpoint (``far_entry``),
  or is farther than ``threshold / 4`` and takes the farther neighbour (``steered_entry``): the log
  settles only what an honest execution could round either way;
- a replay value within ``threshold / 2`` ulps of a midpoint that the log does not name (``skipped_entry``);
- an entry no rounding of the interval reached (``unused_entry``).

Each phase has its threshold T, at least eight times the discrepancy d it must absorb, so that the bands
above hold for every honest replay (see FAR, FREE, SKIPPED; :func:`ovig_node.verify.exact.calibrate_numerics`
measures each phase's). A parameter's gradient sums a whole batch, and a sum that nearly cancels is no more
precise in absolute terms than its terms' sizes allow: in ulps of a result that can be arbitrarily near zero,
its discrepancy has no bound. Hence the gradient's **floor** (``numerics.gradient_floor`` = f): below 2^-f of
the step's largest gradient magnitude (over every trainable parameter, rounded down to a power of two: the
edge), a gradient is rounded on the fixed grid of the float32 ulp at the edge (values of float32 all, as
float32's own subnormals are at 2^-126), and its distance to a midpoint counts in that grid's unit, against
which the sum's absolute error is small. The edge is the step's, not each tensor's: a tensor whose gradient
is zero in exact arithmetic (an attention key's bias: softmax ignores a shift) holds only rounding noise,
whose own largest value no two profiles agree on; below the step's edge it rounds to zero. Attention runs on the plain
math path in exact mode: the fused kernel's float64 backward differs from it at the query and key
gradients (softmax's backward cancels) beyond the probe threshold, so beyond any threshold.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ovig_node.errors import OvigError
from ovig_node.protocol.spec import EXACT_STEP_BITS

FORWARD, BACKWARD, GRADIENT, UPDATE = range(4)
PHASES = ("forward", "backward", "gradient", "update")
# A replay's checks, in units of the phase's threshold T; calibration makes T at least 8x the largest
# discrepancy d measured between profiles (verify.exact.SAFETY), and these hold for d <= T/8:
FAR = 1.25  # a logged value (|x - m| < T) is within T + d of the midpoint in any honest replay
FREE = 0.25  # nearer than this, the two sides can disagree on the nearest neighbour; farther, the log must not
MAX_THRESHOLD = 0.1  # wider, and the log would settle what no honest execution finds ambiguous
SKIPPED = 0.5  # an unlogged value (|x - m| >= T) is at least T - d from it in any honest replay
# Nearer than this in the trainer's own run, a value is within FREE in any honest replay (d <= T/8): its side is
# the trainer's to choose, and a dishonest one can choose it (attacks.steering measures the room this leaves).
STEERABLE = FREE - 0.125
# Field widths of a packed site (step, phase, site, call, element): a log outside them is malformed.
FIELD_BITS = (EXACT_STEP_BITS, 2, 16, 12, 8)
COLUMNS = ("step", "phase", "site", "call", "element", "position", "up")
Key = tuple[int, int, int, int, int]  # (step, phase, site, call, element)


@dataclass
class Trace:
    """Each logged value's signed distance to its midpoint in ulps, by log row (threshold calibration)."""

    rows: list[torch.Tensor] = field(default_factory=list)
    offsets: list[torch.Tensor] = field(default_factory=list)

    def add(self, rows: torch.Tensor, offsets: torch.Tensor) -> None:
        self.rows.append(rows)
        self.offsets.append(offsets)

    def table(self) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.rows:
            return torch.empty((0, len(COLUMNS)), dtype=torch.int64), torch.empty(0, dtype=torch.float64)
        return torch.cat(self.rows), torch.cat(self.offsets)


class ExactNumerics:
    """The rounding of one model's training in exact mode: records a log (trainer) or applies one (replay).

    Install it on the float64 model (:meth:`learn_sites` once, then every step: :meth:`begin_step`,
    :meth:`part` around each micro-batch's forward and backward, :meth:`round_gradients`,
    :meth:`round_update` after the optimizer's step); :meth:`take_log` ends an interval.
    """

    def __init__(
        self,
        model: nn.Module,
        thresholds: tuple[float, ...],
        claimed: torch.Tensor | None = None,
        *,
        max_entries: int = 2**31,
        gradient_floor: int | None = None,
    ) -> None:
        if len(thresholds) != len(PHASES) or not all(0.0 < t < MAX_THRESHOLD for t in thresholds):
            raise ValueError(f"a threshold per phase, each between 0 and {MAX_THRESHOLD} ulps, not {thresholds}")
        if any(getattr(m, "track_running_stats", False) for m in model.modules()):
            raise ValueError(
                "exact mode does not round buffers a forward pass updates (a BatchNorm's running statistics)"
            )
        self.thresholds = thresholds
        self.max_entries = max_entries
        # A dishonest trainer's choice of side for the values within STEERABLE (key, which values, lower and
        # upper neighbour, nearest): the values it returns are logged (attacks.steering). None: the nearest.
        self.steer: Callable[[Key, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor] | None = None
        self.gradient_floor = gradient_floor  # None: a gradient rounds to float32 all the way down
        # calibration: every gradient value as computed (float64, before rounding), by key
        self.gradients: dict[Key, torch.Tensor] | None = None
        # every rank's log in a data-parallel run (training.distributed.all_rows; a collective)
        self.combine: Callable[[torch.Tensor], torch.Tensor] = lambda rows: rows
        self.model = model
        self._sites = {id(m): i for i, (_, m) in enumerate(model.named_modules()) if not list(m.children())}
        self._params = [(i, p) for i, (_, p) in enumerate(model.named_parameters()) if p.requires_grad]
        self._per_example: dict[tuple[int, int, int], bool] | None = None
        self._learning: dict[tuple[int, int, int], int] | None = None
        self._calls: dict[int, int] = defaultdict(int)
        self._step = 0
        self._offset = 0  # first example of the current micro-batch in the step's batch
        self._recorded: list[torch.Tensor] = []
        self.trace: Trace | None = None
        self.faults: list[str] = []
        self._codes = torch.empty(0, dtype=torch.int64)  # a claimed log's sites, packed (:func:`_code`), sorted
        self._starts = torch.zeros(1, dtype=torch.int64)  # where each site's entries start (and one past the last)
        self._log = claimed
        self._used = torch.zeros(0, dtype=torch.bool)
        if claimed is not None:
            self._index(claimed)
        for module in model.modules():  # the hooks live as long as the model: one model, one numerics
            if id(module) in self._sites:
                module.register_forward_hook(self._forward_hook)
        # a workload's loss may hand the model float32 inputs it made from the batch (pixels / 16): exact in float64
        model.register_forward_pre_hook(self._inputs_in_compute_dtype, with_kwargs=True)
        self._compute = torch.float64

    # --- the loop's calls ---------------------------------------------------------------------------

    def learn_sites(self, forward: Callable[[int], object]) -> None:
        """Learn which leaf outputs are per-example: ``forward(n)`` runs the model on ``n`` examples."""
        shapes: list[dict[tuple[int, int, int], int]] = []
        for n in (2, 3):
            self._learning = {}
            self._calls.clear()
            with torch.no_grad():
                forward(n)
            shapes.append(self._learning)
        self._learning = None
        self._calls.clear()
        sizes = dict(zip((2, 3), shapes, strict=True))
        self._per_example = {key: sizes[2][key] == 2 and sizes[3].get(key) == 3 for key in sizes[2]}

    def begin_step(self, step: int) -> None:
        self._step = step

    def part(self, offset: int) -> None:
        """The next forward pass is of the micro-batch whose first example is ``offset`` in the step's batch."""
        self._offset = offset
        self._calls.clear()

    def round_gradients(self) -> None:
        grads = [(site, param, param.grad) for site, param in self._params if param.grad is not None]
        edge = None
        if self.gradient_floor is not None:
            edge = floor_edge(max((_largest(grad) for _, _, grad in grads), default=0.0), self.gradient_floor)
        for site, param, grad in grads:
            key = (self._step, GRADIENT, site, 0, 0)
            if self.gradients is not None:
                self.gradients[key] = grad.detach().reshape(-1).clone()
            param.grad = self._round(grad, key, 0, edge)

    @torch.no_grad()
    def round_update(self, optimizer: torch.optim.Optimizer) -> None:
        for site, param in self._params:
            param.copy_(self._round(param, (self._step, UPDATE, site, 0, 0), 0))
            state = optimizer.state.get(param, {})
            floats = sorted(name for name, value in state.items() if name != "step" and _is_float(value))
            for element, name in enumerate(floats, start=1):
                state[name].copy_(self._round(state[name], (self._step, UPDATE, site, 0, element), 0))

    def take_log(self) -> torch.Tensor:
        """The log of what was rounded since the last call (sorted, unique rows); a replay's is the claim's."""
        if self._log is not None:
            unused = int((~self._used).sum())
            if unused:
                self._fault(f"unused_entry: {unused} log entries name no rounding this interval reached")
            return self._log
        rows = torch.cat(self._recorded) if self._recorded else torch.empty((0, len(COLUMNS)), dtype=torch.int64)
        self._recorded = []
        log = self.combine(torch.unique(rows, dim=0) if len(rows) else rows)
        # a model too large for the fields' widths, or data-parallel ranks that rounded one value two ways
        if (problem := log_problem(log)) is not None:
            raise LogError(f"this run's rounding log cannot be published (or its ranks disagree): {problem}")
        if len(log) > self.max_entries:
            raise LogTooLong(
                f"this interval logged {len(log)} roundings, more than the spec's {self.max_entries}: "
                "its thresholds are too wide for this run (calibrate the spec again)"
            )
        return log

    @contextlib.contextmanager
    def in_float32(self) -> Iterator[None]:
        """A cheating provider's shortcut (the ``low_precision`` attack in exact mode): the block computes in
        float32, unrounded, as if exact mode were not there."""
        self.model.float()
        self._compute = torch.float32
        try:
            yield
        finally:
            self._compute = torch.float64
            self.model.double()

    def _inputs_in_compute_dtype(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Any, Any]:
        def cast(value: Any) -> Any:
            floating = isinstance(value, torch.Tensor) and value.dtype in (torch.float32, torch.float64)
            return value.to(self._compute) if floating else value

        return tuple(cast(a) for a in args), {name: cast(v) for name, v in kwargs.items()}

    @contextlib.contextmanager
    def unsteered(self) -> Iterator[None]:
        """Every value rounded to its nearest inside (the probe gradient: an attack steers its steps only)."""
        steer, self.steer = self.steer, None
        try:
            yield
        finally:
            self.steer = steer

    def discard(self) -> None:
        """Forget what was logged (plain training keeps no evidence, so no log: no collective either)."""
        self._recorded = []

    # --- rounding -----------------------------------------------------------------------------------

    def _forward_hook(self, module: nn.Module, inputs: object, output: Any) -> Any:
        site = self._sites[id(module)]
        call = self._calls[site]
        self._calls[site] += 1
        if isinstance(output, torch.Tensor):
            return self._round_output(output, site, call, 0)
        if isinstance(output, tuple):
            return tuple(
                self._round_output(t, site, call, i) if isinstance(t, torch.Tensor) else t for i, t in enumerate(output)
            )
        return None  # another structure: left unrounded (no leaf module of the workloads returns one)

    def _round_output(self, tensor: torch.Tensor, site: int, call: int, element: int) -> torch.Tensor:
        if tensor.dtype != torch.float64:
            return tensor
        if self._learning is not None:
            self._learning[(site, call, element)] = tensor.shape[0] if tensor.dim() else 0
            return tensor
        assert self._per_example is not None, "learn_sites() first"
        per_example = self._per_example.get((site, call, element), False)
        base = self._offset * (tensor.numel() // tensor.shape[0]) if per_example else 0
        return _Round.apply(tensor, self, (self._step, FORWARD, site, call, element), base, per_example)

    def _round(self, x: torch.Tensor, key: Key, base: int, edge: int | None = None) -> torch.Tensor:
        """``x`` (float64) rounded to float32 values (below 2^``edge``: on the floor's grid), kept in float64;
        logged or ruled by the claimed log."""
        flat = x.detach().reshape(-1)
        lo, hi, offset, result = _bracket(flat, edge)
        distance = offset.abs()
        if self._log is None:
            if self.steer is not None:
                result = self.steer(key, distance < STEERABLE * self.thresholds[key[1]], lo, hi, result)
            near = torch.nonzero(distance < self.thresholds[key[1]]).flatten()
            if len(near):
                rows = _rows(key, base + near, result[near] == hi[near])
                self._recorded.append(rows)
                if self.trace is not None:
                    self.trace.add(rows, offset[near])
        else:
            result = self._apply(key, base, flat, lo, hi, distance, offset, result)
        return result.view_as(x)

    def _apply(
        self,
        key: Key,
        base: int,
        flat: torch.Tensor,
        lo: torch.Tensor,
        hi: torch.Tensor,
        distance: torch.Tensor,
        offset: torch.Tensor,
        result: torch.Tensor,
    ) -> torch.Tensor:
        threshold = self.thresholds[key[1]]
        ruled = torch.zeros(len(flat), dtype=torch.bool)
        if (entries := self._entries(key)) is not None:
            assert self._log is not None
            positions, up = self._log[entries, 5], self._log[entries, 6].bool()
            inside = (positions >= base) & (positions < base + len(flat))
            local = positions[inside] - base
            up, near = up[inside], distance[local]
            far = ~(near < FAR * threshold)  # NaN (not finite) is far too
            if bool(far.any()):
                where = int(local[far][0]) + base
                self._fault(f"far_entry: {_name(key)} position {where} is not near a rounding midpoint")
            # Beyond the discrepancy an honest replay can show, both sides agree which neighbour is nearest.
            steered = (near >= FREE * threshold) & ~far & (up != (result[local] == hi[local]))
            if bool(steered.any()):
                where = int(local[steered][0]) + base
                self._fault(f"steered_entry: {_name(key)} position {where} takes the farther neighbour")
            result = result.clone()
            result[local] = torch.where(up, hi[local], lo[local])
            ruled[local] = True
            self._used[entries.start + torch.nonzero(inside).flatten()] = True
            if self.trace is not None:
                self.trace.add(_rows(key, local + base, up), offset[local])
        skipped = (distance < SKIPPED * threshold) & ~ruled
        if bool(skipped.any()):
            where = int(torch.nonzero(skipped)[0]) + base
            self._fault(f"skipped_entry: {_name(key)} position {where} is at a rounding midpoint the log does not name")
        return result

    def _index(self, log: torch.Tensor) -> None:
        """Index a claimed log (sorted, its fields in range: :func:`log_problem`) by site, in tensors only:
        a hostile log with millions of sites must not become millions of Python objects."""
        self._used = torch.zeros(len(log), dtype=torch.bool)
        if not len(log):
            return
        codes = _code(log[:, :5])
        self._codes, counts = torch.unique_consecutive(codes, return_counts=True)
        self._starts = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(counts, 0)])

    def _entries(self, key: Key) -> slice | None:
        """The rows of the claimed log at site ``key``, or None."""
        code = int(_code(torch.tensor([key], dtype=torch.int64))[0])
        i = int(torch.searchsorted(self._codes, code))
        if i < len(self._codes) and int(self._codes[i]) == code:
            return slice(int(self._starts[i]), int(self._starts[i + 1]))
        return None

    def _fault(self, text: str) -> None:
        if len(self.faults) < 20:
            self.faults.append(text)


class _Round(torch.autograd.Function):
    """A leaf module's output rounded (FORWARD) and, for a per-example output, its gradient (BACKWARD)."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, numerics: ExactNumerics, key: Key, base: int, per_example: bool
    ) -> torch.Tensor:
        ctx.numerics, ctx.key, ctx.base, ctx.per_example = numerics, key, base, per_example
        return numerics._round(x, key, base)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        if ctx.per_example and grad.dtype == torch.float64:
            step, _, site, call, element = ctx.key
            grad = ctx.numerics._round(grad.contiguous(), (step, BACKWARD, site, call, element), ctx.base)
        return grad, None, None, None, None


def _is_float(value: object) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _bracket(x: torch.Tensor, edge: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The float32 neighbours ``lo <= x < hi`` of each float64 value (as float64), its signed distance
    from their midpoint in units of ``hi - lo`` (NaN where not finite: never near a midpoint), and the
    nearest (ties to even). Below 2^``edge`` (a gradient floor's), the neighbours are on the fixed grid of
    the float32 ulp at the edge, and zero is +0 (a sign that noise chose is no part of the result)."""
    nearest = x.to(torch.float32)
    below = torch.where(nearest.to(torch.float64) > x, torch.nextafter(nearest, torch.tensor(-math.inf)), nearest)
    above = torch.nextafter(below, torch.tensor(math.inf))
    lo, hi, nearest64 = below.to(torch.float64), above.to(torch.float64), nearest.to(torch.float64)
    if edge is not None:
        small = x.abs() < 2.0**edge  # NaN is not small
        scaled = x[small] * 2.0 ** (FLOAT32_MANTISSA - edge)  # exact (a power of two), and below 2^23
        unit, low = 2.0 ** (edge - FLOAT32_MANTISSA), torch.floor(scaled)
        lo[small], hi[small] = low * unit + 0.0, (low + 1) * unit + 0.0
        nearest64[small] = torch.round(scaled) * unit + 0.0
    offset = (x - (lo + hi) / 2) / (hi - lo)
    return lo, hi, torch.where(torch.isfinite(offset), offset, torch.nan), nearest64


FLOAT32_MANTISSA = 23  # stored bits: the ulp of [2^e, 2^(e+1)) is 2^(e-23)
FLOAT32_MIN_EXPONENT = -126  # below 2^-126, float32's own subnormals are a fixed grid of 2^-149


def _largest(x: torch.Tensor) -> float:
    """The largest finite magnitude in ``x`` (0 if none)."""
    finite = x[torch.isfinite(x)]
    return float(finite.abs().max()) if len(finite) else 0.0


def floor_edge(largest: float, floor: int) -> int | None:
    """The exponent e of the floor's edge 2^e: floor(log2(``largest``)) - ``floor``, for the step's largest
    gradient magnitude; None when it is 0 (no finite nonzero gradient), or when float32's own subnormal grid
    is already coarser. Two profiles find the same edge unless their largest values straddle a power of two
    (they differ by the step's relative discrepancy, which calibration measures tiny: the replay then fails to
    reproduce)."""
    if largest == 0.0:
        return None
    edge = math.frexp(largest)[1] - 1 - floor
    return edge if edge > FLOAT32_MIN_EXPONENT else None


def midpoint_offsets(x: torch.Tensor, edge: int | None) -> torch.Tensor:
    """Each value's signed distance to its rounding midpoint, in units of its grid (NaN where not finite)."""
    return _bracket(x, edge)[2]


def grid_discrepancy(x: torch.Tensor, y: torch.Tensor, edges: Sequence[int | None]) -> list[float]:
    """The largest ``|y - x|`` in units of the rounding grid at ``x`` (its float32 ulp, or below a floor's
    edge that edge's unit), for each edge in ``edges`` (None: no floor). Calibration's measure of a
    gradient's discrepancy at every value, not only at those near a midpoint."""
    finite = torch.isfinite(x) & torch.isfinite(y)
    x, y = x[finite], y[finite]
    if not len(x):
        return [0.0 for _ in edges]
    lo, hi, _, _ = _bracket(x)
    ulp = torch.log2(hi - lo).round().to(torch.int64)  # the ulp's exponent: ulps are powers of two
    exponents, inverse = torch.unique(ulp, return_inverse=True)
    worst = torch.zeros(len(exponents), dtype=torch.float64).scatter_reduce(0, inverse, (y - x).abs(), "amax")
    largest = []
    for edge in edges:
        units = exponents if edge is None else exponents.clamp(min=edge - FLOAT32_MANTISSA)
        largest.append(float((worst / torch.pow(2.0, units.to(torch.float64))).max()))
    return largest


def step_largest(gradients: dict[Key, torch.Tensor]) -> dict[int, float]:
    """Each step's largest gradient magnitude in ``gradients`` (calibration's record of every gradient, by
    key): what its floor's edge comes from (:func:`floor_edge`)."""
    largest: dict[int, float] = defaultdict(float)
    for key, values in gradients.items():
        largest[key[0]] = max(largest[key[0]], _largest(values))
    return largest


def _code(keys: torch.Tensor) -> torch.Tensor:
    """Each (step, phase, site, call, element) row packed into one int64, in the rows' sort order."""
    code = torch.zeros(len(keys), dtype=torch.int64)
    for column, bits in enumerate(FIELD_BITS):
        code = (code << bits) | keys[:, column]
    return code


def _rows(key: Key, positions: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    head = torch.tensor(key, dtype=torch.int64).expand(len(positions), 5)
    return torch.cat([head, positions.to(torch.int64)[:, None], up.to(torch.int64)[:, None]], dim=1)


def _name(key: Key) -> str:
    step, phase, site, call, element = key
    return f"step {step} {PHASES[phase]} site {site} call {call} element {element}"


LOG_TENSORS = ("counts", "keys", "positions", "up")


def encode_log(log: torch.Tensor) -> dict[str, torch.Tensor]:
    """The ``rounding/`` tensors of E_k for a log (sorted, unique rows)."""
    # where a key begins, found column by column (unique_consecutive over rows costs hundreds of bytes an entry)
    begins = torch.zeros(len(log), dtype=torch.bool)
    begins[:1] = True
    for column in range(5):
        begins[1:] |= log[1:, column] != log[:-1, column]
    first = torch.nonzero(begins).flatten()
    counts = torch.diff(first, append=torch.tensor([len(log)], dtype=torch.int64))
    return {"keys": log[first, :5], "counts": counts, "positions": log[:, 5].clone(), "up": _pack(log[:, 6])}


def decode_log(tensors: dict[str, torch.Tensor], max_entries: int) -> torch.Tensor:
    """The log rows of E_k's ``rounding/`` tensors; LogError if they are not what :func:`encode_log` writes
    (or hold more than ``max_entries`` entries: a provider's file could be any size)."""
    if set(tensors) != set(LOG_TENSORS):
        raise LogError(f"rounding: {sorted(tensors)}, expected {list(LOG_TENSORS)}")
    keys, counts, positions, up = (tensors[name] for name in ("keys", "counts", "positions", "up"))
    if any(t.dtype != torch.int64 for t in (keys, counts, positions)) or up.dtype != torch.uint8:
        raise LogError("rounding: keys, counts and positions are int64, up is uint8")
    if keys.dim() != 2 or keys.shape[1] != 5 or counts.dim() != 1 or positions.dim() != 1 or up.dim() != 1:
        raise LogError("rounding: keys are (n, 5), counts, positions and up are vectors")
    n = len(positions)
    if n > max_entries:
        raise LogError(f"{n} rounding log entries, more than the spec's {max_entries}")
    # each count checked before any sum: int64 sums of hostile counts wrap (and repeat_interleave then crashes)
    if len(counts) != len(keys) or len(keys) > n or (n > 0) != (len(keys) > 0) or len(up) != (n + 7) // 8:
        raise LogError("rounding: counts, positions and up do not add up")
    if n and (int(counts.min()) < 1 or int(counts.max()) > n or int(counts.sum()) != n):
        raise LogError("rounding: counts, positions and up do not add up")
    # Canonical form, checked on the encoding itself (decoded rows and a second encoding would cost a verifier
    # several times the rows' 56 bytes an entry, at a provider's choice of log): keys in range and strictly
    # increasing, positions strictly increasing within a key, no stray bits.
    if len(keys) and any(
        bool((keys[:, c] < 0).any()) or bool((keys[:, c] >> bits).any()) for c, bits in enumerate(FIELD_BITS)
    ):
        raise LogError("a rounding log entry has a step, phase, site, call or element out of range")
    codes = _code(keys)  # in range, so in the keys' order
    if len(codes) > 1 and not bool((codes[1:] > codes[:-1]).all()):
        raise LogError("rounding: not the canonical encoding of its entries (a key repeated, or out of order)")
    if n and bool((positions < 0).any()):
        raise LogError("a rounding log entry has a negative position")
    if n > 1:
        rising = positions[1:] > positions[:-1]
        rising[torch.cumsum(counts, 0)[:-1] - 1] = True  # where a key ends and the next begins
        if not bool(rising.all()):
            raise LogError("a rounding log's rows are not sorted, or name a position twice")
    if n % 8 and int(up[-1]) >> (n % 8):
        raise LogError("rounding: not the canonical encoding of its entries (stray bits)")
    rows = torch.empty((n, len(COLUMNS)), dtype=torch.int64)
    for column in range(5):  # one column at a time: a copy of the keys per entry would be 40 bytes an entry more
        rows[:, column] = keys[:, column].repeat_interleave(counts)
    rows[:, 5] = positions
    rows[:, 6] = _unpack(up, n)
    return rows


class LogError(ValueError):
    """Rounding tensors that are not a well-formed log."""


class LogTooLong(OvigError, RuntimeError):
    """An honest interval logged more roundings than the spec allows: its thresholds are too wide."""


def _pack(bits: torch.Tensor) -> torch.Tensor:
    padded = torch.cat([bits.to(torch.uint8), torch.zeros(-len(bits) % 8, dtype=torch.uint8)]).view(-1, 8)
    return (padded << torch.arange(8, dtype=torch.uint8)).sum(1, dtype=torch.uint8)


def _unpack(packed: torch.Tensor, n: int) -> torch.Tensor:
    return ((packed[:, None] >> torch.arange(8, dtype=torch.uint8)) & 1).flatten()[:n].to(torch.int64)


def log_problem(log: torch.Tensor) -> str | None:
    """What is wrong with a claimed log's form (before it is applied), or None."""
    if log.dtype != torch.int64 or log.dim() != 2 or log.shape[1] != len(COLUMNS):
        return f"a rounding log is int64 rows of {len(COLUMNS)} columns, not {log.dtype} {tuple(log.shape)}"
    if not len(log):
        return None
    limits = [1 << bits for bits in FIELD_BITS]
    if any(bool((log[:, c] < 0).any()) or bool((log[:, c] >= limit).any()) for c, limit in enumerate(limits)):
        return "a rounding log entry has a step, phase, site, call or element out of range"
    if bool((log[:, 5] < 0).any()) or bool((log[:, 6] < 0).any()) or bool((log[:, 6] > 1).any()):
        return "a rounding log entry has a negative position or a direction other than 0 or 1"
    if len(log) > 1 and not _strictly_increasing(log[:, :6]):
        return "a rounding log's rows are not sorted, or name a position twice"
    return None


def _strictly_increasing(rows: torch.Tensor) -> bool:
    """Whether each row is lexicographically above the previous one (compared, never subtracted: hostile
    values would wrap)."""
    before, after = rows[:-1], rows[1:]
    differ = before != after
    first = differ.int().argmax(1)[:, None]  # the first column where they differ (0 when none does)
    return bool(differ.any(1).all()) and bool((before.gather(1, first) < after.gather(1, first)).all())
