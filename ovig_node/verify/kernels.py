"""The two compiled passes behind exact percentiles of replay differences (:mod:`ovig_node.verify.stats`).

The first pass walks a claimed tensor ``c`` and its replay ``r`` block by block, computing ``|r - c|``
and ``|r - c| / (|c| + eps)`` in the tensors' dtype into small buffers that stay in cache, so neither
difference is ever stored whole. It counts each difference into one of ``BINS`` bins by the top bits of
its IEEE pattern (for non-negative floats the bit pattern orders like the value: in float32 a bin is a
value range of relative width 1/256) and keeps each coordinate's bin as a 16-bit key. The second pass
reads only the keys and recomputes the differences of the coordinates whose bin is wanted, a few
percent of them at most. Exact zeros get a bin of their own (bin 0), because an honest replay leaves
many coordinates bit-identical and a rank among them needs no copy; the tiniest subnormals share bin 1.
NaN orders after +inf, as in ``numpy.sort``.

Each thread ``t`` of ``threads`` takes the same slice ``[n*t/threads, n*(t+1)/threads)`` of every tensor
in both passes, so its first-pass counts tell exactly how much it copies in the second.
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


@njit(parallel=True, cache=True)
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
            for j in range(hi - lo):  # apart from the counting, so that it vectorises
                x = abs(r[lo + j] - c[lo + j])
                d[j] = x
                q[j] = x / (abs(c[lo + j]) + eps)
            for j in range(hi - lo):
                key_abs = _key(d_bits[j], mask, shift)
                key_rel = _key(q_bits[j], mask, shift)
                keys_abs[lo + j] = key_abs
                keys_rel[lo + j] = key_rel
                hist_abs[t, key_abs] += 1
                hist_rel[t, key_rel] += 1


@njit(parallel=True, cache=True)
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
