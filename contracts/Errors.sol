// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {BatchStatus, TaskStatus} from "./Types.sol";

// --- parameters -------------------------------------------------------------------------------

/// @notice postTask: `totalSteps` (N) must be > 0.
error ZeroTotalSteps();

/// @notice postTask: `stride` (s) must be > 0.
error ZeroStride();

/// @notice postTask: `intervalsPerBatch` (m) must be in 1 .. 256.
/// @param intervalsPerBatch The value given.
error InvalidIntervalsPerBatch(uint256 intervalsPerBatch);

/// @notice postTask: `sampleBps` must be in 1 .. 10000.
/// @param sampleBps The value given.
error InvalidSampleBps(uint256 sampleBps);

/// @notice postTask: every window must be > 0 and at most MAX_WINDOW.
/// @param window The value given.
error InvalidWindow(uint64 window);

/// @notice postTask: the deadline must be later than the current block.
/// @param deadline The deadline given.
/// @param nowTime The current block's timestamp.
error DeadlineNotInFuture(uint64 deadline, uint64 nowTime);

/// @notice Constructor: a basis-point share above 10000.
/// @param bps The value given.
error InvalidBps(uint256 bps);

/// @notice Constructor: SEED_DELAY must be at least 1 block.
error ZeroSeedDelay();

// --- who and what ------------------------------------------------------------------------------

/// @notice The task is not in a status that allows this call (None: no such task).
/// @param task The task id.
/// @param status Its current status.
error WrongTaskStatus(uint256 task, TaskStatus status);

/// @notice The batch is not in a status that allows this call.
/// @param task The task id.
/// @param j The batch index.
/// @param status Its current status.
error WrongBatchStatus(uint256 task, uint256 j, BatchStatus status);

/// @notice Only the task's owner may do this.
/// @param task The task id.
/// @param caller Who called.
error NotOwner(uint256 task, address caller);

/// @notice Only the task's provider may do this.
/// @param task The task id.
/// @param caller Who called.
error NotProvider(uint256 task, address caller);

/// @notice `msg.value` must equal the bond exactly.
/// @param expected The bond.
/// @param sent The value sent.
error WrongBond(uint256 expected, uint256 sent);

// --- time --------------------------------------------------------------------------------------

/// @notice The task's deadline has passed.
/// @param task The task id.
/// @param deadline When it passed.
error DeadlinePassed(uint256 task, uint64 deadline);

/// @notice The task's deadline has not passed yet.
/// @param task The task id.
/// @param deadline When it will.
error DeadlineNotReached(uint256 task, uint64 deadline);

/// @notice The batch's seed block is not mined yet: drawSeed needs `block.number >= readyAt`.
/// @param task The task id.
/// @param j The batch index.
/// @param readyAt First block number at which drawSeed is allowed.
error SeedNotReady(uint256 task, uint256 j, uint256 readyAt);

/// @notice The batch's opening window has closed.
/// @param task The task id.
/// @param j The batch index.
/// @param closedAt When it closed.
error OpeningWindowClosed(uint256 task, uint256 j, uint64 closedAt);

/// @notice The batch's opening window is still open.
/// @param task The task id.
/// @param j The batch index.
/// @param closesAt When it closes.
error OpeningWindowOpen(uint256 task, uint256 j, uint64 closesAt);

/// @notice A challenge window of the task is still open.
/// @param task The task id.
/// @param closesAt When the last one closes.
error ChallengeWindowOpen(uint256 task, uint64 closesAt);

// --- batches and openings ----------------------------------------------------------------------

/// @notice Batches are committed strictly in order.
/// @param task The task id.
/// @param expected The next batch to commit.
/// @param given The batch given.
error BatchOutOfOrder(uint256 task, uint256 expected, uint256 given);

/// @notice Not every batch of the task is opened yet.
/// @param task The task id.
/// @param opened Batches opened.
/// @param total Batches in the task.
error BatchesNotOpened(uint256 task, uint256 opened, uint256 total);

/// @notice openBatch needs at least one opening.
/// @param task The task id.
/// @param j The batch index.
error EmptyOpening(uint256 task, uint256 j);

/// @notice The interval is not in the batch's sample.
/// @param task The task id.
/// @param k The interval.
error IntervalNotSampled(uint256 task, uint256 k);

/// @notice The interval is already opened (in this call or an earlier one).
/// @param task The task id.
/// @param k The interval.
error DuplicateOpening(uint256 task, uint256 k);

/// @notice A step count is not the one the task's terms fix.
/// @param k The interval whose step count is wrong.
/// @param expected `min((k + 1) * s, N)`.
/// @param given The value given.
error WrongStep(uint256 k, uint256 expected, uint256 given);

/// @notice A Merkle proof does not place the leaf of interval `k` under the committed root.
/// @param task The task id.
/// @param k The interval whose leaf is not proven.
error InvalidProof(uint256 task, uint256 k);

// --- money -------------------------------------------------------------------------------------

/// @notice The caller has no credit to withdraw.
/// @param account The caller.
error NothingToWithdraw(address account);

/// @notice Sending the credit failed; the credit is restored.
/// @param account The recipient.
/// @param amount The amount.
error TransferFailed(address account, uint256 amount);
