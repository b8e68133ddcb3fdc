// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IRandomness} from "./interfaces/IRandomness.sol";
import {BLS12381} from "./libraries/BLS12381.sol";
import {
    InvalidBeaconParameters,
    InvalidBeaconSignature,
    MalformedBeaconSignature,
    NoRoundZero,
    RoundOutOfRange
} from "./Errors.sol";

/// @title DrandBeacon
/// @notice The drand randomness backend (protocol section 3): a round's value is on-chain once anyone
/// submits the round's signature and it verifies against the network's public key. Nobody can predict
/// a round before the network signs it, no single party can bias it (a threshold of the League of
/// Entropy's nodes signs), and a submitted round stays readable forever.
/// @dev The scheme is drand's `bls-unchained-g1-rfc9380` (quicknet): round r's signature is the BLS
/// signature on G1 of `sha256(uint64 r, big-endian)`, the public key on G2, and the round's randomness
/// is `sha256` of the signature's 48-byte compressed encoding, the value drand's HTTP API publishes.
/// Submitters pass the signature uncompressed (EIP-2537's 128 bytes): the chain checks it is a point
/// of the subgroup and the contract compresses it, so each round has exactly one value.
/// As a randomness backend, an action at time t is randomised by the first round published at or after
/// t + DELAY: DELAY covers how far a block's timestamp may lag the moment its builder has seen drand's
/// latest round (a slot on Ethereum; a rollup's sequencer drift), so nobody acting knows the target.
contract DrandBeacon is IRandomness {
    /// @notice The hash-to-curve domain tag of drand's G1 scheme.
    bytes public constant DST = "BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_";
    /// @notice How long after its time a target round nobody submitted stays awaited. Past it the target
    /// is gone, as a block hash after 256 blocks: a batch then samples every interval, a panel re-arms.
    /// So neither a halted drand nor a round nobody bothers to submit locks a task; and a gone target
    /// hurts only a cheating provider, who could have submitted the round itself.
    uint256 public constant TARGET_LIFETIME = 1 days;

    /// @notice Unix time of round 1.
    uint64 public immutable GENESIS;
    /// @notice Seconds between rounds.
    uint64 public immutable PERIOD;
    /// @notice Seconds between an action's block timestamp and the earliest time of its target round.
    uint64 public immutable DELAY;

    // The network's public key, EIP-2537's 256-byte G2 encoding, in eight immutable words (reading
    // them costs no storage access).
    bytes32 private immutable PK_0;
    bytes32 private immutable PK_1;
    bytes32 private immutable PK_2;
    bytes32 private immutable PK_3;
    bytes32 private immutable PK_4;
    bytes32 private immutable PK_5;
    bytes32 private immutable PK_6;
    bytes32 private immutable PK_7;

    mapping(uint64 round => bytes32 randomness) private _randomness;

    /// @notice Round `round` verified: its value is `randomness` from now on.
    /// @param round The round.
    /// @param randomness sha256 of the round's compressed signature (drand's `randomness`).
    /// @param by Who submitted it.
    event RoundVerified(uint64 indexed round, bytes32 randomness, address indexed by);

    /// @param publicKey The network's public key, a G2 point in EIP-2537's 256-byte encoding (drand
    /// publishes it compressed: `ovig_node.protocol.drand` decompresses it).
    /// @param genesis Unix time of round 1.
    /// @param period Seconds between rounds.
    /// @param delay DELAY, at least 1 second.
    constructor(bytes memory publicKey, uint64 genesis, uint64 period, uint64 delay) {
        if (publicKey.length != BLS12381.G2_BYTES || genesis == 0 || period == 0 || delay == 0) {
            revert InvalidBeaconParameters();
        }
        if (keccak256(publicKey) == keccak256(new bytes(BLS12381.G2_BYTES))) revert InvalidBeaconParameters();
        // A pairing with the G1 point at infinity is 1 for every valid G2 point; the precompile refuses a
        // key off the curve or outside the subgroup, and a chain without EIP-2537 answers nothing. The
        // pairing with G1's generator is not 1 for a key other than infinity: a precompile that answers
        // 1 to everything (a stub) would accept any signature, and is refused here.
        if (!BLS12381.pairingCheck(abi.encodePacked(new bytes(BLS12381.G1_BYTES), publicKey))) {
            revert InvalidBeaconParameters();
        }
        bytes memory generator = abi.encodePacked(
            BLS12381.G1_X_HI,
            BLS12381.G1_X_LO,
            BLS12381.G1_Y_HI,
            BLS12381.G1_Y_LO
        );
        if (BLS12381.pairingCheck(abi.encodePacked(generator, publicKey))) revert InvalidBeaconParameters();
        bytes32[8] memory words = abi.decode(publicKey, (bytes32[8]));
        (PK_0, PK_1, PK_2, PK_3) = (words[0], words[1], words[2], words[3]);
        (PK_4, PK_5, PK_6, PK_7) = (words[4], words[5], words[6], words[7]);
        GENESIS = genesis;
        PERIOD = period;
        DELAY = delay;
    }

    /// @notice Verify round `round`'s signature and record its value. Anyone may call; a round already
    /// recorded returns its value without checking the signature again.
    /// @param round The round (from 1).
    /// @param signature Its signature, a G1 point in EIP-2537's 128-byte encoding.
    /// @return randomness The round's value.
    function submitRound(uint64 round, bytes calldata signature) external returns (bytes32 randomness) {
        randomness = _randomness[round];
        if (randomness != bytes32(0)) return randomness;
        if (round == 0) revert NoRoundZero();
        if (signature.length != BLS12381.G1_BYTES) revert MalformedBeaconSignature(signature.length);
        bytes memory message = abi.encodePacked(sha256(abi.encodePacked(round)));
        if (!BLS12381.verify(signature, publicKey(), message, DST)) revert InvalidBeaconSignature(round);
        randomness = sha256(BLS12381.compressG1(signature));
        _randomness[round] = randomness;
        emit RoundVerified(round, randomness, msg.sender);
    }

    /// @inheritdoc IRandomness
    function targetOf(uint256, uint256 timestamp) external view returns (uint64) {
        return roundAt(timestamp + DELAY);
    }

    /// @inheritdoc IRandomness
    /// @dev Ready once submitted; also ready, and gone (zero), TARGET_LIFETIME after the round's time if
    /// nobody submitted it.
    function valueOf(uint64 target) external view returns (bool ready, bytes32 value) {
        value = _randomness[target];
        if (value != bytes32(0)) return (true, value);
        if (target == 0) return (false, value);
        return (block.timestamp >= GENESIS + uint256(target - 1) * PERIOD + TARGET_LIFETIME, value);
    }

    /// @notice A recorded round's value.
    /// @param round The round.
    /// @return Its value; zero until someone submits it.
    function randomnessOf(uint64 round) external view returns (bytes32) {
        return _randomness[round];
    }

    /// @notice The first round published at or after `timestamp`.
    /// @dev A round is published at its time: a consumer that needs a round nobody has seen when it
    /// acts asks for one at least a period (plus the chain's clock drift) after its own timestamp.
    /// @param timestamp A Unix time.
    /// @return The round (1 for any time up to genesis).
    function roundAt(uint256 timestamp) public view returns (uint64) {
        if (timestamp <= GENESIS) return 1;
        uint256 round = (timestamp - GENESIS + PERIOD - 1) / PERIOD + 1;
        if (round > type(uint64).max) revert RoundOutOfRange(timestamp);
        return uint64(round);
    }

    /// @notice When round `round` is published.
    /// @param round The round (from 1).
    /// @return Its Unix time.
    function roundTime(uint64 round) external view returns (uint256) {
        if (round == 0) revert NoRoundZero();
        return GENESIS + uint256(round - 1) * PERIOD;
    }

    /// @notice The network's public key.
    /// @return EIP-2537's 256-byte G2 encoding.
    function publicKey() public view returns (bytes memory) {
        return abi.encodePacked(PK_0, PK_1, PK_2, PK_3, PK_4, PK_5, PK_6, PK_7);
    }
}
