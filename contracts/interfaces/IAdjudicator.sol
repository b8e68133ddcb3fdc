// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Reason} from "../Types.sol";

/// @title IAdjudicator
/// @notice What TrainingTasks needs from a dispute court (protocol section 4.2), so the staked
/// auditor committee (AuditCommittee) can be swapped without touching the task contract.
/// @dev Flow: TrainingTasks calls `openDispute` when a challenge is revealed; the adjudicator decides
/// and calls back `IDisputedTasks.settleDispute(dispute, settlement)` exactly once.
interface IAdjudicator {
    /// @notice Emitted when a dispute is opened.
    /// @param dispute The adjudicator's dispute id.
    /// @param task The task id in the task contract.
    /// @param k The challenged interval.
    /// @param reason Why it is challenged.
    event DisputeOpened(uint256 indexed dispute, uint256 indexed task, uint256 k, Reason reason);

    /// @notice Open a dispute over interval `k` of `task`; only the task contract may call this.
    /// @param task The task id.
    /// @param k The challenged interval.
    /// @param reason Why it is challenged.
    /// @return dispute The new dispute's id (never 0).
    function openDispute(uint256 task, uint256 k, Reason reason) external returns (uint256 dispute);

    /// @notice Whether `account` may commit a challenge on `task` now: not while, as an auditor, it is
    /// eligible for an armed, undrawn round of a dispute of the task, or seated on one (protocol 4.2).
    /// @param task The task id.
    /// @param account Who would commit.
    /// @return False to refuse the commit.
    function mayChallenge(uint256 task, address account) external view returns (bool);

    /// @notice Longest replay of one interval a task may declare: the committee's commit window covers L
    /// such replays (TrainingTasks refuses tasks declaring more).
    /// @return Seconds.
    function maxReplaySeconds() external view returns (uint64);

    /// @notice The task contract this adjudicator answers to (checked when the task contract is built).
    /// @return The task contract's address.
    function taskContract() external view returns (address);
}
