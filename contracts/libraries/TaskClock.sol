// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {OpenedInterval, Windows} from "../Types.sol";

/// @title TaskClock
/// @notice Every time window of a task (protocol sections 4.1-4.2 and 8.3), in one place: where each one ends,
/// which moments fall inside it, and how a no-decision reopens an interval's window. The task contracts
/// decide what each window guards (their INVARIANT comments), revert, store the ends, and keep the task's
/// latest ones (Task.challengeEnd, Task.reopenedUntil); this library only computes, and records an
/// interval's reopening, so two guards of one window never disagree on its bounds.
/// Windows are half-open, [start, end): an action "within" one is allowed while `isBefore(end)` holds, and
/// the action that follows its expiry from the moment it fails. Times are uint64 seconds, as stored; each
/// window is at most MAX_WINDOW long (postTask checks it), so no end computed here overflows.
/// The windows, and what each promises:
/// - the commit deadline (TaskTerms.deadline): the provider accepts and commits before it; from it on, a task
///   whose batches are not all committed may be abandoned.
/// - a drawn batch's opening window, openingWindowEnd from its drawSeed (Batch.windowEnd): the provider opens
///   the sample within it; from its end the task may be slashed (slashUnopened).
/// - an opened batch's challenge window, [Batch.openedAt, challengeWindowEnd from then) (Batch.windowEnd):
///   watchers commit challenges of its intervals, and ask for targeted openings, within it.
/// - a request's window, openingWindowEnd from its requestOpening (OpeningRequest.openBy): the provider opens
///   the requested interval within it; from its end the task may be slashed (slashUnopenedRequest).
/// - an interval's challenge window: its first one (its batch's, or challengeWindowEnd from its request's
///   opening: TrainingTasks._firstWindow), moved later each time a dispute of it ends with no decision
///   (reopen, windowEnd), less the latest gap in which it had closed (inGap). A commit challenges an interval
///   only if it was made within that interval's window.
/// - a commit's reveal window, revealWindowEnd from its commit: the challenger reveals within it; from its end
///   the commit may be expired.
/// - the task's latest challenge window end (Task.challengeEnd): finalize waits for it; and the latest end of
///   a reopened window (Task.reopenedUntil): slashUnopened, slashUnopenedRequest and abandon wait for it.
/// @dev Internal functions only: inlined into the task contract, nothing deployed or called. A window end
/// takes its start (mostly `current()`) as a parameter rather than reading the clock itself: so written,
/// the optimizer inlines every function here and each action costs the gas it did with the arithmetic
/// written inline (bench/gas.py); a window end that read the clock itself stayed a call, at up to 300 gas.
library TaskClock {
    /// @notice The current time, as every window and deadline is stored.
    /// @return `block.timestamp` as uint64.
    function current() internal view returns (uint64) {
        return uint64(block.timestamp);
    }

    /// @notice The one time comparison: windows are half-open, so an action "within" a window that ends
    /// at `end` is allowed while this holds, and the expiry action from the moment it fails.
    /// @param end A window's end, or a deadline.
    /// @return Whether now is before `end`.
    function isBefore(uint64 end) internal view returns (bool) {
        return current() < end;
    }

    /// @notice End of an opening window starting at `start`: a drawn batch's, or a request's (its openBy).
    /// @param w The task's windows.
    /// @param start When it opened (drawSeed, or requestOpening).
    /// @return `start + openingWindow`.
    function openingWindowEnd(Windows storage w, uint64 start) internal view returns (uint64) {
        return start + w.openingWindow;
    }

    /// @notice End of a challenge window starting at `start`: an opened batch's, a requested interval's first
    /// one, or an interval's reopened one.
    /// @param w The task's windows.
    /// @param start When it opened (the opening, or the no-decision that reopens it).
    /// @return `start + challengeWindow`.
    function challengeWindowEnd(Windows storage w, uint64 start) internal view returns (uint64) {
        return start + w.challengeWindow;
    }

    /// @notice End of a commit's reveal window: the challenger reveals before it; from it on the commit may
    /// be expired. At most MAX_REVEAL_WINDOW after the commit, so a pending commit holds back slashUnopened
    /// and abandon for at most that long.
    /// @param w The task's windows.
    /// @param committedAt When the commit was made.
    /// @return `committedAt + challengeRevealWindow`.
    function revealWindowEnd(Windows storage w, uint64 committedAt) internal view returns (uint64) {
        return committedAt + w.challengeRevealWindow;
    }

    /// @notice End of an opened interval's challenge window: its first one's, or its reopened one.
    /// @param firstEnd End of its first window: its batch's, or challengeWindowEnd from its request's opening.
    /// @param iv The interval's challenge state.
    /// @return The later of the two.
    function windowEnd(uint64 firstEnd, OpenedInterval storage iv) internal view returns (uint64) {
        return iv.windowEnd > firstEnd ? iv.windowEnd : firstEnd;
    }

    /// @notice Whether `at` is in the interval's latest gap, [gapStart, reopenedAt): from its window's end as
    /// it stood when a no-decision reopened it after it had closed, to that reopening. A commit made then was
    /// made while the interval's window was closed, though it comes before the reopened window's end.
    /// @param iv The interval's challenge state.
    /// @param at A moment (a commit's).
    /// @return Whether `at` is in the gap (never, if the window was only ever extended).
    function inGap(OpenedInterval storage iv, uint64 at) internal view returns (bool) {
        return iv.reopenedAt != 0 && at >= iv.gapStart && at < iv.reopenedAt;
    }

    /// @notice No decision: the interval may be challenged again until `end`, one challenge window from now
    /// (challengeWindowEnd). Writes its window's new end, and its gap if its window had closed.
    /// @param iv The interval's challenge state.
    /// @param openUntil End of its window as it stands (windowEnd).
    /// @param end End of the reopened window.
    function reopen(OpenedInterval storage iv, uint64 openUntil, uint64 end) internal {
        // A window still open is extended; a closed one reopens from now, so a commit made while it was
        // closed (from its end as it stood, an earlier extension included, until now) stays outside it.
        if (!isBefore(openUntil)) {
            iv.gapStart = openUntil;
            iv.reopenedAt = current();
        }
        iv.windowEnd = end;
    }
}
