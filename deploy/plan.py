"""What `ovig deploy` deploys, in order (run by ovig_node.chain.deploy.run_plan).

Each `deployer.deploy(Name, *constructor_args)` deploys the compiled artifact `Name`, or reuses the
copy already recorded for this chain if its code and arguments are unchanged. The randomness backend
comes first (`deployer.randomness` says which: DrandBeacon for drand's network, or BlockhashRandomness on
a devnet); TrainingTasks and AuditCommittee both read it. They name each other immutably: the committee
is deployed first, at the address the task contract will get, and the task contract's constructor checks
the wiring.
"""

from __future__ import annotations

from web3.contract import Contract

from ovig_node.chain.deploy import Deployer
from ovig_node.chain.errors import DeploymentError
from ovig_node.protocol.drand import g2_for_contract

SEED_DELAY = 2  # blocks, BlockhashRandomness: neither an action's block nor the next decides its draw
# Seconds from an action's block timestamp to the earliest time of its drand round. It must exceed how far
# a block's timestamp can lag the moment its builder has seen drand's latest round: on Ethereum a slot
# (12 s), so 30 s with a margin; a rollup whose sequencer may stamp blocks further in the past needs more.
DRAND_DELAY = 30
KEEPER_BPS = 1_000  # basis points of the provider bond

# Payout shares of protocol 4.2, in bps, the recommended split: (faulty: lead challenger, panel, owner
# of the provider bond; sound: provider, panel, burned of every joined challenger bond). The lead's
# share is small because the provider may lead its own dispute.
SHARES = (2_000, 1_000, 7_000, 5_000, 1_000, 4_000)
ETHER = 10**18
# The smallest bonds a task may carry (protocol 4.2): a junk challenge costs at least 0.01 ETH, of which
# the panel's 10% pays for its replays; a provider bonds at least 0.1 ETH.
MIN_PROVIDER_BOND = ETHER // 10
MIN_CHALLENGER_BOND = ETHER // 100
MIN_BONDS = (MIN_PROVIDER_BOND, MIN_CHALLENGER_BOND)
# Targeted openings (protocol 8.3) one requester may ask of a batch: a watcher's layer one asks for the intervals
# it finds most anomalous; each request makes the provider open one more interval, so a few per batch. Per
# requester, so a provider's sock puppets cannot fill a batch's room first; each request costs its own bond.
MAX_REQUESTS_PER_BATCH = 4

HOUR = 3600
DEVNET_CHAIN_ID = 31337
# What a second of declared replay is worth to a panelist, in wei: a task's provider bond must pay round 0's
# three replays from its 10% panel share (at the cap of 2,700 s: 0.0081 ETH, under the minimum bond's 0.01).
REPLAY_PRICE = 10**12
# CommitteeParams: penalty, overlap L (eligibility needs L x penalty, registering (L + 2) x penalty),
# warmupBlocks, cooldown, commitWindow, revealWindow, appealWindow, maxDrawDelay, starvationTimeout,
# maxReplaySeconds, panelSize, maxRounds, panelBps, replayPrice.
COMMITTEE = (
    ETHER // 8,  # penalty per seat: lost (burned) for a ballot against the final outcome or for silence
    8,  # L: overlapping seats an auditor answers for; eligible from 8 x 0.125 = 1 ETH, registers with 1.25 ETH
    10,  # warm-up blocks: an auditor cannot register after seeing a challenge and be drawn for it
    7 * 24 * HOUR,  # exit cooldown: longer than maxDrawDelay
    6 * HOUR,  # vote commit window: L replays of maxReplaySeconds
    2 * HOUR,  # vote reveal window
    6 * HOUR,  # appeal window: time for anyone to replay the interval and appeal a wrong verdict
    HOUR,  # max draw delay: a panel not drawn within it is re-armed
    3 * 24 * HOUR,  # starvation timeout: a round that cannot seat for this long ends undecided
    45 * 60,  # max replay seconds a task may declare (6 h / L)
    3,  # panel size of round 0 (then 7, 15, 31, 63)
    5,  # rounds: with 20% sybils the fifth round's chance of a sybil majority is below 1e-6
    1_000,  # panel bps: of a losing appeal's bond, to the deciding round's majority
    REPLAY_PRICE,
)
MAX_DRAW_DELAY_FIELD = 7  # CommitteeParams' maxDrawDelay, in the order above
# The embedded devnet (one block a second) runs whole disputes in a minute, for the demo.
DEVNET_COMMITTEE = (
    ETHER // 10,
    2,  # L: eligible from 0.2 ETH, registers with 0.4 ETH
    2,  # warm-up blocks
    60,  # exit cooldown
    30,  # vote commit window
    20,  # vote reveal window
    10,  # appeal window
    30,  # max draw delay
    120,  # starvation timeout
    15,  # max replay seconds
    3,
    3,
    1_000,
    REPLAY_PRICE,
)
# The clocks of DEVNET_COMMITTEE a devnet pace stretches: exit cooldown, vote commit, reveal and appeal
# windows, max draw delay, starvation timeout, max replay seconds.
PACED_FIELDS = range(3, 10)


