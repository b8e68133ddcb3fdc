"""Contract test fixtures: role-named accounts, contracts deployed once per session, a task factory.

Ape's pytest plugin runs these on its own anvil (random port) and reverts the chain after every
test, so each test starts from the state the session and module fixtures built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import (
    AUDITOR_STAKE,
    AWAITING_PANEL,
    COMMITTEE,
    DEFAULTS,
    OUT_OF_BOUNDS,
    VALID,
    Evidence,
    challenge_commitment,
    deploy_pair,
    post_args,
    sampled_intervals,
    settle,
    task_escrow,
    vote_commitment,
)


def _cache_test_accounts() -> None:
    """Ape derives every test account's key again (pure-Python HD derivation, about 20 ms each) each
    time something iterates the accounts, which the balance checks do after every transaction; the
    keys never change within a session, so derive each once. A speed-up only: same accounts, same keys.
    """
    from ape_test.accounts import TestAccountContainer

    derive = TestAccountContainer.get_test_account
    cache: dict[tuple[Any, ...], Any] = {}

    def cached(self: Any, index: int) -> Any:
        key = (self.mnemonic, self.hd_path, index)
        if key not in cache:
            cache[key] = derive(self, index)
        return cache[key]

    TestAccountContainer.get_test_account = cached  # type: ignore[method-assign]


_cache_test_accounts()


def _check_code_once_per_state() -> None:
    """On a development network ape fetches a contract's whole bytecode before every call, to check that there
    is code at its address (about 50 KB of JSON for TrainingTasks, the most expensive part of a call). Code at
    an address appears with a deployment and goes only with a revert of the chain (ours never self-destruct),
    so an address found with code needs no second look until ape next restores a snapshot (after every test).
    A speed-up only: the same check, whenever its answer could have changed."""
    from ape.contracts.base import ContractMethodHandler
    from ape.managers.chain import ChainManager

    if not hasattr(ContractMethodHandler, "_validate_is_contract"):  # another Ape 0.8: its own check, every call
        return
    has_code: set[str] = set()
    validate, restore = ContractMethodHandler._validate_is_contract, ChainManager.restore

    def validate_once(self: Any) -> None:
        if self.contract.address not in has_code:
            validate(self)
            has_code.add(self.contract.address)

    def restore_and_forget(self: Any, snapshot_id: Any = None) -> None:
        has_code.clear()
        restore(self, snapshot_id)

    ContractMethodHandler._validate_is_contract = validate_once  # type: ignore[method-assign]
    ChainManager.restore = restore_and_forget  # type: ignore[method-assign]


_check_code_once_per_state()


@pytest.fixture(scope="session")
def owner(accounts: Any) -> Any:
    return accounts[0]


@pytest.fixture(scope="session")
def provider(accounts: Any) -> Any:
    return accounts[1]


@pytest.fixture(scope="session")
def watcher(accounts: Any) -> Any:
    return accounts[2]


@pytest.fixture(scope="session")
def watcher2(accounts: Any) -> Any:
    return accounts[3]


@pytest.fixture(scope="session")
def auditors(accounts: Any) -> list[Any]:
    """Thirty auditors (none of them owner, provider, watchers or keeper)."""
    return list(accounts[7:37])


@pytest.fixture(scope="session")
def keeper(accounts: Any) -> Any:
    return accounts[6]


@pytest.fixture(scope="session")
def mirror(project: Any, owner: Any) -> Any:
    return owner.deploy(project.ProtocolMirror)


@pytest.fixture(scope="session")
def deployed_pair(project: Any, owner: Any) -> tuple[Any, Any]:
    return deploy_pair(project, owner)


@pytest.fixture(scope="session")
def committee(deployed_pair: tuple[Any, Any]) -> Any:
    return deployed_pair[0]


@pytest.fixture(scope="session")
def tasks(deployed_pair: tuple[Any, Any]) -> Any:
    return deployed_pair[1]


@pytest.fixture
def post_task(tasks: Any, owner: Any, chain: Any) -> Callable[..., int]:
    """Factory: post a task with DEFAULTS overridden by keyword; returns its id."""

    def post(*, sender: Any = None, deadline: int | None = None, **overrides: Any) -> int:
        terms = {**DEFAULTS, **overrides}
        if deadline is None:
            deadline = chain.pending_timestamp + 30 * 24 * 3600
        tasks.postTask(
            *post_args(terms, deadline),
            sender=sender or owner,
            value=terms["reward"],
        )
        return tasks.taskCount()

    return post


@pytest.fixture
def accepted_task(tasks: Any, provider: Any, post_task: Callable[..., int]) -> int:
    """A default task, accepted by `provider`."""
    task = post_task()
    tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    return task


@pytest.fixture
def evidence(tasks: Any) -> Callable[[int], Evidence]:
    """Factory: the honest provider's evidence for a task, with the task's on-chain terms."""

    def make(task: int) -> Evidence:
        terms = tasks.getTask(task).terms
        return Evidence(task, terms.totalSteps, terms.stride, terms.intervalsPerBatch, bytes(terms.initDigest))

    return make


@pytest.fixture
def commit(tasks: Any, provider: Any) -> Callable[..., None]:
    """Commit batches `js` (default: all) of `ev`'s task with honest roots."""

    def run(ev: Evidence, js: Any = None) -> None:
        for j in range(ev.batches) if js is None else js:
            tasks.commitBatch(ev.task, j, ev.tree(j).root, f"bafymanifest{j}", sender=provider)

    return run


