"""The tensor-core MMA atoms the kernels use, as CuTe's MMA_Traits define them
(cute/atom/mma_traits_sm80.hpp, mma_traits_sm90_gmma.hpp): shape (M,N,K), the thread ids,
and the (thread, value) -> column-major (m,k) / (n,k) / (m,n) index layouts of A, B and C;
and the swizzled shared-memory atom c4_mma_sm80 and the GMMA kernels share (swizzle_atom).

pycute has no atoms; these are CuTe's tables restated, and tests/test_layouts.py's nvcc
check prints the TiledMMAs built from them with CuTe (cute_mma_sm80 by default, the GMMA
kernels with CUTE_GEMM_TEST_FULL=1), so a restatement that drifts from CuTe fails there.
"""
from __future__ import annotations

import pycute

from .algebra import Layout, MMAAtom, Swizzled

# SM80_16x8_Row: C: lane l = 4 g + q holds rows g and g + 8, columns 2q, 2q + 1
_SM80_16x8_ROW = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))

# SM80_16x8x16_F32BF16BF16F32_TN / _F32F16F16F32_TN (16-bit A and B, float C)
SM80_16x8x16 = MMAAtom((16, 8, 16), Layout(32),
                       Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128))),
                       Layout(((4, 8), (2, 2)), ((16, 1), (8, 64))),
                       _SM80_16x8_ROW)


def gmma_ss(n: int, k: int) -> MMAAtom:
    """SM90 GMMA 64xNxK, both operands from shared memory (SS): A and B are descriptors, so
    every thread of the warpgroup names the whole (64,K) / (N,K) tile (GMMA::ABLayout: thread
    stride 0); C is CLayout_64xN: warp w, lane l = 4 g + q holds rows 16 w + g and + 8,
    columns 8 j + 2 q and + 1. K is 32 bytes: 16 for 16-bit types, 8 for tf32."""
    assert n % 8 == 0 and 8 <= n <= 256, f"a GMMA's N is a multiple of 8 up to 256, not {n}"
    return MMAAtom((64, n, k), Layout(128),
                   Layout((128, (64, k)), (0, (1, 64))),
                   Layout((128, (n, k)), (0, (1, n))),
                   Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512))))


def ldsm_x4_a(kmajor: bool) -> Layout:
    """Which lane of a warp supplies the shared-memory row address of each element of one
    16x16 A atom (m16n8k16) in ldmatrix.x4, from PTX's definition: lanes 8j..8j+7 address
    the 8 rows of matrix j, and matrix j is A's register j (rows 8 (j % 2) + [0,8), k
    8 (j / 2) + [0,8)). (thread, value) -> m + 16 k: a k-major A's rows run along k (LDSM_N),
    an m-major A's along m (LDSM_T: the 8 rows a matrix's lanes address are 8 k)."""
    if kmajor:       # lane 8j + r: m = r + 8 (j % 2), k = 8 (j / 2) + v
        return Layout(((8, 2, 2), 8), ((1, 8, 128), 16))
    return Layout(((8, 2, 2), 8), ((16, 8, 128), 1))     # lane 8j + r: k = r + 8 (j / 2), m = 8 (j % 2) + v


def swizzle_atom(elem_bytes: int, kmajor: bool, row_bytes: int = 128, ptr: bool = True) -> Swizzled:
    """A swizzled smem atom of 8 lines of `row_bytes` (CuTe's Swizzle<log2(row/16),4,3> on
    byte addresses: 16-byte chunk c of line r lands at chunk c ^ (r % 8)). k-major: 8 rows
    (m or n) of row_bytes along k; mn-major: row_bytes along m/n, 8 columns of k. ptr: GMMA's
    Layout_{K,MN}_SW{128,64}_Atom (offset smem_ptr_flag_bits, the swizzle on bytes); else
    c4's composition(Swizzle<3,log2 V,3>, layout), the same function on element offsets."""
    e = row_bytes // elem_bytes
    lay = Layout((8, e), (e, 1)) if kmajor else Layout((e, 8), (1, e))
    bits = (row_bytes // 16).bit_length() - 1
    if ptr:
        return Swizzled(pycute.Swizzle(bits, 4, 3), lay, 0, 8 * elem_bytes)
    return Swizzled(pycute.Swizzle(bits, (16 // elem_bytes).bit_length() - 1, 3), lay)
