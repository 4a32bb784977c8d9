"""The handwritten SGEMM ladder, as registry data (see registry.py for the fields).

fp32, SIMT FFMA only. Stages after `naive` take row-major A, B, C (the Variant defaults);
the wrapper copies other layouts. Where a stage has a 128-bit path it has two variants:
the aligned one first (align=4: pointers and leading strides multiples of 4 floats), the
scalar fallback last (align=1), and the wrapper picks by the actual operands.
"""
from __future__ import annotations

from dataclasses import dataclass

from .records import FlatGrid, Kernel, RowGrid, StripSmem, TileGrid, Variant, constexprs


@dataclass(frozen=True)
class LadderConfig:
    """One handwritten stage's compile-time values (records.KernelConfig), written by cpp()
    as the `constexpr int`s the sources read: THREADS (the block's threads), BLOCK_X and
    BLOCK_Y for a 2-D block, then BM, BN, BK and v9's warp-tile knobs where set (None: not a
    knob of the stage). What a stage fixes in its own code (v5's TM, TN) stays there, and
    the source static_asserts that it agrees with THREADS."""
    block: tuple[int, int, int]
    bm: int | None = None
    bn: int | None = None
    bk: int | None = None            # None with a BM: the k-extent is all of K (v1)
    wm: int | None = None            # v9: warp tile WM x WN, thread tile TM x TN, grouped
    wn: int | None = None            # block order of GROUP_M rows, __launch_bounds__
    tm: int | None = None            # MIN_BLOCKS, register fragments double-buffered (FRAG_DB)
    tn: int | None = None
    group_m: int | None = None
    min_blocks: int | None = None
    frag_db: int | None = None
    strip: StripSmem | None = None   # dynamic smem: whole-K strips of A and B (v0c, v1)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def tile(self) -> tuple[int, int, int] | None:
        return None if self.bk is None else (self.bm, self.bn, self.bk)

    def smem(self, m: int, n: int, k: int) -> int:
        return self.strip(m, n, k) if self.strip is not None else 0

    def cpp(self, name: str) -> str:
        x, y = (self.block[0], self.block[1]) if self.block[1] > 1 else (None, None)
        knobs = ("bm", "bn", "bk", "wm", "wn", "tm", "tn", "group_m", "min_blocks", "frag_db")
        return constexprs(f"{name}: cute_gemm/registry/ladder_handwritten.py, LadderConfig",
                          THREADS=self.threads, BLOCK_X=x, BLOCK_Y=y,
                          **{f.upper(): getattr(self, f) for f in knobs})


def _stage(cfg: LadderConfig, **kw) -> Kernel:
    """A handwritten stage: block, tile and dynamic smem from its configuration."""
    return Kernel(family="handwritten", config=cfg, block=cfg.block, tile=cfg.tile,
                  dyn_smem=cfg.strip, **kw)


def _vec_pair(entry: str) -> tuple[Variant, ...]:
    """128-bit entry for 16-byte aligned operands, then the any-alignment fallback."""
    return (Variant(entry, align=4), Variant(f"{entry}_a1"))


