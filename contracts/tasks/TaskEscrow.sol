// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IAdjudicator} from "../interfaces/IAdjudicator.sol";
import {IDisputedTasks} from "../interfaces/IDisputedTasks.sol";
import {IRandomness} from "../interfaces/IRandomness.sol";

import {TaskClock} from "../libraries/TaskClock.sol";
import {PullPayments} from "../utils/PullPayments.sol";
import {
    Batch,
    BatchStatus,
    Bonds,
    MinBonds,
    ChallengeCommit,
    DisputeRecord,
    OpenedInterval,
    OpeningRequest,
    Shares,
    Task,
    TaskStatus,
    TaskTerms,
    Windows
} from "../Types.sol";
import {
    AdjudicatorMismatch,
    BatchesNotOpened,
    BatchOutOfOrder,
    BondTooHigh,
    BondTooLow,
    ChallengePending,
    ChallengeWindowOpen,
    DeadlineNotInFuture,
    DeadlineNotReached,
    DeadlinePassed,
    DisputeOpen,
    InvalidBps,
    InvalidIntervalsPerBatch,
    InvalidSampleBps,
    InvalidWindow,
    InvalidReplaySeconds,
    NotOwner,
    NotProvider,
    RevealWindowTooLong,
    RequestsNotOpened,
    SharesNotWhole,
    WrongBatchStatus,
    WrongBond,
    WrongTaskStatus,
    ZeroStride,
    ZeroTotalSteps
} from "../Errors.sol";

