// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {BatchStatus, DisputeStatus, TaskStatus} from "./Types.sol";

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

/// @notice postTask: a bond below its minimum (junk disputes must never be free).
/// @param which "provider", "challenger" or "owner".
/// @param minimum The minimum.
/// @param given The bond given.
error BondTooLow(string which, uint256 minimum, uint256 given);

/// @notice postTask: a challenger bond above MAX_CHALLENGER_BOND (the task's held bonds would overflow).
/// @param maximum The maximum.
/// @param given The bond given.
error BondTooHigh(uint256 maximum, uint256 given);

/// @notice postTask: the declared replay time must be in 1 .. the adjudicator's maxReplaySeconds, so a
/// panelist can replay every seat it answers for within one commit window.
/// @param replaySeconds The value given.
/// @param max The adjudicator's maxReplaySeconds.
error InvalidReplaySeconds(uint64 replaySeconds, uint64 max);

/// @notice Constructor: a basis-point share above 10000.
/// @param bps The value given.
error InvalidBps(uint256 bps);

/// @notice BlockhashRandomness's constructor: DELAY must be at least 1 block.
error ZeroSeedDelay();

/// @notice Constructor: a triple of payout shares must sum to 10000 bps.
/// @param sum The sum given.
error SharesNotWhole(uint256 sum);

/// @notice Constructor: the adjudicator is wired to another task contract.
/// @param adjudicator The adjudicator given.
/// @param itsTasks The task contract it answers to.
error AdjudicatorMismatch(address adjudicator, address itsTasks);

/// @notice Constructor: a committee parameter is out of range.
/// @param name Which parameter.
/// @param value The value given.
error InvalidParameter(string name, uint256 value);

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

/// @notice Only the adjudicator may do this.
/// @param caller Who called.
error NotAdjudicator(address caller);

/// @notice Only the task contract may do this.
/// @param caller Who called.
error NotTaskContract(address caller);

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

/// @notice The batch's randomness target is not ready yet (its block not mined, its drand round not
/// submitted).
/// @param task The task id.
/// @param j The batch index.
/// @param target The randomness target whose value the draw waits for (a block must be mined, a drand
/// round submitted).
error SeedNotReady(uint256 task, uint256 j, uint256 target);

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

/// @notice requestOpening: the interval cannot be requested: it is beyond the task's last interval, or
/// already opened (sampled, or requested before).
/// @param task The task id.
/// @param k The interval.
error NotRequestable(uint256 task, uint256 k);

/// @notice requestOpening: the sender has asked for MAX_REQUESTS_PER_BATCH targeted openings of this batch already.
/// @param task The task id.
/// @param j The batch index.
/// @param maximum MAX_REQUESTS_PER_BATCH.
error TooManyRequests(uint256 task, uint256 j, uint256 maximum);

/// @notice requestOpening: the batch's challenge window has closed.
/// @param task The task id.
/// @param j The batch index.
/// @param closedAt When it closed.
error BatchWindowClosed(uint256 task, uint256 j, uint64 closedAt);

/// @notice The interval has no request in the state this call needs (pending to open or slash, pending or
/// opened to settle).
/// @param task The task id.
/// @param k The interval.
error NoRequest(uint256 task, uint256 k);

/// @notice The requested interval's opening window has closed (openRequested) or is still open
/// (slashUnopenedRequest).
/// @param task The task id.
/// @param k The interval.
/// @param openBy When the window closes.
error RequestWindow(uint256 task, uint256 k, uint64 openBy);

/// @notice Targeted openings of the task are still unopened.
/// @param task The task id.
/// @param unopened How many.
error RequestsNotOpened(uint256 task, uint256 unopened);

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

// --- challenges and disputes -----------------------------------------------------------------

/// @notice No challenge window of the task is open.
/// @param task The task id.
/// @param closedAt When the last one closed (0: no batch opened yet).
error NoChallengeWindowOpen(uint256 task, uint64 closedAt);

/// @notice The sender already committed this commitment: commit again with a fresh salt. (Commits are
/// keyed by sender, so copying another's commitment blocks nobody.)
/// @param commitment The commitment.
error CommitmentExists(bytes32 commitment);

/// @notice postTask: the challenge reveal window is longer than MAX_REVEAL_WINDOW (a pending commit
/// delays slashUnopened and abandon by at most that).
/// @param window The window given, in seconds.
/// @param max MAX_REVEAL_WINDOW.
error RevealWindowTooLong(uint64 window, uint64 max);

