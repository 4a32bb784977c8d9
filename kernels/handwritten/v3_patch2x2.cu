// v3 patch2x2 — each thread computes a 2x2 patch of C.
//
// Adds over v2: register reuse. Per k a thread loads 2 values of A and 2 of B from shared
// memory and does 4 FMAs (one shared load per FMA instead of two), and a 256-thread
// block now covers a 32x32 tile, halving global traffic per output against 16x16.
// Geometry: 16 x 16 threads, tile BM x BN x BK = 32 x 32 x 32; thread (tx, ty) owns rows
//           ty, ty+16 and columns tx, tx+16 of the tile — strided by 16, not adjacent,
//           so a warp's B reads stay on 16 consecutive banks and its C writes coalesce.
//           Each thread stages 4 elements of A and 4 of B per k-tile (flat walks, the
//           contiguous dimension fastest); elements past M, N, K are stored as 0.
// Strides:  row-major A, B, C; leading dims from sAm, sBk, sCm.
// Bottleneck: shared-memory loads still one per FMA and scalar global loads (4+4
//           per thread per k-tile); the barrier pair per k-tile.
#include <cute_gemm/common.cuh>

// BM, BN, BK, THREADS: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#define TX 16
#define TY 16
static_assert(THREADS == TX * TY, "the registry's block: TX x TY threads");
#define APAD 4   // keeps rows 16-byte aligned for float4 stores
static_assert(BM == 2 * TY && BN == 2 * TX, "2x2 outputs per thread");
static_assert((BM * BK) % THREADS == 0 && (BK * BN) % THREADS == 0, "whole loads per thread");
#if CG_ENTRY_ON(v3_patch2x2)   // include/cute_gemm/entries.cuh
extern "C" __global__ void __launch_bounds__(THREADS)
v3_patch2x2(CG_GEMM_PARAMS) {
  __shared__ float sA[BM][BK + APAD];  // padded: rows ty and ty+1 of a warp
                                              // would share banks at stride 32
  __shared__ float sB[BK][BN];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[2][2] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int p = 0; p < BM * BK / THREADS; ++p) {
      const int i = tid + p * THREADS, r = i / BK, k = i % BK;
      sA[r][k] = (m0 + r < M && k0 + k < K) ? A[(m0 + r) * sAm + k0 + k] : 0.0f;
    }
#pragma unroll
    for (int p = 0; p < BK * BN / THREADS; ++p) {
      const int i = tid + p * THREADS, k = i / BN, c = i % BN;
      sB[k][c] = (k0 + k < K && n0 + c < N) ? B[(k0 + k) * sBk + n0 + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float a0 = sA[ty][k], a1 = sA[ty + TY][k];     // broadcast within the warp
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
#endif
