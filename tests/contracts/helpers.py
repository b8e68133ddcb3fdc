"""Independent re-implementations of the protocol's hashing for contract tests (protocol 2.4, 3).

Deliberately separate from ``ovig_node.protocol``: the tests check the contracts against the spec,
not against another implementation that could share a mistake.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pytest
from eth_abi import encode
from eth_utils import keccak

from ovig_node.chain.deploy import create_address

ZERO = b"\x00" * 32

# The randomness backend of these tests: BlockhashRandomness (fast: a target is a block), DELAY blocks after
# the action (tests/contracts/test_drand_draws.py runs the draws on DrandBeacon).
SEED_DELAY = 2  # blocks between a batch commit (or a round's arm) and its seed block
# Constructor parameters of TrainingTasks in these tests.
KEEPER_BPS = 1000  # 10% of the provider bond to whoever slashes an unopened batch
# Payout shares (protocol 4.2, the recommended split): faulty: lead challenger, panel, owner of the
# provider bond; sound: provider, panel, burned of every joined challenger bond.
SHARES = (2000, 1000, 7000, 5000, 1000, 4000)
MIN_BONDS = (10**17, 10**16)  # provider, challenger: the smallest bonds a task may carry
MAX_REQUESTS_PER_BATCH = 2  # targeted openings each requester may ask of a batch

# Constructor parameters of AuditCommittee (CommitteeParams, in field order).
COMMITTEE: dict[str, int] = {
    "penalty": 10**17,
    "overlap": 4,  # L: the stake to register and be eligible is L x penalty
    "warmupBlocks": 5,
    "cooldown": 7 * 24 * 3600,
    "commitWindow": 3600,
    "revealWindow": 1800,
    "appealWindow": 300,  # shorter than the challenge reveal window: a commit made during the vote still reveals
    "maxDrawDelay": 3600,
    "starvationTimeout": 3 * 24 * 3600,
    "maxReplaySeconds": 900,
    "panelSize": 3,
    "maxRounds": 3,
    "panelBps": 1000,  # of a losing appeal's bond, to the deciding round's majority
    "replayPrice": 10**12,  # wei per second of declared replay: round 0's 3 replays of 900 s cost 0.0027 ETH
}
# What registering takes, (L + 2) x penalty, and what eligibility needs, L x penalty (protocol 4.2, v3).
AUDITOR_STAKE = (COMMITTEE["overlap"] + 2) * COMMITTEE["penalty"]
ELIGIBLE_STAKE = COMMITTEE["overlap"] * COMMITTEE["penalty"]
TRIES_PER_SEAT, TRIES_PER_CALL = 16, 64

# Verdict, Vote, Reason, DisputeStatus and CommitStatus values (contracts/Types.sol). A ballot of 1 (sound) or 2
# (faulty) has the value of the verdict it backs.
V_NONE, VALID, FAULTY, NO_DECISION, MOOT, V_UNAVAILABLE = range(6)
SOUND, BALLOT_UNAVAILABLE, ABSTAIN = VALID, 3, 4
OUT_OF_BOUNDS, UNAVAILABLE = 1, 2
D_NONE, AWAITING_PANEL, VOTING, RESOLVED, APPEALABLE = range(5)
C_NONE, C_PENDING, C_JOINED, C_SETTLED, C_EXPIRED = range(5)

# TaskStatus and BatchStatus values (contracts/Types.sol).
NONE, POSTED, ACCEPTED, COMMITTED, FINALIZED, CANCELLED, ABANDONED, SLASHED = range(8)
B_NONE, B_COMMITTED, B_DRAWN, B_OPENED = range(4)

# Default task terms (protocol 4.1): 10 intervals of 100 steps (the last one 50), 4 per batch.
DEFAULTS: dict[str, Any] = {
    "specHash": b"\x5a" * 32,
    "specCID": "bafyspec",
    "initDigest": b"\x11" * 32,
    "totalSteps": 950,
    "stride": 100,
    "intervalsPerBatch": 4,
    "sampleBps": 5000,
    "providerBond": 3 * 10**18,
    "challengerBond": 10**17,
    "replaySeconds": 600,
    "windows": (3600, 7200, 600),  # openingWindow, challengeWindow, challengeRevealWindow
    "reward": 2 * 10**18,
}


# The deploy's split of a faulty verdict, of the default provider bond: lead, panel, owner.
LEAD, PANEL, OWNER_SHARE = (DEFAULTS["providerBond"] * bps // 10_000 for bps in SHARES[:3])


def task_escrow(task: Any) -> int:
    """What TrainingTasks holds for one task (protocol 4.3), from its `getTask` view: the reward while it is
    posted, and the provider bond too while a provider works on it, plus the challenger bonds it holds
    (`heldBonds`, in wei: pending commits, joined bonds not paid out yet) whatever its state."""
    escrow = int(task.heldBonds)
    if task.status == POSTED:
        escrow += task.terms.reward
    elif task.status in (ACCEPTED, COMMITTED):
        escrow += task.terms.reward + task.terms.providerBond
    if task.waitingLeadSeq:  # a slash's lead share waiting for earlier challenges (releaseLeadShare)
        escrow += task.terms.providerBond * SHARES[0] // 10_000
    return escrow


POST_FIELDS = ("specHash", "specCID", "initDigest", "totalSteps", "stride", "intervalsPerBatch", "sampleBps")


def post_args(terms: dict[str, Any], deadline: int) -> tuple[Any, ...]:
    """postTask's arguments in order, from a terms dict like DEFAULTS (bonds as the Bonds struct); the value
    it carries is the reward, ``terms["reward"]``."""
    bonds = (terms["providerBond"], terms["challengerBond"])
    return (*(terms[name] for name in POST_FIELDS), bonds, terms["replaySeconds"], terms["windows"], deadline)


def deploy_pair(project: Any, owner: Any, randomness: Any = None, **committee: int) -> tuple[Any, Any]:
    """AuditCommittee (COMMITTEE overridden by keyword), then TrainingTasks at the address the committee was
    built to answer to; both read ``randomness`` (default: a new BlockhashRandomness of SEED_DELAY blocks)."""
    if randomness is None:
        randomness = owner.deploy(project.BlockhashRandomness, SEED_DELAY, False)
    tasks_at = create_address(owner.address, owner.nonce + 1)
    court = owner.deploy(project.AuditCommittee, tasks_at, randomness, tuple({**COMMITTEE, **committee}.values()))
    tasks = owner.deploy(
        project.TrainingTasks,
        randomness,
        KEEPER_BPS,
        SHARES,
        MIN_BONDS,
        MAX_REQUESTS_PER_BATCH,
        court.address,
    )
    assert tasks.address == tasks_at
    return court, tasks


def sampled_intervals(tasks: Any, task: int, j: int) -> list[int]:
    """Batch j's sampled intervals, ascending, from its sampledBitmap (bit i: interval j * m + i)."""
    m = tasks.getTask(task).terms.intervalsPerBatch
    bitmap = int(tasks.getBatch(task, j).sampledBitmap)
    return [j * m + i for i in range(256) if bitmap >> i & 1]


