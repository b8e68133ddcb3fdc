"""AuditCommittee: stakes, panels, votes, rounds, penalties and exits, through the real dispute flow
(protocol 4.2, 4.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from eth_abi import encode
from eth_utils import keccak
from helpers import (
    AWAITING_PANEL,
    COMMITTED,
    COMMITTEE,
    D_NONE,
    DEFAULTS,
    FAULTY,
    MOOT,
    NO_DECISION,
    OUT_OF_BOUNDS,
    RESOLVED,
    SLASHED,
    UNAVAILABLE,
    V_NONE,
    VALID,
    VOTING,
    challenge_commitment,
    revert_data,
    vote_commitment,
)

pytestmark = pytest.mark.usefixtures("balance_invariant")

STAKE, PENALTY = COMMITTEE["auditorStake"], COMMITTEE["penalty"]
WARMUP, SEED_DELAY, COOLDOWN = COMMITTEE["warmupBlocks"], COMMITTEE["seedDelay"], COMMITTEE["cooldown"]
COMMIT_WINDOW, REVEAL_WINDOW = COMMITTEE["commitWindow"], COMMITTEE["revealWindow"]
PANEL_TIMEOUT = COMMITTEE["panelTimeout"]
REWARD, BOND, CBOND = DEFAULTS["reward"], DEFAULTS["providerBond"], DEFAULTS["challengerBond"]
CHALLENGE_WINDOW = DEFAULTS["windows"][1]
SALT, OTHER_SALT = b"\x5e" * 32, b"\x01" * 32  # SALT: the `vote` fixture's
# Disputes need one opened batch, not the default three: one batch of four intervals, all of them sampled.
SMALL = {"totalSteps": 400, "intervalsPerBatch": 4, "sampleBps": 10_000}


# --- helpers -------------------------------------------------------------------------------------


def params(**overrides: int) -> tuple[int, ...]:
    """CommitteeParams as a tuple, COMMITTEE overridden by keyword."""
    return tuple({**COMMITTEE, **overrides}.values())


def invalid_parameter(name: str, value: int) -> str:
    return revert_data("InvalidParameter(string,uint256)", ["string", "uint256"], [name, value])


def addresses(accounts: list[Any]) -> list[str]:
    return [a.address for a in accounts]


def pick(seed: bytes, n: int, q: int) -> list[int]:
    """`q` distinct indices of `0 .. n-1` by partial Fisher-Yates (protocol 3, the panel draw of 4.2)."""
    p = list(range(n))
    for i in range(q):
        r = i + int.from_bytes(keccak(encode(["bytes32", "uint256"], [seed, i])), "big") % (n - i)
        p[i], p[r] = p[r], p[i]
    return p[:q]


def expected_panel(committee: Any, chain: Any, dispute: int, pool: list[str]) -> list[str]:
    """The panel the current round must draw from `pool` (the eligible auditors in registry order): seed
    `keccak256(abi.encode(blockhash(c + SEED_DELAY), dispute, round))`. A pool smaller than the round's
    size yields its largest odd subset (the contract's rule; the protocol does not say)."""
    d = committee.getDispute(dispute)
    block_hash = bytes(chain.blocks[d.armBlock + SEED_DELAY].hash)
    seed = keccak(encode(["bytes32", "uint256", "uint256"], [block_hash, dispute, d.round]))
    size = committee.panelSizeOf(d.round)
    if size > len(pool):
        size = len(pool) - (1 - len(pool) % 2)
    return [pool[i] for i in pick(seed, len(pool), size)]


def mine_to_seed(committee: Any, chain: Any, dispute: int) -> None:
    """Mine until the next block may draw the dispute's panel."""
    ready = committee.getDispute(dispute).armBlock + SEED_DELAY + 1
    if chain.blocks.height + 1 < ready:
        chain.mine(ready - chain.blocks.height - 1)


def snapshot(committee: Any, dispute: int, *who: str) -> tuple:
    """Everything a reverted committee call must leave as it was."""
    d = committee.getDispute(dispute)
    return (
        d,
        list(committee.panelOf(dispute)),
        [committee.getAuditor(a) for a in who],
        [committee.ballotOf(dispute, d.round, a) for a in who],
        [committee.credits(a) for a in who],
        committee.burned(),
        committee.balance,
        committee.auditorCount(),
    )


def events(tx: Any, event: Any, *fields: str) -> list[tuple]:
    """The tx's logs of `event`, each as the tuple of `fields`."""
    return [tuple(_plain(log[f]) for f in fields) for log in tx.events.filter(event)]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, list | tuple) else value


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def signer(auditors: list[Any]) -> Callable[[str], Any]:
    """The auditor account behind an address (panels are returned as addresses). Built from `auditors`, not
    `accounts`: iterating Ape's test accounts re-derives every key."""
    return {a.address: a for a in auditors}.__getitem__


@pytest.fixture
def dispute_of(tasks: Any, opened_task: Any, challenge: Any, watcher: Any) -> Callable[..., tuple[int, int, int]]:
    """Factory: a SMALL task (overridden by keyword) opened, its first sampled interval challenged by
    `watcher`; returns (task, k, dispute)."""

    def make(*, reason: int = OUT_OF_BOUNDS, **overrides: Any) -> tuple[int, int, int]:
        task, _ = opened_task(**{**SMALL, **overrides})
        k = tasks.sampledIntervals(task, 0)[0]
        return task, k, challenge(task, k, watcher, reason)

    return make


@pytest.fixture
def drawn(
    register: Any, auditors: list[Any], dispute_of: Callable[..., tuple[int, int, int]], draw_panel: Any
) -> Callable[..., tuple[int, int, int, list[str]]]:
    """Factory: `n` auditors registered, a dispute opened and its round-0 panel drawn; returns (task, k,
    dispute, panel)."""

    def make(n: int = 3, **overrides: Any) -> tuple[int, int, int, list[str]]:
        register(auditors[:n])
        task, k, dispute = dispute_of(**overrides)
        return task, k, dispute, draw_panel(dispute)

    return make


# --- deployment ----------------------------------------------------------------------------------


# CommitteeParams fields (COMMITTEE's order) as the committee's immutables.
IMMUTABLES = ("AUDITOR_STAKE", "PENALTY", "WARMUP_BLOCKS", "SEED_DELAY", "COOLDOWN", "COMMIT_WINDOW",
              "REVEAL_WINDOW", "PANEL_TIMEOUT", "PANEL_SIZE", "MAX_ROUNDS")  # fmt: skip


def test_constructor_sets_parameters(committee: Any, tasks: Any) -> None:
    assert committee.TASKS() == committee.taskContract() == tasks.address
    assert [getattr(committee, name)() for name in IMMUTABLES] == list(COMMITTEE.values())
    assert [committee.panelSizeOf(r) for r in range(4)] == [3, 7, 15, 31]
    assert [committee.disputeCount(), committee.auditorCount(), committee.totalStake(), committee.burned()] == [0] * 4


