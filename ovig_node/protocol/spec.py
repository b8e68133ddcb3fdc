"""The task spec (protocol section 2.1): validation, canonical bytes and ``specHash``.

A spec is a JSON document pinned to IPFS. Its hash is taken over the document as pinned, in canonical
form (``sort_keys``, no spaces, ASCII), so every implementation agrees on it; :class:`TaskSpec`
validates it. Floats are banned everywhere: decimals are strings ("0.001"), so no two parsers can
disagree on a value.
"""

from __future__ import annotations

import json
import math
import re
import struct
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from eth_utils import keccak
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from ovig_node.protocol.errors import SpecError
from ovig_node.protocol.intervals import Layout

SPEC_VERSION = 1
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CID = re.compile(r"^(Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{20,})$")


def _decimal(text: str) -> str:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a decimal number") from None
    if not value.is_finite():
        raise ValueError(f"{text!r} is not finite")
    return text


def _sha256(text: str) -> str:
    if not _SHA256.match(text):
        raise ValueError("must be 64 lowercase hex digits (a sha256)")
    return text


def _cid(text: str) -> str:
    if not _CID.match(text):
        raise ValueError(f"{text!r} is not a CIDv0 (Qm...) or base32 CIDv1 (b...)")
    return text


DecimalStr = Annotated[str, AfterValidator(_decimal)]
Sha256Hex = Annotated[str, AfterValidator(_sha256)]
CidStr = Annotated[str, AfterValidator(_cid)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContentRef(_Strict):
    """A file on IPFS and the sha256 of its bytes (what nodes check after fetching)."""

    cid: CidStr
    sha256: Sha256Hex


class DatasetRef(ContentRef):
    examples: int = Field(gt=0)  # number of examples; the schedule permutes 0..examples-1


class WorkloadSpec(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")  # e.g. "vision"
    config: dict[str, Any] = {}  # workload-specific; integers, strings, booleans, lists, objects


class LrSchedule(_Strict):
    name: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = Field(default=0, ge=0)  # linear ramp from 0 before the schedule proper
    min_lr: DecimalStr = "0"  # floor of "linear" and "cosine"


# An optimizer's hyper-parameters an honest run can train with: field -> (lowest, first value above the range or None,
# whether the lowest is excluded, the range in words).
RANGES: dict[str, tuple[Decimal, Decimal | None, bool, str]] = {
    "lr": (Decimal(0), None, False, ">= 0"),
    "weight_decay": (Decimal(0), None, False, ">= 0"),
    "min_lr": (Decimal(0), None, False, ">= 0"),
    "momentum": (Decimal(0), Decimal(1), False, "in [0, 1)"),
    "beta1": (Decimal(0), Decimal(1), False, "in [0, 1)"),
    "beta2": (Decimal(0), Decimal(1), False, "in [0, 1)"),
    "eps": (Decimal(0), None, True, "> 0"),
}


def _float32(value: float) -> float:
    """``value`` rounded to float32 (inf past its range, 0 below its smallest subnormal)."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


class OptimizerSpec(_Strict):
    name: Literal["sgd", "sgd_momentum", "adamw"]
    lr: DecimalStr
    momentum: DecimalStr | None = None  # sgd_momentum only
    beta1: DecimalStr | None = None  # adamw only
    beta2: DecimalStr | None = None  # adamw only
    eps: DecimalStr | None = None  # adamw only
    weight_decay: DecimalStr = "0"
    schedule: LrSchedule = LrSchedule()

    @model_validator(mode="after")
    def _hyper_parameters_match(self) -> OptimizerSpec:
        needs = {"sgd": (), "sgd_momentum": ("momentum",), "adamw": ("beta1", "beta2", "eps")}[self.name]
        for field in ("momentum", "beta1", "beta2", "eps"):
            given = getattr(self, field) is not None
            if field in needs and not given:
                raise ValueError(f"{self.name} needs {field}")
            if field not in needs and given:
                raise ValueError(f"{self.name} takes no {field}")
        # Ranges outside which honest training diverges by construction (a momentum of 1.9 blew up after the
        # preflight's interval 0, and every honest replay then found the provider's evidence non-finite: review 16
        # of v3), checked as decimals and as the floats training may use, float64 and float32 ("0.99...9" is 1
        # once a float; "1e400" is no number; "1e-320" is 0 in float32: review 17).
        values = {**self.model_dump(include={"lr", "weight_decay", *needs}), "min_lr": self.schedule.min_lr}
        for field, value in values.items():
            low, high, low_open, words = RANGES[field]
            as_floats = [float(Decimal(value)), _float32(float(Decimal(value)))]
            for v in (Decimal(value), *map(Decimal, as_floats)):
                if not v.is_finite() or v < low or (low_open and v == low) or (high is not None and v >= high):
                    raise ValueError(f"{field} {value} is out of range: it must be {words}, as a float too")
        return self


# The rounding log packs an entry's step in this many bits (training.exact.FIELD_BITS): an exact task has fewer
# steps, or its provider could not publish the log of its later intervals.
EXACT_STEP_BITS = 24


class NumericsSpec(_Strict):
    """Exact mode (:mod:`ovig_node.training.exact`): float64 compute rounded to float32 at fixed sites,
    values within ``threshold`` float32 ulps of a rounding midpoint logged; a replay must reproduce the
    evidence bit for bit. A spec without this section is judged against its boundary (boundary mode)."""

    mode: Literal["exact"]
    compute: Literal["float64"] = "float64"
    # per rounding phase, in float32 ulps; calibrated from the discrepancy between profiles
    threshold: dict[Literal["forward", "backward", "gradient", "update"], DecimalStr]
    max_log_entries: int = Field(gt=0, le=2**26)  # per interval: caps what a provider's log can cost a verifier
    # Below 2^-gradient_floor of the step's largest gradient magnitude, gradients round on the fixed grid of
    # the float32 ulp there (a sum that cancels is only as precise as its terms); None: float32 all the way
    gradient_floor: int | None = Field(default=None, ge=0, le=100)

    @model_validator(mode="after")
    def _threshold_in_range(self) -> NumericsSpec:
        if len(self.threshold) != 4:
            raise ValueError("threshold needs forward, backward, gradient and update")
        # as decimals and as the floats training uses ("0.0999...9" is 0.1 once a float)
        if not all(
            Decimal(0) < Decimal(t) < Decimal("0.1") and 0.0 < float(Decimal(t)) < 0.1 for t in self.threshold.values()
        ):
            raise ValueError("every threshold must be between 0 and 0.1 ulps")
        return self

    @property
    def thresholds(self) -> tuple[float, ...]:
        return tuple(float(Decimal(self.threshold[phase])) for phase in ("forward", "backward", "gradient", "update"))


class TaskSpec(_Strict):
    """A validated task spec. Build from a document with :func:`parse_spec`."""

    version: Literal[1]
    workload: WorkloadSpec
    init: ContentRef  # initial checkpoint: weights only; its sha256 is the on-chain initDigest
    dataset: DatasetRef
    optimizer: OptimizerSpec
    batch_size: int = Field(gt=0)
    total_steps: int = Field(gt=0, lt=2**48)  # N (postTask takes it as a uint48)
    seed: int = Field(ge=0, lt=2**256)
    dtype: Literal["float32", "float64", "bfloat16"] = "float32"
    stride: int = Field(gt=0)  # s
    intervals_per_batch: int = Field(ge=1, le=256)  # m
    sample_bps: int = Field(ge=1, le=10_000)
    # Calibrated from honest replays of this very spec, so a spec in preparation has none yet;
    # posting a task requires it.
    boundary: ContentRef | None = None
    numerics: NumericsSpec | None = None  # None: boundary mode

    @model_validator(mode="after")
    def _exact_needs_float32(self) -> TaskSpec:
        if self.numerics is not None and self.dtype != "float32":
            raise ValueError("exact numerics round float64 to float32: dtype must be float32")
        if self.numerics is not None and self.batch_size < 3:
            raise ValueError(
                "exact numerics learn which outputs are per-example from 2 and 3 examples: batch_size >= 3"
            )
        if self.numerics is not None and self.total_steps >= 2**EXACT_STEP_BITS:  # the last probe's is N itself
            raise ValueError(
                f"the rounding log numbers steps in {EXACT_STEP_BITS} bits: an exact task has fewer "
                f"than {2**EXACT_STEP_BITS} steps"
            )
        return self

    @property
    def exact(self) -> bool:
        return self.numerics is not None

    @property
    def layout(self) -> Layout:
        return Layout(self.total_steps, self.stride, self.intervals_per_batch)

    def document(self) -> dict[str, Any]:
        """The JSON document to pin (unset optional fields left out)."""
        return self.model_dump(mode="json", exclude_none=True)


def canonical_bytes(document: dict[str, Any]) -> bytes:
    """The spec's canonical serialisation (section 2.1)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def spec_hash(document: dict[str, Any]) -> bytes:
    """``specHash = keccak256(canonical bytes)`` of the document as pinned."""
    _reject_floats(document, "spec")
    return keccak(canonical_bytes(document))


def training_hash(spec: TaskSpec) -> bytes:
    """The hash of what the spec trains: its ``specHash`` with the boundary left out. A boundary is attached
    after calibration (which changes ``specHash``), while the reference run calibration writes is of the
    training alone; a watcher matches references to tasks by this hash."""
    return spec_hash({k: v for k, v in spec.document().items() if k != "boundary"})


def parse_spec(data: bytes | str) -> tuple[TaskSpec, bytes]:
    """Validate a spec document; return it and its ``specHash``. Raises SpecError naming the field."""
    try:
        document = json.loads(data)
    except json.JSONDecodeError as exc:
        raise SpecError(f"spec is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(document, dict):
        raise SpecError("spec must be a JSON object")
    _reject_floats(document, "spec")
    try:
        spec = TaskSpec.model_validate(document)
    except ValidationError as exc:
        raise SpecError(_first_error(exc)) from None
    return spec, spec_hash(document)


def _reject_floats(value: Any, path: str) -> None:
    if isinstance(value, float):
        raise SpecError(f"{path} is a JSON number with a fraction or exponent: write it as a decimal string")
    if isinstance(value, dict):
        for key, item in value.items():
            _reject_floats(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _reject_floats(item, f"{path}[{index}]")


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "spec"
    message = error["msg"].removeprefix("Value error, ")
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return f"spec.{where}: {message}{more}"
