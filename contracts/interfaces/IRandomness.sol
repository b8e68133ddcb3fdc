// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IRandomness
/// @notice A randomness backend (protocol section 3). Both draws, a batch's sample and a round's panel,
/// ask it for the target of the action they randomise, when the action happens, and later read that
/// target's value: nobody knows the value when acting, so nobody can act to suit it. A target is a block
/// (BlockhashRandomness, devnets) or a drand round (DrandBeacon, anywhere value is at stake).
interface IRandomness {
    /// @notice The target whose value randomises an action taken in block `blockNumber` at time
    /// `timestamp`: one whose value is unknown to everyone then.
    /// @param blockNumber The action's block.
    /// @param timestamp The action's block timestamp.
    /// @return The target: a block number or a drand round.
    function targetOf(uint256 blockNumber, uint256 timestamp) external view returns (uint64);

    /// @notice The value of `target`.
    /// @param target A target from `targetOf`.
    /// @return ready Whether the target has come (its block is mined, its round submitted).
    /// @return value Its value; zero before it is ready, and zero once it is gone (a block hash older
    /// than 256 blocks; a drand round nobody submitted within a day of its time).
    function valueOf(uint64 target) external view returns (bool ready, bytes32 value);
}
