"""The handwritten SGEMM ladder, as registry data (see registry.py for the fields).

fp32, SIMT FFMA only. Stages after `naive` take row-major A, B, C (the Variant defaults);
the wrapper copies other layouts. Where a stage has a 128-bit path it has two variants:
the aligned one first (align=4: pointers and leading strides multiples of 4 floats), the
scalar fallback last (align=1), and the wrapper picks by the actual operands.
"""
from __future__ import annotations

from .registry import FlatGrid, Kernel, RowGrid, StripSmem, TileGrid, Variant

ANY = Variant  # shorthand below


def _vec_pair(entry: str) -> tuple[Variant, ...]:
    """128-bit entry for 16-byte aligned operands, then the any-alignment fallback."""
    return (Variant(entry, align=4), Variant(f"{entry}_a1"))


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
        defines=(("BM", 16), ("BN", 16)),
        tile=(16, 16, 0),
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
]