INVALID_PARAMETERS = [
    ({"penalty": 0}, "penalty", 0),
    ({"penalty": STAKE + 1}, "penalty", STAKE + 1),
    ({"seedDelay": 0}, "seedDelay", 0),
    ({"panelSize": 1}, "panelSize", 1),
    ({"panelSize": 4}, "panelSize", 4),
    ({"maxRounds": 0}, "maxRounds", 0),
    ({"maxRounds": 9}, "maxRounds", 9),
    ({"commitWindow": 0}, "commitWindow", 0),
    ({"revealWindow": 0}, "revealWindow", 0),
]


def test_constructor_invalid_parameter_reverts(project: Any, owner: Any, tasks: Any) -> None:
    """All cases in one test: the balance check after each test would cost more than the cases."""
    for overrides, name, value in INVALID_PARAMETERS:
        with ape.reverts(invalid_parameter(name, value)):
            owner.deploy(project.AuditCommittee, tasks, params(**overrides))


def test_constructor_accepts_the_limits(project: Any, owner: Any, tasks: Any) -> None:
    limits = {**COMMITTEE, "penalty": STAKE, "seedDelay": 1, "panelSize": 5, "maxRounds": 8, "commitWindow": 1,
              "revealWindow": 1, "warmupBlocks": 0, "cooldown": 0, "panelTimeout": 0}  # fmt: skip
    other = owner.deploy(project.AuditCommittee, tasks, tuple(limits.values()))
    assert [getattr(other, name)() for name in IMMUTABLES] == list(limits.values())


# --- register ------------------------------------------------------------------------------------


def test_register_records_the_stake(committee: Any, auditors: list[Any]) -> None:
    auditor = auditors[0]
    tx = committee.register(sender=auditor, value=STAKE)
    assert events(tx, committee.AuditorRegistered, "auditor", "stake") == [(auditor.address, STAKE)]
    a = committee.getAuditor(auditor)
    assert (a.stake, a.locked, a.registeredBlock, a.exitRequestedAt) == (STAKE, 0, tx.block_number, 0)
    assert (committee.auditorCount(), committee.totalStake(), committee.balance) == (1, STAKE, STAKE)


def test_register_with_wrong_stake_reverts(committee: Any, auditors: list[Any]) -> None:
    auditor = auditors[0]
    before = snapshot(committee, 0, auditor.address)
    for value in (0, STAKE - 1, STAKE + 1):
        with ape.reverts(committee.WrongBond, expected=STAKE, sent=value):
            committee.register(sender=auditor, value=value)
    assert snapshot(committee, 0, auditor.address) == before


def test_register_twice_reverts(committee: Any, auditors: list[Any], register: Any) -> None:
    auditor = auditors[0]
    register([auditor], warm=False)
    before = snapshot(committee, 0, auditor.address)
    with ape.reverts(committee.AlreadyRegistered, auditor=auditor.address):
        committee.register(sender=auditor, value=STAKE)
    assert snapshot(committee, 0, auditor.address) == before


# RegistryFull is not tested: it needs MAX_AUDITORS = 256 funded registrations, too slow for this file.


# --- openDispute ---------------------------------------------------------------------------------


def test_open_dispute_from_anyone_but_the_task_contract_reverts(
    committee: Any, owner: Any, provider: Any, watcher: Any
) -> None:
    for caller in (owner, watcher):
        with ape.reverts(committee.NotTaskContract, caller=caller.address):
            committee.openDispute(1, 0, OUT_OF_BOUNDS, [provider, owner, watcher], sender=caller)
    assert committee.disputeCount() == 0


def test_revealed_challenge_opens_a_dispute_awaiting_its_panel(
    committee: Any, chain: Any, dispute_of: Any, owner: Any, provider: Any, watcher: Any
) -> None:
    task, k, dispute = dispute_of()
    reveal = chain.history[watcher.address][-1]
    assert dispute == committee.disputeCount() == 1
    assert events(reveal, committee.DisputeOpened, "dispute", "task", "k", "reason") == [
        (dispute, task, k, OUT_OF_BOUNDS)
    ]
    d = committee.getDispute(dispute)
    assert (d.task, d.k, list(d.excluded)) == (task, k, [provider.address, owner.address, watcher.address])
    assert (d.reason, d.status, d.verdict, d.round) == (OUT_OF_BOUNDS, AWAITING_PANEL, V_NONE, 0)
    assert [d.revealBlock, d.armBlock, d.openedAt, d.drawnAt] == [reveal.block_number] * 2 + [reveal.timestamp, 0]
    assert committee.isOpen(dispute) and list(committee.panelOf(dispute)) == []


def test_calls_on_an_unknown_or_waiting_dispute_revert(
    committee: Any, keeper: Any, register: Any, auditors: list[Any], dispute_of: Any, signer: Any
) -> None:
    for call in (committee.drawPanel, committee.resolve):
        with ape.reverts(committee.WrongDisputeStatus, dispute=7, status=D_NONE):
            call(7, sender=keeper)
    register(auditors[:3])
    _, _, dispute = dispute_of()
    auditor = auditors[0]
    before = snapshot(committee, dispute, auditor.address)
    with ape.reverts(committee.WrongDisputeStatus, dispute=dispute, status=AWAITING_PANEL):
        committee.commitVote(dispute, vote_commitment(dispute, 0, VALID, SALT, auditor.address), sender=auditor)
    with ape.reverts(committee.WrongDisputeStatus, dispute=dispute, status=AWAITING_PANEL):
        committee.revealVote(dispute, VALID, SALT, sender=auditor)
    with ape.reverts(committee.WrongDisputeStatus, dispute=dispute, status=AWAITING_PANEL):
        committee.resolve(dispute, sender=keeper)
    assert snapshot(committee, dispute, auditor.address) == before


# --- drawPanel -----------------------------------------------------------------------------------


def test_draw_panel_before_its_seed_block_reverts(
    committee: Any, chain: Any, keeper: Any, register: Any, auditors: list[Any], dispute_of: Any
) -> None:
    register(auditors[:3])
    _, _, dispute = dispute_of()
    arm = committee.getDispute(dispute).armBlock
    before = snapshot(committee, dispute, *addresses(auditors[:3]))
    tried = []
    while (block := chain.blocks.height + 1) <= arm + SEED_DELAY:  # the next block is the seed block or earlier
        tried.append(block)
        with ape.reverts(committee.PanelNotReady, dispute=dispute, readyAt=arm + SEED_DELAY + 1):
            committee.drawPanel(dispute, sender=keeper)
        if chain.blocks.height + 1 == block:  # the reverted call was not mined
            chain.mine()
    assert tried == [arm + 1, arm + 2]
    assert snapshot(committee, dispute, *addresses(auditors[:3])) == before
    tx = committee.drawPanel(dispute, sender=keeper)
    assert tx.block_number == arm + SEED_DELAY + 1
    assert committee.getDispute(dispute).status == VOTING


