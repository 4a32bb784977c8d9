"""Models of the schedules the device computes, for the tests: the split of a stream-K
launch (include/cute_gemm/streamk.cuh, StreamK::make / begin) and the walk of a cut
persistent launch (include/cute_gemm/sm90_tail_split.cuh). The package launches kernels
that compute these on the device; it needs only the plans (cute_gemm.plan.streamk), so the
models live here, where the tests that check a plan's coverage and balance read them.
"""
from __future__ import annotations

from cute_gemm.registry.records import cdiv
from cute_gemm.plan.streamk import stream_k_dp_tiles


def stream_k_schedule(tiles: int, k_tiles: int, ctas: int) -> tuple[int, list[tuple[int, int]]]:
    """The split that include/cute_gemm/streamk.cuh computes on the device: (whole data-
    parallel tiles, [(first, end) stream-K iteration of each CTA]); stream-K iteration i is k-tile i % k_tiles of tile dp + i // k_tiles."""
    dp = stream_k_dp_tiles(tiles, ctas)
    begin = stream_k_begins((tiles - dp) * k_tiles, ctas)
    return dp, [(begin[c], begin[c + 1]) for c in range(ctas)]


def stream_k_begins(sk_iters: int, ctas: int) -> list[int]:
    """StreamK::begin(c) for c = 0..ctas (the last: sk_iters): CTA c's first stream-K
    iteration, floor(c * sk_iters / ctas), as the header computes it (q, r = divmod)."""
    q, r = divmod(sk_iters, ctas)
    return [c * q + (c * r) // ctas for c in range(ctas + 1)]


def tail_split_schedule(units: int, dp: int, pieces: int, windows: int) -> list[tuple[int, int, int]]:
    """The walk include/cute_gemm/sm90_tail_split.cuh runs: (unit, first window, end window)
    of each item; a cut unit's pieces take ceil(windows / pieces) windows each (the last
    one's past the end are zero-filled: cut off here)."""
    run = cdiv(windows, pieces)
    out = [(u, 0, windows) for u in range(dp)]
    for j in range((units - dp) * pieces):
        w0 = (j % pieces) * run
        out.append((dp + j // pieces, w0, min(w0 + run, windows)))
    return out