/// @title TaskEscrow
/// @notice The escrow and commitments part of TrainingTasks (protocol sections 4.1-4.3): the task's state
/// and money, and a task's life outside its openings and challenges. An owner posts a task with its reward
/// (or cancels it while nobody accepted it), a provider accepts it with its bond and commits its evidence
/// batch by batch as ordered Merkle roots before the deadline; the task finalizes (provider paid), or is
/// abandoned after the deadline (owner refunded). Also the held challenger bonds' two ways out (refunded,
/// or split as a sound challenge's) and the checks every part shares.
/// @dev Abstract: TaskOpenings and TrainingTasks build on it. Every state variable of TrainingTasks is
/// declared here (the parts add none), so its storage layout reads in one place, and is the one the
/// contract had before it was split into parts.
abstract contract TaskEscrow is IDisputedTasks, PullPayments {
    /// @notice Basis points of a whole.
    uint256 public constant BPS = 10_000;
    /// @notice Largest batch: sampled positions fit one 256-bit bitmap.
    uint256 public constant MAX_INTERVALS_PER_BATCH = 256;
    /// @notice Longest allowed window, so no window end can overflow and strand a task.
    uint64 public constant MAX_WINDOW = 365 days;
    /// @notice Longest challenge reveal window: a pending commit holds back slashUnopened and abandon
    /// for at most this long.
    uint64 public constant MAX_REVEAL_WINDOW = 1 hours;
    /// @notice Largest challenger bond (about 1.2 million ETH): a dispute's refund per bond is packed in 80
    /// bits, and a task's held bonds (up to 2^32 commits) fit their uint128 counter.
    uint256 public constant MAX_CHALLENGER_BOND = type(uint80).max;

    /// @notice The randomness backend: a batch's sample is drawn from the value of the target it names at
    /// the batch's commit.
    IRandomness public immutable RANDOMNESS;
    /// @notice Share of the provider bond paid to whoever slashes an unopened batch, in bps.
    uint256 public immutable KEEPER_BPS;
    /// @notice The court that decides disputes and calls `settleDispute`.
    IAdjudicator public immutable ADJUDICATOR;
    /// @notice Smallest provider bond a task may ask for.
    uint256 public immutable MIN_PROVIDER_BOND;
    /// @notice Smallest challenger bond a task may ask for: junk disputes are never free.
    uint256 public immutable MIN_CHALLENGER_BOND;
    /// @notice Targeted openings (requestOpening) one requester may ask of a batch. Per requester, so that
    /// nobody can fill a batch's room for others; each request costs its own bond (the provider's share of
    /// it, the rest burned, when the task finalizes), which is what bounds the work of opening them.
    uint8 public immutable MAX_REQUESTS_PER_BATCH;

    // Payout shares of section 4.2 (constructor `Shares`), in bps.
    uint256 internal immutable _FAULTY_LEAD_BPS;
    uint256 internal immutable _FAULTY_PANEL_BPS;
    uint256 private immutable _SOUND_PROVIDER_BPS;
    uint256 private immutable _SOUND_PANEL_BPS;

    /// @notice Number of tasks posted; task ids are 1 .. taskCount.
    uint256 public taskCount;
    /// @notice Number of challenge commits ever made: the last one's sequence number.
    uint64 public commitCount;
    /// @notice Number of disputes opened; dispute ids are 1 .. disputeCount (the adjudicator's too).
    uint256 public disputeCount;

    mapping(uint256 task => Task) internal _tasks;
    mapping(uint256 task => mapping(uint256 j => Batch)) internal _batches;
    mapping(uint256 task => mapping(uint256 k => OpenedInterval)) internal _opened;
    mapping(address challenger => mapping(bytes32 commitment => ChallengeCommit)) internal _commits;
    mapping(uint256 dispute => DisputeRecord) internal _disputes;
    mapping(uint256 task => mapping(address account => uint256 blockNumber)) internal _firstCommit;
    mapping(uint256 task => mapping(uint256 k => OpeningRequest)) internal _requests;
    mapping(uint256 task => mapping(uint256 j => mapping(address requester => uint8 count))) internal _requestsBy;
    mapping(uint256 task => mapping(address requester => uint64 seq)) internal _firstRequestSeq;

    /// @notice A task was posted; `terms.reward` is escrowed.
    /// @param task The new task's id.
    /// @param owner Who posted it.
    /// @param specCID IPFS CID of the TaskSpec whose keccak256 is `terms.specHash`.
    /// @param terms Everything the owner fixed.
    event TaskPosted(uint256 indexed task, address indexed owner, string specCID, TaskTerms terms);

    /// @notice A provider accepted the task with its bond.
    /// @param task The task id.
    /// @param provider The provider.
    /// @param bond The bond escrowed.
    event TaskAccepted(uint256 indexed task, address indexed provider, uint256 bond);

    /// @notice The owner cancelled a task nobody had accepted.
    /// @param task The task id.
    /// @param owner The owner, credited with the reward.
    event TaskCancelled(uint256 indexed task, address indexed owner);

    /// @notice The provider committed batch `j`.
    /// @param task The task id.
    /// @param j The batch index.
    /// @param root Root of the batch's ordered Merkle tree.
    /// @param manifestCID IPFS CID of the batch manifest.
    event BatchCommitted(uint256 indexed task, uint256 indexed j, bytes32 root, string manifestCID);

    /// @notice The task finalized; the provider is credited reward and bond.
    /// @param task The task id.
    /// @param provider The provider.
    event TaskFinalized(uint256 indexed task, address indexed provider);

    /// @notice The deadline passed before every batch was committed; the owner gets the reward and the
    /// provider bond.
    /// @param task The task id.
    /// @param caller Who called abandon.
    event TaskAbandoned(uint256 indexed task, address indexed caller);

    /// @param randomness RANDOMNESS, the backend the adjudicator draws panels from too.
    /// @param keeperBps KEEPER_BPS, at most 10000.
    /// @param shares Payout shares of section 4.2; each triple sums to 10000.
    /// @param minBonds The smallest provider and challenger bonds a task may carry (protocol 4.2).
    /// @param maxRequestsPerBatch Targeted openings one requester may ask of a batch, 0 .. 255 (0: none).
    /// @param adjudicator The dispute court; it must already name this contract as its task contract
    /// (deploy it first, at this contract's predicted address).
    constructor(
        IRandomness randomness,
        uint256 keeperBps,
        Shares memory shares,
        MinBonds memory minBonds,
        uint8 maxRequestsPerBatch,
        IAdjudicator adjudicator
    ) {
        if (keeperBps > BPS) revert InvalidBps(keeperBps);
        _checkWhole(uint256(shares.faultyLeadBps) + shares.faultyPanelBps + shares.faultyOwnerBps);
        _checkWhole(uint256(shares.soundProviderBps) + shares.soundPanelBps + shares.soundBurnBps);
        // INVARIANT: the court and this contract are wired to each other, and to nothing else.
        address itsTasks = adjudicator.taskContract();
        if (itsTasks != address(this)) revert AdjudicatorMismatch(address(adjudicator), itsTasks);
        RANDOMNESS = randomness;
        KEEPER_BPS = keeperBps;
        ADJUDICATOR = adjudicator;
        MIN_PROVIDER_BOND = minBonds.provider;
        MIN_CHALLENGER_BOND = minBonds.challenger;
        MAX_REQUESTS_PER_BATCH = maxRequestsPerBatch;
        _FAULTY_LEAD_BPS = shares.faultyLeadBps;
        _FAULTY_PANEL_BPS = shares.faultyPanelBps;
        _SOUND_PROVIDER_BPS = shares.soundProviderBps;
        _SOUND_PANEL_BPS = shares.soundPanelBps;
    }

    // --- owner and provider ------------------------------------------------------------------

    /// @notice Post a task; `msg.value` is the reward.
    /// @param specHash keccak256 of the canonical TaskSpec.
    /// @param specCID IPFS CID of the TaskSpec (emitted, not stored).
    /// @param initDigest sha256 of the initial checkpoint.
    /// @param totalSteps N, > 0, under 2^48 (a dispute keeps its interval in 48 bits).
    /// @param stride s, > 0.
    /// @param intervalsPerBatch m, 1 .. 256.
    /// @param sampleBps Share of each batch sampled, 1 .. 10000.
    /// @param bonds The provider bond (exact, for acceptTask) and the challenger bond (exact, for each
    /// challenge), each at least its minimum.
    /// @param replaySeconds The slowest honest replay of one interval, 1 .. the adjudicator's
    /// maxReplaySeconds.
    /// @param windows The task's windows, each in 1 .. MAX_WINDOW seconds, the reveal window at most
    /// MAX_REVEAL_WINDOW.
    /// @param deadline Commit deadline, later than now.
    /// @return task The new task's id.
    function postTask(
        bytes32 specHash,
        string calldata specCID,
        bytes32 initDigest,
        uint48 totalSteps,
        uint64 stride,
        uint16 intervalsPerBatch,
        uint16 sampleBps,
        Bonds calldata bonds,
        uint64 replaySeconds,
        Windows calldata windows,
        uint64 deadline
    ) external payable returns (uint256 task) {
        // INVARIANT: every task has a shape it can be trained in and windows that can close.
        _checkTerms(totalSteps, stride, intervalsPerBatch, sampleBps, windows, deadline);
        _checkBonds(bonds, replaySeconds);
        task = ++taskCount;
        _storeTerms(task, specHash, initDigest, bonds, windows);
        Task storage t = _tasks[task];
        t.terms.replaySeconds = replaySeconds;
        t.terms.totalSteps = totalSteps;
        t.terms.stride = stride;
        t.terms.deadline = deadline;
        t.terms.intervalsPerBatch = intervalsPerBatch;
        t.terms.sampleBps = sampleBps;
        t.owner = msg.sender;
        t.status = TaskStatus.Posted;
        t.batchCount = _ceilDiv(_ceilDiv(totalSteps, stride), intervalsPerBatch);
        _emitPosted(task, specCID);
    }

    /// @notice Cancel a task nobody accepted; the owner is credited the reward.
    /// @param task The task id.
    function cancel(uint256 task) external {
        Task storage t = _requireStatus(task, TaskStatus.Posted);
        // INVARIANT: only the owner decides to take the offer back.
        if (msg.sender != t.owner) revert NotOwner(task, msg.sender);
        t.status = TaskStatus.Cancelled;
        emit TaskCancelled(task, msg.sender);
        _credit(t.owner, task, t.terms.reward);
    }

    /// @notice Accept a posted task with exactly its provider bond; the caller becomes the provider.
    /// @param task The task id.
    function acceptTask(uint256 task) external payable {
        Task storage t = _requireStatus(task, TaskStatus.Posted);
        // INVARIANT: nobody bonds into a task that could only be abandoned.
        if (!TaskClock.isBefore(t.terms.deadline)) revert DeadlinePassed(task, t.terms.deadline);
        // INVARIANT: a bond is exactly the posted amount.
        if (msg.value != t.terms.providerBond) revert WrongBond(t.terms.providerBond, msg.value);
        t.provider = msg.sender;
        t.status = TaskStatus.Accepted;
        emit TaskAccepted(task, msg.sender, msg.value);
    }

    /// @notice Commit batch `j`: batches strictly in order, before the deadline; the last one moves
    /// the task to Committed.
    /// @param task The task id.
    /// @param j The batch index, equal to the number of batches committed so far.
    /// @param root Root of the batch's ordered Merkle tree (protocol 2.4).
    /// @param manifestCID IPFS CID of the batch manifest (emitted, not stored).
    function commitBatch(uint256 task, uint256 j, bytes32 root, string calldata manifestCID) external {
        Task storage t = _requireStatus(task, TaskStatus.Accepted);
        _requireProvider(task, t);
        // INVARIANT: batch j is committed once, after batches 0 .. j-1.
        if (j != t.committedBatches) revert BatchOutOfOrder(task, t.committedBatches, j);
        // INVARIANT: no commitment after the deadline, from which the task may be abandoned.
        if (!TaskClock.isBefore(t.terms.deadline)) revert DeadlinePassed(task, t.terms.deadline);
        Batch storage b = _batches[task][j];
        b.root = root;
        // INVARIANT: the sample's target is fixed now, and its value is unknown to everyone now.
        b.seedTarget = RANDOMNESS.targetOf(block.number, block.timestamp);
        b.status = BatchStatus.Committed;
        t.committedBatches = uint64(j + 1);
        if (j + 1 == t.batchCount) t.status = TaskStatus.Committed;
        emit BatchCommitted(task, j, root, manifestCID);
    }

    // --- anyone --------------------------------------------------------------------------------

    /// @notice After the deadline, end a task whose batches are not all committed: the owner is
    /// credited the reward and the provider bond.
    /// @param task The task id.
    function abandon(uint256 task) external {
        Task storage t = _requireStatus(task, TaskStatus.Accepted);
        // INVARIANT: the provider has until the deadline to commit every batch.
        if (TaskClock.isBefore(t.terms.deadline)) revert DeadlineNotReached(task, t.terms.deadline);
        // INVARIANT: a challenge decides first: a faulty verdict pays the lead challenger from the bond.
        _requireNoChallenge(task, t);
        _requireNoReopenedWindow(task, t);
        t.status = TaskStatus.Abandoned;
        emit TaskAbandoned(task, msg.sender);
        _credit(t.owner, task, t.terms.reward + t.terms.providerBond);
    }

    /// @notice Finalize a committed task once every batch is opened and every challenge window has
    /// closed: the provider is credited reward and bond. O(1).
    /// @param task The task id.
    function finalize(uint256 task) external {
        Task storage t = _requireStatus(task, TaskStatus.Committed);
        // INVARIANT: every batch's sample was opened (so every batch had its challenge window).
        if (t.openedBatches != t.batchCount) revert BatchesNotOpened(task, t.openedBatches, t.batchCount);
        // INVARIANT: every targeted opening was opened (one left unopened is slashed instead).
        if (t.unopenedRequests != 0) revert RequestsNotOpened(task, t.unopenedRequests);
        // INVARIANT: watchers keep every challenge window whole.
        if (TaskClock.isBefore(t.challengeEnd)) revert ChallengeWindowOpen(task, t.challengeEnd);
        // INVARIANT: every challenge made in a window is revealed (or expired) and decided first.
        _requireNoChallenge(task, t);
        t.status = TaskStatus.Finalized;
        emit TaskFinalized(task, t.provider);
        _credit(t.provider, task, t.terms.reward + t.terms.providerBond);
    }

    // --- internal ------------------------------------------------------------------------------

    /// @dev Whether a provider still works on the task (Accepted or Committed).
    function _isActive(Task storage t) internal view returns (bool) {
        return t.status == TaskStatus.Accepted || t.status == TaskStatus.Committed;
    }

    /// @dev Reverts while a challenge of the task could still decide it: a pending commit or an open dispute.
    function _requireNoChallenge(uint256 task, Task storage t) internal view {
        if (t.pendingCommits != 0) revert ChallengePending(task, t.pendingCommits);
        if (t.openDisputes != 0) revert DisputeOpen(task, t.openDisputes);
    }

    /// @dev Reverts while a window a no-decision reopened is open. INVARIANT: between a no-decision and the
    /// watcher's fresh commit nothing is pending, so without this a provider's sock-puppet keeper could
    /// slash its own unopened batch (or its owner abandon the task) in that gap, mooting the watcher's
    /// challenge of a faulty interval and taking its lead share (review 7 of v3, F3).
    function _requireNoReopenedWindow(uint256 task, Task storage t) internal view {
        if (TaskClock.isBefore(t.reopenedUntil)) revert ChallengeWindowOpen(task, t.reopenedUntil);
    }

    /// @dev Sound: `bonds` challenger bonds go to the provider, the panel (returned: credited to the
    /// adjudicator at a settlement, burned for a reveal settled after it, which no panel judged) and `burned`.
    /// The provider's share of the `unavailable` of them (revealed with reason Unavailable) is burned too: a
    /// provider that withheld its files until a watcher challenged them as unavailable, then served them to
    /// the panels, would otherwise be paid for the bait (a ninth review).
    function _paySound(
        uint256 task,
        Task storage t,
        uint256 bonds,
        uint256 unavailable
    ) internal returns (uint256 toPanel) {
        uint256 total = bonds * t.terms.challengerBond;
        uint256 toProvider = ((bonds - unavailable) * t.terms.challengerBond * _SOUND_PROVIDER_BPS) / BPS;
        toPanel = (total * _SOUND_PANEL_BPS) / BPS;
        _credit(t.provider, task, toProvider);
        _burn(task, total - toProvider - toPanel);
    }

    /// @dev A held challenger bond leaves the task's account as `amount` credited to `challenger`.
    function _releaseBond(uint256 task, Task storage t, address challenger, uint256 amount) internal {
        t.heldBonds -= uint128(amount);
        _credit(challenger, task, amount);
    }

    /// @dev A triple of shares covers the whole.
    function _checkWhole(uint256 sum) internal pure {
        if (sum != BPS) revert SharesNotWhole(sum);
    }

    /// @dev The task, reverting unless it is in `status`.
    function _requireStatus(uint256 task, TaskStatus status) internal view returns (Task storage t) {
        t = _tasks[task];
        if (t.status != status) revert WrongTaskStatus(task, t.status);
    }

    /// @dev The task, reverting unless a provider works on it (Accepted or Committed).
    function _requireActive(uint256 task) internal view returns (Task storage t) {
        t = _tasks[task];
        if (!_isActive(t)) revert WrongTaskStatus(task, t.status);
    }

    /// @dev The batch, reverting unless it is in `status`.
    function _requireBatchStatus(uint256 task, uint256 j, BatchStatus status) internal view returns (Batch storage b) {
        b = _batches[task][j];
        if (b.status != status) revert WrongBatchStatus(task, j, b.status);
    }

    /// @dev Reverts unless the caller is the task's provider.
    function _requireProvider(uint256 task, Task storage t) internal view {
        if (msg.sender != t.provider) revert NotProvider(task, msg.sender);
    }

    /// @dev postTask's parameter checks (protocol 4.1).
    function _checkTerms(
        uint64 totalSteps,
        uint64 stride,
        uint16 intervalsPerBatch,
        uint16 sampleBps,
        Windows calldata windows,
        uint64 deadline
    ) internal view {
        if (totalSteps == 0) revert ZeroTotalSteps();
        if (stride == 0) revert ZeroStride();
        if (intervalsPerBatch == 0 || intervalsPerBatch > MAX_INTERVALS_PER_BATCH) {
            revert InvalidIntervalsPerBatch(intervalsPerBatch);
        }
        if (sampleBps == 0 || sampleBps > BPS) revert InvalidSampleBps(sampleBps);
        _checkWindow(windows.openingWindow);
        _checkWindow(windows.challengeWindow);
        _checkWindow(windows.challengeRevealWindow);
        if (windows.challengeRevealWindow > MAX_REVEAL_WINDOW) {
            revert RevealWindowTooLong(windows.challengeRevealWindow, MAX_REVEAL_WINDOW);
        }
        if (!TaskClock.isBefore(deadline)) revert DeadlineNotInFuture(deadline, TaskClock.current());
    }

    /// @dev postTask's bond checks (protocol 4.2): no bond below its minimum, so a junk challenge (or a
    /// throwaway provider or owner) always costs; a declared replay a panel can serve; a provider bond whose
    /// panel share pays round 0's replays of it.
    function _checkBonds(Bonds calldata bonds, uint64 replaySeconds) internal view {
        // INVARIANT: a panelist can replay every seat it answers for within one commit window.
        uint64 max = ADJUDICATOR.maxReplaySeconds();
        if (replaySeconds == 0 || replaySeconds > max) revert InvalidReplaySeconds(replaySeconds, max);
        // INVARIANT (v3): a junk task pays for the work it causes. Slashed (its own sock-puppet challenging
        // it), the task's provider bond pays the panel its share, which covers round 0's replays at the
        // declared replay time.
        uint256 minimum = _panelPaysReplays(ADJUDICATOR.replayCost(replaySeconds));
        if (minimum < MIN_PROVIDER_BOND) minimum = MIN_PROVIDER_BOND;
        if (bonds.provider < minimum) revert BondTooLow("provider", minimum, bonds.provider);
        if (bonds.challenger < MIN_CHALLENGER_BOND) {
            revert BondTooLow("challenger", MIN_CHALLENGER_BOND, bonds.challenger);
        }
        if (bonds.challenger > MAX_CHALLENGER_BOND) revert BondTooHigh(MAX_CHALLENGER_BOND, bonds.challenger);
    }

    /// @dev The smallest provider bond whose faulty panel share is at least `cost`.
    function _panelPaysReplays(uint256 cost) internal view returns (uint256) {
        if (cost == 0) return 0;
        if (_FAULTY_PANEL_BPS == 0) return type(uint256).max;
        return (cost * BPS + _FAULTY_PANEL_BPS - 1) / _FAULTY_PANEL_BPS;
    }

    /// @dev Part of postTask's storage writes, in a frame of its own: postTask's parameters leave no stack
    /// for them in the legacy pipeline.
    function _storeTerms(
        uint256 task,
        bytes32 specHash,
        bytes32 initDigest,
        Bonds calldata bonds,
        Windows calldata windows
    ) internal {
        TaskTerms storage terms = _tasks[task].terms;
        terms.specHash = specHash;
        terms.initDigest = initDigest;
        terms.reward = msg.value;
        terms.providerBond = bonds.provider;
        terms.challengerBond = bonds.challenger;
        terms.windows = windows;
    }

    /// @dev Emits TaskPosted with the terms as stored.
    function _emitPosted(uint256 task, string calldata specCID) internal {
        emit TaskPosted(task, msg.sender, specCID, _tasks[task].terms);
    }

    /// @dev A window is positive and short enough that `now + window` never overflows uint64.
    function _checkWindow(uint64 window) internal pure {
        if (window == 0 || window > MAX_WINDOW) revert InvalidWindow(window);
    }

    /// @dev `ceil(a / b)` for b > 0.
    function _ceilDiv(uint256 a, uint256 b) internal pure returns (uint64) {
        return uint64((a + b - 1) / b);
    }
}
