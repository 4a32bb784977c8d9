"""The CuTe ladder, as registry data (records.py has the fields)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..base.precisions import DTYPE, PRECISION
from .records import (STREAM_K_COUNTERS, FixedSmem, FixedTile, Kernel, TileGridMN, TileWalkN,
                      Variant, config_struct, constexprs, device_constants)

_MAJORS = tuple((a, b) for a in ("k", "m") for b in ("n", "k"))


@dataclass(frozen=True)
class TileConfig(FixedTile):
    """A CuTe stage's configuration (c0-c5, c8): cpp() writes THREADS (the source
    static_asserts its thread layouts against it) and each knob that is set as a
    `constexpr int`. The tensor-core stages' BLK_K is 128 bytes of 16-bit k (tf32: half)."""
    threads: int
    blk_m: int
    blk_n: int
    blk_k: int
    stages: int | None = None        # smem ring (c3, c4, c5)
    warps_m: int | None = None       # the TiledMMA's warps (c4)
    warps_n: int | None = None
    dyn_smem: int = 0                # dynamic smem bytes (c4, c5: the ring; its formula at the stage)
    min_blocks: int | None = None    # __launch_bounds__ CTAs an SM, where the source takes it (c8)
    stream_k_counters: bool = False  # the source has stream-K twins (c4): streamk.cuh's counters

    def cpp(self, name: str) -> str:
        knobs = ("blk_m", "blk_n", "blk_k", "stages", "warps_m", "warps_n", "min_blocks")
        shared = device_constants(STREAM_K_COUNTERS=STREAM_K_COUNTERS) if self.stream_k_counters else ""
        return shared + constexprs(f"{name}: cute_gemm/registry/ladder_cute.py, TileConfig",
                                   THREADS=self.threads, **{f.upper(): getattr(self, f) for f in knobs})


def tiled_stage(cfg: TileConfig, **kw) -> Kernel:
    """A CuTe stage whose block, tile, grid and dynamic smem come from its TileConfig."""
    return Kernel(family="cute", config=cfg, block=(cfg.threads, 1, 1), tile=cfg.tile,
                  grid=TileGridMN(cfg.blk_m, cfg.blk_n),
                  dyn_smem=FixedSmem(cfg.dyn_smem), **kw)


def _majors(prefix: str, majors=_MAJORS, suffix: str = "", per=lambda a, b: {}, **kw) -> tuple[Variant, ...]:
    """An entry point <prefix>_a<A major>_b<B major><suffix> per (A, B) majors, C of any strides,
    with `per(a, b)`'s own fields."""
    return tuple(Variant(f"{prefix}_a{a}_b{b}{suffix}", a_major=a, b_major=b, c_major="any", **kw,
                         **per(a, b)) for a, b in majors)


def _simt(name: str, file: str, tile: tuple[int, int, int], variants: tuple[Variant, ...],
          summary: str, seed: str, stages: int | None = None) -> Kernel:
    """A SIMT stage (c0-c3) of 256 threads."""
    return tiled_stage(TileConfig(256, *tile, stages), name=name, source=f"cute/{file}.cu",
                       variants=variants, summary=summary, seed=seed)


_SMEM_SUMMARY = "local_tile/local_partition, k-tiles staged in shared memory, predicated residues"
# c2: 128-bit entry points for every (A major, B major), then the scalar ones, ending on row-major
_TILED = (_majors("cute_tiled", align=4, align_roles="ab", extent_align=4)
          + _majors("cute_tiled", tuple(reversed(_MAJORS)), "_s"))
# c3: cp.async cannot transpose: only m-/n-major operands go in 16-byte vectors and need the alignment
_MULTISTAGE = (_majors("cute_multistage", (("m", "n"), ("m", "k"), ("k", "n")), align=4, extent_align=4,
                       per=lambda a, b: dict(align_roles=("a" if a == "m" else "") + ("b" if b == "n" else "")))
               + _majors("cute_multistage", (("k", "k"),))
               + _majors("cute_multistage", (("m", "n"), ("m", "k"), ("k", "n")), "_s"))


# the tuned kernel's cg::kSmemPad and cg::kWarpM (pipelined_config.cuh): words of padding per k
# column of a padded stage, rows of a warp's thread patch
SMEM_PAD = 4
WARP_M = 4

EPILOGUES = ("scalar", "smem16", "bulk")    # cg::Epi (smem_epilogue.cuh)
# static smem of a stream-K twin (48 bytes) as the dynamic smem's 128-byte alignment rounds it
TWIN_STATIC_SMEM = 128


