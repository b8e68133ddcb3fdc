"""Response models of the API: what each endpoint returns, documented in the OpenAPI schema.

Names of states come from the contracts' enums (``ovig_node.chain.contracts``), lower-cased. Amounts
are wei as decimal strings: they exceed the integers JSON parsers keep exactly (2^53).
"""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ovig_node.chain.contracts import BatchStatus, DisputeStatus, Reason, TaskStatus, Verdict

T = TypeVar("T")


def _names(enum: type[Enum], name: str) -> type[StrEnum]:
    """A StrEnum of ``enum``'s members but NONE (never a state of something that exists), lower-cased."""
    return StrEnum(name, [m.name.lower() for m in enum if m.name != "NONE"])  # type: ignore[return-value]


TaskState = _names(TaskStatus, "TaskState")
BatchState = _names(BatchStatus, "BatchState")
DisputeState = _names(DisputeStatus, "DisputeState")
ReasonName = _names(Reason, "ReasonName")
# "none" is a verdict an open dispute has.
VerdictName = StrEnum("VerdictName", [m.name.lower() for m in Verdict])  # type: ignore[misc]


class IntervalState(StrEnum):
    """An interval's colour on the dashboard, most telling first: faulty > disputed > verified > opened >
    sampled > committed > pending."""

    PENDING = "pending"  # its batch is not committed yet
    COMMITTED = "committed"  # committed in a root, not in its batch's sample (or the sample is not drawn)
    SAMPLED = "sampled"  # sampled; the provider must still open it
    OPENED = "opened"  # start and end digests proven on-chain, evidence pinned
    VERIFIED = "verified"  # a watcher's replay (or a panel) found it valid
    DISPUTED = "disputed"  # challenged: a dispute is open, or ended with no decision
    FAULTY = "faulty"  # a panel found it faulty: the task was slashed


class TimelineKind(StrEnum):
    POSTED = "posted"
    ACCEPTED = "accepted"
    COMMITTED = "committed"
    SEED = "seed"
    OPENING = "opening"
    ATTESTED = "attested"
    WINDOW = "window"
    CHALLENGE = "challenge"
    DISPUTE = "dispute"
    VOTE = "vote"
    PAYOUT = "payout"
    FINALIZED = "finalized"
    SLASHED = "slashed"
    CANCELLED = "cancelled"
    ABANDONED = "abandoned"


Wei = Annotated[str, Field(pattern=r"^-?[0-9]+$", description="wei, as a decimal string")]
Address = Annotated[str, Field(pattern=r"^0x[0-9a-fA-F]{40}$", description="a checksummed address")]
Hash = Annotated[str, Field(pattern=r"^0x[0-9a-f]{64}$", description="32 bytes, 0x-hex")]
Contract = Literal["TrainingTasks", "AuditCommittee"]


class Page(BaseModel, Generic[T]):
    total: int = Field(description="rows matching the filters, over all pages")
    limit: int
    offset: int
    items: list[T]


class Windows(BaseModel):
    opening: int = Field(description="seconds from a batch's seed to open its sample")
    challenge: int = Field(description="seconds from a batch's opening to commit a challenge")
    reveal: int = Field(description="seconds from a challenge commit to reveal it")


class Terms(BaseModel):
    spec_hash: Hash
    init_digest: Hash
    reward: Wei
    provider_bond: Wei
    challenger_bond: Wei
    replay_seconds: int = Field(description="the slowest honest replay of one interval the owner declares")
    total_steps: int
    stride: int
    deadline: int = Field(description="unix time; batches must be committed before it")
    intervals_per_batch: int
    sample_bps: int
    windows: Windows


class TaskSummary(BaseModel):
    task: int
    status: TaskState  # type: ignore[valid-type]
    owner: Address
    provider: Address | None
    reward: Wei
    provider_bond: Wei
    total_steps: int
    stride: int
    intervals_per_batch: int
    intervals: int = Field(description="K = ceil(N / s)")
    batch_count: int = Field(description="B = ceil(K / m)")
    committed_batches: int
    opened_batches: int
    open_disputes: int
    posted_block: int
    posted_at: int | None = Field(description="unix time of the posting block")
    updated_block: int = Field(description="block of the task's latest state change")


class Batch(BaseModel):
    j: int
    status: BatchState  # type: ignore[valid-type]
    root: Hash
    manifest_cid: str
    committed_block: int
    seed: Hash | None
    sampled: list[int] = Field(description="sampled intervals, ascending (empty until the seed is drawn)")
    opening_window_end: int | None
    opening_cid: str | None = Field(description="CID of the opening manifest")
    challenge_window_end: int | None


