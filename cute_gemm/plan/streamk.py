"""The launch modes' arithmetic beyond one data-parallel grid (pure: the modes supply the
occupancy): stream-K's share of the last wave, a split's CTAs, a cut walk, their workspaces.
The device computes the split itself (include/cute_gemm/streamk.cuh; tests/streamk_model.py)."""
from __future__ import annotations

# tail_split_plan lives beside records.CutModel, which prices it; the docs name it streamk.tail_split_plan
from ..registry.records import STREAM_K_COUNTERS, Variant, tail_split_plan  # noqa: F401


def stream_k_dp_tiles(tiles: int, ctas: int) -> int:
    """Whole tiles a stream-K launch of `ctas` CTAs runs data-parallel (streamk.cuh's
    StreamK::make): all when they fill whole waves, else all but the last two waves'."""
    waves = -(-tiles // ctas)
    return tiles if tiles % ctas == 0 else (waves - 2) * ctas if waves >= 2 else 0


STREAM_K_MIN_ITERS = 8   # k-tiles a stream-K CTA takes at least (stream_k_ctas)


def stream_k_ctas(tiles: int, k_tiles: int, slots: int, min_iters: int = STREAM_K_MIN_ITERS) -> int:
    """CTAs of a persistent stream-K launch for `tiles` tiles of `k_tiles` k-tiles on `slots`
    resident CTAs (0: the plain grid), where the last wave is partly empty: at least
    `min_iters` k-tiles a CTA, so no sliver's partial sums cost more to reduce than compute."""
    if tiles < 1 or k_tiles < 2 * min_iters or slots < 1 or tiles % slots == 0:
        return 0
    sk_tiles = tiles - stream_k_dp_tiles(tiles, slots)
    ctas = min(slots, sk_tiles * k_tiles // min_iters, STREAM_K_COUNTERS // 2)
    if ctas < 2 or tiles % ctas == 0:
        return 0
    return ctas


SPLIT_K_MIN_ITERS = 2    # k-tiles a run of split_k_ctas takes at least


def split_k_ctas(tiles: int, k_tiles: int, split_k: int, slots: int) -> int:
    """CTAs of a launch cutting each of `tiles` tiles into `split_k` even runs of K: tiles x
    split_k where all are resident at once on `slots` and each run has SPLIT_K_MIN_ITERS
    k-tiles; else 0, the kernel's own plan."""
    ctas = tiles * split_k
    if (split_k < 2 or ctas > slots or ctas > STREAM_K_COUNTERS // 2
            or k_tiles < SPLIT_K_MIN_ITERS * split_k):
        return 0
    return ctas


def split_reduce_workspace_bytes(split_k: int, m: int, n: int) -> int:
    """Workspace of a split with a reduction launch: the pool's stream-K counters left alone,
    then (SPLIT_SLICES_AT bytes in) split_k fp32 row-major slices of M x (N rounded up to 4)."""
    return SPLIT_SLICES_AT + 4 * split_k * m * (-(-n // 4) * 4)


def stream_k_dp_entry(variant: Variant) -> str:
    """The data-parallel sibling of a variant's stream-K twin (`NAME_sk` -> `NAME`), which
    sees the same problem as the twin."""
    if not variant.stream_k.endswith("_sk"):
        raise ValueError(f"{variant.entry}: stream-K twin {variant.stream_k!r} is not NAME_sk")
    return variant.stream_k[:-3]


def stream_k_plan(tiles: int, k_tiles: int, slots_dp: int, slots_sk: int,
                  max_fill: float = 1.0) -> tuple[int, int]:
    """(tile0, ctas) of a stream-K launch (ctas 0: the plain grid): whole waves (tiles [0,
    tile0)) data-parallel on the sibling (`slots_dp` resident), then the twin cuts the last
    wave along K over `ctas` CTAs (`slots_sk` resident), where that wave is filled below
    max_fill (a twin is slower per tile)."""
    tail = tiles % slots_dp if slots_dp > 0 else 0
    if tail == 0 or tail / slots_dp >= max_fill:
        return 0, 0
    ctas = stream_k_ctas(tail, k_tiles, slots_sk)
    return (tiles - tail, ctas) if ctas else (0, 0)


SPLIT_SLICES_AT = 4 * STREAM_K_COUNTERS   # bytes into a workspace: a split's slices


def stream_k_workspace_bytes(ctas: int, bm: int, bn: int) -> int:
    """Workspace of a stream-K launch: STREAM_K_COUNTERS int32 arrival counters first (a fixed
    place: launches of any size share one workspace), then 2 fp32 partial tiles per CTA."""
    return 4 * STREAM_K_COUNTERS + 4 * (2 * ctas * bm * bn)


# ---- the K-split of a persistent walk's last wave (include/cute_gemm/sm90_tail_split.cuh) ----
def tail_split_workspace_bytes(cut_units: int, cluster: int, pieces: int, bm: int, bn: int,
                               partials: int = 2) -> int:
    """Workspace of a cut walk: the counters where stream-K's are (one pool serves both), then
    `partials` fp32 tiles per piece (promoted: sum and carried error)."""
    return 4 * STREAM_K_COUNTERS + 4 * partials * cut_units * cluster * pieces * bm * bn
