"""The compiled passes behind exact percentiles of replay differences (:mod:`ovig_node.verify.stats`).

Every pass walks a claimed tensor ``c`` and its replay ``r`` block by block, computing ``|r - c|`` and
``|r - c| / (|c| + eps)`` in the tensors' dtype into small buffers that stay in cache, so neither
difference is ever stored whole. For non-negative floats the IEEE bit pattern orders like the value
(NaN after +inf, as in ``numpy.sort``), so the passes compare and bin bit patterns as integers.

- :func:`bracket_pass`, the fast path: for each wanted rank, a bracket ``[lo, hi]`` of bit patterns that
  a sample says holds it. It counts the differences below each bracket and copies those inside one, a
  few percent of the signal. The counting is compares and adds over a cache-resident block, which the
  compiler vectorises; the copy reads the marks eight at a time. Exact zeros are never copied
  (``lo >= 1``): an honest replay leaves many coordinates bit-identical, and a rank among them needs no
  copy. One call covers every tensor of a signal (a call costs about 0.1 ms, a model has hundreds).
- :func:`count_bins` and :func:`copy_bins`, the fallback when a bracket missed its rank: the first counts
  every difference into one of ``BINS`` bins by the top bits of its pattern (in float32 a bin is a value
  range of relative width 1/256; bin 0 holds exact zeros, the tiniest subnormals share bin 1) and keeps
  each coordinate's bin as a 16-bit key. The second reads only the keys and recomputes the differences of
  the coordinates whose bin is wanted. Exact whatever the data, and slower.

In the fallback each thread ``t`` of ``threads`` takes the same slice ``[n*t/threads, n*(t+1)/threads)`` of
every tensor.
``error_model="numpy"``: a division is IEEE division, without the zero check that keeps a loop scalar.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

# Fork-safe, and thread-safe under the caller's lock (the watcher judges intervals from a thread pool).
# numba.config defines its options at run time (from the environment), so mypy sees none of them.
numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]

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
def _key(bits, mask, shift):
    magnitude = bits & mask
    key = np.int64(magnitude >> shift)
    if key == 0 and magnitude != 0:
        key = np.int64(1)
    return key


@njit(cache=True, inline="always", error_model="numpy")
def differences(r, c, eps, d, q):
    """``d = |r - c|`` and ``q = d / (|c| + eps)``, the two differences every pass (and the sample) takes."""
    for j in range(r.size):  # slices, not r[lo + j]: an index that cannot be negative lets the loop vectorise
        x = abs(r[j] - c[j])
        d[j] = x
        q[j] = x / (abs(c[j]) + eps)


@njit(parallel=True, cache=True, error_model="numpy")
def sample_differences(rs, cs, tensor, index, eps, d, q, threads):
    """``d[i]`` and ``q[i]``: the differences at coordinate ``index[i]`` of tensor ``tensor[i]`` of the lists
    ``rs`` and ``cs`` (``tensor`` ascending), in ``threads`` parts."""
    m = tensor.size
    for t in prange(threads):
        i = m * t // threads
        stop = m * (t + 1) // threads
        while i < stop:  # a run of samples of one tensor
            k = tensor[i]
            r = rs[k]
            c = cs[k]
            end = i
            while end < stop and tensor[end] == k:
                end += 1
            for s in range(i, end):
                j = index[s]
                differences(r[j : j + 1], c[j : j + 1], eps, d[s : s + 1], q[s : s + 1])
            i = end


@njit(parallel=True, cache=True, error_model="numpy")
def count_bins(r, c, eps, utype, mask, shift, hist_abs, hist_rel, keys_abs, keys_rel):
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
def copy_bins(r, c, eps, keys_abs, keys_rel, wanted_abs, wanted_rel, out_abs, out_rel, cursor):
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


BRACKETS = 5  # brackets per kind of difference the fast path tests (one per protocol percentile)


@njit(cache=True, inline="always")
def _count_and_mark(bits, m, lo, hi, under, inside):
    """Add to ``under[k]`` how many of the first ``m`` patterns lie under bracket k, and set ``inside[j]``
    to 1 if pattern j lies in a bracket, else 0. Exactly ``BRACKETS`` brackets, written out: with them in
    registers the loop over values vectorises; a loop over brackets around it would re-read and re-write
    the marks once per bracket (1.5x slower)."""
    l0, l1, l2, l3, l4 = lo[0], lo[1], lo[2], lo[3], lo[4]
    h0, h1, h2, h3, h4 = hi[0], hi[1], hi[2], hi[3], hi[4]
    # int32 counts keep twice as many lanes per vector as numba's default int64
    u0 = u1 = u2 = u3 = u4 = np.int32(0)
    for j in range(m):
        x = bits[j]
        u0 = np.int32(u0 + (x < l0))
        u1 = np.int32(u1 + (x < l1))
        u2 = np.int32(u2 + (x < l2))
        u3 = np.int32(u3 + (x < l3))
        u4 = np.int32(u4 + (x < l4))
        inside[j] = np.uint8(
            ((x >= l0) & (x <= h0))
            | ((x >= l1) & (x <= h1))
            | ((x >= l2) & (x <= h2))
            | ((x >= l3) & (x <= h3))
            | ((x >= l4) & (x <= h4))
        )
    under[0] += u0
    under[1] += u1
    under[2] += u2
    under[3] += u3
    under[4] += u4
    for j in range(m, (m + 7) // 8 * 8):  # whole words for _copy_marked
        inside[j] = 0


@njit(cache=True, inline="always")
def _copy_marked(values, inside, m, row, at):
    """Append the values marked in ``inside`` (bytes of 0 or 1) to ``row`` from ``at``; the new end. The
    marks are read eight at a time as one word, so the few percent of values copied cost little more
    than the test of a word, and a word's marks are found by its trailing zeros."""
    words = inside.view(np.uint64)
    for w in range((m + 7) // 8):
        word = words[w]
        while word != 0:
            # Little-endian: byte b is mark 8w + b. numba types an @intrinsic as its Python function,
            # (typingctx, src); jitted code passes only src.
            row[at] = values[w * 8 + (trailing_zeros(word) >> 3)]  # type: ignore[call-arg]
            at += 1
            word &= word - np.uint64(1)
    return at


@njit(parallel=True, cache=True, error_model="numpy")
def bracket_pass(rs, cs, blocks, eps, itype, lo_abs, hi_abs, lo_rel, hi_rel, under, out_abs, out_rel, filled):
    """For both kinds of difference of the tensors ``rs`` and ``cs`` (lists of the replayed and claimed
    vectors of one signal): add to ``under[t, kind, k]`` how many differences lie under bracket k (as bit
    patterns of type ``itype``), and append those inside a bracket to row t of ``out_*``, setting
    ``filled[t, kind]`` to the row's length. ``blocks`` holds (tensor, first index) of each block of
    ``BLOCK`` values; thread t takes blocks t, t + threads, ...: one call for a whole signal, and each
    thread sees every part of it, so the rows fill evenly. A row that would overflow gets
    ``filled[t, 0] = -1``."""
    threads = filled.shape[0]
    room = out_abs.shape[1] - BLOCK  # a block copies at most BLOCK values
    for t in prange(threads):
        d = np.empty(BLOCK, out_abs.dtype)
        q = np.empty(BLOCK, out_abs.dtype)
        d_bits = d.view(itype)
        q_bits = q.view(itype)
        in_abs = np.empty(BLOCK, np.uint8)
        in_rel = np.empty(BLOCK, np.uint8)
        next_abs = 0
        next_rel = 0
        row_abs = out_abs[t]
        row_rel = out_rel[t]
        for b in range(t, blocks.shape[0], threads):
            if next_abs > room or next_rel > room:
                next_abs = -1
                break
            r = rs[blocks[b, 0]]
            c = cs[blocks[b, 0]]
            lo = blocks[b, 1]
            m = min(BLOCK, r.size - lo)
            differences(r[lo : lo + m], c[lo : lo + m], eps, d, q)
            _count_and_mark(d_bits, m, lo_abs, hi_abs, under[t, 0], in_abs)
            _count_and_mark(q_bits, m, lo_rel, hi_rel, under[t, 1], in_rel)
            next_abs = _copy_marked(d, in_abs, m, row_abs, next_abs)
            next_rel = _copy_marked(q, in_rel, m, row_rel, next_rel)
        filled[t, 0] = next_abs
        filled[t, 1] = next_rel