class DisputeSummary(BaseModel):
    dispute: int
    task: int
    k: int
    reason: ReasonName  # type: ignore[valid-type]
    status: DisputeState  # type: ignore[valid-type]
    verdict: VerdictName
    round: int
    challenger: Address | None = Field(description="The lead: the joined challenger whose commit came first")
    report_cid: str | None = Field(description="CID of the lead's replay report (ChallengeRevealed)")
    joined: int = Field(default=0, description="Challenger bonds joined to the dispute (one per reveal of k)")
    outcome: VerdictName | None = Field(
        default=None,
        description="what the last decided round decided (RoundDecided); it becomes the verdict unless appealed "
        "before appeal_until (None: no round decided yet)",
    )
    appeal_until: int | None = Field(default=None, description="unix time the last decided round's appeals close")


class Payout(BaseModel):
    contract: Contract
    account: Address
    task: int | None
    dispute: int | None = Field(description="the committee's dispute (committee credits only)")
    amount: Wei
    block: int
    tx: Hash


class Slash(BaseModel):
    batch: int
    by: Address
    dispute: int | None = Field(description="the dispute that found the interval faulty (None: unopened batch)")
    lead: Address | None = Field(
        description="who takes the lead's share: the earliest lead found faulty so far (None: unopened batch)"
    )
    lead_paid: bool = Field(
        description="false while the lead's share waits for the task's challenges made before that lead's commit"
    )


class TaskDetail(TaskSummary):
    spec_cid: str
    terms: Terms
    challenge_end: int = Field(description="latest end of any challenge window")
    pending_commits: int
    batches: list[Batch]
    disputes: list[DisputeSummary]
    payouts: list[Payout]
    slashed: Slash | None


class WatcherVerdict(BaseModel):
    verdict: str
    reason: str | None
    report_cid: str | None


class IntervalAttestation(BaseModel):
    """A watcher's verified attestation of an interval (protocol 8.4): signed by it, made after the opening."""

    watcher: Address
    name: str | None = Field(description="the API's label for the watcher, if it has one")
    trusted: bool = Field(
        description="the API trusts this watcher: one of its own watcher nodes, or named by `--trust-attester`"
    )
    sound: bool
    profile: str = Field(description="the execution profile and host its replay ran on")
    report_cid: str
    attestation_cid: str = Field(description="the signed EIP-712 document, pinned to IPFS")
    block: int


class VerifiedBy(BaseModel):
    """What made an interval verified; when several did, the first of: a panel, a trusted watcher's attestation,
    the verdict in one of the API's own watcher nodes' state."""

    kind: Literal["panel", "attestation", "watcher_state"] = Field(
        description="panel: a dispute's panel found it valid; attestation: a trusted watcher attested it sound; "
        "watcher_state: one of the API's own watcher nodes judged it valid (in its state file, never on-chain)"
    )
    watcher: Address | None = Field(default=None, description="the trusted attester (attestation only)")
    name: str | None = Field(default=None, description="the API's label for the attester, if it has one")
    dispute: int | None = Field(default=None, description="the dispute whose panel found it valid (panel only)")


class Interval(BaseModel):
    k: int
    batch: int
    end_step: int = Field(description="b_k = min((k + 1) s, N)")
    status: IntervalState
    sampled: bool
    opened: bool
    start_digest: Hash | None
    end_digest: Hash | None
    disputes: list[int]
    watcher: WatcherVerdict | None
    layer_one_score: float | None = Field(
        default=None,
        description="the owner's watcher's layer-one score of its statistics, opened or not (docs/layer-one.md); "
        "above the watcher's threshold, it asked for the interval's opening",
    )
    attestations: list[IntervalAttestation] = Field(
        default_factory=list,
        description="verified attestations by distinct watchers, trusted ones first, then oldest first; at most 16",
    )
    attested_by: int = Field(default=0, description="distinct watchers whose verified attestations say sound")
    verified_by: VerifiedBy | None = Field(default=None, description="what made it verified (None: not verified)")


class CoverageWatcher(BaseModel):
    watcher: Address
    name: str | None
    trusted: bool = Field(description="one of the API's own watcher nodes, or named by `--trust-attester`")
    intervals: int = Field(description="intervals it attested sound")
    profiles: list[str]


