// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IAdjudicator
/// @notice What TrainingTasks needs from a dispute court (protocol section 4.2), so the staked
/// auditor committee (AuditCommittee) can be swapped without touching the task contract.
/// @dev Flow: TrainingTasks calls `openDispute` when a challenge is revealed; the adjudicator draws a
/// panel, runs the vote and calls back `TrainingTasks.settleDispute(dispute, verdict, panelists)`,
/// where `panelists` are the majority panelists to share the panel fee (empty unless a majority).
interface IAdjudicator {
    /// @notice Emitted when a dispute is opened.
    /// @param dispute The adjudicator's dispute id.
    /// @param task The task id in the calling contract.
    /// @param k The challenged interval.
    /// @param reason 1 = out_of_bounds, 2 = unavailable.
    event DisputeOpened(uint256 indexed dispute, uint256 indexed task, uint256 k, uint8 reason);

    /// @notice Open a dispute over interval `k` of `task`; only the task contract may call this.
    /// @param task The task id.
    /// @param k The challenged interval.
    /// @param reason 1 = out_of_bounds, 2 = unavailable.
    /// @param excluded Parties that may not sit on the panel: provider, owner, challenger.
    /// @return dispute The new dispute's id.
    function openDispute(
        uint256 task,
        uint256 k,
        uint8 reason,
        address[3] calldata excluded
    ) external returns (uint256 dispute);

    /// @notice Whether `dispute` is still undecided.
    /// @param dispute The dispute id.
    /// @return True until the adjudicator has settled it.
    function isOpen(uint256 dispute) external view returns (bool);
}