def test_draw_panel_seats_three_eligible_auditors_and_locks_penalty_each(
    committee: Any, chain: Any, keeper: Any, register: Any, auditors: list[Any], dispute_of: Any, draw_panel: Any
) -> None:
    register(auditors[:5])
    pool = addresses(auditors[:5])
    _, _, dispute = dispute_of()
    arm = committee.getDispute(dispute).armBlock
    panel = draw_panel(dispute)
    tx = chain.history[keeper.address][-1]
    assert panel == expected_panel(committee, chain, dispute, pool)
    assert len(set(panel)) == 3 and set(panel) <= set(pool)
    assert events(tx, committee.PanelDrawn, "dispute", "round", "panel", "commitEnd", "revealEnd") == [
        (dispute, 0, panel, tx.timestamp + COMMIT_WINDOW, tx.timestamp + COMMIT_WINDOW + REVEAL_WINDOW)
    ]
    d = committee.getDispute(dispute)
    assert (d.status, d.round, d.drawnAt, d.armBlock) == (VOTING, 0, tx.timestamp, arm)
    for auditor in pool:
        a = committee.getAuditor(auditor)
        assert (a.stake, a.locked) == (STAKE, PENALTY if auditor in panel else 0)
        assert committee.ballotOf(dispute, 0, auditor).seated == (auditor in panel)
    before = snapshot(committee, dispute, *pool)
    with ape.reverts(committee.WrongDisputeStatus, dispute=dispute, status=VOTING):
        committee.drawPanel(dispute, sender=keeper)
    assert snapshot(committee, dispute, *pool) == before


def test_panel_never_seats_the_provider_owner_or_challenger(
    committee: Any,
    tasks: Any,
    chain: Any,
    register: Any,
    opened_task: Any,
    challenge: Any,
    draw_panel: Any,
    owner: Any,
    provider: Any,
    watcher: Any,
    watcher2: Any,
    auditors: list[Any],
) -> None:
    """Owner, provider and both watchers are auditors too; four disputes with different parties each draw
    from exactly the registered auditors who are not their parties."""
    registry = [owner, provider, watcher, watcher2, *auditors[:3]]
    register(registry)
    task_a, _ = opened_task(**SMALL)
    task_b, _ = opened_task(**SMALL, sender=watcher2)  # watcher2 owns task b
    cases = [(task_a, 0, watcher), (task_a, 1, watcher2), (task_b, 0, watcher), (task_b, 1, owner)]
    for task, i, challenger in cases:
        dispute = challenge(task, tasks.sampledIntervals(task, 0)[i], challenger)
        parties = {tasks.getTask(task).provider, tasks.getTask(task).owner, challenger.address}
        pool = [a for a in addresses(registry) if a not in parties]
        panel = draw_panel(dispute)
        assert len(pool) == 4 and len(panel) == 3
        assert panel == expected_panel(committee, chain, dispute, pool)
        assert not parties & set(panel)


def test_auditor_registered_within_warmup_of_the_reveal_is_not_drawn(
    committee: Any,
    tasks: Any,
    chain: Any,
    register: Any,
    opened_task: Any,
    challenge: Any,
    draw_panel: Any,
    watcher: Any,
    auditors: list[Any],
) -> None:
    """auditors[2] registers exactly WARMUP blocks before the reveal block (eligible), auditors[3] one
    block later (not eligible)."""
    task, _ = opened_task(**SMALL)
    register(auditors[:2])
    register(auditors[2:4], warm=False)
    first = committee.getAuditor(auditors[2]).registeredBlock
    assert committee.getAuditor(auditors[3]).registeredBlock == first + 1
    chain.mine(first + WARMUP - 2 - chain.blocks.height)  # the commit lands in first + 4, the reveal in first + 5
    dispute = challenge(task, tasks.sampledIntervals(task, 0)[0], watcher)
    assert committee.getDispute(dispute).revealBlock == first + WARMUP
    panel = draw_panel(dispute)
    assert panel == expected_panel(committee, chain, dispute, addresses(auditors[:3]))
    assert committee.getAuditor(auditors[3]).locked == 0


def test_auditor_who_requested_exit_is_not_drawn(
    committee: Any, chain: Any, register: Any, auditors: list[Any], dispute_of: Any, draw_panel: Any
) -> None:
    register(auditors[:4])
    _, _, dispute = dispute_of()
    committee.requestExit(sender=auditors[0])  # after the reveal: ineligible at once
    panel = draw_panel(dispute)
    assert panel == expected_panel(committee, chain, dispute, addresses(auditors[1:4]))
    assert committee.getAuditor(auditors[0]).locked == 0


def test_auditor_without_a_free_penalty_of_stake_is_not_drawn(
    committee: Any,
    tasks: Any,
    chain: Any,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    opened_task: Any,
    challenge: Any,
    draw_panel: Any,
    watcher: Any,
) -> None:
    """Three auditors sit on every panel: STAKE / PENALTY = 10 seats lock all their stake, and the eleventh
    dispute finds none of them eligible."""
    register(auditors[:3])
    seats = STAKE // PENALTY
    intervals = []
    for _ in range(3):
        task, _ = opened_task(**SMALL)
        intervals += [(task, k) for k in tasks.sampledIntervals(task, 0)]
    disputes = [challenge(task, k, watcher) for task, k in intervals[: seats + 1]]
    for dispute in disputes[:seats]:
        draw_panel(dispute)  # the tenth still finds exactly PENALTY unlocked
    assert [committee.getAuditor(a).locked for a in auditors[:3]] == [STAKE] * 3
    mine_to_seed(committee, chain, disputes[-1])
    tx = committee.drawPanel(disputes[-1], sender=keeper)
    assert events(tx, committee.PanelRearmed, "dispute", "eligible") == [(disputes[-1], 0)]


def test_draw_panel_with_fewer_than_three_eligible_rearms(
    committee: Any, chain: Any, keeper: Any, register: Any, auditors: list[Any], dispute_of: Any
) -> None:
    register(auditors[:3])
    committee.requestExit(sender=auditors[2])
    _, _, dispute = dispute_of()
    mine_to_seed(committee, chain, dispute)
    tx = committee.drawPanel(dispute, sender=keeper)
    assert events(tx, committee.PanelRearmed, "dispute", "round", "seedBlock", "eligible") == [
        (dispute, 0, tx.block_number + SEED_DELAY, 2)
    ]
    assert not tx.events.filter(committee.PanelDrawn)
    d = committee.getDispute(dispute)
    assert (d.status, d.round, d.armBlock, d.drawnAt) == (AWAITING_PANEL, 0, tx.block_number, 0)
    assert list(committee.panelOf(dispute)) == []
    assert [committee.getAuditor(a).locked for a in auditors[:3]] == [0, 0, 0]
    with ape.reverts(committee.PanelNotReady, dispute=dispute, readyAt=tx.block_number + SEED_DELAY + 1):
        committee.drawPanel(dispute, sender=keeper)


