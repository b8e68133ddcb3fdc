// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {LeafHash} from "../libraries/LeafHash.sol";
import {OrderedMerkle} from "../libraries/OrderedMerkle.sol";
import {Sampling} from "../libraries/Sampling.sol";
import {TaskClock} from "../libraries/TaskClock.sol";
import {Batch, BatchStatus, Opening, OpeningRequest, RequestStatus, Task, TaskStatus} from "../Types.sol";
import {
    BatchWindowClosed,
    DuplicateOpening,
    EmptyOpening,
    IntervalNotSampled,
    InvalidProof,
    NoRequest,
    NotRequestable,
    OpeningWindowClosed,
    OpeningWindowOpen,
    RequestWindow,
    SeedNotReady,
    TooManyRequests,
    WrongBond,
    WrongStep,
    WrongTaskStatus
} from "../Errors.sol";
import {TaskEscrow} from "./TaskEscrow.sol";

/// @title TaskOpenings
/// @notice The openings and requests part of TrainingTasks (protocol sections 3, 4.1, 8.3 and 8.4): the
/// randomness backend samples each committed batch (drawSeed), the provider opens the sample with proofs
/// checked here (openBatch), or the task is slashed (slashUnopened); watchers may ask for an unsampled
/// interval to be opened too (requestOpening, openRequested, slashUnopenedRequest, settleRequest), and
/// announce their signed attestations of intervals (attest).
/// @dev Abstract: TrainingTasks builds on it. State lives in TaskEscrow.
abstract contract TaskOpenings is TaskEscrow {
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

    /// @notice The task was slashed: batch `j` was not opened in time (dispute 0), or `dispute` over an
    /// interval of batch `j` found it faulty.
    /// @param task The task id.
    /// @param j The unopened batch, or the batch of the faulty interval.
    /// @param by The keeper who slashed the unopened batch, or the lead challenger of the dispute (paid the
    /// lead share at once, or the first candidate for it when LeadShareWaiting follows).
    /// @param dispute The dispute (0: an unopened batch).
    event TaskSlashed(uint256 indexed task, uint256 indexed j, address indexed by, uint256 dispute);

    // --- provider ------------------------------------------------------------------------------

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
        if (!TaskClock.isBefore(b.windowEnd)) revert OpeningWindowClosed(task, j, b.windowEnd);
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
        b.windowEnd = TaskClock.openingWindowEnd(t.terms.windows, TaskClock.current());
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
        if (TaskClock.isBefore(b.windowEnd)) revert OpeningWindowOpen(task, j, b.windowEnd);
        // INVARIANT: a challenge decides first. Otherwise a provider whose interval is being found
        // faulty slashes itself through a sock-puppet keeper (who gets KEEPER_BPS), mooting the verdict;
        // pending commits count too, or the sock-puppet front-runs the first reveal.
        _requireNoChallenge(task, t);
        _requireNoReopenedWindow(task, t);
        _slashUnopened(task, t, j, msg.sender);
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
        if (!TaskClock.isBefore(b.windowEnd)) revert BatchWindowClosed(task, j, b.windowEnd);
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
        r.openBy = TaskClock.openingWindowEnd(t.terms.windows, TaskClock.current());
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
        if (!TaskClock.isBefore(r.openBy)) revert RequestWindow(task, o.k, r.openBy);
        _proveDigests(task, t, o);
        uint256 m = t.terms.intervalsPerBatch;
        _batches[task][o.k / m].openedBitmap |= 1 << (o.k % m);
        r.openedAt = TaskClock.current();
        r.status = RequestStatus.Opened;
        t.unopenedRequests -= 1;
        uint64 end = TaskClock.challengeWindowEnd(t.terms.windows, TaskClock.current());
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
        if (TaskClock.isBefore(r.openBy)) revert RequestWindow(task, k, r.openBy);
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

    // --- internal ------------------------------------------------------------------------------

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
        uint64 end = TaskClock.challengeWindowEnd(t.terms.windows, TaskClock.current());
        b.openedAt = TaskClock.current();
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
}
