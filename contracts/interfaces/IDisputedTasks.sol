// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Settlement} from "../Types.sol";

/// @title IDisputedTasks
/// @notice What an adjudicator needs from the task contract whose disputes it decides.
interface IDisputedTasks {
    /// @notice Whether the dispute no longer matters: its task ended (slashed by another dispute or an
    /// unopened batch) while it was open, and its lead did not commit before the slash's waiting lead (such
    /// a dispute is still judged: it may take the lead's share). A moot dispute is settled with both sides
    /// refunded and its panel released without penalty.
    /// @param dispute The adjudicator's dispute id.
    /// @return True if the dispute can no longer change who is paid.
    function isMoot(uint256 dispute) external view returns (bool);

    /// @notice Whether `account` has a stake in how the task's disputes end: its owner, its provider, or a
    /// challenger whose first commit on it came at or before `blockNumber`. Never on a panel armed then.
    /// @param task The task id.
    /// @param account The account.
    /// @param blockNumber A round's arm block.
    /// @return True to keep `account` off the round's panel.
    function isInterested(uint256 task, address account, uint256 blockNumber) external view returns (bool);

    /// @notice The challenger bond of the dispute's task: an appeal to round r costs it times 2^r.
    /// @param dispute The dispute id.
    /// @return The bond, in wei.
    function challengerBondOf(uint256 dispute) external view returns (uint256);

    /// @notice Pay out a settled dispute (protocol section 4.2); only the adjudicator may call this,
    /// once per dispute.
    /// @param dispute The dispute id.
    /// @param settlement The verdict, whether a no-decision counts, the deciding majority, and the round
    /// charges a no-decision takes from the joined bonds for the panelists who revealed.
    function settleDispute(uint256 dispute, Settlement calldata settlement) external;
}