def module_pair(doc: str, **committee: int) -> tuple[Any, Any, Any]:
    """Module-scoped fixtures (deployed_pair, committee, tasks) overriding the suite's session pair with one
    whose committee takes ``committee`` overrides; a module assigns them to those three names."""

    @pytest.fixture(scope="module")
    def deployed_pair(project: Any, owner: Any) -> tuple[Any, Any]:
        return deploy_pair(project, owner, **committee)

    deployed_pair.__doc__ = doc

    @pytest.fixture(scope="module", name="committee")
    def committee_fixture(deployed_pair: tuple[Any, Any]) -> Any:
        return deployed_pair[0]

    @pytest.fixture(scope="module", name="tasks")
    def tasks_fixture(deployed_pair: tuple[Any, Any]) -> Any:
        return deployed_pair[1]

    return deployed_pair, committee_fixture, tasks_fixture


def leaf(task: int, k: int, end_step: int, digest: bytes) -> bytes:
    """`keccak256(bytes.concat(keccak256(abi.encode(task, k, b_k, digest_k))))`."""
    return keccak(keccak(encode(["uint256", "uint256", "uint256", "bytes32"], [task, k, end_step, digest])))


def revert_data(signature: str, types: list[str], values: list[Any]) -> str:
    """Hex revert data of custom error ``signature``. Ape checks neither the error class nor, for a
    reverted deployment (no address to decode against), anything at all when given
    ``project.X.Error``: compare the raw data instead."""
    return "0x" + (keccak(text=signature)[:4] + encode(types, values)).hex()


