// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title BLS12381
/// @notice What a drand beacon round's verification needs (protocol section 3), on the BLS12-381
/// precompiles of EIP-2537: hash-to-curve onto G1 (RFC 9380, `expand_message_xmd` with SHA-256, the
/// simplified SWU map), the pairing check of a signature on G1 against a public key on G2, and the
/// compressed (ZCash) encoding of a G1 point, whose SHA-256 is drand's `randomness`.
/// @dev Points use EIP-2537's encoding: an Fp element is 64 bytes, big-endian, its top 16 bytes zero;
/// a G1 point is x || y (128 bytes); a G2 point is x.c0 || x.c1 || y.c0 || y.c1 (256 bytes). The
/// precompiles reject coordinates not below the field modulus, points off the curve, and (the pairing)
/// points outside the prime-order subgroup, so every point here is checked by the chain itself.
library BLS12381 {
    /// @notice An EIP-2537 precompile failed: a malformed point (off the curve, outside the subgroup,
    /// a coordinate not below the modulus), a chain without the precompiles, or a call that ran out of gas
    /// (a caller that forwards too little gas sees this error too).
    /// @param precompile Its address.
    error BlsPrecompileFailed(address precompile);

    /// @notice expand_message_xmd: RFC 9380 hashes a domain tag longer than 255 bytes first; not supported.
    /// @param length The tag's length.
    error DstTooLong(uint256 length);

    uint256 internal constant G1_BYTES = 128;
    uint256 internal constant G2_BYTES = 256;

    address private constant MODEXP = address(0x05);
    address private constant G1_ADD = address(0x0b);
    address private constant PAIRING_CHECK = address(0x0f);
    address private constant MAP_FP_TO_G1 = address(0x10);

    // The field modulus p as 64 bytes (EIP-2537's Fp width), for reductions by MODEXP.
    bytes32 private constant P_HI = 0x000000000000000000000000000000001a0111ea397fe69a4b1ba7b6434bacd7;
    bytes32 private constant P_LO = 0x64774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab;
    // (p - 1) / 2: a y above it is the "larger" root, the sign bit of the compressed encoding.
    uint256 private constant HALF_HI = 0x0d0088f51cbff34d258dd3db21a5d66b;
    uint256 private constant HALF_LO = 0xb23ba5c279c2895fb39869507b587b120f55ffff58a9ffffdcff7fffffffd555;

    // G1's generator.
    bytes32 internal constant G1_X_HI = 0x0000000000000000000000000000000017f1d3a73197d7942695638c4fa9ac0f;
    bytes32 internal constant G1_X_LO = 0xc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb;
    bytes32 internal constant G1_Y_HI = 0x0000000000000000000000000000000008b3f481e3aaa0f1a09e30ed741d8ae4;
    bytes32 internal constant G1_Y_LO = 0xfcf5e095d5d00af600db18cb2c04b3edd03cc744a2888ae40caa232946c5e7e1;

    // -G2, the negated generator of G2: e(sig, -G2) * e(H(m), pk) == 1 is e(sig, G2) == e(H(m), pk).
    bytes32 private constant NEG_G2_0 = 0x00000000000000000000000000000000024aa2b2f08f0a91260805272dc51051;
    bytes32 private constant NEG_G2_1 = 0xc6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8;
    bytes32 private constant NEG_G2_2 = 0x0000000000000000000000000000000013e02b6052719f607dacd3a088274f65;
    bytes32 private constant NEG_G2_3 = 0x596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e;
    bytes32 private constant NEG_G2_4 = 0x000000000000000000000000000000000d1b3cc2c7027888be51d9ef691d77bc;
    bytes32 private constant NEG_G2_5 = 0xb679afda66c73f17f9ee3837a55024f78c71363275a75d75d86bab79f74782aa;
    bytes32 private constant NEG_G2_6 = 0x0000000000000000000000000000000013fa4d4a0ad8b1ce186ed5061789213d;
    bytes32 private constant NEG_G2_7 = 0x993923066dddaf1040bc3ff59f825c78df74f2d75467e25e0f55f8a00fa030ed;

    /// @notice Whether `signature` is a signature of `message` under `publicKey` (BLS on G1, public key
    /// on G2, hash-to-curve with domain tag `dst`).
    /// @param signature A G1 point (128 bytes).
    /// @param publicKey A G2 point (256 bytes).
    /// @param message The signed message.
    /// @param dst The hash-to-curve domain separation tag (at most 255 bytes).
    /// @return Whether e(signature, G2) == e(H(message), publicKey). Reverts with `BlsPrecompileFailed`
    /// when either point is malformed.
    function verify(
        bytes memory signature,
        bytes memory publicKey,
        bytes memory message,
        bytes memory dst
    ) internal view returns (bool) {
        bytes memory negG2 = abi.encodePacked(
            NEG_G2_0,
            NEG_G2_1,
            NEG_G2_2,
            NEG_G2_3,
            NEG_G2_4,
            NEG_G2_5,
            NEG_G2_6,
            NEG_G2_7
        );
        return pairingCheck(abi.encodePacked(signature, negG2, hashToG1(message, dst), publicKey));
    }

    /// @notice Whether the product of the pairings of the (G1, G2) pairs in `pairs` is 1.
    /// @param pairs Concatenated pairs, 384 bytes each.
    /// @return The check's outcome; reverts with `BlsPrecompileFailed` on a malformed point.
    function pairingCheck(bytes memory pairs) internal view returns (bool) {
        return uint256(bytes32(_precompile(PAIRING_CHECK, pairs, 32))) == 1;
    }

    /// @notice hash_to_curve onto G1 (RFC 9380 section 3, suite BLS12381G1_XMD:SHA-256_SSWU_RO_).
    /// @dev EIP-2537's map clears the cofactor of each image; clearing is linear, so the sum of the two
    /// cleared images is the cleared sum RFC 9380 defines.
    /// @param message The message.
    /// @param dst The domain separation tag (at most 255 bytes).
    /// @return The G1 point (128 bytes).
    function hashToG1(bytes memory message, bytes memory dst) internal view returns (bytes memory) {
        bytes32[4] memory b = expandMessageXmd(message, dst);
        bytes memory q0 = _precompile(MAP_FP_TO_G1, _reduce(b[0], b[1]), G1_BYTES);
        bytes memory q1 = _precompile(MAP_FP_TO_G1, _reduce(b[2], b[3]), G1_BYTES);
        return _precompile(G1_ADD, abi.encodePacked(q0, q1), G1_BYTES);
    }

    /// @notice expand_message_xmd with SHA-256 (RFC 9380 section 5.3.1) for 128 bytes: the two field
    /// elements' worth (L = 64 bytes each) that hash_to_field draws for a G1 point.
    /// @param message The message.
    /// @param dst The domain separation tag (at most 255 bytes).
    /// @return b The 128 uniform bytes as four words b_1 .. b_4.
    function expandMessageXmd(bytes memory message, bytes memory dst) internal pure returns (bytes32[4] memory b) {
        if (dst.length > 255) revert DstTooLong(dst.length);
        bytes memory dstPrime = abi.encodePacked(dst, uint8(dst.length));
        // Z_pad (one SHA-256 block of zeros) || msg || I2OSP(128, 2) || I2OSP(0, 1) || DST_prime
        bytes32 b0 = sha256(abi.encodePacked(new bytes(64), message, uint16(128), uint8(0), dstPrime));
        b[0] = sha256(abi.encodePacked(b0, uint8(1), dstPrime));
        for (uint8 i = 1; i < 4; ++i) {
            b[i] = sha256(abi.encodePacked(b0 ^ b[i - 1], i + 1, dstPrime));
        }
    }

    /// @notice The compressed encoding (ZCash's, as drand publishes signatures) of a G1 point: x with the
    /// compression flag, and the sign flag when y is the larger of its two roots.
    /// @param point A G1 point (128 bytes), not the point at infinity, its coordinates below p.
    /// @return The 48 bytes.
    function compressG1(bytes memory point) internal pure returns (bytes memory) {
        uint256 xHi;
        uint256 xLo;
        uint256 yHi;
        uint256 yLo;
        assembly {
            xHi := mload(add(point, 32))
            xLo := mload(add(point, 64))
            yHi := mload(add(point, 96))
            yLo := mload(add(point, 128))
        }
        bool larger = yHi > HALF_HI || (yHi == HALF_HI && yLo > HALF_LO);
        // x < p < 2^381 leaves the top three bits of its 48 bytes free for the flags.
        uint128 top = uint128(xHi) | (uint128(larger ? 0xa0 : 0x80) << 120);
        return abi.encodePacked(top, xLo);
    }

    /// @dev OS2IP(hi || lo) mod p as an EIP-2537 Fp element (64 bytes), by MODEXP with exponent 1.
    function _reduce(bytes32 hi, bytes32 lo) private view returns (bytes memory) {
        bytes memory input = abi.encodePacked(uint256(64), uint256(1), uint256(64), hi, lo, uint8(1), P_HI, P_LO);
        return _precompile(MODEXP, input, 64);
    }

    /// @dev Calls a precompile and requires exactly `outLength` bytes back: on a chain without the
    /// precompile the call succeeds with no output, which must not read as a pairing result of zero.
    function _precompile(address precompile, bytes memory input, uint256 outLength) private view returns (bytes memory out) {
        bool ok;
        uint256 returned;
        out = new bytes(outLength);
        assembly {
            ok := staticcall(gas(), precompile, add(input, 32), mload(input), add(out, 32), outLength)
            returned := returndatasize()
        }
        if (!ok || returned != outLength) revert BlsPrecompileFailed(precompile);
    }
}
