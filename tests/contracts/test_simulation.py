"""The adversarial simulation protocol 4.3 demands for its incentive properties ("Incentives"): seeded
episodes of honest and adversarial agents on both contracts; see ``simulation.py`` for the agents and the
checks (money, soundness, completeness, fixity, no ETH stuck).

``OVIG_SIM_EPISODES`` episodes run (default: a subset that takes about two minutes here; CI runs 1,000),
seeds ``OVIG_SIM_SEED``, ``OVIG_SIM_SEED + 1``, ... (default 1). Every failure names its seed; rerun it
alone with ``OVIG_SIM_SEED=<seed> OVIG_SIM_EPISODES=1``. ``OVIG_SIM_SHARDS=n`` deals the seeds to n tests
(shard i takes every n-th seed from the i-th), which pytest-xdist runs side by side, each on its own anvil:
CI's 1,000 run as two shards on its two cores.

The episodes run on an anvil of their own with a fixed genesis time, not on Ape's (whose earlier blocks carry
wall-clock times): block hashes feed every sample and panel, so only a chain whose every block is the
simulation's replays a seed exactly. Ape compiles the contracts; the simulation deploys them itself and
reverts to one base state (``evm_snapshot``/``evm_revert``) before each episode.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    AUDITOR_STAKE,
    COMMITTEE,
    KEEPER_BPS,
    MAX_REQUESTS_PER_BATCH,
    MIN_BONDS,
    SEED_DELAY,
    SHARES,
)
from rawchain import Reads, Rpc, deploy, transact
from simulation import HONEST_AUDITORS, MAX_SYBILS, WITHHOLDING, Base, Cast, run_episode, timeline

from ovig_node import tools
from ovig_node.chain.deploy import create_address
from ovig_node.devnet.processes import free_port, start_process, terminate

EPISODES = int(os.environ.get("OVIG_SIM_EPISODES", "40"))
FIRST_SEED = int(os.environ.get("OVIG_SIM_SEED", "1"))
SHARDS = int(os.environ.get("OVIG_SIM_SHARDS", "1"))
GENESIS = 1_700_000_000
ACCOUNTS = 100
REPLAYED_SEED = 8  # an episode with disputes and appeals (6 panels, 4 appeals on this base state)


@pytest.fixture(scope="module")
def base(project: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Base]:
    """A private anvil with both contracts (and their BlockhashRandomness) deployed and 50 honest auditors, the
    honest watcher and 7 sybil auditors warmed up."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # Free gas (no base fee, no gas price): the ETH of all accounts and both contracts is conserved.
    argv = [
        str(tools.anvil()),
        "--port",
        str(port),
        "--timestamp",
        str(GENESIS),
        "--accounts",
        str(ACCOUNTS),
        "--balance",
        "1000000",
        "--hardfork",
        "cancun",
        "--block-base-fee-per-gas",
        "0",
        "--gas-price",
        "0",
    ]
    log = Path(tmp_path_factory.mktemp("sim-anvil")) / "anvil.log"
    rpc = Rpc(url)

    def ready() -> bool:
        try:
            return rpc("eth_chainId") is not None
        except Exception:
            return False

    record = start_process("anvil", argv, log=log, ready=ready, timeout=30)
    try:
        rpc("anvil_setBlockTimestampInterval", 0)  # the clock moves only when the simulation moves it
        accounts = [a.lower() for a in rpc("eth_accounts")]
        deployer = accounts[0]

        def artifact(name: str) -> tuple[list[dict[str, Any]], str]:
            contract_type = getattr(project, name).contract_type
            abi = contract_type.model_dump(mode="json", by_alias=True)["abi"]
            return abi, contract_type.deployment_bytecode.bytecode

        # The randomness backend both contracts read: block hashes, SEED_DELAY blocks after the action (its
        # constructor refuses any chain but the devnet's, anvil's default).
        assert int(rpc("eth_chainId"), 16) == 31337
        randomness = deploy(rpc, deployer, *artifact("BlockhashRandomness"), SEED_DELAY, False)
        nonce = int(rpc("eth_getTransactionCount", deployer, "latest"), 16)
        tasks_at = create_address(deployer, nonce + 1)
        committee = deploy(
            rpc, deployer, *artifact("AuditCommittee"), tasks_at, randomness.address, tuple(COMMITTEE.values())
        )
        tasks = deploy(
            rpc,
            deployer,
            *artifact("TrainingTasks"),
            randomness.address,
            KEEPER_BPS,
            SHARES,
            MIN_BONDS,
            MAX_REQUESTS_PER_BATCH,
            committee.address,
        )
        assert tasks.address == tasks_at.lower()
        cast = Cast.of(accounts)
        errors = {**tasks.errors, **committee.errors}
        # The honest watcher is an auditor too (issue 45's attack 3: it may sit on a task it then challenges).
        for who in [*cast.sybils[:MAX_SYBILS], *cast.honest_auditors[:HONEST_AUDITORS], cast.watcher]:
            assert transact(rpc, errors, who, committee, "register", value=AUDITOR_STAKE).ok
        rpc("anvil_mine", hex(COMMITTEE["warmupBlocks"]))
        method, params = committee.call("auditorCount")
        assert committee.result("auditorCount", rpc(method, *params)) == MAX_SYBILS + HONEST_AUDITORS + 1
        head = rpc("eth_getBlockByNumber", "latest", False)
        eth = Reads()
        for a in [*accounts, tasks.address, committee.address]:
            eth.add("eth", a, ("eth_getBalance", [a, "latest"]), lambda raw: int(raw, 16))
        total = sum(eth.run(rpc)["eth"].values())
        yield Base(rpc, tasks, committee, accounts, int(head["timestamp"], 16), total)
    finally:
        terminate(record)


