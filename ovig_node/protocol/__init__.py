"""The protocol's pure functions (docs/protocol.md sections 2 and 3), mirroring the contracts.

No I/O beyond hashing: the task spec and its hash, the deterministic data schedule, interval
arithmetic, leaves and the ordered Merkle tree, and the sampling draw. Tests check each against the
contracts on a real chain.
"""