/// @notice The interval was settled sound after this commit was made: it is final, never challenged
/// again; the commit can only expire.
/// @param task The task id.
/// @param k The interval.
error IntervalFinal(uint256 task, uint256 k);

/// @notice The commit holds no bond to claim: it is not joined to a dispute, the dispute is still open,
/// or the dispute found the interval sound (its bonds were settled then).
/// @param task The task id.
/// @param commitment The commitment.
error NothingToClaim(uint256 task, bytes32 commitment);

/// @notice No lead's share of a slash waits to be released for this task.
/// @param task The task id.
error NoLeadShareWaiting(uint256 task);

/// @notice No pending challenge commit of this task matches (a reveal hashes in its sender, so a
/// copied reveal lands here).
/// @param task The task id.
/// @param commitment The commitment looked up.
error UnknownCommitment(uint256 task, bytes32 commitment);

/// @notice The commit's reveal window has closed.
/// @param commitment The commitment.
/// @param closedAt When it closed.
error RevealWindowClosed(bytes32 commitment, uint64 closedAt);

/// @notice The commit's reveal window is still open.
/// @param commitment The commitment.
/// @param closesAt When it closes.
error RevealWindowOpen(bytes32 commitment, uint64 closesAt);

/// @notice A challenge reason must be 1 (out_of_bounds) or 2 (unavailable).
/// @param reason The value given.
error InvalidReason(uint8 reason);

/// @notice The interval is not sampled and opened, so it cannot be challenged.
/// @param task The task id.
/// @param k The interval.
error IntervalNotOpened(uint256 task, uint256 k);

/// @notice The interval's challenge window was closed when the challenge was committed.
/// @param task The task id.
/// @param k The interval.
/// @param closedAt When its window closed.
error IntervalWindowClosed(uint256 task, uint256 k, uint64 closedAt);

/// @notice The interval's challenge window had not opened yet when the challenge was committed (its
/// batch was opened later).
/// @param task The task id.
/// @param k The interval.
/// @param opensAt When its window opened.
error IntervalWindowNotOpen(uint256 task, uint256 k, uint64 opensAt);

/// @notice A dispute of the task is still open.
/// @param task The task id.
/// @param disputes How many.
error DisputeOpen(uint256 task, uint256 disputes);

/// @notice A challenge commit of the task is neither revealed nor expired.
/// @param task The task id.
/// @param commits How many.
error ChallengePending(uint256 task, uint256 commits);

/// @notice No open dispute has this id.
/// @param dispute The dispute id.
error UnknownDispute(uint256 dispute);

// --- committee -------------------------------------------------------------------------------

/// @notice The dispute is not in a status that allows this call (None: no such dispute).
/// @param dispute The dispute id.
/// @param status Its current status.
error WrongDisputeStatus(uint256 dispute, DisputeStatus status);

/// @notice The panel's randomness target is not ready yet (its block not mined, its drand round not
/// submitted).
/// @param dispute The dispute id.
/// @param target The target.
error PanelNotReady(uint256 dispute, uint256 target);

/// @notice The caller is not on the dispute's current panel.
/// @param dispute The dispute id.
/// @param caller Who called.
error NotPanelist(uint256 dispute, address caller);

/// @notice The vote commit window has closed.
/// @param dispute The dispute id.
/// @param closedAt When it closed.
error CommitWindowClosed(uint256 dispute, uint64 closedAt);

/// @notice The vote reveal window is not open: it opens when the commit window closes.
/// @param dispute The dispute id.
/// @param opensAt When it opens.
/// @param closesAt When it closes.
error VoteRevealClosed(uint256 dispute, uint64 opensAt, uint64 closesAt);

/// @notice The vote reveal window has not closed yet.
/// @param dispute The dispute id.
/// @param closesAt When it closes.
error VotingNotOver(uint256 dispute, uint64 closesAt);

/// @notice The panelist has no vote commit to reveal, or already revealed it.
/// @param dispute The dispute id.
/// @param panelist The panelist.
error NothingToReveal(uint256 dispute, address panelist);

/// @notice The revealed vote and salt do not hash to the commitment.
/// @param dispute The dispute id.
/// @param panelist The panelist.
error VoteMismatch(uint256 dispute, address panelist);

