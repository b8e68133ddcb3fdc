"""What `ovig deploy` deploys, in order (run by ovig_node.chain.deploy.run_plan).

Each `deployer.deploy(Name, *constructor_args)` deploys the compiled artifact `Name`, or reuses the
copy already recorded for this chain if its code and arguments are unchanged. Contracts that need
each other's addresses are deployed in dependency order and wired with transactions here.
"""

from __future__ import annotations

from ovig_node.chain.deploy import Deployer


def plan(deployer: Deployer) -> None:
    # The protocol's pure functions on-chain: off-chain code checks its leaves and proofs against it.
    deployer.deploy("ProtocolMirror")
