// 16-bit results in 16-byte blocks from MMA accumulator pairs. In the accumulators of
// mma.sync (m16n8) and wgmma alike, the 4 lanes of a quad hold, per row, 8 neighbouring
// columns as 2 each: packed into 32-bit pairs and transposed across the quad, 4 such column
// blocks give each lane one whole block (16 bytes, one vector access); the transpose is its
// own inverse, so a block read from C transposes back into each lane's own pairs.
#pragma once
#include <cute_gemm/cute.cuh>

namespace cg {

// Two values as one 16-bit pair, the lower column in the lower half.
template <class TC>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  static_assert(sizeof(TC) == 2, "16-bit results");
  return uint32_t(TC(lo).raw()) | (uint32_t(TC(hi).raw()) << 16);   // cutlass 16-bit storage
}

// A 4 x 4 transpose of 32-bit words across the 4 lanes of a quad: lane q holds w[s] = M[q][s]
// and gets M[s][q]. Two butterfly steps (lane ^ 2, then lane ^ 1), each moving two words.
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4]) {
  const bool hi = threadIdx.x & 2, lo = threadIdx.x & 1;
  uint32_t r0 = __shfl_xor_sync(0xffffffffu, hi ? w[0] : w[2], 2);
  uint32_t r1 = __shfl_xor_sync(0xffffffffu, hi ? w[1] : w[3], 2);
  if (hi) { w[0] = r0; w[1] = r1; } else { w[2] = r0; w[3] = r1; }
  r0 = __shfl_xor_sync(0xffffffffu, lo ? w[0] : w[1], 1);
  r1 = __shfl_xor_sync(0xffffffffu, lo ? w[2] : w[3], 1);
  if (lo) { w[0] = r0; w[2] = r1; } else { w[1] = r0; w[3] = r1; }
}

// A 16-bit pair as two floats (pack_pair's inverse).
template <class TC>
__device__ __forceinline__ float2 unpack_pair(uint32_t w) {
  return make_float2(float(TC::bitcast(uint16_t(w & 0xffffu))), float(TC::bitcast(uint16_t(w >> 16))));
}

// One 16-byte block to global memory (p 16-byte aligned). In PTX: a uint4 assignment through
// a pointer whose offset steps by less than 16 bytes a lane came out of NVVM as four 32-bit
// stores.
__device__ __forceinline__ void store_block(void* p, uint32_t const (&w)[4]) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
               :: "l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
}

}  // namespace cg
