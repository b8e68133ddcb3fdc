// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IAdjudicator
/// @notice What TrainingTasks needs from a dispute court (protocol section 4.2), so the staked
/// auditor committee (AuditCommittee) can be swapped without touching the task contract.
/// @dev Flow: TrainingTasks opens a dispute when a challenge is revealed (its id, task, interval and arm
/// block in the task contract's record; `IDisputedTasks.DisputeOpened`); the adjudicator takes it up from
/// that record when its first round is drawn (so a reveal pays for no storage of the adjudicator's),
/// decides, and calls back `IDisputedTasks.settleDispute(dispute, settlement)` exactly once, which credits
/// the panel's money to the adjudicator (pulled with the task contract's `withdraw`).
interface IAdjudicator {
    /// @notice What round 0's panel is owed for replaying an interval that takes `replaySeconds`: the
    /// panel's share of a slashed provider bond must cover it, so that a junk task (posted, provided and
    /// challenged by one attacker to make the committee work) pays for the work it causes.
    /// @param replaySeconds The replay time a task declares.
    /// @return Wei.
    function replayCost(uint64 replaySeconds) external view returns (uint256);

    /// @notice Longest replay of one interval a task may declare: the committee's commit window covers L
    /// such replays (TrainingTasks refuses tasks declaring more).
    /// @return Seconds.
    function maxReplaySeconds() external view returns (uint64);

    /// @notice The task contract this adjudicator answers to (checked when the task contract is built).
    /// @return The task contract's address.
    function taskContract() external view returns (address);
}
