// v5 outer — 128x128x8 block tile, 8x8 outputs per thread as a register outer product.
//
// Adds over v4: a big register tile. Per k a thread reads a column of 8 A values and a
// row of 8 B values from shared memory into registers and does 64 FMAs (an outer
// product): 16 shared loads per 64 FMAs instead of 1 per FMA. The 128x128 block tile
// also reads each global element once per 128 outputs of its row/column.
// Geometry: 256 threads as 16 x 16 (tx = tid % 16 walks N, ty = tid / 16 walks M);
//           thread (tx, ty) owns rows 8*ty ... 8*ty+7 and columns 8*tx ... 8*tx+7.
//           Per k-tile each thread stages 4 scalars of A (128 x 8, k fastest) and 4 of B
//           (8 x 128, n fastest), bounds-checked, zero past M, N, K. Static smem 8 KB.
// Strides:  row-major A, B, C; leading dims from sAm, sBk, sCm.
// Bottleneck: shared memory: scalar loads, and bank conflicts — the B row reads
//           sB[k][8*tx + j] put 4 lanes on each bank (4-way), the A reads two rows 64
//           floats apart on one bank (2-way). v6/v7 vectorise and transpose.
#include <cute_gemm/common.cuh>

// BM, BN, BK, THREADS: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#define TM 8
#define TN 8
static_assert(THREADS == (BM / TM) * (BN / TN), "the registry's block: TM x TN outputs a thread");
static_assert(THREADS == 256, "16 x 16 threads");
static_assert((BM * BK) % THREADS == 0 && (BK * BN) % THREADS == 0, "whole loads per thread");
#if CG_ENTRY_ON(v5_outer)   // include/cute_gemm/entries.cuh
extern "C" __global__ void __launch_bounds__(THREADS)
v5_outer(CG_GEMM_PARAMS) {
  __shared__ float sA[BM][BK];   // [m][k]: as in global memory
  __shared__ float sB[BK][BN];   // [k][n]
  const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  float a[TM], b[TN];

  for (int k0 = 0; k0 < K; k0 += BK) {
    // k (resp. n) fastest across threads: each warp reads whole 32-byte sectors of A
    // rows and 128-byte runs of B rows.
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
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = sA[ty * TM + i][k];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = sB[k][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();               // everyone is done with this tile before the next load
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty * TM + i;
    if (m >= M) break;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + tx * TN + j;
      if (n < N) cg::store_axpby(alpha, acc[i][j], beta, C + m * sCm + n);
    }
  }
}
#endif
