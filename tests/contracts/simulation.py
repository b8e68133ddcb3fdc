"""The adversarial simulation of protocol 4.3 ("Incentives"): agents, one episode, and its checks.

An episode is a few tasks on a fresh copy of one base state (both contracts deployed, 50 honest and 7 sybil
auditors registered and warmed up), run as a discrete-event simulation: every agent reacts to the events
of the transactions mined so far (all of them are the simulation's own) by scheduling its next actions at
chosen moments, often the edges of windows; the clock jumps from one scheduled moment to the next and stands
still in between (every transaction due at a moment is mined at that second, as if they shared a block).
Everything an agent decides is drawn from the episode's seed, and the chain is a private anvil with a fixed
genesis, so a seed replays its episode exactly, block hashes (hence samples and panels) included.

Agents (each episode draws its mix from the seed):

- honest providers commit, open every batch in time (sometimes over two calls, sometimes at the last
  second) and appeal a wrong decision of their task; **cheating providers** fake one or more intervals (the
  simulation knows which: that is the ground truth; digests are made up, as in the other contract tests),
  may leave a batch unopened, stop committing, challenge their own faked interval (reason 1 or 2, early, late
  or right after the watcher's commit, revealing at once, at the last second or never; a **decoy** challenges
  one faked interval only, so its dispute may end before the watcher's), fake one more interval within the
  **near-tie band** (protocol 5: a claim tuned to sit at the limit) and challenge it themselves once opened
  (review 12 of v3: before the band, honest panels split on it by hardware), and run a **sock-puppet keeper**
  that tries ``slashUnopened`` and ``abandon`` ahead of every reveal and of the watcher's fresh commit once a
  no-decision reopened a window; a cheater opens an interval a watcher requested (at some moment or at the
  last second), or refuses, its sock-puppet then calling ``slashUnopenedRequest`` the moment it may;
- **owners** post with a reward and declare ``replaySeconds`` of 1 s (false: below any honest replay), 600 s
  or the committee's cap. On chain the declaration moves nothing (the committee's windows cover
  ``maxReplaySeconds`` whatever a task declares), so every property must hold whatever it is; its off-chain
  effect, nodes refusing a task that declares less than they measure, is tested in
  ``tests/test_owner_terms.py`` and ``tests/test_hostile_inputs.py``;
- the **honest watcher** commits a challenge of every faked, opened interval while its window is open (now,
  at some moment, or at its last second), reveals within its reveal window (promptly or at the last second),
  joins disputes others opened, challenges again in a window reopened by a no-decision, and appeals a decided
  round whose outcome is wrong; its layer one flags each faked interval its batch's sample missed with
  chance 0.8, and it requests those (targeted openings, protocol 8.3) while the batch's window is open, then
  challenges them once opened (these draws come from a generator of their own); it is a registered auditor
  too, and recuses from a seat on a task it challenged after its draw (issue 45's attack 3);
- **copiers** mirror every reveal they see (commit after seeing it, then reveal the same k);
- **blind committers** commit on every sampled interval of a task; some reveal, some never do;
- **sybil auditors**, at most (P_last - 1) / 2 registered and not leaving at any block, vote against the
  ground truth (or stay silent), appeal decided rounds that got it right, and leave and register around the
  moment rounds are armed to steer draws;
- a **flooder** runs an honest task of its own, commits junk challenges of it and reveals them as soon as an
  honest watcher commits elsewhere, so fresh disputes arm right before the real one; it appeals its junk
  disputes' sound decisions (junk appeals);
- a **withholder** (in some episodes) owns and provides a sound task of its own and plays one of
  ``WITHHOLDING``'s games with its evidence against the shipped auditor (issue 45's attacks 1, 2 and 7): its
  sock puppet challenges a sound interval as unavailable, and the withholder serves the files to no round but
  the last (flip), to every round but the last (reverse flip), to half the panelists (selective), or to nobody,
  its sybils having committed challenges of the task first so that none of them is drawn (unloadable); it
  appeals every decided round;
- **adversarial keepers** call every transition (drawSeed, drawPanel, rearm, resolve, finalize,
  expireChallenge, claimBond, slashUnopened, abandon, withdraw) at the edges of windows, one second early
  or on the second, in random order with the other transactions due then;
- **honest auditors** (32 to 50 of them active) vote as the shipped node does when seated (the ground truth
  if they obtained the files, unavailable if a withholder kept them back, an abstention on a near-tie claim,
  whose rounds no honest party appeals either) and always reveal; in some
  episodes, kept busy by a flood, each lets its abstention stand with chance 0.3 (review 6 of v3); they
  appeal a wrong decision no other honest party appealed; an **honest keeper** calls every transition when
  it is due.

After every episode (each message names the episode's seed), ``check`` asserts:

- money (4.3): each contract's balance is what it holds for others plus ``burned`` (checked after every
  transaction, with credits from the episode's ``Credited``/``Withdrawn`` ledger, and that ledger against
  the contracts' ``credits`` at the end); the ETH of all accounts and both contracts is conserved (gas is
  free);
- soundness: a task with a faked, opened interval that the honest watcher challenged in time (its reveal
  joined a dispute, or was refunded because the task had ended) ends ``Slashed``, and no such task with the
  watcher about is ever ``Finalized``; the slashing dispute's lead is the earliest commit revealed into
  its interval's disputes; the lead's share (to the wei) goes to the earliest commit revealed into a dispute
  of the task found faulty, whichever dispute ended first (protocol 4.3 as amended: docs/dispute-game.md),
  so the watcher is paid it unless such a commit came before the watcher's, and a dispute of the watcher's
  led by an earlier commit is never mooted by a later lead's slash;
- completeness: the provider of a task whose intervals are all sound (honest providers, the flooder) is
  credited reward + bond + its share of sound-settled challenger bonds, to the wei, its owner nothing, and
  every challenge of it cost its challenger at least the panel's share of its bond (what came back to it, read
  from the ``Credited`` of a claim or a refunded expiry, is at most the bond less that share), unless its
  dispute ended with no decision (protocol 4.3's concession);
- no decisions: no honest auditor that revealed in every run it sat is penalized in a dispute that ended with
  no decision, and such a dispute none of whose runs decided SOUND refunds every joined bond whole;
- fixity: every ``PanelDrawn`` panel equals ``ovig_node.protocol.panel.draw_panel`` over the committee's
  history as of the round's arm block (``slotCountAt``, ``occupantAt``, ``standingAt``; the first
  ``ChallengeCommitted`` of each account on the task in the episode's book: no commit at or before a; the
  task's owner and provider; earlier seats) and the seed from the hash of the round's randomness target,
  the arm block + SEED_DELAY (BlockhashRandomness; the committee's ``panelTarget`` names that block), with the
  panelists of the dispute's runs (not of a voided, silent run) ineligible;
- honest stakes (issue 45): an honest auditor loses stake only where the round whose verdict stood had a sybil
  majority (counted), so no honest auditor falls below eligibility otherwise; a withholder's games are counted
  by the verdicts they came to;
- targeted openings: a faked interval opened on request is one more opened faked interval for soundness; the
  lead of a requester's reveal is its request's place when it committed within k's first challenge window
  (as ``_leadSeqOf``);
- no ETH stuck: once the agents stop (at the natural end, or at a random cut-off in some episodes), only
  calls anyone may make (keeper transitions, and auditors leaving) end every task, commit, dispute and
  request;
  everyone withdraws; each contract is left holding its ``burned`` (plus the stakes of auditors that stay).
  One episode in ``REAL_EXITS_EVERY`` exits and withdraws by transactions; the others make each of those
  calls with ``eth_call`` on the final state (each must succeed) and check the balances against the
  credits left, which saves a fifth of an episode's transactions.

Across a shard's episodes, the test asserts floors on what the checks saw (the watcher paid, honest tasks
finalized, each withholder's game played) and a ceiling on episodes cut off, so a change that makes episodes
skip their checks fails too.

An honest agent's transaction that reverts is a failure too (its premise was met, so the protocol owes it
success), except for the races named where they are sent.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from eth_utils import keccak
from helpers import (
    ABSTAIN,
    APPEALABLE,
    AUDITOR_STAKE,
    AWAITING_PANEL,
    B_COMMITTED,
    B_DRAWN,
    BALLOT_UNAVAILABLE,
    C_JOINED,
    C_PENDING,
    COMMITTEE,
    ELIGIBLE_STAKE,
    FAULTY,
    MAX_REQUESTS_PER_BATCH,
    MIN_BONDS,
    MOOT,
    NO_DECISION,
    OUT_OF_BOUNDS,
    RESOLVED,
    SEED_DELAY,
    SHARES,
    UNAVAILABLE,
    VALID,
    VOTING,
    Evidence,
    challenge_commitment,
    task_escrow,
    vote_commitment,
)
from rawchain import Abi, Event, Reads, Rpc, Sent, transact

from ovig_node.protocol.intervals import Layout
from ovig_node.protocol.panel import draw_panel, panel_seed, panel_size

DAY = 24 * 3600
BPS = 10_000
FAULTY_LEAD_BPS, _, _, SOUND_PROVIDER_BPS, SOUND_PANEL_BPS, _ = SHARES
ROUNDS = COMMITTEE["maxRounds"]
P_LAST = panel_size(COMMITTEE["panelSize"], ROUNDS - 1)
MAX_SYBILS = (P_LAST - 1) // 2  # the last round can never have a sybil majority
HONEST_AUDITORS = 2 * sum(panel_size(COMMITTEE["panelSize"], r) for r in range(ROUNDS))  # protocol 4.2's 2 x sum(P_r)
MIN_ACTIVE_HONEST = 32  # every round of a dispute seats its panel (16 tries a seat) with an honest majority
SYBIL_POOL = MAX_SYBILS + 3  # spare sybil addresses, to register while others leave
HORIZON = 30 * DAY  # an episode whose agents are still busy after this is a liveness failure
SETTLE_PASSES = 60
REAL_EXITS_EVERY = 10  # one episode in this many exits and withdraws by transactions (the others by eth_call)
VOTING_SECONDS = COMMITTEE["commitWindow"] + COMMITTEE["revealWindow"]  # from a panel's draw to its resolve
RESERVE = 60  # an honest agent acting "at some moment" acts this long before the deadline at the latest

# TaskStatus (contracts/Types.sol).
POSTED, ACCEPTED, COMMITTED_TASK, FINALIZED, CANCELLED, ABANDONED, SLASHED = range(1, 8)
STATUS_NAMES = (
    "None",
    "Posted",
    "Accepted",
    "Committed",
    "Finalized",
    "Cancelled",
    "Abandoned",
    "Slashed",
)
VERDICT_NAMES = ("none", "sound", "faulty", "no decision", "moot", "unavailable")
REPLAY_SECONDS = (1, 600, COMMITTEE["maxReplaySeconds"])  # what a task declares (protocol 4.2)


# --- the contracts' interface, in one place ---------------------------------------------------------------
#
# postTask's arguments and value (the bonds, the declared replay time; the value is the reward), the escrow the money
# check expects (helpers.task_escrow, shared with the other contract tests), the terminal states, the
# timeouts a keeper calls (releaseLeadShare for a slash's waiting share) and the provider's payouts. What a claimed or
# expired bond refunds is read from its Credited event, so the completeness check judges partial refunds
# (bonds less the round charges of a no-decision) as they come.


class Interface:
    """Where the simulation meets the contracts' signatures and payout rules."""

    TERMINAL = frozenset({FINALIZED, CANCELLED, ABANDONED, SLASHED})
    LIVE = frozenset({POSTED, ACCEPTED, COMMITTED_TASK})

    @staticmethod
    def post_args(plan: TaskPlan, deadline: int) -> tuple[Any, ...]:
        return (
            keccak(text=f"spec {plan.label}"),
            "bafyspec",
            plan.init_digest,
            plan.total_steps,
            plan.stride,
            plan.per_batch,
            plan.sample_bps,
            (plan.provider_bond, plan.challenger_bond),
            plan.replay_seconds,
            plan.windows,
            deadline,
        )

    @staticmethod
    def post_value(plan: TaskPlan) -> int:
        return plan.reward

    @staticmethod
    def escrow(task: Any) -> int:
        return task_escrow(task)

    @staticmethod
    def provider_payout(plan: TaskPlan) -> int:
        """What a finalized task credits its provider (besides challenger bonds' shares)."""
        return plan.reward + plan.provider_bond

    @staticmethod
    def sound_provider_share(plan: TaskPlan, bonds: int) -> int:
        """The provider's share of ``bonds`` challenger bonds settled sound together (floored once)."""
        return bonds * plan.challenger_bond * SOUND_PROVIDER_BPS // BPS

    @staticmethod
    def ended_task_calls(task_id: int, task: Any) -> list[tuple[str, tuple[Any, ...]]]:
        """Timeouts that may end what nobody else moves: a slash's waiting lead share is paid once no challenge
        of the task is left."""
        quiet = task.pendingCommits == 0 and task.openDisputes == 0
        if task.waitingLeadSeq and quiet:
            return [("releaseLeadShare", (task_id,))]
        return []


# --- plans: what the seed decided ---------------------------------------------------------------------------


@dataclass
class SelfChallenge:
    """A cheating provider challenging its own faked interval."""

    when: str  # "early" (right after the opening), "late" (end of window), "race" (on the watcher's commit)
    reason: int
    reveal: str  # "prompt", "last" (last second of the reveal window), "never"
    decoy: bool = False  # challenge one faked interval only, so its dispute may slash before the watcher's


