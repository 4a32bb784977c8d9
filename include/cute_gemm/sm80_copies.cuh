// Ampere copy helpers of the tensor-core kernels (kernels/cute/c4_mma_sm80.cu): 16-byte smem
// vectors from operands of any alignment with element-granular zero-fill, the bytes of a
// vector inside its operand, and tf32 rounding of float operands in shared memory.
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

// One 4-byte cp.async (.ca: .cg takes only 16 bytes).
__device__ __forceinline__ void cp_async_4(void* smem, void const* gmem) {
  uint32_t s = cute::cast_smem_ptr_to_uint(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
}

// One 16-byte smem vector of an operand whose pointer and leading stride are G-byte aligned
// (G = 16 or 4): the first `bytes` (a multiple of the element size) from `gmem`, the rest
// zero. Nothing past `bytes` is read, so no copy of the operand is needed for a row end that
// cuts a vector: whole vectors by one 16-byte cp.async, none by a zero-filling one that
// reads nothing, the others in 4-byte cp.asyncs, a 16-bit row end by a synchronous load
// (the stage is published by the same barrier). Any alignment: load_vec_any.
template <int G, class T>
__device__ __forceinline__ void copy_vec(T* smem, T const* gmem, int bytes) {
  static_assert(G == 16 || G == 4, "cp.async granules");
  if ((G == 16 && bytes == 16) || bytes == 0) {
    cp_async_16_zfill(smem, gmem, bytes);
    return;
  }
  char* s = reinterpret_cast<char*>(smem);
  char const* g = reinterpret_cast<char const*>(gmem);
  CUTE_UNROLL
  for (int j = 0; j < 4; ++j) {
    const int b = bytes - 4 * j;                 // 16-bit elements: 2 at the end of an odd row
    if (b >= 4) {
      cp_async_4(s + 4 * j, g + 4 * j);
    } else {
      const uint32_t v = b > 0 ? uint32_t(*reinterpret_cast<uint16_t const*>(g + 4 * j)) : 0u;
      *reinterpret_cast<uint32_t*>(s + 4 * j) = v;
    }
  }
}

// A 16-byte vector of 16-bit elements at any 2-byte aligned address, into registers: the
// first `bytes` from `gmem`, the rest zero, nothing past them read. Loads only: the caller
// stores the vector (deposit) a k-tile later, so all of a k-tile's loads are in flight at
// once and under the MMAs (stored as they landed, each vector waited a memory latency).
template <class T>
__device__ __forceinline__ uint4 load_vec_any(T const* gmem, int bytes) {
  static_assert(sizeof(T) == 2, "16-bit elements");
  uint16_t const* g = reinterpret_cast<uint16_t const*>(gmem);
  uint32_t v[4];
  CUTE_UNROLL
  for (int j = 0; j < 4; ++j) {
    const uint32_t lo = 4 * j < bytes ? g[2 * j] : 0u;
    const uint32_t hi = 4 * j + 2 < bytes ? g[2 * j + 1] : 0u;
    v[j] = lo | hi << 16;
  }
  return make_uint4(v[0], v[1], v[2], v[3]);
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