class Coverage(BaseModel):
    """How much of a task's run independent watchers attested sound (protocol 8.4)."""

    intervals: int
    opened: int = Field(description="intervals whose evidence was opened: only these can be replayed")
    attested: int = Field(description="opened intervals at least one watcher attested sound")
    trusted_attested: int = Field(description="opened intervals a trusted watcher attested sound")
    by_watchers: list[int] = Field(
        description="by_watchers[n]: opened intervals exactly n distinct watchers (any key) attested sound; "
        "the last of at most 17 buckets counts 16 or more"
    )
    profiles: int = Field(description="distinct execution profiles the attested replays ran on (any key)")
    watcher_count: int = Field(description="distinct watchers with a verified attestation")
    watchers: list[CoverageWatcher] = Field(description="trusted ones first, then by intervals attested; at most 16")


class Opening(BaseModel):
    k: int
    batch: int
    start_digest: Hash
    end_digest: Hash
    block: int
    opening_cid: str | None
    challenge_window_end: int | None = Field(description="its batch's window, or its own once extended")


class TimelineEntry(BaseModel):
    kind: TimelineKind
    time: int | None = Field(description="unix time (chain time) of the block, or when the window closes")
    block: int | None
    event: str | None = Field(description="the contract event (None: a window, which is not an event)")
    text: str
    upcoming: bool = Field(description="a window that has not closed at the indexed chain head")
    tx: Hash | None


class Vote(BaseModel):
    panelist: Address
    committed: bool
    vote: Literal["valid", "faulty", "unavailable", "abstained"] | None = Field(
        description="the revealed ballot (None: not revealed; abstained: no verdict by the commit deadline)"
    )


class Round(BaseModel):
    round: int
    panel: list[Address]
    commit_end: int
    reveal_end: int
    votes: list[Vote]


class Appeal(BaseModel):
    round: int = Field(description="the round the appeal armed")
    appellant: Address
    wanted: VerdictName
    bond: Wei = Field(description="challengerBond x 2^round")
    block: int
    refunded: Wei | None = Field(description="what came back when the dispute resolved (None: not yet)")


class DisputeDetail(DisputeSummary):
    commitment: Hash | None
    opened_block: int
    rounds: list[Round]
    appeals: list[Appeal]
    payouts: list[Payout]


class Credit(BaseModel):
    contract: Contract
    account: Address
    credited: Wei
    withdrawn: Wei
    unpaid: Wei = Field(description="credits[account] on the contract: credited minus withdrawn")


class Auditor(BaseModel):
    address: Address
    stake: Wei
    locked: Wei = Field(description="stake at risk: the committee's penalty per seat on disputes not resolved yet")
    registered_block: int
    exit_requested: bool
    exit_at: int | None = Field(description="unix time from which it may exit")
    exited: bool


class Health(BaseModel):
    ok: bool = Field(description="the last poll succeeded within the last 10 s")
    chain_id: int | None
    head_block: int | None
    head_time: int | None
    indexed_block: int | None
    lag_blocks: int | None = Field(description="blocks the index is behind the chain head")
    events: int
    last_poll_seconds_ago: float | None
    error: str | None


class TrustedWatcher(BaseModel):
    """A watcher whose attestations mark intervals verified."""

    watcher: Address
    name: str | None = Field(description="the API's label for it, if it has one")
    node: str | None = Field(
        description="the API's own watcher node it signs from (its folder, relative to the devnet's; the owner's "
        "watcher, trusted without a flag); None: named by `--trust-attester` only"
    )


class Config(BaseModel):
    chain_id: int | None
    contracts: dict[str, Address]
    gateway: str | None = Field(description="IPFS gateway the dashboard links CIDs to")
    reports: bool = Field(description="whether reports can be fetched (an IPFS API is configured)")
    labels: dict[str, str] = Field(description="address -> name the dashboard shows for it")
    trusted: list[TrustedWatcher] = Field(
        default_factory=list, description="watchers whose attestations mark intervals verified: the API's own first"
    )


class ReportRow(BaseModel):
    p: float = Field(description="percentile over every coordinate")
    value: float | None = Field(description="the replay's difference at p (None: not finite)")
    bound: float | None = Field(description="the boundary's honest drift at p")
    floor: float | None = Field(
        default=None,
        description="the rounding-scale floor at p (None: not needed, every value of the signal within alpha * bound)",
    )
    limit: float | None = Field(description="max(alpha * bound, floor): the value passes if <= limit")
    ok: bool


class Report(BaseModel):
    """A replay report (``ovig verify --report`` / a watcher's), as pinned; other fields pass through."""

    model_config = ConfigDict(extra="allow")

    verdict: str | None = None
    reason: str | None = None
    detail: str | None = None
    task: int | None = None
    interval: int | None = None
    margin: float | None = None
    signals: dict[str, dict[str, list[ReportRow]]] = Field(
        default_factory=dict, description="signal -> kind (abs, rel) -> a row per percentile"
    )