def reveal(tasks: Any, task: int, k: int, who: Any, reason: int = OUT_OF_BOUNDS, salt: bytes = b"\x07" * 32) -> int:
    """Reveal `who`'s challenge of interval k; returns the dispute it opened or joined (0: refunded)."""
    tx = tasks.revealChallenge(task, k, reason, salt, "bafyreport", sender=who)
    return next(iter(tx.events.filter(tasks.ChallengeRevealed))).dispute


def challenge_commitment(task: int, k: int, reason: int, salt: bytes, challenger: str) -> bytes:
    """`keccak256(abi.encode(task, k, reason, salt, challenger))` (protocol 4.1)."""
    return keccak(encode(["uint256", "uint256", "uint8", "bytes32", "address"], [task, k, reason, salt, challenger]))


def commit_challenge(
    tasks: Any, task: int, k: int, who: Any, reason: int = OUT_OF_BOUNDS, salt: bytes = b"\x07" * 32
) -> bytes:
    """`who` commits a challenge of interval k with the default challenger bond; returns the commitment."""
    commitment = challenge_commitment(task, k, reason, salt, who.address)
    tasks.commitChallenge(task, commitment, sender=who, value=DEFAULTS["challengerBond"])
    return commitment


def settle(committee: Any, dispute: int, sender: Any) -> Any:
    """Resolve the dispute's current round; if it decided, wait out its appeal window unappealed and
    resolve again, so the outcome stands; once resolved, settle every seat. Returns the transaction that
    resolved it (or the last one, if it did not resolve)."""
    from ape import chain

    tx = committee.resolve(dispute, sender=sender)
    d = committee.getDispute(dispute)
    if d.status == APPEALABLE:
        chain.pending_timestamp = d.decidedAt + committee.APPEAL_WINDOW()
        tx = committee.resolve(dispute, sender=sender)
    settle_seats(committee, dispute, sender)
    return tx


def emitted(event: Any, since: int, *fields: str, **match: Any) -> list[tuple]:
    """Every log of ``event`` (a contract's event, e.g. ``committee.Penalized``) from block ``since`` on, each as
    the tuple of ``fields``, optionally only those whose indexed fields equal ``match``."""
    from ape import chain

    logs = event.range(since, chain.blocks.height + 1, search_topics=match or None)
    return [tuple(list(log[f]) if isinstance(log[f], list | tuple) else log[f] for f in fields) for log in logs]


def settle_seats(committee: Any, dispute: int, sender: Any) -> int:
    """Once the dispute is resolved, call settleSeats until every seat is settled; returns the calls made."""
    calls = 0
    while committee.getDispute(dispute).status == RESOLVED and not committee.getDispute(dispute).seatsSettled:
        committee.settleSeats(dispute, sender=sender)
        calls += 1
    return calls


def opened_digests(tasks: Any, task: int, k: int) -> tuple[bytes, bytes]:
    """Interval k's start and end digests as its opening proved them. The contract stores only a bitmap of
    what is opened: the digests are in its IntervalOpened event."""
    from ape import chain

    logs = list(tasks.IntervalOpened.range(chain.blocks.height + 1, search_topics={"task": task, "k": k}))
    assert len(logs) == 1, f"interval {k} of task {task} opened {len(logs)} times"
    return bytes(logs[0].startDigest), bytes(logs[0].endDigest)


def vote_commitment(dispute: int, run: int, vote: int, salt: bytes, panelist: str) -> bytes:
    """`keccak256(abi.encode(dispute, run, vote, salt, panelist))` (protocol 4.2, v3: a round drawn again is a
    new run)."""
    return keccak(encode(["uint256", "uint256", "uint8", "bytes32", "address"], [dispute, run, vote, salt, panelist]))


def panel_seed(value: bytes, dispute: int, round_: int) -> bytes:
    """`keccak256(abi.encode(value, dispute, round))` (protocol 4.2)."""
    return keccak(encode(["bytes32", "uint256", "uint256"], [value, dispute, round_]))


