// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IAdjudicator} from "./interfaces/IAdjudicator.sol";
import {IDisputedTasks} from "./interfaces/IDisputedTasks.sol";
import {Sampling} from "./libraries/Sampling.sol";
import {PullPayments} from "./utils/PullPayments.sol";
import {Auditor, Ballot, Dispute, DisputeStatus, Reason, Verdict} from "./Types.sol";
import {
    AlreadyCommitted,
    AlreadyRegistered,
    CommitWindowClosed,
    CooldownNotOver,
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
    StakeLocked,
    VoteMismatch,
    VoteRevealClosed,
    VotingNotOver,
    WrongBond,
    WrongDisputeStatus
} from "./Errors.sol";

/// @notice Constructor parameters of the committee (protocol section 4.2).
struct CommitteeParams {
    // Exact value `register` must carry.
    uint256 auditorStake;
    // Stake locked per panel seat and lost for not revealing or voting with the minority.
    uint256 penalty;
    // Blocks an auditor must have been registered before a challenge's reveal to be drawn for it.
    uint64 warmupBlocks;
    // Blocks between a panel's arm block c and its seed block c + seedDelay (>= 1).
    uint64 seedDelay;
    // Seconds between requestExit and exit.
    uint64 cooldown;
    // Seconds from a panel's draw in which panelists commit their votes.
    uint64 commitWindow;
    // Seconds after the commit window in which panelists reveal.
    uint64 revealWindow;
    // Seconds from the reveal of the challenge after which a dispute with too few auditors ends
    // as "no decision".
    uint64 panelTimeout;
    // Panel size of round 0: odd, >= 3.
    uint16 panelSize;
    // Rounds before "no decision": 1 .. 8.
    uint8 maxRounds;
}

