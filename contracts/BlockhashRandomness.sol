// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IRandomness} from "./interfaces/IRandomness.sol";
import {BlockhashOffDevnet, ZeroSeedDelay} from "./Errors.sol";

/// @title BlockhashRandomness
/// @notice The devnet randomness backend (protocol section 3): an action in block h is randomised by the
/// hash of block h + DELAY, readable while it is one of the last 256. Whoever builds that block chooses
/// its contents and so grinds its hash: fit for devnets and fast tests, never for value at stake (use
/// DrandBeacon). The constructor refuses any chain but the devnet's unless told otherwise.
contract BlockhashRandomness is IRandomness {
    /// @notice The devnet's chain id (anvil's default).
    uint256 public constant DEVNET_CHAIN_ID = 31337;

    /// @notice Blocks between an action's block h and its seed block h + DELAY (>= 1).
    uint256 public immutable DELAY;

    /// @param delay DELAY, at least 1 block, so the action's own block never decides its draw.
    /// @param allowAnyChain Deploy on a chain other than the devnet's anyway (a test network).
    constructor(uint256 delay, bool allowAnyChain) {
        if (delay == 0) revert ZeroSeedDelay();
        if (block.chainid != DEVNET_CHAIN_ID && !allowAnyChain) revert BlockhashOffDevnet(block.chainid);
        DELAY = delay;
    }

    /// @inheritdoc IRandomness
    function targetOf(uint256 blockNumber, uint256) external view returns (uint64) {
        return uint64(blockNumber + DELAY);
    }

    /// @inheritdoc IRandomness
    function valueOf(uint64 target) external view returns (bool ready, bytes32 value) {
        return (block.number > target, blockhash(target));
    }
}
