// v0 naive — one thread per element of C, every operand read from global memory.
//
// Adds: nothing; this is the baseline of the handwritten ladder (seed stage v0).
// Geometry: 16x16 threads per block, threadIdx.x walks N so that a warp's reads of a
//           row of B and its writes of a row of C are coalesced (row-major operands).
// Strides:  fully general — any (sAm, sAk), (sBk, sBn), (sCm, sCn); no copies needed.
// Bottleneck: global-memory bandwidth; each A element is re-read N times, each B
//           element M times (L1/L2 soften this, nothing else does).
#include <cute_gemm/common.cuh>

// BLOCK_X, BLOCK_Y: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#if CG_ENTRY_ON(naive)   // include/cute_gemm/entries.cuh
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
naive(CG_GEMM_PARAMS) {
  const int n = blockIdx.x * BLOCK_X + threadIdx.x;
  const int m = blockIdx.y * BLOCK_Y + threadIdx.y;
  if (m >= M || n >= N) return;  // guarded tail: any M, N
  const float* a = A + m * sAm;
  const float* b = B + n * sBn;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[k * sAk] * b[k * sBk];
  cg::store_axpby(alpha, acc, beta, C + m * sCm + n * sCn);
}
#endif