def _v9(name: str, bm: int, bn: int, bk: int, wm: int, wn: int, tm: int, tn: int,
        min_blocks: int, frag_db: int, tags: tuple[str, ...] = ()) -> Kernel:
    threads = (bm // wm) * (bn // wn) * 32
    regs = "2 blocks/SM (<=128 regs)" if min_blocks == 2 else f"{min_blocks} block(s)/SM"
    return _stage(
        LadderConfig((threads, 1, 1), bm, bn, bk, wm, wn, tm, tn, group_m=8,
                     min_blocks=min_blocks, frag_db=frag_db),
        name=name,
        source="handwritten/v9_warptile.cu",
        variants=_vec_pair("v9_warptile"),
        grid=TileGrid(bm, bn),
        summary=(f"warp tile {wm}x{wn}, {tm}x{tn} per thread, {threads} threads, {regs}, "
                 f"smem double-buffered{', register fragments too' if frag_db else ''}, "
                 "Z lane map, grouped block order"),
        seed="v9",
        tags=tags,
    )


# One source, several tile configurations, so a small search on the GPU can pick the
# best. All keep 128-bit fragment reads at one wavefront and A stores conflict-free
# (see the kernel header); the register figures are ptxas's for sm_80 / sm_90.
# Tag "quick": gemm()'s stand-in while its pick compiles (standin.stand_in): one entry point
# compiles in ~1 s and runs at ~85 % of cuBLAS on large squares.
#  name                   BM   BN   BK  WM   WN  TM  TN  minBlk fragDB tags
_V9_CONFIGS = (
    ("v9_warptile",         128, 128, 8,  32,  64, 8,  8,  2, 0, ("quick",)),   # 128 regs, 16 warps/SM
    ("v9_warptile_db",      128, 128, 8,  32,  64, 8,  8,  1, 1),   # ~140-150 regs, 8 warps/SM
    ("v9_warptile_w64x32",  128, 128, 8,  64,  32, 8,  8,  2, 0),   # 8 x 4 lanes per warp
    ("v9_warptile_k16",     128, 128, 16, 32,  64, 8,  8,  1, 1),   # half the barriers
    ("v9_warptile_128x256", 128, 256, 8,  32, 128, 8,  16, 1, 0),   # 128 FFMA per 6 LDS.128
    ("v9_warptile_256x128", 256, 128, 8,  64,  64, 16, 8,  1, 0),   # ~210-220 regs
    ("v9_warptile_64x128",  64,  128, 8,  32,  64, 8,  8,  3, 0),   # 128 threads: small shapes
)


HANDWRITTEN: list[Kernel] = [
    _stage(
        LadderConfig((16, 16, 1)),
        name="naive",
        source="handwritten/v0_naive.cu",
        variants=(Variant("naive", a_major="any", b_major="any", c_major="any"),),
        grid=TileGrid(16, 16),
        summary="one thread per C element, operands straight from global memory",
        seed="v0",
    ),
    _stage(
        LadderConfig((256, 1, 1)),
        name="flat1d",
        source="handwritten/v0a_flat1d.cu",
        variants=(Variant("flat1d"),),
        grid=FlatGrid(256),
        summary="1D grid, one thread per C element, (m, n) from a flat index (n fastest)",
        seed="v0",
    ),
    _stage(
        LadderConfig((256, 1, 1)),
        name="row_block",
        source="handwritten/v0b_row_block.cu",
        variants=(Variant("row_block"),),
        grid=RowGrid(),
        summary="one block per C row, threads stride over the columns",
        seed="v0",
    ),
    _stage(
        LadderConfig((256, 1, 1), strip=StripSmem(1, 0)),
        name="row_smem",
        source="handwritten/v0c_row_smem.cu",
        variants=(Variant("row_smem"),),
        grid=RowGrid(),
        constraints="K <= (shared memory per block) / 4 bytes; any M, N >= 1",
        summary="one block per C row, that row of A in dynamic shared memory",
        seed="v0",
    ),
    _stage(
        LadderConfig((16, 16, 1), bm=16, bn=16, strip=StripSmem(16, 16)),
        name="v1_strip",
        source="handwritten/v1_strip.cu",
        variants=(Variant("v1_strip"),),
        grid=TileGrid(16, 16),
        constraints="K <= (shared memory per block) / 128 bytes; any M, N >= 1",
        summary="16x16 C tile, whole-K strips of A and B in dynamic shared memory",
        seed="v1",
    ),
    _stage(
        LadderConfig((16, 16, 1), bm=16, bn=16, bk=16),
        name="v2_tiled16",
        source="handwritten/v2_tiled.cu",
        variants=(Variant("v2_tiled"),),
        grid=TileGrid(16, 16),
        summary="shared-memory sliding window, 16x16 tiles, one output per thread",
        seed="v2",
    ),
    _stage(
        LadderConfig((32, 32, 1), bm=32, bn=32, bk=32),
        name="v2_tiled32",
        source="handwritten/v2_tiled.cu",
        variants=(Variant("v2_tiled"),),
        grid=TileGrid(32, 32),
        summary="shared-memory sliding window, 32x32 tiles, one output per thread",
        seed="v2",
    ),
    _stage(
        LadderConfig((16, 16, 1), bm=32, bn=32, bk=32),
        name="v3_patch2x2",
        source="handwritten/v3_patch2x2.cu",
        variants=(Variant("v3_patch2x2"),),
        grid=TileGrid(32, 32),
        summary="32x32x32 tiles, each thread a 2x2 patch of C (strided by 16)",
        seed="v3",
    ),
    _stage(
        LadderConfig((16, 16, 1), bm=32, bn=32, bk=32),
        name="v4_float4",
        source="handwritten/v4_float4.cu",
        variants=_vec_pair("v4_float4"),
        grid=TileGrid(32, 32),
        summary="v3 with float4 global loads; guarded scalar path at edges / misalignment",
        seed="v4",
    ),
    _stage(
        LadderConfig((256, 1, 1), bm=128, bn=128, bk=8),
        name="v5_outer",
        source="handwritten/v5_outer.cu",
        variants=(Variant("v5_outer"),),
        grid=TileGrid(128, 128),
        summary="128x128x8 block tile, 8x8 outputs per thread as a register outer product",
        seed="v5",
    ),
    _stage(
        LadderConfig((256, 1, 1), bm=128, bn=128, bk=8),
        name="v6_vec",
        source="handwritten/v6_vec.cu",
        variants=_vec_pair("v6_vec"),
        grid=TileGrid(128, 128),
        summary="v5 with 128-bit global and shared loads; guarded path at edges",
        seed="v6",
    ),
    _stage(
        LadderConfig((256, 1, 1), bm=128, bn=128, bk=8),
        name="v7_atrans",
        source="handwritten/v7_atrans.cu",
        variants=_vec_pair("v7_atrans"),
        grid=TileGrid(128, 128),
        summary="v6 with A transposed in shared memory, padded against bank conflicts",
        seed="v7",
    ),
    _stage(
        LadderConfig((256, 1, 1), bm=128, bn=128, bk=8),
        name="v8_double",
        source="handwritten/v8_double.cu",
        variants=_vec_pair("v8_double"),
        grid=TileGrid(128, 128),
        summary="v7 with double-buffered shared memory and register fragments",
        seed="v8",
    ),
    # v9: the fast design, in several tile configurations; `cute-gemm bench` (or any
    # timing loop over these names) picks the best on the GPU at hand.
    *[_v9(*cfg) for cfg in _V9_CONFIGS],
]
