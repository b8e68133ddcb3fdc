"""Both draws on the drand backend: TrainingTasks and AuditCommittee wired to a DrandBeacon with the devnet
beacon's published key. A batch's commit and a round's arm name the first round DELAY seconds later; the
draw waits until someone submits that round (BLS-verified on-chain); the sample and the panel are the
ones the off-chain mirror (ovig_node.protocol) computes from the round's randomness; a round submitted once
serves every draw that targets it.

The rest of the contract suite runs on BlockhashRandomness (a target is a block: fast to reach)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ape
import pytest
from helpers import DEFAULTS, deploy_pair, module_pair, sampled_intervals

from ovig_node.devnet.beacon import DEVNET_BEACON_SECRET, devnet_network
from ovig_node.protocol import drand
from ovig_node.protocol.panel import draw_panel as mirror_panel
from ovig_node.protocol.panel import panel_seed
from ovig_node.protocol.sampling import batch_seed, draw_positions

DELAY = 6  # seconds: two of the beacon's 3-second rounds
ZERO_ADDRESS = "0x" + "00" * 20


def signature(round_: int) -> bytes:
    """Round ``round_``'s signature by the devnet beacon, in the encoding submitRound takes."""
    return drand.g1_for_contract(drand.sign(DEVNET_BEACON_SECRET, round_))


@pytest.fixture(scope="module")
def network(chain: Any) -> drand.Network:
    return devnet_network(genesis=chain.pending_timestamp - 3_000, period=3)


@pytest.fixture(scope="module")
def beacon(project: Any, owner: Any, network: drand.Network) -> Any:
    key = drand.g2_for_contract(network.public_key)
    return owner.deploy(project.DrandBeacon, key, network.genesis, network.period, DELAY)


# The suite's module-scoped committee and tasks, from this module's deployed_pair below.
_, committee, tasks = module_pair("unused: overridden below")


@pytest.fixture(scope="module")
def deployed_pair(project: Any, owner: Any, beacon: Any) -> tuple[Any, Any]:
    """The suite's pair, on the drand backend."""
    return deploy_pair(project, owner, randomness=beacon)


@pytest.fixture
def reach(beacon: Any, network: drand.Network, chain: Any, keeper: Any) -> Callable[[int], None]:
    """Wait (in chain time) for drand round ``target`` and submit it, as a keeper does."""

    def run(target: int) -> None:
        if chain.pending_timestamp < network.round_time(target):
            chain.pending_timestamp = network.round_time(target)
        beacon.submitRound(target, signature(target), sender=keeper)

    return run


def test_a_batch_samples_from_the_first_round_delay_after_its_commit(
    tasks: Any,
    beacon: Any,
    network: drand.Network,
    provider: Any,
    keeper: Any,
    accepted_task: int,
    evidence: Any,
    chain: Any,
) -> None:
    assert tasks.RANDOMNESS() == beacon.address
    ev = evidence(accepted_task)
    tx = tasks.commitBatch(accepted_task, 0, ev.tree(0).root, "bafym0", sender=provider)
    target = tasks.getBatch(accepted_task, 0).seedTarget
    assert target == network.round_at(tx.timestamp + DELAY)
    assert network.round_time(target) >= tx.timestamp + DELAY  # published after the commit: nobody knew it
    # Not submitted: no draw, even ten minutes after the round's time.
    chain.pending_timestamp = network.round_time(target) + 600
    with ape.reverts(tasks.SeedNotReady, task=accepted_task, j=0, target=target):
        tasks.drawSeed(accepted_task, 0, sender=keeper)
    # Another round's signature is not this round's.
    with ape.reverts(beacon.InvalidBeaconSignature, round=target):
        beacon.submitRound(target, signature(target + 1), sender=keeper)
    beacon.submitRound(target, signature(target), sender=keeper)
    tasks.drawSeed(accepted_task, 0, sender=keeper)
    value = drand.randomness(drand.sign(DEVNET_BEACON_SECRET, target))
    b = tasks.getBatch(accepted_task, 0)
    assert bytes(b.seed) == batch_seed(value, accepted_task, 0)
    m = DEFAULTS["intervalsPerBatch"]
    positions = draw_positions(bytes(b.seed), m, DEFAULTS["sampleBps"], is_last=False)
    assert sampled_intervals(tasks, accepted_task, 0) == sorted(positions)


