// v4 float4 — v3 with 128-bit global loads (and 128-bit shared stores).
//
// Adds over v3: each thread fetches its share of a k-tile as one float4 of A and one of
// B instead of 4 + 4 scalar loads: a quarter of the load instructions and address
// computations, and full 16-byte transactions.
// Geometry: as v3: 16 x 16 threads, tile 32 x 32 x 32, 2x2 outputs per thread (strided
//           by 16). Thread t stages A[m0 + t/8][k0 + 4*(t%8) ...+3] and
//           B[k0 + t/8][n0 + 4*(t%8) ...+3]: 8 threads per 128-byte row, coalesced.
// Entries:  v4_float4 needs 16-byte aligned A, B, C pointers and leading strides (the
//           wrapper checks; registry align=4). A float4 that reaches past K (A) or N (B),
//           or lies in a row past M/K, is loaded element by element with bounds checks,
//           so any M, N, K works. v4_float4_a1 takes any alignment and does every load
//           as four guarded scalar loads (same tile, same arithmetic, same results).
// Bottleneck: shared-memory loads (one per FMA, as in v3) — the global side is now lean.
#include <cute_gemm/tiles.cuh>

// BM, BN, BK, THREADS: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#define TX 16
#define TY 16
static_assert(THREADS == TX * TY, "the registry's block: TX x TY threads");
#define APAD 4   // keeps rows 16-byte aligned for float4 stores
static_assert(BM == 2 * TY && BN == 2 * TX, "2x2 outputs per thread");
static_assert(BM * BK == 4 * THREADS && BK * BN == 4 * THREADS, "one float4 of A and B per thread");

template <bool VEC>
__device__ __forceinline__ void gemm(CG_GEMM_PARAMS) {
  __shared__ __align__(16) float sA[BM][BK + APAD];  // padded: rows ty and ty+1 of a warp
                                              // would share banks at stride 32
  __shared__ __align__(16) float sB[BK][BN];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int lr = tid / (BK / 4), lc = 4 * (tid % (BK / 4));   // this thread's float4 slot
  static_assert(BK == BN, "the same slot map serves A (BM x BK) and B (BK x BN)");
  const float* a = A + (m0 + lr) * sAm + lc;                 // formed, dereferenced only in range
  const float* b = B + n0 + lc;
  float acc[2][2] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    *reinterpret_cast<float4*>(&sA[lr][lc]) =
        cg::load4<VEC, true>(a + k0, m0 + lr < M, K - (k0 + lc));
    *reinterpret_cast<float4*>(&sB[lr][lc]) =
        cg::load4<VEC, true>(b + (k0 + lr) * sBk, k0 + lr < K, N - (n0 + lc));
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float a0 = sA[ty][k], a1 = sA[ty + TY][k];
      const float b0 = sB[k][tx], b1 = sB[k][tx + TX];
      acc[0][0] += a0 * b0; acc[0][1] += a0 * b1;
      acc[1][0] += a1 * b0; acc[1][1] += a1 * b1;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int m = m0 + ty + i * TY, n = n0 + tx + j * TX;
      if (m < M && n < N) cg::store_axpby(alpha, acc[i][j], beta, C + m * sCm + n);
    }
}

CG_ENTRY(v4_float4, __launch_bounds__(THREADS), (CG_GEMM_PARAMS), {
  gemm<true>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn);
})
CG_ENTRY(v4_float4_a1, __launch_bounds__(THREADS), (CG_GEMM_PARAMS), {
  gemm<false>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn);
})
