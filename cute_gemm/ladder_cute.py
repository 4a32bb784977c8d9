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


def _pipe(name: str, bm: int, bn: int, bk: int, stages: int, thr_m: int = 16, thr_n: int = 16,
          warp_m: int = 4, min_blocks: int = 2) -> Kernel:
    vec = dict(c_major="any", align=4, extent_align=4)
    return Kernel(
        name=name,
        family="cute",
        source="cute/c3_pipelined.cu",
        variants=(Variant("cute_pipelined_am_bn", a_major="m", b_major="n", align_roles="ab", **vec),
                  Variant("cute_pipelined_am_bk", a_major="m", b_major="k", align_roles="a", **vec),
                  Variant("cute_pipelined_ak_bn", a_major="k", b_major="n", align_roles="b", **vec),
                  Variant("cute_pipelined_ak_bk", a_major="k", b_major="k", c_major="any"),
                  Variant("cute_pipelined_am_bn_s", a_major="m", b_major="n", c_major="any"),
                  Variant("cute_pipelined_am_bk_s", a_major="m", b_major="k", c_major="any"),
                  Variant("cute_pipelined_ak_bn_s", a_major="k", b_major="n", c_major="any")),
        block=(thr_m * thr_n, 1, 1),
        grid=TileGridMN(bm, bn),
        defines=(("BLK_M", bm), ("BLK_N", bn), ("BLK_K", bk), ("STAGES", stages),
                 ("THR_M", thr_m), ("THR_N", thr_n), ("WARP_M", warp_m),
                 ("MIN_BLOCKS", min_blocks), ("SMEM_PAD", _PAD)),
        tile=(bm, bn, bk),
        dyn_smem=FixedSmem(4 * stages * bk * (bm + bn + 2 * _PAD)),
        summary=(f"cp.async {stages}-stage smem pipeline (16 B along m/n, 4 B along k), "
                 f"LDS.128 register double buffer, {bm // thr_m}x{bn // thr_n} FFMA per thread"),
        seed="CuTe sgemm_sm80 (cp.async pipeline)",
        tags=("fast",),
    )


CUTE: list[Kernel] = [
    _gmem("cute_gmem", 16, 16, 8),
    _smem("cute_smem", 128, 128, 8),
    _smem("cute_smem_64x128", 64, 128, 8),
    _tiled("cute_tiled", 128, 128, 8),
    _pipe("cute_pipelined", 128, 128, 8, 4),
    _pipe("cute_pipelined_128x128x16", 128, 128, 16, 3),
    _pipe("cute_pipelined_256x128x8", 256, 128, 8, 3, min_blocks=1),
    _pipe("cute_pipelined_128x256x8", 128, 256, 8, 3, min_blocks=1),
    _pipe("cute_pipelined_64x128x8", 64, 128, 8, 4, thr_m=8, thr_n=16, min_blocks=4),
]