def test_too_few_eligible_until_the_panel_timeout_ends_with_no_decision(
    committee: Any,
    tasks: Any,
    chain: Any,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    dispute_of: Any,
    provider: Any,
    watcher: Any,
) -> None:
    register(auditors[:2])
    task, k, dispute = dispute_of()
    timeout_at = committee.getDispute(dispute).openedAt + PANEL_TIMEOUT
    mine_to_seed(committee, chain, dispute)
    with chain.isolate():
        chain.pending_timestamp = timeout_at - 1
        tx = committee.drawPanel(dispute, sender=keeper)
        assert events(tx, committee.PanelRearmed, "eligible") == [(2,)]
        assert committee.getDispute(dispute).status == AWAITING_PANEL
    chain.pending_timestamp = timeout_at
    tx = committee.drawPanel(dispute, sender=keeper)
    assert events(tx, committee.DisputeResolved, "dispute", "task", "verdict", "round") == [
        (dispute, task, NO_DECISION, 0)
    ]
    assert events(tx, tasks.DisputeSettled, "dispute", "task", "k", "verdict") == [(dispute, task, k, NO_DECISION)]
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict) == (RESOLVED, NO_DECISION) and not committee.isOpen(dispute)
    assert tasks.getTask(task).heldBonds == 1  # the joined bond waits for claimBond
    t = tasks.getTask(task)
    assert (t.status, t.openDisputes) == (COMMITTED, 0)
    assert committee.burned() == 0 and tasks.burned() == 0
    # ... and the provider's side: once k's reopened window closes, the task finalizes, reward and bond to the
    # provider.
    reopened = tx.timestamp + CHALLENGE_WINDOW
    assert tasks.challengeWindowEnd(task, k) == tasks.getTask(task).challengeEnd == reopened
    chain.pending_timestamp = reopened
    tasks.finalize(task, sender=keeper)
    assert tasks.credits(provider) == REWARD + BOND


def test_draw_panel_after_its_seed_block_hash_is_gone_rearms(
    committee: Any,
    chain: Any,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    dispute_of: Any,
    draw_panel: Any,
) -> None:
    register(auditors[:3])
    _, _, dispute = dispute_of()
    seed_block = committee.getDispute(dispute).armBlock + SEED_DELAY
    chain.mine(seed_block + 255 - chain.blocks.height)
    with chain.isolate():
        tx = committee.drawPanel(dispute, sender=keeper)  # in block seed_block + 256: its hash is still readable
        assert tx.block_number == seed_block + 256
        assert committee.getDispute(dispute).status == VOTING
    chain.mine()
    tx = committee.drawPanel(dispute, sender=keeper)  # in block seed_block + 257
    assert tx.block_number == seed_block + 257
    assert events(tx, committee.PanelRearmed, "dispute", "round", "seedBlock", "eligible") == [
        (dispute, 0, tx.block_number + SEED_DELAY, 0)
    ]
    d = committee.getDispute(dispute)
    assert (d.status, d.armBlock) == (AWAITING_PANEL, tx.block_number)
    assert [committee.getAuditor(a).locked for a in auditors[:3]] == [0, 0, 0]
    panel = draw_panel(dispute)
    assert panel == expected_panel(committee, chain, dispute, addresses(auditors[:3]))


# --- votes ---------------------------------------------------------------------------------------


def test_commit_vote_records_the_commitment(committee: Any, drawn: Any, signer: Any) -> None:
    _, _, dispute, panel = drawn()
    commitment = vote_commitment(dispute, 0, FAULTY, SALT, panel[0])
    tx = committee.commitVote(dispute, commitment, sender=signer(panel[0]))
    assert events(tx, committee.VoteCommitted, "dispute", "round", "panelist") == [(dispute, 0, panel[0])]
    b = committee.ballotOf(dispute, 0, panel[0])
    assert (b.seated, bytes(b.commitment), b.vote) == (True, commitment, 0)


def test_vote_by_a_non_panelist_reverts(
    committee: Any, chain: Any, drawn: Any, auditors: list[Any], watcher: Any
) -> None:
    _, _, dispute, panel = drawn(4)
    outsider = next(a for a in auditors[:4] if a.address not in panel)
    before = snapshot(committee, dispute, outsider.address, watcher.address)
    for caller in (outsider, watcher):
        with ape.reverts(committee.NotPanelist, dispute=dispute, caller=caller.address):
            committee.commitVote(dispute, vote_commitment(dispute, 0, FAULTY, SALT, caller.address), sender=caller)
    chain.pending_timestamp = committee.getDispute(dispute).drawnAt + COMMIT_WINDOW
    with ape.reverts(committee.NotPanelist, dispute=dispute, caller=outsider.address):
        committee.revealVote(dispute, FAULTY, SALT, sender=outsider)
    assert snapshot(committee, dispute, outsider.address, watcher.address) == before


def test_commit_vote_from_the_end_of_the_commit_window_reverts(
    committee: Any, chain: Any, drawn: Any, signer: Any
) -> None:
    _, _, dispute, panel = drawn()
    commit_end = committee.getDispute(dispute).drawnAt + COMMIT_WINDOW
    chain.pending_timestamp = commit_end - 1
    committee.commitVote(dispute, vote_commitment(dispute, 0, VALID, SALT, panel[0]), sender=signer(panel[0]))
    before = snapshot(committee, dispute, *panel)
    chain.pending_timestamp = commit_end
    with ape.reverts(committee.CommitWindowClosed, dispute=dispute, closedAt=commit_end):
        committee.commitVote(dispute, vote_commitment(dispute, 0, VALID, SALT, panel[1]), sender=signer(panel[1]))
    assert snapshot(committee, dispute, *panel) == before


def test_commit_vote_twice_reverts(committee: Any, drawn: Any, signer: Any) -> None:
    _, _, dispute, panel = drawn()
    first = vote_commitment(dispute, 0, FAULTY, SALT, panel[0])
    committee.commitVote(dispute, first, sender=signer(panel[0]))
    before = snapshot(committee, dispute, *panel)
    with ape.reverts(committee.AlreadyCommitted, dispute=dispute, panelist=panel[0]):
        committee.commitVote(dispute, vote_commitment(dispute, 0, VALID, SALT, panel[0]), sender=signer(panel[0]))
    assert snapshot(committee, dispute, *panel) == before
    assert bytes(committee.ballotOf(dispute, 0, panel[0]).commitment) == first


