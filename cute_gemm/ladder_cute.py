"""The CuTe ladder, as registry data (see registry.py for the fields)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .records import (CutModel, FixedSmem, GemmOf, Kernel, PersistentGrid, SplitGrid, TileGridMN,
                      TmaBoxes, Variant)

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


def _multistage(name: str, bm: int, bn: int, bk: int, stages: int) -> Kernel:
    # cp.async cannot transpose: only the m-/n-major operands of an entry go in 16-byte
    # vectors, so only they need the alignment (align_roles); k-major ones go 4 bytes at a time
    vec = tuple(Variant(f"cute_multistage_a{a}_b{b}", a_major=a, b_major=b, c_major="any", align=4,
                        align_roles=("a" if a == "m" else "") + ("b" if b == "n" else ""),
                        extent_align=4)
                for a, b in (("m", "n"), ("m", "k"), ("k", "n")))
    scalar = tuple(Variant(f"cute_multistage_a{a}_b{b}{'' if (a, b) == ('k', 'k') else '_s'}",
                           a_major=a, b_major=b, c_major="any")
                   for a, b in (("k", "k"), ("m", "n"), ("m", "k"), ("k", "n")))
    return Kernel(
        name=name,
        family="cute",
        source="cute/c3_multistage.cu",
        variants=vec + scalar,
        block=(256, 1, 1),
        grid=TileGridMN(bm, bn),
        defines=(("BLK_M", bm), ("BLK_N", bn), ("BLK_K", bk), ("STAGES", stages)),
        tile=(bm, bn, bk),
        summary=f"cp.async straight into a {stages}-stage smem ring (zero-filled residues), one barrier "
                "per k-tile, TiledMMA from smem",
        seed="CuTe sgemm_sm80 (cp.async multistage pipeline)",
    )


# Constants of the tuned kernel that the registry also needs (pipelined_config.cuh; a test
# reads them back from the header): words of padding per k column of a padded smem stage,
# and the rows of a warp's thread patch in the TiledMMA.
SMEM_PAD = 4       # cg::kSmemPad
WARP_M = 4         # cg::kWarpM

EPILOGUES = ("scalar", "smem16", "bulk")    # cg::Epi (smem_epilogue.cuh)
# static smem of a stream-K twin (its schedule and positions, 48 bytes), as the 128-byte
# alignment of the dynamic smem behind it rounds it (tile_scheduler.cuh, c3_pipelined.cu)
TWIN_STATIC_SMEM = 128


def kquad_stage(ext: int, bk: int) -> tuple[int, int]:
    """(quad stride, stage size) in words of a k-quad compute stage of extent `ext` along
    m/n (include/cute_gemm/kquad_stages.cuh, StageLayout and kStage): the 4 columns of a
    k-quad unpadded, quads 4*EXT + 32/(BLK_K/4) words apart, stages BLK_K*EXT + 32. Also
    what the layout dumps draw (layouts.py)."""
    return 4 * ext + 32 // (bk // 4), bk * ext + 32


@dataclass(frozen=True)
class PipelinedConfig:
    """One configuration of the tuned kernel (kernels/cute/c3_pipelined.cu), compiled as its
    `struct Config` (cpp()): every field a static constexpr member of the same name. What each
    knob does: include/cute_gemm/pipelined_config.cuh; why each value: the anchors in
    docs/tuning/cute_pipelined.md. The defaults here are the only ones; None means "derived
    from the tile" (resolved below). What never varies is a constant of the C++ code."""
    blk_m: int
    blk_n: int
    blk_k: int
    stages: int                      # k-tiles in the smem ring
    thr_m: int = 16                  # threads along m and n (the block: thr_m * thr_n)
    thr_n: int = 16
    min_blocks: int = 2              # __launch_bounds__ CTAs per SM
    min_blocks_mn: int | None = None     # ... of the am_bn entry (#register-cap); None: min_blocks
    fma_order: int = 0               # #ffma-order
    fma_order_raw: int = 0
    load1_k: int | None = None       # #staged-groups; None: blk_k / 2
    stash0_k: int | None = None      # None: blk_k / 2
    stash_k: int | None = None       # None: blk_k - 1
    trans_k: int | None = None       # #trans-k; None: blk_k / 2
    kq_layout: int = 0               # #k-quad-stages (bits: raw-fed, register-staged, in twins)
    kt_unroll: int = 1               # #kt-unroll
    epi_ak_bk: str = "scalar"        # #epilogue: one of EPILOGUES
    epi_ak_bn: str = "scalar"
    stream_k: bool = False           # #stream-k: persistent twins, started by PDL on sm_90+
    twin_am_bk: bool = False         # #skinny: am_bk's own twin (else ak_bn's on C^T)
    twins_scalar: bool = False       # #skinny: twins of the 4-byte entries too
    raw_k: bool = False              # #raw-k: a single k-major operand through raw stages

    def __post_init__(self):
        bk = self.blk_k
        for name, value in (("min_blocks_mn", self.min_blocks), ("load1_k", bk // 2),
                            ("stash0_k", bk // 2), ("stash_k", bk - 1), ("trans_k", bk // 2)):
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        for name in ("epi_ak_bk", "epi_ak_bn"):
            if getattr(self, name) not in EPILOGUES:
                raise ValueError(f"{name}={getattr(self, name)!r}: one of {EPILOGUES}")
        # kquad_stages.cuh (PipeGeometry asserts it too): at BLK_K 24 the quads sat 5 words
        # apart and the 16-byte fragment loads faulted (misaligned address)
        if self.kq_layout and (bk < 4 or bk % 4 or 8 % (bk // 4)):
            raise ValueError(f"kq_layout={self.kq_layout} with blk_k={bk}: k-quad stages take "
                             "BLK_K 4, 8, 16 or 32 (quads 32/(BLK_K/4) words apart, whole "
                             "16-byte columns)")

    @property
    def threads(self) -> int:
        return self.thr_m * self.thr_n

    @property
    def pdl(self) -> bool:
        """Split stream-K launches start the twin by programmatic dependent launch (sm_90+):
        the kernel's griddepcontrol comes with the twins (Kernel.pdl)."""
        return self.stream_k

    @property
    def dyn_smem(self) -> int:
        """Dynamic smem of the data-parallel entries: per operand 2 compute buffers + STAGES
        raw (k-major) stages; an m/n-major operand's STAGES compute stages fit in the same
        region (pipelined_mainloop.cuh)."""
        bm, bn, bk = self.blk_m, self.blk_n, self.blk_k
        own = 4 * bk * (2 * (bm + bn + 2 * SMEM_PAD) + self.stages * (bm + bn))
        # with twins, at least what a twin CTA takes (sk_smem and its static smem), so that
        # twin CTAs fit the smem carveout the data-parallel CTAs left (sk_smem's doc)
        return max(own, self.sk_smem + TWIN_STATIC_SMEM) if self.stream_k else own

    @property
    def sk_smem(self) -> int:
        """Dynamic smem of the stream-K twins (0 without them): A's region of the full
        layout, then B's stages — STAGES padded compute stages (am_bn_sk, ak_bn_sk), or 2
        compute buffers (k-quad ones with kq_layout bit 0) and STAGES raw stages (ak_bk_sk).
        Less than dyn_smem by the k-quad buffers' savings: with the twins' static smem (128
        bytes with the alignment of the dynamic smem) 2 twin CTAs then fit the same smem
        carveout as 2 data-parallel ones, so a twin CTA can take an SM slot while the other
        holds a data-parallel CTA (a programmatic dependent launch; the carveout of an SM
        changes only when empty). The kernel checks it against what it addresses."""
        if not self.stream_k:
            return 0
        bm, bn, bk, stages = self.blk_m, self.blk_n, self.blk_k, self.stages
        region_a = bk * (2 * (bm + SMEM_PAD) + stages * bm)
        mn_b = stages * bk * (bn + SMEM_PAD)
        kk_b = (2 * (kquad_stage(bn, bk)[1] if self.kq_layout & 1 else bk * (bn + SMEM_PAD))
                + stages * bk * bn)
        return 4 * (region_a + max(mn_b, kk_b))

    def cpp(self, name: str = "") -> str:
        """The C++ `struct Config` (with #line, so that compiler messages name the kernel
        source's own lines)."""
        def value(f: str) -> str:
            v = getattr(self, f)
            if f.startswith("epi_"):
                return f"cg::Epi::{v}"
            return ("true" if v else "false") if isinstance(v, bool) else str(v)

        def ctype(f: str) -> str:
            v = getattr(self, f)
            return "cg::Epi" if f.startswith("epi_") else "bool" if isinstance(v, bool) else "int"
        fields = [f.name for f in dataclasses.fields(self)] + ["sk_smem"]
        body = "".join(f"  static constexpr {ctype(f)} {f} = {value(f)};\n" for f in fields)
        return ("#include <cute_gemm/pipelined_config.cuh>\n"
                f"struct Config {{   // {name or 'a configuration'}: cute_gemm/ladder_cute.py, PipelinedConfig\n"
                f"{body}}};\n#line 1 \"cute/c3_pipelined.cu\"\n")


def _small(name: str, bm: int, bn: int, bk: int, stages: int, kq_layout: int = 7,
           raw_k: bool = True, **cfg) -> Kernel:
    """A small-tile stream-K configuration for the shapes cute_pipelined loses (sm_90 only: on
    sm_80 ptxas spills the 4-byte entries' twins): BLK_K 16 with cute_pipelined's FFMA orders
    and staged-group positions, k-quad stages for k-major operands (twins included: 0-9 %
    faster where these configurations win, docs/tuning/auto.md#k-quads-small), a single
    k-major operand through raw stages (the whole ring as its prefetch distance: 2-17 %
    faster where they win, docs/tuning/cute_pipelined.md#raw-k), and twins for every entry,
    the 4-byte ones too."""
    return _auto(_pipe(name, PipelinedConfig(
        bm, bn, bk, stages, fma_order=6, fma_order_raw=2, load1_k=1, stash0_k=10, stash_k=13,
        trans_k=13, kq_layout=kq_layout, stream_k=True, twins_scalar=True, raw_k=raw_k, **cfg),
        tags=("fast",), min_arch=90))


def _pipe(name: str, cfg: PipelinedConfig, tags: tuple[str, ...] = ("fast",),
          transpose_skinny: bool = False, min_arch: int = 80) -> Kernel:
    """A configuration of the tuned kernel as a Kernel (transpose_skinny, min_arch: Kernel's)."""
    vec = dict(c_major="any", align=4, align_roles="ab", extent_align=4)

    # The persistent stream-K twins of the vector entries (cfg.stream_k), and the fill of
    # the last wave below which each is taken (streamk.stream_k_plan: the whole waves run
    # data-parallel in a first launch, the twin cuts the last one along K; on sm_90+ the
    # twin starts by programmatic dependent launch, PDL).
    # The twins are slower per tile than their data-parallel siblings, so each is taken only
    # below a fill of 0.93 (see docs/tuning/cute_pipelined.md#stream-k). am_bk has no twin of
    # its own (it spilled on sm_80): it takes ak_bn's on the transposed problem,
    # C^T = B^T A^T, where B^T is k-major and A^T n-major (the whole waves by ak_bn as well).
    # With twin_am_bk it has its own (a configuration that runs nn products transposed,
    # Kernel.transpose_skinny, runs them on am_bk); with twins_scalar the 4-byte entries
    # have theirs (extents not multiples of 4).
    fills = {("m", "n"): 0.93, ("k", "k"): 0.93, ("k", "n"): 0.93, ("m", "k"): 0.93}

    def sk(a, b, s=""):
        if not cfg.stream_k or (s and not cfg.twins_scalar):
            return {}
        if (a, b) == ("m", "k") and not s and not cfg.twin_am_bk:
            return dict(stream_k="cute_pipelined_ak_bn_sk", stream_k_fill=fills["k", "n"],
                        stream_k_swap=True)
        return dict(stream_k=f"cute_pipelined_a{a}_b{b}{s}_sk", stream_k_fill=fills[a, b])
    bm, bn, bk = cfg.blk_m, cfg.blk_n, cfg.blk_k
    through_smem = any(e != "scalar" for e in (cfg.epi_ak_bk, cfg.epi_ak_bn))
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
                 + tuple(Variant(f"cute_pipelined_a{a}_b{b}_s", a_major=a, b_major=b, c_major="any",
                                 **sk(a, b, "_s"))
                         for a, b in (("k", "k"), ("m", "k"), ("m", "n"), ("k", "n"))),
        block=(cfg.threads, 1, 1),
        grid=TileGridMN(bm, bn),     # the kernel remaps block ids (grouped CTA order)
        config=cfg,
        tile=(bm, bn, bk),
        dyn_smem=FixedSmem(cfg.dyn_smem),
        stream_k_smem=FixedSmem(cfg.sk_smem) if cfg.stream_k else None,
        summary=(f"{cfg.stages}-stage smem pipeline (cp.async 16 B along m/n; along k "
                 + ("via k-major raw smem stages), LDS.128 register " if cfg.raw_k else
                    "register-staged, or via k-major raw smem stages when both are k-major), "
                    "LDS.128 register ")
                 + f"double buffer, {bm // cfg.thr_m}x{bn // cfg.thr_n} FFMA per thread, unchecked interior CTAs, grouped CTA order"
                 + (", k-quad smem stages for k-major operands (conflict-free transposes)" if cfg.kq_layout else "")
                 + (f", {cfg.kt_unroll} k-tiles per mainloop iteration when both are k-major" if cfg.kt_unroll > 1 else "")
                 + (", C through smem (16-byte stores or bulk copies) in some entries" if through_smem else "")
                 + (", stream-K persistent launch when the tiles leave a partial last wave" if cfg.stream_k else "")
                 + (" (4-byte entries too)" if cfg.stream_k and cfg.twins_scalar else "")
                 + (", C^T = B^T A^T where N is skinny" if transpose_skinny else "")),
        seed="CuTe sgemm_sm80 (cp.async pipeline)",
        tags=tags,
        transpose_skinny=transpose_skinny,
        min_arch=min_arch,
    )


def _mma_sm80(name: str, bm: int, bn: int, bk: int, stages: int, warps: tuple[int, int] = (2, 2)) -> Kernel:
    # 16-byte vectors of A and B (cp.async, ldmatrix): align 8 (16-bit) / 4 (tf32) on A and B;
    # residues at element granularity (cp.async src-size), so no extent_align, but a vector at
    # a row end is fetched whole (whole_vectors); C any strides
    def entry(prec: str, a: str, b: str, out: str) -> Variant:
        suffix = "" if out == "float32" else f"_o{prec}"
        return Variant(f"cute_mma_sm80_{prec}_a{a}_b{b}{suffix}", a_major=a, b_major=b,
                       c_major="any", align=4 if prec == "tf32" else 8, align_roles="ab",
                       whole_vectors=True, precision=prec, out_dtype=out)
    sixteen = tuple(entry(p, a, b, out) for p, own in (("bf16", "bfloat16"), ("fp16", "float16"))
                    for out in ("float32", own) for a, b in _MAJORS)
    # 128 bytes of k per smem row: bk 16-bit elements, bk/2 for tf32; STAGES stages of A and B
    smem = stages * (bm + bn) * bk * 2
    return Kernel(
        name=name,
        family="cute",
        source="cute/c4_mma_sm80.cu",
        variants=sixteen + (entry("tf32", "k", "k", "float32"),),
        block=(32 * warps[0] * warps[1], 1, 1),
        grid=TileGridMN(bm, bn),
        defines=(("BLK_M", bm), ("BLK_N", bn), ("BLK_K", bk), ("STAGES", stages),
                 ("WARPS_M", warps[0]), ("WARPS_N", warps[1])),
        tile=(bm, bn, bk),
        dyn_smem=FixedSmem(smem),
        min_arch=80,
        summary=f"tensor cores (mma.sync bf16/fp16/tf32, {warps[0]}x{warps[1]} warps of "
                f"{bm // warps[0]}x{bn // warps[1]}), ldmatrix from swizzled smem, "
                f"{stages}-stage cp.async ring with element-granular zero-filled residues",
        seed="CuTe sgemm_sm80 tutorial (half)",
    )


def _auto(k: Kernel) -> Kernel:
    """k as a candidate of gemm()'s selector (cute_gemm/auto.py; `cute-gemm tune` times them)."""
    return dataclasses.replace(k, tags=k.tags + ("auto",))


CUTE: list[Kernel] = [
    _gmem("cute_gmem", 16, 16, 8),
    _smem("cute_smem", 128, 128, 8),
    _smem("cute_smem_64x128", 64, 128, 8),
    _tiled("cute_tiled", 128, 128, 8),
    _multistage("cute_multistage", 128, 128, 8, 4),
    # cute_pipelined: each kept decision, its measurements and what lost, in docs/tuning/:
    # 128x128x16, 4 stages: see docs/tuning/cute_pipelined.md#tile-and-stages
    # trans_k=13 (late raw -> compute transpose): see docs/tuning/cute_pipelined.md#trans-k
    # stream_k=True (split launch, stream-K twin for the last wave): see docs/tuning/cute_pipelined.md#stream-k
    # fma_order=6, fma_order_raw=2: see docs/tuning/cute_pipelined.md#ffma-order
    # min_blocks_mn=1 (am_bn without the 128-register cap): see docs/tuning/cute_pipelined.md#register-cap
    # stash_k=13, stash0_k=10, load1_k=1: see docs/tuning/cute_pipelined.md#staged-groups
    # kq_layout=7 (k-quad compute stages): see docs/tuning/cute_pipelined.md#k-quad-stages
    # kt_unroll=2 (both-k-major entry): see docs/tuning/cute_pipelined.md#kt-unroll
    # epi_ak_bk="smem16", epi_ak_bn="bulk" (C through smem; bulk copies): see docs/tuning/cute_pipelined.md#epilogue
    _auto(_pipe("cute_pipelined", PipelinedConfig(
        128, 128, 16, 4, min_blocks_mn=1, fma_order=6, fma_order_raw=2, load1_k=1, stash0_k=10,
        stash_k=13, trans_k=13, kq_layout=7, kt_unroll=2, epi_ak_bk="smem16", epi_ak_bn="bulk",
        stream_k=True))),
    _pipe("cute_pipelined_128x128x8", PipelinedConfig(128, 128, 8, 4)),
    _pipe("cute_pipelined_64x128x8", PipelinedConfig(64, 128, 8, 4, thr_m=8, min_blocks=3)),
    # the shapes cute_pipelined loses (docs/tuning/cute_pipelined.md#skinny): skinny M or N
    # (64-row tiles, C^T where N is skinny), residues (the 4-byte entries' twins), 512^3-1024^3.
    # sm_90 only: on sm_80 ptxas spills the 4-byte entries' twins at 170 registers
    # raw_k: a single k-major operand through raw stages (docs/tuning/cute_pipelined.md#raw-k)
    _auto(_pipe("cute_pipelined_64x128x16_sk", PipelinedConfig(
        64, 128, 16, 3, thr_m=8, min_blocks=3, fma_order=6, fma_order_raw=2, load1_k=1,
        stash0_k=10, stash_k=13, trans_k=13, kq_layout=7, stream_k=True, twin_am_bk=True,
        twins_scalar=True, raw_k=True), tags=("fast",), transpose_skinny=True, min_arch=90)),
    # ... and M or N of 32 or less (C^T where N is), where 64-row tiles compute half padding:
    # 32x128 tiles, 64 threads of 8x8 (8192x32x4096: 0.80x cuBLAS against 0.68x; slower from
    # 64 rows on, where gemm() takes the others: docs/tuning/cute_pipelined.md#skinny)
    _auto(_pipe("cute_pipelined_32x128x16_sk", PipelinedConfig(
        32, 128, 16, 4, thr_m=4, min_blocks=4, fma_order=6, fma_order_raw=2, load1_k=1,
        stash0_k=10, stash_k=13, trans_k=13, kq_layout=7, stream_k=True, twin_am_bk=True,
        twins_scalar=True), tags=("fast",), transpose_skinny=True, min_arch=90)),
    # ... and small products (128^3, 256^3): 64 threads a CTA, 6 CTAs an SM
    _auto(_pipe("cute_pipelined_64x64x8_sk", PipelinedConfig(
        64, 64, 8, 4, thr_m=8, thr_n=8, min_blocks=6, fma_order=6, fma_order_raw=2,
        stream_k=True, twins_scalar=True), tags=("fast",), min_arch=90)),
    # ... and the smallest (128^3: 10.1 us against 14.7): 4x4 accumulators a thread, so each
    # thread's chain of FFMAs is a quarter as long; BLK_K 16 so that the k-major copies'
    # 128 threads (32 rows of 4 vectors) fit the 32-row tile; 72-96 registers (at 8 CTAs an
    # SM, 64 registers, ptxas spilled), 5 CTAs an SM by smem (3 stages, 6 an SM: 2 % slower on
    # 16x4096x4096, its main use). docs/tuning/cute_pipelined.md#small-products
    _small("cute_pipelined_32x64x16_sk", 32, 64, 16, 4, thr_m=8, thr_n=16, min_blocks=5),
    # ... and tall-skinny products with N of 32 or less (8192x32x4096: 98 us against 111 for
    # the 32x128 tiles on C^T): 64x32 tiles of 4x4 accumulators, 3 stages so that 6 CTAs an
    # SM fit (4 % faster there than 4 stages at 5 an SM).
    # docs/tuning/cute_pipelined.md#skinny-n-and-1000, also for the next one
    _small("cute_pipelined_64x32x16_sk", 64, 32, 16, 3, thr_m=16, thr_n=8, min_blocks=6),
    # ... and 1000^3-1024^3, N of 128 (2-3 % ahead of 64x128 there): 128x64 tiles of 8x8
    _small("cute_pipelined_128x64x16_sk", 128, 64, 16, 4, thr_m=16, thr_n=8, min_blocks=3),
    # ... and tall-skinny N <= 32 with split_k (cuBLAS's shape there): 128x32 tiles of 8x4,
    # 128 threads, so a tile's K is read by a quarter as many CTAs as with 64x32 tiles
    # (docs/tuning/auto.md#more-tiles)
    _small("cute_pipelined_128x32x16_sk", 128, 32, 16, 4, thr_m=16, thr_n=8, min_blocks=4),
    # ... and 768^3-1024^3 with split_k: 64x64 tiles of 8x8, 64 threads; padded stages (k-quad
    # ones, at 168 registers, were 1-3 % slower where it wins) and register-staged k-major
    # operands (raw stages: 2-8 % slower, docs/tuning/cute_pipelined.md#raw-k)
    _small("cute_pipelined_64x64x16_sk", 64, 64, 16, 4, kq_layout=0, raw_k=False, thr_m=8,
           thr_n=8, min_blocks=6),
    # tensor cores (Ampere mma.sync), after the SIMT stages. 128x256 with 2x4 warps (1 CTA per
    # SM, 144 KB smem): 0.51-0.54x cuBLAS bf16 against 0.44-0.51x for 128x128 with 2x2 warps
    # (docs/tuning/cute_mma_sm80.md#tile-shape)
    _auto(_mma_sm80("cute_mma_sm80", 128, 256, 64, 3, (2, 4))),
]


# ---- Hopper tensor-core stages (sm_90a) -----------------------------------------------
# Precisions and what C may hold (records.Variant.precision / out_dtype), with the suffix the
# entry names use. bf16/fp16 take either major of A and B (GMMA reads mn-major 16-bit operands
# through the smem descriptor); tf32 only k-major ones (the runtime copies the others).
_TC_OUTS = (("bf16", "float32", "f32"), ("bf16", "bfloat16", "bf16"),
            ("fp16", "float32", "f32"), ("fp16", "float16", "fp16"), ("tf32", "float32", "f32"))
_TC_ITEM = {"bf16": 2, "fp16": 2, "tf32": 4}


def tma_boxes(precision: str, a_major: str, b_major: str, bm: int, bn: int,
              b_parts: int = 1, row_bytes: int = 128) -> TmaBoxes:
    """The TMA boxes (include/cute_gemm/sm90_operand.cuh, OperandTile::kBox0/kBox1) of one
    stage: a k-tile is 128 bytes of k; a k-major operand comes in one (BLK_K, EXT) box, an
    mn-major one in EXT/64 boxes (64, BLK_K) (64 16-bit elements: one 128-byte swizzle row).
    b_parts: the CTAs of a cluster that share B tiles, each loading (and multicasting) 1/b_parts
    of them: a k-major B box is then (BLK_K, BLK_N / b_parts). row_bytes: the swizzle width
    (128, or 64: k-tiles of 64 bytes, 32-element slabs).

    tf32 takes an mn-major operand only as RS wgmma's register A (sm90_register_operand.cuh,
    RegisterOperand::kBox0/kBox1): (32, BLK_K) boxes of 128-byte k-lines. An m-major A is that
    operand; an n-major B becomes it in the transposed problem C^T = B^T A^T, whose BLK_M rows
    are B's columns and whose shared BLK_N-row k-major operand is A."""
    bk = row = row_bytes // _TC_ITEM[precision]
    if precision == "tf32" and (a_major, b_major) != ("k", "k"):
        if (a_major, b_major) == ("m", "k"):
            return TmaBoxes(a=(32, bk), b=(bk, bn // b_parts), swizzle=row_bytes)
        if (a_major, b_major) == ("k", "n"):
            return TmaBoxes(a=(bk, bn // b_parts), b=(32, bk), swizzle=row_bytes)
        raise ValueError(f"tf32 wgmma: A {a_major}-major with B {b_major}-major is not an entry")
    return TmaBoxes(a=(bk, bm) if a_major == "k" else (row, bk),
                    b=(bk, bn // b_parts) if b_major == "k" else (row, bk), swizzle=row_bytes)


def _tc_variants(prefix: str, bm: int, bn: int, b_parts: int = 1,
                 row_bytes: int = 128, tf32_majors: tuple[tuple[str, str], ...] = (("k", "k"),)
                 ) -> tuple[Variant, ...]:
    """tf32_majors: the (A, B) majors of the tf32 entries: k-major only for SS wgmma; c6 also
    reads an m-major A (or, transposed, an n-major B) into registers."""
    out = []
    for prec, dtype, suffix in _TC_OUTS:
        majors = tf32_majors if prec == "tf32" else (("k", "k"), ("k", "n"), ("m", "k"), ("m", "n"))
        for a, b in majors:
            out.append(Variant(f"{prefix}_{prec}_{suffix}_a{a}_b{b}", a_major=a, b_major=b,
                               c_major="any", align=16 // _TC_ITEM[prec], align_roles="ab",
                               precision=prec, out_dtype=dtype,
                               tma=tma_boxes(prec, a, b, bm, bn, b_parts, row_bytes),
                               # c6's tf32 k-major A, n-major B: C^T = B^T A^T inside the entry
                               walks_transposed=prec == "tf32" and (a, b) == ("k", "n"),
                               # tf32 wgmma reads an mn-major operand only from registers
                               register_a=prec == "tf32" and (a, b) != ("k", "k")))
    return tuple(out)


def _wgmma(name: str, bm: int, bn: int, stages: int) -> Kernel:
    return Kernel(
        name=name,
        family="cute",
        source="cute/c5_wgmma.cu",
        variants=_tc_variants("cute_wgmma", bm, bn),
        block=(128, 1, 1),
        grid=TileGridMN(bm, bn),
        defines=(("BLK_M", bm), ("BLK_N", bn), ("STAGES", stages)),
        tile=(bm, bn, 64),            # BLK_K: 128 bytes of k (64 bf16/fp16, 32 tf32)
        # stages of A and B (128 bytes of k each row), then a full and an empty mbarrier each
        dyn_smem=FixedSmem(stages * (bm + bn) * 128 + stages * 16),
        min_arch=90,
        arch_specific=True,
        summary=f"wgmma (one warpgroup, SS) on 128-byte swizzled smem, TMA loads into a "
                f"{stages}-stage ring of transaction barriers, zero-filled residues",
        seed="CuTe tutorial wgmma_tma_sm90",
        tags=("tensor-core",),
    )


CUTE += [
    _wgmma("cute_wgmma", 128, 128, 4),
]


@dataclass(frozen=True)
class WgmmaWsConfig:
    """One configuration of the warp-specialized Hopper kernel (kernels/cute/c6_wgmma_ws.cu),
    compiled as its `struct Config` (cpp()), every field a static constexpr int of the same
    name. BLK_K is not a knob: a k-tile is one 128-byte swizzle row (64 bf16/fp16, 32 tf32)."""
    blk_m: int = 128                 # 64 rows per consumer warpgroup
    blk_n: int = 256                 # one wgmma's N (at most 256)
    stages: int = 4                  # smem ring: (blk_m + blk_n) * k_bytes a stage
    k_bytes: int = 128               # a k-tile: one swizzle row (128 or 64 bytes of k)
    consumers: int = 2               # consumer warpgroups (the block: 128 * (1 + consumers))
    group_m: int = 16                # tile rows per group of the grouped tile order
    cluster_m: int = 2               # CTAs along m of a cluster, sharing (multicasting) B tiles
    producer_regs: int = 40          # setmaxnreg of the producer warpgroup ...
    consumer_regs: int = 232         # ... and of each consumer warpgroup
    promote: int = 0                 # k-tiles per tensor-core sum, then added into a float32
                                     # register sum (0: never; twice the accumulators)
    tail_split: int = 0              # the last wave's units cut along K into up to this many
                                     # pieces (0: never; sm90_tail_split.cuh): split-K where
                                     # the units are fewer than the clusters
    split_parts: int = 0             # 2: A and B are cute_3xtf32's split, [small | big] per
                                     # chunk, read as its three products (sm90_split_parts.cuh)

    def __post_init__(self):
        if self.blk_m != 64 * self.consumers:
            raise ValueError("blk_m: 64 rows per consumer warpgroup")
        if self.split_parts not in (0, 2) or (self.split_parts and self.promote != 3):
            raise ValueError("split_parts: 0, or 2 with promote = 3 (a window: a chunk's three products)")
        if self.producer_regs + self.consumers * self.consumer_regs > 512:
            raise ValueError("setmaxnreg: more registers than one CTA has (65536 / 128 per warpgroup)")

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def blk_k(self) -> int:
        """k per stage of the 16-bit entries (k_bytes / 2; the tf32 ones: k_bytes / 4)."""
        return self.k_bytes // 2

    @property
    def window_bytes(self) -> int:
        """The k of A's rows a window covers, in bytes: one k-tile, or promote k-tiles, or
        with split_parts one chunk, stored as split_parts k-tiles."""
        return (self.split_parts or max(self.promote, 1)) * self.k_bytes

    @property
    def dyn_smem(self) -> int:
        """The stages of A and B, then the ring's full and empty mbarriers."""
        return self.stages * (self.blk_m + self.blk_n) * self.k_bytes + self.stages * 16

    def cpp(self, name: str = "") -> str:
        body = "".join(f"  static constexpr int {f.name} = {getattr(self, f.name)};\n"
                       for f in dataclasses.fields(self))
        return (f"struct Config {{   // {name or 'a configuration'}: cute_gemm/ladder_cute.py, WgmmaWsConfig\n"
                f"{body}}};\n#line 1 \"cute/c6_wgmma_ws.cu\"\n")


# the cut of a plain (unpromoted) walk, in k-tiles: docs/tuning/cute_wgmma_ws.md#split-k
_PLAIN_CUT = CutModel(min_windows=16, overhead=2, fixup=3, rounds=1)

# c6's entries of a configuration compiled for one (CG_WS_ONLY): cute_3xtf32's GEMMs
_WS_ONLY = {None: (0, None), "tf32": (1, "cute_wgmma_ws_tf32_f32_ak_bk"),
            "fp16": (2, "cute_wgmma_ws_fp16_f32_ak_bk")}


def _wgmma_ws(name: str, cfg: WgmmaWsConfig, only: str | None = None) -> Kernel:
    """only: "tf32" or "fp16", the configuration's k-major entry of that precision (float
    out) alone, as cute_3xtf32's GEMMs run them on its split operands."""
    bm, bn = cfg.blk_m, cfg.blk_n
    define, entry = _WS_ONLY[only]
    # tf32: k-major SS entry, and RS entries for an m-major A / n-major B
    tf32 = (("k", "k"), ("k", "n"), ("m", "k"))
    variants = _tc_variants("cute_wgmma_ws", bm, bn, cfg.cluster_m, cfg.k_bytes, tf32)
    return Kernel(
        name=name,
        family="cute",
        source="cute/c6_wgmma_ws.cu",
        variants=tuple(v for v in variants if entry is None or v.entry == entry),
        defines=(("CG_WS_ONLY", define), ("CG_WS_TAIL_SPLIT", int(cfg.tail_split > 0))),
        block=(cfg.threads, 1, 1),
        grid=PersistentGrid(bm, bn, cluster=cfg.cluster_m, tail_split=cfg.tail_split,
                            window_bytes=cfg.window_bytes,
                            partials=2 if cfg.promote else 1,
                            cut=CutModel() if cfg.promote else _PLAIN_CUT),
        config=cfg,
        tile=(bm, bn, cfg.blk_k),
        dyn_smem=FixedSmem(cfg.dyn_smem),
        min_arch=90,
        arch_specific=True,
        summary=f"warp-specialized wgmma: a TMA producer warp, {cfg.consumers} consumer warpgroups "
                f"(setmaxnreg {cfg.producer_regs}/{cfg.consumer_regs}), {cfg.stages}-stage ring, "
                f"one batch in flight, persistent CTAs over grouped tiles"
                + (f", clusters of {cfg.cluster_m} along m multicasting B" if cfg.cluster_m > 1 else "")
                + (f", accumulators promoted to a compensated float32 sum every {cfg.promote} "
                   "k-tiles, half of it under the next k-tile's wgmmas (an operand's ±Inf comes out NaN "
                   "there: cute_3xtf32 takes fp32 for those)" if cfg.promote else "")
                + (", the last wave's tiles cut along K (a deterministic fixup)" if cfg.tail_split else "")
                + ("" if only else ", tf32 m-major A (or n-major B, on C^T = B^T A^T) from "
                   "registers (RS wgmma)")
                + ", alpha/beta epilogue",
        seed="CUTLASS sm90 TMA warp-specialized cooperative kernel",
        tags=("tensor-core", "fast"),
    )


CUTE += [
    # cute_wgmma_ws: why each value, in docs/tuning/cute_wgmma_ws.md:
    # 128x256 tiles, 4 stages, 2 consumers: #how-cute_wgmma_ws-got-there (128x192x5 lost)
    # cluster_m=2 (B multicast): #how-cute_wgmma_ws-got-there (cluster 4 lost: 120 CTAs fit)
    # group_m=16: same section (8 and 32 lost); k_bytes=128 (64-byte rows, 8 stages lost)
    # tail_split=32: #split-k (skinny and long-K products: fewer units than clusters)
    _auto(_wgmma_ws("cute_wgmma_ws", WgmmaWsConfig(tail_split=32))),
    # ... and for products whose 128x256 tiles leave SMs idle (small, skinny, long-K): 128x64
    # and 128x128 tiles, the smem they leave turned into stages (8 and 6), no cluster (an
    # n-major B 64 wide has no two parts of whole 64-element slabs; at 128 wide a cluster of
    # 2 was slower); gemm()'s heuristic picks among the three: docs/tuning/cute_wgmma_ws.md#narrow-tiles
    _auto(_wgmma_ws("cute_wgmma_ws_128x64", WgmmaWsConfig(blk_n=64, stages=8, cluster_m=1,
                                                          tail_split=32))),
    _auto(_wgmma_ws("cute_wgmma_ws_128x128", WgmmaWsConfig(blk_n=128, stages=6, cluster_m=1,
                                                           tail_split=32))),
    # fp32-accurate sums (cute_3xtf32's GEMM, with split_parts = 2): 64x192 per warpgroup holds two sets of
    # accumulators in 232 registers; windows of 3 k-tiles, one 3xTF32 chunk ending with its
    # big·big k-tile (128x128, 2 consumers: as accurate, slower at 8192^3; a warpgroup
    # stagger: slower): docs/tuning/cute_3xtf32.md#the-accumulation; the last wave cut along
    # K (4096^3: 5.33 waves): #the-last-wave
    _wgmma_ws("cute_wgmma_ws_promote", WgmmaWsConfig(blk_n=192, promote=3, tail_split=8),
              only="tf32"),
]


# ---- fp32 accuracy on tensor cores (3xTF32, its products in fp16) -------------------------------
def _three_tf32(name: str, gemm: Kernel, fallback: str) -> Kernel:
    # the passes read any strides (so every layout costs the same: no relayout copy) and
    # write the k-major A' and B' that the GEMM's fp16 k-major entry takes as they are
    passes = tuple(Variant(f"{name}_{p}", a_major="any", b_major="any", c_major="any",
                           precision="fp32_3xtf32") for p in ("range_a", "range_b", "split_a",
                                                              "split_b", "norms_b", "finish",
                                                              "fix", "refine"))
    cfg = gemm.config
    return Kernel(
        name=name,
        family="cute",
        source="cute/c7_3xtf32.cu",
        variants=passes,
        block=(32, 8, 1),
        grid=SplitGrid(32),
        min_arch=90,
        arch_specific=True,
        summary=f"3xTF32 in fp16: each fp32 operand split into big + small (11 significant bits "
                f"each, as tf32 keeps), scaled per row of A / column of B into fp16's range, "
                f"k-major per chunk of 64 k; c6's promoted fp16 GEMM reads three products a "
                f"chunk (small·big, big·small, big·big) and undoes the scales; the residuals of "
                f"elements below fp16's normal range added after it, rows whose sum cancels "
                f"recomputed with float64 sums: fp32 accuracy; "
                f"{fallback} where the split cannot carry the inputs (±Inf, magnitudes far below "
                f"their row's largest)",
        seed="CUTLASS example 27 (3xTF32), on c6's GEMM",
        tags=("tensor-core",),
        # a chunk: a 128-byte fp16 k-tile, stored as two parts, read as three products
        gemm_of=GemmOf(gemm, "fp16", cfg.split_parts, fallback,
                       k_chunk=cfg.k_bytes // 2, k_reads=cfg.promote),
    )


# cute_3xtf32's GEMM: cute_wgmma_ws_promote's configuration in fp16, reading the split's two
# parts a chunk as its three products (sm90_split_parts.cuh) into a scratch C that c7's finish
# pass unscales. Not registered: it is no GEMM of A and B.
_3XTF32_GEMM = _wgmma_ws("cute_3xtf32_gemm", WgmmaWsConfig(blk_n=192, promote=3, tail_split=8,
                                                          split_parts=2), only="fp16")

CUTE += [
    # why a pre-pass and not a split inside the GEMM: docs/tuning/cute_3xtf32.md
    _auto(_three_tf32("cute_3xtf32", _3XTF32_GEMM, "cute_pipelined")),
]