/// @title AuditCommittee
/// @notice A staked committee of auditors that decides disputes of TrainingTasks (protocol 4.2):
/// auditors register with a stake; each dispute draws a panel from block-hash randomness, panelists
/// commit and reveal votes, a strict majority of revealed votes decides, and panelists who did not
/// reveal or voted with the minority lose a fixed penalty to the majority. Without a majority the next
/// round draws a larger panel; after the last round, or when too few auditors are eligible for
/// `panelTimeout`, the dispute ends with no decision.
/// @dev States of a dispute: AwaitingPanel -(drawPanel)-> Voting -(resolve)-> Resolved, or back to
/// AwaitingPanel for the next round. A dispute whose task ended meanwhile is moot: `resolve` ends it at
/// any time, releasing the panel without penalty. Clocks: seed blocks in blocks (SEED_DELAY), every
/// window in seconds. Money invariant (protocol 4.3): balance == sum of stakes + credits + `burned`.
contract AuditCommittee is IAdjudicator, PullPayments {
    /// @notice Most auditors registered at once: drawing a panel reads every one of them.
    uint256 public constant MAX_AUDITORS = 256;
    /// @notice Most rounds a committee may be configured with.
    uint256 public constant MAX_ROUNDS_LIMIT = 8;
    /// @notice Fewest eligible auditors a panel is drawn from.
    uint256 public constant MIN_PANEL = 3;

    /// @notice The task contract whose disputes this committee decides.
    IDisputedTasks public immutable TASKS;
    /// @notice Exact value `register` must carry.
    uint256 public immutable AUDITOR_STAKE;
    /// @notice Stake locked per panel seat, lost for not revealing or voting with the minority.
    uint256 public immutable PENALTY;
    /// @notice Blocks of registration needed before a challenge's reveal block to be eligible.
    uint256 public immutable WARMUP_BLOCKS;
    /// @notice Blocks between a panel's arm block and its seed block.
    uint256 public immutable SEED_DELAY;
    /// @notice Seconds between requestExit and exit.
    uint64 public immutable COOLDOWN;
    /// @notice Seconds to commit a vote, from the panel's draw.
    uint64 public immutable COMMIT_WINDOW;
    /// @notice Seconds to reveal a vote, after the commit window.
    uint64 public immutable REVEAL_WINDOW;
    /// @notice Seconds from the challenge's reveal after which too few auditors means no decision.
    uint64 public immutable PANEL_TIMEOUT;
    /// @notice Panel size of round 0.
    uint256 public immutable PANEL_SIZE;
    /// @notice Rounds before no decision.
    uint256 public immutable MAX_ROUNDS;

    /// @notice Number of disputes opened; dispute ids are 1 .. disputeCount.
    uint256 public disputeCount;

    mapping(address auditor => Auditor) private _auditors;
    // Registered auditors, in no particular order (swap-and-pop on exit).
    address[] private _registry;
    mapping(address auditor => uint256 slot) private _registrySlot; // index + 1; 0: not in the registry
    mapping(uint256 dispute => Dispute) private _disputes;
    mapping(uint256 dispute => address[] panel) private _panels; // the current round's panel
    mapping(uint256 dispute => mapping(uint256 round => mapping(address panelist => Ballot))) private _ballots;
    mapping(uint256 dispute => mapping(address auditor => bool)) private _barred; // non-revealers

    /// @notice A panel was drawn for `round`; votes are committed until `commitEnd`, revealed until
    /// `revealEnd`.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panel The panelists.
    /// @param commitEnd When the commit window closes.
    /// @param revealEnd When the reveal window closes.
    event PanelDrawn(uint256 indexed dispute, uint256 round, address[] panel, uint64 commitEnd, uint64 revealEnd);

    /// @notice No panel could be drawn (seed block gone, or fewer than 3 eligible auditors): the draw
    /// waits for a new seed block.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param seedBlock The new seed block.
    /// @param eligible Eligible auditors found (0 when the seed block was gone).
    event PanelRearmed(uint256 indexed dispute, uint256 round, uint256 seedBlock, uint256 eligible);

    /// @notice A panelist committed its vote.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panelist The panelist.
    event VoteCommitted(uint256 indexed dispute, uint256 round, address indexed panelist);

    /// @notice A panelist revealed its vote.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panelist The panelist.
    /// @param vote 1 valid (or available), 2 faulty.
    event VoteRevealed(uint256 indexed dispute, uint256 round, address indexed panelist, uint8 vote);

    /// @notice A round ended without a strict majority; the next round draws a larger panel.
    /// @param dispute The dispute id.
    /// @param round The round that failed.
    event RoundFailed(uint256 indexed dispute, uint256 round);

    /// @notice A panelist lost `amount` of its stake in `dispute`.
    /// @param dispute The dispute id.
    /// @param panelist The panelist.
    /// @param amount The penalty.
    event Penalized(uint256 indexed dispute, address indexed panelist, uint256 amount);

    /// @notice The dispute ended; the task contract paid it out.
    /// @param dispute The dispute id.
    /// @param task The task id.
    /// @param verdict Valid, Faulty, NoDecision or Moot.
    /// @param round The last round.
    event DisputeResolved(uint256 indexed dispute, uint256 indexed task, Verdict verdict, uint256 round);

    /// @notice An auditor registered with its stake.
    /// @param auditor The auditor.
    /// @param stake The stake.
    event AuditorRegistered(address indexed auditor, uint256 stake);

    /// @notice An auditor asked to exit; it is never drawn again.
    /// @param auditor The auditor.
    /// @param exitAt When it may exit (if nothing is locked then).
    event AuditorExitRequested(address indexed auditor, uint64 exitAt);

    /// @notice An auditor exited; its remaining stake is credited.
    /// @param auditor The auditor.
    /// @param stake The stake credited.
    event AuditorExited(address indexed auditor, uint256 stake);

    /// @param tasks The task contract (deploy this committee first, at the task contract's predicted
    /// address; the task contract checks the wiring when it is built).
    /// @param p The committee's parameters.
    constructor(IDisputedTasks tasks, CommitteeParams memory p) {
        if (p.penalty == 0 || p.penalty > p.auditorStake) revert InvalidParameter("penalty", p.penalty);
        if (p.seedDelay == 0) revert InvalidParameter("seedDelay", p.seedDelay);
        if (p.panelSize < MIN_PANEL || p.panelSize % 2 == 0) revert InvalidParameter("panelSize", p.panelSize);
        if (p.maxRounds == 0 || p.maxRounds > MAX_ROUNDS_LIMIT) revert InvalidParameter("maxRounds", p.maxRounds);
        if (p.commitWindow == 0) revert InvalidParameter("commitWindow", p.commitWindow);
        if (p.revealWindow == 0) revert InvalidParameter("revealWindow", p.revealWindow);
        TASKS = tasks;
        AUDITOR_STAKE = p.auditorStake;
        PENALTY = p.penalty;
        WARMUP_BLOCKS = p.warmupBlocks;
        SEED_DELAY = p.seedDelay;
        COOLDOWN = p.cooldown;
        COMMIT_WINDOW = p.commitWindow;
        REVEAL_WINDOW = p.revealWindow;
        PANEL_TIMEOUT = p.panelTimeout;
        PANEL_SIZE = p.panelSize;
        MAX_ROUNDS = p.maxRounds;
    }

    // --- auditors ------------------------------------------------------------------------------

    /// @notice Register as an auditor with exactly AUDITOR_STAKE. Eligible for disputes whose challenge
    /// is revealed WARMUP_BLOCKS or more after this block.
    function register() external payable {
        if (_auditors[msg.sender].registeredBlock != 0) revert AlreadyRegistered(msg.sender);
        if (msg.value != AUDITOR_STAKE) revert WrongBond(AUDITOR_STAKE, msg.value);
        if (_registry.length == MAX_AUDITORS) revert RegistryFull(MAX_AUDITORS);
        _auditors[msg.sender] = Auditor({
            stake: msg.value,
            locked: 0,
            registeredBlock: uint64(block.number),
            exitRequestedAt: 0
        });
        _registry.push(msg.sender);
        _registrySlot[msg.sender] = _registry.length;
        emit AuditorRegistered(msg.sender, msg.value);
    }

    /// @notice Ask to exit: the caller is never drawn again; `exit` after COOLDOWN.
    function requestExit() external {
        Auditor storage a = _requireAuditor(msg.sender);
        if (a.exitRequestedAt != 0) revert ExitAlreadyRequested(msg.sender);
        a.exitRequestedAt = _now();
        emit AuditorExitRequested(msg.sender, _now() + COOLDOWN);
    }

    /// @notice Exit after the cooldown, once no stake is locked on a panel: the remaining stake is
    /// credited.
    function exit() external {
        Auditor storage a = _requireAuditor(msg.sender);
        if (a.exitRequestedAt == 0) revert ExitNotRequested(msg.sender);
        uint64 endsAt = a.exitRequestedAt + COOLDOWN;
        if (_now() < endsAt) revert CooldownNotOver(msg.sender, endsAt);
        // INVARIANT: a panelist answers for every seat it holds before its stake leaves.
        if (a.locked != 0) revert StakeLocked(msg.sender, a.locked);
        uint256 stake = a.stake;
        delete _auditors[msg.sender];
        _removeFromRegistry(msg.sender);
        emit AuditorExited(msg.sender, stake);
        _credit(msg.sender, 0, stake);
    }

    // --- disputes ------------------------------------------------------------------------------

    /// @inheritdoc IAdjudicator
    function openDispute(
        uint256 task,
        uint256 k,
        Reason reason,
        address[3] calldata excluded
    ) external returns (uint256 dispute) {
        if (msg.sender != address(TASKS)) revert NotTaskContract(msg.sender);
        dispute = ++disputeCount;
        Dispute storage d = _disputes[dispute];
        d.task = task;
        d.k = k;
        d.excluded = excluded;
        d.reason = reason;
        d.status = DisputeStatus.AwaitingPanel;
        d.revealBlock = uint64(block.number);
        d.openedAt = _now();
        d.armBlock = uint64(block.number);
        emit DisputeOpened(dispute, task, k, reason);
    }

    /// @notice Draw the current round's panel from the hash of block c + SEED_DELAY, locking PENALTY of
    /// each panelist's stake. If that hash is gone, or fewer than 3 auditors are eligible, nothing is
    /// drawn and the seed block re-arms to a future block; with too few auditors once PANEL_TIMEOUT has
    /// passed since the challenge's reveal, the dispute ends with no decision.
    /// @param dispute The dispute id.
    function drawPanel(uint256 dispute) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.AwaitingPanel);
        uint256 target = d.armBlock + SEED_DELAY;
        // INVARIANT: the seed block is mined after the dispute (or round) was armed.
        if (block.number <= target) revert PanelNotReady(dispute, target + 1);
        bytes32 hash = blockhash(target);
        if (hash == bytes32(0)) return _rearm(dispute, d, 0);
        address[] memory pool = _eligible(dispute, d);
        if (pool.length < MIN_PANEL) {
            if (_now() < d.openedAt + PANEL_TIMEOUT) return _rearm(dispute, d, pool.length);
            // Both contracts record the same outcome: a dispute whose task has ended is moot.
            Verdict verdict = TASKS.isMoot(dispute) ? Verdict.Moot : Verdict.NoDecision;
            return _finish(dispute, d, verdict, new address[](0));
        }
        uint256 size = panelSizeOf(d.round);
        if (size > pool.length) size = pool.length - (pool.length % 2 == 0 ? 1 : 0);
        uint256[] memory picked = Sampling.pick(keccak256(abi.encode(hash, dispute, d.round)), pool.length, size);
        address[] storage panel = _panels[dispute];
        for (uint256 i = 0; i < size; ++i) {
            address auditor = pool[picked[i]];
            panel.push(auditor);
            _ballots[dispute][d.round][auditor].seated = true;
            _auditors[auditor].locked += PENALTY;
        }
        d.drawnAt = _now();
        d.status = DisputeStatus.Voting;
        emit PanelDrawn(dispute, d.round, panel, _commitEnd(d), _revealEnd(d));
    }

    /// @notice Commit a vote, as a panelist of the current round, within COMMIT_WINDOW of the draw.
    /// @param dispute The dispute id.
    /// @param commitment keccak256(abi.encode(dispute, round, vote, salt, msg.sender)).
    function commitVote(uint256 dispute, bytes32 commitment) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Voting);
        Ballot storage b = _ballots[dispute][d.round][msg.sender];
        if (!b.seated) revert NotPanelist(dispute, msg.sender);
        if (_now() >= _commitEnd(d)) revert CommitWindowClosed(dispute, _commitEnd(d));
        if (b.commitment != bytes32(0)) revert AlreadyCommitted(dispute, msg.sender);
        b.commitment = commitment;
        emit VoteCommitted(dispute, d.round, msg.sender);
    }

    /// @notice Reveal a committed vote, after the commit window and within REVEAL_WINDOW of its end.
    /// @param dispute The dispute id.
    /// @param vote 1 = valid (or available), 2 = faulty.
    /// @param salt The commitment's salt.
    function revealVote(uint256 dispute, uint8 vote, bytes32 salt) external {
        Dispute storage d = _requireStatus(dispute, DisputeStatus.Voting);
        Ballot storage b = _ballots[dispute][d.round][msg.sender];
        if (!b.seated) revert NotPanelist(dispute, msg.sender);
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

    /// @notice End the current round after its reveal window: a strict majority of revealed votes
    /// decides; otherwise the next round starts (non-revealers excluded) or, after the last round, the
    /// dispute ends with no decision. A moot dispute (its task ended) ends at any time, its panel
    /// released without penalty.
    /// @param dispute The dispute id.
    function resolve(uint256 dispute) external {
        Dispute storage d = _disputes[dispute];
        if (d.status != DisputeStatus.AwaitingPanel && d.status != DisputeStatus.Voting) {
            revert WrongDisputeStatus(dispute, d.status);
        }
        if (TASKS.isMoot(dispute)) {
            _releasePanel(dispute);
            return _finish(dispute, d, Verdict.Moot, new address[](0));
        }
        if (d.status != DisputeStatus.Voting) revert WrongDisputeStatus(dispute, d.status);
        if (_now() < _revealEnd(d)) revert VotingNotOver(dispute, _revealEnd(d));
        (uint256 valid, uint256 faulty) = _count(dispute, d.round);
        if (valid == faulty) return _failRound(dispute, d);
        uint8 winner = uint8(valid > faulty ? Verdict.Valid : Verdict.Faulty);
        address[] memory majority = _settlePanel(dispute, d.round, winner);
        _finish(dispute, d, Verdict(winner), majority);
    }

    // --- views ---------------------------------------------------------------------------------

    /// @inheritdoc IAdjudicator
    function taskContract() external view returns (address) {
        return address(TASKS);
    }

    /// @notice Whether `dispute` is still undecided.
    /// @param dispute The dispute id.
    /// @return True while AwaitingPanel or Voting.
    function isOpen(uint256 dispute) external view returns (bool) {
        DisputeStatus status = _disputes[dispute].status;
        return status == DisputeStatus.AwaitingPanel || status == DisputeStatus.Voting;
    }

    /// @notice A dispute (status None: no such id).
    /// @param dispute The dispute id.
    /// @return The dispute.
    function getDispute(uint256 dispute) external view returns (Dispute memory) {
        return _disputes[dispute];
    }

    /// @notice The current round's panel (empty while a panel is awaited).
    /// @param dispute The dispute id.
    /// @return The panelists.
    function panelOf(uint256 dispute) external view returns (address[] memory) {
        return _panels[dispute];
    }

    /// @notice A panelist's ballot in one round.
    /// @param dispute The dispute id.
    /// @param round The round.
    /// @param panelist The panelist.
    /// @return The ballot.
    function ballotOf(uint256 dispute, uint256 round, address panelist) external view returns (Ballot memory) {
        return _ballots[dispute][round][panelist];
    }

    /// @notice An auditor's stake, locks and registration (registeredBlock 0: not registered).
    /// @param auditor The auditor.
    /// @return The auditor.
    function getAuditor(address auditor) external view returns (Auditor memory) {
        return _auditors[auditor];
    }

    /// @notice Number of registered auditors.
    /// @return The count.
    function auditorCount() external view returns (uint256) {
        return _registry.length;
    }

    /// @notice Sum of every registered auditor's stake (for the balance invariant).
    /// @return sum The sum.
    function totalStake() external view returns (uint256 sum) {
        for (uint256 i = 0; i < _registry.length; ++i) {
            sum += _auditors[_registry[i]].stake;
        }
    }

    /// @notice Panel size of round r: `PANEL_SIZE * 2^r + 2^r - 1`.
    /// @param round The round.
    /// @return The size.
    function panelSizeOf(uint256 round) public view returns (uint256) {
        uint256 scale = 1 << round;
        return PANEL_SIZE * scale + scale - 1;
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

    /// @dev Auditors who may sit on this dispute's panel now (protocol 4.2).
    function _eligible(uint256 dispute, Dispute storage d) internal view returns (address[] memory pool) {
        pool = new address[](_registry.length);
        address[3] memory excluded = d.excluded;
        uint256 count = 0;
        for (uint256 i = 0; i < _registry.length; ++i) {
            address candidate = _registry[i];
            Auditor storage a = _auditors[candidate];
            if (
                a.registeredBlock + WARMUP_BLOCKS <= d.revealBlock &&
                a.exitRequestedAt == 0 &&
                a.stake - a.locked >= PENALTY &&
                !_barred[dispute][candidate] &&
                candidate != excluded[0] &&
                candidate != excluded[1] &&
                candidate != excluded[2]
            ) pool[count++] = candidate;
        }
        // Shrink the array in place to the eligible prefix.
        assembly ("memory-safe") {
            mstore(pool, count)
        }
    }

    /// @dev No panel now: the seed block moves to SEED_DELAY blocks after this one.
    function _rearm(uint256 dispute, Dispute storage d, uint256 eligible) internal {
        d.armBlock = uint64(block.number);
        emit PanelRearmed(dispute, d.round, block.number + SEED_DELAY, eligible);
    }

    /// @dev Revealed votes of the current panel: (valid, faulty).
    function _count(uint256 dispute, uint256 round) internal view returns (uint256 valid, uint256 faulty) {
        address[] storage panel = _panels[dispute];
        for (uint256 i = 0; i < panel.length; ++i) {
            uint8 vote = _ballots[dispute][round][panel[i]].vote;
            if (vote == uint8(Verdict.Valid)) ++valid;
            else if (vote == uint8(Verdict.Faulty)) ++faulty;
        }
    }

    /// @dev A majority voted `winner`: everyone else loses PENALTY, shared equally by the majority
    /// (flooring, dust burned); majority locks are released. Returns the majority.
    function _settlePanel(uint256 dispute, uint256 round, uint8 winner) internal returns (address[] memory majority) {
        address[] storage panel = _panels[dispute];
        majority = new address[](panel.length);
        uint256 winners = 0;
        uint256 pot = 0;
        for (uint256 i = 0; i < panel.length; ++i) {
            address panelist = panel[i];
            Auditor storage a = _auditors[panelist];
            a.locked -= PENALTY;
            if (_ballots[dispute][round][panelist].vote == winner) {
                majority[winners++] = panelist;
            } else {
                a.stake -= PENALTY;
                pot += PENALTY;
                emit Penalized(dispute, panelist, PENALTY);
            }
        }
        assembly ("memory-safe") {
            mstore(majority, winners)
        }
        uint256 each = pot / winners;
        for (uint256 i = 0; i < winners; ++i) {
            _credit(majority[i], dispute, each);
        }
        _burn(dispute, pot - each * winners);
    }

    /// @dev No strict majority: non-revealers lose PENALTY (burned: there is no majority to pay) and
    /// are barred from later rounds; revealers are released. Then the next round, or no decision.
    function _failRound(uint256 dispute, Dispute storage d) internal {
        address[] storage panel = _panels[dispute];
        uint256 lost = 0;
        for (uint256 i = 0; i < panel.length; ++i) {
            address panelist = panel[i];
            Auditor storage a = _auditors[panelist];
            a.locked -= PENALTY;
            if (_ballots[dispute][d.round][panelist].vote == 0) {
                a.stake -= PENALTY;
                lost += PENALTY;
                _barred[dispute][panelist] = true;
                emit Penalized(dispute, panelist, PENALTY);
            }
        }
        _burn(dispute, lost);
        emit RoundFailed(dispute, d.round);
        if (d.round + 1 == MAX_ROUNDS) return _finish(dispute, d, Verdict.NoDecision, new address[](0));
        delete _panels[dispute];
        d.round += 1;
        d.armBlock = uint64(block.number);
        d.drawnAt = 0;
        d.status = DisputeStatus.AwaitingPanel;
    }

    /// @dev Releases every lock of the current panel without penalty (moot disputes).
    function _releasePanel(uint256 dispute) internal {
        address[] storage panel = _panels[dispute];
        for (uint256 i = 0; i < panel.length; ++i) {
            _auditors[panel[i]].locked -= PENALTY;
        }
    }

    /// @dev Ends the dispute and has the task contract pay it out (the last call: checks-effects-
    /// interactions; TASKS is fixed at construction and trusted).
    function _finish(uint256 dispute, Dispute storage d, Verdict verdict, address[] memory majority) internal {
        d.status = DisputeStatus.Resolved;
        d.verdict = verdict;
        emit DisputeResolved(dispute, d.task, verdict, d.round);
        TASKS.settleDispute(dispute, verdict, majority);
    }

    /// @dev Removes `auditor` from the registry (swap with the last entry, pop).
    function _removeFromRegistry(address auditor) internal {
        uint256 slot = _registrySlot[auditor];
        address last = _registry[_registry.length - 1];
        _registry[slot - 1] = last;
        _registrySlot[last] = slot;
        _registry.pop();
        delete _registrySlot[auditor];
    }

    /// @dev End of the current round's commit window.
    function _commitEnd(Dispute storage d) internal view returns (uint64) {
        return d.drawnAt + COMMIT_WINDOW;
    }

    /// @dev End of the current round's reveal window.
    function _revealEnd(Dispute storage d) internal view returns (uint64) {
        return d.drawnAt + COMMIT_WINDOW + REVEAL_WINDOW;
    }

    /// @dev The current time, as every window is stored.
    function _now() internal view returns (uint64) {
        return uint64(block.timestamp);
    }
}
