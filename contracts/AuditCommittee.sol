// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Checkpoints} from "@openzeppelin/contracts/utils/structs/Checkpoints.sol";

import {IAdjudicator} from "./interfaces/IAdjudicator.sol";
import {IDisputedTasks} from "./interfaces/IDisputedTasks.sol";
import {IRandomness} from "./interfaces/IRandomness.sol";
import {PanelDraw} from "./libraries/PanelDraw.sol";
import {PullPayments} from "./utils/PullPayments.sol";
import {Appeal, Auditor, Ballot, Dispute, DisputeStatus, Run, Settlement, Verdict, Vote} from "./Types.sol";
import {
    AppealWindowClosed,
    AppealWindowOpen,
    AlreadyRegistered,
    CannotRearm,
    CommitWindowClosed,
    CooldownNotOver,
    DrawExpired,
    ExitAlreadyRequested,
    ExitNotRequested,
    InterestedPanelist,
    InvalidParameter,
    InvalidVote,
    NotPanelist,
    NotRegistered,
    NotTaskContract,
    NothingToReveal,
    PanelNotReady,
    RegistryFull,
    SeatsAlreadySettled,
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
    // Lost per seat for a ballot against a dispute's final outcome, or for silence (unless excused).
    uint256 penalty;
    // L: overlapping seats an auditor must be able to answer for. Eligibility needs a stake of L x penalty;
    // registering takes (L + 2) x penalty, so a penalty or two leave an auditor eligible while it tops up.
    uint8 overlap;
    // Blocks an auditor must have been registered before a round's arm block to be eligible for it.
    uint64 warmupBlocks;
    // Seconds between requestExit and exit; longer than maxDrawDelay, so nobody eligible for an armed
    // round leaves before it is drawn.
    uint64 cooldown;
    // Seconds from a panel's completion in which panelists commit their ballots: >= L x maxReplaySeconds.
    uint64 commitWindow;
    // Seconds after the commit window in which panelists reveal.
    uint64 revealWindow;
    // Seconds after a decided round in which anyone may appeal for the other outcome.
    uint64 appealWindow;
    // Seconds from a round's arm in which its panel must be drawn; past it, anyone re-arms.
    uint64 maxDrawDelay;
    // Seconds from a round's first arm after which a round that still cannot seat its panel, or keeps
    // staying silent, ends the dispute with a no-decision.
    uint64 starvationTimeout;
    // Longest replay a task may declare (TrainingTasks refuses tasks above it).
    uint64 maxReplaySeconds;
    // Panel size of round 0: odd, >= 3.
    uint16 panelSize;
    // Rounds: 1 .. 8.
    uint8 maxRounds;
    // Share of a losing appeal's bond paid to the deciding round's majority (burned after a no-decision), in bps.
    uint16 panelBps;
    // Wei a panelist's replay is worth per second of declared replay time: a task's provider bond must pay
    // round 0's replays from its panel share (replayCost).
    uint256 replayPrice;
}

