"""The handwritten SGEMM ladder, as registry data (see registry.py for the fields).

fp32, SIMT FFMA only. Stages after `naive` take row-major A, B, C (the Variant defaults);
the wrapper copies other layouts. Where a stage has a 128-bit path it has two variants:
the aligned one first (align=4: pointers and leading strides multiples of 4 floats), the
scalar fallback last (align=1), and the wrapper picks by the actual operands.
"""
from __future__ import annotations

from .records import FlatGrid, Kernel, RowGrid, StripSmem, TileGrid, Variant


def _vec_pair(entry: str) -> tuple[Variant, ...]:
    """128-bit entry for 16-byte aligned operands, then the any-alignment fallback."""
    return (Variant(entry, align=4), Variant(f"{entry}_a1"))


def _v9(name: str, bm: int, bn: int, bk: int, wm: int, wn: int, tm: int, tn: int,
        min_blocks: int, frag_db: int, tags: tuple[str, ...] = ()) -> Kernel:
    threads = (bm // wm) * (bn // wn) * 32
    regs = "2 blocks/SM (<=128 regs)" if min_blocks == 2 else f"{min_blocks} block(s)/SM"
    return Kernel(
        name=name,
        family="handwritten",
        source="handwritten/v9_warptile.cu",
        variants=_vec_pair("v9_warptile"),
        block=(threads, 1, 1),
        grid=TileGrid(bm, bn),
        defines=(("BM", bm), ("BN", bn), ("BK", bk), ("WM", wm), ("WN", wn), ("TM", tm), ("TN", tn),
                 ("GROUP_M", 8), ("MIN_BLOCKS", min_blocks), ("FRAG_DB", frag_db)),
        tile=(bm, bn, bk),
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
    Kernel(
        name="naive",
        family="handwritten",
        source="handwritten/v0_naive.cu",
        variants=(Variant("naive", a_major="any", b_major="any", c_major="any"),),
        block=(16, 16, 1),
        grid=TileGrid(16, 16),
        defines=(("BLOCK_X", 16), ("BLOCK_Y", 16)),
        summary="one thread per C element, operands straight from global memory",
        seed="v0",
    ),
    Kernel(
        name="flat1d",
        family="handwritten",
        source="handwritten/v0a_flat1d.cu",
        variants=(Variant("flat1d"),),
        block=(256, 1, 1),
        grid=FlatGrid(256),
        defines=(("THREADS", 256),),
        summary="1D grid, one thread per C element, (m, n) from a flat index (n fastest)",
        seed="v0",
    ),
    Kernel(
        name="row_block",
        family="handwritten",
        source="handwritten/v0b_row_block.cu",
        variants=(Variant("row_block"),),
        block=(256, 1, 1),
        grid=RowGrid(),
        defines=(("THREADS", 256),),
        summary="one block per C row, threads stride over the columns",
        seed="v0",
    ),
    Kernel(
        name="row_smem",
        family="handwritten",
        source="handwritten/v0c_row_smem.cu",
        variants=(Variant("row_smem"),),
        block=(256, 1, 1),
        grid=RowGrid(),
        defines=(("THREADS", 256),),
        dyn_smem=StripSmem(1, 0),
        constraints="K <= (shared memory per block) / 4 bytes; any M, N >= 1",
        summary="one block per C row, that row of A in dynamic shared memory",
        seed="v0",
    ),
    Kernel(
        name="v1_strip",
        family="handwritten",
        source="handwritten/v1_strip.cu",
        variants=(Variant("v1_strip"),),
        block=(16, 16, 1),
        grid=TileGrid(16, 16),
        defines=(("BM", 16), ("BN", 16)),   # no BK: the k-extent is all of K
        dyn_smem=StripSmem(16, 16),
        constraints="K <= (shared memory per block) / 128 bytes; any M, N >= 1",
        summary="16x16 C tile, whole-K strips of A and B in dynamic shared memory",
        seed="v1",
    ),
    Kernel(
        name="v2_tiled16",
        family="handwritten",
        source="handwritten/v2_tiled.cu",
        variants=(Variant("v2_tiled"),),
        block=(16, 16, 1),
        grid=TileGrid(16, 16),
        defines=(("BM", 16), ("BN", 16), ("BK", 16)),
        tile=(16, 16, 16),
        summary="shared-memory sliding window, 16x16 tiles, one output per thread",
        seed="v2",
    ),
    Kernel(
        name="v2_tiled32",
        family="handwritten",
        source="handwritten/v2_tiled.cu",
        variants=(Variant("v2_tiled"),),
        block=(32, 32, 1),
        grid=TileGrid(32, 32),
        defines=(("BM", 32), ("BN", 32), ("BK", 32)),
        tile=(32, 32, 32),
        summary="shared-memory sliding window, 32x32 tiles, one output per thread",
        seed="v2",
    ),
    Kernel(
        name="v3_patch2x2",
        family="handwritten",
        source="handwritten/v3_patch2x2.cu",
        variants=(Variant("v3_patch2x2"),),
        block=(16, 16, 1),
        grid=TileGrid(32, 32),
        defines=(("BM", 32), ("BN", 32), ("BK", 32)),
        tile=(32, 32, 32),
        summary="32x32x32 tiles, each thread a 2x2 patch of C (strided by 16)",
        seed="v3",
    ),
    Kernel(
        name="v4_float4",
        family="handwritten",
        source="handwritten/v4_float4.cu",
        variants=_vec_pair("v4_float4"),
        block=(16, 16, 1),
        grid=TileGrid(32, 32),
        defines=(("BM", 32), ("BN", 32), ("BK", 32)),
        tile=(32, 32, 32),
        summary="v3 with float4 global loads; guarded scalar path at edges / misalignment",
        seed="v4",
    ),
    Kernel(
        name="v5_outer",
        family="handwritten",
        source="handwritten/v5_outer.cu",
        variants=(Variant("v5_outer"),),
        block=(256, 1, 1),
        grid=TileGrid(128, 128),
        defines=(("BM", 128), ("BN", 128), ("BK", 8)),
        tile=(128, 128, 8),
        summary="128x128x8 block tile, 8x8 outputs per thread as a register outer product",
        seed="v5",
    ),
    Kernel(
        name="v6_vec",
        family="handwritten",
        source="handwritten/v6_vec.cu",
        variants=_vec_pair("v6_vec"),
        block=(256, 1, 1),
        grid=TileGrid(128, 128),
        defines=(("BM", 128), ("BN", 128), ("BK", 8)),
        tile=(128, 128, 8),
        summary="v5 with 128-bit global and shared loads; guarded path at edges",
        seed="v6",
    ),
    Kernel(
        name="v7_atrans",
        family="handwritten",
        source="handwritten/v7_atrans.cu",
        variants=_vec_pair("v7_atrans"),
        block=(256, 1, 1),
        grid=TileGrid(128, 128),
        defines=(("BM", 128), ("BN", 128), ("BK", 8)),
        tile=(128, 128, 8),
        summary="v6 with A transposed in shared memory, padded against bank conflicts",
        seed="v7",
    ),
    Kernel(
        name="v8_double",
        family="handwritten",
        source="handwritten/v8_double.cu",
        variants=_vec_pair("v8_double"),
        block=(256, 1, 1),
        grid=TileGrid(128, 128),
        defines=(("BM", 128), ("BN", 128), ("BK", 8)),
        tile=(128, 128, 8),
        summary="v7 with double-buffered shared memory and register fragments",
        seed="v8",
    ),
    # v9: the fast design, in several tile configurations; `cute-gemm bench` (or any
    # timing loop over these names) picks the best on the GPU at hand.
    *[_v9(*cfg) for cfg in _V9_CONFIGS],
]