def test_reveal_vote_outside_the_reveal_window_reverts(committee: Any, chain: Any, drawn: Any, signer: Any) -> None:
    _, _, dispute, panel = drawn()
    for panelist in panel:
        committee.commitVote(dispute, vote_commitment(dispute, 0, FAULTY, SALT, panelist), sender=signer(panelist))
    commit_end = committee.getDispute(dispute).drawnAt + COMMIT_WINDOW
    reveal_end = commit_end + REVEAL_WINDOW
    window = {"dispute": dispute, "opensAt": commit_end, "closesAt": reveal_end}
    before = snapshot(committee, dispute, *panel)
    chain.pending_timestamp = commit_end - 1
    with ape.reverts(committee.VoteRevealClosed, **window):
        committee.revealVote(dispute, FAULTY, SALT, sender=signer(panel[0]))
    assert snapshot(committee, dispute, *panel) == before
    chain.pending_timestamp = commit_end
    tx = committee.revealVote(dispute, FAULTY, SALT, sender=signer(panel[0]))
    assert events(tx, committee.VoteRevealed, "dispute", "round", "panelist", "vote") == [
        (dispute, 0, panel[0], FAULTY)
    ]
    chain.pending_timestamp = reveal_end - 1
    committee.revealVote(dispute, FAULTY, SALT, sender=signer(panel[1]))
    before = snapshot(committee, dispute, *panel)
    chain.pending_timestamp = reveal_end
    with ape.reverts(committee.VoteRevealClosed, **window):
        committee.revealVote(dispute, FAULTY, SALT, sender=signer(panel[2]))
    assert snapshot(committee, dispute, *panel) == before
    assert [committee.ballotOf(dispute, 0, p).vote for p in panel] == [FAULTY, FAULTY, 0]


def test_reveal_vote_other_than_valid_or_faulty_reverts(committee: Any, chain: Any, drawn: Any, signer: Any) -> None:
    _, _, dispute, panel = drawn()
    for vote in (0, 3):
        committed = vote_commitment(dispute, 0, vote, SALT, panel[vote % 2])
        committee.commitVote(dispute, committed, sender=signer(panel[vote % 2]))
    chain.pending_timestamp = committee.getDispute(dispute).drawnAt + COMMIT_WINDOW
    before = snapshot(committee, dispute, *panel)
    for vote in (0, 3):
        with ape.reverts(committee.InvalidVote, vote=vote):
            committee.revealVote(dispute, vote, SALT, sender=signer(panel[vote % 2]))
    assert snapshot(committee, dispute, *panel) == before


def test_reveal_vote_with_wrong_vote_salt_or_sender_reverts(
    committee: Any, chain: Any, drawn: Any, signer: Any
) -> None:
    """Including a panelist who copied another's commitment: the sender is hashed in, so it cannot reveal."""
    _, _, dispute, panel = drawn()
    commitment = vote_commitment(dispute, 0, FAULTY, SALT, panel[0])
    committee.commitVote(dispute, commitment, sender=signer(panel[0]))
    committee.commitVote(dispute, commitment, sender=signer(panel[1]))  # a copy
    chain.pending_timestamp = committee.getDispute(dispute).drawnAt + COMMIT_WINDOW
    before = snapshot(committee, dispute, *panel)
    for sender, vote, salt in ((panel[0], VALID, SALT), (panel[0], FAULTY, OTHER_SALT), (panel[1], FAULTY, SALT)):
        with ape.reverts(committee.VoteMismatch, dispute=dispute, panelist=sender):
            committee.revealVote(dispute, vote, salt, sender=signer(sender))
    assert snapshot(committee, dispute, *panel) == before
    committee.revealVote(dispute, FAULTY, SALT, sender=signer(panel[0]))
    assert committee.ballotOf(dispute, 0, panel[0]).vote == FAULTY


def test_reveal_vote_without_a_commit_or_twice_reverts(committee: Any, chain: Any, drawn: Any, signer: Any) -> None:
    _, _, dispute, panel = drawn()
    committee.commitVote(dispute, vote_commitment(dispute, 0, VALID, SALT, panel[0]), sender=signer(panel[0]))
    chain.pending_timestamp = committee.getDispute(dispute).drawnAt + COMMIT_WINDOW
    before = snapshot(committee, dispute, *panel)
    with ape.reverts(committee.NothingToReveal, dispute=dispute, panelist=panel[1]):
        committee.revealVote(dispute, VALID, SALT, sender=signer(panel[1]))
    assert snapshot(committee, dispute, *panel) == before
    committee.revealVote(dispute, VALID, SALT, sender=signer(panel[0]))
    before = snapshot(committee, dispute, *panel)
    with ape.reverts(committee.NothingToReveal, dispute=dispute, panelist=panel[0]):
        committee.revealVote(dispute, VALID, SALT, sender=signer(panel[0]))
    assert snapshot(committee, dispute, *panel) == before


# --- resolve -------------------------------------------------------------------------------------


def test_resolve_before_the_reveal_window_ends_reverts(
    committee: Any, chain: Any, keeper: Any, drawn: Any, vote: Any
) -> None:
    _, _, dispute, panel = drawn()
    reveal_end = committee.getDispute(dispute).drawnAt + COMMIT_WINDOW + REVEAL_WINDOW
    vote(dispute, dict.fromkeys(panel, FAULTY))
    before = snapshot(committee, dispute, *panel)
    chain.pending_timestamp = reveal_end - 1
    with ape.reverts(committee.VotingNotOver, dispute=dispute, closesAt=reveal_end):
        committee.resolve(dispute, sender=keeper)
    assert snapshot(committee, dispute, *panel) == before
    chain.pending_timestamp = reveal_end
    committee.resolve(dispute, sender=keeper)
    assert committee.getDispute(dispute).status == RESOLVED


def test_unanimous_faulty_slashes_the_task_and_pays_out_to_the_wei(
    committee: Any,
    tasks: Any,
    keeper: Any,
    drawn: Any,
    vote: Any,
    signer: Any,
    owner: Any,
    provider: Any,
    watcher: Any,
) -> None:
    bond = 3 * 10**18 + 10  # its 10% panel share does not split evenly in three
    task, k, dispute, panel = drawn(providerBond=bond)
    vote(dispute, dict.fromkeys(panel, FAULTY))
    tx = committee.resolve(dispute, sender=keeper)
    assert events(tx, committee.DisputeResolved, "dispute", "task", "verdict", "round") == [(dispute, task, FAULTY, 0)]
    assert events(tx, tasks.TaskSlashed, "task", "j", "by", "dispute") == [(task, 0, watcher.address, dispute)]
    assert events(tx, tasks.DisputeSettled, "dispute", "k", "verdict") == [(dispute, k, FAULTY)]
    assert not tx.events.filter(committee.Penalized)
    # Provider bond 3e18 + 10: 20% lead, 10% panel (a floored third each, 1 wei dust burned), the rest owner.
    to_challenger, to_panel = 600_000_000_000_000_002, 300_000_000_000_000_001
    assert tasks.credits(watcher) == to_challenger
    assert tasks.credits(owner) == bond - to_challenger - to_panel + REWARD == 2_100_000_000_000_000_007 + REWARD
    assert [tasks.credits(p) for p in panel] == [100_000_000_000_000_000] * 3
    assert tasks.burned() == 1 and tasks.credits(provider) == 0
    t = tasks.getTask(task)
    assert (t.status, t.openDisputes) == (SLASHED, 0)
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.round) == (RESOLVED, FAULTY, 0) and not committee.isOpen(dispute)
    assert [(committee.getAuditor(p).stake, committee.getAuditor(p).locked) for p in panel] == [(STAKE, 0)] * 3
    assert [committee.credits(p) for p in panel] == [0] * 3 and committee.burned() == 0
    for call in (committee.drawPanel, committee.resolve):
        with ape.reverts(committee.WrongDisputeStatus, dispute=dispute, status=RESOLVED):
            call(dispute, sender=keeper)
    with ape.reverts(committee.WrongDisputeStatus, dispute=dispute, status=RESOLVED):
        committee.commitVote(dispute, b"\x01" * 32, sender=signer(panel[0]))