/// @title AuditCommittee
/// @notice A staked committee of auditors that decides disputes of TrainingTasks (protocol 4.2, v3).
/// A round is armed at a block a; its panel is a function of the committee's history as of a (slot
/// occupants, registrations, exit requests and stakes, kept as OpenZeppelin checkpoints) and of the
/// value of the randomness target named when it was armed alone, so nothing done after a (exits,
/// registrations, other disputes) steers it. Seats held elsewhere do not matter for eligibility.
/// Ballots are three-way: sound, faulty or unavailable. A round is SOUND or FAULTY on a strict majority of
/// its seated panel for that ballot, UNAVAILABLE when faulty and unavailable ballots together are a strict
/// majority, and undecided otherwise. Only the last round ends a task on availability: an UNAVAILABLE round
/// before it arms the next at no bond. A decided round stands when its appeal window passes; an appealed
/// one stands only if a later round confirms it. A silent undecided round is drawn again (at most
/// MAX_RERUNS times, its ballots void); a round that cannot seat or stays silent, or a last round that stays
/// undecided, ends the dispute with a no-decision, which reopens the interval's window and never ends the task:
/// a flood buys delay, never a verdict or a stall. After a no-decision only a run that decided SOUND charges the
/// joined bonds (for its panel): an undecided run is one its silent or abstaining seats could have decided, so
/// it proves nothing against the challenge, and one that backed the challenge charges it nothing.
/// Penalties, settled against the final outcome a page of seats at a time (settleSeats), and burned:
/// SOUND penalises faulty ballots, FAULTY penalises sound ones, UNAVAILABLE and no decision penalise none; an
/// unavailable ballot never loses; silence loses unless the seat was excused (beyond L overlapping seats) or
/// its auditor became interested in the task. So an auditor that runs the node honestly and stays online loses
/// stake only to a captured round that stood, or to its own replay judging a sound interval faulty.
/// @dev States of a dispute: AwaitingPanel -(drawPanel, one or more calls)-> Voting -(resolve)->
/// Appealable, AwaitingPanel (a re-run, the next round) or Resolved; Appealable -(appeal)-> AwaitingPanel,
/// -(resolve after the window)-> Resolved; AwaitingPanel -(rearm)-> AwaitingPanel until
/// starvationTimeout, then Resolved. A moot dispute (its task ended) resolves at any time, without
/// penalties. Resolved -(settleSeats, pages)-> its seats settled. Clocks: the randomness target in the
/// backend's units (blocks or drand rounds), every window in seconds. Money invariant (protocol 4.3):
/// balance == totalStake + heldAppealBonds + heldForSeats + credits + burned.
contract AuditCommittee is IAdjudicator, PullPayments {
    using Checkpoints for Checkpoints.Trace160;
    using Checkpoints for Checkpoints.Trace208;

    /// @notice Registry slots: occupants are looked up by slot, so the registry bounds nothing but size.
    uint256 internal constant MAX_AUDITORS = 256;
    /// @notice Most rounds a committee may be configured with.
    uint256 internal constant MAX_ROUNDS_LIMIT = 8;
    /// @notice Largest L: the overlap bookkeeping keeps this many seat ends per auditor.
    uint256 internal constant MAX_OVERLAP = 8;
    /// @notice Smallest first-round panel.
    uint256 internal constant MIN_PANEL = 3;
    /// @notice Draw tries per drawPanel call: a round of 15 seats (240 tries) takes four calls.
    uint256 internal constant TRIES_PER_CALL = 64;
    /// @notice Times a round that stayed silent and undecided is drawn again before the dispute ends
    /// with a no-decision.
    uint256 public constant MAX_RERUNS = 2;
    /// @notice Seats one settleSeats call settles: no call grows with the panel.
    uint256 public constant SEATS_PER_CALL = 32;
    /// @notice Penalties of headroom in the registration stake above eligibility: (L + 2) x penalty.
    uint256 internal constant STAKE_HEADROOM = 2;

    // Bit layout of a standing checkpoint: stake (bits 0-127), registration block (128-175), exit
    // requested (176).
    uint256 private constant _STAKE_BITS = 128;
    uint256 private constant _EXIT_BIT = 176;
    uint256 private constant _BPS = 10_000;

    /// @notice The task contract whose disputes this committee decides.
    IDisputedTasks internal immutable TASKS;
    /// @notice Lost per seat for a ballot against the final outcome, or for silence (unless excused).
    uint256 public immutable PENALTY;
    /// @notice L: overlapping seats an auditor answers for.
    uint256 public immutable OVERLAP;
    /// @notice Stake to register, and the level a node tops up to: (L + 2) x PENALTY.
    uint256 public immutable AUDITOR_STAKE;
    /// @notice Stake an auditor must hold, as of a round's arm block, to be eligible for it: L x PENALTY.
    uint256 public immutable ELIGIBLE_STAKE;
    /// @notice Blocks of registration needed before a round's arm block to be eligible for it.
    uint256 public immutable WARMUP_BLOCKS;
    /// @notice The randomness backend: a round armed in block a at time t draws its panel from the value
    /// of `RANDOMNESS.targetOf(a, t)`.
    IRandomness public immutable RANDOMNESS;
    /// @notice Seconds between requestExit and exit.
    uint64 public immutable COOLDOWN;
    /// @notice Seconds to commit a ballot, from the panel's completion.
    uint64 public immutable COMMIT_WINDOW;
    /// @notice Seconds to reveal a ballot, after the commit window.
    uint64 public immutable REVEAL_WINDOW;
    /// @notice Seconds after a decided round in which anyone may appeal it.
    uint64 public immutable APPEAL_WINDOW;
    /// @notice Seconds from a round's arm in which its panel must be drawn.
    uint64 public immutable MAX_DRAW_DELAY;
    /// @notice Seconds from a round's first arm after which a round that cannot seat, or stays silent,
    /// ends the dispute.
    uint64 public immutable STARVATION_TIMEOUT;
    /// @notice Longest replay a task may declare.
    uint64 internal immutable MAX_REPLAY_SECONDS;
    /// @notice Panel size of round 0.
    uint256 public immutable PANEL_SIZE;
    /// @notice Rounds a dispute may take.
    uint256 public immutable MAX_ROUNDS;
    /// @notice Share of a losing or stalled appeal's bond paid to the deciding round's majority, in bps.
    uint256 public immutable PANEL_BPS;
    /// @notice Wei per second of declared replay time a panelist's replay is worth.
    uint256 public immutable REPLAY_PRICE;

    /// @notice Sum of every auditor's stake, exiting ones too (for the balance invariant).
    uint256 public totalStake;
    /// @notice Auditors holding a registry slot now.
    uint256 public auditorCount;
    /// @notice Appeal bonds of disputes not resolved yet (for the balance invariant).
    uint256 public heldAppealBonds;
    /// @notice Wei of resolved disputes not paid to their seats yet: the panel's money and lost appeals' panel
    /// parts (for the balance invariant).
    uint256 public heldForSeats;

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
    // Every seat of the dispute in draw order, all runs (settleSeats pages over it).
    mapping(uint256 dispute => address[]) private _seats;
    mapping(uint256 dispute => mapping(uint256 seat => Ballot)) private _ballots;
    // Each auditor's latest seat on the dispute + 1 (0: none).
    mapping(uint256 dispute => mapping(address auditor => uint16)) private _seatOf;
    mapping(uint256 dispute => mapping(uint256 run => Run)) private _runs;
    mapping(uint256 dispute => Appeal[]) private _appeals;
    // What each of a resolved dispute's deciding run's panelists who backed the outcome is owed of the panel's
    // money.
    mapping(uint256 dispute => uint256) private _panelEach;

    /// @notice The panel of run `run` (round `round`) is complete; ballots are committed until `commitEnd`,
    /// revealed until `revealEnd`.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param run The run (0-based over the dispute; a round drawn again takes a new run).
    /// @param panel The panelists, in draw order.
    /// @param commitEnd When the commit window closes.
    /// @param revealEnd When the reveal window closes.
    event PanelDrawn(
        uint256 indexed dispute,
        uint256 round,
        uint256 run,
        address[] panel,
        uint64 commitEnd,
        uint64 revealEnd
    );

    /// @notice The round was armed anew at `armBlock`: its draw expired, its target's value was gone,
    /// its tries seated too few, or its run ended undecided and silent (voided, `seated` 0).
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param armBlock The new arm block (`panelTarget` names the new target).
    /// @param seated Auditors the abandoned draw had seated.
    event PanelRearmed(uint256 indexed dispute, uint256 round, uint256 armBlock, uint256 seated);

    /// @notice A panelist committed its ballot.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panelist The panelist.
    event VoteCommitted(uint256 indexed dispute, uint256 round, address indexed panelist);

    /// @notice A panelist revealed its ballot.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panelist The panelist.
    /// @param vote 1 sound, 2 faulty, 3 unavailable.
    event VoteRevealed(uint256 indexed dispute, uint256 round, address indexed panelist, uint8 vote);

    /// @notice A round was decided by a strict majority of its seated panel. Valid or Faulty: anyone may
    /// appeal it for the other outcome until `appealUntil`. Unavailable (`appealUntil` 0): the next, larger
    /// round is armed at no bond.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param outcome Valid, Faulty or Unavailable.
    /// @param appealUntil When its appeal window closes (0: not appealable).
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

    /// @notice A round's run ended without a strict majority of its seated panel.
    /// @param dispute The dispute id.
    /// @param round The undecided round.
    event RoundFailed(uint256 indexed dispute, uint256 round);

    /// @notice A panelist lost `amount` of its stake (burned) when its seat on `dispute` was settled.
    /// @param dispute The dispute id.
    /// @param panelist The panelist.
    /// @param amount The penalty (capped at what its stake held).
    event Penalized(uint256 indexed dispute, address indexed panelist, uint256 amount);

    /// @notice The dispute ended and the task contract paid it out; its seats are settled by settleSeats.
    /// @param dispute The dispute id.
    /// @param task The task id.
    /// @param verdict Valid, Faulty, Unavailable, NoDecision or Moot.
    /// @param round The last round.
    event DisputeResolved(uint256 indexed dispute, uint256 indexed task, Verdict verdict, uint256 round);

    /// @notice Every seat of the dispute is settled: penalties taken, shares credited, seats released.
    /// @param dispute The dispute id.
    event SeatsSettled(uint256 indexed dispute);

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
        if (p.panelBps > _BPS) revert InvalidParameter("panelBps", p.panelBps);
        if (p.maxDrawDelay == 0) revert InvalidParameter("maxDrawDelay", p.maxDrawDelay);
        // INVARIANT: an auditor eligible for an armed round is still there when it is drawn.
        if (p.cooldown <= p.maxDrawDelay) revert InvalidParameter("cooldown", p.cooldown);
        if (p.starvationTimeout < p.maxDrawDelay) revert InvalidParameter("starvationTimeout", p.starvationTimeout);
        TASKS = tasks;
        PENALTY = p.penalty;
        OVERLAP = p.overlap;
        AUDITOR_STAKE = p.penalty * (p.overlap + STAKE_HEADROOM);
        ELIGIBLE_STAKE = p.penalty * p.overlap;
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
        REPLAY_PRICE = p.replayPrice;
    }

    /// @notice Takes the panel's money from the task contract (its `withdraw`), and nothing from anyone else.
    receive() external payable {
        if (msg.sender != address(TASKS)) revert NotTaskContract(msg.sender);
    }

    // --- auditors ------------------------------------------------------------------------------

    /// @notice Register as an auditor with at least AUDITOR_STAKE ((L + 2) x PENALTY), taking a free registry
    /// slot. Eligible for rounds armed WARMUP_BLOCKS or more after this block while its stake is at least
    /// ELIGIBLE_STAKE.
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

    /// @notice Draw the current run's panel, TRIES_PER_CALL tries at a time (call again until the dispute
    /// is Voting): try t seats the occupant, as of the arm block, of slot `keccak256(abi.encode(seed, t)) %
    /// slots` if it was eligible then and has no seat in a run of the dispute that was not voided. Allowed from the
    /// target's readiness (`panelTarget`) until MAX_DRAW_DELAY after the arm; past it, or once every try is
    /// made with too few seated, the round must be re-armed.
    /// @param dispute The dispute id.
    /// @return complete Whether the panel is now complete.
    function drawPanel(uint256 dispute) external returns (bool complete) {
        Dispute storage d = _take(dispute, DisputeStatus.AwaitingPanel);
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
            _completePanel(dispute, d, want);
            return true;
        }
    }

    /// @notice Arm the current round anew at this block, when its draw cannot complete: past
    /// MAX_DRAW_DELAY, its target's value gone, or every try made with too few seated. Past
    /// STARVATION_TIMEOUT from the round's first arm, the dispute ends instead with a
    /// no-decision (an appealed outcome stands only if a later round confirms it).
    /// @param dispute The dispute id.
    function rearm(uint256 dispute) external {
        Dispute storage d = _take(dispute, DisputeStatus.AwaitingPanel);
        (bool ready, bytes32 value) = RANDOMNESS.valueOf(panelTarget(dispute));
        bool gone = ready && value == bytes32(0);
        bool triesSpent = d.tries >= PanelDraw.TRIES_PER_SEAT * panelSizeOf(d.round);
        if (!gone && !triesSpent && _before(d.armedAt + MAX_DRAW_DELAY)) revert CannotRearm(dispute);
        uint256 seated = _unseatDraw(dispute, d);
        if (!_before(d.roundStartedAt + STARVATION_TIMEOUT)) {
            emit RoundFailed(dispute, d.round);
            // INVARIANT (v3): a round that cannot seat ends the dispute with a no-decision: a flood that
            // empties the pool buys delay, never a verdict. (Not an UNAVAILABLE outcome standing when the round
            // it armed cannot seat: sybils that captured it and then exit would leave that round unseatable
            // and slash an honest provider.) Both contracts record the same moot outcome.
            return _finish(dispute, d, TASKS.isMoot(dispute) ? Verdict.Moot : Verdict.NoDecision);
        }
        _arm(d);
        emit PanelRearmed(dispute, d.round, block.number, seated);
    }

    /// @notice Commit a ballot, as a panelist of the current run, within COMMIT_WINDOW of the panel's
    /// completion; a later commit within the window replaces it (a node commits an abstention at once and
    /// replaces it with its verdict, so filling the blocks near the deadline silences nobody).
    /// @param dispute The dispute id.
    /// @param commitment keccak256(abi.encode(dispute, run, vote, salt, msg.sender)).
    function commitVote(uint256 dispute, bytes32 commitment) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Voting);
        Ballot storage b = _requirePanelist(dispute, d);
        if (_now() >= _commitEnd(d)) revert CommitWindowClosed(dispute, _commitEnd(d));
        // INVARIANT: nobody decides a task it has a stake in: a panelist that challenged it, or asked for an
        // opening of it, since it was drawn commits no ballot (its silent seat is neither paid nor penalised).
        // One that committed before it became interested reveals what it committed, which counts: interest
        // taken after the reveals are public must not buy a sybil's losing ballot out of its penalty (review 12).
        if (TASKS.isInterested(d.task, msg.sender, block.number)) revert InterestedPanelist(dispute, msg.sender);
        b.commitment = commitment;
        emit VoteCommitted(dispute, d.round, msg.sender);
    }

    /// @notice Reveal a committed ballot, after the commit window and within REVEAL_WINDOW of its end (a
    /// panelist who has become interested in the task since it committed reveals too: its ballot counts).
    /// @param dispute The dispute id.
    /// @param vote 1 = sound, 2 = faulty, 3 = unavailable, 4 = abstain (no verdict in time).
    /// @param salt The commitment's salt.
    function revealVote(uint256 dispute, uint8 vote, bytes32 salt) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Voting);
        Ballot storage b = _requirePanelist(dispute, d);
        uint64 opensAt = _commitEnd(d);
        uint64 closesAt = _revealEnd(d);
        if (_now() < opensAt || _now() >= closesAt) revert VoteRevealClosed(dispute, opensAt, closesAt);
        if (vote == uint8(Vote.None) || vote > uint8(Vote.Abstain)) revert InvalidVote(vote);
        if (b.commitment == bytes32(0) || b.vote != 0) revert NothingToReveal(dispute, msg.sender);
        if (keccak256(abi.encode(dispute, d.run, vote, salt, msg.sender)) != b.commitment) {
            revert VoteMismatch(dispute, msg.sender);
        }
        b.vote = vote;
        emit VoteRevealed(dispute, d.round, msg.sender, vote);
        // INVARIANT: an abstention counts for no outcome and toward no quorum, as silence does (a run mostly
        // abstaining is drawn again); unlike silence it is never penalised: a replay no node can finish in a
        // commit window costs honest auditors nothing, and cannot end a task.
        if (vote == uint8(Vote.Abstain)) return;
        Run storage r = _runs[dispute][d.run];
        if (vote == uint8(Vote.Sound)) r.sound += 1;
        else if (vote == uint8(Vote.Faulty)) r.faulty += 1;
        else r.unavailable += 1;
        if (b.excused) r.excusedRevealed += 1;
    }

    /// @notice End the current run after its reveal window, or let a decided round's outcome stand once its
    /// appeal window has passed unappealed. A strict majority of the seated panel decides: SOUND, FAULTY, or
    /// UNAVAILABLE (faulty and unavailable ballots together). A sound or faulty round may be appealed
    /// unless it is the last, which ends the dispute; an unavailable one before the last arms the next
    /// round at no bond. An undecided run most of whose panel stayed silent, or with an excused panelist
    /// silent, is voided and the round drawn again (at most MAX_RERUNS times, within STARVATION_TIMEOUT),
    /// else the dispute ends with a no-decision; another undecided run arms the next, larger round, and after
    /// the last round the dispute ends with a no-decision too. A moot dispute (its
    /// task ended) resolves at any time, without penalties, its appeal bonds refunded.
    /// @param dispute The dispute id.
    function resolve(uint256 dispute) external {
        Dispute storage d = _take(dispute, DisputeStatus.None);
        if (d.status == DisputeStatus.Resolved) revert WrongDisputeStatus(dispute, d.status);
        if (TASKS.isMoot(dispute)) {
            if (d.status == DisputeStatus.AwaitingPanel) _unseatDraw(dispute, d);
            return _finish(dispute, d, Verdict.Moot);
        }
        if (d.status == DisputeStatus.Appealable) {
            uint64 until = d.decidedAt + APPEAL_WINDOW;
            if (_before(until)) revert AppealWindowOpen(dispute, until);
            return _finish(dispute, d, d.decided);
        }
        if (d.status != DisputeStatus.Voting) revert WrongDisputeStatus(dispute, d.status);
        if (_now() < _revealEnd(d)) revert VotingNotOver(dispute, _revealEnd(d));
        Run storage r = _runs[dispute][d.run];
        r.endBlock = uint40(block.number);
        // INVARIANT: a majority of the seated panel decides, not of the ballots revealed: a silent
        // panelist cannot be outvoted into a decision by one loud one.
        Verdict outcome = _outcome(r);
        if (outcome != Verdict.None) return _decide(dispute, d, outcome);
        emit RoundFailed(dispute, d.round);
        // INVARIANT: a run most of whose seated panel stayed silent, or where an excused panelist stayed
        // silent, judged nothing: it is drawn again with a fresh seed, its ballots void, from the whole pool.
        // A flood that keeps honest panelists busy (their seats excused) can repeat that only MAX_RERUNS times
        // and then ends the dispute with a no-decision: it buys delay, never a verdict or a stall.
        bool silent = _revealed(r) * 2 <= r.size || r.excusedRevealed < r.excused;
        if (silent) {
            if (d.reruns < MAX_RERUNS && _before(d.roundStartedAt + STARVATION_TIMEOUT)) {
                r.voided = true;
                d.reruns += 1;
                d.run += 1;
                _arm(d);
                emit PanelRearmed(dispute, d.round, block.number, 0);
                return;
            }
            // The last silent run judged nothing either: void, it charges no bond (a lone revealer among
            // abstainers would otherwise take its round's charge from the watcher).
            r.voided = true;
            return _finish(dispute, d, Verdict.NoDecision);
        }
        if (d.round + 1 < MAX_ROUNDS) return _nextRound(d);
        // INVARIANT (v3): an undecided run proves nothing, however many revealed: with an odd panel and three
        // ballots every undecided run has a silent or abstaining seat that could have decided it, and a sybil
        // minority can force that (keeping honest auditors busy until they abstain). So its no-decision
        // charges the watcher nothing and never ends the task: the interval's window reopens.
        return _finish(dispute, d, Verdict.NoDecision);
    }

    /// @notice Appeal a decided round for the other outcome, within APPEAL_WINDOW of its decision, with
    /// exactly `MIN_CHALLENGER_BOND x 2^(round + 1)` (the task contract's smallest challenger bond): the next,
    /// larger round is armed, and the appealed outcome stands only if a later round confirms it. Anyone may
    /// appeal. The bond comes back if the final outcome is the one asked for (a slash on availability counts as
    /// faulty); minus PANEL_BPS (burned) after a no-decision or an appeal for sound that ended UNAVAILABLE;
    /// otherwise PANEL_BPS of it goes to the deciding round's majority and the rest is burned.
    /// @param dispute The dispute id.
    function appeal(uint256 dispute) external payable {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Appealable);
        uint64 until = d.decidedAt + APPEAL_WINDOW;
        if (!_before(until)) revert AppealWindowClosed(dispute, until);
        uint256 next = d.round + 1;
        // INVARIANT: the price of an appeal is the deployment's, not the task's: an owner who sets a huge
        // challenger bond must not price honest appeals out of reach and keep a captured round (review 12, F2).
        uint256 bond = TASKS.MIN_CHALLENGER_BOND() << next;
        if (msg.value != bond) revert WrongBond(bond, msg.value);
        // INVARIANT: an appeal arms a round the registry can seat (the deployment keeps 2 x sum(P_r)).
        uint256 seats = panelSizeOf(next);
        if (auditorCount < seats) revert TooFewAuditors(seats, auditorCount);
        Verdict wanted = d.decided == Verdict.Valid ? Verdict.Faulty : Verdict.Valid;
        _appeals[dispute].push(Appeal({appellant: msg.sender, round: uint8(next), wanted: wanted, bond: bond}));
        heldAppealBonds += bond;
        emit Appealed(dispute, next, msg.sender, wanted, bond);
        _nextRound(d);
    }

    /// @notice Settle up to SEATS_PER_CALL seats of a resolved dispute, in seat order (call again until
    /// SeatsSettled). Anyone may call it. Each seat is released; it loses PENALTY (burned) for a ballot
    /// against the outcome (faulty when it is sound, sound when it is faulty) or for silence on a seat neither
    /// excused nor interested in the task; the deciding run's panelists who backed the outcome are credited
    /// their share of the panel's money, and after a no-decision each panelist who revealed in a run that
    /// decided SOUND its round's charge.
    /// @param dispute The dispute id.
    function settleSeats(uint256 dispute) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Resolved);
        if (d.seatsSettled) revert SeatsAlreadySettled(dispute);
        uint256 n = _seats[dispute].length;
        uint256 stop = d.settledSeats + SEATS_PER_CALL < n ? d.settledSeats + SEATS_PER_CALL : n;
        for (uint256 i = d.settledSeats; i < stop; ++i) {
            _settleSeat(dispute, d, i);
        }
        d.settledSeats = uint16(stop);
        if (stop < n) return;
        d.seatsSettled = true;
        emit SeatsSettled(dispute);
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
    function replayCost(uint64 replaySeconds) external view returns (uint256) {
        return PANEL_SIZE * replaySeconds * REPLAY_PRICE;
    }


    /// @notice The randomness target the current run's panel is drawn from.
    /// @param dispute The dispute id.
    /// @return The target (a block or a drand round), fixed when the run was (last) armed.
    function panelTarget(uint256 dispute) public view returns (uint64) {
        Dispute memory d = getDispute(dispute);
        return RANDOMNESS.targetOf(d.armBlock, d.armedAt);
    }

    /// @notice A dispute (status None: no such id). One this committee has not taken up yet reads as
    /// AwaitingPanel, armed where the task contract's record says.
    /// @param dispute The dispute id.
    /// @return d The dispute.
    function getDispute(uint256 dispute) public view returns (Dispute memory d) {
        d = _disputes[dispute];
        if (d.status == DisputeStatus.None) _origin(d, dispute);
    }


    /// @notice The current run's panel, in draw order (while AwaitingPanel: those seated so far).
    /// @param dispute The dispute id.
    /// @return panel The panelists.
    function panelOf(uint256 dispute) external view returns (address[] memory panel) {
        Dispute storage d = _disputes[dispute];
        address[] storage seats = _seats[dispute];
        uint256 start = seats.length - d.seated;
        uint256 size = d.seated;
        if (d.status != DisputeStatus.AwaitingPanel) {
            Run storage r = _runs[dispute][d.run];
            (start, size) = (r.start, r.size);
        }
        panel = new address[](size);
        for (uint256 i = 0; i < size; ++i) {
            panel[i] = seats[start + i];
        }
    }

    /// @notice Every seat of the dispute, all runs, in draw order.
    /// @param dispute The dispute id.
    /// @return The seats' auditors.
    function seatsOf(uint256 dispute) external view returns (address[] memory) {
        return _seats[dispute];
    }


    /// @notice A panelist's latest seat on the dispute (all zero if it never sat).
    /// @param dispute The dispute id.
    /// @param panelist The panelist.
    /// @return b The ballot (its `run` says which run it sat in).
    function ballotOf(uint256 dispute, address panelist) external view returns (Ballot memory b) {
        uint256 seat = _seatOf[dispute][panelist];
        if (seat != 0) b = _ballots[dispute][seat - 1];
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


    /// @notice Panel size of round r: `PANEL_SIZE * 2^r + 2^r - 1`.
    /// @param round The round.
    /// @return The size.
    function panelSizeOf(uint256 round) public view returns (uint256) {
        return PanelDraw.size(PANEL_SIZE, round);
    }

    // --- internal: rounds ----------------------------------------------------------------------

    /// @dev The dispute, reverting unless it is in `status`.
    function _requireStatus(uint256 dispute, DisputeStatus status) internal view returns (Dispute storage d) {
        d = _disputes[dispute];
        if (d.status != status) revert WrongDisputeStatus(dispute, d.status);
    }

    /// @dev The dispute, taken up from the task contract's record if this is its first touch, reverting unless
    /// it is in `status` (None: any status but None).
    function _take(uint256 dispute, DisputeStatus status) internal returns (Dispute storage d) {
        d = _disputes[dispute];
        if (d.status == DisputeStatus.None) {
            Dispute memory fresh;
            _origin(fresh, dispute);
            if (fresh.status == DisputeStatus.None) revert WrongDisputeStatus(dispute, DisputeStatus.None);
            (d.task, d.status, d.armBlock, d.armedAt, d.roundStartedAt, d.firstArmBlock) = (
                fresh.task,
                fresh.status,
                fresh.armBlock,
                fresh.armedAt,
                fresh.roundStartedAt,
                fresh.armBlock
            );
        }
        if (status != DisputeStatus.None && d.status != status) revert WrongDisputeStatus(dispute, d.status);
    }

    /// @dev A dispute as the task contract opened it (untouched if it opened none): round 0 awaiting its panel,
    /// armed at the opening reveal.
    function _origin(Dispute memory d, uint256 dispute) internal view {
        (uint64 task, uint48 armBlock, uint40 armedAt) = TASKS.disputeOrigin(dispute);
        if (task == 0) return;
        d.task = task;
        d.status = DisputeStatus.AwaitingPanel;
        d.armBlock = armBlock;
        d.armedAt = armedAt;
        d.roundStartedAt = armedAt;
        d.firstArmBlock = armBlock;
    }

    /// @dev The registered auditor, reverting if `account` is not one.
    function _requireAuditor(address account) internal view returns (Auditor storage a) {
        a = _auditors[account];
        if (a.registeredBlock == 0) revert NotRegistered(account);
    }

    /// @dev The caller's ballot, reverting unless it sits on the current run's panel.
    function _requirePanelist(uint256 dispute, Dispute storage d) internal view returns (Ballot storage b) {
        uint256 seat = _seatOf[dispute][msg.sender];
        // INVARIANT: only the current panel votes (a round drawn again seats a fresh panel of the same round,
        // so the seat's run tells, not its round).
        if (seat == 0 || _ballots[dispute][seat - 1].run != d.run) revert NotPanelist(dispute, msg.sender);
        b = _ballots[dispute][seat - 1];
    }

    /// @dev The outcome of a run's tally (None: undecided): a strict majority of its seated panel.
    function _outcome(Run storage r) internal view returns (Verdict) {
        uint256 size = r.size;
        if (uint256(r.sound) * 2 > size) return Verdict.Valid;
        if (uint256(r.faulty) * 2 > size) return Verdict.Faulty;
        if ((uint256(r.faulty) + r.unavailable) * 2 > size) return Verdict.Unavailable;
        return Verdict.None;
    }

    /// @dev The current run decided `outcome`. Only the last round ends a task on availability: before it, an
    /// UNAVAILABLE round arms the next, larger one at no bond, so a small captured panel cannot make an honest
    /// provider pay to appeal. A sound or faulty round may be appealed unless it is the last.
    function _decide(uint256 dispute, Dispute storage d, Verdict outcome) internal {
        d.decidedRun = d.run;
        bool last = d.round + 1 == MAX_ROUNDS;
        if (outcome == Verdict.Unavailable) {
            emit RoundDecided(dispute, d.round, outcome, 0);
            return last ? _finish(dispute, d, outcome) : _nextRound(d);
        }
        if (last) return _finish(dispute, d, outcome);
        d.decided = outcome;
        d.status = DisputeStatus.Appealable;
        d.decidedAt = _stamp();
        emit RoundDecided(dispute, d.round, outcome, _now() + APPEAL_WINDOW);
    }

    /// @dev Arms the next, larger round (an appeal, an undecided run, an unavailable one).
    function _nextRound(Dispute storage d) internal {
        d.round += 1;
        d.run += 1;
        d.reruns = 0;
        d.decided = Verdict.None;
        d.roundStartedAt = _stamp();
        _arm(d);
    }

    /// @dev Arms the current run at this block.
    function _arm(Dispute storage d) internal {
        d.status = DisputeStatus.AwaitingPanel;
        d.armBlock = _block();
        d.armedAt = _stamp();
        d.drawnAt = 0;
        d.tries = 0;
        d.seated = 0;
    }

    /// @dev Eligibility for a round armed at a, from the history as of a (protocol 4.2). Seats held on
    /// other disputes do not matter; a seat in a run of this dispute not voided does, checked by the caller.
    function _eligibleAsOf(Dispute storage d, address candidate, uint48 asOf) internal view returns (bool) {
        if (!_standingOk(candidate, asOf)) return false;
        // INVARIANT: a later round seats only auditors that were eligible when the dispute opened too: sybils
        // registered (or topped up) once it is under way, timed to its last round, never sit on it.
        uint48 first = d.firstArmBlock - 1;
        if (first != asOf && !_standingOk(candidate, first)) return false;
        // INVARIANT: nobody judges a task it owns, provides, or challenged up to the round's arm block (the
        // first challenger committed before its reveal armed round 0).
        return !TASKS.isInterested(d.task, candidate, uint256(asOf) + 1);
    }

    /// @dev Registered warmupBlocks before the block after `asOf`, no exit requested, ELIGIBLE_STAKE held, as of
    /// `asOf`.
    function _standingOk(address candidate, uint48 asOf) internal view returns (bool) {
        (uint256 stake, uint256 registeredBlock, bool exitRequested) = _unpack(
            _standing[candidate].upperLookupRecent(asOf)
        );
        uint256 a = uint256(asOf) + 1;
        return registeredBlock != 0 && registeredBlock + WARMUP_BLOCKS <= a && !exitRequested && stake >= ELIGIBLE_STAKE;
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

    /// @dev Seats `candidate` in the current run if it is someone, has no seat in a run not voided of this
    /// dispute (a voided run's panelists are drawn again: a re-run does not use up the pool), and was
    /// eligible as of the arm block.
    function _seatIfEligible(
        uint256 dispute,
        Dispute storage d,
        address candidate,
        uint48 asOf
    ) internal returns (bool) {
        if (candidate == address(0)) return false;
        uint16 previous = _seatOf[dispute][candidate];
        // The latest seat decides: a seat in a run not voided (or in this draw) is never followed by another.
        if (previous != 0 && !_runs[dispute][_ballots[dispute][previous - 1].run].voided) return false;
        if (!_eligibleAsOf(d, candidate, asOf)) return false;
        address[] storage seats = _seats[dispute];
        uint256 seat = seats.length;
        Ballot storage b = _ballots[dispute][seat];
        b.run = d.run;
        b.previous = previous;
        seats.push(candidate);
        _seatOf[dispute][candidate] = uint16(seat + 1);
        return true;
    }

    /// @dev The panel is complete: it votes from now. Each panelist's seat counts toward its L
    /// overlapping seats, or is excused when L of its seats already overlap this one.
    function _completePanel(uint256 dispute, Dispute storage d, uint256 want) internal {
        d.drawnAt = _stamp();
        d.status = DisputeStatus.Voting;
        uint64 revealEnd = _revealEnd(d);
        address[] storage seats = _seats[dispute];
        uint256 start = seats.length - want;
        address[] memory panel = new address[](want);
        uint256 excused = 0;
        for (uint256 i = 0; i < want; ++i) {
            address panelist = seats[start + i];
            panel[i] = panelist;
            _auditors[panelist].openSeats += 1;
            if (!_countSeat(panelist, revealEnd)) {
                _ballots[dispute][start + i].excused = true;
                ++excused;
            }
        }
        Run storage r = _runs[dispute][d.run];
        r.round = d.round;
        r.start = uint16(start);
        r.size = uint16(want);
        r.excused = uint16(excused);
        emit PanelDrawn(dispute, d.round, d.run, panel, _commitEnd(d), revealEnd);
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

    /// @dev Unseats an incomplete draw's panelists (a re-arm draws the run afresh), each auditor's previous
    /// seat on the dispute restored; returns how many.
    function _unseatDraw(uint256 dispute, Dispute storage d) internal returns (uint256 count) {
        address[] storage seats = _seats[dispute];
        count = d.seated;
        for (uint256 i = 0; i < count; ++i) {
            uint256 seat = seats.length - 1;
            _seatOf[dispute][seats[seat]] = _ballots[dispute][seat].previous;
            delete _ballots[dispute][seat];
            seats.pop();
        }
        d.seated = 0;
    }

    // --- internal: settlement ------------------------------------------------------------------

    /// @dev Ends the dispute with `verdict` (checks-effects-interactions: its state first, then the task
    /// contract pays out and credits the panel's money here, which this contract pulls; TASKS is fixed at
    /// construction and trusted). The seats are settled afterwards by settleSeats.
    function _finish(uint256 dispute, Dispute storage d, Verdict verdict) internal {
        d.status = DisputeStatus.Resolved;
        d.verdict = verdict;
        uint256 charges = verdict == Verdict.NoDecision ? _roundCharges(dispute, d, false, 0) : 0;
        emit DisputeResolved(dispute, d.task, verdict, d.round);
        uint256 toPanel = TASKS.settleDispute(dispute, Settlement({verdict: verdict, charges: charges}));
        if (toPanel != 0) PullPayments(address(TASKS)).withdraw();
        uint256 appealParts = _settleAppeals(dispute, verdict);
        heldForSeats += toPanel + appealParts;
        if (verdict == Verdict.NoDecision) {
            _burnHeld(dispute, _roundCharges(dispute, d, true, toPanel));
        } else if (verdict != Verdict.Moot) {
            uint256 majority = _backers(_runs[dispute][d.decidedRun], verdict);
            uint256 pot = toPanel + appealParts;
            uint256 each = pot / majority; // a decided run has a majority
            _panelEach[dispute] = each;
            _burnHeld(dispute, pot - each * majority);
        }
    }

    /// @dev Round charges of a no-decision (protocol 4.2): each run that decided SOUND (and was appealed) charges
    /// the joined bonds PANEL_BPS x challengerBond x 2^round for those who revealed. Without `paid`, returns
    /// their sum (what to ask the task contract for); with it, shares `paid` (the charges the joined bonds
    /// covered) out, earlier runs first, evenly among each run's panelists who revealed (`chargeEach`), and
    /// returns the dust.
    function _roundCharges(uint256 dispute, Dispute storage d, bool share, uint256 paid) internal returns (uint256) {
        uint256 bond = TASKS.challengerBondOf(dispute);
        uint256 total = 0;
        for (uint256 i = 0; i <= d.run; ++i) {
            Run storage r = _runs[dispute][i];
            // INVARIANT: only a run that decided against the challenge charges its bonds. One that backed it
            // (FAULTY or UNAVAILABLE) does not: a provider that withholds its files, or appeals a FAULTY round and
            // then has the next round voided, must not bill the watcher (an appellant pays PANEL_BPS of its own
            // bond). Nor does an undecided one: its silent or abstaining seats could have decided it.
            if (r.voided || _outcome(r) != Verdict.Valid) continue;
            uint256 revealed = _revealed(r);
            uint256 charge = _charge(bond, r);
            total += charge;
            if (!share) continue;
            uint256 each = (charge < paid ? charge : paid) / revealed;
            r.chargeEach = uint88(each); // at most 2^87 wei: a bond (< 2^80) times 2^7
            paid -= each * revealed;
        }
        return share ? paid : total;
    }

    /// @dev A run's charge: PANEL_BPS x challengerBond x 2^round.
    function _charge(uint256 bond, Run storage r) internal view returns (uint256) {
        return ((bond << r.round) * PANEL_BPS) / _BPS;
    }

    /// @dev Ballots revealed in a run.
    function _revealed(Run storage r) internal view returns (uint256) {
        return uint256(r.sound) + r.faulty + r.unavailable;
    }

    /// @dev Appeal bonds, settled against the final outcome: refunded when it is the one asked for (or the
    /// dispute is moot); minus PANEL_BPS (burned) after a no-decision or UNAVAILABLE; otherwise PANEL_BPS joins
    /// the deciding run's majority's money (returned) and the rest is burned.
    function _settleAppeals(uint256 dispute, Verdict verdict) internal returns (uint256 toPanel) {
        Appeal[] storage appeals = _appeals[dispute];
        for (uint256 i = 0; i < appeals.length; ++i) {
            Appeal storage a = appeals[i];
            heldAppealBonds -= a.bond;
            uint256 refund = a.bond;
            if (verdict != Verdict.Moot && !_backs(verdict, uint8(a.wanted))) {
                uint256 part = (a.bond * PANEL_BPS) / _BPS;
                // An outcome decided on availability, like a no-decision, judged no replay an appeal disputed:
                // a provider that serves its files until an honest appeal and then withholds them must not
                // take that appellant's bond (review 12).
                if (verdict == Verdict.NoDecision || verdict == Verdict.Unavailable) {
                    refund = a.bond - part;
                    _burn(dispute, part);
                } else {
                    refund = 0;
                    toPanel += part;
                    _burn(dispute, a.bond - part);
                }
            }
            emit AppealSettled(dispute, a.appellant, refund);
            _credit(a.appellant, dispute, refund);
        }
    }

    /// @dev Settles seat `i`: released; its penalty taken and burned (nobody profits from another auditor's
    /// loss, so nobody gains by making an honest auditor lose); its share credited.
    function _settleSeat(uint256 dispute, Dispute storage d, uint256 i) internal {
        address panelist = _seats[dispute][i];
        Auditor storage a = _auditors[panelist];
        a.openSeats -= 1;
        Verdict verdict = d.verdict;
        if (verdict == Verdict.Moot) return;
        Ballot storage b = _ballots[dispute][i];
        if (b.vote == 0) {
            // INVARIANT: silence loses unless the seat was excused (a flood's L + 1st overlapping seat) or
            // its auditor became interested in the task before it committed a ballot (it could not commit one).
            // A committed ballot can always be revealed: withholding it after seeing the others' loses.
            bool interested = b.commitment == bytes32(0) &&
                TASKS.isInterested(d.task, panelist, _runs[dispute][b.run].endBlock);
            if (!b.excused && !interested) _penalize(dispute, panelist, a);
            return;
        }
        Run storage r = _runs[dispute][b.run];
        if (r.voided || b.vote == uint8(Vote.Abstain)) return;
        // INVARIANT (v3): a ballot loses only against the outcome that stands: SOUND takes from faulty
        // ballots, FAULTY from sound ones; an unavailable ballot, and any ballot of an UNAVAILABLE or
        // undecided outcome, loses nothing.
        if (_opposes(verdict, b.vote)) return _penalize(dispute, panelist, a);
        uint256 amount = verdict == Verdict.NoDecision ? r.chargeEach : 0;
        if (b.run == d.decidedRun && _backs(verdict, b.vote)) amount += _panelEach[dispute];
        heldForSeats -= amount;
        _credit(panelist, dispute, amount);
    }

    /// @dev How many of a run's ballots back `verdict` (Valid, Faulty or Unavailable).
    function _backers(Run storage r, Verdict verdict) internal view returns (uint256) {
        if (verdict == Verdict.Valid) return r.sound;
        if (verdict == Verdict.Faulty) return r.faulty;
        return uint256(r.faulty) + r.unavailable;
    }

    /// @dev Whether `vote` backs the final outcome: sound for SOUND, faulty for FAULTY, faulty or unavailable
    /// for UNAVAILABLE (an appeal's wanted outcome is read the same way).
    function _backs(Verdict verdict, uint8 vote) internal pure returns (bool) {
        if (verdict == Verdict.Valid) return vote == uint8(Vote.Sound);
        if (verdict == Verdict.Faulty) return vote == uint8(Vote.Faulty);
        if (verdict == Verdict.Unavailable) return vote == uint8(Vote.Faulty) || vote == uint8(Vote.Unavailable);
        return false;
    }

    /// @dev Whether `vote` loses against the final outcome: faulty against SOUND, sound against FAULTY.
    function _opposes(Verdict verdict, uint8 vote) internal pure returns (bool) {
        if (verdict == Verdict.Valid) return vote == uint8(Vote.Faulty);
        if (verdict == Verdict.Faulty) return vote == uint8(Vote.Sound);
        return false;
    }

    /// @dev Burns `amount` of the seats' money.
    function _burnHeld(uint256 dispute, uint256 amount) internal {
        heldForSeats -= amount;
        _burn(dispute, amount);
    }

    /// @dev Burns PENALTY (at most what is left) of the panelist's stake.
    function _penalize(uint256 dispute, address panelist, Auditor storage a) internal {
        uint256 taken = a.stake < PENALTY ? a.stake : PENALTY;
        if (taken == 0) return;
        a.stake -= taken;
        totalStake -= taken;
        _pushStanding(panelist, a);
        emit Penalized(dispute, panelist, taken);
        _burn(dispute, taken);
    }

    // --- internal: registry --------------------------------------------------------------------

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

    // --- internal: clocks ----------------------------------------------------------------------

    /// @dev End of the current run's commit window.
    function _commitEnd(Dispute storage d) internal view returns (uint64) {
        return d.drawnAt + COMMIT_WINDOW;
    }

    /// @dev End of the current run's reveal window.
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
