// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Checkpoints} from "@openzeppelin/contracts/utils/structs/Checkpoints.sol";

import {IAdjudicator} from "./interfaces/IAdjudicator.sol";
import {IDisputedTasks} from "./interfaces/IDisputedTasks.sol";
import {IRandomness} from "./interfaces/IRandomness.sol";
import {PanelDraw} from "./libraries/PanelDraw.sol";
import {PullPayments} from "./utils/PullPayments.sol";
import {Appeal, Auditor, Ballot, Dispute, DisputeStatus, Reason, Settlement, Verdict} from "./Types.sol";
import {
    AlreadyCommitted,
    AppealWindowClosed,
    AppealWindowOpen,
    AlreadyRegistered,
    CannotRearm,
    CommitWindowClosed,
    CooldownNotOver,
    DrawExpired,
    ExitAlreadyRequested,
    ExitNotRequested,
    InvalidParameter,
    InvalidVote,
    NotPanelist,
    NotRegistered,
    NotTaskContract,
    NothingToReveal,
    PanelNotReady,
    RegistryFull,
    SeatsOpen,
    StakeTooLarge,
    StakeTooLow,
    VoteMismatch,
    VoteRevealClosed,
    TooFewAuditors,
    VotingNotOver,
    WrongBond,
    WrongDisputeStatus
} from "./Errors.sol";

/// @notice Constructor parameters of the committee (protocol section 4.2).
struct CommitteeParams {
    // Lost per seat for voting against a dispute's final outcome or not revealing (unless excused).
    uint256 penalty;
    // L: overlapping seats an auditor must be able to answer for; the stake to be eligible is L x penalty.
    uint8 overlap;
    // Blocks an auditor must have been registered before a round's arm block to be eligible for it.
    uint64 warmupBlocks;
    // Seconds between requestExit and exit; longer than maxDrawDelay, so nobody eligible for an armed
    // round leaves before it is drawn.
    uint64 cooldown;
    // Seconds from a panel's completion in which panelists commit their votes: >= L x maxReplaySeconds.
    uint64 commitWindow;
    // Seconds after the commit window in which panelists reveal.
    uint64 revealWindow;
    // Seconds after a decided round in which anyone may appeal for the other outcome.
    uint64 appealWindow;
    // Seconds from a round's arm in which its panel must be drawn; past it, anyone re-arms.
    uint64 maxDrawDelay;
    // Seconds from a round's first arm after which a round that still cannot seat its panel ends the
    // dispute as if it had been undecided.
    uint64 starvationTimeout;
    // Longest replay a task may declare (TrainingTasks refuses tasks above it).
    uint64 maxReplaySeconds;
    // Panel size of round 0: odd, >= 3.
    uint16 panelSize;
    // Rounds: 1 .. 8.
    uint8 maxRounds;
    // Share of a losing or stalled appeal's bond paid to the deciding round's majority, in bps.
    uint16 panelBps;
}