@dataclass
class TaskPlan:
    """One task of an episode and everything the seed decided about it."""

    label: str
    kind: str  # "honest", "cheater" or "flooder"
    owner: str
    provider: str
    total_steps: int
    stride: int
    per_batch: int
    sample_bps: int
    windows: tuple[int, int, int]
    reward: int
    provider_bond: int
    challenger_bond: int
    replay_seconds: int
    faked: frozenset[int]
    init_digest: bytes
    unopened: int | None = None  # a batch the cheater never opens
    stop_at: int | None = None  # the batch from which the cheater stops committing
    self_challenge: SelfChallenge | None = None
    withhold: str | None = None  # a withholder's game with its evidence (WITHHOLDING): who gets the files, when
    # Intervals a cheater faked within the near-tie band (protocol 5): no honest node takes a side on them (the
    # watcher does not challenge, honest panelists abstain and never appeal); the cheater challenges them itself.
    near_tie: frozenset[int] = frozenset()
    split_opening: bool = False
    late: set[str] = field(default_factory=set)  # honest actions the simulation's crowding made late
    last_second_opening: bool = False
    deadline_after: int = DAY  # the commit deadline, from the posting
    id: int = 0
    evidence: Evidence | None = None

    @property
    def intervals(self) -> int:
        return Layout(self.total_steps, self.stride, self.per_batch).intervals

    @property
    def batches(self) -> int:
        return Layout(self.total_steps, self.stride, self.per_batch).batches


@dataclass
class Cast:
    """Who plays in an episode."""

    deployer: str
    owners: list[str]
    providers: list[str]
    watcher: str
    copiers: list[str]
    blind: list[str]
    flooder: str
    sock_puppets: list[str]
    keepers: list[str]
    honest_keeper: str
    sybils: list[str]
    honest_auditors: list[str]
    withholder: str  # owner and provider of a task whose evidence it serves as it likes
    withholder_sock: str  # its sock puppet, the challenger of that task
    outsider: str

    @classmethod
    def of(cls, accounts: list[str]) -> Cast:
        a = accounts
        return cls(
            deployer=a[0],
            owners=a[1:4],
            providers=a[4:8],
            watcher=a[8],
            copiers=a[9:11],
            blind=a[11:13],
            flooder=a[13],
            sock_puppets=a[14:16],
            keepers=a[16:18],
            honest_keeper=a[18],
            sybils=a[20 : 20 + SYBIL_POOL],
            honest_auditors=a[40 : 40 + HONEST_AUDITORS],
            withholder=a[40 + HONEST_AUDITORS],
            withholder_sock=a[41 + HONEST_AUDITORS],
            outsider=a[99],
        )

    @property
    def auditors(self) -> list[str]:
        return [*self.sybils, *self.honest_auditors]


@dataclass
class Mix:
    """The agents an episode runs, drawn from its seed."""

    watcher: bool
    copiers: list[str]
    blind: dict[str, float]  # blind committer -> chance it reveals a commit
    flooder: bool
    sock_puppet: bool
    keepers: list[str]
    active_honest: int
    sybil_silence: float  # chance a seated sybil does not reveal
    sybil_appeal: float  # chance sybils appeal a right decision
    sybil_churn: float  # chance sybils leave/register when a round is armed
    junk_appeal: float
    cutoff: bool  # stop the agents at a random moment: only the no-ETH-stuck checks apply
    # Chance a seated honest auditor, kept busy (a flood of replays) past its commit deadline, lets the
    # abstention the shipped node commits at once stand (review 6 of v3: with a sybil minority voting against
    # the truth, such runs split with no majority).
    busy_abstain: float


def draw_mix(rng: random.Random, cast: Cast) -> Mix:
    return Mix(
        watcher=rng.random() < 0.9,
        copiers=rng.sample(cast.copiers, rng.randint(0, 2)),
        blind={b: rng.choice([0.0, 0.5, 1.0]) for b in rng.sample(cast.blind, rng.randint(0, 2))},
        flooder=rng.random() < 0.35,
        sock_puppet=rng.random() < 0.7,
        keepers=rng.sample(cast.keepers, rng.randint(1, 2)),
        active_honest=HONEST_AUDITORS if rng.random() < 0.4 else rng.randint(MIN_ACTIVE_HONEST, HONEST_AUDITORS),
        sybil_silence=rng.choice([0.0, 0.3, 1.0]),
        sybil_appeal=rng.choice([0.0, 0.0, 0.25, 1.0]),
        sybil_churn=rng.choice([0.0, 0.5]),
        junk_appeal=rng.choice([0.0, 0.0, 0.5]),
        cutoff=rng.random() < 0.12,
        busy_abstain=rng.choice([0.0, 0.0, 0.3]),
    )


WINDOWS = [(3600, 7200, 600), (1800, 3600, 300), (2400, 5400, 900)]

# A withholder's games with the evidence of its own, sound task (issue 45's attacks 1, 2 and 7), against the
# shipped auditor, which votes what it found: the replay's verdict if it obtained the files in time, otherwise
# unavailable (a task it cannot load at all included):
# - "flip": withheld from every round but the last, which finds the interval sound (attack 2);
# - "reverse": served to every round but the last, then withheld (attack 7), the withholder appealing each
#   decided round;
# - "selective": served to some panelists of each run and not others, at random (attack 7's variant);
# - "unloadable": no honest node can load the task at all, and the sybils committed challenges of it before
#   its dispute opened, so none of them is ever drawn on it (attack 1).
WITHHOLDING = ("flip", "reverse", "selective", "unloadable")
WITHHOLDER_CHANCE = 0.4
# A cheater's claim tuned to sit at the boundary (review 12 of v3), which split honest panels by hardware before the
# near-tie band (protocol 5): now every honest panelist abstains on it, whatever its hardware.
NEAR_TIE_CHANCE = 0.3


def draw_task(rng: random.Random, label: str, kind: str, owner: str, provider: str) -> TaskPlan:
    k = rng.randint(2, 8)
    stride = rng.choice([10, 7])
    total = k * stride - rng.randrange(stride)
    m = rng.choice([1, 2, 3, 4])
    plan = TaskPlan(
        label=label,
        kind=kind,
        owner=owner,
        provider=provider,
        total_steps=total,
        stride=stride,
        per_batch=m,
        sample_bps=rng.choice([3000, 5000, 10000]),
        windows=rng.choice(WINDOWS),
        reward=rng.choice([2 * 10**18, 10**18 + 1]),
        provider_bond=rng.choice([3 * 10**18, 10**18 + 7]),
        challenger_bond=rng.choice([10**17, 10**17 + 3]),
        replay_seconds=rng.choice(REPLAY_SECONDS),
        faked=frozenset(),
        init_digest=keccak(text=f"init {label}"),
    )
    plan.split_opening = rng.random() < 0.2
    if rng.random() < 0.25:  # a deadline that may pass while challenges run: abandon races them
        plan.deadline_after = rng.randint(plan.batches * 300 + 600, 3 * 3600)
    plan.last_second_opening = rng.random() < 0.1
    if kind == "cheater":
        faked = set(rng.sample(range(plan.intervals), rng.randint(1, min(2, plan.intervals))))
        if rng.random() < 0.4:
            faked.add(plan.intervals - 1)  # the deliverable is always sampled
        plan.faked = frozenset(faked)
        if plan.batches > 1 and rng.random() < 0.2:
            plan.unopened = rng.randrange(plan.batches)
        elif plan.batches > 1 and rng.random() < 0.1:
            plan.stop_at = rng.randrange(1, plan.batches)
        if rng.random() < 0.6:
            plan.self_challenge = SelfChallenge(
                when=rng.choice(["early", "late", "race"]),
                reason=rng.choice([OUT_OF_BOUNDS, UNAVAILABLE]),
                reveal=rng.choice(["prompt", "last", "never"]),
                decoy=rng.random() < 0.3,
            )
    return plan


# --- the world: chain access, the episode's events, the schedule --------------------------------------------


@dataclass
class CommitInfo:
    """A challenge commit as the simulation made it (what its commitment hides)."""

    task: int
    k: int
    reason: int
    salt: bytes
    challenger: str
    seq: int = 0
    reveal_by: int = 0

    @property
    def commitment(self) -> bytes:
        return challenge_commitment(self.task, self.k, self.reason, self.salt, self.challenger)


@dataclass
class RequestInfo:
    """A targeted opening as the simulation saw it asked (its place in the commit order included)."""

    requester: str
    seq: int
    open_by: int
    window_end: int = 0  # its own challenge window's end, once opened
    settled: bool = False


@dataclass
class Snap:
    """The chain state agents look at, read in one batched round trip."""

    block: int
    time: int
    tasks: dict[int, Any]
    batches: dict[tuple[int, int], Any]
    intervals: dict[tuple[int, int], Any]
    records: dict[int, Any]
    disputes: dict[int, Any]
    commits: dict[tuple[str, bytes], Any]
    scalars: dict[str, int]


@dataclass(order=True)
class _Item:
    time: int
    priority: int
    order: int
    label: str = field(compare=False)
    action: Callable[[], None] = field(compare=False)


