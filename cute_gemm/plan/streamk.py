"""The arithmetic of the launch modes (modes.py) beyond one data-parallel grid: when a
stream-K launch shares the k-tiles of the last, partly empty wave out over its CTAs, a
split-K launch's CTAs, the cut of a persistent walk, and their workspaces. The split itself
is computed on the device (include/cute_gemm/streamk.cuh); the tests keep a model of it
(tests/streamk_model.py). Pure arithmetic: the modes supply the occupancy.
"""
from __future__ import annotations

# tail_split_plan lives beside records.CutModel, which prices it; the docs name it streamk.tail_split_plan
from ..registry.records import STREAM_K_COUNTERS, Variant, tail_split_plan  # noqa: F401


def stream_k_dp_tiles(tiles: int, ctas: int) -> int:
    """Whole tiles a stream-K launch of `ctas` CTAs runs data-parallel (StreamK::make in
    include/cute_gemm/streamk.cuh): all when they fill whole waves, else all but the last
    two waves' worth, so that the stream-K share is at most 2 tiles per CTA (and at least
    1 once the grid spans two waves)."""
    waves = -(-tiles // ctas)
    return tiles if tiles % ctas == 0 else (waves - 2) * ctas if waves >= 2 else 0


STREAM_K_MIN_ITERS = 8   # k-tiles a stream-K CTA takes at least (stream_k_ctas)


def stream_k_ctas(tiles: int, k_tiles: int, slots: int, min_iters: int = STREAM_K_MIN_ITERS) -> int:
    """CTAs of a persistent stream-K launch for `tiles` tiles of `k_tiles` k-tiles, with
    `slots` CTAs resident at once; 0: the plain grid. It pays where tiles % slots leaves a
    partly empty last wave: the k-tiles are shared out evenly (streamk.cuh), at least
    `min_iters` a CTA, so that no tile is cut into slivers whose partial sums cost more to
    reduce than to compute."""
    if tiles < 1 or k_tiles < 2 * min_iters or slots < 1 or tiles % slots == 0:
        return 0
    sk_tiles = tiles - stream_k_dp_tiles(tiles, slots)
    ctas = min(slots, sk_tiles * k_tiles // min_iters, STREAM_K_COUNTERS // 2)
    if ctas < 2 or tiles % ctas == 0:
        return 0
    return ctas


SPLIT_K_MIN_ITERS = 2    # k-tiles a run of split_k_ctas takes at least


def split_k_ctas(tiles: int, k_tiles: int, split_k: int, slots: int) -> int:
    """CTAs of a launch cutting each of `tiles` tiles of `k_tiles` k-tiles into `split_k`
    even runs: tiles x split_k where those CTAs are all resident at once (`slots`: the
    workspace stays one wave's partials) and every run has SPLIT_K_MIN_ITERS k-tiles; else
    0, the kernel's own plan. (The twin then walks no whole tiles: streamk.cuh.)"""
    ctas = tiles * split_k
    if (split_k < 2 or ctas > slots or ctas > STREAM_K_COUNTERS // 2
            or k_tiles < SPLIT_K_MIN_ITERS * split_k):
        return 0
    return ctas


def split_reduce_workspace_bytes(split_k: int, m: int, n: int) -> int:
    """Workspace of a split-K launch with a reduction launch: STREAM_K_COUNTERS int32 left
    alone (the pool's stream-K counters stay zero), then split_k fp32 slices of (M, N
    rounded up to 4), row-major (SPLIT_SLICES_AT bytes in)."""
    return SPLIT_SLICES_AT + 4 * split_k * m * (-(-n // 4) * 4)


def stream_k_dp_entry(variant: Variant) -> str:
    """The data-parallel sibling of a variant's stream-K twin (`NAME_sk` -> `NAME`): the
    same operand majors, so the first launch of a split stream-K launch (stream_k_plan)
    sees the same problem as the twin (the transposed one where stream_k_swap)."""
    if not variant.stream_k.endswith("_sk"):
        raise ValueError(f"{variant.entry}: stream-K twin {variant.stream_k!r} is not NAME_sk")
    return variant.stream_k[:-3]


def stream_k_plan(tiles: int, k_tiles: int, slots_dp: int, slots_sk: int,
                  max_fill: float = 1.0) -> tuple[int, int]:
    """(tile0, ctas) of a stream-K launch for `tiles` tiles of `k_tiles` k-tiles; ctas 0:
    the plain grid. slots_dp / slots_sk: CTAs of the sibling entry and of its twin resident
    at once. The whole waves (tiles [0, tile0)) run data-parallel on the sibling, then the
    twin cuts the last wave's tiles along K over `ctas` CTAs: taken where that wave is
    filled below max_fill (Variant.stream_k_fill: a twin is slower per tile)."""
    tail = tiles % slots_dp if slots_dp > 0 else 0
    if tail == 0 or tail / slots_dp >= max_fill:
        return 0, 0
    ctas = stream_k_ctas(tail, k_tiles, slots_sk)
    return (tiles - tail, ctas) if ctas else (0, 0)


SPLIT_SLICES_AT = 4 * STREAM_K_COUNTERS   # bytes into a workspace: a split's slices


def stream_k_workspace_bytes(ctas: int, bm: int, bn: int) -> int:
    """Workspace of a stream-K launch: STREAM_K_COUNTERS int32 arrival counters at the
    start (a fixed place, so launches of any size can share one workspace and find their
    counters zero), then 2 partial tiles (fp32) per CTA."""
    return 4 * STREAM_K_COUNTERS + 4 * (2 * ctas * bm * bn)


# ---- the K-split of a persistent walk's last wave (include/cute_gemm/sm90_tail_split.cuh) ----
def tail_split_workspace_bytes(cut_units: int, cluster: int, pieces: int, bm: int, bn: int,
                               partials: int = 2) -> int:
    """Workspace of a cut walk: STREAM_K_COUNTERS int32 counters (one per cut tile, at the
    same place as stream-K's: one pool serves both), then `partials` fp32 tiles per piece
    (promoted: its sum and its carried error; else its accumulators)."""
    return 4 * STREAM_K_COUNTERS + 4 * partials * cut_units * cluster * pieces * bm * bn
