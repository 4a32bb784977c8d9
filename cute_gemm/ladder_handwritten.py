"""The handwritten SGEMM ladder, as registry data (see registry.py for the fields)."""
from __future__ import annotations

from .registry import Kernel, TileGrid, Variant

ANY = Variant  # shorthand below

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
]