def panel_draw(seed: bytes, occupants: list[str | None], eligible: set[str], want: int) -> list[str]:
    """Protocol 4.2's rejection sampling: try t seats the occupant of slot keccak(seed, t) % slots if it
    is eligible and not seated yet, for 16 tries per seat or until `want` are seated."""
    panel: list[str] = []
    for t in range(TRIES_PER_SEAT * want):
        if len(panel) == want or not occupants:
            break
        slot = int.from_bytes(keccak(encode(["bytes32", "uint256"], [seed, t])), "big") % len(occupants)
        who = occupants[slot]
        if who is not None and who in eligible and who not in panel:
            panel.append(who)
    return panel


def seed_of(block_hash: bytes, task: int, j: int) -> bytes:
    return keccak(encode(["bytes32", "uint256", "uint256"], [block_hash, task, j]))


def sample_size(n: int, sample_bps: int) -> int:
    return max(1, (n * sample_bps + 9999) // 10000)


def sample(seed: bytes, n: int, sample_bps: int, *, is_last: bool) -> list[int]:
    """Positions of a batch's sample in draw order: partial Fisher-Yates, deliverable appended last."""
    q = min(sample_size(n, sample_bps), n)
    n_, q_ = (n - 1, q - 1) if is_last else (n, q)
    p = list(range(n_))
    for i in range(q_):
        r = i + int.from_bytes(keccak(encode(["bytes32", "uint256"], [seed, i])), "big") % (n_ - i)
        p[i], p[r] = p[r], p[i]
    return p[:q_] + ([n - 1] if is_last else [])


@dataclass(frozen=True)
class Tree:
    """Ordered Merkle tree over leaves, zero-padded to a power of two; parent = keccak(left || right)."""

    leaves: tuple[bytes, ...]

    @functools.cached_property
    def levels(self) -> list[list[bytes]]:
        width = 1
        while width < len(self.leaves):
            width *= 2
        level = list(self.leaves) + [ZERO] * (width - len(self.leaves))
        levels = [level]
        while len(level) > 1:
            level = [keccak(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
            levels.append(level)
        return levels

    @property
    def root(self) -> bytes:
        return self.levels[-1][0]

    def proof(self, index: int) -> list[bytes]:
        """Siblings from leaf `index` up to the root."""
        siblings = []
        for level in self.levels[:-1]:
            siblings.append(level[index ^ 1])
            index //= 2
        return siblings


@dataclass(frozen=True)
class Evidence:
    """A provider's commitments for one task: a digest per interval, a tree per batch (protocol 2.3-2.4)."""

    task: int
    total_steps: int
    stride: int
    per_batch: int  # m
    init_digest: bytes

    @property
    def intervals(self) -> int:  # K
        return -(-self.total_steps // self.stride)

    @property
    def batches(self) -> int:  # B
        return -(-self.intervals // self.per_batch)

    def end_step(self, k: int) -> int:
        return min((k + 1) * self.stride, self.total_steps)

    def digest(self, k: int) -> bytes:
        return keccak(text=f"evidence {self.task}/{k}")  # stands in for sha256 of the file

    def batch_intervals(self, j: int) -> range:
        return range(j * self.per_batch, min((j + 1) * self.per_batch, self.intervals))

    @functools.cache  # noqa: B019 (a handful of small instances per test)
    def tree(self, j: int) -> Tree:
        return Tree(tuple(leaf(self.task, k, self.end_step(k), self.digest(k)) for k in self.batch_intervals(j)))

    def proof(self, k: int) -> list[bytes]:
        return self.tree(k // self.per_batch).proof(k % self.per_batch)

    def start_digest(self, k: int) -> bytes:
        return self.init_digest if k == 0 else self.digest(k - 1)

    def opening(self, k: int) -> tuple:
        """The `Opening` struct for interval k, as a tuple in field order."""
        if k == 0:
            return (k, self.end_step(k), self.digest(k), self.proof(k), 0, ZERO, [])
        return (
            k,
            self.end_step(k),
            self.digest(k),
            self.proof(k),
            self.end_step(k - 1),
            self.digest(k - 1),
            self.proof(k - 1),
        )
