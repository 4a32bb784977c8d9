// Ampere copy helpers of the tensor-core kernels (kernels/cute/c4_mma_sm80.cu): smem granules
// from operands of any alignment with element-granular zero-fill, the bytes of a granule
// inside its operand, and tf32 rounding of float operands in shared memory.
#pragma once

#include <cute_gemm/cute.cuh>

namespace cg {

// One 16-byte cp.async of which only the first src_bytes (16 or 0) come from global memory;
// src_bytes == 0 reads nothing and zero-fills the 16 bytes in smem.
template <class T>
__device__ __forceinline__ void cp_async_16_zfill(T* smem, T const* gmem, int src_bytes) {
  uint32_t s = cute::cast_smem_ptr_to_uint(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}

// One 4-byte cp.async (.ca: .cg takes only 16) of which the first src_bytes (0 to 4) come
// from global memory, the rest zero-filled.
__device__ __forceinline__ void cp_async_4_zfill(void* smem, void const* gmem, int src_bytes) {
  uint32_t s = cute::cast_smem_ptr_to_uint(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
}

// One GB-byte smem granule (16 or 4) of an operand whose pointer and leading stride are
// GB-byte aligned: the first `bytes` (a multiple of the element size) from `gmem`, the rest
// zero, nothing past `bytes` read. A 4-byte granule is one cp.async reading `bytes` (0, 2 or
// 4: branch-free, which keeps ptxas's time and the code small at 4x the granules). A 16-byte
// one: whole or empty by one cp.async; cut by a row end, in 4-byte cp.asyncs and a 16-bit
// synchronous load for a last odd element (the stage is published by the same barrier).
// Any alignment: load_vec_any.
// WHOLE: bytes is GB or 0 (a k-major granule of a k-tile inside K).
template <int GB, bool WHOLE = false, class T>
__device__ __forceinline__ void copy_granule(T* smem, T const* gmem, int bytes) {
  static_assert(GB == 16 || GB == 4, "cp.async granules");
  if constexpr (GB == 4) {
    cp_async_4_zfill(smem, gmem, bytes);
  } else if constexpr (WHOLE) {
    cp_async_16_zfill(smem, gmem, bytes);
  } else {
    if (bytes == 16 || bytes == 0) {
      cp_async_16_zfill(smem, gmem, bytes);
      return;
    }
    char* s = reinterpret_cast<char*>(smem);
    char const* g = reinterpret_cast<char const*>(gmem);
    CUTE_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int b = bytes - 4 * j;               // 16-bit elements: 2 at the end of an odd row
      if (b >= 4) {
        cp_async_4_zfill(s + 4 * j, g + 4 * j, 4);
      } else {
        const uint32_t v = b > 0 ? uint32_t(*reinterpret_cast<uint16_t const*>(g + 4 * j)) : 0u;
        *reinterpret_cast<uint32_t*>(s + 4 * j) = v;
      }
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

// Bytes inside the operand of a granule of a k-tile inside K: they depend on its m/n alone,
// `left` elements from its start to the extent (m/n contiguous: 0 to V elements; else its
// row is in or out).
template <bool MN_CONTIG, int V, int BYTES>
__device__ __forceinline__ int whole_tile_bytes(int left) {
  if constexpr (MN_CONTIG) return max(0, min(left, V)) * BYTES;
  else                     return left > 0 ? V * BYTES : 0;
}

// Bytes of the V-element granule at coordinate c of a `shape` operand whose unit stride runs
// along mode CONTIG that lie inside it.
template <int CONTIG, int V, int BYTES, class Coord, class Shape>
__device__ __forceinline__ int inside_bytes(Coord const& c, Shape const& shape) {
  const int left = cute::get<CONTIG>(shape) - cute::get<CONTIG>(c);
  const bool row_in = cute::get<1 - CONTIG>(c) < cute::get<1 - CONTIG>(shape);
  return row_in ? max(0, min(left, V)) * BYTES : 0;
}

// Round the float bits of a thread's (V,CPY_M,CPY_K) smem granules to tf32 in place: to
// nearest, ties away from zero (cvt.rna); the low 13 bits become zero, so the MMA's own
// truncation changes nothing afterwards. 16-byte granules in one LDS.128/STS.128 (a warp's 32
// cover 4 swizzled 128-byte rows: no bank conflicts beyond the 4 wavefronts of 512 bytes).
template <class Tensor>
__device__ __forceinline__ void round_to_tf32(Tensor&& t) {
  constexpr int V = decltype(cute::size<0>(t))::value;
  static_assert(V == 4 || V == 1, "16- or 4-byte granules of float");
  using W = cute::conditional_t<V == 4, uint4, uint32_t>;
  CUTE_UNROLL
  for (int m = 0; m < cute::size<1>(t); ++m)
    CUTE_UNROLL
    for (int k = 0; k < cute::size<2>(t); ++k) {
      W& v = *reinterpret_cast<W*>(&t(0, m, k));
      W r = v;
      uint32_t* w = reinterpret_cast<uint32_t*>(&r);
      CUTE_UNROLL
      for (int j = 0; j < V; ++j) asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(w[j]));
      v = r;
    }
}

}  // namespace cg
