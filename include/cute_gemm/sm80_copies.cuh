// Ampere copy helpers of the tensor-core kernels (kernels/cute/c4_mma_sm80.cu): 16-byte
// cp.async with element-granular zero-fill, the bytes of a vector inside its operand, and
// tf32 rounding of float operands in shared memory.
#pragma once

#include <cute_gemm/cute.cuh>

namespace cg {

// One 16-byte cp.async of which only the first src_bytes come from global memory; the rest
// of the 16 bytes in smem are zero-filled. src_bytes == 0 reads nothing.
template <class T>
__device__ __forceinline__ void cp_async_16_zfill(T* smem, T const* gmem, int src_bytes) {
  uint32_t s = cute::cast_smem_ptr_to_uint(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}

// Bytes of the V-element vector at coordinate c of a `shape` operand whose unit stride runs
// along mode CONTIG that lie inside it.
template <int CONTIG, int V, int BYTES, class Coord, class Shape>
__device__ __forceinline__ int inside_bytes(Coord const& c, Shape const& shape) {
  const int left = cute::get<CONTIG>(shape) - cute::get<CONTIG>(c);
  const bool row_in = cute::get<1 - CONTIG>(c) < cute::get<1 - CONTIG>(shape);
  return row_in ? max(0, min(left, V)) * BYTES : 0;
}

// Round the float bits of a thread's (V,CPY_M,CPY_K) smem vectors to tf32 in place: to
// nearest, ties away from zero (cvt.rna); the low 13 bits become zero, so the MMA's own
// truncation changes nothing afterwards. One LDS.128/STS.128 per vector (a warp's 32 vectors
// cover 4 swizzled 128-byte rows: no bank conflicts beyond the 4 wavefronts of 512 bytes).
template <class Tensor>
__device__ __forceinline__ void round_to_tf32(Tensor&& t) {
  CUTE_UNROLL
  for (int m = 0; m < cute::size<1>(t); ++m)
    CUTE_UNROLL
    for (int k = 0; k < cute::size<2>(t); ++k) {
      uint4& v = *reinterpret_cast<uint4*>(&t(0, m, k));
      uint4 r = v;
      asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(r.x));
      asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(r.y));
      asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(r.z));
      asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(r.w));
      v = r;
    }
}

}  // namespace cg
