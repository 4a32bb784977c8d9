"""The CuTe ladder, as registry data (see registry.py for the fields)."""
from __future__ import annotations

from .registry import FixedSmem, Kernel, TileGridMN, Variant

_MAJORS = tuple((a, b) for a in ("k", "m") for b in ("n", "k"))


def _gmem(name: str, bm: int, bn: int, bk: int) -> Kernel:
    return Kernel(
        name=name,
        family="cute",
        source="cute/c0_gmem.cu",
        variants=tuple(Variant(f"cute_gmem_a{a}_b{b}", a_major=a, b_major=b, c_major="any")
                       for a, b in _MAJORS)
                 + (Variant("cute_gmem_any", a_major="any", b_major="any", c_major="any"),),
        block=(256, 1, 1),
        grid=TileGridMN(bm, bn),
        defines=(("BLK_M", bm), ("BLK_N", bn), ("BLK_K", bk)),
        tile=(bm, bn, bk),
        summary="local_tile/local_partition straight from global memory, predicated residues",
        seed="naive (v0), in CuTe",
    )


def _smem(name: str, bm: int, bn: int, bk: int) -> Kernel:
    return Kernel(
        name=name,
        family="cute",
        source="cute/c1_smem.cu",
        variants=tuple(Variant(f"cute_smem_a{a}_b{b}", a_major=a, b_major=b, c_major="any")
                       for a in ("k", "m") for b in ("n", "k")),
        block=(256, 1, 1),
        grid=TileGridMN(bm, bn),
        defines=(("BLK_M", bm), ("BLK_N", bn), ("BLK_K", bk)),
        tile=(bm, bn, bk),
        summary="local_tile/local_partition, k-tiles staged in shared memory, predicated residues",
        seed="CuTe sgemm_1 gemm_device",
    )


def _vec_then_scalar(prefix: str) -> tuple[Variant, ...]:
    """128-bit entry points (16-byte aligned A and B, contiguous extents multiples of 4)
    for every (A major, B major), then the scalar (any alignment) ones, ending on the
    row-major fallback."""
    vec = tuple(Variant(f"{prefix}_a{a}_b{b}", a_major=a, b_major=b, c_major="any",
                        align=4, align_roles="ab", extent_align=4) for a, b in _MAJORS)
    scalar = tuple(Variant(f"{prefix}_a{a}_b{b}_s", a_major=a, b_major=b, c_major="any")
                   for a, b in reversed(_MAJORS))
    return vec + scalar


def _tiled(name: str, bm: int, bn: int, bk: int) -> Kernel:
    return Kernel(
        name=name,
        family="cute",
        source="cute/c2_tiled.cu",
        variants=_vec_then_scalar("cute_tiled"),
        block=(256, 1, 1),
        grid=TileGridMN(bm, bn),
        defines=(("BLK_M", bm), ("BLK_N", bn), ("BLK_K", bk)),
        tile=(bm, bn, bk),
        summary="TiledCopy 128-bit loads + TiledMMA, padded smem, next k-tile prefetched to registers",
        seed="CuTe sgemm_2 (TiledCopy/TiledMMA)",
    )


_PAD = 4   # words of padding per smem k column (SMEM_PAD in the kernels)


def kquad_stage(ext: int, bk: int) -> tuple[int, int]:
    """(quad stride, stage size) in words of a k-quad compute stage of extent `ext` along
    m/n (c3_pipelined.cu, StageLayout and kStage with KQ_LAYOUT): the 4 columns of a
    k-quad unpadded, quads 4*EXT + 32/(BLK_K/4) words apart, stages BLK_K*EXT + 32. Also
    what the layout dumps draw (layouts.py)."""
    return 4 * ext + 32 // (bk // 4), bk * ext + 32


