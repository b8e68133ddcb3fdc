// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {LeafHash} from "./libraries/LeafHash.sol";
import {OrderedMerkle} from "./libraries/OrderedMerkle.sol";
import {PanelDraw} from "./libraries/PanelDraw.sol";
import {Sampling} from "./libraries/Sampling.sol";

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

    /// @notice The seed of batch `j` of `task` from its randomness target's value (protocol section 3).
    /// @param value The value of the target named at the batch's commit (a block hash or a drand round's
    /// randomness).
    /// @param task The on-chain task id.
    /// @param j The batch index.
    /// @return `keccak256(abi.encode(value, task, j))`.
    function seedOf(bytes32 value, uint256 task, uint256 j) external pure returns (bytes32) {
        return keccak256(abi.encode(value, task, j));
    }

    /// @notice Sample size of a batch: `max(1, ceil(n * sampleBps / 10000))`.
    /// @param n Number of intervals in the batch.
    /// @param sampleBps Share to sample, in basis points.
    /// @return The number of sampled positions.
    function sampleSize(uint256 n, uint256 sampleBps) external pure returns (uint256) {
        return Sampling.sampleSize(n, sampleBps);
    }

    /// @notice The sampled positions of a batch, in draw order (protocol section 3).
    /// @param seed The batch's seed (see `seedOf`).
    /// @param n Number of intervals in the batch (at least 1).
    /// @param sampleBps Share to sample, in basis points (1 .. 10000).
    /// @param isLast Whether this is the task's last batch (its last position is always sampled).
    /// @return positions Positions inside the batch; interval = `j * m + position`.
    function sampleBatch(
        bytes32 seed,
        uint256 n,
        uint256 sampleBps,
        bool isLast
    ) external pure returns (uint256[] memory positions) {
        return Sampling.draw(seed, n, sampleBps, isLast);
    }

    /// @notice The seed of a dispute round's panel draw (protocol section 4.2).
    /// @param value The randomness backend's value for the round's target.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @return `keccak256(abi.encode(value, dispute, round))`.
    function panelSeed(bytes32 value, uint256 dispute, uint256 round) external pure returns (bytes32) {
        return PanelDraw.seed(value, dispute, round);
    }

    /// @notice Panel size of round `round`: `panelSize * 2^round + 2^round - 1`.
    /// @param panelSize_ The first round's panel size.
    /// @param round The round.
    /// @return The seats.
    function panelSize(uint256 panelSize_, uint256 round) external pure returns (uint256) {
        return PanelDraw.size(panelSize_, round);
    }

    /// @notice A whole panel draw over a snapshot of the registry (protocol section 4.2).
    /// @param seed The round's seed.
    /// @param occupants Each slot's occupant as of the arm block (zero: empty).
    /// @param eligible Whether each slot's occupant was eligible for the round.
    /// @param want Seats to fill.
    /// @return The seated auditors, in draw order (fewer than `want`: the round cannot seat).
    function drawPanel(
        bytes32 seed,
        address[] calldata occupants,
        bool[] calldata eligible,
        uint256 want
    ) external pure returns (address[] memory) {
        return PanelDraw.draw(seed, occupants, eligible, want);
    }
}
