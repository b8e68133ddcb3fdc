// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IAdjudicator} from "./interfaces/IAdjudicator.sol";
import {IDisputedTasks} from "./interfaces/IDisputedTasks.sol";
import {IRandomness} from "./interfaces/IRandomness.sol";

import {LeafHash} from "./libraries/LeafHash.sol";
import {OrderedMerkle} from "./libraries/OrderedMerkle.sol";
import {Sampling} from "./libraries/Sampling.sol";
import {PullPayments} from "./utils/PullPayments.sol";
import {
    Batch,
    BatchStatus,
    Bonds,
    MinBonds,
    ChallengeCommit,
    CommitStatus,
    DisputeRecord,
    OpenedInterval,
    Opening,
    OpeningRequest,
    Reason,
    RequestStatus,
    Settlement,
    Shares,
    Task,
    TaskStatus,
    TaskTerms,
    Verdict,
    Windows
} from "./Types.sol";
import {
    AdjudicatorMismatch,
    BatchesNotOpened,
    BatchWindowClosed,
    BatchOutOfOrder,
    BondTooHigh,
    BondTooLow,
    ChallengePending,
    ChallengeWindowOpen,
    CommitmentExists,
    DeadlineNotInFuture,
    DeadlineNotReached,
    DeadlinePassed,
    DisputeOpen,
    DuplicateOpening,
    EmptyOpening,
    IntervalFinal,
    IntervalNotOpened,
    IntervalNotSampled,
    IntervalWindowClosed,
    InvalidBps,
    InvalidIntervalsPerBatch,
    InvalidProof,
    InvalidReason,
    InvalidSampleBps,
    InvalidWindow,
    IntervalWindowNotOpen,
    InvalidReplaySeconds,
    NoChallengeWindowOpen,
    NoRequest,
    NotRequestable,
    NotAdjudicator,
    NotOwner,
    NotProvider,
    NoLeadShareWaiting,
    NothingToClaim,
    OpeningWindowClosed,
    OpeningWindowOpen,
    RevealWindowClosed,
    RevealWindowOpen,
    RevealWindowTooLong,
    RequestsNotOpened,
    RequestWindow,
    SeedNotReady,
    SharesNotWhole,
    TooManyRequests,
    UnknownCommitment,
    UnknownDispute,
    WrongBatchStatus,
    WrongBond,
    WrongStep,
    WrongTaskStatus,
    ZeroStride,
    ZeroTotalSteps
} from "./Errors.sol";

