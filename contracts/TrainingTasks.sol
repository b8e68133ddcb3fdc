// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IAdjudicator} from "./interfaces/IAdjudicator.sol";
import {IDisputedTasks} from "./interfaces/IDisputedTasks.sol";
import {IRandomness} from "./interfaces/IRandomness.sol";

import {TaskClock} from "./libraries/TaskClock.sol";
import {TaskEscrow} from "./tasks/TaskEscrow.sol";
import {TaskOpenings} from "./tasks/TaskOpenings.sol";
import {
    Batch,
    BatchStatus,
    MinBonds,
    ChallengeCommit,
    CommitStatus,
    DisputeRecord,
    OpenedInterval,
    OpeningRequest,
    Reason,
    Settlement,
    Shares,
    Task,
    TaskStatus,
    Verdict
} from "./Types.sol";
import {
    CommitmentExists,
    IntervalFinal,
    IntervalNotOpened,
    IntervalWindowClosed,
    InvalidReason,
    IntervalWindowNotOpen,
    NoChallengeWindowOpen,
    NotAdjudicator,
    NoLeadShareWaiting,
    NothingToClaim,
    RevealWindowClosed,
    RevealWindowOpen,
    UnknownCommitment,
    UnknownDispute,
    WrongBond
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
/// Parts, each readable on its own: TaskEscrow (state, escrow and commitments: post, cancel, accept, commit,
/// finalize, abandon), TaskOpenings (samples, openings, targeted openings, attestations), and this contract
/// (challenges, disputes, their payouts, and the views); every window is computed by TaskClock.
contract TrainingTasks is TaskOpenings {
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
    ) TaskEscrow(randomness, keeperBps, shares, minBonds, maxRequestsPerBatch, adjudicator) {}

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
        if (!TaskClock.isBefore(t.challengeEnd)) revert NoChallengeWindowOpen(task, t.challengeEnd);
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
        c.committedAt = uint56(TaskClock.current());
        c.status = CommitStatus.Pending;
        t.pendingCommits += 1;
        t.heldBonds += uint128(msg.value);
        emit ChallengeCommitted(
            task,
            commitment,
            msg.sender,
            seq,
            TaskClock.revealWindowEnd(t.terms.windows, TaskClock.current())
        );
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
        uint64 revealBy = TaskClock.revealWindowEnd(t.terms.windows, uint64(c.committedAt));
        if (!TaskClock.isBefore(revealBy)) revert RevealWindowClosed(commitment, revealBy);
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
        uint64 revealBy = TaskClock.revealWindowEnd(t.terms.windows, uint64(c.committedAt));
        // INVARIANT: the challenger keeps its whole reveal window.
        if (!moot && TaskClock.isBefore(revealBy)) revert RevealWindowOpen(commitment, revealBy);
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
        return TaskClock.windowEnd(firstEnd, _opened[task][k]);
    }

    // --- internal ------------------------------------------------------------------------------

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
        uint64 end = TaskClock.windowEnd(firstEnd, iv);
        bool inGap = TaskClock.inGap(iv, at);
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
        return (requestOpenedAt, TaskClock.challengeWindowEnd(t.terms.windows, requestOpenedAt));
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
        bool inFirstWindow = uint64(c.committedAt) < TaskClock.challengeWindowEnd(t.terms.windows, r.openedAt);
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
        uint64 start = TaskClock.current();
        uint64 end = TaskClock.challengeWindowEnd(t.terms.windows, start);
        (, uint64 firstEnd) = _firstWindow(task, t, k, _batches[task][k / t.terms.intervalsPerBatch]);
        TaskClock.reopen(iv, TaskClock.windowEnd(firstEnd, iv), end);
        if (end > t.challengeEnd) t.challengeEnd = end;
        if (end > t.reopenedUntil) t.reopenedUntil = end;
        emit IntervalWindowReopened(task, k, end);
    }
}
