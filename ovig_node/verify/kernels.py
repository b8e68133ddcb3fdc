"""The compiled passes behind exact percentiles of replay differences (:mod:`ovig_node.verify.stats`).

Every pass walks a claimed tensor ``c`` and its replay ``r`` block by block, computing ``|r - c|`` and
``|r - c| / (|c| + eps)`` in the tensors' dtype into small buffers that stay in cache, so neither
difference is ever stored whole. For non-negative floats the IEEE bit pattern orders like the value
(NaN after +inf, as in ``numpy.sort``), so the passes compare and bin bit patterns as integers.

- :func:`bracket_pass`, the fast path: for each wanted rank, a bracket ``[lo, hi]`` of bit patterns that
  a sample says holds it. It counts the differences below each bracket and copies those inside one, a
  few percent of the signal. Every step is a compare or an add over a cache-resident block, which the
  compiler vectorises. Exact zeros are never copied (``lo >= 1``): an honest replay leaves many
  coordinates bit-identical, and a rank among them needs no copy.
- :func:`count_bins` and :func:`copy_bins`, the fallback when a bracket missed its rank: the first counts
  every difference into one of ``BINS`` bins by the top bits of its pattern (in float32 a bin is a value
  range of relative width 1/256; bin 0 holds exact zeros, the tiniest subnormals share bin 1) and keeps
  each coordinate's bin as a 16-bit key. The second reads only the keys and recomputes the differences of
  the coordinates whose bin is wanted. Exact whatever the data, and slower.

Each thread ``t`` of ``threads`` takes the same slice ``[n*t/threads, n*(t+1)/threads)`` of every tensor.
``error_model="numpy"``: a division is IEEE division, without the zero check that keeps a loop scalar.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

# Fork-safe, and thread-safe under the caller's lock (the watcher judges intervals from a thread pool).
numba.config.THREADING_LAYER = "workqueue"

KEY_BITS = 16
BINS = 1 << KEY_BITS  # bin 0 holds exact zeros; max(1, magnitude bits >> shift) the rest
BLOCK = 2048  # values per buffer: a few pages that stay in L1/L2 while counted


def key_layout(dtype: np.dtype) -> tuple[type, np.unsignedinteger, np.unsignedinteger]:
    """(unsigned type of the same width, mask of the magnitude bits, shift to ``KEY_BITS``) of ``dtype``."""
    if dtype == np.float32:
        return np.uint32, np.uint32(0x7FFF_FFFF), np.uint32(31 - KEY_BITS)
    if dtype == np.float64:
        return np.uint64, np.uint64(0x7FFF_FFFF_FFFF_FFFF), np.uint64(63 - KEY_BITS)
    raise TypeError(f"differences are taken in float32 or float64, not {dtype}")


@njit(cache=True, inline="always")
def _key(bits, mask, shift):  # type: ignore[no-untyped-def]
    magnitude = bits & mask
    key = np.int64(magnitude >> shift)
    if key == 0 and magnitude != 0:
        key = np.int64(1)
    return key


@njit(cache=True, inline="always", error_model="numpy")
def differences(r, c, eps, d, q):  # type: ignore[no-untyped-def]
    """``d = |r - c|`` and ``q = d / (|c| + eps)``, the two differences every pass (and the sample) takes."""
    for j in range(r.size):  # slices, not r[lo + j]: an index that cannot be negative lets the loop vectorise
        x = abs(r[j] - c[j])
        d[j] = x
        q[j] = x / (abs(c[j]) + eps)


@njit(parallel=True, cache=True, error_model="numpy")
def count_bins(r, c, eps, utype, mask, shift, hist_abs, hist_rel, keys_abs, keys_rel):  # type: ignore[no-untyped-def]
    """Add the bin counts of ``|r - c|`` and of the relative differences to row t of the histograms, and
    write each coordinate's bins to ``keys_*``."""
    threads = hist_abs.shape[0]
    n = r.size
    for t in prange(threads):
        d = np.empty(BLOCK, r.dtype)
        q = np.empty(BLOCK, r.dtype)
        d_bits = d.view(utype)
        q_bits = q.view(utype)
        stop = n * (t + 1) // threads
        for lo in range(n * t // threads, stop, BLOCK):
            hi = min(lo + BLOCK, stop)
            differences(r[lo:hi], c[lo:hi], eps, d, q)  # apart from the counting, so that it vectorises
            for j in range(hi - lo):
                key_abs = _key(d_bits[j], mask, shift)
                key_rel = _key(q_bits[j], mask, shift)
                keys_abs[lo + j] = key_abs
                keys_rel[lo + j] = key_rel
                hist_abs[t, key_abs] += 1
                hist_rel[t, key_rel] += 1


@njit(parallel=True, cache=True, error_model="numpy")
def copy_bins(r, c, eps, keys_abs, keys_rel, wanted_abs, wanted_rel, out_abs, out_rel, cursor):  # type: ignore[no-untyped-def]
    """Copy the differences whose bin is wanted to ``out_*`` at thread t's cursor (row t), advancing it."""
    threads = cursor.shape[0]
    n = r.size
    for t in prange(threads):
        next_abs = cursor[t, 0]
        next_rel = cursor[t, 1]
        for i in range(n * t // threads, n * (t + 1) // threads):
            if wanted_abs[keys_abs[i]]:
                out_abs[next_abs] = abs(r[i] - c[i])
                next_abs += 1
            if wanted_rel[keys_rel[i]]:
                out_rel[next_rel] = abs(r[i] - c[i]) / (abs(c[i]) + eps)
                next_rel += 1
        cursor[t, 0] = next_abs
        cursor[t, 1] = next_rel


@njit(cache=True, inline="always")
def _count_and_mark(bits, m, lo, hi, counts, inside):  # type: ignore[no-untyped-def]
    """Add to ``counts[k]`` how many of the first ``m`` patterns are under bracket k and how many are not
    above it; mark in ``inside`` (1 or 0) those in a bracket."""
    for j in range(m):
        inside[j] = 0
    for k in range(lo.size):
        low = lo[k]
        high = hi[k]
        under = np.int32(0)  # int32 keeps twice as many lanes per vector as numba's default int64
        up_to = np.int32(0)
        for j in range(m):
            x = bits[j]
            under = np.int32(under + (x < low))
            up_to = np.int32(up_to + (x <= high))
            inside[j] = inside[j] | np.int32((x >= low) & (x <= high))
        counts[k, 0] += under
        counts[k, 1] += up_to


@njit(parallel=True, cache=True, error_model="numpy")
def bracket_pass(r, c, eps, itype, lo_abs, hi_abs, lo_rel, hi_rel, counts, out_abs, out_rel, filled):  # type: ignore[no-untyped-def]
    """For both kinds of difference: add to ``counts[t, kind, k]`` how many differences lie under bracket k
    and how many not above it (as bit patterns of type ``itype``), and append those inside a bracket to
    row t of ``out_*`` at ``filled[t, kind]``, advancing it. A row that would overflow gets
    ``filled[t, 0] = -1`` and no more."""
    threads = counts.shape[0]
    n = r.size
    room = out_abs.shape[1] - BLOCK  # the copy below writes every value of a block and keeps the marked ones
    for t in prange(threads):
        d = np.empty(BLOCK, r.dtype)
        q = np.empty(BLOCK, r.dtype)
        d_bits = d.view(itype)
        q_bits = q.view(itype)
        in_abs = np.empty(BLOCK, np.int32)
        in_rel = np.empty(BLOCK, np.int32)
        next_abs = filled[t, 0]
        next_rel = filled[t, 1]
        row_abs = out_abs[t]
        row_rel = out_rel[t]
        stop = n * (t + 1) // threads
        for lo in range(n * t // threads, stop, BLOCK):
            if next_abs < 0 or next_abs > room or next_rel > room:
                next_abs = -1
                break
            m = min(BLOCK, stop - lo)
            differences(r[lo : lo + m], c[lo : lo + m], eps, d, q)
            _count_and_mark(d_bits, m, lo_abs, hi_abs, counts[t, 0], in_abs)
            _count_and_mark(q_bits, m, lo_rel, hi_rel, counts[t, 1], in_rel)
            for j in range(m):  # branch-free: a mispredicted branch per copied value costs more
                row_abs[next_abs] = d[j]
                next_abs += in_abs[j]
                row_rel[next_rel] = q[j]
                next_rel += in_rel[j]
        filled[t, 0] = next_abs
        filled[t, 1] = next_rel
