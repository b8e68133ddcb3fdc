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
    // Terminal: the deadline passed before every batch was committed; the owner got the reward and the
    // provider bond.
    Abandoned,
    // Terminal: the provider left a batch unopened or lost a dispute; the bond was slashed.
    Slashed
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
    // The interval is faulty: its files were obtained and its replay is out of bounds or malformed (or the spec
    // fails the deterministic acceptability check): the task is slashed.
    Faulty,
    // No decision: the last round split, or a round could not seat or stayed silent; bonds refunded, less the
    // charges of the rounds whose panelists revealed.
    NoDecision,
    // The task ended (slashed by another dispute or an unopened batch) first: both sides refunded, seats
    // released without penalty.
    Moot,
    // The last round found the files (or the owner's) not obtainable from any source: slashed as Faulty.
    Unavailable
}

/// @notice A panelist's ballot (protocol section 4.2, v3): what its own node found, nothing else.
enum Vote {
    // Not revealed (yet).
    None,
    // The files were obtained and the replay is within the boundary.
    Sound,
    // The files were obtained and the replay is out of bounds or malformed, or the spec fails the deterministic
    // acceptability check.
    Faulty,
    // Files matching the proven digests (the owner's included) could not be obtained from any source by the
    // draw plus the fetch window. Never penalised.
    Unavailable,
    // No verdict in time (the replay did not finish within the commit window): counted for no outcome, as
    // silence is, but never penalised, never paid. A run mostly abstaining or silent is drawn again.
    Abstain
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
    // (One slot: the counters a challenge's commit and reveal read and write.)
    // Latest end of any challenge window (a batch's, or an interval's reopened one); finalize waits for it.
    uint64 challengeEnd;
    // Challenge commits neither revealed nor expired; finalize, abandon and slashUnopened wait for them.
    uint32 pendingCommits;
    // Disputes the adjudicator has not settled; finalize and abandon wait for them.
    uint32 openDisputes;
    // Wei of challenger bonds this contract holds for the task: pending commits, and joined bonds not
    // claimed yet (after a no-decision, what is left of them once the round charges were paid).
    uint128 heldBonds;
    // Batches committed so far; the next commit must be batch `committedBatches`.
    uint64 committedBatches;
    // Batches opened so far; finalize needs all of them.
    uint64 openedBatches;
    // A slash's lead share waiting for earlier challenges (protocol 4.2 as amended): who takes it unless a
    // dispute led by an earlier commit is found faulty, and that lead's commit sequence number (0: nothing
    // waits). Disputes of the slashed task led by a smaller sequence number, and commits made before it,
    // are still judged; `releaseLeadShare` pays the share once none is left.
    address waitingLead;
    uint64 waitingLeadSeq;
    // Targeted openings requested and not opened yet; finalize waits for them (an
    // unopened one past its window is slashed like an unopened batch).
    uint32 unopenedRequests;
    // Latest end of a window a no-decision reopened: slashUnopened, slashUnopenedRequest and abandon wait for
    // it, so the watcher whose dispute ended with no decision challenges again before the task can end.
    uint64 reopenedUntil;
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
/// in storage (a bitmap of the batch records that it is opened). Two slots: the first is all a first reveal
/// writes; the second changes only when a dispute of the interval settles.
struct OpenedInterval {
    // The challenger whose commit of k has the smallest sequence number of every one revealed, in any of
    // k's disputes: it leads each of them (a later dispute after a no-decision too).
    address lead;
    // That commit's sequence number (0: none revealed yet). Commits are counted: never near 2^40.
    uint40 leadSeq;
    // The dispute over this interval the adjudicator has not settled yet (0: none). Ids are counted, one per
    // reveal that opens a dispute: never near 2^40.
    uint40 dispute;
    // Set when a dispute found the interval sound: it is final, never challenged again.
    bool sound;
    // End of the interval's window once a dispute of it ended with no decision (0: its first window's).
    uint64 windowEnd;
    // The latest gap, [gapStart, reopenedAt): from the window's end at the moment a no-decision reopened it
    // (it had closed) to that moment. A commit made in it was made while k's window was closed. Only the
    // latest is kept: a commit made in an older gap could pass only if revealed after two reopenings, which
    // are a dispute's life apart, within its one reveal window.
    uint64 gapStart;
    uint64 reopenedAt;
    // The commit sequence number at the sound settlement: commits up to it were made before it.
    uint64 soundAfterSeq;
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
    // (Slot 0: what the reveal that opens the dispute writes. The adjudicator reads the task and arm from it
    // when it first takes the dispute up, so opening one costs the revealer no storage of the adjudicator's.)
    // The task (ids are counted: never near 2^48).
    uint48 task;
    // The challenged interval (its lead is the interval's: OpenedInterval.lead); k < totalSteps < 2^48.
    uint48 k;
    // Bonds joined (one per revealed commit).
    uint32 joined;
    // Of them, those revealed with reason Unavailable: a sound settlement pays the provider no share of them.
    uint32 joinedUnavailable;
    // True until the adjudicator settles it.
    bool open;
    // The block and time of the reveal that opened it: its first round is armed there.
    uint48 armBlock;
    uint40 armedAt;
    // (Slot 1: written at the settlement.)
    // The settlement's verdict (None while open); joined bonds are claimed against it.
    Verdict verdict;
    // What claimBond pays back per joined bond: the whole bond, less its share of the round charges
    // after a no-decision.
    uint80 refundPerBond;
}

/// @notice How an adjudicator settles a dispute with the task contract (protocol 4.2). No list of panelists
/// crosses: the task contract hands the panel's money to the adjudicator in one sum, and the adjudicator
/// pays its seats itself, a page at a time.
struct Settlement {
    // Valid, Faulty, Unavailable, NoDecision or Moot.
    Verdict verdict;
    // NoDecision only: the round charges the adjudicator asks of the joined bonds for the panelists who
    // revealed (panelBps x challengerBond x 2^r per round); the task contract pays at most what they hold.
    uint256 charges;
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
}

/// @notice The bonds a task asks for (postTask), in wei.
struct Bonds {
    // Exact value acceptTask must carry.
    uint256 provider;
    // Exact value a challenge commit must carry.
    uint256 challenger;
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

/// @notice A dispute as the committee runs it (protocol 4.2, v3). A round's panel is drawn as a *run*; a
/// silent undecided run is voided and the round drawn again (at most MAX_RERUNS times), so a round may take
/// several runs; every run's seats stay in the dispute's seat list for settlement.
struct Dispute {
    // (Slot 0: what opening the dispute writes.)
    // The task in the task contract (its interval, and the first challenger's reason, are in the task
    // contract's record and DisputeOpened event).
    uint64 task;
    // Where the dispute is.
    DisputeStatus status;
    // The final outcome, once Resolved.
    Verdict verdict;
    // While Appealable: the outcome of the round that may be appealed (Valid or Faulty).
    Verdict decided;
    // The current round (0-based); round r seats panelSize * 2^r + 2^r - 1 auditors.
    uint8 round;
    // The current run (0-based, over all rounds): the panel being drawn, voting, or last decided.
    uint8 run;
    // Times the current round was drawn again after a silent undecided run (at most MAX_RERUNS).
    uint8 reruns;
    // a: the block the current run was armed at; its history "as of a" is the state after a - 1, its
    // seed is the value of the randomness target for (a, armedAt).
    uint48 armBlock;
    // When the current run was (last) armed: the draw must complete within maxDrawDelay of it.
    uint40 armedAt;
    // When the current round was first armed: re-arms and re-runs count toward starvationTimeout from here.
    uint40 roundStartedAt;
    // (Slot 1: what the dispute's later life writes.)
    // When the current run's panel was complete: its commit window starts here.
    uint40 drawnAt;
    // When the round that may be appealed was decided: its appeal window starts here.
    uint40 decidedAt;
    // The run whose outcome decided the dispute (or may be appealed): its majority shares the panel's money.
    uint8 decidedRun;
    // The draw's cursor: tries made so far for the current arm.
    uint16 tries;
    // Auditors seated so far in the current draw (the tail of the seat list).
    uint16 seated;
    // Settlement of the seats, once Resolved (settleSeats): how many are settled, in seat order, and
    // whether all are.
    uint16 settledSeats;
    bool seatsSettled;
    // The dispute's first arm block (its opening reveal's): an auditor is eligible for a later round only if it
    // was eligible as of this block too, so sybils registered once a dispute is under way never sit on it.
    uint48 firstArmBlock;
}

/// @notice One panel draw of a dispute (a run) and its tally, kept so that a round is resolved, and its seats
/// settled, without a loop over its panel.
struct Run {
    // The round it drew for.
    uint8 round;
    // Drawn again after it stayed silent and undecided: its ballots count for nothing (its unexcused silent
    // seats are still penalised).
    bool voided;
    // Where its panel sits in the dispute's seat list, and its size.
    uint16 start;
    uint16 size;
    // Revealed ballots.
    uint16 sound;
    uint16 faulty;
    uint16 unavailable;
    // Seats excused (beyond their auditor's L overlapping seats), and those of them that revealed.
    uint16 excused;
    uint16 excusedRevealed;
    // After a no-decision: what each of its panelists who revealed earns from its round's charge (at most a
    // bond, < 2^80 wei, times 2^7).
    uint88 chargeEach;
    // The block its run was resolved in: a silent panelist is excused for interest only if it had become
    // interested in the task by then (not later, to dodge the penalty).
    uint40 endBlock;
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
    // Seats not settled yet (settleSeats): exit waits for them.
    uint32 openSeats;
}

/// @notice A seat on a dispute: one per panelist per run (an auditor sits in one run not voided of a dispute at
/// most; a voided run's panelists may be drawn again).
struct Ballot {
    // The run it sat in.
    uint8 run;
    // The revealed ballot (Vote: 1 sound, 2 faulty, 3 unavailable, 4 abstain); zero until revealed.
    uint8 vote;
    // Seated beyond its first L overlapping seats: a missing reveal costs it nothing.
    bool excused;
    // The auditor's previous seat on this dispute + 1 (0: none): restored if this draw is abandoned.
    uint16 previous;
    // keccak256(abi.encode(dispute, run, vote, salt, auditor)); zero until committed.
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