/// @notice A ballot must be 1 (sound), 2 (faulty), 3 (unavailable) or 4 (abstain).
/// @param vote The value given.
error InvalidVote(uint8 vote);

/// @notice The caller is already a registered auditor.
/// @param auditor The caller.
error AlreadyRegistered(address auditor);

/// @notice The caller is not a registered auditor.
/// @param account The caller.
error NotRegistered(address account);

/// @notice The registry is full.
/// @param max Its size.
error RegistryFull(uint256 max);

/// @notice The auditor already asked to exit.
/// @param auditor The auditor.
error ExitAlreadyRequested(address auditor);

/// @notice The auditor has not asked to exit.
/// @param auditor The auditor.
error ExitNotRequested(address auditor);

/// @notice The exit cooldown has not passed.
/// @param auditor The auditor.
/// @param endsAt When it passes.
error CooldownNotOver(address auditor, uint64 endsAt);

/// @notice The auditor still sits on disputes that have not resolved: its stake answers for them.
/// @param auditor The auditor.
/// @param seats How many.
error SeatsOpen(address auditor, uint256 seats);

/// @notice register: the stake sent is below AUDITOR_STAKE ((L + 2) x penalty).
/// @param required AUDITOR_STAKE.
/// @param sent The value sent.
error StakeTooLow(uint256 required, uint256 sent);

/// @notice A stake must fit 128 bits (the committee's checkpoints pack it).
/// @param stake The stake it would reach.
error StakeTooLarge(uint256 stake);

/// @notice The round's draw cannot go on: MAX_DRAW_DELAY passed, its target's value is gone, or every
/// try was made; `rearm` it.
/// @param dispute The dispute id.
error DrawExpired(uint256 dispute);

/// @notice The appeal window of the decided round is still open: the outcome may still be appealed.
/// @param dispute The dispute id.
/// @param closesAt When it closes.
error AppealWindowOpen(uint256 dispute, uint64 closesAt);

/// @notice The appeal window of the decided round has closed.
/// @param dispute The dispute id.
/// @param closedAt When it closed.
error AppealWindowClosed(uint256 dispute, uint64 closedAt);

/// @notice An appeal needs the next round's panel size of registered auditors.
/// @param needed The next round's panel size.
/// @param registered Auditors registered now.
error TooFewAuditors(uint256 needed, uint256 registered);

/// @notice The round's draw can still complete: it is re-armed only once it cannot.
/// @param dispute The dispute id.
error CannotRearm(uint256 dispute);

/// @notice A panelist who has become interested in the dispute's task (it challenged it, or requested an
/// opening of it, since it was drawn) cannot reveal a ballot: its seat counts as seated with no vote, neither
/// paid nor penalised.
/// @param dispute The dispute id.
/// @param panelist The panelist.
error InterestedPanelist(uint256 dispute, address panelist);

/// @notice Every seat of the dispute is settled already.
/// @param dispute The dispute id.
error SeatsAlreadySettled(uint256 dispute);

// --- randomness backends ---------------------------------------------------------------------

/// @notice BlockhashRandomness's constructor: block hashes are grindable by block builders, so this
/// backend is refused on any chain but the devnet's unless the deployer says otherwise.
/// @param chainId The chain's id.
error BlockhashOffDevnet(uint256 chainId);

/// @notice DrandBeacon's constructor: the public key is not a 256-byte G2 point other than infinity, or
/// the period, genesis time or delay is zero.
error InvalidBeaconParameters();

/// @notice submitRound: a signature must be a 128-byte (uncompressed, EIP-2537) G1 point.
/// @param length The length given.
error MalformedBeaconSignature(uint256 length);

/// @notice submitRound: drand's rounds start at 1.
error NoRoundZero();

/// @notice roundAt: the time's round does not fit in 64 bits.
/// @param timestamp The time given.
error RoundOutOfRange(uint256 timestamp);

/// @notice submitRound: the signature is not the beacon's signature of this round.
/// @param round The round.
error InvalidBeaconSignature(uint64 round);

// --- money -------------------------------------------------------------------------------------

/// @notice The caller has no credit to withdraw.
/// @param account The caller.
error NothingToWithdraw(address account);

/// @notice Sending the credit failed; the credit is restored.
/// @param account The recipient.
/// @param amount The amount.
error TransferFailed(address account, uint256 amount);