def test_sound_splits_the_challenger_bond_and_makes_the_interval_final(
    committee: Any,
    tasks: Any,
    keeper: Any,
    drawn: Any,
    vote: Any,
    challenge: Any,
    provider: Any,
    watcher: Any,
    watcher2: Any,
) -> None:
    task, k, dispute, panel = drawn()
    vote(dispute, dict.fromkeys(panel, VALID))
    tx = committee.resolve(dispute, sender=keeper)
    assert events(tx, committee.DisputeResolved, "dispute", "task", "verdict", "round") == [(dispute, task, VALID, 0)]
    # Challenger bond 1e17: 50% provider, 10% panel (floor of a third each), 40% and the dust burned.
    assert tasks.credits(provider) == 5 * 10**16
    assert [tasks.credits(p) for p in panel] == [3_333_333_333_333_333] * 3
    assert tasks.burned() == 4 * 10**16 + 1 and tasks.credits(watcher) == 0
    assert tasks.getOpenedInterval(task, k).sound
    t = tasks.getTask(task)
    assert (t.status, t.openDisputes) == (COMMITTED, 0)
    assert committee.getDispute(dispute).verdict == VALID
    assert [committee.getAuditor(p).locked for p in panel] == [0] * 3 and committee.burned() == 0
    # The interval is final: a challenge of it committed later cannot be revealed and opens nothing.
    with ape.reverts(tasks.IntervalFinal, task=task, k=k):
        challenge(task, k, watcher2)
    assert committee.disputeCount() == 1


def test_sound_unavailable_settles_the_bond_as_out_of_bounds_does(
    committee: Any, tasks: Any, keeper: Any, drawn: Any, vote: Any, provider: Any, watcher: Any
) -> None:
    """One question per interval: the challenger's reason settles nothing, and no window is extended."""
    task, k, dispute, panel = drawn(reason=UNAVAILABLE)
    window_end = tasks.challengeWindowEnd(task, k)
    vote(dispute, dict.fromkeys(panel, VALID))
    committee.resolve(dispute, sender=keeper)
    assert tasks.credits(provider) == 5 * 10**16 and tasks.credits(watcher) == 0
    assert [tasks.credits(p) for p in panel] == [3_333_333_333_333_333] * 3
    assert tasks.challengeWindowEnd(task, k) == tasks.getTask(task).challengeEnd == window_end
    assert tasks.getOpenedInterval(task, k).sound