class World:
    """One episode's chain, schedule, events and bookkeeping."""

    def __init__(self, rpc: Rpc, tasks: Abi, committee: Abi, cast: Cast, seed: int, start: int) -> None:
        self.rpc, self.tasks, self.committee, self.cast, self.seed = rpc, tasks, committee, cast, seed
        self.rng = random.Random(seed)
        self.errors = {**tasks.errors, **committee.errors}
        # The timestamp the next mined block gets. The clock stands still between the moments the schedule
        # moves it to (anvil's block timestamp interval is 0): every transaction due at a moment is mined at
        # that very second, as transactions sharing a block would be, so an agent acting at the last second
        # of a window is never pushed past it by others acting just before.
        self.next_time = start
        self.queue: list[_Item] = []
        self.counter = itertools.count()
        self.handlers: dict[str, list[Callable[[Event], None]]] = defaultdict(list)
        self.events: list[Event] = []
        self.plans: dict[int, TaskPlan] = {}
        self.commits: dict[tuple[str, bytes], CommitInfo] = {}
        self.disputes: dict[int, tuple[int, int]] = {}  # dispute -> (task, k), from DisputeOpened
        self.credits: dict[tuple[str, str], int] = Counter()  # (contract, account) -> unpaid credit
        self.failures: list[str] = []
        self.stats: Counter[str] = Counter()
        self.panels_checked = 0
        self.stopped = False
        self._snap: Snap | None = None
        self.final_commits: dict[tuple[str, bytes], Any] = {}
        self.resolved: dict[int, tuple[Any, Any]] = {}
        self.watcher_revealed: set[tuple[int, int]] = set()  # (task, k) the watcher revealed in time
        self.money_due = False
        self.clock_moved = False
        self.maybe_over = True  # something that may end the episode happened since the last look
        self.ended: dict[int, tuple[dict[Any, Any], dict[Any, Any]]] = {}  # task -> its final batches, intervals
        self.sampled: dict[tuple[int, int], list[int]] = {}  # (task, j) -> sampled intervals
        self.opened_ks: dict[int, list[int]] = {}  # task -> sampled intervals of its opened batches
        self.pending_made: list[CommitInfo] = []  # commits sent, waiting for their ChallengeCommitted
        # Targeted openings (protocol 8.3): (task, k) -> the request, in the contract's one commit order.
        self.requests: dict[tuple[int, int], RequestInfo] = {}
        self.commit_count = 0  # the contract's commitCount: every commit and every request takes the next
        # Requests decide with a generator of their own, so the rest of a seed's episode draws as it did.
        self.request_rng = random.Random(f"requests {seed}")
        self.withhold_rng = random.Random(f"withholding {seed}")  # likewise the withholder's
        self.near_tie_rng = random.Random(f"near tie {seed}")  # and the near-tie claims'

    # --- clock and schedule ---------------------------------------------------------------------------

    def schedule(self, moment: int, label: str, action: Callable[[], None], priority: int = 1) -> None:
        heapq.heappush(self.queue, _Item(moment, priority, next(self.counter), label, action))

    def soon(self, label: str, action: Callable[[], None], spread: int = 30, priority: int = 1) -> None:
        self.schedule(self.next_time + self.rng.randint(0, spread), label, action, priority)

    def run(self, until: Callable[[], bool], horizon: int) -> bool:
        """Run scheduled actions in time order until ``until()`` holds (True) or time passes ``horizon``."""
        while self.queue:
            # Whether it is over is asked between moments only: reading the chain after every action costs more
            # than the actions.
            if self.queue[0].time > self.next_time and until():
                return True
            item = heapq.heappop(self.queue)
            if item.time > horizon:
                return False
            self.at(item.time)
            item.action()
        return until()

    def at(self, moment: int) -> None:
        """The next transaction is mined at ``moment`` (or now, if that has passed). The chain is told just
        before the next block is mined: many moments pass with nothing sent."""
        if moment > self.next_time:
            self.next_time = moment
            self.clock_moved = True

    def tell_clock(self) -> None:
        if self.clock_moved:
            self.rpc("evm_setNextBlockTimestamp", hex(self.next_time))
            self.clock_moved = False

    def mine(self, blocks: int) -> None:
        if blocks > 0:
            self.tell_clock()
            self.rpc("anvil_mine", hex(blocks))
            self._snap = None

    def warp(self, seconds: int) -> None:
        self.at(self.next_time + seconds)
        self.mine(1)

    def ensure_block_after(self, block: int) -> None:
        """Mine until the next transaction lands in a block after ``block``."""
        self.mine(block - self.snap.block)

    # --- transactions -----------------------------------------------------------------------------------

    def send(
        self, who: str, contract: Abi, fn: str, *args: Any, value: int = 0, honest: str = "", races: Iterable[str] = ()
    ) -> Sent:
        """Send a transaction, record and dispatch its events, check the money invariant.

        ``honest``: the honest role sending it; a revert is then a failure unless its error is one of
        ``races`` (another party got there first, which the protocol allows)."""
        if self.money_due:
            self.check_money()
        self.tell_clock()
        sent = transact(self.rpc, self.errors, who, contract, fn, *args, value=value)
        mined_at = sent.receipt["blockTimestamp"]
        self.next_time = int(mined_at, 16) if isinstance(mined_at, str) else mined_at
        self.stats[f"{fn}:{'ok' if sent.ok else sent.error}"] += 1
        if not sent.ok:
            if sent.error not in self.errors.values():
                self.fail(f"{fn}{args} from {who} reverted without a custom error: {sent.error}")
            elif honest and sent.error not in races:
                self.fail(f"honest {honest}'s {fn}{args} reverted with {sent.error}")
            return sent
        self._snap = None
        self.money_due = True  # checked by the next read, or before the next transaction
        self.record(sent.receipt["logs"])
        return sent

    def record(self, logs: list[dict[str, Any]]) -> None:
        """Book every event of a transaction, then let agents react (a reaction may read the chain, which
        checks the money invariant against the book: it must hold the whole transaction)."""
        events = [e for e in (self.tasks.decode_log(log) or self.committee.decode_log(log) for log in logs) if e]
        for event in events:
            self.events.append(event)
            self.ledger(event)
        for event in events:
            for handler in self.handlers[event.name]:
                handler(event)

    ENDINGS = frozenset(
        {
            "TaskFinalized",
            "TaskSlashed",
            "TaskAbandoned",
            "TaskCancelled",
            "DisputeResolved",
            "ChallengeExpired",
            "ChallengeRevealed",
            "LeadShareReleased",
            "RequestSettled",
            "SeatsSettled",
        }
    )

    def ledger(self, e: Event) -> None:
        who = "tasks" if e.address == self.tasks.address else "committee"
        if e.name in self.ENDINGS:
            self.maybe_over = True
        if e.name == "Credited":
            self.credits[(who, e.args.account)] += e.args.amount
        elif e.name == "Withdrawn":
            self.credits[(who, e.args.account)] -= e.args.amount
        elif e.name == "ChallengeCommitted":
            info = next(c for c in self.pending_made if c.commitment == e.args.commitment)
            self.pending_made.remove(info)
            info.seq, info.reveal_by = e.args.seq, e.args.revealBy
            self.commits[(e.args.challenger, e.args.commitment)] = info
            if e.args.seq != self.commit_count + 1:
                self.fail(f"commit order: commit {e.args.seq} after {self.commit_count}")
            self.commit_count = e.args.seq
        elif e.name == "OpeningRequested":
            self.commit_count += 1
            self.requests[(e.args.task, e.args.k)] = RequestInfo(e.args.requester, self.commit_count, e.args.openBy)
        elif e.name == "RequestOpened":
            self.requests[(e.args.task, e.args.k)].window_end = e.args.challengeWindowEnd
            self.opened_ks.setdefault(e.args.task, []).append(e.args.k)
        elif e.name == "RequestSettled":
            self.requests[(e.args.task, e.args.k)].settled = True
        elif e.name == "DisputeOpened":
            self.disputes[e.args.dispute] = (e.args.task, e.args.k)
        elif e.name == "SeedDrawn":
            m = self.plans[e.args.task].per_batch
            bitmap = e.args.sampledBitmap
            self.sampled[(e.args.task, e.args.j)] = [e.args.j * m + p for p in range(m) if bitmap >> p & 1]
        elif e.name == "BatchOpened":
            self.opened_ks.setdefault(e.args.task, []).extend(self.sampled[(e.args.task, e.args.j)])

    def on(self, name: str, handler: Callable[[Event], None]) -> None:
        self.handlers[name].append(handler)

    def name_of(self, address: str) -> str:
        """An account's role in the cast, e.g. ``providers1`` (the address itself if it has none)."""
        for role, people in vars(self.cast).items():
            group = people if isinstance(people, list) else [people]
            if address in group:
                return f"{role}{group.index(address)}"
        return address

    def fail(self, message: str) -> None:
        self.failures.append(f"[seed {self.seed}, t={self.next_time}] {message}")

    # --- reading ----------------------------------------------------------------------------------------

    @property
    def snap(self) -> Snap:
        if self._snap is None:
            self._snap = self.read()
        return self._snap

    def read(self) -> Snap:
        """Everything agents look at, in one round trip: live tasks with their batches and opened intervals,
        disputes and commits not settled for good (settled ones are cached), the money scalars."""
        t, c = self.tasks, self.committee
        r = Reads()
        r.add("head", None, ("eth_getBlockByNumber", ["latest", False]), lambda raw: raw)
        for i, plan in self.plans.items():
            r.view("tasks", i, t, "getTask", i)  # an ended task's held bonds still move
            if i in self.ended:
                continue
            for j in range(plan.batches):
                r.view("batches", (i, j), t, "getBatch", i, j)
            for k in self.opened_ks.get(i, ()):
                r.view("intervals", (i, k), t, "getOpenedInterval", i, k)
        for d in self.disputes:
            if d not in self.resolved:
                r.view("records", d, t, "getDispute", d)
                r.view("disputes", d, c, "getDispute", d)
        for key in self.commits:
            if key not in self.final_commits:
                r.view("commits", key, t, "getCommit", *key)
        self.money_reads(r)
        got = r.run(self.rpc)
        self.check_money(got)
        tasks = got.get("tasks", {})
        batches = {key: b for batches, _ in self.ended.values() for key, b in batches.items()}
        batches |= got.get("batches", {})
        intervals = {key: iv for _, ivs in self.ended.values() for key, iv in ivs.items()}
        intervals |= got.get("intervals", {})
        for i, task in got.get("tasks", {}).items():
            # Its batches and intervals never change again (once no earlier challenge can still be judged).
            if task.status in Interface.TERMINAL and not task.waitingLeadSeq and i not in self.ended:
                mine = {key: b for key, b in batches.items() if key[0] == i}
                self.ended[i] = (mine, {key: iv for key, iv in intervals.items() if key[0] == i})
        records = {**{d: rec for d, (rec, _) in self.resolved.items()}, **got.get("records", {})}
        disputes = {**{d: dis for d, (_, dis) in self.resolved.items()}, **got.get("disputes", {})}
        for d, dispute in got.get("disputes", {}).items():
            # Resolved in both contracts, its seats settled: never changes again.
            if dispute.status == 3 and dispute.seatsSettled and not records[d].open:
                self.resolved[d] = (records[d], dispute)
        commits = {**self.final_commits, **got.get("commits", {})}
        for key, commit in got.get("commits", {}).items():
            # Settled and expired commits never change; nor do joined ones of a sound settlement (paid out then).
            sound = (
                commit.status == C_JOINED
                and commit.dispute in self.resolved
                and records[commit.dispute].verdict == VALID
            )
            if commit.status not in (C_PENDING, C_JOINED) or sound:
                self.final_commits[key] = commit
        head = got["head"][None]
        return Snap(
            block=int(head["number"], 16),
            time=int(head["timestamp"], 16),
            tasks=tasks,
            batches=batches,
            intervals=intervals,
            records=records,
            disputes=disputes,
            commits=commits,
            scalars=got["scalars"],
        )

    def money_reads(self, r: Reads) -> None:
        t, c = self.tasks, self.committee
        for i in self.plans:
            r.view("money_tasks", i, t, "getTask", i)
        for name, contract in (("task_burned", t), ("committee_burned", c)):
            r.view("scalars", name, contract, "burned")
        for name in ("totalStake", "heldAppealBonds", "heldForSeats", "auditorCount"):
            r.view("scalars", name, c, name)
        for name, contract in (("task_eth", t), ("committee_eth", c)):
            r.add("scalars", name, ("eth_getBalance", [contract.address, "latest"]), lambda raw: int(raw, 16))

    def dispute(self, d: int) -> Any:
        """The committee's view of one dispute: from the snapshot if it is fresh, else one call."""
        return self._snap.disputes[d] if self._snap is not None else self.view(self.committee, "getDispute", d)

    def view(self, contract: Abi, name: str, *args: Any) -> Any:
        method, params = contract.call(name, *args)
        return contract.result(name, self.rpc(method, *params))

    # --- checks after every transaction -------------------------------------------------------------

    def check_money(self, got: dict[str, dict[Any, Any]] | None = None) -> None:
        """Protocol 4.3: each contract's balance equals what it holds for others plus ``burned``; ``got``:
        the money reads, when they came with a snapshot."""
        if got is None:
            r = Reads()
            self.money_reads(r)
            got = r.run(self.rpc)
        self.money_due = False
        scalars = got["scalars"]
        escrow = sum(Interface.escrow(task) for task in got.get("money_tasks", {}).values())
        task_credits = sum(v for (who, _), v in self.credits.items() if who == "tasks")
        committee_credits = sum(v for (who, _), v in self.credits.items() if who == "committee")
        held = escrow + task_credits + scalars["task_burned"]
        if scalars["task_eth"] != held:
            self.fail(f"money: TrainingTasks holds {scalars['task_eth']} but owes {held}")
        owed = scalars["totalStake"] + scalars["heldAppealBonds"] + scalars["heldForSeats"] + committee_credits
        owed += scalars["committee_burned"]
        if scalars["committee_eth"] != owed:
            self.fail(f"money: AuditCommittee holds {scalars['committee_eth']} but owes {owed}")

    # --- ground truth -----------------------------------------------------------------------------------

    def truth(self, dispute: int) -> int:
        """The vote an honest panelist casts: faulty iff the interval was faked."""
        task, k = self.disputes[dispute]
        return FAULTY if k in self.plans[task].faked or k in self.plans[task].near_tie else VALID

    def near_tie(self, dispute: int) -> bool:
        """Whether the dispute is over an interval faked within the near-tie band: no honest node takes a side."""
        task, k = self.disputes[dispute]
        return k in self.plans[task].near_tie

    def ballot(self, dispute: int, round_: int) -> int:
        """The ballot an honest panelist of ``round_`` reveals, as the shipped node decides it: the ground truth
        if it obtained the files, unavailable if not (a withholder decides which); an abstention on a near-tie
        claim (its replay lands within the band, whatever its hardware)."""
        task, _ = self.disputes[dispute]
        if self.near_tie(dispute):
            self.stats["near tie: honest ballots (abstentions)"] += 1
            return ABSTAIN
        mode = self.plans[task].withhold
        if mode is None:
            served = True
        elif mode == "selective":
            served = self.withhold_rng.random() < 0.5
        else:
            served = mode == "flip" if round_ == ROUNDS - 1 else mode == "reverse"
        return self.truth(dispute) if served else BALLOT_UNAVAILABLE

    def opened(self, task: int) -> list[int]:
        """Sampled intervals of the task's opened batches."""
        return list(self.opened_ks.get(task, ()))

    def window_of(self, task: int, k: int) -> tuple[int, int, int, int]:
        """k's challenge window: (opened at, first window's end: its batch's, or its own if opened on request,
        reopened at, end)."""
        b = self.snap.batches[(task, k // self.plans[task].per_batch)]
        iv = self.snap.intervals[(task, k)]
        opened_at, first_end = b.openedAt, b.windowEnd
        request = self.requests.get((task, k))
        if request is not None and request.window_end:
            opened_at, first_end = request.window_end - self.plans[task].windows[1], request.window_end
        return opened_at, first_end, iv.reopenedAt, max(first_end, iv.windowEnd)

    def window_open(self, task: int, k: int, at: int) -> bool:
        """Whether a commit made at ``at`` may challenge k (TrainingTasks._requireChallengeable)."""
        opened_at, batch_end, reopened_at, end = self.window_of(task, k)
        in_gap = reopened_at != 0 and batch_end <= at < reopened_at
        return opened_at <= at < end and not in_gap

    def active(self, task: int) -> bool:
        return self.snap.tasks[task].status in (ACCEPTED, COMMITTED_TASK)

    def live(self, task: int, seq: int) -> bool:
        """Whether a challenge whose (lead) commit has sequence number ``seq`` can still change who is paid: its
        task is active, or slashed with the lead's share waiting for commits made before ``seq``."""
        return self.active(task) or 0 < seq < self.snap.tasks[task].waitingLeadSeq

    def lead_seq(self, info: CommitInfo) -> int:
        """The place a reveal of ``info`` leads from (TrainingTasks._leadSeqOf): its request's, if its
        challenger requested k before committing and committed within k's first challenge window."""
        request = self.requests.get((info.task, info.k))
        if request is None or request.requester != info.challenger or request.seq >= info.seq:
            return info.seq
        committed_at = info.reveal_by - self.plans[info.task].windows[2]
        return request.seq if request.window_end and committed_at < request.window_end else info.seq

    def moot_seq(self, task: int, who: str, seq: int) -> int:
        """The place expireChallenge judges a pending commit moot from: the earlier of its own and its
        challenger's first request on the task (a commit hides k)."""
        requested = [r.seq for (t, _), r in self.requests.items() if t == task and r.requester == who]
        return min([seq, *requested])

    def draw_moment(self, start: int, end: int, last: float = 0.15, now: float = 0.3) -> tuple[int, int]:
        """A moment to act before ``end``: at once, at random until RESERVE before it, or at its last second
        ``end - 1``; returns (moment, priority)."""
        roll = self.rng.random()
        if roll < last:
            return end - 1, 0
        latest = max(start, end - RESERVE)
        if roll < last + now:
            return start, 0
        return self.rng.randint(start, latest), 0

    def late(self, plan: TaskPlan, what: str) -> None:
        """An honest action found its window closed when its moment came (it was planned when that moment
        had already passed): the simulation, not the protocol, broke the agent's premise. Counted (the test
        prints the count), and the task's honest-party properties are not asserted."""
        self.stats[f"late {what}"] += 1
        plan.late.add(what)

    # --- appeals --------------------------------------------------------------------------------------

    def appeal_if_wrong(self, e: Event, who: str, role: str) -> None:
        """An honest party appeals a decided round whose outcome is not the ground truth, in time (never a near-tie
        claim's: its replay contradicts neither outcome)."""
        if self.stopped or e.args.outcome == self.truth(e.args.dispute) or self.near_tie(e.args.dispute):
            return
        moment = self.rng.randint(self.next_time, max(self.next_time, e.args.appealUntil - RESERVE))
        self.schedule(moment, f"{role} appeal", lambda: self.appeal(e, who, role), 0)

    def appeal(self, e: Event, who: str, role: str) -> None:
        """Appeal the round decided in ``e`` if it is still the one open to appeal (an honest party
        appeals only a wrong outcome another honest party has not appealed yet)."""
        d = e.args.dispute
        x = self.dispute(d)
        if x.status != APPEALABLE or x.round != e.args.round:
            return
        if role and x.decided == self.truth(d):
            return
        if self.next_time >= e.args.appealUntil:
            if role:
                self.late(self.plans[x.task], f"{role}'s appeal")
            return
        bond = MIN_BONDS[1] << (x.round + 1)  # the deployment's smallest challenger bond (review 12, F2)
        if self.send(who, self.committee, "appeal", d, value=bond, honest=role).ok:
            self.stats["appeals by honest" if role else "appeals by adversaries"] += 1

    # --- fixity -----------------------------------------------------------------------------------------

    def check_panel(self, e: Event) -> None:
        """The drawn panel is protocol 4.2's draw over the committee's history as of the arm block."""
        d, round_, run = e.args.dispute, e.args.round, e.args.run
        x = self.view(self.committee, "getDispute", d)
        a = x.armBlock
        as_of = a - 1
        target = a + SEED_DELAY  # BlockhashRandomness: the round's seed is the hash of block a + DELAY
        head, slots, named = self.rpc.batch(
            [
                ("eth_getBlockByNumber", [hex(target), False]),
                self.committee.call("slotCountAt", as_of),
                self.committee.call("panelTarget", d),
            ]
        )
        n = self.committee.result("slotCountAt", slots)
        if (got_target := self.committee.result("panelTarget", named)) != target:
            self.fail(f"fixity: dispute {d} round {round_}'s panel target is {got_target}, not {a} + {SEED_DELAY}")
        occ = Reads()
        for slot in range(n):
            occ.view("occupants", slot, self.committee, "occupantAt", slot, as_of)
        occupants = [o if int(o, 16) else None for _, o in sorted(occ.run(self.rpc).get("occupants", {}).items())]
        people = sorted({o for o in occupants if o is not None})
        info = Reads()
        first_as_of = x.firstArmBlock - 1  # a later round seats only auditors eligible when the dispute opened too
        for who in people:
            info.view("standing", who, self.committee, "standingAt", who, as_of)
            info.view("first", who, self.committee, "standingAt", who, first_as_of)
        info.view("task", None, self.tasks, "getTask", x.task)
        got = info.run(self.rpc)
        # each challenger's first commit (or opening request: a requester is interested too) on the task
        first_commits: dict[str, int] = {}
        for c in self.events:
            if c.name == "ChallengeCommitted" and c.args.task == x.task:
                first_commits.setdefault(str(c.args.challenger), c.block)
            elif c.name == "OpeningRequested" and c.args.task == x.task:
                first_commits.setdefault(str(c.args.requester), c.block)
        # Earlier runs' panelists, but a voided run's (re-run in the same round: it stayed silent) sit again.
        runs = {r.args.run: r.args for r in self.events if r.name == "PanelDrawn" and r.args.dispute == d}
        earlier = {
            p for r, args in runs.items() if r < run and runs.get(r + 1, e.args).round != args.round for p in args.panel
        }
        task = got["task"][None]
        excluded = {task.owner, task.provider}  # never on a panel of the task's disputes

        def standing_ok(standing: tuple[int, int, bool], block: int) -> bool:
            stake, registered, leaving = standing
            return (
                registered != 0
                and registered + COMMITTEE["warmupBlocks"] <= block
                and not leaving
                and (stake >= ELIGIBLE_STAKE)
            )

        def eligible(who: str) -> bool:
            first_commit = first_commits.get(who, 0)
            return (
                who not in excluded
                and standing_ok(got["standing"][who], a)
                and standing_ok(got["first"][who], x.firstArmBlock)
                and (first_commit == 0 or first_commit > a)  # no commit on the task at or before a
                and who not in earlier
            )

        value = bytes.fromhex(head["hash"][2:])
        expected = draw_panel(
            panel_seed(value, d, round_), occupants, eligible, panel_size(COMMITTEE["panelSize"], round_)
        )
        self.panels_checked += 1
        if expected != list(e.args.panel):
            self.fail(
                f"fixity: dispute {d} round {round_} drew {e.args.panel}, the history as of block {a} gives {expected}"
            )
        sybils = sum(p in self.cast.sybils for p in e.args.panel)
        if sybils * 2 > len(e.args.panel):
            self.stats[f"sybil-majority panels in round {round_}"] += 1

    # --- challenge plumbing --------------------------------------------------------------------------

    def commit(
        self, who: str, task: int, k: int, reason: int, honest: str = "", races: Iterable[str] = ()
    ) -> CommitInfo | None:
        info = CommitInfo(task, k, reason, self.rng.randbytes(32), who)
        self.pending_made.append(info)
        sent = self.send(
            who,
            self.tasks,
            "commitChallenge",
            task,
            info.commitment,
            value=self.plans[task].challenger_bond,
            honest=honest,
            races=races,
        )
        if not sent.ok:
            self.pending_made.remove(info)
            return None
        return info

    def reveal(self, info: CommitInfo, honest: str = "") -> Sent:
        return self.send(
            info.challenger,
            self.tasks,
            "revealChallenge",
            info.task,
            info.k,
            info.reason,
            info.salt,
            "bafyreport",
            honest=honest,
        )

    def commit_status(self, info: CommitInfo) -> int:
        return self.snap.commits[(info.challenger, info.commitment)].status


# --- agents -------------------------------------------------------------------------------------------------


class Agent:
    """An agent reacts to events by scheduling actions; it stops once the world stops."""

    def __init__(self, world: World) -> None:
        self.w = world

    def later(self, moment: int, label: str, action: Callable[[], None], priority: int = 1) -> None:
        if not self.w.stopped:
            self.w.schedule(moment, label, action, priority)

    def soon(self, label: str, action: Callable[[], None], spread: int = 30, priority: int = 1) -> None:
        if not self.w.stopped:
            self.w.soon(label, action, spread, priority)

    @property
    def now(self) -> int:
        return self.w.next_time


class Provider(Agent):
    """Commits, draws and opens its task's batches; a cheater also challenges its own faked intervals and
    runs a sock-puppet keeper. An honest provider (or the flooder, honest about its work) appeals a wrong
    decision of its task."""

    def __init__(self, world: World, plan: TaskPlan, sock_puppet: str | None) -> None:
        super().__init__(world)
        self.plan, self.sock = plan, sock_puppet
        self.decoyed = False  # a decoy self-challenge was planned
        self.honest = "" if plan.kind in ("cheater", "withholder") else f"provider of task {plan.label}"
        world.on("SeedDrawn", self.seed_drawn)
        world.on("BatchOpened", self.batch_opened)
        world.on("ChallengeCommitted", self.challenge_committed)
        world.on("RoundDecided", self.round_decided)
        world.on("OpeningRequested", self.opening_requested)
        world.on("IntervalWindowReopened", self.window_reopened)

    def sock_call(self, fn: str, *args: Any) -> None:
        """The provider's sock-puppet keeper calls ``fn`` (a slash or abandon that may pay it or moot a verdict)."""
        assert self.sock is not None
        self.w.send(self.sock, self.w.tasks, fn, *args)

    def start(self) -> None:
        self.soon("commit batch 0", lambda: self.commit_batch(0), spread=120)

    def commit_batch(self, j: int) -> None:
        p, ev = self.plan, self.plan.evidence
        assert ev is not None
        if p.stop_at is not None and j >= p.stop_at:
            if self.sock:  # abandon (or slash) at the deadline's edge, ahead of whatever is pending
                deadline = self.w.snap.tasks[p.id].terms.deadline
                for moment in (deadline - 1, deadline):
                    self.later(moment, "sock abandon", lambda: self.sock_call("abandon", p.id))
            return
        sent = self.w.send(
            p.provider, self.w.tasks, "commitBatch", p.id, j, ev.tree(j).root, f"bafymanifest{j}", honest=self.honest
        )
        if not sent.ok:
            return
        self.soon(f"draw seed {p.label}/{j}", lambda: self.draw_seed(j), spread=60)
        if j + 1 < p.batches:
            self.soon(f"commit batch {j + 1}", lambda: self.commit_batch(j + 1), spread=300)

    def draw_seed(self, j: int) -> None:
        b = self.w.snap.batches[(self.plan.id, j)]
        if b.status != B_COMMITTED or not self.w.active(self.plan.id):
            return
        self.w.ensure_block_after(b.seedTarget)
        # A keeper may draw it in between: a race the protocol allows.
        self.w.send(
            self.plan.provider,
            self.w.tasks,
            "drawSeed",
            self.plan.id,
            j,
            honest=self.honest,
            races=("WrongBatchStatus",),
        )

    def seed_drawn(self, e: Event) -> None:
        p = self.plan
        if e.args.task != p.id:
            return
        j, end = e.args.j, e.args.openingWindowEnd
        if self.sock and (p.unopened is not None or self.w.rng.random() < 0.3):
            for moment in (end - 1, end):  # the sock-puppet slashes the moment it may, ahead of any reveal
                self.later(moment, "sock slashUnopened", lambda: self.sock_call("slashUnopened", p.id, j), 0)
        if j == p.unopened:
            return
        m = p.per_batch
        ks = [j * m + pos for pos in range(m) if e.args.sampledBitmap >> pos & 1]
        if p.last_second_opening:
            moment, priority = end - 1, 0
        else:
            moment, priority = self.w.rng.randint(self.now, max(self.now, end - RESERVE)), 0
        if p.split_opening and len(ks) > 1:
            cut = self.w.rng.randint(1, len(ks) - 1)
            self.later(moment, "open part", lambda: self.open(j, ks[:cut], end), priority)
            second = min(moment + self.w.rng.randint(0, 60), end - 1)
            self.later(second, "open rest", lambda: self.open(j, ks[cut:], end), priority)
        else:
            self.later(moment, "open", lambda: self.open(j, ks, end), priority)

    def open(self, j: int, ks: list[int], end: int) -> None:
        p = self.plan
        if not self.w.active(p.id):
            return
        if self.now >= end:
            self.w.late(p, "provider's opening")
            return
        assert p.evidence is not None
        openings = [p.evidence.opening(k) for k in ks]
        self.w.send(p.provider, self.w.tasks, "openBatch", p.id, j, f"bafyopening{j}", openings, honest=self.honest)

    # --- targeted openings -------------------------------------------------------------------------------

    def opening_requested(self, e: Event) -> None:
        """Open what a watcher asks for before openBy; a cheater may refuse (its faked interval would be
        replayed), its sock-puppet then racing to slash the task at openBy (the requester gets the share)."""
        p, rng = self.plan, self.w.request_rng
        if e.args.task != p.id:
            return
        k, open_by = e.args.k, e.args.openBy
        if not self.honest and rng.random() < 0.3:
            if self.sock:
                self.later(
                    open_by, "sock slashUnopenedRequest", lambda: self.sock_call("slashUnopenedRequest", p.id, k)
                )
            return
        moment = open_by - 1 if rng.random() < 0.2 else rng.randint(self.now, max(self.now, open_by - RESERVE))
        self.later(moment, "open requested", lambda: self.open_requested(k, open_by), 0)

    def open_requested(self, k: int, open_by: int) -> None:
        p = self.plan
        if not self.w.active(p.id):
            return
        if self.now >= open_by:
            self.w.late(p, "provider's requested opening")
            return
        assert p.evidence is not None
        self.w.send(
            p.provider, self.w.tasks, "openRequested", p.id, "bafyrequested", p.evidence.opening(k), honest=self.honest
        )

    # --- a cheater's own challenges ----------------------------------------------------------------------

    def batch_opened(self, e: Event) -> None:
        p, sc = self.plan, self.plan.self_challenge
        if e.args.task == p.id:
            for k in self.w.opened(p.id):
                if k // p.per_batch == e.args.j and k in p.near_tie:
                    self.soon("near-tie challenge", lambda k=k: self.near_tie_challenge(k), spread=60)
        if e.args.task != p.id or sc is None or sc.when == "race":
            return
        for k in self.w.opened(p.id):
            if k // p.per_batch != e.args.j or k not in p.faked or (sc.decoy and self.decoyed):
                continue
            self.decoyed = True
            if sc.when == "early":
                self.soon("self-challenge early", lambda k=k: self.self_challenge(k), spread=20)
            else:
                end = e.args.challengeWindowEnd
                self.later(end - self.w.rng.randint(1, 120), "self-challenge late", lambda k=k: self.self_challenge(k))

    def challenge_committed(self, e: Event) -> None:
        p, sc = self.plan, self.plan.self_challenge
        if e.args.task != p.id or e.args.challenger == p.provider:
            return
        if self.sock:  # ahead of the reveal: slash an unopened batch, or abandon
            for j in range(p.batches):
                if self.w.snap.batches[(p.id, j)].status == B_DRAWN:
                    self.w.schedule(self.now, "sock slash", lambda j=j: self.sock_call("slashUnopened", p.id, j), -1)
            if self.w.snap.tasks[p.id].status == ACCEPTED:
                self.w.schedule(self.now, "sock abandon", lambda: self.sock_call("abandon", p.id), -1)
        if sc is not None and sc.when == "race" and e.args.challenger == self.w.cast.watcher:
            for k in self.w.opened(p.id):
                if k in p.faked:
                    self.w.schedule(self.now, "self-challenge race", lambda k=k: self.self_challenge(k), -1)

    def window_reopened(self, e: Event) -> None:
        """Review 7 of v3 (F3): when a no-decision reopens a window nothing is pending, so the sock-puppet tries to
        end the task ahead of the watcher's fresh commit: slash an unopened batch, or abandon."""
        p = self.plan
        if e.args.task != p.id or not self.sock:
            return
        for j in range(p.batches):
            if self.w.snap.batches[(p.id, j)].status == B_DRAWN:
                self.w.schedule(self.now, "sock slash", lambda j=j: self.sock_call("slashUnopened", p.id, j), -1)
        if self.w.snap.tasks[p.id].status == ACCEPTED:
            self.w.schedule(self.now, "sock abandon", lambda: self.sock_call("abandon", p.id), -1)

    def near_tie_challenge(self, k: int) -> None:
        """The cheater challenges its own near-tie claim, to have honest panels judge it (review 12 of v3: before
        the band they split by hardware, and the losing honest side lost ``penalty``)."""
        if not self.w.active(self.plan.id):
            return
        info = self.w.commit(self.plan.provider, self.plan.id, k, OUT_OF_BOUNDS)
        if info is not None:
            self.w.schedule(self.now, "near-tie reveal", lambda: self.w.reveal(info), -1)

    def self_challenge(self, k: int) -> None:
        p, sc = self.plan, self.plan.self_challenge
        assert sc is not None
        if not self.w.active(p.id):
            return
        info = self.w.commit(p.provider, p.id, k, sc.reason)
        if info is None or sc.reveal == "never":
            return
        if sc.reveal == "last":
            self.later(info.reveal_by - 1, "self-reveal last", lambda: self.w.reveal(info), 0)
        else:
            self.w.schedule(self.now, "self-reveal prompt", lambda: self.w.reveal(info), -1)

    def round_decided(self, e: Event) -> None:
        if self.honest and self.w.snap.records[e.args.dispute].task == self.plan.id:
            self.w.appeal_if_wrong(e, self.plan.provider, self.honest)


class Watcher(Agent):
    """The honest watcher: challenges every faked, opened interval while its window is open, reveals in
    time, joins disputes others opened, challenges again after a no-decision, appeals wrong decisions."""

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.me = world.cast.watcher
        world.on("BatchOpened", self.batch_opened)
        world.on("BatchOpened", self.request_unsampled)
        world.on("RequestOpened", self.reopened)
        world.on("IntervalWindowReopened", self.reopened)
        world.on("RoundDecided", lambda e: self.w.appeal_if_wrong(e, self.me, "watcher"))

    def batch_opened(self, e: Event) -> None:
        plan = self.w.plans[e.args.task]
        for k in self.w.opened(plan.id):
            if k // plan.per_batch == e.args.j and k in plan.faked:
                self.plan_commit(plan.id, k)

    def reopened(self, e: Event) -> None:
        """A window of k opened again after a no-decision, or for the first time on its request."""
        if e.args.k in self.w.plans[e.args.task].faked:
            self.plan_commit(e.args.task, e.args.k)

    def request_unsampled(self, e: Event) -> None:
        """Layer one: the watcher's statistics judge flags most faked intervals the sample missed (here, each
        with chance 0.8), and it asks for them, at most MAX_REQUESTS_PER_BATCH of a batch."""
        plan, rng = self.w.plans[e.args.task], self.w.request_rng
        sampled = set(self.w.sampled[(plan.id, e.args.j)])
        flagged = [
            k
            for k in sorted(plan.faked)
            if k // plan.per_batch == e.args.j and k not in sampled and k < plan.intervals and rng.random() < 0.8
        ]
        end = e.args.challengeWindowEnd
        for k in flagged[:MAX_REQUESTS_PER_BATCH]:
            moment = end - 1 if rng.random() < 0.15 else rng.randint(self.now, max(self.now, end - RESERVE))
            self.later(moment, "watcher request", lambda k=k: self.request(plan, k, end), 0)

    def request(self, plan: TaskPlan, k: int, end: int) -> None:
        if not self.w.active(plan.id):
            return
        if self.now >= end:
            self.w.late(plan, "watcher's request")
            return
        # The task may end in the same second (another dispute slashed it): a race.
        self.w.send(
            self.me,
            self.w.tasks,
            "requestOpening",
            plan.id,
            k,
            value=plan.challenger_bond,
            honest="watcher",
            races=("WrongTaskStatus",),
        )

    def plan_commit(self, task: int, k: int) -> None:
        end = self.w.window_of(task, k)[3]
        moment, priority = self.w.draw_moment(self.now, end)
        self.later(moment, "watcher commit", lambda: self.commit(task, k, end), priority)

    def commit(self, task: int, k: int, end: int) -> None:
        # A faked interval found sound (a wrong verdict that stood) is challenged all the same: the reveal then
        # reverts (IntervalFinal) and fails the episode, as the protocol owes this watcher a slash.
        if not self.w.active(task):
            return
        if not self.w.window_open(task, k, self.now):
            self.w.late(self.w.plans[task], "watcher's commit")
            return
        # The task may end between the decision and the send (another dispute slashed it): a race.
        info = self.w.commit(self.me, task, k, OUT_OF_BOUNDS, honest="watcher", races=("WrongTaskStatus",))
        if info is None:
            return
        moment, priority = self.w.draw_moment(self.now, info.reveal_by, now=0.4)
        self.later(moment, "watcher reveal", lambda: self.reveal(info), priority)

    def reveal(self, info: CommitInfo) -> None:
        if self.now >= info.reveal_by:
            self.w.late(self.w.plans[info.task], "watcher's reveal")
            return
        # Once the task has ended anyone may expire the commit (refunded) before the watcher reveals: a race.
        races = () if self.w.live(info.task, self.w.lead_seq(info)) else ("UnknownCommitment",)
        if self.w.send(
            info.challenger,
            self.w.tasks,
            "revealChallenge",
            info.task,
            info.k,
            info.reason,
            info.salt,
            "bafyreport",
            honest="watcher",
            races=races,
        ).ok:
            self.w.watcher_revealed.add((info.task, info.k))


class Auditors(Agent):
    """Honest auditors vote the ground truth and reveal (or, kept busy, abstain); sybils vote against it (or stay
    silent), appeal right decisions, and leave or register when rounds are armed."""

    def __init__(self, world: World, mix: Mix) -> None:
        super().__init__(world)
        self.mix = mix
        cast = world.cast
        # The watcher is an auditor too (attack 3 of issue 45): seated on a task it then challenges, it recuses.
        self.honest = {*cast.honest_auditors[: mix.active_honest], cast.watcher}
        self.sybils = set(cast.sybils)
        self.registered = set(cast.sybils[:MAX_SYBILS])  # as the base state has them
        self.leaving: set[str] = set()
        self.recused: set[tuple[int, int, str]] = set()
        world.on("PanelDrawn", self.panel_drawn)
        world.on("RoundDecided", self.round_decided)
        for name in ("DisputeOpened", "Appealed", "PanelRearmed", "RoundFailed"):
            world.on(name, self.armed)

    def panel_drawn(self, e: Event) -> None:
        d, run = e.args.dispute, e.args.run
        truth = self.w.truth(d)
        for panelist in e.args.panel:
            if panelist in self.honest:
                vote, reveal = self.w.ballot(d, e.args.round), True
                if self.w.rng.random() < self.mix.busy_abstain:
                    vote = ABSTAIN
                    self.w.stats["honest auditors abstained (kept busy past their commit deadline)"] += 1
            elif panelist in self.sybils:
                vote, reveal = VALID + FAULTY - truth, self.w.rng.random() >= self.mix.sybil_silence
            else:
                continue
            role = "auditor" if panelist in self.honest else ""
            salt = self.w.rng.randbytes(32)
            commit_at = self.w.rng.randint(self.now, max(self.now, e.args.commitEnd - RESERVE))
            reveal_at = self.w.rng.randint(e.args.commitEnd, e.args.revealEnd - RESERVE)
            commitment = vote_commitment(d, run, vote, salt, panelist)
            commit = (d, run, panelist, "commitVote", (commitment,), role, e.args.commitEnd)
            self.later(commit_at, "commit vote", lambda c=commit: self.vote(*c))
            if reveal:
                opening = (d, run, panelist, "revealVote", (vote, salt), role, e.args.revealEnd)
                self.later(reveal_at, "reveal vote", lambda o=opening: self.vote(*o))

    def vote(self, d: int, run: int, panelist: str, fn: str, args: tuple[Any, ...], role: str, end: int) -> None:
        dispute = self.w.dispute(d)
        if dispute.status != VOTING or dispute.run != run:
            return  # moot (resolved early), or a sybil's vote the dispute moved past
        if self.now >= end:
            if role:
                self.w.late(self.w.plans[dispute.task], f"auditor's {fn}")
            return
        if (d, run, panelist) in self.recused:
            return  # it committed no ballot: nothing to reveal
        if fn == "commitVote" and panelist == self.w.cast.watcher and self.interested(dispute.task, panelist):
            self.w.stats["a panelist recused: it took an interest in the task after its draw"] += 1
            self.recused.add((d, run, panelist))
            return  # it challenged the task since its draw: the shipped node commits nothing (InterestedPanelist)
        # One that committed and then took an interest reveals its ballot, which counts (review 12, F1).
        self.w.send(panelist, self.w.committee, fn, d, *args, honest=role)

    def interested(self, task: int, who: str) -> bool:
        return bool(self.w.view(self.w.tasks, "isInterested", task, who, self.w.snap.block + 1))

    def round_decided(self, e: Event) -> None:
        d = e.args.dispute
        if not e.args.appealUntil:
            return  # an unavailable round before the last: the next one is armed at once, nothing to appeal
        if e.args.outcome != self.w.truth(d) and not self.w.near_tie(d):
            self.w.appeal_if_wrong(e, self.w.rng.choice(sorted(self.honest)), "auditor")
        elif self.w.rng.random() < self.mix.sybil_appeal:
            moment = self.w.rng.randint(self.now, e.args.appealUntil - 1)
            sybil = self.w.rng.choice(sorted(self.sybils))
            self.later(moment, "sybil appeal", lambda: self.w.appeal(e, sybil, ""))

    def armed(self, e: Event) -> None:
        """Sybils leave and register around the moment a round is armed, trying to steer its draw."""
        if e.name == "RoundFailed" and self.w.snap.disputes[e.args.dispute].status != AWAITING_PANEL:
            return
        if self.w.rng.random() >= self.mix.sybil_churn:
            return
        staying = sorted(self.registered - self.leaving)
        if staying and self.w.rng.random() < 0.7:
            who = self.w.rng.choice(staying)
            self.w.schedule(self.now, "sybil leaves", lambda: self.leave(who), self.w.rng.choice([-1, 1]))
        fresh = sorted(self.sybils - self.registered)
        if fresh:
            who = self.w.rng.choice(fresh)
            self.w.schedule(self.now, "sybil registers", lambda: self.register(who), self.w.rng.choice([-1, 1]))

    def leave(self, who: str) -> None:
        if who in self.registered and who not in self.leaving and self.w.send(who, self.w.committee, "requestExit").ok:
            self.leaving.add(who)

    def register(self, who: str) -> None:
        # INVARIANT of the simulation: never more sybils registered and staying than the last round outvotes.
        room = who not in self.registered and len(self.registered - self.leaving) < MAX_SYBILS
        if room and self.w.send(who, self.w.committee, "register", value=AUDITOR_STAKE).ok:
            self.registered.add(who)


class Copier(Agent):
    """Mirrors every reveal it sees: commits after seeing it, then reveals the same k."""

    def __init__(self, world: World, me: str) -> None:
        super().__init__(world)
        self.me = me
        self.copied: set[tuple[int, int, int]] = set()
        world.on("ChallengeRevealed", self.revealed)

    def revealed(self, e: Event) -> None:
        key = (e.args.task, e.args.k, e.args.dispute)
        if e.args.challenger == self.me or e.args.dispute == 0 or key in self.copied:
            return
        self.copied.add(key)
        self.soon("copier commit", lambda: self.copy(e.args.task, e.args.k), spread=10, priority=-1)

    def copy(self, task: int, k: int) -> None:
        if not self.w.active(task):
            return
        info = self.w.commit(self.me, task, k, self.w.rng.choice([OUT_OF_BOUNDS, UNAVAILABLE]))
        if info is not None:
            self.soon("copier reveal", lambda: self.w.reveal(info), spread=20, priority=-1)


class Blind(Agent):
    """Commits on every sampled interval of the tasks it picked; reveals some of the commits."""

    def __init__(self, world: World, me: str, reveal_chance: float) -> None:
        super().__init__(world)
        self.me, self.reveal_chance = me, reveal_chance
        self.targets = {i for i in world.plans if world.rng.random() < 0.7}
        world.on("BatchOpened", self.batch_opened)

    def batch_opened(self, e: Event) -> None:
        task = e.args.task
        if task not in self.targets:
            return
        plan = self.w.plans[task]
        for k in self.w.opened(task):
            if k // plan.per_batch == e.args.j:
                moment = self.w.rng.randint(self.now, e.args.challengeWindowEnd - 1)
                self.later(moment, "blind commit", lambda k=k: self.commit(task, k))

    def commit(self, task: int, k: int) -> None:
        if not self.w.active(task):
            return
        info = self.w.commit(self.me, task, k, self.w.rng.choice([OUT_OF_BOUNDS, UNAVAILABLE]))
        if info is not None and self.w.rng.random() < self.reveal_chance:
            self.later(self.w.rng.randint(self.now, info.reveal_by - 1), "blind reveal", lambda: self.w.reveal(info))


class Flooder(Agent):
    """Runs an honest task of its own; commits junk challenges of it and reveals them the moment an honest
    watcher commits elsewhere, so disputes arm right before the real one; appeals their sound decisions."""

    def __init__(self, world: World, plan: TaskPlan, junk_appeal: float) -> None:
        super().__init__(world)
        self.plan, self.junk_appeal = plan, junk_appeal
        self.held: list[CommitInfo] = []
        world.on("BatchOpened", self.batch_opened)
        world.on("ChallengeCommitted", self.challenge_committed)
        world.on("RoundDecided", self.round_decided)

    def batch_opened(self, e: Event) -> None:
        if e.args.task == self.plan.id:
            self.soon("flooder pre-commits", self.pre_commit, spread=60)

    def pre_commit(self) -> None:
        for k in self.w.opened(self.plan.id):
            if self.w.active(self.plan.id) and self.w.window_open(self.plan.id, k, self.now):
                info = self.w.commit(self.plan.provider, self.plan.id, k, UNAVAILABLE)
                if info is not None:
                    self.held.append(info)

    def challenge_committed(self, e: Event) -> None:
        if e.args.challenger == self.w.cast.watcher and e.args.task != self.plan.id:
            self.w.schedule(self.now, "flood", self.flood, -1)

    def flood(self) -> None:
        if not self.held:
            self.pre_commit()
        while self.held:
            info = self.held.pop()
            if self.now < info.reveal_by and self.w.commit_status(info) == C_PENDING:
                self.w.reveal(info)

    def round_decided(self, e: Event) -> None:
        d = e.args.dispute
        mine = self.w.snap.records[d].task == self.plan.id
        if mine and e.args.appealUntil and e.args.outcome == VALID and self.w.rng.random() < self.junk_appeal:
            self.soon("junk appeal", lambda: self.w.appeal(e, self.plan.provider, ""), spread=60)


class Withholder(Agent):
    """The other side of a withholder's task (WITHHOLDING): its sock puppet challenges a sound interval of it
    as unavailable the moment its first batch opens, and the withholder appeals every decided round of its
    disputes, whatever the outcome; in the unloadable game, every registered sybil first commits a challenge of
    the task (never revealed), so that no sybil is ever drawn on its disputes."""

    def __init__(self, world: World, plan: TaskPlan, auditors: Auditors) -> None:
        super().__init__(world)
        self.plan, self.auditors = plan, auditors
        self.challenged = False
        world.on("BatchOpened", self.batch_opened)
        world.on("RoundDecided", self.round_decided)

    def batch_opened(self, e: Event) -> None:
        p = self.plan
        if e.args.task != p.id or self.challenged or not self.w.opened(p.id):
            return
        self.challenged = True
        k = self.w.withhold_rng.choice(self.w.opened(p.id))
        if p.withhold == "unloadable":
            for sybil in sorted(self.auditors.registered):
                self.w.schedule(self.now, "sybil takes an interest", lambda who=sybil: self.interest(who, k), -1)
        self.soon("withholder's sock challenges", lambda: self.challenge(k), spread=30)

    def interest(self, who: str, k: int) -> None:
        if self.w.active(self.plan.id):
            self.w.commit(who, self.plan.id, k, UNAVAILABLE)

    def challenge(self, k: int) -> None:
        if not self.w.active(self.plan.id):
            return
        info = self.w.commit(self.w.cast.withholder_sock, self.plan.id, k, UNAVAILABLE)
        if info is not None:
            self.soon("withholder's sock reveals", lambda: self.w.reveal(info), spread=30)

    def round_decided(self, e: Event) -> None:
        if self.w.snap.records[e.args.dispute].task != self.plan.id or not e.args.appealUntil:
            return
        self.w.stats[f"withholder ({self.plan.withhold}): a round decided {VERDICT_NAMES[e.args.outcome]}"] += 1
        moment = self.w.rng.randint(self.now, max(self.now, e.args.appealUntil - RESERVE))
        self.later(moment, "withholder appeals", lambda: self.w.appeal(e, self.plan.provider, ""), 0)


class Keeper(Agent):
    """Calls transitions. The honest keeper calls each one when it is due (a little after the edge); an
    adversarial keeper calls the edge's own transition one second early or on the second, in random order
    with the others due then."""

    EDGE_EVENTS = (
        "TaskAccepted",
        "BatchCommitted",
        "SeedDrawn",
        "BatchOpened",
        "ChallengeCommitted",
        "ChallengeRevealed",
        "DisputeOpened",
        "PanelDrawn",
        "RoundDecided",
        "RoundFailed",
        "Appealed",
        "DisputeResolved",
        "PanelRearmed",
        "DisputeSettled",
        "IntervalWindowReopened",
        "TaskSlashed",
        "ChallengeExpired",
        "TaskFinalized",
        "LeadShareWaiting",
        "OpeningRequested",
        "RequestOpened",
    )

    def __init__(self, world: World, me: str, honest: bool) -> None:
        super().__init__(world)
        self.me, self.honest = me, honest
        self.planned: set[int] = set()
        for name in self.EDGE_EVENTS:
            world.on(name, self.edges)
        for event in world.events:  # the tasks were posted and accepted before the agents came
            if event.name == "TaskAccepted":
                self.edges(event)

    def edges(self, e: Event) -> None:
        """Schedule calls at the edges this event creates: the honest keeper a pass a little after each
        edge; an adversarial keeper the edge's own transition one second early and on the second."""
        a, w = e.args, self.w
        calls: list[tuple[int, Abi, str, tuple[Any, ...]]] = []  # (edge, contract, function, arguments)
        if e.name == "TaskAccepted":
            calls.append((w.snap.tasks[a.task].terms.deadline, w.tasks, "abandon", (a.task,)))
        elif e.name == "BatchCommitted":
            calls.append((self.now, w.tasks, "drawSeed", (a.task, a.j)))  # before its seed block
        elif e.name == "SeedDrawn":
            calls.append((a.openingWindowEnd, w.tasks, "slashUnopened", (a.task, a.j)))
        elif e.name == "BatchOpened":
            calls.append((a.challengeWindowEnd, w.tasks, "finalize", (a.task,)))
        elif e.name == "IntervalWindowReopened":
            calls.append((a.windowEnd, w.tasks, "finalize", (a.task,)))
        elif e.name == "OpeningRequested":
            calls.append((a.openBy, w.tasks, "slashUnopenedRequest", (a.task, a.k)))
        elif e.name == "RequestOpened":
            calls.append((a.challengeWindowEnd, w.tasks, "finalize", (a.task,)))
        elif e.name == "ChallengeCommitted":
            calls.append((a.revealBy, w.tasks, "expireChallenge", (a.task, a.challenger, a.commitment)))
        elif e.name == "PanelDrawn":
            calls.append((a.revealEnd, w.committee, "resolve", (a.dispute,)))
        elif e.name == "RoundDecided" and a.appealUntil:
            calls.append((a.appealUntil, w.committee, "resolve", (a.dispute,)))
        elif e.name == "DisputeResolved":
            calls.append((self.now, w.committee, "settleSeats", (a.dispute,)))
        elif e.name in ("DisputeOpened", "Appealed", "PanelRearmed", "RoundFailed"):
            calls.append((self.now, w.committee, "drawPanel", (a.dispute,)))  # before its seed block
            calls.append((self.now + COMMITTEE["maxDrawDelay"], w.committee, "rearm", (a.dispute,)))
        elif e.name == "DisputeSettled":
            for (who, commitment), info in w.commits.items():
                if info.task == a.task and info.k == a.k:
                    calls.append((self.now, w.tasks, "claimBond", (a.task, who, commitment)))
        elif e.name == "TaskSlashed":
            calls.append((self.now, w.tasks, "withdraw", ()))
            for task, k in w.requests:
                if task == a.task:
                    calls.append((self.now, w.tasks, "settleRequest", (task, k)))
        elif e.name == "TaskFinalized":
            for task, k in w.requests:
                if task == a.task:
                    calls.append((self.now, w.tasks, "settleRequest", (task, k)))
        elif e.name == "LeadShareWaiting":
            calls.append((self.now, w.tasks, "releaseLeadShare", (a.task,)))
        if self.honest:
            for edge in {self.now, *(edge for edge, *_ in calls)}:
                self.plan_pass(edge + w.rng.randint(1, 20))
            return
        for edge, contract, fn, args in calls:
            if w.rng.random() < 0.4:  # one second early, or on the second (the first moment allowed)
                at = edge if edge == self.now else edge - w.rng.randint(0, 1)
                action = lambda c=contract, f=fn, x=args: w.send(self.me, c, f, *x)  # noqa: E731
                self.later(at, f"adversarial {fn}", action, w.rng.choice([-1, 0, 1, 2]))

    def plan_pass(self, moment: int) -> None:
        if moment not in self.planned:
            self.planned.add(moment)
            self.later(moment, "honest keeper", lambda: due(self.w, self.me), 2)


def due(w: World, me: str) -> int:
    """Send every transition anyone may call that is due now; returns how many succeeded."""
    s, done = w.snap, 0

    def call(contract: Abi, fn: str, *args: Any) -> bool:
        nonlocal done
        ok = w.send(me, contract, fn, *args).ok
        done += ok
        return ok

    def quiet(i: int) -> bool:
        t = w.snap.tasks[i]
        return t.pendingCommits == 0 and t.openDisputes == 0

    def may_end(i: int) -> bool:
        """Quiet, and no window a no-decision reopened is open: slashes and abandon wait for both."""
        return quiet(i) and w.next_time >= w.snap.tasks[i].reopenedUntil

    for i, t in s.tasks.items():
        if t.status == ACCEPTED and w.next_time >= t.terms.deadline and may_end(i):
            call(w.tasks, "abandon", i)
        for j in range(w.plans[i].batches):
            b = s.batches[(i, j)]
            if b.status == B_COMMITTED and w.active(i):
                w.ensure_block_after(b.seedTarget)
                call(w.tasks, "drawSeed", i, j)
            elif b.status == B_DRAWN and w.next_time >= b.windowEnd and w.active(i) and may_end(i):
                call(w.tasks, "slashUnopened", i, j)
        for fn, args in Interface.ended_task_calls(i, t):
            call(w.tasks, fn, *args)
    for (i, k), r in w.requests.items():
        t = w.snap.tasks[i]
        if not r.settled and t.status in Interface.TERMINAL:
            call(w.tasks, "settleRequest", i, k)
        elif not r.settled and not r.window_end and w.next_time >= r.open_by and w.active(i) and may_end(i):
            call(w.tasks, "slashUnopenedRequest", i, k)
    for (who, commitment), info in w.commits.items():
        c = w.snap.commits.get((who, commitment))
        if c is None:
            continue
        moot = not w.live(info.task, w.moot_seq(info.task, who, c.seq))
        if c.status == C_PENDING and (w.next_time >= info.reveal_by or moot):
            call(w.tasks, "expireChallenge", info.task, who, commitment)
        elif c.status == C_JOINED and w.snap.records[c.dispute].verdict not in (0, VALID):
            call(w.tasks, "claimBond", info.task, who, commitment)
    for d in sorted(w.snap.disputes):
        x = w.snap.disputes[d]
        rec = w.snap.records[d]
        moot = not w.live(x.task, w.snap.intervals[(x.task, rec.k)].leadSeq)
        if x.status == AWAITING_PANEL and not moot:
            w.ensure_block_after(x.armBlock + SEED_DELAY)  # the panel's target (BlockhashRandomness)
            for _ in range(8):  # a round of 15 takes up to four calls of 64 tries
                if not call(w.committee, "drawPanel", d) or w.snap.disputes[d].status != AWAITING_PANEL:
                    break
            if w.snap.disputes[d].status == AWAITING_PANEL:
                call(w.committee, "rearm", d)
        elif x.status in (AWAITING_PANEL, VOTING, APPEALABLE) and moot:
            call(w.committee, "resolve", d)  # moot: resolves at once
        elif (x.status == VOTING and w.next_time >= x.drawnAt + VOTING_SECONDS) or (
            x.status == APPEALABLE and w.next_time >= x.decidedAt + COMMITTEE["appealWindow"]
        ):
            call(w.committee, "resolve", d)
        x = w.snap.disputes[d]
        while x.status == RESOLVED and not x.seatsSettled:  # a page of seats a call
            if not call(w.committee, "settleSeats", d):
                break
            x = w.snap.disputes[d]
    for i, t in w.snap.tasks.items():
        b_opened = t.openedBatches == t.batchCount
        quiet_end = w.next_time >= t.challengeEnd and quiet(i) and not t.unopenedRequests
        if t.status == COMMITTED_TASK and b_opened and quiet_end:
            call(w.tasks, "finalize", i)
    return done


# --- an episode ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Base:
    """The state every episode starts from (an evm snapshot of it), and what checks compare against."""

    rpc: Rpc
    tasks: Abi
    committee: Abi
    accounts: list[str]
    start: int  # timestamp of the base's last block
    eth_total: int  # ETH of every account and both contracts


class Episode:
    """One seeded episode: plans, agents, the run, the settlement with timeouts only, the checks."""

    def __init__(self, base: Base, seed: int) -> None:
        self.base = base
        self.cast = Cast.of(base.accounts)
        self.w = World(base.rpc, base.tasks, base.committee, self.cast, seed, base.start + 1)
        rng = self.w.rng
        self.mix = draw_mix(rng, self.cast)
        self.plans: list[TaskPlan] = []
        self.withdrawn = False
        for n in range(rng.randint(2, 3)):
            kind = "cheater" if rng.random() < 0.6 else "honest"
            self.plans.append(draw_task(rng, f"{seed}/{n}", kind, self.cast.owners[n], self.cast.providers[n]))
        if self.mix.flooder:
            flooder = self.cast.flooder
            self.plans.append(draw_task(rng, f"{seed}/flood", "flooder", flooder, flooder))
        for plan in self.plans:
            rest = sorted(set(range(plan.intervals)) - plan.faked)
            if plan.kind == "cheater" and rest and self.w.near_tie_rng.random() < NEAR_TIE_CHANCE:
                plan.near_tie = frozenset({self.w.near_tie_rng.choice(rest)})
        if self.w.withhold_rng.random() < WITHHOLDER_CHANCE:
            withholder = self.cast.withholder
            plan = draw_task(self.w.withhold_rng, f"{seed}/withheld", "withholder", withholder, withholder)
            plan.withhold = self.w.withhold_rng.choice(WITHHOLDING)
            self.plans.append(plan)

    def run(self) -> World:
        w, cast, mix = self.w, self.cast, self.mix
        w.rpc("anvil_setBlockTimestampInterval", 0)  # the clock moves only when the schedule moves it
        w.rpc("evm_setNextBlockTimestamp", hex(w.next_time))  # the base's clock, whatever the last episode did
        w.on("PanelDrawn", w.check_panel)
        for who in cast.honest_auditors[mix.active_honest :]:
            w.send(who, w.committee, "requestExit", honest="auditor leaving")
        for plan in self.plans:
            self.post(plan)
        socks = [
            self.w.rng.choice(cast.sock_puppets) if mix.sock_puppet and p.kind == "cheater" else None
            for p in self.plans
        ]
        providers = [Provider(w, p, sock) for p, sock in zip(self.plans, socks, strict=True)]
        if mix.watcher:
            Watcher(w)
        auditors = Auditors(w, mix)
        for who in mix.copiers:
            Copier(w, who)
        for who, chance in mix.blind.items():
            Blind(w, who, chance)
        for plan in self.plans:
            if plan.kind == "flooder":
                Flooder(w, plan, mix.junk_appeal)
            if plan.kind == "withholder":
                Withholder(w, plan, auditors)
        Keeper(w, cast.honest_keeper, honest=True)
        for who in mix.keepers:
            Keeper(w, who, honest=False)
        for p in providers:
            p.start()
        start = w.next_time
        w.stats["episodes cut off"] += mix.cutoff
        horizon = start + (w.rng.randint(1800, 6 * 3600) if mix.cutoff else HORIZON)
        finished = w.run(self.over, horizon)
        if not finished and not mix.cutoff:
            why = "at the horizon" if w.queue else "nothing scheduled"
            w.fail(f"liveness: tasks, commits or disputes left open ({why})")
        w.stopped = True
        w.queue.clear()
        self.settle()
        self.check()
        return w

    def post(self, plan: TaskPlan) -> None:
        w = self.w
        deadline = w.next_time + plan.deadline_after
        plan.id = len(w.plans) + 1  # every task on this chain is the episode's own
        plan.evidence = Evidence(plan.id, plan.total_steps, plan.stride, plan.per_batch, plan.init_digest)
        w.plans[plan.id] = plan
        w.send(
            plan.owner,
            w.tasks,
            "postTask",
            *Interface.post_args(plan, deadline),
            value=Interface.post_value(plan),
            honest="owner",
        )
        assert [e.args.task for e in w.events if e.name == "TaskPosted"][-1] == plan.id
        w.send(plan.provider, w.tasks, "acceptTask", plan.id, value=plan.provider_bond, honest="provider")

    def over(self) -> bool:
        """Whether the episode is over, looked at only after something ended since the last look."""
        if not self.w.maybe_over:
            return False
        self.w.maybe_over = False
        return self.finished()

    def finished(self) -> bool:
        """Every task ended (no lead's share waiting), no commit pending, no dispute open."""
        s = self.w.snap
        return (
            all(t.status in Interface.TERMINAL and not t.waitingLeadSeq for t in s.tasks.values())
            and all(c.status != C_PENDING for c in s.commits.values())
            and all(x.status == RESOLVED and x.seatsSettled for x in s.disputes.values())
            and all(r.settled for r in self.w.requests.values())
        )

    # --- the way out: calls anyone may make --------------------------------------------------------------

    def settle(self) -> None:
        w, cast = self.w, self.cast
        self.withdrawn = w.seed % REAL_EXITS_EVERY == 0
        for who in cast.sybils if self.withdrawn else ():  # sybils leave too: their (maybe penalised) stakes
            a = w.view(w.committee, "getAuditor", who)
            if a.registeredBlock and not a.exitRequestedAt:
                w.send(who, w.committee, "requestExit")
        for _ in range(SETTLE_PASSES):
            if not self.anything_live():
                break
            due(w, cast.honest_keeper)
            w.mine(SEED_DELAY + 1)
            w.warp(DAY)
        else:
            w.fail("no ETH stuck: timeouts did not end every task, commit, dispute and exit")
        # Everyone takes its money out: leaving auditors exit, every credit is withdrawn. Transactions in one
        # episode out of REAL_EXITS_EVERY; in the others each call is made with eth_call on the final state (it
        # would succeed; the contracts' balances are then checked against the credits left).
        leaving = Reads()
        for who in cast.auditors:
            leaving.view("a", who, w.committee, "getAuditor", who)
        calls = [
            (w.committee, who, "exit")
            for who, a in leaving.run(w.rpc)["a"].items()
            if a.registeredBlock and a.exitRequestedAt
        ]
        if self.withdrawn:
            for contract, who, fn in calls:
                w.send(who, contract, fn, honest="leaving")
            for (contract, who), amount in sorted(w.credits.items()):  # exits credited stakes too
                if amount:
                    w.send(who, w.tasks if contract == "tasks" else w.committee, "withdraw", honest="withdrawal")
            self.w.stats["episodes that withdrew and exited by transactions"] += 1
        else:
            calls += [
                (w.tasks if contract == "tasks" else w.committee, who, "withdraw")
                for (contract, who), amount in sorted(w.credits.items())
                if amount
            ]
            requests = [
                ("eth_call", [{"from": who, "to": c.address, "data": c.data(fn), "gasPrice": "0x0"}, "latest"])
                for c, who, fn in calls
            ]
            for (_, who, fn), answer in zip(calls, w.rpc.answers(requests), strict=True):
                if "error" in answer:
                    w.fail(f"no ETH stuck: {who}'s {fn} would revert: {answer['error']}")

    def anything_live(self) -> bool:
        w = self.w
        s = w.snap
        claimable = any(
            c.status == C_JOINED and s.records[c.dispute].verdict not in (0, VALID) for c in s.commits.values()
        )
        auditors = Reads()
        for who in self.cast.auditors:
            auditors.view("a", who, w.committee, "getAuditor", who)
        leaving = [a for a in auditors.run(w.rpc)["a"].values() if a.exitRequestedAt and a.registeredBlock]
        cooled = all(a.exitRequestedAt + COMMITTEE["cooldown"] <= w.next_time for a in leaving)
        return not self.finished() or claimable or not cooled

    # --- the checks ---------------------------------------------------------------------------------------

    def check(self) -> None:
        w, base = self.w, self.base
        s = w.snap
        self.check_end_state(s)
        if not self.mix.cutoff:
            for plan in self.plans:
                if plan.late:
                    continue
                if plan.kind == "cheater":
                    self.check_soundness(plan, s)
                    self.count_moot_refunds(plan)
                    self.count_near_ties(plan)
                elif plan.kind == "withholder":
                    self.count_withholding(plan, s)
                else:
                    self.check_completeness(plan, s)
        self.check_no_decisions()
        self.check_honest_stakes()
        w.stats["tasks whose owner declared a false replaySeconds (1 s)"] += sum(
            p.replay_seconds == 1 for p in self.plans
        )
        drawn = sum(e.name == "PanelDrawn" for e in w.events)
        if w.panels_checked != drawn:
            w.fail(f"fixity: {drawn} panels drawn, {w.panels_checked} checked")
        eth = Reads()
        for a in [*base.accounts, base.tasks.address, base.committee.address]:
            eth.add("eth", a, ("eth_getBalance", [a, "latest"]), lambda raw: int(raw, 16))
        total = sum(eth.run(w.rpc)["eth"].values())
        if total != base.eth_total:
            w.fail(f"ETH not conserved: {total} != {base.eth_total}")

    def check_honest_stakes(self) -> None:
        """Issue 45's promises. An honest auditor (it reveals, on every seat, what the shipped node finds: the
        truth if it obtained the files, else unavailable) loses stake only where a captured round's verdict
        stood: that round's panel had a sybil majority (counted, never failed); so nobody lowers the honest
        committee's eligible stake but by capturing a round that then stands. Disputes ended with no decision are
        check_no_decisions's. Exempt (and counted): silence of agents the episode stopped, or made late."""
        w = self.w
        honest = {*w.cast.honest_auditors[: self.mix.active_honest], w.cast.watcher}
        resolved = {e.args.dispute: e for e in self.events("DisputeResolved")}
        exempt: set[str] = set()
        for e in self.events("Penalized"):
            who, d = e.args.panelist, e.args.dispute
            end = resolved.get(d)
            if who not in honest or end is None:
                continue
            if end.args.verdict == NO_DECISION:  # check_no_decisions judges these (silence of stopped agents)
                exempt.add(who)
                continue
            late = any(what.startswith("auditor's") for what in w.plans[end.args.task].late)
            if self.mix.cutoff or late:
                w.stats["honest auditors penalized: the agents stopped, or an action was late"] += 1
                exempt.add(who)
                continue
            standing = [x for x in self.events("PanelDrawn", dispute=d) if x.args.round == end.args.round][-1]
            if 2 * sum(p in w.cast.sybils for p in standing.args.panel) > len(standing.args.panel):
                w.stats["honest auditors penalized: a captured round stood"] += 1
                exempt.add(who)
                continue
            w.fail(
                f"honest stakes: {w.name_of(who)} was penalized in dispute {d}, which ended "
                f"{VERDICT_NAMES[end.args.verdict]} "
                f"in round {end.args.round}, a round without a sybil majority"
            )
        if self.mix.cutoff:  # the agents stopped mid-run: their silence was penalized, as it must be
            return
        stakes = Reads()
        for who in sorted(honest - exempt):
            stakes.view("a", who, w.committee, "getAuditor", who)
        for who, a in stakes.run(w.rpc)["a"].items():
            if a.stake < ELIGIBLE_STAKE:
                w.fail(f"honest stakes: {w.name_of(who)} holds {a.stake}, below eligibility, and nobody captured it")

    def count_near_ties(self, plan: TaskPlan) -> None:
        """What the disputes of a near-tie claim came to (the honest stakes check covers their panels)."""
        for e in self.events("DisputeResolved", task=plan.id):
            if self.w.near_tie(e.args.dispute):
                self.w.stats[f"near tie: a dispute ended {VERDICT_NAMES[e.args.verdict]}"] += 1

    def count_withholding(self, plan: TaskPlan, s: Snap) -> None:
        """What a withholder's game came to (WITHHOLDING): the verdicts of its disputes, its task's end."""
        self.w.stats[f"withholder ({plan.withhold}): games played to the end"] += 1
        for e in self.events("DisputeResolved", task=plan.id):
            self.w.stats[f"withholder ({plan.withhold}): a dispute ended {VERDICT_NAMES[e.args.verdict]}"] += 1
        self.w.stats[f"withholder ({plan.withhold}): its task ended {STATUS_NAMES[s.tasks[plan.id].status]}"] += 1

    def check_no_decisions(self) -> None:
        """Protocol 4.3 for disputes that end with no decision (v3, review 6): no honest auditor (it reveals the
        truth in every run it sits) is penalized in one; one charges the joined bonds only for a run that
        decided SOUND (an undecided run proves nothing: a sybil minority can make one by keeping honest
        auditors busy), so a dispute none of whose rounds decided SOUND refunds every joined bond whole; and
        no task ends but Finalized, Slashed, Abandoned or Cancelled (no stall)."""
        w = self.w
        resolved = {e.args.dispute: e for e in self.events("DisputeResolved")}
        honest = set(w.cast.honest_auditors)
        for e in self.events("Penalized"):
            end, who, d = resolved.get(e.args.dispute), e.args.panelist, e.args.dispute
            if end is None or end.args.verdict != NO_DECISION or who not in honest:
                continue
            # A round may hold several runs (a silent undecided run is drawn again) and VoteRevealed names no
            # run: a reveal belongs to the run whose draw it follows, before the dispute's next draw.
            story = [x for x in w.events if x.name in ("PanelDrawn", "VoteRevealed") and x.args.dispute == d]
            runs = [i for i, x in enumerate(story) if x.name == "PanelDrawn" and who in x.args.panel]
            ends = [
                next((j for j in range(i + 1, len(story)) if story[j].name == "PanelDrawn"), len(story)) for i in runs
            ]
            if all(
                any(x.name == "VoteRevealed" and x.args.panelist == who for x in story[i + 1 : end])
                for i, end in zip(runs, ends, strict=True)
            ):  # it revealed in every run it sat (agents ran)
                w.fail(
                    f"no decisions: honest {w.name_of(who)} revealed in every run of dispute {d} it sat and "
                    "was penalized; the dispute ended with no decision"
                )
            else:
                w.stats["no decisions: silent honest auditors penalized (agents stopped)"] += 1
        decided_sound = {e.args.dispute for e in self.events("RoundDecided") if e.args.outcome == VALID}
        refunds = Reads()
        for d, end in resolved.items():
            if end.args.verdict == NO_DECISION and d not in decided_sound:
                refunds.view("d", d, w.tasks, "getDispute", d)
        for d, x in refunds.run(w.rpc).get("d", {}).items():
            w.stats["no decisions: disputes with no round decided SOUND"] += 1
            bond = w.plans[resolved[d].args.task].challenger_bond
            if x.refundPerBond != bond:
                w.fail(f"no decisions: dispute {d} decided nothing and refunded {x.refundPerBond} of a bond of {bond}")

    def check_end_state(self, s: Snap) -> None:
        """No ETH stuck: everything ended, every credit withdrawn, each contract holds its burned (plus the
        stakes of auditors that stay registered)."""
        w = self.w
        if any(t.status in Interface.LIVE for t in s.tasks.values()):
            w.fail("no ETH stuck: a task is still live after the timeouts")
        if any(c.status == C_PENDING for c in s.commits.values()):
            w.fail("no ETH stuck: a challenge commit is still pending")
        if any(x.status != RESOLVED or not x.seatsSettled for x in s.disputes.values()):
            w.fail("no ETH stuck: a dispute is still open, or its seats unsettled")
        if s.scalars["heldAppealBonds"]:
            w.fail("no ETH stuck: appeal bonds still held")
        if any(not r.settled for r in w.requests.values()):
            w.fail("no ETH stuck: a request's bond is still held")
        # What is left once everyone has withdrawn (or would have: the credits still owed come out too).
        owed = {c: sum(v for (contract, _), v in w.credits.items() if contract == c) for c in ("tasks", "committee")}
        if s.scalars["task_eth"] - owed["tasks"] != s.scalars["task_burned"]:
            w.fail(
                f"no ETH stuck: TrainingTasks keeps {s.scalars['task_eth'] - owed['tasks']}, burned {s.scalars['task_burned']}"  # noqa: E501
            )
        if s.scalars["committee_eth"] - owed["committee"] != s.scalars["committee_burned"] + s.scalars["totalStake"]:
            w.fail("no ETH stuck: AuditCommittee keeps more than stakes + burned")
        chain_credits = Reads()
        for who in self.base.accounts:
            chain_credits.view("tasks", who, w.tasks, "credits", who)
            chain_credits.view("committee", who, w.committee, "credits", who)
        for contract, credits in chain_credits.run(w.rpc).items():
            for who, amount in credits.items():
                if amount != w.credits.get((contract, who), 0):
                    w.fail(
                        f"ledger: {who}'s credit in {contract} is {amount}, its events say {w.credits[(contract, who)]}"
                    )
                if amount and self.withdrawn:
                    w.fail(f"no ETH stuck: {who} still has {amount} to withdraw from {contract}")
        auditors = Reads()
        for who in self.cast.auditors:
            auditors.view("a", who, w.committee, "getAuditor", who)
        for who, a in auditors.run(w.rpc)["a"].items():
            if a.openSeats:
                w.fail(f"no ETH stuck: auditor {who} still sits on {a.openSeats} open seats")
            if a.exitRequestedAt and a.registeredBlock and self.withdrawn:
                w.fail(f"no ETH stuck: auditor {who} asked to exit and could not")

    def events(self, name: str, before: int | None = None, **match: Any) -> list[Event]:
        """The book's ``name`` events whose arguments match (among its first ``before`` events, if given)."""
        book = self.w.events if before is None else self.w.events[:before]
        return [e for e in book if e.name == name and all(getattr(e.args, k) == v for k, v in match.items())]

    def credited(self, contract: Abi, who: str, source: int) -> int:
        return sum(
            e.args.amount for e in self.events("Credited", account=who, source=source) if e.address == contract.address
        )

    def check_soundness(self, plan: TaskPlan, s: Snap) -> None:
        """A faked interval that the honest watcher challenged in time ends its task Slashed, and the watcher
        leads the slashing dispute when its commit of that interval is the earliest one revealed into it."""
        w = self.w
        challenged = {k for (task, k) in w.watcher_revealed if task == plan.id}
        opened = plan.faked & set(w.opened(plan.id))
        status = s.tasks[plan.id].status
        if opened and self.mix.watcher and status == FINALIZED:
            # The watcher had every faked interval's whole window: a finalized task means it was kept out.
            w.fail(f"soundness: task {plan.id} with faked, opened {sorted(opened)} finalized despite the watcher")
            return
        if not challenged:  # the premise is unmet; say why
            why = (
                "no faked interval opened"
                if not opened
                else "no watcher"
                if not self.mix.watcher
                else (f"the task ended ({status}) before the watcher revealed")
            )
            w.stats[f"soundness premise unmet: {why}"] += 1
            return
        if status != SLASHED:
            w.fail(
                f"soundness: task {plan.id} (faked {sorted(plan.faked)}, the watcher revealed {sorted(challenged)}) "
                f"ended {status}, not Slashed"
            )
            return
        slash = self.events("TaskSlashed", task=plan.id)[0]
        if slash.args.dispute == 0:
            w.stats["soundness: slashed by an unopened batch"] += 1
            return
        k = s.records[slash.args.dispute].k
        first = self.earliest_reveal(plan.id, k)
        if first is None or slash.args.by != first.args.challenger:
            w.fail(f"lead: task {plan.id} k={k}: {slash.args.by} led, the earliest revealed commit of k is another's")
        self.check_lead_paid(plan)

    def earliest_reveal(self, task: int, k: int, before: int | None = None) -> Event | None:
        """The reveal into a dispute of k whose commit has the smallest sequence number (among the first
        ``before`` events of the book, if given)."""
        joined = [e for e in self.events("ChallengeRevealed", task=task, k=k, before=before) if e.args.dispute != 0]
        return min(joined, key=self.seq) if joined else None

    def seq(self, revealed: Event) -> int:
        """The place a reveal led from: its commit's, or its challenger's request of k (TrainingTasks._leadSeqOf)."""
        return self.w.lead_seq(self.w.commits[(revealed.args.challenger, revealed.args.commitment)])

    def check_lead_paid(self, plan: TaskPlan) -> None:
        """Protocol 4.3 (soundness, as amended): the lead's share goes to the earliest commit revealed into a
        dispute of the task found faulty (or judged after the slash and left undecided), whichever of those
        disputes slashed it; so the honest watcher is paid unless a commit with a smaller sequence number was
        revealed into such a dispute."""
        w = self.w
        leads: list[tuple[int, str]] = []  # (sequence number, challenger) of each claimant's lead
        slashed_at = next(i for i, e in enumerate(w.events) if e.name == "TaskSlashed" and e.args.task == plan.id)
        for i, e in enumerate(w.events):
            if e.name != "DisputeSettled" or e.args.task != plan.id:
                continue
            # Found faulty, or judged after the slash and left undecided (no window can reopen then).
            if e.args.verdict == FAULTY or (e.args.verdict == NO_DECISION and i > slashed_at):
                first = self.earliest_reveal(plan.id, e.args.k, before=i)
                assert first is not None, "a dispute settles only with a joined reveal"
                leads.append((self.seq(first), str(first.args.challenger)))
        share = plan.provider_bond * FAULTY_LEAD_BPS // BPS
        owed = min(leads)[1]
        paid_to = [str(e.args.lead) for e in self.events("LeadShareReleased", task=plan.id)]
        if not self.events("LeadShareWaiting", task=plan.id):
            paid_to = [str(self.events("TaskSlashed", task=plan.id)[0].args.by)]
        if paid_to != [owed] or share not in [
            e.args.amount for e in self.events("Credited", account=owed, source=plan.id)
        ]:
            w.fail(f"lead: task {plan.id}'s lead share went to {paid_to}, the earliest lead found faulty is {owed}")
        watcher = [seq for seq, who in leads if who == w.cast.watcher]
        if watcher and min(watcher) == min(leads)[0]:
            w.stats["soundness: the watcher was paid the lead's share"] += 1
        elif earlier := [
            e
            for e in self.events("ChallengeRevealed", task=plan.id)
            if e.args.challenger == w.cast.watcher and e.args.dispute != 0 and self.seq(e) < min(leads)[0]
        ]:
            # Its dispute was not found faulty: a wrong verdict that stood, or no decision, before the slash. It
            # must never have been mooted by a later lead's slash (the decoy).
            verdicts = {x.args.dispute: x.args.verdict for x in self.events("DisputeSettled", task=plan.id)}
            ends = sorted({verdicts.get(e.args.dispute) for e in earlier}, key=str)
            if MOOT in ends:
                w.fail(f"soundness: task {plan.id}: the watcher's earlier dispute was mooted by a later lead's slash")
            w.stats[f"soundness: the watcher's earlier dispute ended {ends}"] += 1
        else:
            who = w.name_of(owed)
            w.stats[f"soundness: an earlier commit on a fault led ({who})"] += 1
        if len(leads) > 1:
            w.stats["soundness: a lead's share waited for an earlier dispute found faulty"] += 1

    def count_moot_refunds(self, plan: TaskPlan) -> None:
        """Challenges of a cheater's sound intervals come back when another interval slashes the task (their
        disputes turn moot): outside completeness's premise (not every interval of the task is sound)."""
        commits = {
            (e.args.challenger, e.args.commitment): e.args.k for e in self.events("ChallengeRevealed", task=plan.id)
        }
        for e in self.events("BondClaimed", task=plan.id):
            if commits.get((e.args.challenger, e.args.commitment)) not in plan.faked:
                self.w.stats["refunded challenges of a sound interval of a slashed task (moot)"] += 1

    def check_completeness(self, plan: TaskPlan, s: Snap) -> None:
        """The provider of an all-sound task is paid reward + bond + its share of every sound-settled bond (none of
        one revealed as unavailable), to the wei, and every challenge of a sound interval cost its challenger at
        least the panel's share of its bond, except one whose dispute ended with no decision (protocol 4.3's
        concession: the charges of
        runs that decided SOUND are shared among the joined bonds, and none is due when no run decided SOUND,
        which check_no_decisions checks)."""
        w = self.w
        status = s.tasks[plan.id].status
        if status != FINALIZED:
            w.fail(f"completeness: all-sound task {plan.id} ({plan.kind}) ended {status}, not Finalized")
            return
        cb = plan.challenger_bond
        shares = 0
        for e in self.events("DisputeSettled", task=plan.id):
            if e.args.verdict == VALID:  # no share of a bond revealed as unavailable: bait pays nothing
                record = s.records[e.args.dispute]
                shares += Interface.sound_provider_share(plan, record.joined - record.joinedUnavailable)
        settled_late = [
            e
            for e in self.events("ChallengeRevealed", task=plan.id)
            if e.args.dispute == 0 and e.args.reason != UNAVAILABLE
        ]
        shares += len(settled_late) * Interface.sound_provider_share(plan, 1)
        # Every challenge of this all-sound task must have cost its challenger at least the panel's share of its
        # bond: what came back to it (a claimed bond, an expired commit refunded) is read from the Credited event
        # the same transaction emitted right after, so a partial refund (per-round charges) is judged by amount.
        least = cb * SOUND_PANEL_BPS // BPS
        events = w.events
        no_decisions = {
            e.args.dispute for e in self.events("DisputeSettled", task=plan.id) if e.args.verdict == NO_DECISION
        }
        refunded_to_provider = 0  # the flooder challenges its own task: what comes back to it is credited by it
        for n, e in enumerate(events):
            refund = e.name == "BondClaimed" or (e.name == "ChallengeExpired" and e.args.refunded)
            if not refund or e.args.task != plan.id:
                continue
            credit = next(x for x in events[n + 1 :] if x.name == "Credited" and x.args.account == e.args.challenger)
            if e.args.challenger == plan.provider:
                refunded_to_provider += credit.args.amount
            if e.name == "BondClaimed" and e.args.dispute in no_decisions:
                w.stats["completeness: a challenge of a sound interval refunded after a no-decision"] += 1
                continue
            if cb - credit.args.amount < least:
                verdicts = sorted({x.args.verdict for x in self.events("DisputeSettled", task=plan.id)})
                w.fail(
                    f"completeness: {e.args.challenger}'s challenge of all-sound task {plan.id} cost it "
                    f"{cb - credit.args.amount} < {least} ({e.name}; the task's disputes settled {verdicts})"
                )
        expected = Interface.provider_payout(plan) + shares + refunded_to_provider
        got = self.credited(w.tasks, plan.provider, plan.id)
        if got != expected:
            w.fail(f"completeness: provider of task {plan.id} credited {got}, expected {expected}")
        # Finalize credits the owner nothing (the flooder owns its task: as its provider, it was checked above).
        if plan.owner != plan.provider and (owner_got := self.credited(w.tasks, plan.owner, plan.id)) != 0:
            w.fail(f"completeness: owner of task {plan.id} credited {owner_got}, expected nothing")
        w.stats["completeness: finalized"] += 1


def timeline(world: World) -> str:
    """The episode's events, one a line, with the time they happened (for reading a failing seed)."""
    lines = []
    name = world.name_of
    for e in world.events:
        if e.name in ("Credited", "Burned", "Withdrawn", "VoteCommitted", "StakeAdded"):
            continue
        args = {k: name(v) if isinstance(v, str) else v for k, v in vars(e.args).items() if k != "terms"}
        if "panel" in args:
            args["panel"] = [name(p) for p in e.args.panel]
        lines.append(f"block {e.block} {e.name} {args}")
    return "\n".join(lines)


def run_episode(base: Base, seed: int) -> World:
    """Run one episode from the base state (the caller reverts to it afterwards); its failures are in
    ``world.failures``."""
    return Episode(base, seed).run()
