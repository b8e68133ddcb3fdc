// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";

import {NothingToWithdraw, TransferFailed} from "../Errors.sol";

/// @title PullPayments
/// @notice The one payout path of both OVIG contracts (protocol 4.1, `withdraw`): every payout is a
/// credit its owner pulls; nothing is ever pushed. Money taken out of circulation is counted in
/// `burned` and stays in the contract, owed to nobody.
/// @dev Money invariant of an inheriting contract: its balance equals what it holds for others plus
/// every unpaid credit plus `burned`.
abstract contract PullPayments is ReentrancyGuard {
    /// @notice Unpaid credit of each account, pulled with `withdraw`.
    mapping(address account => uint256 amount) public credits;
    /// @notice Wei taken out of circulation: forfeited shares, expired commits, rounding dust.
    uint256 public burned;

    /// @notice `account` may now withdraw `amount` more.
    /// @param account Who is credited.
    /// @param source The task (TrainingTasks) or dispute (AuditCommittee; 0: an exit) it comes from.
    /// @param amount The amount, in wei.
    event Credited(address indexed account, uint256 indexed source, uint256 amount);

    /// @notice `amount` wei were burned (kept in the contract, owed to nobody).
    /// @param source The task or dispute the money comes from.
    /// @param amount The amount.
    event Burned(uint256 indexed source, uint256 amount);

    /// @notice `account` withdrew its whole credit.
    /// @param account Who withdrew.
    /// @param amount The amount, in wei.
    event Withdrawn(address indexed account, uint256 amount);

    /// @notice Withdraw the caller's whole credit.
    function withdraw() external nonReentrant {
        uint256 amount = credits[msg.sender];
        if (amount == 0) revert NothingToWithdraw(msg.sender);
        // INVARIANT: the credit is zeroed before the transfer, so a re-entrant call finds nothing.
        credits[msg.sender] = 0;
        emit Withdrawn(msg.sender, amount);
        (bool ok, ) = msg.sender.call{value: amount}("");
        if (!ok) revert TransferFailed(msg.sender, amount);
    }

    /// @dev Credits `amount` to `account` (nothing for zero).
    function _credit(address account, uint256 source, uint256 amount) internal {
        if (amount == 0) return;
        credits[account] += amount;
        emit Credited(account, source, amount);
    }

    /// @dev Moves `amount` to `burned` (nothing for zero).
    function _burn(uint256 source, uint256 amount) internal {
        if (amount == 0) return;
        burned += amount;
        emit Burned(source, amount);
    }
}
