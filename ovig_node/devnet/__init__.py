"""The embedded devnet: a local anvil chain and an IPFS node, started and stopped as one unit."""