def _twin_smem(bm: int, bn: int, bk: int, stages: int, kq_layout: int) -> int:
    """Dynamic smem of the stream-K twins (c3_pipelined.cu, gemm_pipelined): A's region of
    the full layout, then B's stages — STAGES padded compute stages (am_bn_sk, ak_bn_sk),
    or 2 compute buffers (k-quad ones with KQ_LAYOUT bit 0) and STAGES raw stages
    (ak_bk_sk). Less than dyn_smem by the k-quad buffers' savings: with the twins' static
    smem (128 bytes with the alignment of the dynamic smem) 2 twin CTAs then fit the same smem carveout as 2 data-
    parallel ones, so a twin CTA can take an SM slot while the other holds a data-parallel
    CTA (a programmatic dependent launch; the carveout of an SM changes only when empty)."""
    region_a = bk * (2 * (bm + _PAD) + stages * bm)
    mn_b = stages * bk * (bn + _PAD)
    kk_b = 2 * (kquad_stage(bn, bk)[1] if kq_layout & 1 else bk * (bn + _PAD)) + stages * bk * bn
    return 4 * (region_a + max(mn_b, kk_b))


def _pipe(name: str, bm: int, bn: int, bk: int, stages: int, thr_m: int = 16, thr_n: int = 16,
          warp_m: int = 4, min_blocks: int = 2, raster_n: int = 8, frag_db: int = 1,
          trans_k: int | None = None, stream_k: int = 0, fma_order: int = 0,
          fma_order_raw: int = 0, min_blocks_mn: int | None = None,
          stash_k: int | None = None, stash0_k: int | None = None,
          load1_k: int | None = None, kq_layout: int = 0, kt_unroll: int = 1,
          epi_ak_bk: int = 0, epi_ak_bn: int = 0, epi_am_bk: int = 0, epi_am_bn: int = 0) -> Kernel:
    vec = dict(c_major="any", align=4, align_roles="ab", extent_align=4)
    # the stream-K twins' dynamic smem: launched with it, and checked by the kernel against
    # what it addresses (SK_SMEM)
    twin_smem = _twin_smem(bm, bn, bk, stages, kq_layout)

    # The persistent stream-K twins of the vector entries (STREAM_K=1 builds), and the
    # fill of the last wave below which each is taken (streamk.stream_k_plan: the whole
    # waves run data-parallel in a first launch, the twin cuts the last one along K; on
    # sm_90+ the twin starts by programmatic dependent launch, PDL).
    # The twins are slower per tile than their data-parallel siblings, so each is taken only
    # below a fill of 0.93 (see docs/tuning/cute_pipelined.md#stream-k). am_bk has no twin of
    # its own (it spilled on sm_80): it takes ak_bn's on the transposed problem,
    # C^T = B^T A^T, where B^T is k-major and A^T n-major (the whole waves by ak_bn as well).
    fills = {("m", "n"): 0.93, ("k", "k"): 0.93, ("k", "n"): 0.93}

    def sk(a, b):
        if not stream_k:
            return {}
        if (a, b) == ("m", "k"):
            return dict(stream_k="cute_pipelined_ak_bn_sk", stream_k_fill=fills["k", "n"],
                        stream_k_swap=True)
        return dict(stream_k=f"cute_pipelined_a{a}_b{b}_sk", stream_k_fill=fills[a, b])
    return Kernel(
        name=name,
        family="cute",
        source="cute/c3_pipelined.cu",
        # 16-byte entries first (any majorness; m/n-major operands by cp.async, one k-major
        # operand register-staged, two k-major by cp.async into raw stages), then the
        # 4-byte cp.async fallbacks, ending on row-major align 1
        variants=tuple(Variant(f"cute_pipelined_a{a}_b{b}", a_major=a, b_major=b,
                               **sk(a, b), **vec)
                       for a, b in (("m", "n"), ("m", "k"), ("k", "n"), ("k", "k")))
                 + tuple(Variant(f"cute_pipelined_a{a}_b{b}_s", a_major=a, b_major=b, c_major="any")
                         for a, b in (("k", "k"), ("m", "k"), ("m", "n"), ("k", "n"))),
        block=(thr_m * thr_n, 1, 1),
        grid=TileGridMN(bm, bn),     # the kernel remaps block ids (RASTER_N tile columns per group)
        defines=(("BLK_M", bm), ("BLK_N", bn), ("BLK_K", bk), ("STAGES", stages),
                 ("THR_M", thr_m), ("THR_N", thr_n), ("WARP_M", warp_m),
                 ("MIN_BLOCKS", min_blocks), ("SMEM_PAD", _PAD), ("RASTER_N", raster_n),
                 ("FRAG_DB", frag_db), ("TRANS_K", bk // 2 if trans_k is None else trans_k),
                 ("STREAM_K", stream_k), ("FMA_ORDER", fma_order),
                 ("FMA_ORDER_RAW", fma_order_raw),
                 ("MIN_BLOCKS_MN", min_blocks if min_blocks_mn is None else min_blocks_mn),
                 ("STASH_K", bk - 1 if stash_k is None else stash_k),
                 ("STASH0_K", bk // 2 if stash0_k is None else stash0_k),
                 ("LOAD1_K", bk // 2 if load1_k is None else load1_k), ("PDL", int(bool(stream_k))),
                 ("KQ_LAYOUT", kq_layout), ("KT_UNROLL", kt_unroll),
                 ("EPI_AK_BK", epi_ak_bk), ("EPI_AK_BN", epi_ak_bn), ("EPI_AM_BK", epi_am_bk),
                 ("EPI_AM_BN", epi_am_bn))
                + ((("SK_SMEM", twin_smem),) if stream_k else ()),
        tile=(bm, bn, bk),
        # per operand: 2 compute buffers + STAGES raw (k-major) stages; an m/n-major
        # operand's STAGES compute stages fit in the same region
        dyn_smem=FixedSmem(4 * bk * (2 * (bm + bn + 2 * _PAD) + stages * (bm + bn))),
        stream_k_smem=FixedSmem(twin_smem) if stream_k else None,
        summary=(f"{stages}-stage smem pipeline (cp.async 16 B along m/n; along k register-staged, "
                 f"or via k-major raw smem stages when both are k-major), LDS.128 register "
                 f"double buffer, {bm // thr_m}x{bn // thr_n} FFMA per thread, unchecked interior CTAs, grouped CTA order"
                 + (", k-quad smem stages for k-major operands (conflict-free transposes)" if kq_layout else "")
                 + (f", {kt_unroll} k-tiles per mainloop iteration when both are k-major" if kt_unroll > 1 else "")
                 + (", C through smem (16-byte stores or bulk copies) in some entries" if
                    any((epi_ak_bk, epi_ak_bn, epi_am_bk, epi_am_bn)) else "")
                 + (", stream-K persistent launch when the tiles leave a partial last wave" if stream_k else "")),
        seed="CuTe sgemm_sm80 (cp.async pipeline)",
        tags=("fast",),
    )


CUTE: list[Kernel] = [
    _gmem("cute_gmem", 16, 16, 8),
    _smem("cute_smem", 128, 128, 8),
    _smem("cute_smem_64x128", 64, 128, 8),
    _tiled("cute_tiled", 128, 128, 8),
    # cute_pipelined: each kept decision, its measurements and what lost, in docs/tuning/:
    # 128x128x16, 4 stages: see docs/tuning/cute_pipelined.md#tile-and-stages
    # trans_k=13 (late raw -> compute transpose): see docs/tuning/cute_pipelined.md#trans-k
    # stream_k=1 (split launch, stream-K twin for the last wave): see docs/tuning/cute_pipelined.md#stream-k
    # fma_order=6, fma_order_raw=2: see docs/tuning/cute_pipelined.md#ffma-order
    # min_blocks_mn=1 (am_bn without the 128-register cap): see docs/tuning/cute_pipelined.md#register-cap
    # stash_k=13, stash0_k=10, load1_k=1: see docs/tuning/cute_pipelined.md#staged-groups
    # kq_layout=7 (k-quad compute stages): see docs/tuning/cute_pipelined.md#k-quad-stages
    # kt_unroll=2 (both-k-major entry): see docs/tuning/cute_pipelined.md#kt-unroll
    # epi_ak_bk=1, epi_ak_bn=3 (C through smem; bulk copies): see docs/tuning/cute_pipelined.md#epilogue
    _pipe("cute_pipelined", 128, 128, 16, 4, trans_k=13, stream_k=1, fma_order=6,
          fma_order_raw=2, min_blocks_mn=1, stash_k=13, stash0_k=10, load1_k=1, kq_layout=7,
          kt_unroll=2, epi_ak_bk=1, epi_ak_bn=3),
    _pipe("cute_pipelined_128x128x8", 128, 128, 8, 4),
    _pipe("cute_pipelined_64x128x8", 64, 128, 8, 4, thr_m=8, thr_n=16, min_blocks=3),
]
