// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @notice Lifecycle of a task (protocol section 4.1).
enum TaskStatus {
    // No task with this id was ever posted.
    None,
    // Posted with its reward; waiting for a provider. The owner may cancel.
    Posted,
    // A provider bonded; batches are being committed, drawn and opened.
    Accepted,
    // Every batch is committed; openings and challenge windows may still run.
    Committed,
    // Terminal: every window closed with nothing upheld; the provider got reward and bond.
    Finalized,
    // Terminal: the owner took the reward back before anyone accepted.
    Cancelled,
    // Terminal: the deadline passed before every batch was committed; the owner got reward and bond.
    Abandoned,
    // Terminal: the provider left a batch unopened or lost a dispute; the bond was slashed.
    Slashed,
    // Terminal: an interval reached maxNoDecisions counted no-decisions; reward, provider bond and owner
    // bond were burned, so nobody profits from a stall.
    Undecided
}

/// @notice Lifecycle of one batch of a task (protocol sections 3 and 4.1).
enum BatchStatus {
    // Not committed yet.
    None,
    // Root committed; its sample is not drawn yet.
    Committed,
    // Sample drawn; the provider must open it within the opening window.
    Drawn,
    // Every sampled interval is opened; its challenge window runs.
    Opened
}

/// @notice A dispute's outcome, as an adjudicator reports it (protocol section 4.2).
enum Verdict {
    // Not decided yet.
    None,
    // The interval is sound: its files are available and match, and its replay is within the boundary.
    Valid,
    // The interval is faulty: the task is slashed.
    Faulty,
    // No majority after the last round, or no panel could be drawn in time: bonds refunded, less the
    // charges of the rounds whose panelists revealed.
    NoDecision,
    // The task ended (slashed by another dispute or an unopened batch) first: both sides refunded,
    // panel locks released without penalty.
    Moot
}

/// @notice Time limits of a task, in seconds (protocol section 4.1). Each is > 0.
struct Windows {
    // From a batch's drawSeed: the provider must open the sampled intervals before it closes.
    uint64 openingWindow;
    // From a batch's openBatch: watchers may commit a challenge against its intervals.
    uint64 challengeWindow;
    // From a challenge commit: the challenger must reveal it.
    uint64 challengeRevealWindow;
}

/// @notice What the owner fixed when posting a task; never changes afterwards.
struct TaskTerms {
    // keccak256 of the canonical TaskSpec JSON (protocol 2.1).
    bytes32 specHash;
    // sha256 of the initial checkpoint: the start digest of interval 0.
    bytes32 initDigest;
    // The provider's pay, escrowed from postTask.
    uint256 reward;
    // Exact value acceptTask must carry.
    uint256 providerBond;
    // Exact value a challenge commit must carry.
    uint256 challengerBond;
    // Sent with the reward; back to the owner when the task ends, unless it ends Undecided.
    uint256 ownerBond;
    // N: training steps in all.
    uint64 totalSteps;
    // s: steps per interval.
    uint64 stride;
    // Last moment (exclusive) for commitBatch; from then on an unfinished task may be abandoned.
    uint64 deadline;
    // The owner's word for the slowest honest replay of one interval (at most the adjudicator's
    // maxReplaySeconds); nodes refuse a task that declares less than they measure.
    uint64 replaySeconds;
    // m: intervals per batch (1 .. 256).
    uint16 intervalsPerBatch;
    // Share of each batch sampled, in basis points (1 .. 10000).
    uint16 sampleBps;
    // The task's time limits.
    Windows windows;
}

