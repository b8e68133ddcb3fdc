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
    // Terminal: the provider failed an opening (or, later, lost a dispute); the bond was slashed.
    Slashed
}

/// @notice Lifecycle of one batch of a task (protocol sections 3 and 4.1).
enum BatchStatus {
    // Not committed yet.
    None,
    // Root committed; its seed block is not drawn yet.
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
    // The interval is valid (or, for reason unavailable, its files were available).
    Valid,
    // The interval is faulty: the task is slashed.
    Faulty,
    // No majority after the last round, or no panel could be drawn in time: both sides refunded.
    NoDecision
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
    // Latest end of any batch's challenge window; finalize waits for it.
    uint64 challengeEnd;
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
    // Block of commitBatch (h); the seed block is h + SEED_DELAY.
    uint64 commitBlock;
    // Opening window end (drawn batches) or challenge window end (opened batches).
    uint64 windowEnd;
    // Number of sampled positions.
    uint16 sampleCount;
    // Where the batch is in its lifecycle.
    BatchStatus status;
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

/// @notice Start and end digests of an opened interval, as proven on-chain.
struct OpenedInterval {
    // sha256 of the evidence the interval starts from (initDigest for k = 0).
    bytes32 startDigest;
    // sha256 of the evidence the interval ends with.
    bytes32 endDigest;
}