@pytest.mark.timeout(120 + 10 * EPISODES)  # every episode runs in this one test: the default 600 s is per test
@pytest.mark.parametrize("shard", range(SHARDS))
def test_adversarial_simulation(base: Base, shard: int) -> None:
    """Every episode keeps protocol 4.3's money, soundness, completeness, fixity and no-ETH-stuck."""
    failures: list[str] = []
    durations: list[tuple[float, int, int]] = []  # (seconds, seed, panels drawn)
    stats: Counter[str] = Counter()
    started = time.monotonic()
    seeds = range(FIRST_SEED + shard, FIRST_SEED + EPISODES, SHARDS)
    for seed in seeds:
        snapshot = base.rpc("evm_snapshot")
        begun = time.monotonic()
        try:
            world = run_episode(base, seed)
            durations.append((time.monotonic() - begun, seed, sum(e.name == "PanelDrawn" for e in world.events)))
            stats.update(world.stats)
            failures += world.failures
            if world.failures and os.environ.get("OVIG_SIM_TRACE"):
                print(timeline(world))
        finally:
            assert base.rpc("evm_revert", snapshot)
    elapsed = time.monotonic() - started
    print(f"\n{len(seeds)} episodes in {elapsed:.0f} s")
    for key, count in sorted(stats.items()):
        print(f"  {key}: {count}")
    print(
        "  slowest episodes (seconds, seed, panels):", [(round(t, 1), seed, n) for t, seed, n in sorted(durations)[-5:]]
    )
    assert not failures, "\n".join(failures)
    shortfalls = [f"{key}: {stats[key]} < {floor}" for key, floor in floors(len(seeds)).items() if stats[key] < floor]
    shortfalls += [f"{key}: {stats[key]} > {most}" for key, most in ceilings(len(seeds)).items() if stats[key] > most]
    assert not shortfalls, "the episodes checked less than they must:\n" + "\n".join(shortfalls)


# What the checks must have seen, as fractions of a shard's episodes (rounded down), fixed before any run from the
# mix's chances (in parentheses, the rate expected): a change that makes episodes skip their checks (every task cut
# off, no watcher's challenge leading to a slash, no withholder's game played) fails even though no check did.
FLOORS = {
    "soundness: the watcher was paid the lead's share": 0.3,  # (0.8)
    "completeness: finalized": 0.5,  # (1.2)
    **{f"withholder ({mode}): games played to the end": 0.02 for mode in WITHHOLDING},  # (0.09)
    "honest auditors abstained (kept busy past their commit deadline)": 0.1,  # (1/3 of episodes, 0.3 of seats)
    "near tie: honest ballots (abstentions)": 0.1,  # (about 0.27 near-tie disputes an episode, several seats each)
}
CEILINGS = {"episodes cut off": 0.25}  # (0.12)


def floors(episodes: int) -> dict[str, int]:
    return {key: int(share * episodes) for key, share in FLOORS.items()}


def ceilings(episodes: int) -> dict[str, int]:
    return {key: max(1, int(share * episodes)) for key, share in CEILINGS.items()}


def test_a_seed_replays_its_episode(base: Base) -> None:
    """The same seed from the same base state gives the same episode, event for event (so a failure's seed
    reproduces it)."""
    digests = []
    for _ in range(2):
        snapshot = base.rpc("evm_snapshot")
        try:
            world = run_episode(base, REPLAYED_SEED)
            digests.append([(e.name, e.block, vars(e.args)) for e in world.events])
        finally:
            assert base.rpc("evm_revert", snapshot)
    assert any(name == "PanelDrawn" for name, _, _ in digests[0])
    assert any(name == "Appealed" for name, _, _ in digests[0])
    assert digests[0] == digests[1]
