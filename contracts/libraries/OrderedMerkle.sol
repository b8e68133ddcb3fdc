// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

/// @title OrderedMerkle
/// @notice Verifier for the ordered, zero-padded Merkle tree of a batch (protocol section 2.4).
/// @dev OpenZeppelin's MerkleProof sorts each pair, so a leaf proves membership but not position.
/// Here leaf i sits at position i, parents hash `left || right` unsorted, the proof is read with the
/// bits of i, and its length must be exactly the tree depth: one digest per interval, no other.
library OrderedMerkle {
    /// @notice Depth of the tree over `leafCount` leaves padded to the next power of two.
    /// @param leafCount Number of real leaves (at least 1).
    /// @return d With `2^d` the smallest power of two >= leafCount; 0 for a single leaf.
    function depth(uint256 leafCount) internal pure returns (uint256 d) {
        return Math.log2(leafCount, Math.Rounding.Ceil);
    }

    /// @notice Whether `proof` places `leaf` at position `index` of a tree with root `root`.
    /// @param proof Siblings from the leaf up to the root.
    /// @param root The committed root.
    /// @param leaf The leaf hash (see LeafHash).
    /// @param index Position of the leaf, `0 <= index < leafCount`.
    /// @param leafCount Number of real leaves in the tree.
    /// @return True only for a proof of exactly `depth(leafCount)` siblings that hashes to `root`.
    function verify(
        bytes32[] memory proof,
        bytes32 root,
        bytes32 leaf,
        uint256 index,
        uint256 leafCount
    ) internal pure returns (bool) {
        if (leafCount == 0 || index >= leafCount || proof.length != depth(leafCount)) return false;
        bytes32 node = leaf;
        for (uint256 level = 0; level < proof.length; ++level) {
            node = (index >> level) & 1 == 0
                ? keccak256(abi.encode(node, proof[level]))
                : keccak256(abi.encode(proof[level], node));
        }
        return node == root;
    }
}
