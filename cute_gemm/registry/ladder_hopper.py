"""The CuTe ladder's Hopper stages, after ladder_cute.CUTE: wgmma on TMA loads (c5), the
warp-specialized persistent kernel in its configurations (c6), and 3xTF32 on it (c7)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from .ladder_cute import TileConfig, gemm_candidate, tiled_stage
from ..base.precisions import DTYPE, PRECISION
from .records import (STREAM_K_COUNTERS, CutModel, FixedSmem, FixedTile, GemmOf, Kernel,
                      PersistentGrid, SplitGrid, TmaBoxes, Variant, config_struct,
                      device_constants)


# the tensor-core precisions of the 16- and 32-bit kernels; 8-bit: promoted configurations only
_TC_PRECISIONS = ("bf16", "fp16", "tf32")
_FP8 = tuple(p.name for p in PRECISION.values() if p.itemsize == 1)   # e4m3, e5m2 and mixed


def tma_boxes(precision: str, a_major: str, b_major: str, bm: int, bn: int,
              b_parts: int = 1, row_bytes: int = 128) -> TmaBoxes:
    """The TMA boxes of one stage (sm90_operand.cuh): a k-tile is row_bytes of k; a k-major
    operand comes in one (BLK_K, EXT) box, an mn-major one in (row, BLK_K) boxes; b_parts CTAs
    of a cluster each load 1/b_parts of B's tile. tf32 takes an mn-major operand only as RS
    wgmma's register A, in (32, BLK_K) boxes (an n-major B on C^T = B^T A^T)."""
    bk = row = row_bytes // PRECISION[precision].itemsize
    if precision == "tf32" and (a_major, b_major) != ("k", "k"):
        if (a_major, b_major) == ("m", "k"):
            return TmaBoxes(a=(32, bk), b=(bk, bn // b_parts), swizzle=row_bytes)
        if (a_major, b_major) == ("k", "n"):
            return TmaBoxes(a=(bk, bn // b_parts), b=(32, bk), swizzle=row_bytes)
        raise ValueError(f"tf32 wgmma: A {a_major}-major with B {b_major}-major is not an entry")
    return TmaBoxes(a=(bk, bm) if a_major == "k" else (row, bk),
                    b=(bk, bn // b_parts) if b_major == "k" else (row, bk), swizzle=row_bytes)


def _tc_variants(prefix: str, bm: int, bn: int, b_parts: int = 1,
                 row_bytes: int = 128, tf32_majors: tuple[tuple[str, str], ...] = (("k", "k"),),
                 cut: bool = False, precisions: tuple[str, ...] = _TC_PRECISIONS) -> tuple[Variant, ...]:
    """Every result type's entries of each of `precisions`: bf16/fp16 of either major of A and
    B, tf32 of tf32_majors, 8-bit k-major only (as wgmma reads them). cut: NAME_cut twins."""
    out = []
    for prec, dtype, suffix in ((p, o, DTYPE[o].suffix) for p in precisions for o in PRECISION[p].outs):
        majors = (tf32_majors if prec == "tf32" else (("k", "k"),) if prec in _FP8
                  else (("k", "k"), ("k", "n"), ("m", "k"), ("m", "n")))
        for a, b in majors:
            entry = f"{prefix}_{prec}_{suffix}_a{a}_b{b}"
            out.append(Variant(entry, a_major=a, b_major=b, cut=f"{entry}_cut" if cut else "",
                               c_major="any", align=16 // PRECISION[prec].itemsize, align_roles="ab",
                               precision=prec, out_dtype=dtype,
                               tma=tma_boxes(prec, a, b, bm, bn, b_parts, row_bytes),
                               # c6's tf32 k-major A, n-major B: C^T = B^T A^T inside the entry
                               walks_transposed=prec == "tf32" and (a, b) == ("k", "n"),
                               # tf32 wgmma reads an mn-major operand only from registers
                               register_a=prec == "tf32" and (a, b) != ("k", "k")))
    return tuple(out)


def _wgmma(name: str, bm: int, bn: int, stages: int) -> Kernel:
    # BLK_K: 128 bytes of k; dynamic smem: the stages of A and B, then a full and an empty mbarrier each
    return tiled_stage(
        TileConfig(128, bm, bn, 64, stages, dyn_smem=stages * (bm + bn) * 128 + stages * 16),
        name=name, source="cute/c5_wgmma.cu", variants=_tc_variants("cute_wgmma", bm, bn),
        min_arch=90, arch_specific=True,
        summary=f"wgmma (one warpgroup, SS) on 128-byte swizzled smem, TMA loads into a "
                f"{stages}-stage ring of transaction barriers, zero-filled residues",
        seed="CuTe tutorial wgmma_tma_sm90",
        tags=("tensor-core",),
    )


# WgmmaWsConfig.only -> (CG_WS_ONLY, the precisions compiled, the one entry compiled where
# one): cute_3xtf32's GEMMs; "fp8": the 8-bit entries, which need promoted sums
_WS_ONLY = {"": (0, _TC_PRECISIONS, None), "tf32": (1, ("tf32",), "cute_wgmma_ws_tf32_f32_ak_bk"),
            "fp16": (2, ("fp16",), "cute_wgmma_ws_fp16_f32_ak_bk"), "fp8": (3, _FP8, None)}


_GMMA_N = {8, 16, 32, 64, 96, 128, 192, 256}     # CuTe's wgmma N without its extended shapes


@dataclass(frozen=True)
class WgmmaWsConfig(FixedTile):
    """A configuration of the warp-specialized Hopper kernel (c6_wgmma_ws.cu), compiled as its
    `struct Config`. BLK_K is no knob: a k-tile is one swizzle row of k_bytes."""
    blk_m: int = 128                 # 64 rows per consumer warpgroup
    blk_n: int = 256                 # one wgmma's N (at most 256)
    stages: int = 4                  # smem ring: (blk_m + blk_n) * k_bytes a stage
    k_bytes: int = 128               # a k-tile: one swizzle row (128 or 64 bytes of k)
    consumers: int = 2               # consumer warpgroups (the block: 128 * (1 + consumers))
    group_m: int = 16                # tile rows per group of the grouped tile order
    cluster_m: int = 2               # CTAs along m of a cluster, sharing (multicasting) B tiles
    producer_regs: int = 40          # setmaxnreg of the producer warpgroup ...
    consumer_regs: int = 232         # ... and of each consumer warpgroup
    promote: int = 0                 # k-tiles per tensor-core sum, added into a float32 sum (0: never)
    tail_split: int = 0              # the last wave's units cut along K into up to this many pieces
    split_parts: int = 0             # 2: A and B are cute_3xtf32's split, read as three products
    only: str = ""                   # "tf32"/"fp16": only that k-major entry (cute_3xtf32's GEMMs); "fp8"
    batched: bool = False            # each entry has a twin NAME_b walking a batch (unpromoted only)
    pingpong: bool = False           # each consumer warpgroup its own blk_m x blk_n tiles, in turn

    def __post_init__(self):
        if self.pingpong:
            if self.consumers != 2 or self.blk_m not in (64, 128) or self.blk_m * self.blk_n > 128 * 128:
                raise ValueError("pingpong: 2 consumer warpgroups, each a tile of 64 or 128 rows "
                                 "and at most 128 accumulators a thread")
            if self.promote or self.tail_split or self.only:
                raise ValueError("pingpong: the SS entries, neither promoted nor cut")
        elif self.blk_m != 64 * self.consumers:
            raise ValueError("blk_m: 64 rows per consumer warpgroup")
        if self.split_parts not in (0, 2) or (self.split_parts and self.promote != 3):
            raise ValueError("split_parts: 0, or 2 with promote = 3 (a window: a chunk's three products)")
        if self.producer_regs + self.consumers * self.consumer_regs > self.launch_regs * (1 + self.consumers):
            # setmaxnreg.inc waits for the pool, which is the CTA's launch allocation: past it, a hang
            raise ValueError(f"setmaxnreg: producer + consumers' registers past {1 + self.consumers} x "
                             f"{self.launch_regs}, the CTA's launch allocation (setmaxnreg.inc would wait forever)")
        if self.only not in _WS_ONLY:
            raise ValueError(f"only: one of {tuple(_WS_ONLY)}")
        if (self.only == "fp8") != (self.promote == 1):
            raise ValueError("8-bit wgmma sums are promoted every k-tile (promote 1), and only they")
        if self.batched and self.promote:
            raise ValueError("batched: the unpromoted consumers walk a batch, not the promoted ones")

    @property
    def launch_regs(self) -> int:
        """Registers per thread a CTA starts with: the register file's share under
        __launch_bounds__(threads, 1), in steps of 8."""
        return min(65536 // (128 * (1 + self.consumers)) // 8 * 8, 256)

    @property
    def takes_epilogue(self) -> bool:
        """Whether a fused epilogue fits: not beside the two accumulators of a promoted tile
        wider than 128 columns (it spilled), but the 8-bit consumer computes those in parts."""
        return self.promote == 0 or self.blk_n <= 128 or self.only == "fp8"

    @property
    def block_scales(self) -> bool:
        """Whether its 8-bit entries apply block scales where they promote: k-tiles of 128 k,
        each part of a tile's columns within one of B's blocks (sm90_consumer_scaled.cuh)."""
        return self.only == "fp8" and self.k_bytes == 128 and self.blk_n in (64, 128, 256)

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def blk_k(self) -> int:
        """k per stage of the 16-bit entries (tf32: half), of the 8-bit ones of an "fp8" one."""
        return self.k_bytes if self.only == "fp8" else self.k_bytes // 2

    @property
    def window_bytes(self) -> int:
        """Bytes of A's rows' k a window covers: a k-tile, promote k-tiles, or a split chunk."""
        return (self.split_parts or max(self.promote, 1)) * self.k_bytes

    @property
    def dyn_smem(self) -> int:
        """The stages of A and B, then the ring's full and empty mbarriers."""
        return self.stages * (self.blk_m + self.blk_n) * self.k_bytes + self.stages * 16

    def cpp(self, name: str = "") -> str:
        """The headers' constants, the macros a directive reads (which entries the source
        defines), the kernel body's inline attribute (c6_wgmma_ws.cu says why) and `struct
        Config` with dyn_smem (the kernel static_asserts its ring fits)."""
        # wgmma atoms of the other N (160, its parts of 80): CuTe selects them only behind
        # this switch, which includes mma_sm90_gmma_ext.hpp (56k lines): set where needed only
        parts = {self.blk_n, self.blk_n // 2 if self.blk_n > 128 else self.blk_n}
        extended = ("" if parts <= _GMMA_N else "#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED\n")
        return (extended + device_constants(STREAM_K_COUNTERS=STREAM_K_COUNTERS)
                + f"#define CG_WS_ONLY {4 if self.pingpong else _WS_ONLY[self.only][0]}\n"
                f"#define CG_WS_TAIL_SPLIT {int(self.tail_split > 0)}\n"
                f"#define CG_WS_INLINE {'__forceinline__' if self.promote <= 1 else 'CG_INLINE_IF_FUSED'}\n"
                f"#define CG_WS_BATCHED {int(self.batched)}\n"
                + config_struct(self, name, "cute_gemm/registry/ladder_hopper.py, WgmmaWsConfig",
                                derived=("dyn_smem",), skip="only"))


# the cut of a plain (unpromoted) walk, in k-tiles: docs/design/cute_wgmma_ws.md#split-k
_PLAIN_CUT = CutModel(min_windows=16, overhead=2, fixup=3, rounds=1)


def _wgmma_ws(name: str, cfg: WgmmaWsConfig) -> Kernel:
    bm, bn = cfg.blk_m, cfg.blk_n
    _, precisions, entry = _WS_ONLY[cfg.only]
    # tf32: k-major SS entry, and RS entries for an m-major A / n-major B (not ping-pong's)
    tf32 = (("k", "k"),) if cfg.pingpong else (("k", "k"), ("k", "n"), ("m", "k"))
    variants = _tc_variants("cute_wgmma_ws", bm, bn, cfg.cluster_m, cfg.k_bytes, tf32,
                            cut=cfg.tail_split > 0, precisions=precisions)
    if cfg.batched:
        variants = tuple(replace(v, batch=f"{v.entry}_b") for v in variants)
    return Kernel(
        name=name, family="cute", source="cute/c6_wgmma_ws.cu",
        variants=tuple(v for v in variants if entry is None or v.entry == entry),
        grid=PersistentGrid(bm, bn, cluster=cfg.cluster_m, tail_split=cfg.tail_split,
                            window_bytes=cfg.window_bytes, partials=2 if cfg.promote > 1 else 1,
                            cut=CutModel() if cfg.promote else _PLAIN_CUT),
        config=cfg, block=(cfg.threads, 1, 1), tile=cfg.tile, dyn_smem=FixedSmem(cfg.dyn_smem),
        min_arch=90, arch_specific=True,
        summary=f"warp-specialized wgmma: a TMA producer warp, {cfg.consumers} consumer warpgroups "
                f"(setmaxnreg {cfg.producer_regs}/{cfg.consumer_regs})"
                + (f" taking {bm}x{bn} tiles in turn (ping-pong: one's epilogue under the other's "
                   "wgmmas)" if cfg.pingpong else "") + f", {cfg.stages}-stage ring, "
                f"one batch in flight, persistent CTAs over grouped tiles"
                + (f", clusters of {cfg.cluster_m} along m multicasting B" if cfg.cluster_m > 1 else "")
                + (f", accumulators promoted to a compensated float32 sum every {cfg.promote} "
                   "k-tiles, half of it under the next k-tile's wgmmas (an operand's ±Inf comes out NaN "
                   "there: cute_3xtf32 computes those calls in float64)" if cfg.promote > 1 else "")
                + (", 8-bit operands: each k-tile's tensor-core sum added into a float32 sum"
                   + (", scaled by its 1x128 / 128x128 block scales" if cfg.block_scales else
                      " (no block scales: a part of the tile's columns spans two of B's blocks)")
                   if cfg.only == "fp8" else "")
                + (", the last wave's tiles cut along K (a deterministic fixup)" if cfg.tail_split else "")
                + ("" if cfg.only or cfg.pingpong else ", tf32 m-major A (or n-major B, on C^T = "
                   "B^T A^T) from registers (RS wgmma)")
                + ", alpha/beta epilogue",
        seed="CUTLASS sm90 TMA warp-specialized " + ("ping-pong" if cfg.pingpong else "cooperative")
             + " kernel",
        tags=("tensor-core", "fast"),
    )


# ---- fp32 accuracy on tensor cores (3xTF32, its products in fp16) -------------------------------
def _three_tf32(name: str, gemm: Kernel) -> Kernel:
    # the passes read any strides (no relayout copy) and write the k-major A' and B' the GEMM takes
    passes = ("range_a", "range_b", "split_a", "split_b", "norms_b", "finish", "fix", "refine")
    cfg = gemm.config
    return Kernel(
        name=name, family="cute", source="cute/c7_3xtf32.cu",
        variants=tuple(Variant(f"{name}_{p}", a_major="any", b_major="any", c_major="any",
                               precision="fp32_3xtf32") for p in passes),
        block=(32, 8, 1), grid=SplitGrid(32), min_arch=90, arch_specific=True,
        summary="3xTF32 in fp16: each fp32 operand split into big + small (11 significant bits "
                "each, as tf32 keeps), scaled per row of A / column of B into fp16's range, "
                "k-major per chunk of 64 k; c6's promoted fp16 GEMM reads three products a "
                "chunk (small·big, big·small, big·big) and undoes the scales; the residuals of "
                "elements below fp16's normal range added after it, rows whose sum cancels "
                "recomputed with float64 sums: fp32 accuracy; where the split cannot carry the "
                "inputs (±Inf, subnormals, magnitudes far below their row's largest), every "
                "row recomputed so",
        seed="CUTLASS example 27 (3xTF32), on c6's GEMM",
        tags=("tensor-core",),
        # a chunk: a 128-byte fp16 k-tile, stored as two parts, read as three products
        gemm_of=GemmOf(gemm, "fp16", cfg.split_parts,
                       k_chunk=cfg.k_bytes // 2, k_reads=cfg.promote),
    )


# cute_3xtf32's GEMM: cute_wgmma_ws_promote's in fp16, reading the split's parts as three products
# into a scratch C that c7's finish pass unscales. Not registered: it is no GEMM of A and B.
_3XTF32_GEMM = _wgmma_ws("cute_3xtf32_gemm", WgmmaWsConfig(blk_n=192, promote=3, tail_split=8,
                                                          split_parts=2, only="fp16"))

# the candidates' batched twins (the persistent walk over every problem's tiles, A and B in 4-D
# tensor maps); the producer at 48 registers: the problem's coordinates in its loads spilled one of 40
_WALKS_BATCHES = dict(batched=True, producer_regs=48, consumer_regs=224)
_BATCHED = dict(_WALKS_BATCHES, tail_split=32)

HOPPER: list[Kernel] = [
    _wgmma("cute_wgmma", 128, 128, 4),
    # cute_wgmma_ws: why each value (128x256x4, clusters of 2, group_m 16): docs/design/cute_wgmma_ws.md
    gemm_candidate(_wgmma_ws("cute_wgmma_ws", WgmmaWsConfig(**_BATCHED))),
    # ... the same tiles without a cluster: a few rows of tiles, whose clusters' idle halves
    # took a second round (#mid-m)
    gemm_candidate(_wgmma_ws("cute_wgmma_ws_128x256",
                             WgmmaWsConfig(cluster_m=1, **_BATCHED))),
    # ... products whose 128x256 tiles leave SMs idle: narrower tiles, the smem left as stages (#narrow-tiles)
    gemm_candidate(_wgmma_ws("cute_wgmma_ws_128x64",
                             WgmmaWsConfig(blk_n=64, stages=8, cluster_m=1, **_BATCHED))),
    gemm_candidate(_wgmma_ws("cute_wgmma_ws_128x128",
                             WgmmaWsConfig(blk_n=128, stages=6, cluster_m=1, **_BATCHED))),
    # ping-pong: a warpgroup's epilogue (a fused one's bias and activation) under the other's
    # mainloop; 64x256 in clusters of 2 multicasting B, 128x128 without. Not gemm() candidates:
    # slower than the cooperative ones on linear layers (docs/design/cute_wgmma_ws.md#ping-pong)
    _wgmma_ws("cute_wgmma_ws_pp64x256", WgmmaWsConfig(blk_m=64, stages=5, pingpong=True, **_WALKS_BATCHES)),
    _wgmma_ws("cute_wgmma_ws_pp128x128", WgmmaWsConfig(blk_n=128, stages=6, cluster_m=1, pingpong=True,
                                                      **_WALKS_BATCHES)),
    # fp32-accurate sums (cute_3xtf32's GEMM with split_parts): 64x192 a warpgroup holds two sets of
    # accumulators; windows of 3 k-tiles (cute_3xtf32.md#the-accumulation, #the-last-wave)
    _wgmma_ws("cute_wgmma_ws_promote", WgmmaWsConfig(blk_n=192, promote=3, tail_split=8, only="tf32")),
    # 8-bit operands: the tensor cores' sum of each 128-k k-tile promoted into float32 (as
    # DeepGEMM does; sm90_consumer_scaled.cuh), 128x256 tiles computed in two parts of 128
    # columns (the sum and one part's accumulator fit beside the epilogue); clusters of 2
    # halve B's traffic. 128x128: more tiles for the problems whose 128x256 ones leave SMs idle
    gemm_candidate(_wgmma_ws("cute_wgmma_ws_fp8", WgmmaWsConfig(blk_n=256, stages=4, k_bytes=128, cluster_m=2,
                                                 promote=1, tail_split=8, only="fp8"))),
    gemm_candidate(_wgmma_ws("cute_wgmma_ws_fp8_128x128", WgmmaWsConfig(blk_n=128, stages=6, k_bytes=128,
                                                         cluster_m=2, promote=1, tail_split=8, only="fp8"))),
    # ... 128x160: N of 320, 640, 1600 in whole tiles, 2 columns of tiles where 128 takes 3
    # (docs/design/cute_wgmma_ws.md#128x160); per-tensor, row and column scales only (no 128-column
    # block is one part of 80)
    gemm_candidate(_wgmma_ws("cute_wgmma_ws_fp8_128x160", WgmmaWsConfig(blk_n=160, stages=6, k_bytes=128,
                                                         cluster_m=2, promote=1, tail_split=8, only="fp8"))),
    # ... 128x256 without a cluster: the faster on some short-K problems, which tuning on first
    # use finds (docs/design/cute_wgmma_ws.md#8-bit-operands-cute_wgmma_ws_fp8)
    gemm_candidate(_wgmma_ws("cute_wgmma_ws_fp8_128x256", WgmmaWsConfig(blk_n=256, stages=4, k_bytes=128, cluster_m=1,
                                                         promote=1, tail_split=8, only="fp8"))),
    # why a pre-pass and not a split inside the GEMM: docs/design/cute_3xtf32.md
    gemm_candidate(_three_tf32("cute_3xtf32", _3XTF32_GEMM)),
]