@pytest.fixture
def reach(chain: Any) -> Callable[[int], None]:
    """Make the randomness target ready for the next transaction: with the suite's BlockhashRandomness, mine
    past its block (a module on DrandBeacon overrides this fixture)."""

    def run(target: int) -> None:
        if chain.blocks.height + 1 < target + 1:
            chain.mine(target - chain.blocks.height)

    return run


@pytest.fixture
def draw(tasks: Any, keeper: Any, reach: Callable[[int], None]) -> Callable[[int, int], list[int]]:
    """Reach batch j's randomness target, draw its sample, return the sampled intervals, ascending."""

    def run(task: int, j: int) -> list[int]:
        reach(tasks.getBatch(task, j).seedTarget)
        tasks.drawSeed(task, j, sender=keeper)
        return sampled_intervals(tasks, task, j)

    return run


@pytest.fixture
def open_batch(tasks: Any, provider: Any) -> Callable[..., Any]:
    """Open batch j with honest openings of its sampled intervals."""

    def run(ev: Evidence, j: int) -> Any:
        openings = [ev.opening(k) for k in sampled_intervals(tasks, ev.task, j)]
        return tasks.openBatch(ev.task, j, f"bafyopening{j}", openings, sender=provider)

    return run


@pytest.fixture
def register(committee: Any, chain: Any) -> Callable[..., None]:
    """Register `who` as auditors, then mine past the warm-up so they are eligible for later reveals."""

    def run(who: Any, *, warm: bool = True) -> None:
        for auditor in who:
            committee.register(sender=auditor, value=AUDITOR_STAKE)
        if warm:
            chain.mine(COMMITTEE["warmupBlocks"])

    return run


@pytest.fixture
def opened_task(
    tasks: Any,
    post_task: Callable[..., int],
    provider: Any,
    evidence: Callable[[int], Evidence],
    commit: Callable[..., None],
    draw: Callable[[int, int], list[int]],
    open_batch: Callable[..., Any],
) -> Callable[..., tuple[int, Evidence]]:
    """Factory: a task (DEFAULTS overridden by keyword) accepted, every batch committed, drawn and opened;
    returns its id and evidence. Challenge windows are open."""

    def make(**overrides: Any) -> tuple[int, Evidence]:
        task = post_task(**overrides)
        tasks.acceptTask(task, sender=provider, value=tasks.getTask(task).terms.providerBond)
        ev = evidence(task)
        commit(ev)
        for j in range(ev.batches):
            draw(task, j)
            open_batch(ev, j)
        return task, ev

    return make


@pytest.fixture
def all_sampled(opened_task: Callable[..., tuple[int, Evidence]]) -> tuple[int, Evidence]:
    """A task whose every interval is sampled and opened (so k = 0 and k = j*m are too)."""
    return opened_task(sampleBps=10_000)


@pytest.fixture
def panel_of_three(register: Callable[..., None], auditors: list[Any]) -> list[Any]:
    """Three registered, warmed-up auditors: every round-0 panel is exactly them."""
    register(auditors[:3])
    return auditors[:3]


@pytest.fixture
def challenge(tasks: Any) -> Callable[..., int]:
    """Commit and reveal a challenge of interval k; returns the dispute opened (0: refunded)."""

    def run(task: int, k: int, challenger: Any, reason: int = OUT_OF_BOUNDS, salt: bytes = b"\x07" * 32) -> int:
        bond = tasks.getTask(task).terms.challengerBond
        commitment = challenge_commitment(task, k, reason, salt, challenger.address)
        tasks.commitChallenge(task, commitment, sender=challenger, value=bond)
        tx = tasks.revealChallenge(task, k, reason, salt, "bafyreport", sender=challenger)
        return next(iter(tx.events.filter(tasks.ChallengeRevealed))).dispute

    return run


