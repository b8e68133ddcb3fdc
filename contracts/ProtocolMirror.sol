// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {LeafHash} from "./libraries/LeafHash.sol";
import {OrderedMerkle} from "./libraries/OrderedMerkle.sol";

/// @title ProtocolMirror
/// @notice Exposes the protocol's pure on-chain functions, so off-chain code (the Python mirror in
/// `ovig_node.protocol`) can be checked against exactly what the contracts compute.
/// @dev Stateless and ownerless; deploying it costs nothing to trust.
contract ProtocolMirror {
    /// @notice The leaf of interval `k` (protocol section 2.4).
    /// @param task The on-chain task id.
    /// @param k The interval index.
    /// @param endStep `b_k`, the step count after the interval.
    /// @param digest `sha256` of the interval's evidence file.
    /// @return The leaf hash.
    function leaf(uint256 task, uint256 k, uint256 endStep, bytes32 digest) external pure returns (bytes32) {
        return LeafHash.leaf(task, k, endStep, digest);
    }

    /// @notice Depth of a batch tree over `leafCount` leaves.
    /// @param leafCount Number of real leaves (at least 1).
    /// @return The proof length every valid proof of this tree has.
    function depth(uint256 leafCount) external pure returns (uint256) {
        return OrderedMerkle.depth(leafCount);
    }

    /// @notice Whether `proof` places `leafHash` at `index` under `root`.
    /// @param proof Siblings from the leaf up to the root.
    /// @param root The committed root.
    /// @param leafHash The leaf hash.
    /// @param index Position of the leaf.
    /// @param leafCount Number of real leaves in the tree.
    /// @return True only for a proof of the exact depth that hashes to `root`.
    function verify(
        bytes32[] calldata proof,
        bytes32 root,
        bytes32 leafHash,
        uint256 index,
        uint256 leafCount
    ) external pure returns (bool) {
        return OrderedMerkle.verify(proof, root, leafHash, index, leafCount);
    }
}
