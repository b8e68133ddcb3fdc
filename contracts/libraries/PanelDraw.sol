// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title PanelDraw
/// @notice How a dispute round's panel is drawn (protocol section 4.2): rejection sampling over the
/// committee's registry slots as of the round's arm block. Try t picks slot
/// `uint256(keccak256(abi.encode(seed, t))) % slots`; its occupant is seated if eligible and not seated
/// yet; the draw stops once `size(panelSize, round)` are seated or after 16 tries per seat.
/// @dev Costs grow with the panel, never with the registry. The committee runs the tries in chunks (a
/// stored cursor); `draw` runs them all at once over a snapshot, for the off-chain mirror's vectors.
library PanelDraw {
    /// @notice Tries per seat before a round counts as unable to seat its panel.
    uint256 internal constant TRIES_PER_SEAT = 16;

    /// @notice The seed of round `round` of `dispute` from the randomness backend's value.
    /// @param value The backend's value for the round's target.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @return `keccak256(abi.encode(value, dispute, round))`.
    function seed(bytes32 value, uint256 dispute, uint256 round) internal pure returns (bytes32) {
        return keccak256(abi.encode(value, dispute, round));
    }

    /// @notice The slot try `t` lands on.
    /// @param drawSeed The round's seed.
    /// @param t The try, 0-based.
    /// @param slots Slot count as of the arm block (at least 1).
    /// @return `uint256(keccak256(abi.encode(drawSeed, t))) % slots`.
    function slotOf(bytes32 drawSeed, uint256 t, uint256 slots) internal pure returns (uint256) {
        return uint256(keccak256(abi.encode(drawSeed, t))) % slots;
    }

    /// @notice Panel size of round r: `P_r = panelSize * 2^r + (2^r - 1)`, odd when panelSize is.
    /// @param panelSize The first round's panel size.
    /// @param round The round.
    /// @return The seats to fill.
    function size(uint256 panelSize, uint256 round) internal pure returns (uint256) {
        uint256 scale = 1 << round;
        return panelSize * scale + scale - 1;
    }

    /// @notice Every try of a draw over a snapshot of the slots.
    /// @param drawSeed The round's seed.
    /// @param occupants Each slot's occupant as of the arm block (zero: empty).
    /// @param eligible Whether each slot's occupant is eligible for the round.
    /// @param want Seats to fill.
    /// @return panel The seated auditors in draw order (fewer than `want`: the round cannot seat).
    function draw(
        bytes32 drawSeed,
        address[] memory occupants,
        bool[] memory eligible,
        uint256 want
    ) internal pure returns (address[] memory panel) {
        panel = new address[](want);
        bool[] memory seated = new bool[](occupants.length);
        uint256 count = 0;
        uint256 tries = TRIES_PER_SEAT * want;
        for (uint256 t = 0; t < tries && count < want && occupants.length > 0; ++t) {
            uint256 slot = slotOf(drawSeed, t, occupants.length);
            if (occupants[slot] == address(0) || !eligible[slot] || seated[slot]) continue;
            seated[slot] = true;
            panel[count++] = occupants[slot];
        }
        assembly ("memory-safe") {
            mstore(panel, count)
        }
    }
}