@pytest.fixture
def draw_panel(committee: Any, keeper: Any, reach: Callable[[int], None]) -> Callable[[int], list[str]]:
    """Reach the dispute's randomness target, draw its panel (as many calls as it takes), return the
    panelists. When the draw spends its tries with too few seated (a pool barely as large as the round, as
    a test that uses every auditor has), it re-arms and draws anew, as a keeper does."""

    def run(dispute: int) -> list[str]:
        reach(committee.panelTarget(dispute))
        while (d := committee.getDispute(dispute)).status == AWAITING_PANEL:
            if d.tries >= 16 * committee.panelSizeOf(d.round):  # PanelDraw.TRIES_PER_SEAT
                committee.rearm(dispute, sender=keeper)
                reach(committee.panelTarget(dispute))
                continue
            committee.drawPanel(dispute, sender=keeper)
        return list(committee.panelOf(dispute))

    return run


@pytest.fixture
def vote(committee: Any, chain: Any, accounts: Any) -> Callable[..., None]:
    """Run the current round's vote: panelists in `votes` commit and reveal their vote (0: commit and
    never reveal; absent: do nothing); then time moves past the reveal window."""

    def run(dispute: int, votes: dict[str, int]) -> None:
        d = committee.getDispute(dispute)
        by_address = {a.address: a for a in accounts}
        salt = b"\x5e" * 32
        for address, choice in votes.items():
            commitment = vote_commitment(dispute, d.run, choice or VALID, salt, address)
            committee.commitVote(dispute, commitment, sender=by_address[address])
        commit_end = d.drawnAt + committee.COMMIT_WINDOW()
        chain.pending_timestamp = commit_end
        for address, choice in votes.items():
            if choice:
                committee.revealVote(dispute, choice, salt, sender=by_address[address])
        chain.pending_timestamp = commit_end + committee.REVEAL_WINDOW()

    return run


@pytest.fixture
def decide(committee: Any, draw_panel: Any, vote: Any, keeper: Any) -> Callable[[int, int], list[str]]:
    """Every seated panelist votes ``verdict``; the dispute resolves (its appeal window waited out)."""

    def run(dispute: int, verdict: int) -> list[str]:
        panel = draw_panel(dispute)
        vote(dispute, dict.fromkeys(panel, verdict))
        settle(committee, dispute, keeper)
        return panel

    return run


def read_views(contract: Any, calls: list[tuple[Any, ...]]) -> list[Any]:
    """The values of view calls ``(name, *args)`` of ``contract``, in one JSON-RPC batch at the latest block,
    each decoded as ape decodes a call (a struct keeps its field names). The balance checks read about ninety
    views after every transaction: one by one, ape's calls were a quarter of the contract tests' CPU."""
    if not calls:
        return []
    ecosystem = contract.provider.network.ecosystem
    views = {abi.name: abi for abi in contract.contract_type.view_methods}
    requests = []
    for name, *args in calls:
        data = ecosystem.get_method_selector(views[name]) + ecosystem.encode_calldata(views[name], *args)
        requests.append(("eth_call", [{"to": contract.address, "data": "0x" + data.hex()}, "latest"]))
    responses = contract.provider.web3.provider.make_batch_request(requests)
    values = []
    for (name, *_), response in zip(calls, responses, strict=True):
        assert "error" not in response, f"{name}: {response['error']}"
        decoded = ecosystem.decode_returndata(views[name], bytes.fromhex(response["result"][2:]))
        values.append(decoded[0] if len(decoded) == 1 else decoded)
    return values


def held_for_others(tasks: Any, accounts: Any, *extra: Any) -> int:
    """What TrainingTasks owes (protocol 4.3): every task's escrow (`task_escrow`), every known account's
    credit, and `burned`."""
    holders = sorted(_distinct(accounts, extra))
    count, burned, *credits = read_views(tasks, [("taskCount",), ("burned",), *(("credits", a) for a in holders)])
    escrow = sum(map(task_escrow, read_views(tasks, [("getTask", task) for task in range(1, count + 1)])))
    return escrow + sum(credits) + burned


def committee_holds(committee: Any, accounts: Any, *extra: Any) -> int:
    """What AuditCommittee owes (protocol 4.3): stakes, appeal bonds held, the panel's money of resolved
    disputes whose seats are not settled yet, every known account's credit, and `burned`."""
    totals = [("totalStake",), ("heldAppealBonds",), ("heldForSeats",), ("burned",)]
    return sum(read_views(committee, [*totals, *(("credits", a) for a in sorted(_distinct(accounts, extra)))]))


def _distinct(accounts: Any, extra: Any) -> set[str]:
    """Addresses of the test accounts and `extra` accounts or contracts, each once."""
    return {a.address for a in [*accounts, *extra]}


@pytest.fixture
def balance_invariant(tasks: Any, committee: Any, accounts: Any) -> Iterator[Callable[..., None]]:
    """Assert both contracts' balance invariants now (call it after transactions); asserted again after
    the test."""

    known: list[Any] = []

    def check(*extra: Any) -> None:
        known.extend(extra)
        assert tasks.balance == held_for_others(tasks, accounts, *known)
        assert committee.balance == committee_holds(committee, accounts, *known)

    yield check
    check()