/// @title AuditCommittee
/// @notice A staked committee of auditors that decides disputes of TrainingTasks (protocol 4.2, v2).
/// A round is armed at a block a; its panel is a function of the committee's history as of a (slot
/// occupants, registrations, exit requests and stakes, kept as OpenZeppelin checkpoints) and of the
/// value of the randomness target named when it was armed alone, so nothing done after a (exits, registrations, other
/// disputes) steers it. Seats held elsewhere do not matter for eligibility. A strict majority of the
/// seated panel decides a round; otherwise the next, larger round is armed. Penalties are settled
/// against the dispute's final outcome when it resolves.
/// @dev States of a dispute: AwaitingPanel -(drawPanel, one or more calls)-> Voting -(resolve)->
/// Resolved, or back to AwaitingPanel for the next round; AwaitingPanel -(rearm)-> AwaitingPanel when
/// the draw expired, its target's value is gone, or its tries seated too few, until
/// starvationTimeout. A moot dispute (its task ended) resolves at any time, without penalties.
/// Clocks: the randomness target in the backend's units (blocks or drand rounds), every window in
/// seconds. Money invariant (protocol 4.3): balance ==
/// totalStake + heldAppealBonds + credits + burned.
contract AuditCommittee is IAdjudicator, PullPayments {
    using Checkpoints for Checkpoints.Trace160;
    using Checkpoints for Checkpoints.Trace208;

    /// @notice Registry slots: occupants are looked up by slot, so the registry bounds nothing but size.
    uint256 public constant MAX_AUDITORS = 256;
    /// @notice Most rounds a committee may be configured with.
    uint256 public constant MAX_ROUNDS_LIMIT = 8;
    /// @notice Largest L: the overlap bookkeeping keeps this many seat ends per auditor.
    uint256 public constant MAX_OVERLAP = 8;
    /// @notice Smallest first-round panel.
    uint256 public constant MIN_PANEL = 3;
    /// @notice Draw tries per drawPanel call: a round of 15 seats (240 tries) takes four calls.
    uint256 public constant TRIES_PER_CALL = 64;

    // Bit layout of a standing checkpoint: stake (bits 0-127), registration block (128-175), exit
    // requested (176).
    uint256 private constant _STAKE_BITS = 128;
    uint256 private constant _EXIT_BIT = 176;

    /// @notice The task contract whose disputes this committee decides.
    IDisputedTasks public immutable TASKS;
    /// @notice Lost per seat for voting against the final outcome or not revealing (unless excused).
    uint256 public immutable PENALTY;
    /// @notice L: overlapping seats an auditor answers for.
    uint256 public immutable OVERLAP;
    /// @notice Stake an auditor must hold to register and to be eligible: L x PENALTY.
    uint256 public immutable AUDITOR_STAKE;
    /// @notice Blocks of registration needed before a round's arm block to be eligible for it.
    uint256 public immutable WARMUP_BLOCKS;
    /// @notice The randomness backend: a round armed in block a at time t draws its panel from the value
    /// of `RANDOMNESS.targetOf(a, t)`.
    IRandomness public immutable RANDOMNESS;
    /// @notice Seconds between requestExit and exit.
    uint64 public immutable COOLDOWN;
    /// @notice Seconds to commit a vote, from the panel's completion.
    uint64 public immutable COMMIT_WINDOW;
    /// @notice Seconds to reveal a vote, after the commit window.
    uint64 public immutable REVEAL_WINDOW;
    /// @notice Seconds after a decided round in which anyone may appeal it.
    uint64 public immutable APPEAL_WINDOW;
    /// @notice Seconds from a round's arm in which its panel must be drawn.
    uint64 public immutable MAX_DRAW_DELAY;
    /// @notice Seconds from a round's first arm after which a round that cannot seat ends the dispute.
    uint64 public immutable STARVATION_TIMEOUT;
    /// @notice Longest replay a task may declare.
    uint64 public immutable MAX_REPLAY_SECONDS;
    /// @notice Panel size of round 0.
    uint256 public immutable PANEL_SIZE;
    /// @notice Rounds a dispute may take.
    uint256 public immutable MAX_ROUNDS;
    /// @notice Share of a losing or stalled appeal's bond paid to the deciding round's majority, in bps.
    uint256 public immutable PANEL_BPS;

    /// @notice Number of disputes opened; dispute ids are 1 .. disputeCount.
    uint256 public disputeCount;
    /// @notice Sum of every auditor's stake, exiting ones too (for the balance invariant).
    uint256 public totalStake;
    /// @notice Auditors holding a registry slot now.
    uint256 public auditorCount;
    /// @notice Appeal bonds of disputes not resolved yet (for the balance invariant).
    uint256 public heldAppealBonds;

    mapping(address auditor => Auditor) private _auditors;
    // Each auditor's standing by block: stake, registration block, exit request (bit layout above).
    mapping(address auditor => Checkpoints.Trace208) private _standing;
    // Each slot's occupant by block; a slot is reused after its occupant requests exit, never moved.
    Checkpoints.Trace160[MAX_AUDITORS] private _occupants;
    // Slots ever used, by block (slots are never removed, so this only grows).
    Checkpoints.Trace208 private _slotCount;
    // Slots freed by exit requests, reused last-in first-out.
    uint16[] private _freeSlots;
    // Ends of each auditor's latest non-excused seats: how many overlap decides whether a seat is excused.
    mapping(address auditor => uint64[MAX_OVERLAP]) private _seatEnds;

    mapping(uint256 dispute => Dispute) private _disputes;
    // Every auditor ever seated on the dispute, in draw order, all rounds (penalties are settled over it).
    mapping(uint256 dispute => address[]) private _seats;
    mapping(uint256 dispute => mapping(address auditor => Ballot)) private _ballots;
    mapping(uint256 dispute => Appeal[]) private _appeals;
    // Rounds of the task's disputes armed and not drawn yet, and seats of an auditor on the task's open
    // disputes: either keeps an auditor from challenging the task (PanelistCannotChallenge).
    mapping(uint256 task => uint256) private _undrawnRounds;
    mapping(uint256 task => mapping(address auditor => uint256)) private _seatsOnTask;

    /// @notice The panel of `round` is complete; votes are committed until `commitEnd`, revealed until
    /// `revealEnd`.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panel The panelists, in draw order.
    /// @param commitEnd When the commit window closes.
    /// @param revealEnd When the reveal window closes.
    event PanelDrawn(uint256 indexed dispute, uint256 round, address[] panel, uint64 commitEnd, uint64 revealEnd);

    /// @notice The round was armed anew at `armBlock`: its draw expired, its target's value was gone,
    /// its tries seated too few, or its last round ended undecided with most of its panel silent.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param armBlock The new arm block (`panelTarget` names the new target).
    /// @param seated Auditors the abandoned draw had seated.
    event PanelRearmed(uint256 indexed dispute, uint256 round, uint256 armBlock, uint256 seated);

    /// @notice A panelist committed its vote.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panelist The panelist.
    event VoteCommitted(uint256 indexed dispute, uint256 round, address indexed panelist);

    /// @notice A panelist revealed its vote.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panelist The panelist.
    /// @param vote 1 sound, 2 faulty.
    event VoteRevealed(uint256 indexed dispute, uint256 round, address indexed panelist, uint8 vote);

    /// @notice A round was decided by a strict majority of its seated panel; anyone may appeal it for the
    /// other outcome until `appealUntil`.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param outcome Valid or Faulty.
    /// @param appealUntil When its appeal window closes.
    event RoundDecided(uint256 indexed dispute, uint256 round, Verdict outcome, uint64 appealUntil);

    /// @notice A decided round was appealed: round `round` is armed with a larger panel.
    /// @param dispute The dispute id.
    /// @param round The round the appeal armed.
    /// @param appellant Who appealed.
    /// @param wanted The outcome it asked for.
    /// @param bond The bond it put up.
    event Appealed(uint256 indexed dispute, uint256 round, address indexed appellant, Verdict wanted, uint256 bond);

    /// @notice An appeal bond was settled when its dispute resolved.
    /// @param dispute The dispute id.
    /// @param appellant Who appealed.
    /// @param refunded What it got back (all of it when the final outcome is the one it asked for).
    event AppealSettled(uint256 indexed dispute, address indexed appellant, uint256 refunded);

    /// @notice A round ended without a strict majority of its seated panel.
    /// @param dispute The dispute id.
    /// @param round The undecided round.
    event RoundFailed(uint256 indexed dispute, uint256 round);

    /// @notice A panelist lost `amount` of its stake when `dispute` resolved.
    /// @param dispute The dispute id.
    /// @param panelist The panelist.
    /// @param amount The penalty (capped at what its stake held).
    event Penalized(uint256 indexed dispute, address indexed panelist, uint256 amount);

    /// @notice The dispute ended; penalties were settled and the task contract paid it out.
    /// @param dispute The dispute id.
    /// @param task The task id.
    /// @param verdict Valid, Faulty, NoDecision or Moot.
    /// @param round The last round.
    event DisputeResolved(uint256 indexed dispute, uint256 indexed task, Verdict verdict, uint256 round);

    /// @notice An auditor registered with its stake in registry slot `slot`.
    /// @param auditor The auditor.
    /// @param stake The stake.
    /// @param slot The registry slot (0-based).
    event AuditorRegistered(address indexed auditor, uint256 stake, uint256 slot);

    /// @notice An auditor added to its stake.
    /// @param auditor The auditor.
    /// @param amount The amount added.
    event StakeAdded(address indexed auditor, uint256 amount);

    /// @notice An auditor asked to exit: eligible for no round armed later; its slot is free.
    /// @param auditor The auditor.
    /// @param exitAt When it may exit (once its seats are settled).
    event AuditorExitRequested(address indexed auditor, uint64 exitAt);

    /// @notice An auditor exited; its remaining stake is credited.
    /// @param auditor The auditor.
    /// @param stake The stake credited.
    event AuditorExited(address indexed auditor, uint256 stake);

    /// @param tasks The task contract (deploy this committee first, at the task contract's predicted
    /// address; the task contract checks the wiring when it is built).
    /// @param randomness RANDOMNESS, the backend the task contract samples batches from too.
    /// @param p The committee's parameters.
    constructor(IDisputedTasks tasks, IRandomness randomness, CommitteeParams memory p) {
        if (p.penalty == 0) revert InvalidParameter("penalty", p.penalty);
        if (p.overlap == 0 || p.overlap > MAX_OVERLAP) revert InvalidParameter("overlap", p.overlap);
        if (p.panelSize < MIN_PANEL || p.panelSize % 2 == 0) revert InvalidParameter("panelSize", p.panelSize);
        if (p.maxRounds == 0 || p.maxRounds > MAX_ROUNDS_LIMIT) revert InvalidParameter("maxRounds", p.maxRounds);
        // INVARIANT: every round can be seated from a full registry with appeals still possible (protocol
        // 4.2: the deployment keeps 2 x sum(P_r) auditors), and a round's tries fit the draw's cursor.
        uint256 seats = 0;
        for (uint256 r = 0; r < p.maxRounds; ++r) {
            seats += PanelDraw.size(p.panelSize, r);
        }
        if (2 * seats > MAX_AUDITORS) revert InvalidParameter("maxRounds", p.maxRounds);
        if (p.warmupBlocks == 0) revert InvalidParameter("warmupBlocks", p.warmupBlocks);
        if (p.maxReplaySeconds == 0) revert InvalidParameter("maxReplaySeconds", p.maxReplaySeconds);
        // INVARIANT: a panelist can replay every overlapping seat it answers for within one commit window.
        if (p.commitWindow < uint256(p.overlap) * p.maxReplaySeconds) {
            revert InvalidParameter("commitWindow", p.commitWindow);
        }
        if (p.revealWindow == 0) revert InvalidParameter("revealWindow", p.revealWindow);
        if (p.appealWindow == 0) revert InvalidParameter("appealWindow", p.appealWindow);
        if (p.panelBps > 10_000) revert InvalidParameter("panelBps", p.panelBps);
        if (p.maxDrawDelay == 0) revert InvalidParameter("maxDrawDelay", p.maxDrawDelay);
        // INVARIANT: an auditor eligible for an armed round is still there when it is drawn.
        if (p.cooldown <= p.maxDrawDelay) revert InvalidParameter("cooldown", p.cooldown);
        if (p.starvationTimeout < p.maxDrawDelay) revert InvalidParameter("starvationTimeout", p.starvationTimeout);
        TASKS = tasks;
        PENALTY = p.penalty;
        OVERLAP = p.overlap;
        AUDITOR_STAKE = p.penalty * p.overlap;
        WARMUP_BLOCKS = p.warmupBlocks;
        RANDOMNESS = randomness;
        COOLDOWN = p.cooldown;
        COMMIT_WINDOW = p.commitWindow;
        REVEAL_WINDOW = p.revealWindow;
        APPEAL_WINDOW = p.appealWindow;
        PANEL_BPS = p.panelBps;
        MAX_DRAW_DELAY = p.maxDrawDelay;
        STARVATION_TIMEOUT = p.starvationTimeout;
        MAX_REPLAY_SECONDS = p.maxReplaySeconds;
        PANEL_SIZE = p.panelSize;
        MAX_ROUNDS = p.maxRounds;
    }

    // --- auditors ------------------------------------------------------------------------------

    /// @notice Register as an auditor with at least AUDITOR_STAKE, taking a free registry slot. Eligible
    /// for rounds armed WARMUP_BLOCKS or more after this block.
    function register() external payable {
        if (_auditors[msg.sender].registeredBlock != 0) revert AlreadyRegistered(msg.sender);
        if (msg.value < AUDITOR_STAKE) revert StakeTooLow(AUDITOR_STAKE, msg.value);
        uint256 slot = _takeSlot();
        Auditor storage a = _auditors[msg.sender];
        a.registeredBlock = uint64(block.number);
        a.slot = uint16(slot + 1);
        _occupants[slot].push(_block(), uint160(msg.sender));
        auditorCount += 1;
        emit AuditorRegistered(msg.sender, msg.value, slot);
        _addStake(msg.sender, a, msg.value);
    }

    /// @notice Add to the caller's stake (it counts for rounds armed after this block).
    function topUp() external payable {
        Auditor storage a = _requireAuditor(msg.sender);
        emit StakeAdded(msg.sender, msg.value);
        _addStake(msg.sender, a, msg.value);
    }

    /// @notice Ask to exit: the caller is eligible for no round armed after this block, and its slot is
    /// free for a newcomer at once. `exit` after COOLDOWN, once its seats are settled.
    function requestExit() external {
        Auditor storage a = _requireAuditor(msg.sender);
        if (a.exitRequestedAt != 0) revert ExitAlreadyRequested(msg.sender);
        a.exitRequestedAt = _now();
        uint16 slot = a.slot - 1;
        a.slot = 0;
        _occupants[slot].push(_block(), 0);
        _freeSlots.push(slot);
        auditorCount -= 1;
        _pushStanding(msg.sender, a);
        emit AuditorExitRequested(msg.sender, _now() + COOLDOWN);
    }

    /// @notice Exit after the cooldown, once every seat of the caller is settled: its remaining stake
    /// is credited.
    function exit() external {
        Auditor storage a = _requireAuditor(msg.sender);
        if (a.exitRequestedAt == 0) revert ExitNotRequested(msg.sender);
        uint64 endsAt = a.exitRequestedAt + COOLDOWN;
        if (_now() < endsAt) revert CooldownNotOver(msg.sender, endsAt);
        // INVARIANT: a panelist answers for every seat it holds before its stake leaves.
        if (a.openSeats != 0) revert SeatsOpen(msg.sender, a.openSeats);
        uint256 stake = a.stake;
        totalStake -= stake;
        delete _auditors[msg.sender];
        delete _seatEnds[msg.sender];
        _standing[msg.sender].push(_block(), 0);
        emit AuditorExited(msg.sender, stake);
        _credit(msg.sender, 0, stake);
    }

    // --- disputes ------------------------------------------------------------------------------

    /// @inheritdoc IAdjudicator
    function openDispute(uint256 task, uint256 k, Reason reason) external returns (uint256 dispute) {
        if (msg.sender != address(TASKS)) revert NotTaskContract(msg.sender);
        dispute = ++disputeCount;
        Dispute storage d = _disputes[dispute];
        d.task = uint64(task); // an existing task of TASKS: ids are counted, never near 2^64
        d.reason = reason;
        d.roundStartedAt = _stamp();
        _arm(dispute, d);
        emit DisputeOpened(dispute, task, k, reason);
    }

    /// @notice Draw the current round's panel, TRIES_PER_CALL tries at a time (call again until the
    /// dispute is Voting): try t seats the occupant, as of the arm block, of slot
    /// `keccak256(abi.encode(seed, t)) % slots` if it was eligible then and is not seated yet. Allowed
    /// from the target's readiness (`panelTarget`) until MAX_DRAW_DELAY after the arm; past it, or once every try is
    /// made with too few seated, the round must be re-armed.
    /// @param dispute The dispute id.
    /// @return complete Whether the panel is now complete.
    function drawPanel(uint256 dispute) external returns (bool complete) {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.AwaitingPanel);
        uint64 target = panelTarget(dispute);
        // INVARIANT: the target's value was unknown to everyone when the round was armed.
        (bool ready, bytes32 value) = RANDOMNESS.valueOf(target);
        if (!ready) revert PanelNotReady(dispute, target);
        uint256 want = panelSizeOf(d.round);
        if (value == bytes32(0) || !_before(d.armedAt + MAX_DRAW_DELAY) || d.tries >= PanelDraw.TRIES_PER_SEAT * want) {
            revert DrawExpired(dispute);
        }
        (d.tries, d.seated) = _drawTries(dispute, d, PanelDraw.seed(value, dispute, d.round), want);
        if (d.seated == want) {
            _completePanel(dispute, d);
            return true;
        }
    }

    /// @notice Arm the current round anew at this block, when its draw cannot complete: past
    /// MAX_DRAW_DELAY, its target's value gone, or every try made with too few seated. Past
    /// STARVATION_TIMEOUT from the round's first arm, the dispute resolves instead, as if the round had
    /// ended undecided.
    /// @param dispute The dispute id.
    function rearm(uint256 dispute) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.AwaitingPanel);
        (bool ready, bytes32 value) = RANDOMNESS.valueOf(panelTarget(dispute));
        bool gone = ready && value == bytes32(0);
        bool triesSpent = d.tries >= PanelDraw.TRIES_PER_SEAT * panelSizeOf(d.round);
        if (!gone && !triesSpent && _before(d.armedAt + MAX_DRAW_DELAY)) revert CannotRearm(dispute);
        uint256 seated = _unseatDraw(dispute, d);
        _undrawnRounds[d.task] -= 1;
        if (!_before(d.roundStartedAt + STARVATION_TIMEOUT)) {
            emit RoundFailed(dispute, d.round);
            // Both contracts record the same outcome: a dispute whose task has ended is moot.
            if (TASKS.isMoot(dispute)) return _finish(dispute, d, Verdict.Moot, false);
            return _finish(dispute, d, d.decided == Verdict.None ? Verdict.NoDecision : d.decided, false);
        }
        _arm(dispute, d);
        emit PanelRearmed(dispute, d.round, block.number, seated);
    }

    /// @notice Commit a vote, as a panelist of the current round, within COMMIT_WINDOW of the panel's
    /// completion.
    /// @param dispute The dispute id.
    /// @param commitment keccak256(abi.encode(dispute, round, vote, salt, msg.sender)).
    function commitVote(uint256 dispute, bytes32 commitment) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Voting);
        Ballot storage b = _requirePanelist(dispute, d);
        if (_now() >= _commitEnd(d)) revert CommitWindowClosed(dispute, _commitEnd(d));
        if (b.commitment != bytes32(0)) revert AlreadyCommitted(dispute, msg.sender);
        b.commitment = commitment;
        emit VoteCommitted(dispute, d.round, msg.sender);
    }

    /// @notice Reveal a committed vote, after the commit window and within REVEAL_WINDOW of its end.
    /// @param dispute The dispute id.
    /// @param vote 1 = sound, 2 = faulty.
    /// @param salt The commitment's salt.
    function revealVote(uint256 dispute, uint8 vote, bytes32 salt) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Voting);
        Ballot storage b = _requirePanelist(dispute, d);
        uint64 opensAt = _commitEnd(d);
        uint64 closesAt = _revealEnd(d);
        if (_now() < opensAt || _now() >= closesAt) revert VoteRevealClosed(dispute, opensAt, closesAt);
        if (vote != uint8(Verdict.Valid) && vote != uint8(Verdict.Faulty)) revert InvalidVote(vote);
        if (b.commitment == bytes32(0) || b.vote != 0) revert NothingToReveal(dispute, msg.sender);
        if (keccak256(abi.encode(dispute, d.round, vote, salt, msg.sender)) != b.commitment) {
            revert VoteMismatch(dispute, msg.sender);
        }
        b.vote = vote;
        emit VoteRevealed(dispute, d.round, msg.sender, vote);
    }

    /// @notice End the current round after its reveal window, or let a decided round's outcome stand
    /// once its appeal window has passed unappealed. A strict majority of the seated panel decides a round;
    /// it may then be appealed (unless it was the last round, which ends the dispute). A round most of
    /// whose panel stayed silent is drawn again, within STARVATION_TIMEOUT of its first arm; another
    /// undecided round arms the next, larger one; after the last round the dispute ends with the last
    /// decided outcome, or with no decision (counted toward the interval's stall if most of that round's
    /// panel revealed). A moot dispute (its task ended) resolves at any time, without penalties, its appeal
    /// bonds refunded.
    /// @param dispute The dispute id.
    function resolve(uint256 dispute) external {
        Dispute storage d = _disputes[dispute];
        if (d.status == DisputeStatus.None || d.status == DisputeStatus.Resolved) {
            revert WrongDisputeStatus(dispute, d.status);
        }
        if (TASKS.isMoot(dispute)) {
            if (d.status == DisputeStatus.AwaitingPanel) _undrawnRounds[d.task] -= 1;
            return _finish(dispute, d, Verdict.Moot, false);
        }
        if (d.status == DisputeStatus.Appealable) {
            uint64 until = d.decidedAt + APPEAL_WINDOW;
            if (_before(until)) revert AppealWindowOpen(dispute, until);
            return _finish(dispute, d, d.decided, false);
        }
        if (d.status != DisputeStatus.Voting) revert WrongDisputeStatus(dispute, d.status);
        if (_now() < _revealEnd(d)) revert VotingNotOver(dispute, _revealEnd(d));
        (uint256 sound, uint256 faulty, uint256 panel, uint256 excusedSilent) = _count(dispute, d);
        // INVARIANT: a majority of the seated panel decides, not of the votes revealed: a silent
        // panelist cannot be outvoted into a decision by one loud one.
        if (sound * 2 > panel || faulty * 2 > panel) return _decide(dispute, d, sound > faulty);
        emit RoundFailed(dispute, d.round);
        // INVARIANT: a round most of whose seated panel stayed silent, or where an excused panelist stayed
        // silent, is drawn again (until STARVATION_TIMEOUT), in every round: otherwise a flood that keeps
        // honest panelists busy (their seats excused) leaves an appeal round undecided and a captured
        // earlier round standing, or lets a split of sybils beside an excused silence count toward a stall.
        bool silent = (sound + faulty) * 2 <= panel || excusedSilent != 0;
        if (silent && _before(d.roundStartedAt + STARVATION_TIMEOUT)) {
            _arm(dispute, d);
            emit PanelRearmed(dispute, d.round, block.number, 0);
            return;
        }
        if (d.round + 1 < MAX_ROUNDS) {
            d.round += 1;
            d.roundStartedAt = _stamp();
            return _arm(dispute, d);
        }
        // INVARIANT: an undecided appeal round leaves the last decided outcome standing.
        if (d.decided != Verdict.None) return _finish(dispute, d, d.decided, false);
        // INVARIANT: a no-decision counts toward the interval's stall only through a round most of whose
        // seated panel revealed.
        return _finish(dispute, d, Verdict.NoDecision, !silent);
    }

    /// @notice Appeal a decided round for the other outcome, within APPEAL_WINDOW of its decision, with
    /// exactly `challengerBond x 2^(round + 1)`: the next, larger round is armed. Anyone may appeal. The
    /// bond comes back if the final outcome is the one asked for; minus PANEL_BPS if every round after it
    /// was undecided; otherwise PANEL_BPS of it goes to the deciding round's majority and the rest is burned.
    /// @param dispute The dispute id.
    function appeal(uint256 dispute) external payable {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Appealable);
        uint64 until = d.decidedAt + APPEAL_WINDOW;
        if (!_before(until)) revert AppealWindowClosed(dispute, until);
        uint256 next = d.round + 1;
        uint256 bond = TASKS.challengerBondOf(dispute) << next;
        if (msg.value != bond) revert WrongBond(bond, msg.value);
        // INVARIANT: an appeal arms a round the registry can seat (the deployment keeps 2 x sum(P_r)).
        uint256 seats = panelSizeOf(next);
        if (auditorCount < seats) revert TooFewAuditors(seats, auditorCount);
        Verdict wanted = d.decided == Verdict.Valid ? Verdict.Faulty : Verdict.Valid;
        _appeals[dispute].push(Appeal({appellant: msg.sender, round: uint8(next), wanted: wanted, bond: bond}));
        heldAppealBonds += bond;
        emit Appealed(dispute, next, msg.sender, wanted, bond);
        d.round = uint8(next);
        d.roundStartedAt = _stamp();
        _arm(dispute, d);
    }

    // --- views ---------------------------------------------------------------------------------

    /// @inheritdoc IAdjudicator
    function taskContract() external view returns (address) {
        return address(TASKS);
    }

    /// @inheritdoc IAdjudicator
    function maxReplaySeconds() external view returns (uint64) {
        return MAX_REPLAY_SECONDS;
    }

    /// @inheritdoc IAdjudicator
    function mayChallenge(uint256 task, address account) external view returns (bool) {
        // An auditor who asked to exit after a round was armed is still eligible for it, so it is blocked
        // until it has exited (cooldown > maxDrawDelay), not only until it asks to.
        bool registered = _auditors[account].registeredBlock != 0;
        return !(registered && _undrawnRounds[task] != 0) && _seatsOnTask[task][account] == 0;
    }

    /// @notice Whether `dispute` is still undecided.
    /// @param dispute The dispute id.
    /// @return True while AwaitingPanel, Voting or Appealable.
    function isOpen(uint256 dispute) external view returns (bool) {
        DisputeStatus status = _disputes[dispute].status;
        return status != DisputeStatus.None && status != DisputeStatus.Resolved;
    }

    /// @notice The randomness target the current round's panel is drawn from.
    /// @param dispute The dispute id.
    /// @return The target (a block or a drand round), fixed when the round was (last) armed.
    function panelTarget(uint256 dispute) public view returns (uint64) {
        Dispute storage d = _disputes[dispute];
        return RANDOMNESS.targetOf(d.armBlock, d.armedAt);
    }

    /// @notice A dispute (status None: no such id).
    /// @param dispute The dispute id.
    /// @return The dispute.
    function getDispute(uint256 dispute) external view returns (Dispute memory) {
        return _disputes[dispute];
    }

    /// @notice The current round's panel, in draw order (while AwaitingPanel: those seated so far).
    /// @param dispute The dispute id.
    /// @return panel The panelists.
    function panelOf(uint256 dispute) external view returns (address[] memory panel) {
        address[] storage seats = _seats[dispute];
        uint256 start = _disputes[dispute].panelStart;
        panel = new address[](seats.length - start);
        for (uint256 i = 0; i < panel.length; ++i) {
            panel[i] = seats[start + i];
        }
    }

    /// @notice Every auditor ever seated on the dispute, all rounds, in draw order.
    /// @param dispute The dispute id.
    /// @return The seats.
    function seatsOf(uint256 dispute) external view returns (address[] memory) {
        return _seats[dispute];
    }

    /// @notice The dispute's appeals, in order.
    /// @param dispute The dispute id.
    /// @return The appeals.
    function appealsOf(uint256 dispute) external view returns (Appeal[] memory) {
        return _appeals[dispute];
    }

    /// @notice A panelist's ballot in `round` (all zero if it did not sit in that round).
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panelist The panelist.
    /// @return b The ballot.
    function ballotOf(uint256 dispute, uint256 round, address panelist) external view returns (Ballot memory b) {
        b = _ballots[dispute][panelist];
        if (!b.seated || b.round != round) delete b;
    }

    /// @notice An auditor's stake, slot and seats now (registeredBlock 0: not registered).
    /// @param auditor The auditor.
    /// @return The auditor.
    function getAuditor(address auditor) external view returns (Auditor memory) {
        return _auditors[auditor];
    }

    /// @notice Registry slots in use as of the end of block `blockNumber` (a past block).
    /// @param blockNumber The block.
    /// @return The slot count.
    function slotCountAt(uint256 blockNumber) external view returns (uint256) {
        return _slotCount.upperLookupRecent(uint48(blockNumber));
    }

    /// @notice Who held registry slot `slot` at the end of block `blockNumber` (zero: nobody).
    /// @param slot The slot.
    /// @param blockNumber The block.
    /// @return The occupant.
    function occupantAt(uint256 slot, uint256 blockNumber) external view returns (address) {
        return address(_occupants[slot].upperLookupRecent(uint48(blockNumber)));
    }

    /// @notice An auditor's standing at the end of block `blockNumber`.
    /// @param auditor The auditor.
    /// @param blockNumber The block.
    /// @return stake Its stake.
    /// @return registeredBlock Its registration block (0: not registered).
    /// @return exitRequested Whether it had asked to exit.
    function standingAt(
        address auditor,
        uint256 blockNumber
    ) external view returns (uint256 stake, uint256 registeredBlock, bool exitRequested) {
        return _unpack(_standing[auditor].upperLookupRecent(uint48(blockNumber)));
    }

    /// @notice Whether `auditor` is eligible for the dispute's current round (as of its arm block),
    /// ignoring whether it is seated already.
    /// @param dispute The dispute id.
    /// @param auditor The auditor.
    /// @return True if a try landing on it would seat it.
    function isEligible(uint256 dispute, address auditor) external view returns (bool) {
        Dispute storage d = _disputes[dispute];
        return _eligibleAsOf(d, auditor, uint48(d.armBlock - 1));
    }

    /// @notice Panel size of round r: `PANEL_SIZE * 2^r + 2^r - 1`.
    /// @param round The round.
    /// @return The size.
    function panelSizeOf(uint256 round) public view returns (uint256) {
        return PanelDraw.size(PANEL_SIZE, round);
    }

    // --- internal ------------------------------------------------------------------------------

    /// @dev The dispute, reverting unless it is in `status`.
    function _requireStatus(uint256 dispute, DisputeStatus status) internal view returns (Dispute storage d) {
        d = _disputes[dispute];
        if (d.status != status) revert WrongDisputeStatus(dispute, d.status);
    }

    /// @dev The registered auditor, reverting if `account` is not one.
    function _requireAuditor(address account) internal view returns (Auditor storage a) {
        a = _auditors[account];
        if (a.registeredBlock == 0) revert NotRegistered(account);
    }

    /// @dev The caller's ballot, reverting unless it sits on the current round's panel.
    function _requirePanelist(uint256 dispute, Dispute storage d) internal view returns (Ballot storage b) {
        b = _ballots[dispute][msg.sender];
        // INVARIANT: only the current panel votes (a round drawn again seats a fresh panel of the same
        // round number, so the seat's place in the list tells, not the round).
        if (!b.seated || b.index < d.panelStart) revert NotPanelist(dispute, msg.sender);
    }

    /// @dev Eligibility for a round armed at a, from the history as of a (protocol 4.2). Seats held on
    /// other disputes do not matter; a seat on this dispute (an earlier round) does, checked by the caller.
    function _eligibleAsOf(Dispute storage d, address candidate, uint48 asOf) internal view returns (bool) {
        (uint256 stake, uint256 registeredBlock, bool exitRequested) = _unpack(
            _standing[candidate].upperLookupRecent(asOf)
        );
        uint256 a = uint256(asOf) + 1;
        if (registeredBlock == 0 || registeredBlock + WARMUP_BLOCKS > a || exitRequested) return false;
        if (stake < AUDITOR_STAKE) return false;
        // INVARIANT: nobody judges a task it owns, provides, or challenged up to the round's arm block (the
        // first challenger committed before its reveal armed round 0).
        return !TASKS.isInterested(d.task, candidate, a);
    }

    /// @dev The draw's next TRIES_PER_CALL tries; returns the cursor and the seated count after them.
    function _drawTries(
        uint256 dispute,
        Dispute storage d,
        bytes32 seed,
        uint256 want
    ) internal returns (uint16, uint16) {
        // INVARIANT: the panel is a function of the history as of a (the state after block a - 1) and
        // the seed alone.
        uint48 asOf = uint48(d.armBlock - 1);
        uint256 slots = _slotCount.upperLookupRecent(asOf);
        uint256 maxTries = PanelDraw.TRIES_PER_SEAT * want;
        if (slots == 0) return (uint16(maxTries), 0);
        uint256 t = d.tries;
        uint256 seated = d.seated;
        uint256 stop = t + TRIES_PER_CALL < maxTries ? t + TRIES_PER_CALL : maxTries;
        for (; t < stop && seated < want; ++t) {
            address candidate = address(_occupants[PanelDraw.slotOf(seed, t, slots)].upperLookupRecent(asOf));
            if (_seatIfEligible(dispute, d, candidate, asOf)) ++seated;
        }
        return (uint16(t), uint16(seated));
    }

    /// @dev Seats `candidate` on the current round if it is someone, not seated on this dispute yet, and
    /// eligible as of the arm block.
    function _seatIfEligible(
        uint256 dispute,
        Dispute storage d,
        address candidate,
        uint48 asOf
    ) internal returns (bool) {
        if (candidate == address(0) || _ballots[dispute][candidate].seated) return false;
        if (!_eligibleAsOf(d, candidate, asOf)) return false;
        address[] storage seats = _seats[dispute];
        _ballots[dispute][candidate] = Ballot({
            seated: true,
            excused: false,
            round: d.round,
            vote: 0,
            index: uint16(seats.length),
            commitment: bytes32(0)
        });
        seats.push(candidate);
        return true;
    }

    /// @dev The current round decided: it is the last decided one; it may be appealed unless it is the
    /// last round, which ends the dispute.
    function _decide(uint256 dispute, Dispute storage d, bool sound) internal {
        Verdict outcome = sound ? Verdict.Valid : Verdict.Faulty;
        d.decided = outcome;
        d.decidedRound = d.round;
        d.decidedStart = d.panelStart;
        d.decidedEnd = uint16(_seats[dispute].length);
        if (d.round + 1 == MAX_ROUNDS) return _finish(dispute, d, outcome, false);
        d.status = DisputeStatus.Appealable;
        d.decidedAt = _stamp();
        emit RoundDecided(dispute, d.round, outcome, _now() + APPEAL_WINDOW);
    }

    /// @dev Arms the current round at this block.
    function _arm(uint256 dispute, Dispute storage d) internal {
        d.status = DisputeStatus.AwaitingPanel;
        d.armBlock = _block();
        d.armedAt = _stamp();
        d.drawnAt = 0;
        d.tries = 0;
        d.seated = 0;
        d.panelStart = uint16(_seats[dispute].length);
        _undrawnRounds[d.task] += 1;
    }

    /// @dev The panel is complete: it votes from now. Each panelist's seat counts toward its L
    /// overlapping seats, or is excused when L of its seats already overlap this one.
    function _completePanel(uint256 dispute, Dispute storage d) internal {
        d.drawnAt = _stamp();
        d.status = DisputeStatus.Voting;
        _undrawnRounds[d.task] -= 1;
        uint64 revealEnd = _revealEnd(d);
        address[] storage seats = _seats[dispute];
        address[] memory panel = new address[](seats.length - d.panelStart);
        for (uint256 i = 0; i < panel.length; ++i) {
            address panelist = seats[d.panelStart + i];
            panel[i] = panelist;
            _auditors[panelist].openSeats += 1;
            _seatsOnTask[d.task][panelist] += 1;
            if (!_countSeat(panelist, revealEnd)) _ballots[dispute][panelist].excused = true;
        }
        emit PanelDrawn(dispute, d.round, panel, _commitEnd(d), revealEnd);
    }

    /// @dev Records a seat ending at `end` among the auditor's L overlapping seats; false (excused) when
    /// L of them are still running.
    function _countSeat(address auditor, uint64 end) internal returns (bool) {
        uint64[MAX_OVERLAP] storage ends = _seatEnds[auditor];
        for (uint256 i = 0; i < OVERLAP; ++i) {
            if (ends[i] <= _now()) {
                ends[i] = end;
                return true;
            }
        }
        return false;
    }

    /// @dev Unseats an incomplete draw's panelists (a re-arm draws the round afresh); returns how many.
    function _unseatDraw(uint256 dispute, Dispute storage d) internal returns (uint256 count) {
        address[] storage seats = _seats[dispute];
        count = seats.length - d.panelStart;
        while (seats.length > d.panelStart) {
            delete _ballots[dispute][seats[seats.length - 1]];
            seats.pop();
        }
    }

    /// @dev The current round's revealed votes, its seated panel's size, and its excused panelists who stayed
    /// silent.
    function _count(
        uint256 dispute,
        Dispute storage d
    ) internal view returns (uint256 sound, uint256 faulty, uint256 panel, uint256 excusedSilent) {
        address[] storage seats = _seats[dispute];
        panel = seats.length - d.panelStart;
        for (uint256 i = d.panelStart; i < seats.length; ++i) {
            Ballot storage b = _ballots[dispute][seats[i]];
            if (b.vote == uint8(Verdict.Valid)) ++sound;
            else if (b.vote == uint8(Verdict.Faulty)) ++faulty;
            else if (b.excused) ++excusedSilent;
        }
    }

    /// @dev Ends the dispute: penalties against `verdict` over every round's seats (none when moot), seats
    /// released, then the task contract pays out (the last call: checks-effects-interactions; TASKS is
    /// fixed at construction and trusted). `counted`: a no-decision through a round most of whose panel
    /// revealed.
    function _finish(uint256 dispute, Dispute storage d, Verdict verdict, bool counted) internal {
        // Seats of a draw still in progress never held a vote: nothing to settle for them.
        uint256 voted = d.status == DisputeStatus.AwaitingPanel ? d.panelStart : _seats[dispute].length;
        d.status = DisputeStatus.Resolved;
        d.verdict = verdict;
        Settlement memory s;
        s.verdict = verdict;
        s.counted = counted;
        s.majority = _settleSeats(dispute, d, verdict, voted);
        if (verdict == Verdict.NoDecision) (s.charged, s.charges) = _roundCharges(dispute, voted);
        _settleAppeals(dispute, d, verdict, s.majority);
        emit DisputeResolved(dispute, d.task, verdict, d.round);
        TASKS.settleDispute(dispute, s);
    }

    /// @dev Round charges of a no-decision (protocol 4.2): round r charges the challengers PANEL_BPS x
    /// challengerBond x 2^r, split evenly (floored) among its panelists who revealed; a round where nobody
    /// revealed charges nothing. Seats are in round order, so the list is too.
    function _roundCharges(
        uint256 dispute,
        uint256 voted
    ) internal view returns (address[] memory charged, uint256[] memory charges) {
        address[] storage seats = _seats[dispute];
        uint256[MAX_ROUNDS_LIMIT] memory revealed;
        uint256 n = 0;
        for (uint256 i = 0; i < voted; ++i) {
            Ballot storage b = _ballots[dispute][seats[i]];
            if (b.vote != 0) {
                revealed[b.round] += 1;
                ++n;
            }
        }
        charged = new address[](n);
        charges = new uint256[](n);
        uint256 bond = TASKS.challengerBondOf(dispute);
        uint256 c = 0;
        for (uint256 i = 0; i < voted; ++i) {
            Ballot storage b = _ballots[dispute][seats[i]];
            if (b.vote == 0) continue;
            charged[c] = seats[i];
            charges[c++] = ((bond << b.round) * PANEL_BPS) / 10_000 / revealed[b.round];
        }
    }

    /// @dev Penalties of protocol 4.2, settled against the final outcome: every panelist of every round
    /// who voted otherwise, or did not reveal (unless excused), loses PENALTY (at most its stake) to those
    /// who voted for it (burned if none). Returns the deciding round's panelists who voted for it.
    function _settleSeats(
        uint256 dispute,
        Dispute storage d,
        Verdict verdict,
        uint256 n
    ) internal returns (address[] memory majority) {
        address[] memory winners = new address[](n);
        majority = new address[](n);
        uint256 w = 0;
        uint256 m = 0;
        uint256 pot = 0;
        for (uint256 i = 0; i < n; ++i) {
            address panelist = _seats[dispute][i];
            (bool won, uint256 taken) = _settleSeat(dispute, d.task, panelist, verdict);
            pot += taken;
            if (!won) continue;
            winners[w++] = panelist;
            if (i >= d.decidedStart && i < d.decidedEnd) majority[m++] = panelist;
        }
        assembly ("memory-safe") {
            mstore(winners, w)
            mstore(majority, m)
        }
        uint256 each = w == 0 ? 0 : pot / w;
        for (uint256 i = 0; i < w; ++i) {
            _credit(winners[i], dispute, each);
        }
        _burn(dispute, pot - each * w);
    }

    /// @dev Releases one seat and settles it against `verdict`: whether it voted for it, and the penalty
    /// taken (a vote against a decided outcome; a missing reveal, unless excused; nothing when moot).
    function _settleSeat(
        uint256 dispute,
        uint256 task,
        address panelist,
        Verdict verdict
    ) internal returns (bool won, uint256 taken) {
        Auditor storage a = _auditors[panelist];
        a.openSeats -= 1;
        _seatsOnTask[task][panelist] -= 1;
        if (verdict == Verdict.Moot) return (false, 0);
        Ballot storage b = _ballots[dispute][panelist];
        bool decided = verdict == Verdict.Valid || verdict == Verdict.Faulty;
        if (decided && b.vote == uint8(verdict)) return (true, 0);
        if (b.vote != 0 ? decided : !b.excused) taken = _penalize(dispute, panelist, a);
    }

    /// @dev Appeal bonds, settled against the final outcome: refunded when it is the one asked for (or the
    /// dispute is moot); minus PANEL_BPS when every round after the appeal was undecided; otherwise
    /// PANEL_BPS to the deciding round's majority and the rest burned.
    function _settleAppeals(uint256 dispute, Dispute storage d, Verdict verdict, address[] memory majority) internal {
        Appeal[] storage appeals = _appeals[dispute];
        for (uint256 i = 0; i < appeals.length; ++i) {
            Appeal storage a = appeals[i];
            heldAppealBonds -= a.bond;
            uint256 refund = a.bond;
            if (verdict != Verdict.Moot && verdict != a.wanted) {
                uint256 toPanel = (a.bond * PANEL_BPS) / 10_000;
                refund = d.decidedRound < a.round ? a.bond - toPanel : 0;
                uint256 each = majority.length == 0 ? 0 : toPanel / majority.length;
                for (uint256 j = 0; j < majority.length; ++j) {
                    _credit(majority[j], dispute, each);
                }
                _burn(dispute, a.bond - refund - each * majority.length);
            }
            emit AppealSettled(dispute, a.appellant, refund);
            _credit(a.appellant, dispute, refund);
        }
    }

    /// @dev Takes PENALTY (at most what is left) from the panelist's stake; returns what was taken.
    function _penalize(uint256 dispute, address panelist, Auditor storage a) internal returns (uint256 taken) {
        taken = a.stake < PENALTY ? a.stake : PENALTY;
        if (taken == 0) return 0;
        a.stake -= taken;
        totalStake -= taken;
        _pushStanding(panelist, a);
        emit Penalized(dispute, panelist, taken);
    }

    /// @dev A registry slot for a newcomer: a freed one if any, else a new one.
    function _takeSlot() internal returns (uint256 slot) {
        if (_freeSlots.length != 0) {
            slot = _freeSlots[_freeSlots.length - 1];
            _freeSlots.pop();
            return slot;
        }
        slot = _slotCount.latest();
        if (slot == MAX_AUDITORS) revert RegistryFull(MAX_AUDITORS);
        _slotCount.push(_block(), uint208(slot + 1));
    }

    /// @dev Adds `amount` to the auditor's stake and records its standing.
    function _addStake(address auditor, Auditor storage a, uint256 amount) internal {
        uint256 stake = a.stake + amount;
        if (stake >= 1 << _STAKE_BITS) revert StakeTooLarge(stake);
        a.stake = stake;
        totalStake += amount;
        _pushStanding(auditor, a);
    }

    /// @dev Checkpoints the auditor's standing at this block.
    function _pushStanding(address auditor, Auditor storage a) internal {
        uint256 packed = a.stake | (uint256(a.registeredBlock) << _STAKE_BITS);
        if (a.exitRequestedAt != 0) packed |= 1 << _EXIT_BIT;
        _standing[auditor].push(_block(), uint208(packed));
    }

    /// @dev Unpacks a standing checkpoint.
    function _unpack(uint208 packed) internal pure returns (uint256 stake, uint256 registeredBlock, bool exitRequested) {
        stake = uint256(packed) & ((1 << _STAKE_BITS) - 1);
        registeredBlock = uint256(uint48(packed >> _STAKE_BITS));
        exitRequested = (packed >> _EXIT_BIT) & 1 == 1;
    }

    /// @dev End of the current round's commit window.
    function _commitEnd(Dispute storage d) internal view returns (uint64) {
        return d.drawnAt + COMMIT_WINDOW;
    }

    /// @dev End of the current round's reveal window.
    function _revealEnd(Dispute storage d) internal view returns (uint64) {
        return d.drawnAt + COMMIT_WINDOW + REVEAL_WINDOW;
    }

    /// @dev The current block number as a checkpoint key.
    function _block() internal view returns (uint48) {
        return uint48(block.number);
    }

    /// @dev The current time, as every window is compared.
    function _now() internal view returns (uint64) {
        return uint64(block.timestamp);
    }

    /// @dev The current time as a dispute stores it (40 bits: until the year 36812).
    function _stamp() internal view returns (uint40) {
        return uint40(block.timestamp);
    }

    /// @dev Windows are half-open: an action "within" a window that ends at `end` is allowed while this
    /// holds.
    function _before(uint64 end) internal view returns (bool) {
        return _now() < end;
    }
}
