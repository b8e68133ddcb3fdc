// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title LeafHash
/// @notice The leaf of interval k in a batch tree (protocol section 2.4).
/// @dev Hashed twice, so no 64-byte inner node of the tree can ever be presented as a leaf.
library LeafHash {
    /// @notice `keccak256(bytes.concat(keccak256(abi.encode(task, k, endStep, digest))))`.
    /// @param task The on-chain task id.
    /// @param k The interval index.
    /// @param endStep `b_k = min((k + 1) * stride, totalSteps)`, the step count after the interval.
    /// @param digest `sha256` of the interval's evidence file.
    function leaf(uint256 task, uint256 k, uint256 endStep, bytes32 digest) internal pure returns (bytes32) {
        return keccak256(bytes.concat(keccak256(abi.encode(task, k, endStep, digest))));
    }
}
