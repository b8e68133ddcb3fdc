// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Reason, Settlement} from "../Types.sol";

/// @title IDisputedTasks
/// @notice What an adjudicator needs from the task contract whose disputes it decides.
interface IDisputedTasks {
    /// @notice A reveal opened a dispute over interval `k` of `task`; its first round is armed at this block.
    /// @param dispute The dispute id (counted by the task contract, from 1).
    /// @param task The task id.
    /// @param k The challenged interval.
    /// @param reason What the first challenger saw (it settles nothing).
    event DisputeOpened(uint256 indexed dispute, uint256 indexed task, uint256 k, Reason reason);

    /// @notice Where a dispute starts: its task and the block and time of the reveal that opened it (its
    /// first round's arm).
    /// @param dispute The dispute id.
    /// @return task The task id (0: no such dispute).
    /// @return armBlock The block of the opening reveal.
    /// @return armedAt Its time.
    function disputeOrigin(uint256 dispute) external view returns (uint64 task, uint48 armBlock, uint40 armedAt);

    /// @notice Whether the dispute no longer matters: its task ended (slashed by another dispute or an
    /// unopened batch) while it was open, and its lead did not commit before the slash's waiting lead (such
    /// a dispute is still judged: it may take the lead's share). A moot dispute is settled with both sides
    /// refunded and its panel released without penalty.
    /// @param dispute The adjudicator's dispute id.
    /// @return True if the dispute can no longer change who is paid.
    function isMoot(uint256 dispute) external view returns (bool);

    /// @notice Whether `account` has a stake in how the task's disputes end: its owner, its provider, or a
    /// challenger (or requester) whose first commit on it came at or before `blockNumber`. Never on a panel
    /// armed then; a panelist interested before it commits a ballot cannot commit one.
    /// @param task The task id.
    /// @param account The account.
    /// @param blockNumber A round's arm block.
    /// @return True to keep `account` off the round's panel.
    function isInterested(uint256 task, address account, uint256 blockNumber) external view returns (bool);

    /// @notice The smallest challenger bond a task may ask for: an appeal to round r costs it times 2^r.
    /// @return The bond, in wei.
    // solhint-disable-next-line func-name-mixedcase
    function MIN_CHALLENGER_BOND() external view returns (uint256);

    /// @notice The challenger bond of the dispute's task: a round's charge after a no-decision is PANEL_BPS of
    /// it times 2^round.
    /// @param dispute The dispute id.
    /// @return The bond, in wei.
    function challengerBondOf(uint256 dispute) external view returns (uint256);

    /// @notice Pay out a settled dispute (protocol section 4.2); only the adjudicator may call this,
    /// once per dispute. The panel's money (its share of a sound verdict's bonds or of a slashed provider
    /// bond, or a no-decision's round charges, at most what the joined bonds hold) is credited to the
    /// adjudicator, which pulls it (the task contract's `withdraw`) and pays its seats.
    /// @param dispute The dispute id.
    /// @param settlement The verdict, whether a no-decision counts, and the round charges it asks for.
    /// @return toPanel The wei credited to the adjudicator for the panelists.
    function settleDispute(uint256 dispute, Settlement calldata settlement) external returns (uint256 toPanel);
}
