"""The CuTe ladder, as registry data (see registry.py for the fields)."""
from __future__ import annotations

from .registry import Kernel, TileGridMN, Variant


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


CUTE: list[Kernel] = [
    _smem("cute_smem", 128, 128, 8),
]