def devnet_committee(pace: int) -> tuple[int, ...]:
    """DEVNET_COMMITTEE with its clocks ``pace`` times longer: a devnet for tasks whose replays take more
    than its 15 s (the demo's real chat model). Every ratio the contract checks is kept."""
    return tuple(v * pace if i in PACED_FIELDS else v for i, v in enumerate(DEVNET_COMMITTEE))


def plan(deployer: Deployer) -> None:
    committee_params = _committee(deployer)  # a pace off the devnet is refused before anything is sent
    randomness = _randomness(deployer).address  # so is a refused backend
    # The protocol's pure functions on-chain: off-chain code checks its leaves and proofs against it.
    deployer.deploy("ProtocolMirror")
    # KEEPER_BPS: 10% of the provider bond pays whoever slashes a batch left unopened.
    tasks_at = deployer.recorded_address("TrainingTasks")
    committee_at = deployer.recorded_address("AuditCommittee")
    tasks_args = (randomness, KEEPER_BPS, SHARES, MIN_BONDS, MAX_REQUESTS_PER_BATCH)
    pair_unchanged = (
        tasks_at is not None
        and committee_at is not None
        and deployer.unchanged("AuditCommittee", tasks_at, randomness, committee_params)
        and deployer.unchanged("TrainingTasks", *tasks_args, committee_at)
    )
    if not pair_unchanged:
        tasks_at = deployer.next_address(offset=1)  # the transaction after the committee's
    committee = deployer.deploy("AuditCommittee", tasks_at, randomness, committee_params)
    tasks = deployer.deploy("TrainingTasks", *tasks_args, committee.address)
    assert tasks.address == tasks_at, "the task contract landed away from its committee's address"


def _committee(deployer: Deployer) -> tuple[int, ...]:
    if deployer.w3.eth.chain_id == DEVNET_CHAIN_ID:
        return devnet_committee(deployer.devnet_pace)
    if deployer.devnet_pace != 1:
        raise DeploymentError("a devnet pace is for the devnet: a real chain's committee clocks are fixed")
    return COMMITTEE


def _randomness(deployer: Deployer) -> Contract:
    """The randomness backend. Block hashes can be ground by whoever builds the block: refused on any chain
    but the devnet's unless the deployer allowed them (the contract refuses too)."""
    choice = deployer.randomness
    if choice.kind == "blockhash":
        chain_id = deployer.w3.eth.chain_id
        if chain_id != DEVNET_CHAIN_ID and not choice.allow_any_chain:
            raise DeploymentError(
                f"block-hash randomness can be ground by block builders: refused on chain {chain_id}. Deploy "
                "drand (the default), or pass --allow-blockhash for a test network"
            )
        return deployer.deploy("BlockhashRandomness", SEED_DELAY, choice.allow_any_chain)
    network = choice.network
    assert network is not None, "a drand backend needs its network"
    devnet = deployer.w3.eth.chain_id == DEVNET_CHAIN_ID
    delay = choice.delay or (network.period if devnet else DRAND_DELAY)
    if not devnet and delay < DRAND_DELAY:
        raise DeploymentError(
            f"a drand delay of {delay} s: a builder may know the target round; use at least {DRAND_DELAY} s"
        )
    # A panel must be drawable: its round comes at most DELAY + PERIOD after the arm, within maxDrawDelay.
    max_draw_delay = _committee(deployer)[MAX_DRAW_DELAY_FIELD]
    if delay + network.period >= max_draw_delay:
        raise DeploymentError(
            f"a drand delay of {delay} s leaves no time to draw a panel within maxDrawDelay "
            f"({max_draw_delay} s): raise maxDrawDelay in the plan, or lower the delay"
        )
    return deployer.deploy("DrandBeacon", g2_for_contract(network.public_key), network.genesis, network.period, delay)
