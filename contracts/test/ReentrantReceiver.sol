// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title ReentrantReceiver
/// @notice Test double, never deployed outside tests: a contract account that calls a target with
/// arbitrary data and, when paid, calls it again with `reentryData` (a re-entrancy attack on withdraw).
contract ReentrantReceiver {
    /// @notice A forwarded call reverted.
    /// @param data Its revert data.
    error CallFailed(bytes data);

    /// @notice The contract under attack.
    address public immutable target;
    /// @notice Calldata sent back to `target` from `receive`; empty: just accept the payment.
    bytes public reentryData;
    /// @notice Whether a failed re-entrant call is swallowed (true) or makes the payment fail (false).
    bool public swallow;
    /// @notice Whether the last re-entrant call succeeded.
    bool public reentrySucceeded;
    /// @notice Return or revert data of the last re-entrant call.
    bytes public reentryResult;
    /// @notice Total wei received.
    uint256 public received;

    /// @param target_ The contract under attack.
    constructor(address target_) {
        target = target_;
    }

    /// @notice Set what `receive` does.
    /// @param data Calldata of the re-entrant call (empty for none).
    /// @param swallow_ Whether its failure is swallowed.
    function arm(bytes calldata data, bool swallow_) external {
        reentryData = data;
        swallow = swallow_;
    }

    /// @notice Call `target` with `data` and `msg.value`, bubbling a revert as CallFailed.
    /// @param data The calldata.
    /// @return result The call's return data.
    function execute(bytes calldata data) external payable returns (bytes memory result) {
        bool ok;
        (ok, result) = target.call{value: msg.value}(data);
        if (!ok) revert CallFailed(result);
    }

    /// @notice Record the payment and, if armed, re-enter the target.
    receive() external payable {
        received += msg.value;
        if (reentryData.length == 0) return;
        (bool ok, bytes memory result) = target.call(reentryData);
        reentrySucceeded = ok;
        reentryResult = result;
        if (!ok && !swallow) revert CallFailed(result);
    }
}
