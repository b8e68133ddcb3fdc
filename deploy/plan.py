"""What `ovig deploy` deploys, in order (run by ovig_node.chain.deploy.run_plan).

Each `deployer.deploy(Name, *constructor_args)` deploys the compiled artifact `Name`, or reuses the
copy already recorded for this chain if its code and arguments are unchanged. Contracts that need
each other's addresses are deployed in dependency order and wired with transactions here.
"""

from __future__ import annotations

from ovig_node.chain.deploy import Deployer

SEED_DELAY = 2  # blocks
KEEPER_BPS = 1_000  # basis points of the provider bond


def plan(deployer: Deployer) -> None:
    # The protocol's pure functions on-chain: off-chain code checks its leaves and proofs against it.
    deployer.deploy("ProtocolMirror")
    # Tasks, commitments, sampling, openings and payouts (protocol 4.1). SEED_DELAY: the seed block
    # is 2 blocks after a batch commit, so neither the commit's block nor the next decides the sample.
    # KEEPER_BPS: 10% of the provider bond pays whoever slashes a batch left unopened.
    deployer.deploy("TrainingTasks", SEED_DELAY, KEEPER_BPS)