/// @notice A task: its terms, parties and O(1) progress counters.
struct Task {
    // Fixed at posting.
    TaskTerms terms;
    // Who posted (and paid) the task.
    address owner;
    // Who accepted it; zero while Posted.
    address provider;
    // Where the task is in its lifecycle.
    TaskStatus status;
    // B = ceil(ceil(N / s) / m).
    uint64 batchCount;
    // Batches committed so far; the next commit must be batch `committedBatches`.
    uint64 committedBatches;
    // Batches opened so far; finalize needs all of them.
    uint64 openedBatches;
    // Latest end of any challenge window (a batch's, or an interval's reopened one); finalize waits for it.
    uint64 challengeEnd;
    // Challenge commits neither revealed nor expired; finalize, abandon and slashUnopened wait for them.
    uint32 pendingCommits;
    // Wei of challenger bonds this contract holds for the task: pending commits, and joined bonds not
    // claimed yet (after a no-decision, what is left of them once the round charges were paid).
    uint128 heldBonds;
    // Disputes the adjudicator has not settled; finalize and abandon wait for them.
    uint32 openDisputes;
    // Batches whose sample was drawn; settleUndecided waits until every one of them is opened.
    uint64 drawnBatches;
    // Set when an interval reached maxNoDecisions counted no-decisions: finalize is refused and the task
    // can only end Undecided (or Slashed, by another dispute or an unopened batch).
    bool stalled;
    // A slash's lead share waiting for earlier challenges (protocol 4.2 as amended): who takes it unless a
    // dispute led by an earlier commit is found faulty, and that lead's commit sequence number (0: nothing
    // waits). Disputes of the slashed task led by a smaller sequence number, and commits made before it,
    // are still judged; `releaseLeadShare` pays the share once none is left.
    address waitingLead;
    uint64 waitingLeadSeq;
    // Targeted openings requested and not opened yet; finalize and settleUndecided wait for them (an
    // unopened one past its window is slashed like an unopened batch).
    uint32 unopenedRequests;
}

/// @notice One batch of a task.
struct Batch {
    // Root of the ordered Merkle tree of the batch's leaves (protocol 2.4).
    bytes32 root;
    // The seed the sample was drawn from; zero when every interval was sampled.
    bytes32 seed;
    // Bit i set: position i of the batch is sampled.
    uint256 sampledBitmap;
    // Bit i set: position i is opened (openings may span several openBatch calls).
    uint256 openedBitmap;
    // The randomness target named at commitBatch (a block or a drand round): the sample's seed is its value.
    uint64 seedTarget;
    // Opening window end (drawn batches) or challenge window end (opened batches).
    uint64 windowEnd;
    // When the batch was opened: its challenge window runs from here to windowEnd.
    uint64 openedAt;
    // Number of sampled positions.
    uint16 sampleCount;
    // Where the batch is in its lifecycle.
    BatchStatus status;
    // Targeted openings requested of its unsampled intervals (at most MAX_REQUESTS_PER_BATCH per requester).
    uint8 requestCount;
}

/// @notice Where a targeted opening (requestOpening) is in its life.
enum RequestStatus {
    // Never requested.
    None,
    // Requested with a bond: the provider must open the interval before `openBy`.
    Pending,
    // Opened: the interval is challengeable like a sampled one, from `openedAt` for one challenge window.
    Opened,
    // The bond was paid out: refunded, or the provider's share paid once the task finalized.
    Settled
}

/// @notice A targeted opening of an interval the sample left unopened (protocol section 8.3).
struct OpeningRequest {
    // Who asked, and escrowed the challenger bond.
    address requester;
    // End of the provider's window to open it.
    uint64 openBy;
    // When it was opened (0 until then): its challenge window starts here.
    uint64 openedAt;
    // Its place in the commit order (a number taken from commitCount): the requester's own reveal of a
    // challenge of the interval leads from here.
    uint64 seq;
    // Where it is in its life.
    RequestStatus status;
}

/// @notice What the provider proves for one sampled interval k in openBatch (protocol 4.1).
struct Opening {
    // The interval.
    uint256 k;
    // b_k, the step count after the interval.
    uint256 endStep;
    // digest_k, sha256 of the end evidence.
    bytes32 endDigest;
    // Siblings of leaf k in batch j's tree.
    bytes32[] endProof;
    // b_{k-1} (ignored for k = 0).
    uint256 startStep;
    // digest_{k-1} (ignored for k = 0: the start is initDigest).
    bytes32 startDigest;
    // Siblings of leaf k-1: in batch j's tree, or batch j-1's at index m-1 when k = j*m.
    bytes32[] startProof;
}