/// @title TrainingTasks
/// @notice Escrow and commitments of outsourced training tasks (protocol sections 3, 4.1 and 4.2): an
/// owner posts a task with its reward, a provider bonds and commits its evidence batch by batch as
/// ordered Merkle roots, the randomness backend samples each batch, the provider opens the sample with
/// proofs checked here, watchers challenge opened intervals (commit-reveal, with a bond) before an
/// adjudicator, and the task finalizes (provider paid) or is slashed, abandoned or cancelled (owner
/// refunded). Every payout is a credit its owner pulls with `withdraw`.
/// Challenges (protocol 4.1-4.2): one question per interval (is its opening sound?), whatever reason a
/// challenger gives. Every reveal of k while its dispute is open joins it; the joined commit with the
/// smallest sequence number leads, so a copier who learns k from a reveal in the mempool never leads.
/// A sound verdict is final; a commit made before it pays as its challengers did. A faulty one slashes;
/// while challenges of the task made before the slashing lead's commit are still undecided, the lead's
/// share waits for them (the earliest lead found faulty, or left undecided after the slash, takes it) and
/// they are judged as if the task were live.
/// Joined bonds are pulled back with `claimBond` (no loop over challengers at settlement).
/// A dispute that ends with no decision reopens its interval's window: it judged nothing, so it never ends
/// the task (a run without a majority is one that its silent or abstaining seats could have decided).
/// @dev Randomness comes from RANDOMNESS (DrandBeacon; BlockhashRandomness on devnets).
/// Money invariant (protocol 4.3): this contract's balance equals the rewards and provider bonds of
/// tasks that are Posted, Accepted or Committed, plus every task's `heldBonds` (wei of challenger
/// bonds: pending commits and joined bonds not claimed yet), plus the lead's share of a Slashed task whose
/// `waitingLeadSeq` is set, plus unpaid credits, plus `burned`.
contract TrainingTasks is IDisputedTasks, PullPayments {
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
    uint256 private immutable _FAULTY_LEAD_BPS;
    uint256 private immutable _FAULTY_PANEL_BPS;
    uint256 private immutable _SOUND_PROVIDER_BPS;
    uint256 private immutable _SOUND_PANEL_BPS;

    /// @notice Number of tasks posted; task ids are 1 .. taskCount.
    uint256 public taskCount;
    /// @notice Number of challenge commits ever made: the last one's sequence number.
    uint64 public commitCount;
    /// @notice Number of disputes opened; dispute ids are 1 .. disputeCount (the adjudicator's too).
    uint256 public disputeCount;

    mapping(uint256 task => Task) private _tasks;
    mapping(uint256 task => mapping(uint256 j => Batch)) private _batches;
    mapping(uint256 task => mapping(uint256 k => OpenedInterval)) private _opened;
    mapping(address challenger => mapping(bytes32 commitment => ChallengeCommit)) private _commits;
    mapping(uint256 dispute => DisputeRecord) private _disputes;
    mapping(uint256 task => mapping(address account => uint256 blockNumber)) private _firstCommit;
    mapping(uint256 task => mapping(uint256 k => OpeningRequest)) private _requests;
    mapping(uint256 task => mapping(uint256 j => mapping(address requester => uint8 count))) private _requestsBy;
    mapping(uint256 task => mapping(address requester => uint64 seq)) private _firstRequestSeq;

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

    /// @notice Batch `j`'s sample was drawn; its opening window runs until `openingWindowEnd`.
    /// @param task The task id.
    /// @param j The batch index.
    /// @param seed The seed drawn from (zero: the target's value was gone and every interval is sampled).
    /// @param sampledBitmap Bit i set: position i (interval j*m + i) is sampled.
    /// @param openingWindowEnd When the opening window closes.
    event SeedDrawn(
        uint256 indexed task,
        uint256 indexed j,
        bytes32 seed,
        uint256 sampledBitmap,
        uint64 openingWindowEnd
    );

    /// @notice Sampled interval `k` was opened: its start and end digests are proven.
    /// @param task The task id.
    /// @param k The interval.
    /// @param startDigest Digest of the evidence it starts from.
    /// @param endDigest Digest of the evidence it ends with.
    event IntervalOpened(uint256 indexed task, uint256 indexed k, bytes32 startDigest, bytes32 endDigest);

    /// @notice Every sampled interval of batch `j` is opened; its challenge window runs until
    /// `challengeWindowEnd`.
    /// @param task The task id.
    /// @param j The batch index.
    /// @param openingCID IPFS CID of the opening manifest (as given with the completing call).
    /// @param challengeWindowEnd When the batch's challenge window closes.
    event BatchOpened(uint256 indexed task, uint256 indexed j, string openingCID, uint64 challengeWindowEnd);

    /// @notice `requester` asked the provider to open interval `k`, which its batch's sample left unopened,
    /// escrowing the challenger bond (protocol section 8.3).
    /// @param task The task id.
    /// @param k The interval.
    /// @param requester Who asked.
    /// @param openBy End of the provider's window to open it.
    event OpeningRequested(uint256 indexed task, uint256 indexed k, address indexed requester, uint64 openBy);

    /// @notice Requested interval `k` was opened (its digests are in the IntervalOpened event before this one);
    /// its challenge window runs until `challengeWindowEnd`.
    /// @param task The task id.
    /// @param k The interval.
    /// @param openingCID IPFS CID of the opening manifest naming the interval's evidence.
    /// @param challengeWindowEnd When its challenge window closes.
    event RequestOpened(uint256 indexed task, uint256 indexed k, string openingCID, uint64 challengeWindowEnd);

    /// @notice A request's bond was paid out: refunded to its requester (the task did not finalize), or
    /// split as a sound challenge bond, the provider's share first (the task finalized: the opening stood).
    /// @param task The task id.
    /// @param k The interval.
    /// @param requester Who asked.
    /// @param refunded Whether the bond went back to the requester.
    event RequestSettled(uint256 indexed task, uint256 indexed k, address indexed requester, bool refunded);

    /// @notice A watcher's attestation of interval `k` was announced (protocol section 8.4). Nothing checks it
    /// here and nothing is stored: readers keep it only if `signature` is `watcher`'s EIP-712 signature of
    /// (task, k, the end digest k was opened with, verdict, reportCID, profile) under this contract's domain.
    /// @param task The task id.
    /// @param k The interval.
    /// @param watcher Who sent it: only a watcher announces its own attestations (no relay can pre-empt them).
    /// @param verdict 1: sound (its replay was within the boundary).
    /// @param profile The execution profile the watcher replayed on.
    /// @param reportCID IPFS CID of the watcher's replay report.
    /// @param attestationCID IPFS CID of the signed attestation as a JSON document.
    /// @param signature The EIP-712 signature (65 bytes: r, s, v).
    event Attested(
        uint256 indexed task,
        uint256 indexed k,
        address indexed watcher,
        uint8 verdict,
        string profile,
        string reportCID,
        string attestationCID,
        bytes signature
    );

    /// @notice A watcher committed a challenge against the task, escrowing the challenger bond.
    /// @param task The task id.
    /// @param commitment keccak256(abi.encode(task, k, reason, salt, challenger)).
    /// @param challenger Who committed.
    /// @param seq The commit's sequence number (the smallest joined one leads a dispute).
    /// @param revealBy End of its reveal window.
    event ChallengeCommitted(
        uint256 indexed task,
        bytes32 indexed commitment,
        address indexed challenger,
        uint64 seq,
        uint64 revealBy
    );

    /// @notice A challenge was revealed: it opened or joined `dispute`, or (dispute 0) it was settled at
    /// once: refunded because the task has ended, or paid as the sound settlement of k it predates.
    /// @param task The task id.
    /// @param commitment The commitment revealed.
    /// @param challenger Who revealed.
    /// @param k The challenged interval.
    /// @param reason Why.
    /// @param reportCID IPFS CID of the challenger's replay report.
    /// @param dispute The dispute opened (0: none; the bond is refunded).
    event ChallengeRevealed(
        uint256 indexed task,
        bytes32 indexed commitment,
        address indexed challenger,
        uint256 k,
        Reason reason,
        string reportCID,
        uint256 dispute
    );

    /// @notice A commit was never revealed: its bond is burned, or refunded if the task had ended.
    /// @param task The task id.
    /// @param commitment The commitment.
    /// @param challenger Who committed it.
    /// @param refunded Whether the bond was refunded (the task ended) rather than burned.
    event ChallengeExpired(uint256 indexed task, bytes32 indexed commitment, address indexed challenger, bool refunded);

    /// @notice A joined bond was paid back after its dispute settled faulty, with no decision, or moot.
    /// @param task The task id.
    /// @param commitment The commitment.
    /// @param challenger Who is credited.
    /// @param dispute The settled dispute.
    event BondClaimed(uint256 indexed task, bytes32 indexed commitment, address indexed challenger, uint256 dispute);

    /// @notice The adjudicator settled a dispute of the task and its payouts were credited.
    /// @param dispute The dispute id.
    /// @param task The task id.
    /// @param k The challenged interval.
    /// @param verdict The verdict (Moot: the task had already ended).
    event DisputeSettled(uint256 indexed dispute, uint256 indexed task, uint256 k, Verdict verdict);

    /// @notice A dispute of interval k ended with no decision: k may be challenged again until
    /// `windowEnd`.
    /// @param task The task id.
    /// @param k The interval.
    /// @param windowEnd When its reopened window closes.
    event IntervalWindowReopened(uint256 indexed task, uint256 indexed k, uint64 windowEnd);

    /// @notice The task finalized; the provider is credited reward and bond.
    /// @param task The task id.
    /// @param provider The provider.
    event TaskFinalized(uint256 indexed task, address indexed provider);

    /// @notice The task was slashed: batch `j` was not opened in time (dispute 0), or `dispute` over an
    /// interval of batch `j` found it faulty.
    /// @param task The task id.
    /// @param j The unopened batch, or the batch of the faulty interval.
    /// @param by The keeper who slashed the unopened batch, or the lead challenger of the dispute (paid the
    /// lead share at once, or the first candidate for it when LeadShareWaiting follows).
    /// @param dispute The dispute (0: an unopened batch).
    event TaskSlashed(uint256 indexed task, uint256 indexed j, address indexed by, uint256 dispute);

    /// @notice A slash's lead share waits: challenges made before `lead`'s commit are still undecided.
    /// @param task The task id.
    /// @param lead Who takes the share unless a dispute led by an earlier commit is found faulty (or, after
    /// the slash, left undecided).
    /// @param seq The sequence number of `lead`'s commit.
    event LeadShareWaiting(uint256 indexed task, address indexed lead, uint64 seq);

    /// @notice The lead's share of a slash is paid (credited to `lead`).
    /// @param task The task id.
    /// @param lead The earliest lead among the task's disputes found faulty (or left undecided after the slash).
    /// @param amount The share, in wei.
    event LeadShareReleased(uint256 indexed task, address indexed lead, uint256 amount);

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
        if (!_before(t.terms.deadline)) revert DeadlinePassed(task, t.terms.deadline);
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
        if (!_before(t.terms.deadline)) revert DeadlinePassed(task, t.terms.deadline);
        Batch storage b = _batches[task][j];
        b.root = root;
        // INVARIANT: the sample's target is fixed now, and its value is unknown to everyone now.
        b.seedTarget = RANDOMNESS.targetOf(block.number, block.timestamp);
        b.status = BatchStatus.Committed;
        t.committedBatches = uint64(j + 1);
        if (j + 1 == t.batchCount) t.status = TaskStatus.Committed;
        emit BatchCommitted(task, j, root, manifestCID);
    }

    /// @notice Open sampled intervals of batch `j`: prove their start and end digests against the
    /// committed roots, within the opening window. The call that opens the last sampled interval opens
    /// the batch and starts its challenge window. One call is enough unless the openings outgrow a
    /// transaction (nodes relay at most 128 KiB: about 150 openings of a 256-interval batch).
    /// @param task The task id.
    /// @param j The batch index.
    /// @param openingCID IPFS CID of the opening manifest (emitted, not stored).
    /// @param openings Openings of sampled intervals not opened yet, in any order.
    function openBatch(uint256 task, uint256 j, string calldata openingCID, Opening[] calldata openings) external {
        Task storage t = _requireActive(task);
        _requireProvider(task, t);
        Batch storage b = _requireBatchStatus(task, j, BatchStatus.Drawn);
        // INVARIANT: an opening comes before its window closes; afterwards the batch can only be slashed.
        if (!_before(b.windowEnd)) revert OpeningWindowClosed(task, j, b.windowEnd);
        // INVARIANT: every call opens something, so every call moves the batch forward.
        if (openings.length == 0) revert EmptyOpening(task, j);
        uint256 opened = b.openedBitmap;
        for (uint256 i = 0; i < openings.length; ++i) {
            opened = _verifyOpening(task, t, j, b, openings[i], opened);
        }
        b.openedBitmap = opened;
        // INVARIANT: a batch is opened with exactly its sample: no interval outside it (checked per
        // opening), none twice (ditto), none missing (here).
        if (opened == b.sampledBitmap) _completeOpening(task, t, j, b, openingCID);
    }

    // --- anyone --------------------------------------------------------------------------------

    /// @notice Draw batch `j`'s sample from the value of its randomness target (fixed at its commit); if
    /// that value is gone (a block hash more than 256 blocks old), every interval of the batch is sampled.
    /// Starts the batch's opening window.
    /// @param task The task id.
    /// @param j The batch index.
    function drawSeed(uint256 task, uint256 j) external {
        Task storage t = _requireActive(task);
        Batch storage b = _requireBatchStatus(task, j, BatchStatus.Committed);
        (bool ready, bytes32 randomness) = RANDOMNESS.valueOf(b.seedTarget);
        if (!ready) revert SeedNotReady(task, j, b.seedTarget);
        uint256 n = _batchSize(t, j);
        uint256[] memory positions;
        if (randomness == bytes32(0)) {
            positions = Sampling.all(n);
        } else {
            b.seed = keccak256(abi.encode(randomness, task, j));
            positions = Sampling.draw(b.seed, n, t.terms.sampleBps, j + 1 == t.batchCount);
        }
        b.sampledBitmap = _bitmap(positions);
        b.sampleCount = uint16(positions.length);
        b.windowEnd = _now() + t.terms.windows.openingWindow;
        b.status = BatchStatus.Drawn;
        emit SeedDrawn(task, j, b.seed, b.sampledBitmap, b.windowEnd);
    }

    /// @notice Slash a task whose drawn batch `j` was not opened in time: the owner is credited the reward
    /// and the provider bond minus KEEPER_BPS of it, which the caller is credited.
    /// @param task The task id.
    /// @param j The unopened batch.
    function slashUnopened(uint256 task, uint256 j) external {
        Task storage t = _requireActive(task);
        Batch storage b = _requireBatchStatus(task, j, BatchStatus.Drawn);
        // INVARIANT: the provider keeps its whole opening window.
        if (_before(b.windowEnd)) revert OpeningWindowOpen(task, j, b.windowEnd);
        // INVARIANT: a challenge decides first. Otherwise a provider whose interval is being found
        // faulty slashes itself through a sock-puppet keeper (who gets KEEPER_BPS), mooting the verdict;
        // pending commits count too, or the sock-puppet front-runs the first reveal.
        _requireNoChallenge(task, t);
        _requireNoReopenedWindow(task, t);
        _slashUnopened(task, t, j, msg.sender);
    }

    /// @notice After the deadline, end a task whose batches are not all committed: the owner is
    /// credited the reward and the provider bond.
    /// @param task The task id.
    function abandon(uint256 task) external {
        Task storage t = _requireStatus(task, TaskStatus.Accepted);
        // INVARIANT: the provider has until the deadline to commit every batch.
        if (_before(t.terms.deadline)) revert DeadlineNotReached(task, t.terms.deadline);
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
        if (_before(t.challengeEnd)) revert ChallengeWindowOpen(task, t.challengeEnd);
        // INVARIANT: every challenge made in a window is revealed (or expired) and decided first.
        _requireNoChallenge(task, t);
        t.status = TaskStatus.Finalized;
        emit TaskFinalized(task, t.provider);
        _credit(t.provider, task, t.terms.reward + t.terms.providerBond);
    }

    // --- targeted openings (protocol section 8.3) ---------------------------------------------

    /// @notice Ask the provider to open interval `k`, which its batch's sample left unopened, while the
    /// batch's challenge window is open, escrowing exactly the challenger bond. The provider must open it
    /// (openRequested) within the opening window, or anyone may slash the task (slashUnopenedRequest); once
    /// opened it is challengeable like a sampled interval, for one challenge window. The bond is refunded
    /// unless the task finalizes, in which case it is split as a sound challenge's bond (the provider's share
    /// pays for the trouble): settleRequest.
    /// @param task The task id.
    /// @param k The interval: in an opened batch, not opened yet, not requested before.
    function requestOpening(uint256 task, uint256 k) external payable {
        Task storage t = _requireActive(task);
        uint256 m = t.terms.intervalsPerBatch;
        uint256 j = k / m;
        Batch storage b = _requireBatchStatus(task, j, BatchStatus.Opened);
        // INVARIANT: a request comes while the batch can be challenged, so the provider still holds its files.
        if (!_before(b.windowEnd)) revert BatchWindowClosed(task, j, b.windowEnd);
        // INVARIANT: only an interval of the task nobody opened: not sampled, not requested before.
        if (k % m >= _batchSize(t, j) || (b.openedBitmap >> (k % m)) & 1 != 0) revert NotRequestable(task, k);
        OpeningRequest storage r = _requests[task][k];
        if (r.status != RequestStatus.None) revert NotRequestable(task, k);
        // INVARIANT: each requester adds at most MAX_REQUESTS_PER_BATCH openings to a batch. Per requester, not
        // per batch: a provider's sock-puppets filling a batch's room would keep everyone else from asking.
        if (_requestsBy[task][j][msg.sender] >= MAX_REQUESTS_PER_BATCH) {
            revert TooManyRequests(task, j, MAX_REQUESTS_PER_BATCH);
        }
        if (msg.value != t.terms.challengerBond) revert WrongBond(t.terms.challengerBond, msg.value);
        // INVARIANT: a requester wants k found faulty, as a challenger does: it never judges the task (it is
        // interested from here, as a challenger is from its first commit).
        if (_firstCommit[task][msg.sender] == 0) _firstCommit[task][msg.sender] = block.number;
        b.requestCount += 1;
        _requestsBy[task][j][msg.sender] += 1;
        r.requester = msg.sender;
        // A place in the commit order, as a commit's: the requester's later challenge of k leads from here.
        r.seq = ++commitCount;
        if (_firstRequestSeq[task][msg.sender] == 0) _firstRequestSeq[task][msg.sender] = r.seq;
        r.openBy = _now() + t.terms.windows.openingWindow;
        r.status = RequestStatus.Pending;
        t.unopenedRequests += 1;
        t.heldBonds += uint128(msg.value);
        emit OpeningRequested(task, k, msg.sender, r.openBy);
    }

    /// @notice Open a requested interval: prove its start and end digests against the committed roots
    /// before the request's window closes. Starts the interval's challenge window.
    /// @param task The task id.
    /// @param openingCID IPFS CID of the opening manifest naming the interval's evidence (emitted, not stored).
    /// @param o The opening of the requested interval `o.k`.
    function openRequested(uint256 task, string calldata openingCID, Opening calldata o) external {
        Task storage t = _requireActive(task);
        _requireProvider(task, t);
        OpeningRequest storage r = _requests[task][o.k];
        if (r.status != RequestStatus.Pending) revert NoRequest(task, o.k);
        // INVARIANT: an opening comes before its window closes; afterwards the task can only be slashed.
        if (!_before(r.openBy)) revert RequestWindow(task, o.k, r.openBy);
        _proveDigests(task, t, o);
        uint256 m = t.terms.intervalsPerBatch;
        _batches[task][o.k / m].openedBitmap |= 1 << (o.k % m);
        r.openedAt = _now();
        r.status = RequestStatus.Opened;
        t.unopenedRequests -= 1;
        uint64 end = _now() + t.terms.windows.challengeWindow;
        if (end > t.challengeEnd) t.challengeEnd = end;
        emit RequestOpened(task, o.k, openingCID, end);
    }

    /// @notice Slash a task whose requested interval `k` was not opened in time, as for an unopened batch:
    /// the owner is credited the reward and the provider bond minus KEEPER_BPS of it, which the
    /// requester is credited (whoever calls), with its bond back.
    /// @param task The task id.
    /// @param k The requested interval.
    function slashUnopenedRequest(uint256 task, uint256 k) external {
        Task storage t = _requireActive(task);
        OpeningRequest storage r = _requests[task][k];
        if (r.status != RequestStatus.Pending) revert NoRequest(task, k);
        // INVARIANT: the provider keeps its whole window to open.
        if (_before(r.openBy)) revert RequestWindow(task, k, r.openBy);
        // INVARIANT: a challenge decides first (the sock-puppet keeper of slashUnopened).
        _requireNoChallenge(task, t);
        _requireNoReopenedWindow(task, t);
        r.status = RequestStatus.Settled;
        emit RequestSettled(task, k, r.requester, true);
        _releaseBond(task, t, r.requester, t.terms.challengerBond);
        // The requester found what the provider would not open: the keeper's share is its, whoever calls.
        _slashUnopened(task, t, k / t.terms.intervalsPerBatch, r.requester);
    }

    /// @notice Pay out a request's bond once its task has ended: to the requester if the task did not
    /// finalize; split as a sound challenge's bond (provider, then burned) if it did. Anyone may call it.
    /// @param task The task id.
    /// @param k The requested interval.
    function settleRequest(uint256 task, uint256 k) external {
        Task storage t = _tasks[task];
        OpeningRequest storage r = _requests[task][k];
        if (r.status != RequestStatus.Pending && r.status != RequestStatus.Opened) revert NoRequest(task, k);
        // INVARIANT: whether the opening stood is known only once the task has ended.
        if (_isActive(t)) revert WrongTaskStatus(task, t.status);
        bool refunded = t.status != TaskStatus.Finalized;
        r.status = RequestStatus.Settled;
        emit RequestSettled(task, k, r.requester, refunded);
        if (refunded) {
            _releaseBond(task, t, r.requester, t.terms.challengerBond);
        } else {
            t.heldBonds -= uint128(t.terms.challengerBond);
            _burn(task, _paySound(task, t, 1, 0)); // no panel judged a request
        }
    }

    // --- attestations (protocol section 8.4) --------------------------------------------------

    /// @notice Announce the sender's signed attestation of interval `k`: an event and nothing else (no state,
    /// no checks, no value), so coverage costs watchers only gas, and readers verify what they fold in.
    /// @param task The task id.
    /// @param k The interval.
    /// @param verdict 1: sound.
    /// @param profile The execution profile of the replay.
    /// @param reportCID IPFS CID of the replay report.
    /// @param attestationCID IPFS CID of the signed attestation document.
    /// @param signature The watcher's EIP-712 signature.
    function attest(
        uint256 task,
        uint256 k,
        uint8 verdict,
        string calldata profile,
        string calldata reportCID,
        string calldata attestationCID,
        bytes calldata signature
    ) external {
        emit Attested(task, k, msg.sender, verdict, profile, reportCID, attestationCID, signature);
    }

    // --- challenges and disputes ---------------------------------------------------------------

    /// @notice Commit a challenge against the task while a challenge window of it is open, escrowing
    /// exactly the challenger bond. The commitment hides which interval and why, so a copier watching
    /// the mempool learns nothing it could front-run; the commit's sequence number fixes its place in
    /// the lead order.
    /// @param task The task id.
    /// @param commitment keccak256(abi.encode(task, k, reason, salt, msg.sender)).
    function commitChallenge(uint256 task, bytes32 commitment) external payable {
        Task storage t = _requireActive(task);
        // INVARIANT: challenges come while some opened batch (or reopened interval) can be challenged;
        // which interval is checked at reveal, against the time recorded here.
        if (!_before(t.challengeEnd)) revert NoChallengeWindowOpen(task, t.challengeEnd);
        if (msg.value != t.terms.challengerBond) revert WrongBond(t.terms.challengerBond, msg.value);
        ChallengeCommit storage c = _commits[msg.sender][commitment];
        // INVARIANT: keyed by sender, so a copied commitment is another commit and blocks nobody.
        if (c.status != CommitStatus.None) revert CommitmentExists(commitment);
        // Anyone may challenge, a registered auditor too (v3): it is never drawn for a round armed after its
        // first commit on the task (isInterested), and if it sits on one already it cannot reveal its ballot.
        if (_firstCommit[task][msg.sender] == 0) _firstCommit[task][msg.sender] = block.number;
        uint64 seq = ++commitCount;
        c.task = uint64(task); // an existing task: ids are counted, never near 2^64
        c.seq = seq;
        c.committedAt = uint56(_now());
        c.status = CommitStatus.Pending;
        t.pendingCommits += 1;
        t.heldBonds += uint128(msg.value);
        emit ChallengeCommitted(task, commitment, msg.sender, seq, _now() + t.terms.windows.challengeRevealWindow);
    }

    /// @notice Reveal a challenge within its reveal window. The first reveal for interval k opens a
    /// dispute with the adjudicator; later ones join it (the earliest commit leads). A reveal whose
    /// commit predates k's sound settlement pays as that settlement's bonds did; a reveal of a task that
    /// has ended is refunded.
    /// @param task The task id.
    /// @param k The challenged interval: sampled, opened, and its window open when committed.
    /// @param reason 1 = out_of_bounds, 2 = unavailable: what the challenger saw; it settles nothing.
    /// @param salt The commitment's salt.
    /// @param reportCID IPFS CID of the challenger's replay report (emitted, not stored).
    /// @return dispute The dispute opened or joined, or 0 if the bond was settled at once.
    function revealChallenge(
        uint256 task,
        uint256 k,
        uint8 reason,
        bytes32 salt,
        string calldata reportCID
    ) external returns (uint256 dispute) {
        // INVARIANT: only the committer can reveal: its address is inside the commitment and the key.
        bytes32 commitment = keccak256(abi.encode(task, k, reason, salt, msg.sender));
        ChallengeCommit storage c = _requirePending(task, msg.sender, commitment);
        Task storage t = _tasks[task];
        uint64 revealBy = uint64(c.committedAt) + t.terms.windows.challengeRevealWindow;
        if (!_before(revealBy)) revert RevealWindowClosed(commitment, revealBy);
        // A uint8, not the enum, so an unknown reason gets this error rather than a bare ABI revert.
        if (reason == uint8(Reason.None) || reason > uint8(Reason.Unavailable)) revert InvalidReason(reason);
        t.pendingCommits -= 1;
        uint64 seq = _leadSeqOf(task, k, c);
        if (!_isLive(t, seq)) {
            c.status = CommitStatus.Settled;
            _releaseBond(task, t, msg.sender, t.terms.challengerBond);
        } else {
            OpenedInterval storage iv = _requireChallengeable(task, t, k, uint64(c.committedAt));
            if (iv.sound) {
                // INVARIANT: a sound verdict is final; a commit cannot wait for the votes and then choose.
                if (c.seq > iv.soundAfterSeq) revert IntervalFinal(task, k);
                c.status = CommitStatus.Settled;
                t.heldBonds -= uint128(t.terms.challengerBond);
                // The panel was paid at the settlement: its share is burned.
                _burn(task, _paySound(task, t, 1, reason == uint8(Reason.Unavailable) ? 1 : 0));
            } else {
                dispute = _join(task, t, iv, k, c, seq, Reason(reason));
            }
        }
        emit ChallengeRevealed(task, commitment, msg.sender, k, Reason(reason), reportCID, dispute);
    }

    /// @notice Expire a commit whose reveal window has passed: its bond is burned. If the task has
    /// ended the commit is moot: its bond is refunded, at any time.
    /// @param task The task id.
    /// @param challenger Who committed.
    /// @param commitment The commitment.
    function expireChallenge(uint256 task, address challenger, bytes32 commitment) external {
        ChallengeCommit storage c = _requirePending(task, challenger, commitment);
        Task storage t = _tasks[task];
        // The commit hides k, so a requester's commit may lead from its first request's place (_leadSeqOf):
        // it is moot only if that place is not live either, or a slash's waiting lead share could be released
        // past a commit that would take it.
        uint64 requested = _firstRequestSeq[task][challenger];
        bool moot = !_isLive(t, requested != 0 && requested < c.seq ? requested : c.seq);
        uint64 revealBy = uint64(c.committedAt) + t.terms.windows.challengeRevealWindow;
        // INVARIANT: the challenger keeps its whole reveal window.
        if (!moot && _before(revealBy)) revert RevealWindowOpen(commitment, revealBy);
        c.status = CommitStatus.Expired;
        t.pendingCommits -= 1;
        emit ChallengeExpired(task, commitment, challenger, moot);
        if (moot) {
            _releaseBond(task, t, challenger, t.terms.challengerBond);
        } else {
            t.heldBonds -= uint128(t.terms.challengerBond);
            _burn(task, t.terms.challengerBond);
        }
    }

    /// @notice Pay a joined bond back to its challenger once its dispute has settled faulty, with no
    /// decision (less its share of the round charges), or moot (a sound settlement paid its bonds out
    /// already). Anyone may call it.
    /// @param task The task id.
    /// @param challenger Who committed.
    /// @param commitment The commitment.
    function claimBond(uint256 task, address challenger, bytes32 commitment) external {
        ChallengeCommit storage c = _commits[challenger][commitment];
        DisputeRecord storage d = _disputes[c.dispute];
        // INVARIANT: a bond is paid once: only after its dispute settled faulty, undecided or moot; a sound
        // settlement already split every joined bond (without a loop, so its commits still read Joined).
        bool settled = d.verdict != Verdict.None && d.verdict != Verdict.Valid;
        if (c.status != CommitStatus.Joined || c.task != task || !settled) revert NothingToClaim(task, commitment);
        c.status = CommitStatus.Settled;
        emit BondClaimed(task, commitment, challenger, c.dispute);
        _releaseBond(task, _tasks[task], challenger, d.refundPerBond);
    }

    /// @notice Pay a slash's waiting lead share once no challenge of the task can take it any more: no
    /// pending commit and no open dispute (moot ones are resolved, and moot commits expired, by anyone).
    /// Anyone may call it.
    /// @param task The task id.
    function releaseLeadShare(uint256 task) external {
        Task storage t = _tasks[task];
        if (t.waitingLeadSeq == 0) revert NoLeadShareWaiting(task);
        _requireNoChallenge(task, t);
        address lead = t.waitingLead;
        uint256 share = _leadShare(t);
        t.waitingLead = address(0);
        t.waitingLeadSeq = 0;
        emit LeadShareReleased(task, lead, share);
        _credit(lead, task, share);
    }

    /// @inheritdoc IDisputedTasks
    function settleDispute(uint256 dispute, Settlement calldata s) external returns (uint256 toPanel) {
        // INVARIANT: only the court decides, once per dispute.
        if (msg.sender != address(ADJUDICATOR)) revert NotAdjudicator(msg.sender);
        DisputeRecord storage d = _disputes[dispute];
        if (!d.open) revert UnknownDispute(dispute);
        Task storage t = _tasks[d.task];
        OpenedInterval storage iv = _opened[d.task][d.k];
        d.open = false;
        t.openDisputes -= 1;
        iv.dispute = 0;
        bool active = _isActive(t);
        Verdict verdict = _isLive(t, iv.leadSeq) ? s.verdict : Verdict.Moot;
        d.verdict = verdict;
        d.refundPerBond = uint80(t.terms.challengerBond); // at most MAX_CHALLENGER_BOND
        emit DisputeSettled(dispute, d.task, d.k, verdict);
        if (verdict == Verdict.Faulty || verdict == Verdict.Unavailable) {
            // Files withheld from the last, largest round slash as a faulty replay does: availability is the
            // provider's to keep (the owner's files included: it holds them since it trained).
            if (active) {
                toPanel = _payFaulty(dispute, d, t);
            } else {
                // Judged after the slash because its lead committed earlier: it takes the waiting share. The
                // provider bond was paid out at the slash, so this panel has no share to split.
                _waitForEarlier(d.task, t, iv);
            }
        } else if (verdict == Verdict.Valid) {
            // Every joined bond is lost, whatever its reason: the reason is the challenger's word, which cannot
            // be checked, so it settles nothing; it only keeps the provider's share of an Unavailable bond
            // from the provider (_paySound: withholding as bait earns nothing).
            iv.sound = true;
            iv.soundAfterSeq = commitCount;
            t.heldBonds -= uint128(d.joined * t.terms.challengerBond);
            toPanel = _paySound(d.task, t, d.joined, d.joinedUnavailable);
        } else if (verdict == Verdict.NoDecision) {
            toPanel = _chargeRounds(d, t, s.charges);
            if (active) {
                _reopenWindow(d.task, t, iv, d.k);
            } else {
                // Judged after the slash (its lead committed earlier) and left undecided: no window can
                // reopen, so its lead keeps its claim; otherwise flooding it into no decision would hand
                // the share to the later lead that slashed.
                _waitForEarlier(d.task, t, iv);
            }
        }
        // The adjudicator pays its seats from it (it pulls the credit with withdraw).
        _credit(msg.sender, d.task, toPanel);
        // Faulty, Unavailable, NoDecision and Moot: each joined bond is claimed back with claimBond.
    }

    // --- views ---------------------------------------------------------------------------------

    /// @notice A task's terms, parties, status and counters (status None: no such task).
    /// @param task The task id.
    /// @return The task.
    function getTask(uint256 task) external view returns (Task memory) {
        return _tasks[task];
    }

    /// @notice A batch of a task (status None: not committed).
    /// @param task The task id.
    /// @param j The batch index.
    /// @return The batch.
    function getBatch(uint256 task, uint256 j) external view returns (Batch memory) {
        return _batches[task][j];
    }

    /// @notice Start and end digests proven for interval `k` (zero until opened).
    /// @param task The task id.
    /// @param k The interval.
    /// @return The interval's digests.
    function getOpenedInterval(uint256 task, uint256 k) external view returns (OpenedInterval memory) {
        return _opened[task][k];
    }

    /// @notice A targeted opening of interval `k` (status None: never requested).
    /// @param task The task id.
    /// @param k The interval.
    /// @return The request.
    function getRequest(uint256 task, uint256 k) external view returns (OpeningRequest memory) {
        return _requests[task][k];
    }

    /// @notice How many openings `requester` has asked of batch `j` (at most MAX_REQUESTS_PER_BATCH).
    /// @param task The task id.
    /// @param j The batch.
    /// @param requester Who asked.
    /// @return The count.
    function requestsBy(uint256 task, uint256 j, address requester) external view returns (uint256) {
        return _requestsBy[task][j][requester];
    }

    /// @notice The commit-order place of `requester`'s first request on the task (0: none); expireChallenge
    /// judges a pending commit of it moot from the earlier of this and the commit's own.
    /// @param task The task id.
    /// @param requester Who asked.
    /// @return The sequence number.
    function firstRequestSeq(uint256 task, address requester) external view returns (uint64) {
        return _firstRequestSeq[task][requester];
    }

    /// @notice A challenge commit (status None: this sender never committed this commitment).
    /// @param challenger Who committed.
    /// @param commitment The commitment.
    /// @return The commit.
    function getCommit(address challenger, bytes32 commitment) external view returns (ChallengeCommit memory) {
        return _commits[challenger][commitment];
    }

    /// @notice A dispute as this contract records it (task 0: unknown id).
    /// @param dispute The adjudicator's dispute id.
    /// @return The record.
    function getDispute(uint256 dispute) external view returns (DisputeRecord memory) {
        return _disputes[dispute];
    }

    /// @inheritdoc IDisputedTasks
    function disputeOrigin(uint256 dispute) external view returns (uint64 task, uint48 armBlock, uint40 armedAt) {
        DisputeRecord storage d = _disputes[dispute];
        return (d.task, d.armBlock, d.armedAt);
    }

    /// @inheritdoc IDisputedTasks
    function challengerBondOf(uint256 dispute) external view returns (uint256) {
        return _tasks[_disputes[dispute].task].terms.challengerBond;
    }

    /// @inheritdoc IDisputedTasks
    function isInterested(uint256 task, address account, uint256 blockNumber) external view returns (bool) {
        Task storage t = _tasks[task];
        uint256 committed = _firstCommit[task][account];
        return account == t.owner || account == t.provider || (committed != 0 && committed <= blockNumber);
    }

    /// @inheritdoc IDisputedTasks
    function isMoot(uint256 dispute) external view returns (bool) {
        DisputeRecord storage d = _disputes[dispute];
        return d.open && !_isLive(_tasks[d.task], _opened[d.task][d.k].leadSeq);
    }

    /// @notice End of interval k's challenge window (0 until its batch is opened): its batch's window,
    /// or later once reopened after a dispute with no decision.
    /// @param task The task id.
    /// @param k The interval.
    /// @return When it closes.
    function challengeWindowEnd(uint256 task, uint256 k) external view returns (uint64) {
        uint256 m = _tasks[task].terms.intervalsPerBatch;
        if (m == 0) return 0;
        Batch storage b = _batches[task][k / m];
        if (b.status != BatchStatus.Opened || (b.openedBitmap >> (k % m)) & 1 == 0) return 0;
        (, uint64 firstEnd) = _firstWindow(task, _tasks[task], k, b);
        return _windowEnd(firstEnd, _opened[task][k]);
    }

    // --- internal ------------------------------------------------------------------------------

    /// @dev Whether a provider still works on the task (Accepted or Committed).
    function _isActive(Task storage t) internal view returns (bool) {
        return t.status == TaskStatus.Accepted || t.status == TaskStatus.Committed;
    }

    /// @dev Whether a challenge whose (lead) commit has sequence number `seq` can still change the task's
    /// outcome: the task is active, or it was slashed and `seq` is earlier than the waiting lead's.
    function _isLive(Task storage t, uint64 seq) internal view returns (bool) {
        return _isActive(t) || (seq != 0 && seq < t.waitingLeadSeq);
    }

    /// @dev The lead's share of a slash: its part of the provider bond.
    function _leadShare(Task storage t) internal view returns (uint256) {
        return (t.terms.providerBond * _FAULTY_LEAD_BPS) / BPS;
    }

    /// @dev The pending commit of `challenger` and `commitment` on `task`, reverting if there is none.
    function _requirePending(
        uint256 task,
        address challenger,
        bytes32 commitment
    ) internal view returns (ChallengeCommit storage c) {
        c = _commits[challenger][commitment];
        if (c.status != CommitStatus.Pending || c.task != task) revert UnknownCommitment(task, commitment);
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
        if (_before(t.reopenedUntil)) revert ChallengeWindowOpen(task, t.reopenedUntil);
    }

    /// @dev Interval k's state, reverting unless it is sampled, opened, and its window was open at `at`.
    function _requireChallengeable(
        uint256 task,
        Task storage t,
        uint256 k,
        uint64 at
    ) internal view returns (OpenedInterval storage iv) {
        uint256 m = t.terms.intervalsPerBatch;
        Batch storage b = _batches[task][k / m];
        // Sampled intervals of an opened batch, and requested ones once opened.
        if (b.status != BatchStatus.Opened || (b.openedBitmap >> (k % m)) & 1 == 0) {
            revert IntervalNotOpened(task, k);
        }
        iv = _opened[task][k];
        // INVARIANT: the challenge was committed while this very interval's window was open:
        // [start_k, end_k), from its opening (its batch's, or its request's), where end_k moves later each
        // time a dispute of k ends undecided, less the gap before a reopening that came after it had closed.
        (uint64 start, uint64 firstEnd) = _firstWindow(task, t, k, b);
        if (at < start) revert IntervalWindowNotOpen(task, k, start);
        uint64 end = _windowEnd(firstEnd, iv);
        bool inGap = iv.reopenedAt != 0 && at >= iv.gapStart && at < iv.reopenedAt;
        if (at >= end || inGap) revert IntervalWindowClosed(task, k, end);
    }

    /// @dev An opened interval's first challenge window: its batch's, or one challenge window from its
    /// opening if it was requested.
    function _firstWindow(
        uint256 task,
        Task storage t,
        uint256 k,
        Batch storage b
    ) internal view returns (uint64 start, uint64 end) {
        // A batch nobody requested an opening of has only sampled intervals (and no request to read).
        uint64 requestOpenedAt = b.requestCount == 0 ? 0 : _requests[task][k].openedAt;
        if (requestOpenedAt == 0) return (b.openedAt, b.windowEnd);
        return (requestOpenedAt, requestOpenedAt + t.terms.windows.challengeWindow);
    }

    /// @dev End of an opened interval's challenge window: its first one's, or its reopened one.
    function _windowEnd(uint64 firstEnd, OpenedInterval storage iv) internal view returns (uint64) {
        return iv.windowEnd > firstEnd ? iv.windowEnd : firstEnd;
    }

    /// @dev The place in the lead order of a reveal of k by the caller with commit `c`: the request's, if the
    /// caller asked for k's opening and committed within k's first challenge window; else the commit's own. A
    /// copier who learns k from the request, or the provider's sock-puppet revealing the moment k is opened,
    /// never leads the requester, who must replay k before it commits.
    function _leadSeqOf(uint256 task, uint256 k, ChallengeCommit storage c) internal view returns (uint64) {
        Task storage t = _tasks[task];
        if (_batches[task][k / t.terms.intervalsPerBatch].requestCount == 0) return c.seq; // nothing requested
        OpeningRequest storage r = _requests[task][k];
        // INVARIANT: a time limit, which nobody but the requester moves (a rule keyed to others' reveals would
        // let the provider's own reveal at the opening take the lead from the requester).
        bool inFirstWindow = uint64(c.committedAt) < r.openedAt + t.terms.windows.challengeWindow;
        return r.requester == msg.sender && r.seq < c.seq && inFirstWindow ? r.seq : c.seq;
    }

    /// @dev The revealed commit `c` joins k's open dispute, opening one if there is none; the commit of k
    /// with the smallest sequence number ever revealed leads. Its bond stays held until claimBond or a sound settlement.
    function _join(
        uint256 task,
        Task storage t,
        OpenedInterval storage iv,
        uint256 k,
        ChallengeCommit storage c,
        uint64 seq,
        Reason reason
    ) internal returns (uint256 dispute) {
        dispute = iv.dispute;
        if (dispute == 0) {
            // The adjudicator takes the dispute up from this record when its first round is drawn: the reveal
            // that opens a dispute writes one slot here and nothing there.
            dispute = ++disputeCount;
            iv.dispute = uint40(dispute); // one per reveal that opens a dispute: never near 2^40
            t.openDisputes += 1;
            DisputeRecord storage fresh = _disputes[dispute];
            fresh.task = uint48(task); // ids are counted: never near 2^48
            fresh.k = uint48(k); // k < totalSteps < 2^48 (postTask)
            fresh.open = true;
            fresh.armBlock = uint48(block.number);
            fresh.armedAt = uint40(block.timestamp);
            emit DisputeOpened(dispute, task, k, reason);
        }
        // INVARIANT: the earliest commit of k ever revealed leads, whoever revealed first and in whichever of
        // k's disputes: a no-decision cannot hand the lead to a later commit.
        if (iv.leadSeq == 0 || seq < iv.leadSeq) {
            iv.lead = msg.sender;
            iv.leadSeq = uint40(seq); // commits are counted: never near 2^40
        }
        DisputeRecord storage d = _disputes[dispute];
        d.joined += 1;
        if (reason == Reason.Unavailable) d.joinedUnavailable += 1; // the same slot: no storage of its own
        c.status = CommitStatus.Joined;
        c.dispute = uint64(dispute);
    }

    /// @dev Faulty: slash. The provider bond goes to the lead, the panel (returned, for the adjudicator) and
    /// the owner; the owner also gets the reward back. Joined bonds are claimed back with claimBond.
    function _payFaulty(uint256 dispute, DisputeRecord storage d, Task storage t) internal returns (uint256 toPanel) {
        t.status = TaskStatus.Slashed;
        uint256 bond = t.terms.providerBond;
        uint256 toLead = _leadShare(t);
        toPanel = (bond * _FAULTY_PANEL_BPS) / BPS;
        uint256 toOwner = bond - toLead - toPanel;
        OpenedInterval storage iv = _opened[d.task][d.k];
        emit TaskSlashed(d.task, d.k / t.terms.intervalsPerBatch, iv.lead, dispute);
        if (t.pendingCommits == 0 && t.openDisputes == 0) {
            _credit(iv.lead, d.task, toLead);
        } else {
            // INVARIANT (protocol 4.3, soundness): the earliest commit on a fault is paid, not the dispute
            // that happened to end first; a provider's decoy dispute of another faked interval that resolves
            // first cannot take the share from an earlier challenger, whose dispute is judged on.
            _waitForEarlier(d.task, t, iv);
        }
        _credit(t.owner, d.task, toOwner + t.terms.reward);
    }

    /// @dev The lead's share of the task's slash goes to `iv`'s lead unless an earlier challenge takes it.
    function _waitForEarlier(uint256 task, Task storage t, OpenedInterval storage iv) internal {
        t.waitingLead = iv.lead;
        t.waitingLeadSeq = iv.leadSeq;
        emit LeadShareWaiting(task, iv.lead, iv.leadSeq);
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

    /// @dev No decision: the round charges the adjudicator asks for leave the joined bonds for its panelists
    /// who revealed (returned; never more than the bonds hold); what is left is refunded evenly, its dust
    /// burned.
    function _chargeRounds(DisputeRecord storage d, Task storage t, uint256 charges) internal returns (uint256 paid) {
        uint256 pot = uint256(d.joined) * t.terms.challengerBond;
        paid = charges < pot ? charges : pot;
        uint256 each = (pot - paid) / d.joined;
        d.refundPerBond = uint80(each); // at most the bond
        _burn(d.task, pot - paid - each * d.joined);
        t.heldBonds -= uint128(pot - each * d.joined);
    }

    /// @dev No decision: interval k may be challenged for one more challengeWindow from now.
    function _reopenWindow(uint256 task, Task storage t, OpenedInterval storage iv, uint256 k) internal {
        uint64 end = _now() + t.terms.windows.challengeWindow;
        (, uint64 firstEnd) = _firstWindow(task, t, k, _batches[task][k / t.terms.intervalsPerBatch]);
        uint64 openUntil = _windowEnd(firstEnd, iv);
        // A window still open is extended; a closed one reopens from now, so a commit made while it was
        // closed (from its end as it stood, an earlier extension included, until now) stays outside it.
        if (!_before(openUntil)) {
            iv.gapStart = openUntil;
            iv.reopenedAt = _now();
        }
        iv.windowEnd = end;
        if (end > t.challengeEnd) t.challengeEnd = end;
        if (end > t.reopenedUntil) t.reopenedUntil = end;
        emit IntervalWindowReopened(task, k, end);
    }

    /// @dev Slash for an opening not made in time (batch `j`, or a requested interval of it): the owner is
    /// credited the reward and the provider bond less the keeper's share, `keeper` that share.
    function _slashUnopened(uint256 task, Task storage t, uint256 j, address keeper) internal {
        t.status = TaskStatus.Slashed;
        uint256 bond = t.terms.providerBond;
        uint256 keeperShare = (bond * KEEPER_BPS) / BPS;
        emit TaskSlashed(task, j, keeper, 0);
        _credit(t.owner, task, t.terms.reward + bond - keeperShare);
        _credit(keeper, task, keeperShare);
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
        if (!_before(deadline)) revert DeadlineNotInFuture(deadline, _now());
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

    /// @dev Checks one opening of batch `j` and emits its digests (nothing is stored per interval: the
    /// batch's bitmap records it, the event the digests); returns `opened` with its bit set.
    function _verifyOpening(
        uint256 task,
        Task storage t,
        uint256 j,
        Batch storage b,
        Opening calldata o,
        uint256 opened
    ) internal returns (uint256) {
        uint256 first = j * t.terms.intervalsPerBatch;
        // INVARIANT: only intervals of this batch's sample are opened, each once.
        if (o.k < first || o.k - first >= MAX_INTERVALS_PER_BATCH) revert IntervalNotSampled(task, o.k);
        uint256 bit = 1 << (o.k - first);
        if (b.sampledBitmap & bit == 0) revert IntervalNotSampled(task, o.k);
        if (opened & bit != 0) revert DuplicateOpening(task, o.k);
        _proveDigests(task, t, o);
        return opened | bit;
    }

    /// @dev Checks an opening's end digest (and its start digest, unless k = 0) against the committed roots
    /// and emits them.
    function _proveDigests(uint256 task, Task storage t, Opening calldata o) internal {
        _verifyLeaf(task, t, o.k, o.endStep, o.endDigest, o.endProof);
        bytes32 start = t.terms.initDigest;
        if (o.k > 0) {
            _verifyLeaf(task, t, o.k - 1, o.startStep, o.startDigest, o.startProof);
            start = o.startDigest;
        }
        emit IntervalOpened(task, o.k, start, o.endDigest);
    }

    /// @dev Batch `j` is fully opened: start its challenge window.
    function _completeOpening(
        uint256 task,
        Task storage t,
        uint256 j,
        Batch storage b,
        string calldata openingCID
    ) internal {
        uint64 end = _now() + t.terms.windows.challengeWindow;
        b.openedAt = _now();
        b.windowEnd = end;
        b.status = BatchStatus.Opened;
        t.openedBatches += 1;
        if (end > t.challengeEnd) t.challengeEnd = end;
        emit BatchOpened(task, j, openingCID, end);
    }

    /// @dev Reverts unless `digest` with step count `endStep` is leaf `k` of its batch's committed root.
    /// Interval k sits in batch k / m at position k % m, so the start leaf of the first interval of a
    /// batch is checked against the previous batch's root at index m - 1.
    function _verifyLeaf(
        uint256 task,
        Task storage t,
        uint256 k,
        uint256 endStep,
        bytes32 digest,
        bytes32[] calldata proof
    ) internal view {
        uint256 expected = _endStep(t, k);
        // INVARIANT: the leaf binds the step count the terms fix, not one the provider picks.
        if (endStep != expected) revert WrongStep(k, expected, endStep);
        uint256 m = t.terms.intervalsPerBatch;
        uint256 j = k / m;
        bytes32 leaf = LeafHash.leaf(task, k, endStep, digest);
        // INVARIANT: one digest per interval: the proof has the exact depth and position of k.
        if (!OrderedMerkle.verify(proof, _batches[task][j].root, leaf, k % m, _batchSize(t, j))) {
            revert InvalidProof(task, k);
        }
    }

    /// @dev `b_k = min((k + 1) * s, N)`.
    function _endStep(Task storage t, uint256 k) internal view returns (uint256) {
        uint256 end = (k + 1) * t.terms.stride;
        return end < t.terms.totalSteps ? end : t.terms.totalSteps;
    }

    /// @dev Intervals in batch `j`: `min((j + 1) * m, K) - j * m`.
    function _batchSize(Task storage t, uint256 j) internal view returns (uint256) {
        uint256 m = t.terms.intervalsPerBatch;
        uint256 intervals = _ceilDiv(t.terms.totalSteps, t.terms.stride);
        uint256 end = (j + 1) * m;
        return (end < intervals ? end : intervals) - j * m;
    }

    /// @dev Bit p set for every position p.
    function _bitmap(uint256[] memory positions) internal pure returns (uint256 bitmap) {
        for (uint256 i = 0; i < positions.length; ++i) {
            bitmap |= 1 << positions[i];
        }
    }

    /// @dev `ceil(a / b)` for b > 0.
    function _ceilDiv(uint256 a, uint256 b) internal pure returns (uint64) {
        return uint64((a + b - 1) / b);
    }

    /// @dev The current time, as every window and deadline is stored.
    function _now() internal view returns (uint64) {
        return uint64(block.timestamp);
    }

    /// @dev The one time comparison: windows are half-open, so an action "within" a window that ends
    /// at `end` is allowed while this holds, and the expiry action from the moment it fails.
    function _before(uint64 end) internal view returns (bool) {
        return _now() < end;
    }
}
