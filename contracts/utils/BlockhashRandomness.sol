// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title BlockhashRandomness
/// @notice The randomness backend of both OVIG contracts (protocol section 3): every seed, a batch's
/// sample and a round's panel, reads `_randomness(target)` and nothing else, so a backend is swapped in
/// one place. This one is the devnet backend: a target is a block, its value that block's hash while it
/// is one of the last 256. Block hashes are grindable by whoever builds the block: fit for devnets and
/// tests, never for value at stake (production uses drand, verified on-chain).
/// @dev A target is always set after the action it randomises (`block.number + delay`), so nobody knows
/// its value when acting.
abstract contract BlockhashRandomness {
    /// @dev Whether the target's value can be read: its block is mined (it may be gone already).
    function _randomnessReady(uint256 target) internal view returns (bool) {
        return block.number > target;
    }

    /// @dev The target's value; zero before it is ready or once it is gone.
    function _randomness(uint256 target) internal view returns (bytes32) {
        return blockhash(target);
    }

    /// @dev Whether the target's value can no longer be read (its block is more than 256 blocks old).
    function _randomnessGone(uint256 target) internal view returns (bool) {
        return _randomnessReady(target) && _randomness(target) == bytes32(0);
    }
}