/// @notice An opened interval's challenge state. Its proven digests are in its IntervalOpened event, not
/// in storage (a bitmap of the batch records that it is opened).
struct OpenedInterval {
    // The dispute over this interval the adjudicator has not settled yet (0: none).
    uint64 dispute;
    // End of the interval's window once a dispute of it ended with no decision (0: its batch's).
    uint64 windowEnd;
    // Start of the reopened stretch [reopenedAt, windowEnd) when it began after the window had closed.
    uint64 reopenedAt;
    // The commit sequence number at the sound settlement: commits up to it were made before it.
    uint64 soundAfterSeq;
    // The challenger whose commit of k has the smallest sequence number of every one revealed, in any of
    // k's disputes: it leads each of them (a later dispute after a no-decision too).
    address lead;
    // That commit's sequence number (0: none revealed yet).
    uint64 leadSeq;
    // Disputes of the interval that ended with a counted no-decision: most of the last round's seated
    // panel revealed and still no majority (saturates at 255).
    uint8 noDecisions;
    // Set when a dispute found the interval sound: it is final, never challenged again.
    bool sound;
}

/// @notice Why a challenger disputes an interval (protocol section 4.1).
enum Reason {
    // Not a reason: reveals with it revert.
    None,
    // Replaying the interval lands outside the boundary.
    OutOfBounds,
    // The interval's evidence could not be fetched or did not match its digests.
    Unavailable
}

/// @notice Where a challenge commitment is in its life.
enum CommitStatus {
    // No commit with this sender and commitment.
    None,
    // Bond escrowed; waiting for the reveal.
    Pending,
    // Revealed into a dispute: the bond is held until the dispute settles; a sound settlement pays it
    // out then, any other is followed by `claimBond`.
    Joined,
    // Revealed and paid out: refunded, or settled as a sound verdict settles its bonds.
    Settled,
    // Not revealed in time: burned (or refunded, when the task had already ended).
    Expired
}

/// @notice A challenge commitment, keyed by its sender and the commitment (protocol section 4.1).
struct ChallengeCommit {
    // The task challenged.
    uint64 task;
    // The dispute it joined, once Joined.
    uint64 dispute;
    // Its place in the contract's one total order of commits (1, 2, ...): the smallest joined one leads.
    uint64 seq;
    // When it was committed: the revealed interval's window must have been open then.
    uint56 committedAt;
    // Where it is in its life.
    CommitStatus status;
}

/// @notice A dispute as the task contract keeps it: the interval, its joined challengers' bonds and lead.
struct DisputeRecord {
    // The task.
    uint64 task;
    // The challenged interval (its lead is the interval's: OpenedInterval.lead).
    uint64 k;
    // Bonds joined (one per revealed commit).
    uint32 joined;
    // True until the adjudicator settles it.
    bool open;
    // The settlement's verdict (None while open); joined bonds are claimed against it.
    Verdict verdict;
    // What claimBond pays back per joined bond: the whole bond, less its share of the round charges
    // after a no-decision.
    uint80 refundPerBond;
}

/// @notice How an adjudicator settles a dispute with the task contract (protocol 4.2).
struct Settlement {
    // Valid, Faulty, NoDecision or Moot.
    Verdict verdict;
    // NoDecision only: most of the last round's seated panel revealed (it counts toward maxNoDecisions).
    bool counted;
    // The deciding round's panelists who voted for the verdict: they share the panel's part of a bond.
    address[] majority;
    // NoDecision only: panelists who revealed, in round order, and what each earns from its round's
    // charge (panelBps x challengerBond x 2^r per panel, split among its panelists who revealed).
    address[] charged;
    uint256[] charges;
}

/// @notice How slashed and forfeited bonds are split, in basis points (protocol section 4.2); each
/// triple sums to 10000.
struct Shares {
    // Faulty verdict, of the provider bond: to the lead challenger.
    uint16 faultyLeadBps;
    // Faulty verdict, of the provider bond: split among the majority panelists.
    uint16 faultyPanelBps;
    // Faulty verdict, of the provider bond: to the owner.
    uint16 faultyOwnerBps;
    // Sound verdict, of every joined challenger bond whatever its reason: to the provider.
    uint16 soundProviderBps;
    // Sound verdict, of every joined challenger bond: split among the majority panelists.
    uint16 soundPanelBps;
    // Sound verdict, of every joined challenger bond: burned.
    uint16 soundBurnBps;
}