def test_a_round_submitted_once_serves_every_draw_that_targets_it(
    tasks: Any,
    beacon: Any,
    network: drand.Network,
    provider: Any,
    keeper: Any,
    post_task: Callable[..., int],
    evidence: Any,
    chain: Any,
) -> None:
    first, second = post_task(), post_task()
    for task in (first, second):
        tasks.acceptTask(task, sender=provider, value=DEFAULTS["providerBond"])
    # Two commits a second apart, both within one round's period: the same target round.
    t = chain.pending_timestamp + 1
    while (t + DELAY - network.genesis) % network.period != 1:
        t += 1
    for second_of, task in enumerate((first, second)):
        chain.pending_timestamp = t + second_of
        tasks.commitBatch(task, 0, evidence(task).tree(0).root, "bafym0", sender=provider)
    target = tasks.getBatch(first, 0).seedTarget
    assert tasks.getBatch(second, 0).seedTarget == target
    chain.pending_timestamp = network.round_time(target)
    submitted = beacon.submitRound(target, signature(target), sender=keeper)
    again = beacon.submitRound(target, b"", sender=keeper)  # already there: nothing checked, nothing changed
    assert again.return_value == submitted.return_value == beacon.randomnessOf(target)
    tasks.drawSeed(first, 0, sender=keeper)
    tasks.drawSeed(second, 0, sender=keeper)
    value = beacon.randomnessOf(target)
    for task in (first, second):
        assert bytes(tasks.getBatch(task, 0).seed) == batch_seed(value, task, 0)


def test_a_panel_is_drawn_from_the_first_round_delay_after_its_arm(
    tasks: Any,
    committee: Any,
    beacon: Any,
    network: drand.Network,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    opened_task: Any,
    challenge: Any,
    watcher: Any,
    reach: Callable[[int], None],
) -> None:
    register(auditors[:5])
    task, _ = opened_task(totalSteps=400, intervalsPerBatch=4, sampleBps=10_000)
    dispute = challenge(task, 0, watcher)
    d = committee.getDispute(dispute)
    target = committee.panelTarget(dispute)
    assert target == network.round_at(d.armedAt + DELAY) and network.round_time(target) >= d.armedAt + DELAY
    with ape.reverts(committee.PanelNotReady, dispute=dispute, target=target):
        committee.drawPanel(dispute, sender=keeper)
    reach(target)
    committee.drawPanel(dispute, sender=keeper)
    as_of = d.armBlock - 1
    occupants = [committee.occupantAt(s, as_of) for s in range(committee.slotCountAt(as_of))]
    seed = panel_seed(beacon.randomnessOf(target), dispute, d.round)
    eligible = {a.address for a in auditors[:5]}
    expected = mirror_panel(
        seed,
        [None if o == ZERO_ADDRESS else o for o in occupants],
        eligible.__contains__,
        committee.panelSizeOf(d.round),
    )
    assert list(committee.panelOf(dispute)) == expected


def test_a_draw_past_its_delay_re_arms_to_a_later_round(
    committee: Any,
    keeper: Any,
    register: Any,
    auditors: list[Any],
    opened_task: Any,
    challenge: Any,
    watcher: Any,
    network: drand.Network,
    chain: Any,
) -> None:
    """A round nobody submits never goes (unlike a block hash): the draw expires by time, and the re-armed
    round names a new target, after the re-arm."""
    register(auditors[:3])
    task, _ = opened_task(totalSteps=400, intervalsPerBatch=4, sampleBps=10_000)
    dispute = challenge(task, 0, watcher)
    first = committee.panelTarget(dispute)
    with ape.reverts(committee.CannotRearm, dispute=dispute):
        committee.rearm(dispute, sender=keeper)
    chain.pending_timestamp = committee.getDispute(dispute).armedAt + committee.MAX_DRAW_DELAY()
    tx = committee.rearm(dispute, sender=keeper)
    second = committee.panelTarget(dispute)
    assert second == network.round_at(tx.timestamp + DELAY) > first


def test_a_round_nobody_submits_for_a_day_samples_every_interval(
    tasks: Any,
    beacon: Any,
    network: drand.Network,
    provider: Any,
    keeper: Any,
    accepted_task: int,
    evidence: Any,
    chain: Any,
) -> None:
    """A halted drand (or nobody submitting) never locks a task: a day after its time the target is gone and
    the batch samples everything, which only a cheating provider minds (it could have submitted the round)."""
    ev = evidence(accepted_task)
    tasks.commitBatch(accepted_task, 0, ev.tree(0).root, "bafym0", sender=provider)
    target = tasks.getBatch(accepted_task, 0).seedTarget
    chain.pending_timestamp = network.round_time(target) + beacon.TARGET_LIFETIME() - 1
    with ape.reverts(tasks.SeedNotReady, task=accepted_task, j=0, target=target):
        tasks.drawSeed(accepted_task, 0, sender=keeper)
    chain.pending_timestamp = network.round_time(target) + beacon.TARGET_LIFETIME()
    tasks.drawSeed(accepted_task, 0, sender=keeper)
    b = tasks.getBatch(accepted_task, 0)
    assert bytes(b.seed) == b"\x00" * 32 and b.sampledBitmap == (1 << DEFAULTS["intervalsPerBatch"]) - 1
