// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Sampling
/// @notice Which intervals of a batch the provider must open (protocol section 3).
/// @dev Partial Fisher-Yates over the batch's positions, driven by `keccak256(abi.encode(seed, i))`.
/// The last batch always samples its last position (interval K-1, the deliverable) and draws the
/// rest among the other positions. Results are positions inside the batch (0 .. n-1), in draw order.
library Sampling {
    /// @notice Sample size `q = max(1, ceil(n * sampleBps / 10000))` of a batch of `n` intervals.
    /// @param n Number of intervals in the batch (at least 1).
    /// @param sampleBps Share of the batch to sample, in basis points (1 .. 10000).
    /// @return q The number of positions to draw, `1 <= q <= n`.
    function sampleSize(uint256 n, uint256 sampleBps) internal pure returns (uint256 q) {
        q = (n * sampleBps + 9999) / 10000;
        if (q == 0) q = 1;
    }

    /// @notice The sampled positions of a batch, in draw order.
    /// @param seed The batch's seed, `keccak256(abi.encode(blockhash, task, j))`.
    /// @param n Number of intervals in the batch (at least 1).
    /// @param sampleBps Share of the batch to sample, in basis points (1 .. 10000).
    /// @param isLast Whether this is the task's last batch (its position n-1 is always sampled).
    /// @return positions The sampled positions, `p[0 .. q'-1]` then, for the last batch, `n - 1`.
    function draw(
        bytes32 seed,
        uint256 n,
        uint256 sampleBps,
        bool isLast
    ) internal pure returns (uint256[] memory positions) {
        uint256 q = sampleSize(n, sampleBps);
        if (q > n) q = n;
        if (!isLast) return _shuffle(seed, n, q, 0);
        // The deliverable is drawn separately: shuffle the other n-1 positions, then append n-1.
        positions = _shuffle(seed, n - 1, q - 1, 1);
        positions[q - 1] = n - 1;
    }

    /// @notice `q` distinct indices of `[0 .. n-1]`, uniformly, in draw order (the same partial
    /// Fisher-Yates, used by the committee to draw panels).
    /// @param seed The draw's seed.
    /// @param n Size of the pool.
    /// @param q How many to draw, `q <= n`.
    /// @return picked The drawn indices.
    function pick(bytes32 seed, uint256 n, uint256 q) internal pure returns (uint256[] memory picked) {
        return _shuffle(seed, n, q, 0);
    }

    /// @notice Every position of a batch, ascending: the sample when no seed is available.
    /// @param n Number of intervals in the batch.
    /// @return positions `[0, 1, ..., n-1]`.
    function all(uint256 n) internal pure returns (uint256[] memory positions) {
        positions = new uint256[](n);
        for (uint256 i = 0; i < n; ++i) {
            positions[i] = i;
        }
    }

    /// @dev The first `q` entries of a partial Fisher-Yates shuffle of `[0 .. n-1]`, in an array with
    /// `extra` free slots at the end for the caller.
    function _shuffle(
        bytes32 seed,
        uint256 n,
        uint256 q,
        uint256 extra
    ) private pure returns (uint256[] memory sample) {
        uint256[] memory p = all(n);
        sample = new uint256[](q + extra);
        for (uint256 i = 0; i < q; ++i) {
            uint256 r = i + (uint256(keccak256(abi.encode(seed, i))) % (n - i));
            (p[i], p[r]) = (p[r], p[i]);
            sample[i] = p[i];
        }
    }
}