def kquad_stage(ext: int, bk: int) -> tuple[int, int]:
    """(quad stride, stage size) in words of a k-quad compute stage of extent `ext` along m/n
    (kquad_stages.cuh)."""
    return 4 * ext + 32 // (bk // 4), bk * ext + 32


@dataclass(frozen=True)
class PipelinedConfig(FixedTile):
    """A configuration of the tuned kernel (c3_pipelined.cu), compiled as its `struct Config`.
    What each knob does: pipelined_config.cuh; why each value: docs/design/cute_pipelined.md
    (the anchors). None: derived from the tile."""
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
        # kquad_stages.cuh asserts it too: at BLK_K 24 the 16-byte fragment loads were misaligned
        if self.kq_layout and (bk < 4 or bk % 4 or 8 % (bk // 4)):
            raise ValueError(f"kq_layout={self.kq_layout} with blk_k={bk}: k-quad stages take BLK_K 4, "
                             "8, 16 or 32 (quads 32/(BLK_K/4) words apart, whole 16-byte columns)")

    @property
    def threads(self) -> int:
        return self.thr_m * self.thr_n

    @property
    def pdl(self) -> bool:
        """The twins are started by programmatic dependent launch on sm_90+ (Kernel.pdl)."""
        return self.stream_k

    @property
    def dyn_smem(self) -> int:
        """Dynamic smem of the data-parallel entries: per operand 2 compute buffers + STAGES raw
        stages (room for STAGES compute stages of an m/n-major one too)."""
        bm, bn, bk = self.blk_m, self.blk_n, self.blk_k
        own = 4 * bk * (2 * (bm + bn + 2 * SMEM_PAD) + self.stages * (bm + bn))
        # with twins, at least a twin CTA's smem: twin CTAs fit the carveout data-parallel ones left
        return max(own, self.sk_smem + TWIN_STATIC_SMEM) if self.stream_k else own

    @property
    def sk_smem(self) -> int:
        """Dynamic smem of the stream-K twins (0 without): A's region, then B's STAGES padded
        compute stages, or 2 compute buffers and STAGES raw stages (ak_bk_sk); small enough for a
        PDL-launched twin to take a data-parallel CTA's slot in the carveout it left."""
        if not self.stream_k:
            return 0
        bm, bn, bk, stages = self.blk_m, self.blk_n, self.blk_k, self.stages
        region_a = bk * (2 * (bm + SMEM_PAD) + stages * bm)
        mn_b = stages * bk * (bn + SMEM_PAD)
        kk_b = (2 * (kquad_stage(bn, bk)[1] if self.kq_layout & 1 else bk * (bn + SMEM_PAD))
                + stages * bk * bn)
        return 4 * (region_a + max(mn_b, kk_b))

    def cpp(self, name: str = "") -> str:
        """The headers' constants and `struct Config`, with sk_smem and dyn_smem (the kernel
        static_asserts that what it addresses fits them)."""
        return (device_constants(STREAM_K_COUNTERS=STREAM_K_COUNTERS, SMEM_PAD=SMEM_PAD, WARP_M=WARP_M)
                + "#include <cute_gemm/pipelined_config.cuh>\n"
                + config_struct(self, name, "cute_gemm/registry/ladder_cute.py, PipelinedConfig",
                                derived=("sk_smem", "dyn_smem")))


# cute_pipelined's FFMA orders and staged-group positions (BLK_K 16), shared by its small configurations
_TUNED = dict(fma_order=6, fma_order_raw=2, load1_k=1, stash0_k=10, stash_k=13, trans_k=13)


def _small(name: str, bm: int, bn: int, bk: int, stages: int, kq_layout: int = 7,
           raw_k: bool = True, transpose_skinny: bool = False, **cfg) -> Kernel:
    """A small-tile stream-K candidate of gemm() for the shapes cute_pipelined loses: _TUNED,
    k-quad and raw stages, twins of every entry (sm_90 only: on sm_80 the 4-byte ones spill)."""
    return gemm_candidate(_pipe(name, PipelinedConfig(
        bm, bn, bk, stages, kq_layout=kq_layout, stream_k=True, twins_scalar=True, raw_k=raw_k,
        **_TUNED, **cfg), transpose_skinny=transpose_skinny, min_arch=90))


def _pipe(name: str, cfg: PipelinedConfig, tags: tuple[str, ...] = ("fast",),
          transpose_skinny: bool = False, min_arch: int = 80) -> Kernel:
    """A configuration of the tuned kernel as a Kernel (transpose_skinny, min_arch: Kernel's)."""
    # stream-K twins of the vector entries (and with twins_scalar the 4-byte ones), taken below a
    # last-wave fill of 0.93, with split-K shares; am_bk takes ak_bn's on C^T unless twin_am_bk
    def sk(a, b, s=""):
        if not cfg.stream_k or (s and not cfg.twins_scalar):
            return {}
        if (a, b) == ("m", "k") and not s and not cfg.twin_am_bk:
            return dict(stream_k="cute_pipelined_ak_bn_sk", stream_k_fill=0.93,
                        stream_k_swap=True, split="cute_pipelined_ak_bn_part")
        return dict(stream_k=f"cute_pipelined_a{a}_b{b}{s}_sk", stream_k_fill=0.93,
                    **({} if s else dict(split=f"cute_pipelined_a{a}_b{b}_part")))
    bm, bn = cfg.blk_m, cfg.blk_n
    extras = ((cfg.kq_layout, ", k-quad smem stages for k-major operands (conflict-free transposes)"),
              (cfg.kt_unroll > 1, f", {cfg.kt_unroll} k-tiles per mainloop iteration when both are k-major"),
              (any(e != "scalar" for e in (cfg.epi_ak_bk, cfg.epi_ak_bn)),
               ", C through smem (16-byte stores or bulk copies) in some entries"),
              (cfg.stream_k, ", stream-K persistent launch when the tiles leave a partial last wave"),
              (cfg.stream_k and cfg.twins_scalar, " (4-byte entries too)"),
              (transpose_skinny, ", C^T = B^T A^T where N is skinny"))
    return Kernel(
        name=name, family="cute", source="cute/c3_pipelined.cu",
        # 16-byte entries of any majors first, then the 4-byte fallbacks, ending on row-major
        variants=(_majors("cute_pipelined", (("m", "n"), ("m", "k"), ("k", "n"), ("k", "k")),
                          per=lambda a, b: {**sk(a, b), "batch": f"cute_pipelined_a{a}_b{b}_b"},
                          align=4, align_roles="ab", extent_align=4)
                  + _majors("cute_pipelined", (("k", "k"), ("m", "k"), ("m", "n"), ("k", "n")), "_s",
                            per=lambda a, b: {**sk(a, b, "_s"), "batch": f"cute_pipelined_a{a}_b{b}_s_b"})),
        grid=TileGridMN(bm, bn),     # the kernel remaps block ids (grouped CTA order)
        config=cfg, block=(cfg.threads, 1, 1), tile=cfg.tile, dyn_smem=FixedSmem(cfg.dyn_smem),
        stream_k_smem=FixedSmem(cfg.sk_smem) if cfg.stream_k else None,
        summary=(f"{cfg.stages}-stage smem pipeline (cp.async 16 B along m/n; along k "
                 + ("via k-major raw smem stages), LDS.128 register " if cfg.raw_k else
                    "register-staged, or via k-major raw smem stages when both are k-major), "
                    "LDS.128 register ")
                 + f"double buffer, {bm // cfg.thr_m}x{bn // cfg.thr_n} FFMA per thread, unchecked interior "
                 "CTAs, grouped CTA order" + "".join(text for on, text in extras if on)),
        seed="CuTe sgemm_sm80 (cp.async pipeline)",
        tags=tags, transpose_skinny=transpose_skinny, min_arch=min_arch)


def _mma_sm80(name: str, bm: int, bn: int, bk: int, stages: int, warps: tuple[int, int] = (2, 2),
              summary: str = "", any_align: bool = False, split: bool = False) -> Kernel:
    # each (precision, result, majors) in 16-byte copies; any_align: then in copies of any
    # alignment; split: each with a stream-K twin for split picks only (fill 0: c4_mma_sm80.cu)
    def entry(prec: str, a: str, b: str, out: str, copy_bytes: int) -> Variant:
        align = max(copy_bytes // PRECISION[prec].itemsize, 1)
        e = f"cute_mma_sm80_{prec}_{DTYPE[out].suffix}_a{a}_b{b}" + ("" if copy_bytes == 16 else f"_al{align}")
        return Variant(e, a_major=a, b_major=b, c_major="any", align=align, align_roles="ab",
                       precision=prec, out_dtype=out, stream_k=f"{e}_sk" if split else "",
                       stream_k_fill=0.0)
    # any_align: 4-byte copies (16-bit operands of even rows, most unaligned ones), then 16-bit
    # loads, read operands as they are (at 128x256 ptxas took over 10 minutes on those entries)
    sizes = (16, 4, 2) if any_align else (16,)
    sixteen = tuple(entry(p, a, b, out, g) for p in ("bf16", "fp16") for out in PRECISION[p].outs
                    for g in sizes for a, b in _MAJORS)
    tf32 = tuple(entry("tf32", "k", "k", "float32", g) for g in (16, 4)[:1 + any_align])
    # 128 bytes of k per smem row: bk 16-bit elements, bk/2 for tf32; STAGES stages of A and B
    smem = stages * (bm + bn) * bk * 2
    return tiled_stage(
        TileConfig(32 * warps[0] * warps[1], bm, bn, bk, stages, *warps, dyn_smem=smem,
                   stream_k_counters=True),
        name=name, source="cute/c4_mma_sm80.cu", variants=sixteen + tf32,
        summary=summary or (
            f"tensor cores (mma.sync bf16/fp16/tf32, {warps[0]}x{warps[1]} warps of "
            f"{bm // warps[0]}x{bn // warps[1]}), ldmatrix from swizzled smem, "
            f"{stages}-stage cp.async ring, element-granular residues"),
        seed="CuTe sgemm_sm80 tutorial (half)",
    )


def gemm_candidate(k: Kernel) -> Kernel:
    """k as a candidate of gemm()'s selector (select/auto.py)."""
    return dataclasses.replace(k, tags=k.tags + ("auto",))


CUTE: list[Kernel] = [
    _simt("cute_gmem", "c0_gmem", (16, 16, 8),
          _majors("cute_gmem") + (Variant("cute_gmem_any", a_major="any", b_major="any", c_major="any"),),
          "local_tile/local_partition straight from global memory, predicated residues",
          "naive (v0), in CuTe"),
    _simt("cute_smem", "c1_smem", (128, 128, 8), _majors("cute_smem"), _SMEM_SUMMARY,
          "CuTe sgemm_1 gemm_device"),
    _simt("cute_smem_64x128", "c1_smem", (64, 128, 8), _majors("cute_smem"), _SMEM_SUMMARY,
          "CuTe sgemm_1 gemm_device"),
    _simt("cute_tiled", "c2_tiled", (128, 128, 8), _TILED,
          "TiledCopy 128-bit loads + TiledMMA, padded smem, next k-tile prefetched to registers",
          "CuTe sgemm_2 (TiledCopy/TiledMMA)"),
    _simt("cute_multistage", "c3_multistage", (128, 128, 8), _MULTISTAGE,
          "cp.async straight into a 4-stage smem ring (zero-filled residues), one barrier per k-tile, "
          "TiledMMA from smem", "CuTe sgemm_sm80 (cp.async multistage pipeline)", stages=4),
    # cute_pipelined: why each value, and what lost: docs/design/cute_pipelined.md (the field's anchor)
    gemm_candidate(_pipe("cute_pipelined", PipelinedConfig(
        128, 128, 16, 4, min_blocks_mn=1, kq_layout=7, kt_unroll=2, epi_ak_bk="smem16",
        epi_ak_bn="bulk", stream_k=True, **_TUNED))),
    _pipe("cute_pipelined_128x128x8", PipelinedConfig(128, 128, 8, 4)),
    _pipe("cute_pipelined_64x128x8", PipelinedConfig(64, 128, 8, 4, thr_m=8, min_blocks=3)),
    # the shapes cute_pipelined loses (docs/design/cute_pipelined.md#skinny): skinny M or N, residues
    _small("cute_pipelined_64x128x16_sk", 64, 128, 16, 3, thr_m=8, min_blocks=3, twin_am_bk=True,
           transpose_skinny=True),
    # ... M or N of 32 or less, where 64-row tiles compute half padding
    _small("cute_pipelined_32x128x16_sk", 32, 128, 16, 4, raw_k=False, thr_m=4, min_blocks=4,
           twin_am_bk=True, transpose_skinny=True),
    # ... small products (128^3, 256^3): 64 threads a CTA, 6 CTAs an SM
    gemm_candidate(_pipe("cute_pipelined_64x64x8_sk", PipelinedConfig(
        64, 64, 8, 4, thr_m=8, thr_n=8, min_blocks=6, fma_order=6, fma_order_raw=2,
        stream_k=True, twins_scalar=True), min_arch=90)),
    # ... the smallest (128^3): 4x4 accumulators, a quarter the FFMA chain (cute_pipelined.md#small-products)
    _small("cute_pipelined_32x64x16_sk", 32, 64, 16, 4, thr_m=8, thr_n=16, min_blocks=5),
    # ... tall-skinny N <= 32: 3 stages so 6 CTAs an SM fit (cute_pipelined.md#skinny-n-and-1000)
    _small("cute_pipelined_64x32x16_sk", 64, 32, 16, 3, thr_m=16, thr_n=8, min_blocks=6),
    # ... 1000^3-1024^3, N of 128
    _small("cute_pipelined_128x64x16_sk", 128, 64, 16, 4, thr_m=16, thr_n=8, min_blocks=3),
    # ... tall-skinny N <= 32 with split_k: a tile's K read by 1/4 the CTAs of 64x32 (tables.md#more-tiles)
    _small("cute_pipelined_128x32x16_sk", 128, 32, 16, 4, thr_m=16, thr_n=8, min_blocks=4),
    # ... 768^3-1024^3 with split_k: k-quad and raw stages lost here (cute_pipelined.md#raw-k)
    _small("cute_pipelined_64x64x16_sk", 64, 64, 16, 4, kq_layout=0, raw_k=False, thr_m=8,
           thr_n=8, min_blocks=6),
    # tensor cores (Ampere mma.sync): 128x256 with 2x4 warps beat 128x128 (cute_mma_sm80.md#tile-shape)
    gemm_candidate(_mma_sm80("cute_mma_sm80", 128, 256, 64, 3, (2, 4))),
    # ... and small problems, where a launch's fixed costs are most of the time: more CTAs on few tiles
    gemm_candidate(dataclasses.replace(_mma_sm80(
        "cute_mma_sm80_64x64", 64, 64, 64, 3, (2, 2), summary=(
            "cute_mma_sm80 in 64x64 tiles of 2x2 warps for small problems: more CTAs, less "
            "to set up, operands of any alignment read as they are; split-K by its stream-K "
            "twins"), any_align=True, split=True),
        tags=("small",))),
    # ... and 128x64 tiles of 4x2 warps: each k-tile of B serves twice the rows of A, on tall or
    # long-K 16-bit problems (cute_mma_sm80.md#128x64)
    gemm_candidate(_mma_sm80("cute_mma_sm80_128x64", 128, 64, 64, 3, (4, 2), summary=(
        "cute_mma_sm80 in 128x64 tiles of 4x2 warps (256 threads): each k-tile of B serves "
        "twice 64x64's rows of A; operands of any alignment read as they are; split-K by its "
        "stream-K twins"), any_align=True, split=True)),
]


def _tiny_k(name: str, bm: int, bn: int, bk: int, min_blocks: int) -> Kernel:
    # one entry per (precision, result), every stride dynamic: any majors and alignment; its
    # CTAs walk their row's tiles of C, as many as fill the GPU twice
    k = tiled_stage(
        TileConfig(256, bm, bn, bk, min_blocks=min_blocks), name=name, source="cute/c8_tiny_k.cu",
        variants=tuple(Variant(f"{name}_{p}_{DTYPE[out].suffix}", a_major="any", b_major="any",
                               c_major="any", precision=p, out_dtype=out)
                       for p in ("fp32", "tf32", "bf16", "fp16") for out in PRECISION[p].outs),
        summary=f"a small K in one pass: {bm}x{bn} tiles, strips of A and B staged in smem as "
                f"float, {bm // 16}x{bn // 16} FFMA outputs a thread; any strides and alignment, "
                "every precision",
        seed="an outer-product sum (rank-K update)",
        tags=("tiny_k",),
    )
    return dataclasses.replace(k, grid=TileWalkN(bm, bn, ctas_per_sm=min_blocks, waves=2))


# Kernels for the shapes the ladder's stages lose, after the ladder: a K of a k-tile or two (auto.md#tiny-k)
SHAPES: list[Kernel] = [
    # 4x4 outputs a thread and its loads staged in 124 registers, 2 CTAs an SM (cute_tiny_k.md)
    gemm_candidate(_tiny_k("cute_tiny_k", 64, 64, 32, 2)),
]