def test_minority_voter_loses_its_penalty_to_the_majority(
    committee: Any, tasks: Any, keeper: Any, drawn: Any, vote: Any
) -> None:
    _, _, dispute, panel = drawn()
    majority, minority = panel[:2], panel[2]
    vote(dispute, {**dict.fromkeys(majority, FAULTY), minority: VALID})
    tx = committee.resolve(dispute, sender=keeper)
    assert events(tx, committee.Penalized, "dispute", "panelist", "amount") == [(dispute, minority, PENALTY)]
    assert events(tx, committee.Credited, "account", "source", "amount") == [
        (p, dispute, PENALTY // 2) for p in majority
    ]
    assert not tx.events.filter(committee.Burned) and committee.burned() == 0
    after = [committee.getAuditor(p) for p in panel]
    assert [(a.stake, a.locked) for a in after] == [(STAKE, 0), (STAKE, 0), (STAKE - PENALTY, 0)]
    assert [committee.credits(p) for p in panel] == [PENALTY // 2, PENALTY // 2, 0]
    assert committee.totalStake() == 3 * STAKE - PENALTY
    # Only the majority shares the panel fee (10% of the provider bond) in TrainingTasks.
    assert [tasks.credits(p) for p in panel] == [BOND // 10 // 2, BOND // 10 // 2, 0]


def test_non_revealer_loses_its_penalty_to_the_majority(
    committee: Any, tasks: Any, keeper: Any, drawn: Any, vote: Any, provider: Any
) -> None:
    _, _, dispute, panel = drawn()
    majority, silent = panel[:2], panel[2]
    vote(dispute, {**dict.fromkeys(majority, VALID), silent: 0})  # silent commits, never reveals
    tx = committee.resolve(dispute, sender=keeper)
    assert events(tx, committee.DisputeResolved, "verdict") == [(VALID,)]
    assert events(tx, committee.Penalized, "panelist", "amount") == [(silent, PENALTY)]
    assert [committee.getAuditor(p).stake for p in panel] == [STAKE, STAKE, STAKE - PENALTY]
    assert [committee.getAuditor(p).locked for p in panel] == [0, 0, 0]
    assert [committee.credits(p) for p in panel] == [PENALTY // 2, PENALTY // 2, 0] and committee.burned() == 0
    assert tasks.credits(provider) == CBOND // 2
    assert [tasks.credits(p) for p in panel] == [CBOND // 10 // 2, CBOND // 10 // 2, 0]


def test_tie_fails_the_round_burns_the_non_revealer_penalty_and_rearms(
    committee: Any, tasks: Any, keeper: Any, drawn: Any, vote: Any
) -> None:
    task, _, dispute, panel = drawn()
    vote(dispute, {panel[0]: VALID, panel[1]: FAULTY, panel[2]: 0})
    tx = committee.resolve(dispute, sender=keeper)
    assert events(tx, committee.RoundFailed, "dispute", "round") == [(dispute, 0)]
    assert events(tx, committee.Penalized, "panelist", "amount") == [(panel[2], PENALTY)]
    assert events(tx, committee.Burned, "source", "amount") == [(dispute, PENALTY)]
    assert not tx.events.filter(committee.DisputeResolved) and not tx.events.filter(tasks.DisputeSettled)
    assert committee.burned() == PENALTY and [committee.credits(p) for p in panel] == [0] * 3
    assert [committee.getAuditor(p).stake for p in panel] == [STAKE, STAKE, STAKE - PENALTY]
    assert [committee.getAuditor(p).locked for p in panel] == [0] * 3
    d = committee.getDispute(dispute)
    assert (d.status, d.round, d.armBlock, d.drawnAt) == (AWAITING_PANEL, 1, tx.block_number, 0)
    assert list(committee.panelOf(dispute)) == [] and committee.isOpen(dispute)
    assert tasks.getTask(task).openDisputes == 1
    with ape.reverts(committee.PanelNotReady, dispute=dispute, readyAt=tx.block_number + SEED_DELAY + 1):
        committee.drawPanel(dispute, sender=keeper)


def test_next_round_draws_seven_without_the_non_revealer_and_splits_penalties_with_floor(
    committee: Any,
    tasks: Any,
    chain: Any,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    dispute_of: Any,
    draw_panel: Any,
    vote: Any,
    provider: Any,
) -> None:
    register(auditors[:9])
    task, _, dispute = dispute_of()
    first = draw_panel(dispute)
    absent = first[2]  # never commits
    vote(dispute, {first[0]: VALID, first[1]: FAULTY})
    committee.resolve(dispute, sender=keeper)
    pool = [a for a in addresses(auditors[:9]) if a != absent]
    panel = draw_panel(dispute)
    assert len(panel) == committee.panelSizeOf(1) == 7
    assert panel == expected_panel(committee, chain, dispute, pool) and absent not in panel
    assert [committee.getAuditor(a).locked for a in pool] == [PENALTY if a in panel else 0 for a in pool]
    # Round 1: three valid, two faulty, one commits without revealing, one never commits.
    winners, losers = panel[:3], panel[3:]
    vote(dispute, {**dict.fromkeys(winners, VALID), **dict.fromkeys(panel[3:5], FAULTY), panel[5]: 0})
    tx = committee.resolve(dispute, sender=keeper)
    assert events(tx, committee.DisputeResolved, "dispute", "task", "verdict", "round") == [(dispute, task, VALID, 1)]
    assert events(tx, committee.Penalized, "panelist", "amount") == [(p, PENALTY) for p in losers]
    share = 4 * PENALTY // 3  # 133_333_333_333_333_333 each, 1 wei of dust
    assert [committee.credits(p) for p in winners] == [share] * 3
    assert events(tx, committee.Burned, "amount") == [(1,)]
    assert committee.burned() == PENALTY + 1  # round 0's non-revealer, then the dust
    assert [committee.getAuditor(p).stake for p in panel] == [STAKE] * 3 + [STAKE - PENALTY] * 4
    assert committee.getAuditor(absent).stake == STAKE - PENALTY
    assert [committee.getAuditor(a).locked for a in pool] == [0] * 8
    # TrainingTasks pays the valid out_of_bounds split to the three-strong majority.
    assert tasks.credits(provider) == CBOND // 2
    assert [tasks.credits(p) for p in panel] == [CBOND // 10 // 3] * 3 + [0] * 4
    assert tasks.burned() == CBOND - CBOND // 2 - 3 * (CBOND // 10 // 3)


def test_no_majority_through_the_last_round_ends_with_no_decision(
    committee: Any,
    tasks: Any,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    dispute_of: Any,
    draw_panel: Any,
    vote: Any,
    watcher: Any,
) -> None:
    """Nobody votes in any round; each round bars its panel, so round 2 (15 wanted) seats the largest odd
    panel of the 10 auditors left."""
    register(auditors)
    task, k, dispute = dispute_of()
    sizes = []
    for round_ in range(COMMITTEE["maxRounds"]):
        sizes.append(len(draw_panel(dispute)))
        vote(dispute, {})
        tx = committee.resolve(dispute, sender=keeper)
        assert events(tx, committee.RoundFailed, "dispute", "round") == [(dispute, round_)]
    assert sizes == [3, 7, 9]
    assert events(tx, committee.DisputeResolved, "dispute", "task", "verdict", "round") == [
        (dispute, task, NO_DECISION, 2)
    ]
    assert events(tx, tasks.DisputeSettled, "dispute", "k", "verdict") == [(dispute, k, NO_DECISION)]
    d = committee.getDispute(dispute)
    assert (d.status, d.verdict, d.round) == (RESOLVED, NO_DECISION, 2)
    assert committee.burned() == 19 * PENALTY
    stakes = sorted(committee.getAuditor(a).stake for a in auditors)
    assert stakes == [STAKE - PENALTY] * 19 + [STAKE]
    assert all(committee.getAuditor(a).locked == 0 for a in auditors)
    assert tasks.getTask(task).heldBonds == 1  # the joined bond waits for claimBond
    t = tasks.getTask(task)
    assert (t.status, t.openDisputes) == (COMMITTED, 0)


def test_moot_dispute_resolves_at_once_refunded_and_released_without_penalty(
    committee: Any,
    tasks: Any,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    opened_task: Any,
    challenge: Any,
    draw_panel: Any,
    vote: Any,
    signer: Any,
    watcher: Any,
    watcher2: Any,
) -> None:
    """Three disputes on one task: the first is upheld faulty; the second (voting) and the third (awaiting
    its panel) are then moot."""
    register(auditors[:4])
    task, _ = opened_task(**SMALL)
    k1, k2, k3, _ = tasks.sampledIntervals(task, 0)
    upheld, voting, waiting = challenge(task, k1, watcher), challenge(task, k2, watcher2), challenge(task, k3, keeper)
    first = draw_panel(upheld)
    vote(upheld, dict.fromkeys(first, FAULTY))
    second = draw_panel(voting)
    committee.commitVote(voting, vote_commitment(voting, 0, VALID, SALT, second[0]), sender=signer(second[0]))
    pool = addresses(auditors[:4])
    seats = [(a in first) + (a in second) for a in pool]
    assert [committee.getAuditor(a).locked for a in pool] == [PENALTY * n for n in seats]
    committee.resolve(upheld, sender=keeper)
    assert tasks.getTask(task).status == SLASHED
    assert tasks.isMoot(voting) and tasks.isMoot(waiting)
    commit_end = committee.getDispute(voting).drawnAt + COMMIT_WINDOW
    for dispute, challenger, k, status in ((voting, watcher2, k2, VOTING), (waiting, keeper, k3, AWAITING_PANEL)):
        assert committee.getDispute(dispute).status == status
        tx = committee.resolve(dispute, sender=keeper)
        assert tx.timestamp < commit_end  # at once: no window waited for
        assert events(tx, committee.DisputeResolved, "dispute", "task", "verdict") == [(dispute, task, MOOT)]
        assert events(tx, tasks.DisputeSettled, "dispute", "verdict") == [(dispute, MOOT)]
        assert not tx.events.filter(committee.Penalized) and not tx.events.filter(committee.Burned)
        assert (committee.getDispute(dispute).status, committee.getDispute(dispute).verdict) == (RESOLVED, MOOT)
        assert tasks.getDispute(dispute).verdict == MOOT  # its joined bond is claimed back with claimBond
        commitment = challenge_commitment(task, k, OUT_OF_BOUNDS, b"\x07" * 32, challenger.address)
        tasks.claimBond(task, challenger.address, commitment, sender=keeper)
        assert tasks.credits(challenger) == CBOND
    assert [(committee.getAuditor(a).stake, committee.getAuditor(a).locked) for a in pool] == [(STAKE, 0)] * 4
    assert [committee.credits(a) for a in pool] == [0] * 4 and committee.burned() == 0
    assert tasks.getTask(task).openDisputes == 0


# --- exit and withdraw ---------------------------------------------------------------------------


def test_request_exit_records_when_the_cooldown_ends(committee: Any, auditors: list[Any], register: Any) -> None:
    auditor = auditors[0]
    register([auditor], warm=False)
    tx = committee.requestExit(sender=auditor)
    assert events(tx, committee.AuditorExitRequested, "auditor", "exitAt") == [
        (auditor.address, tx.timestamp + COOLDOWN)
    ]
    a = committee.getAuditor(auditor)
    assert (a.stake, a.locked, a.exitRequestedAt) == (STAKE, 0, tx.timestamp)


def test_request_exit_twice_or_unregistered_reverts(committee: Any, auditors: list[Any], register: Any) -> None:
    auditor, stranger = auditors[0], auditors[1]
    register([auditor], warm=False)
    with ape.reverts(committee.ExitNotRequested, auditor=auditor.address):
        committee.exit(sender=auditor)
    committee.requestExit(sender=auditor)
    before = snapshot(committee, 0, auditor.address, stranger.address)
    with ape.reverts(committee.ExitAlreadyRequested, auditor=auditor.address):
        committee.requestExit(sender=auditor)
    for call in (committee.requestExit, committee.exit):
        with ape.reverts(committee.NotRegistered, account=stranger.address):
            call(sender=stranger)
    assert snapshot(committee, 0, auditor.address, stranger.address) == before


def test_exit_before_the_cooldown_ends_reverts(committee: Any, chain: Any, auditors: list[Any], register: Any) -> None:
    auditor = auditors[0]
    register([auditor], warm=False)
    exit_at = committee.requestExit(sender=auditor).timestamp + COOLDOWN
    before = snapshot(committee, 0, auditor.address)
    chain.pending_timestamp = exit_at - 1
    with ape.reverts(committee.CooldownNotOver, auditor=auditor.address, endsAt=exit_at):
        committee.exit(sender=auditor)
    assert snapshot(committee, 0, auditor.address) == before
    chain.pending_timestamp = exit_at
    committee.exit(sender=auditor)
    assert committee.credits(auditor) == STAKE


def test_exit_credits_the_stake_and_withdraw_pays_it_to_the_wei(
    committee: Any, chain: Any, auditors: list[Any], register: Any
) -> None:
    auditor = auditors[0]
    register([auditor], warm=False)
    chain.pending_timestamp = committee.requestExit(sender=auditor).timestamp + COOLDOWN
    tx = committee.exit(sender=auditor)
    assert events(tx, committee.AuditorExited, "auditor", "stake") == [(auditor.address, STAKE)]
    assert events(tx, committee.Credited, "account", "source", "amount") == [(auditor.address, 0, STAKE)]
    a = committee.getAuditor(auditor)
    assert (a.stake, a.locked, a.registeredBlock, a.exitRequestedAt) == (0, 0, 0, 0)
    assert (committee.auditorCount(), committee.totalStake(), committee.credits(auditor)) == (0, 0, STAKE)
    assert committee.balance == STAKE  # still held: pulled, never pushed
    balance = auditor.balance
    tx = committee.withdraw(sender=auditor)
    assert events(tx, committee.Withdrawn, "account", "amount") == [(auditor.address, STAKE)]
    assert auditor.balance == balance + STAKE - tx.total_fees_paid
    assert committee.credits(auditor) == 0 and committee.balance == 0
    with ape.reverts(committee.NothingToWithdraw, account=auditor.address):
        committee.withdraw(sender=auditor)
    # Registering again starts afresh.
    tx = committee.register(sender=auditor, value=STAKE)
    a = committee.getAuditor(auditor)
    assert (a.stake, a.locked, a.registeredBlock, a.exitRequestedAt) == (STAKE, 0, tx.block_number, 0)
    assert committee.auditorCount() == 1


def test_exit_with_stake_locked_on_a_panel_reverts_until_the_dispute_resolves(
    committee: Any, chain: Any, keeper: Any, drawn: Any, vote: Any, signer: Any
) -> None:
    _, _, dispute, panel = drawn()
    leaver = signer(panel[0])
    exit_at = committee.requestExit(sender=leaver).timestamp + COOLDOWN  # a panelist still votes
    vote(dispute, {**dict.fromkeys(panel, FAULTY), leaver.address: VALID})  # ... and loses its penalty
    chain.pending_timestamp = exit_at
    before = snapshot(committee, dispute, leaver.address)
    with ape.reverts(committee.StakeLocked, auditor=leaver.address, locked=PENALTY):
        committee.exit(sender=leaver)
    assert snapshot(committee, dispute, leaver.address) == before
    committee.resolve(dispute, sender=keeper)
    tx = committee.exit(sender=leaver)  # what is left of the stake
    assert events(tx, committee.AuditorExited, "auditor", "stake") == [(leaver.address, STAKE - PENALTY)]
    assert committee.credits(leaver) == STAKE - PENALTY and committee.auditorCount() == 2


def test_exit_moves_the_last_auditor_into_the_freed_registry_slot(
    committee: Any,
    chain: Any,
    auditors: list[Any],
    register: Any,
    dispute_of: Any,
    draw_panel: Any,
) -> None:
    """The registry order decides who is drawn: after auditors[0] exits, the pool is [4, 1, 2, 3]."""
    register(auditors[:5])
    chain.pending_timestamp = committee.requestExit(sender=auditors[0]).timestamp + COOLDOWN
    committee.exit(sender=auditors[0])
    assert (committee.auditorCount(), committee.totalStake()) == (4, 4 * STAKE)
    _, _, dispute = dispute_of()
    panel = draw_panel(dispute)
    assert panel == expected_panel(committee, chain, dispute, addresses([auditors[4], *auditors[1:4]]))


def test_withdraw_without_credit_reverts(committee: Any, auditors: list[Any], register: Any) -> None:
    auditor = auditors[0]
    register([auditor], warm=False)  # a stake is not a credit
    before = snapshot(committee, 0, auditor.address)
    with ape.reverts(committee.NothingToWithdraw, account=auditor.address):
        committee.withdraw(sender=auditor)
    assert snapshot(committee, 0, auditor.address) == before
