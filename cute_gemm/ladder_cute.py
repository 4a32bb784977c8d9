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
    # fill of the last wave below which each is taken (registry.stream_k_plan: the whole
    # waves run data-parallel in a first launch, the twin cuts the last one along K; on
    # sm_90+ the twin starts by programmatic dependent launch, PDL).
    # The twins are slower per tile than their data-parallel siblings (H100, 0.97 fill,
    # TFLOP/s twin vs sibling, 4096^3 / 8192^3: am_bn 51.82 / 52.49 vs 52.26 / 53.09; ak_bk
    # 46.98 / 47.41 vs 48.43 / 49.33). Before PDL, with the checked instantiation as the
    # ak_bn twin (46.44 vs 48.76), split launches paid at 0.52 fill (8192^3: +2.5 % nn,
    # +2.7 % tn, +2.6 % nt, +2.7 % tt) but at 0.88 (4096^3) only for tn (+0.8 %) and nt
    # (+0.2 %; nn -0.6 %, tt -0.5 %). With PDL and the unchecked ak_bn twin (fragments
    # loaded in place), H100, 4096^3, split vs data-parallel: nn 50.35 vs 50.02, tt 50.45 vs
    # 50.03, nt 48.78 vs 48.51; and 8192^3 gains another 0.2-0.3 % (nn 52.30 vs 52.14).
    # So every twin is taken below 0.93. (ncu, nt 4096^3 split: the twin's launch takes
    # 0.697 ms for 88 % of a 0.717 ms wave, 79 % issue-active against 86 %: two prologues
    # and a fixup per CTA.) am_bk has no twin of its own (it spilled on sm_80): it takes
    # ak_bn's on the transposed problem, C^T = B^T A^T, where B^T is k-major and A^T
    # n-major (the whole waves by ak_bn as well).
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
    # cp.async pipeline: tiles measured on an H200 (4096^3 / 8192^3, TFLOP/s, nn/tn/nt/tt
    # in the commit log); 128x128x16 with 4 stages leads in every layout
    # TRANS_K 13 (transpose of the both-k-major entry late in the k-tile): nt 48.57 / 49.34
    # vs 48.13 / 49.04 at 8 and 47.40 / 48.35 at 1
    # H100 sweeps, 2026-11-22 (scripts/sweep_pipelined.py; 4096^3 data-parallel, TFLOP/s,
    # nn / tn; cuBLAS 51.7 / 52.2): this config 49.2 / 50.9; 3 stages 49.1 / -; 256x128x8
    # (16x8 per thread, 1 CTA/SM) 46.2 / -; 128x256x8 47.8 / -; 128 threads x 16x8 per
    # thread 46.9 (fewer instructions, 80 % issue with 2 warps per scheduler); BLK_K 32
    # (tn only: the staged entries spill) - / 48.3; MIN_BLOCKS 1 45.8 / 51.2; 6 stages at
    # 1 CTA/SM 44.7 / 51.2; WARP_M 8 / 2: 48.7 / 48.2 nn; RASTER_N 4 / 16: 49.0 / 49.0 nn;
    # k-major operands by 4-byte cp.async (cuBLAS's way) 48.1 nn, 46.2 nt (vs 48.4)
    # FFMA order 2 (col-major kinked serpentine) where there are no raw stages: +1.6-1.7 %
    # on tn / nn / tt; the raw (nt) entry keeps CuTe's order (c3_pipelined.cu, outer_product;
    # both changed in session 14, below)
    # H100 sweeps, 2026-11-22, later (4096^3 / 8192^3, TFLOP/s, vs the registered config):
    # k-major operands read along k straight from padded k-major stages (LDS.128 of 4 k,
    # no transpose; 32 registers of k-quads) nn 45.7 / 46.5 vs 49.7 / 50.6; one k-major
    # operand through raw stages 49.5 / 50.3 nn; nt with A register-staged and B raw
    # 48.1 / 49.0 vs 48.5 / 49.3; 256x128x16 and 128x256x16 at 1 CTA/SM 47.3 / 47.5 nn;
    # every k-major entry at 1 CTA/SM (staged, raw or both staged, 133-168 registers)
    # 32-48; ptxas --register-usage-level 0-10 within +-0.4 % (0 and 3: -22 % nn)
    # MIN_BLOCKS_MN=1: the am_bn data-parallel entry built without the 128-register cap
    # (c3_pipelined.cu, kMinBlocks): tn +1.2 % (52.26 / 53.09)
    # H100 sweeps, 2026-11-22, session 9 (4096^3 / 8192^3 data-parallel, TFLOP/s, vs this
    # config without stash_k: nn 49.67 / 50.54, nt 48.51 / 49.33, tt 49.75 / 50.51):
    # STASH_K 13 (the last register-staged group's stores at k-block 13, not 15): nn
    # 50.01 / 50.98, tt 50.03 / 50.96; 11, 12, 14: 49.5-49.9 nn; group 1 loaded at k-block
    # 7 / 9: 49.00 / 49.63 nn. Not better: k-major operands by 4-byte cp.async without the
    # register cap (128 regs; cuBLAS's nn kernel loads that way) nn 48.23 / 49.35, and both
    # k-major that way 38.2 (168 regs, 1 CTA/SM) or 46.2 (capped) nt; one staged group per
    # k-tile (12 fewer instructions per k-tile, 8 staging registers live) nn 48.97 / 49.98;
    # a warp's k-major copy as 16 rows x 2 quads (conflict-free 4-byte stores, but twice the
    # L1 lines per LDG) nn 45.37 / 46.25; XOR-swizzled unpadded k-major compute stages
    # (no store conflicts, more address math) nn 49.35 / 50.32, nt 46.93 / 47.71; the
    # cp.async refill at k-block 1 / 2 / 4: -1 to -5 % in all layouts; nt's two transposes
    # at k-blocks 11 and 13: 48.57 / 49.48 (noise); 256x128x8 / 256x128x16 / 128x256x8 /
    # 128x256x16 at 1 CTA/SM with FFMA order 2: nn 43.9-47.6, tn 46.9-49.7.
    # H100, session 10 (4096^3 / 8192^3, TFLOP/s, vs this config in the same run; sweeps
    # with sweep_pipelined.py, the rest with one-off probes that are not kept):
    # - k-major copies by row pairs (a thread's two vectors rows 2i, 2i+1; STS.64 of the
    #   pair per k, conflict-free): nt with raw stages quad-major 42.2 / 44.1 vs 48.5 /
    #   50.5 (a sector's two 16-byte halves landed on the same banks), sector-contiguous
    #   47.0 / 48.9; register-staged by LDG.64 pairs nn 49.2 / 51.2 vs 50.0 / 52.1, tt
    #   46.7 / 51.3 vs 50.0 / 52.2; LDG.128 pairs in one group nn 44.4 / 46.3. The pairs
    #   need MOVs into adjacent registers: 15-39 more instructions per k-tile.
    # - nt's transposes spread over k-blocks (raw reads a k-block before the stores, per
    #   operand or per vector): spill 112-376 bytes at the 128-register cap. TRANS_K 11 /
    #   12 / 14: 48.77 / 48.83 / 47.90 nt vs 48.74 at 13.
    # - NVRTC --extra-device-vectorization, ptxas -O2, ptxas
    #   --allow-expensive-optimizations=false: within 0.2 %; ptxas -O1: 9-15 % slower.
    # - TMA loads (cp.async.bulk.tensor issued by one thread per k-tile, one mbarrier per
    #   stage; m/n-major boxes into unpadded compute stages, k-major ones into the raw
    #   stages): correct, slower (data-parallel, no L2 flush): tn 48.55 / 49.54 vs 49.97 /
    #   52.33, nn 48.16 / 49.23 vs 48.22 / 50.22, nt 43.77 / 44.68 vs 47.14 / 48.55; B
    #   alone by TMA (A register-staged) nn 46.53 / 48.45.
    # - Ceilings (the global copies compiled out; wrong results, timing only, 4096^3): nn
    #   53.5, tn 52.7, nt 46.5 (its raw transposes alone) vs 49.6 / 51.3 / 48.0; leaving
    #   out only A's or only B's copies made nn slower (46.6 / 47.2): the schedule ptxas
    #   picks at 128 registers moves by several per cent with unrelated code.
    # - ncu, 4096^3: shared-memory wavefronts 62 % of peak (nn), 60 % (tn), 69 % (nt),
    #   cuBLAS 59 / 35 / 67 %; nt's extra stall is short_scoreboard (0.42 per issue vs
    #   0.30 nn, cuBLAS 0.33).
    # H100, session 11 (4096^3 / 8192^3, TFLOP/s, same-run comparisons):
    # - KQ_LAYOUT 7 (k-quad compute stages for k-major operands, stream-K twins included,
    #   c3_pipelined.cu StageLayout): the transposed stores lose their 2-way bank
    #   conflicts; nn 50.71 / 52.45 vs 50.34 / 52.26, nt 49.60 / 51.41 vs 48.81 / 50.64,
    #   tt 50.86 / 52.49 vs 50.49 / 52.33 (the register-staged twin with them, 4096^3: nn
    #   50.70 vs 50.43). With it (4096^3): TRANS_K 11 / 9 nt 49.57 / 49.06 vs 49.60;
    #   STASH_K 15 / 11 nn 50.31 / 44.23 vs 50.67; FMA_ORDER_RAW 2 nt 48.94.
    # - stmatrix (sm_90) as a warp-wide 4x4 transpose of the k-major vectors (lanes 4r..4r+3
    #   load 4 consecutive rows of one k-quad; one STSM.16.M88.4 instead of 4 STS.32; raw
    #   stages XOR-swizzled so the read-back stays conflict-free): the nt loop is 3
    #   instructions shorter, not 12 — ptxas recomputes the lanes' row addresses every
    #   k-tile at the 128-register cap — and nt measured 48.78 / 51.32 vs 49.60 / 51.41;
    #   register-staged (nn) it spills 256 bytes (44.84).
    # - the dynamic smem 128-byte aligned (c3_pipelined.cu; the twins place it after their
    #   48 bytes of static smem, where their cp.async into the raw stages touched 32
    #   sectors a warp instead of 16 and took 20 smem wavefronts instead of 4: ncu source
    #   counters, nt twin), and
    #   the twins' dynamic smem cut to what they use (registry.Kernel.stream_k_smem:
    #   99072 bytes; with their static smem 2 twin CTAs fit the data-parallel carveout):
    #   trim alone (same run) nn 50.79 / 52.40, tn 53.01 / 54.48, nt 49.78 / 51.40, tt
    #   50.96 / 52.42; trim and alignment nn 50.85 / 52.49, tn 53.02 / 54.47, nt 50.38 /
    #   51.51, tt 50.94 / 52.40 (cuBLAS 51.65 / 51.62, 51.78 / 53.44, 50.82 / 51.16,
    #   49.23 / 50.61). Alignment alone, the run before: nt 50.01 vs 49.49.
    # - the split launch's stream-K twin visiting its cut tiles column by column (CTAs
    #   that share an A strip then work at nearly the same k): ncu, 4096^3 nn twin, DRAM
    #   reads 164 MB vs 659 MB, L2 hit rate 83 % vs 49 %, but 646 vs 656 us (issue-active
    #   84 % vs 89 % in the data-parallel launch either way: it is not memory-bound); whole
    #   runs 4096^3 nn 50.79 vs 50.69, tn 52.76 vs 52.87, nt 49.39 vs 49.61, tt 50.92 vs
    #   50.87, 8192^3 within 0.2 %.
    # - the register-staged data-parallel entries (ak_bn, am_bk) without the 128-register
    #   cap, like am_bn (MIN_BLOCKS_MN): ptxas takes 127 registers on sm_80 and sm_90, but
    #   nn 49.90 / 51.33 vs 50.66 / 52.37, tt 49.98 / 51.39 vs 50.77 / 52.47.
    # - FRAG_DB 0 (fragments loaded in place everywhere), 4096^3: nn 50.06 vs 50.64, nt
    #   48.49 vs 49.59; 3 stages: nn 50.62, nt 49.62 (the same as 4).
    # - the same conflicts removed by padding (8 words more between k 0..7 and 8..15):
    #   nt 49.69 / 51.31 but nn 50.19 / 51.79 (the larger stages push 2 CTAs/SM into the
    #   228 KB smem carveout, less L1).
    # H100, session 12 (4096^3 / 8192^3, TFLOP/s, same-run comparisons with this config):
    # - the refill's global k-tile by a bumped pointer (tXgX.data() += one k-tile's stride)
    #   instead of k_tile * stride: the interior loop is up to 21 instructions shorter
    #   (nn 1158 vs 1179 a warp per k-tile), but ptxas then issues the register-staged
    #   LDGs late, just before their stores (k-block 7.8 of 16 instead of 1.4), and nn
    #   48.57 / 50.19 vs 50.87 / 52.45, tt 48.75 / 50.30 vs 50.94 / 52.46, nt 50.29 /
    #   51.54 vs 50.23 / 51.42. Only the staged operand and the raw ones bumped (LDGs
    #   early again): nn 49.28 / 52.02, tt 49.40 / 52.06, nt 50.20 / 51.64; with STASH_K
    #   14 or 15 no better. am_bn bumped: 129 registers on sm_90, 255 and spills on sm_80.
    # - the stream-K twin given the last wave and one whole wave more (2 data-parallel
    #   waves, 1.88 tiles of iterations per twin CTA at 4096^3): nn 50.42 / 52.29 vs
    #   50.85 / 52.42, tn 52.67 vs 52.94, nt 50.03 vs 50.36, tt 50.51 vs 50.96: the twins'
    #   cost is per iteration, not per run.
    # - the register-staged twin with double-buffered fragments (sm_90: 440 bytes spilled)
    #   or with A through raw stages (CpVecK: 184 bytes spilled on sm_90, 288 on sm_80).
    # - where the 4096^3 time goes (CUDA events, no L2 flush, nn / nt / tt): split launch
    #   2.723 / 2.746 / 2.717 ms; its data-parallel head alone (3 waves) 2.086 / 2.126 /
    #   2.081; the twin alone 0.662 / 0.656 / 0.655 against 0.611 / 0.623 / 0.610 for 0.88
    #   of a head wave (8 % over), but overlapped by PDL it adds only 0.636 / 0.620 / 0.636;
    #   the data-parallel grid alone 2.765 / 2.810 / 2.741. A twin at the head's speed
    #   would give nn at most 0.9 % (2.697 ms; cuBLAS 2.661): the rest is the mainloop.
    # - the twin launched first and the data-parallel waves after it by PDL (each entry
    #   with both griddepcontrol instructions): nn 50.25 / 50.31 vs 50.85 / 50.73, nt
    #   49.63 / 49.71 vs 50.29 / 50.40 (and a griddepcontrol.wait at the end of the
    #   data-parallel entries alone made am_bn's ptxas schedule slower: tn 47.5 vs 53.1).
    # - the same work in other orders (4096^3, nn / tn / nt / tt vs 50.88 / 53.38 / 50.33 /
    #   51.00): B's fragments loaded before A's 49.83 / 53.55 / 49.98 / 50.00; B's global
    #   copies issued before A's 50.73 / 53.39 / 50.33 / 50.82; both 49.79 / 53.51 / 50.08 /
    #   49.97; the refill after the k-block's FFMA 48.85 / 53.41 / 50.20 / 48.98; the
    #   register-staged stores after the fragment loads 45.57 / 53.39 / 50.40 / 45.62.
    # - the one-k-major entries (ak_bn, am_bk) through raw stages again, now with k-quad
    #   stages (CpVecK for the k-major operand, 122 registers; nn / tt, 4096^3 / 8192^3, vs
    #   50.87 / 52.49, 50.98 / 52.18): 50.36 / 51.63, 50.41 / 51.55; with FFMA order 2
    #   50.70 / 52.07, 50.81 / 52.10 (nt with it: 49.69 vs 50.36); TRANS_K 11: 50.33 / 51.69.
    # - KT_UNROLL 2 (two k-tiles per mainloop iteration) in the raw-stage data-parallel
    #   entry: nt 50.87 / 52.53 vs 50.36 / 51.45-51.54 (c3_pipelined.cu, kKtUnroll).
    # H100, session 13 (same-run comparisons; TFLOP/s or ratio to cuBLAS):
    # - per wave, the scalar epilogue (STG.32 from the fragments: 8 bytes in each of 16
    #   sectors per warp instruction) is a burst of 4x the L2 write requests from every
    #   CTA at once: 4096x4096x16 (4 waves, data-parallel) 109 us, through smem with 16-byte
    #   stores 40 us (cuBLAS 39 us); one wave of 264 tiles, K = 512..2048, spent ~20 us
    #   more than cuBLAS outside the mainloop.
    # - but any vector epilogue (16-byte stores from the fragments for beta == 0 or for
    #   all, or through smem in 16 STS orders and row-address forms, probes not kept) made ptxas
    #   schedule the register-staged entries' mainloops slower: one-wave slope nn 703-705
    #   vs 678 us per 4096 of K; 4096^3 nn 0.966-0.986x vs 0.983-0.984x, tt 0.99-1.03x vs
    #   1.031-1.046x (14 codes for ak_bn alone: none above the scalar one). For ak_bk it
    #   gained, with the STS in reverse fragment order and the row address from C and
    #   the tile origin (EPI_AK_BK): nt 0.993-0.999x vs 0.976-0.984x at 4096^3, 1.042 vs
    #   1.037x at 8192^3; 16-byte stores straight from the fragments spilled the twins.
    # - the stream-K twins through smem (ak_bn_sk and am_bn_sk; ak_bk_sk spills 156
    #   bytes): in the CuPy bench of the split launch (two rounds) nn 0.979 vs 0.985x, tt
    #   1.025-1.027 vs 1.033-1.034x, nt 1.002-1.003 vs 1.005x, tn equal: left scalar.
    # H100, session 14 (same-run comparisons; TFLOP/s 4096^3 / 8192^3 or ratio to cuBLAS).
    # The speed of a 128-register mainloop follows ptxas's register allocation, and that
    # follows the rest of the function. An offline gauge that ranked most variants below
    # (cuobjdump of one entry, the FFMAs of its interior loop): the count of operand
    # reuse flags, then the pairs of non-reused FFMA sources in one register bank
    # (r % 2). ak_bn before: 1388 reuse, 370 pairs.
    # - ak_bn (nn; tt runs on it transposed) with C through smem by bulk copies
    #   (cp.async.bulk per row, EPI_AK_BN 3): STS merged to STS.128 by NVVM 1280 reuse,
    #   nn 49.61 / 50.32 vs 50.84 / 52.47, tt 49.10 vs 50.91 (the mainloop alone:
    #   tt keeps scalar stores); other STS orders 1278-1327 reuse, tt -0.6 to -1.5 %; one
    #   lane per warp issuing 1328, a noinline copy function 1372 (loop 10 longer). Scalar
    #   st.shared in asm (not merged): 1385 reuse, tt equal, nn 51.41 / 52.72 vs 50.89 /
    #   52.44. A noinline LDS.128 / STG.128 read-back (EPI 1 split in two): 9 more loop
    #   instructions. wait_group.read instead of wait_group: equal.
    # - the ak_bn stream-K twin through smem by bulk copies as well (inline or noinline):
    #   nn 50.97 vs 51.43, 51.13 vs 51.55 (its loops' reuse drops by up to 50); again with
    #   order 6 and wait_group.read (noinline, loops' reuse as before): nn 51.13 / 52.93
    #   vs 51.55 / 52.99, and tt, which never takes the bulk branch (C^T column-major),
    #   50.59 vs 51.17: the code alone slows the twin. The gauge does not rank the twins.
    # - the both-k-major entry by bulk copies instead of EPI 1: nt 49.84 vs 50.20 (noisy).
    # - FFMA orders (outer_product): 6 (order 2 in 2x2 U blocks; 1388 reuse, 297 pairs)
    #   nn 51.56 / 52.97 vs 51.37 / 52.69, tn 53.34 / 54.97 vs 53.11 / 54.53, tt 51.16 /
    #   52.82 vs 50.87 / 52.55; the U blocks turned (m first, 1383 / 272, am_bn at 130
    #   registers) nn 50.90, tn 51.77; mirrored U 51.55 nn but tn 52.89; Z blocks (1385 /
    #   364) 51.39; Z turned 51.19; pairs along m, quads along m or n, 2x4 / 4x2 blocks:
    #   1082-1343 reuse (not run). FMA_ORDER_RAW 2 with it (raw entry 2815 vs 2751 reuse):
    #   nt 50.99 / 52.51 vs 50.15 / 52.21 (6: 48.53).
    # - STASH_K 11 / 12 / 14 / 15 with order 6: 1132-1382 reuse (not run).
    # - the stream-K twins with order 2 (their loops: same reuse, 285-293 vs 341-397
    #   pairs): equal in every layout (nn 51.55 / 53.02 vs 51.58 / 52.96): the bank
    #   pairs did not rank these.
    # - where nn 4096^3 stands with this config: 0.997-1.000x in nine same-run
    #   comparisons (probes and standalone benches, several machine starts; ours 51.5-
    #   52.0, cuBLAS 51.6-52.1), 1.006x in the gpu_check record run (docs/bench/).
    # - with order 6 and the bulk epilogue (4096^3 / 8192^3 vs 51.51 / 53.04 nn, 53.30 /
    #   54.91 tn, 51.21 / 52.64 nt, 51.19 / 52.81 tt): FRAG_DB 0 (gauge 1415 reuse / 276
    #   pairs, but the fragments' LDS latency in the open) nn 50.60 / 51.71, tn 49.77 /
    #   50.05; WARP_M 8 nn 51.41 / 52.88, tt 51.36 / 52.90; 3 stages nn 51.53 / 52.97, nt
    #   48.49 / 49.16.
    # - more FFMA orders of the U family (the order of the n pairs, the start and entry
    #   of each serpentine, mirrored blocks; 64 tables, offline): at best 1390 reuse /
    #   300 pairs against order 6's 1388 / 297 (not run).
    # H100, session 15 (same-run comparisons, TFLOP/s, 4096^3 unless noted; within one
    # process the nn ratio repeats to +-0.02 %: ten rounds 0.9978-0.9983x, ours 51.59,
    # cuBLAS 51.68):
    # - the register-staged groups' schedule (c3_pipelined.cu, load_k / stash_k): the second
    #   group loaded at k-block 1 and the first stored at 10 (STASH0_K 10, LOAD1_K 1; was
    #   8 and 8): nn 52.70 vs 51.90 and 52.30 vs 51.58 in two runs (1.013x / 1.012x), tt
    #   52.23 vs 51.53, 51.81 vs 51.18; 8192^3 nn 53.50 vs 52.97, tt 53.26 vs 52.79. Its
    #   LDG issues near k-block 3 (was 8.4): 10 k-blocks of cover instead of 5 (an L2
    #   128-byte fetch hint on the same loads, below, pointed there). Neighbours, nn:
    #   (LOAD1_K, STASH0_K, STASH_K) (2, 10, 13) 52.27 vs 51.90, (2, 8, 13) 52.12, (2, 9,
    #   13) 51.82, (1, 9, 13) 51.49 vs 51.58, (1, 12, 13) 51.43, (1, 11, 15) 51.68, (4, 10,
    #   13) 51.61 vs 51.59, (8, 10, 13) 51.51, (6, 10, 13) 51.03, (5, 9, 13) 50.97.
    # - the same loads with cache hints (an asm or __ldg load, which NVVM schedules
    #   otherwise: 1185 instructions and 1354 reuse flags vs 1178 / 1388, the same loop for
    #   every hint): plain 51.12, .L2::128B 51.27, .L1::no_allocate.L2::128B 51.19, .cg
    #   51.07, vs 51.51 for the registered build (tt 50.65 / 50.89 / 50.72 / 50.66 vs 51.16);
    #   .L2::128B with STASH_K 14 / 15 and order 2: 50.94-51.44. A prefetch.global.L2 of
    #   the group's next k-tile: 43 instructions more per k-tile (offline, not run).
    # - FFMA register-bank conflicts, counted with the reuse cache feeding the next
    #   instruction's same operand slot (630 per k-tile in ak_bn, 613 am_bn): the
    #   accumulators pinned to register pairs {c(m,n+1), c(m,n)} by a st.shared.v2
    #   epilogue (then a fix-up pass over the smem tile) cut them to 398 / 301, but nn
    #   49.39 vs 51.48 (ak_bn spills 24 bytes), tn 52.70 vs 53.39 (am_bn at the 128 cap),
    #   nt 50.84 vs 51.24 (1714 -> 1300 per 2 k-tiles); the v2 stores unswapped (942
    #   conflicts) nn 49.52, nt 50.02.
    # - the stream-K twins without their whole-tile loop (no whole tiles in split
    #   launches): ak_bn_sk then fits double-buffered fragments without spills (190 spill
    #   instructions with the loop), but nn 51.33 / 51.13 (in place / double-buffered) vs
    #   51.59, tt 50.99 / 50.70 vs 51.17; tn 53.56 vs 53.36, nt equal, 8192^3 within 0.2 %.
    # - the co-resident CTAs of the first wave started half or a quarter of a k-tile apart
    #   (__nanosleep): within 0.1 % in every layout.
    # - the refill clamped to the last k-tile instead of skipped (no branch): ak_bn 1167
    #   instructions but 1310 reuse flags, am_bn 168 registers (offline, not run).
    _pipe("cute_pipelined", 128, 128, 16, 4, trans_k=13, stream_k=1, fma_order=6,
          fma_order_raw=2, min_blocks_mn=1, stash_k=13, stash0_k=10, load1_k=1, kq_layout=7,
          kt_unroll=2, epi_ak_bk=1, epi_ak_bn=3),
    _pipe("cute_pipelined_128x128x8", 128, 128, 8, 4),
    _pipe("cute_pipelined_64x128x8", 64, 128, 8, 4, thr_m=8, thr_n=16, min_blocks=3),
]