/// @notice The smallest bonds a task may ask for (protocol 4.2), in wei.
struct MinBonds {
    // Smallest provider bond.
    uint256 provider;
    // Smallest challenger bond.
    uint256 challenger;
    // Smallest owner bond (sent with the reward).
    uint256 owner;
}

/// @notice The bonds a task asks for (postTask), in wei.
struct Bonds {
    // Exact value acceptTask must carry.
    uint256 provider;
    // Exact value a challenge commit must carry.
    uint256 challenger;
    // Sent with the reward by the owner.
    uint256 owner;
}

/// @notice Where a dispute is in the committee (protocol section 4.2).
enum DisputeStatus {
    // No dispute with this id.
    None,
    // A round is armed: its panel is being drawn (`drawPanel`, possibly over several calls) or must be
    // re-armed (`rearm`).
    AwaitingPanel,
    // The round's panel is seated: commit and reveal windows run, then `resolve`.
    Voting,
    // Ended (or moot); the task contract was told and penalties were settled.
    Resolved,
    // A round decided; anyone may appeal for the other outcome until its appeal window ends, then
    // `resolve` lets the outcome stand.
    Appealable
}

/// @notice A dispute as the committee runs it.
struct Dispute {
    // The task in the task contract (its interval is the task contract's record of the dispute).
    uint64 task;
    // What the first challenger saw (it settles nothing).
    Reason reason;
    // Where the dispute is.
    DisputeStatus status;
    // The outcome, once Resolved.
    Verdict verdict;
    // The outcome of the last round that decided (None: no round decided yet).
    Verdict decided;
    // The current round (0-based); round r seats panelSize * 2^r + 2^r - 1 auditors.
    uint8 round;
    // a: the block the current round was armed at; its history "as of a" is the state after a - 1, its
    // seed is the value of the randomness target for (a, armedAt).
    uint48 armBlock;
    // When the current round was (last) armed: the draw must complete within maxDrawDelay of it.
    uint40 armedAt;
    // When the current round was first armed: re-arms count toward starvationTimeout from here.
    uint40 roundStartedAt;
    // (A dispute is opened with the fields above, one storage slot; the ones below change as it runs.)
    // When the current round's panel was complete: its commit window starts here.
    uint40 drawnAt;
    // When the last decided round was resolved: its appeal window starts here.
    uint40 decidedAt;
    // The last decided round, and where its panel sits in the seat list ([decidedStart, decidedEnd)).
    uint8 decidedRound;
    uint16 decidedStart;
    uint16 decidedEnd;
    // The draw's cursor: tries made so far for the current arm.
    uint16 tries;
    // Auditors seated so far in the current draw.
    uint16 seated;
    // Index in the dispute's seat list where the current round's panel begins.
    uint16 panelStart;
}

/// @notice An auditor in the committee (its history by block lives in the committee's checkpoints).
struct Auditor {
    // Stake held (registration stake plus top-ups minus penalties).
    uint256 stake;
    // Block of registration (0: not registered).
    uint64 registeredBlock;
    // When it asked to exit (0: it did not); from then on it is eligible for no newly armed round.
    uint64 exitRequestedAt;
    // Its registry slot + 1 while it holds one (0: none; freed at requestExit).
    uint16 slot;
    // Seats on disputes not resolved yet: exit waits until they are settled.
    uint32 openSeats;
}

/// @notice A panelist's seat on one dispute (an auditor sits at most once per dispute).
struct Ballot {
    // Seated on this dispute.
    bool seated;
    // Seated beyond its first L overlapping rounds: a missing reveal costs it nothing.
    bool excused;
    // The round it sat in.
    uint8 round;
    // The revealed vote (1 sound, 2 faulty); zero until revealed.
    uint8 vote;
    // Its place in the dispute's seat list (the current panel is the list's tail from panelStart).
    uint16 index;
    // keccak256(abi.encode(dispute, round, vote, salt, auditor)); zero until committed.
    bytes32 commitment;
}

/// @notice An appeal of a decided round, for the other outcome (protocol 4.2).
struct Appeal {
    // Who appealed (and is refunded or not when the dispute resolves).
    address appellant;
    // The round it armed.
    uint8 round;
    // The outcome it asked for.
    Verdict wanted;
    // The bond: challengerBond x 2^round.
    uint256 bond;
}
