// v7 atrans — v6 with A stored transposed ([k][m]) in shared memory, padded.
//
// Adds over v6: the A fragment of one k (8 consecutive rows) becomes 8 consecutive
// floats of sAT[k][.], i.e. two LDS.128 per k like B; the 8 x 4 register block of v6
// (32 registers) and its 2-way conflicted reads go away. The transpose happens on the
// way in: the float4 of A (4 consecutive k of one row) is written as 4 scalars down a
// column of sAT. The row pitch BM + 4 makes those stores conflict-free: with pitch 128,
// the two k-halves of a warp (k = 0..3 vs 4..7, rows r..r+15) would land on the same
// banks; with 132, k + 4 shifts by 4 * 132 = 528 = 16 (mod 32) banks. The pad is 4, not
// 1, so rows stay 16-byte aligned for the float4 reads.
// Geometry: as v6: 128 x 128 x 8, 256 threads (16 x 16), 8 x 8 outputs per thread at
//           rows 8*ty.., columns 8*tx..; static smem 8 x 132 + 8 x 128 floats.
// Entries:  v7_atrans (align=4, float4 global accesses) and v7_atrans_a1 (any alignment).
// Bottleneck: latency: loads, the barrier and the math of a k-tile run one after the
//           other; with 1-2 blocks per SM little else hides the global-load latency.
#include <cute_gemm/tiles.cuh>

// BM, BN, BK, THREADS: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#define TM 8
#define TN 8
#define APAD 4
static_assert(THREADS == (BM / TM) * (BN / TN), "the registry's block: TM x TN outputs a thread");
static_assert(THREADS == 256 && BM * BK == 4 * THREADS && BK * BN == 4 * THREADS,
              "one float4 of A and one of B per thread per k-tile");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 && APAD % 4 == 0, "float4 fragments");
static_assert((4 * (BM + APAD)) % 32 == 16, "k and k+4 of one row on opposite half-banks");

template <bool VEC>
__device__ __forceinline__ void gemm(CG_GEMM_PARAMS) {
  __shared__ __align__(16) float sAT[BK][BM + APAD];   // [k][m]
  __shared__ __align__(16) float sB[BK][BN];           // [k][n]
  const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ar = tid / (BK / 4), ak = 4 * (tid % (BK / 4));
  const int bk = tid / (BN / 4), bn = 4 * (tid % (BN / 4));
  const float* gA = A + (m0 + ar) * sAm + ak;
  const float* gB = B + bk * sBk + n0 + bn;
  const bool full_mn = m0 + BM <= M && n0 + BN <= N;
  float acc[TM][TN] = {};

  for (int k0 = 0; k0 < K; k0 += BK) {
    float4 va, vb;
    if (full_mn && k0 + BK <= K) {
      va = cg::load4<VEC, false>(gA + k0, true, 4);
      vb = cg::load4<VEC, false>(gB + k0 * sBk, true, 4);
    } else {
      va = cg::load4<VEC, true>(gA + k0, m0 + ar < M, K - (k0 + ak));
      vb = cg::load4<VEC, true>(gB + k0 * sBk, k0 + bk < K, N - (n0 + bn));
    }
    sAT[ak + 0][ar] = va.x;
    sAT[ak + 1][ar] = va.y;
    sAT[ak + 2][ar] = va.z;
    sAT[ak + 3][ar] = va.w;
    *reinterpret_cast<float4*>(&sB[bk][bn]) = vb;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; i += 4)
        *reinterpret_cast<float4*>(&a[i]) = *reinterpret_cast<const float4*>(&sAT[k][ty * TM + i]);
#pragma unroll
      for (int j = 0; j < TN; j += 4)
        *reinterpret_cast<float4*>(&b[j]) = *reinterpret_cast<const float4*>(&sB[k][tx * TN + j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty * TM + i;
    float* c = C + m * sCm + n0 + tx * TN;
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const float4 v = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
      if (full_mn) cg::store4_axpby<VEC, false>(alpha, v, beta, c + j, true, 4);
      else cg::store4_axpby<VEC, true>(alpha, v, beta, c + j, m < M, N - (n0 + tx * TN + j));
    }
  }
}

CG_ENTRY(v7_atrans, __launch_bounds__(THREADS), (CG_GEMM_PARAMS), {
  gemm<true>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn);
})
CG_ENTRY(v7_atrans_a1, __launch_bounds__(THREADS), (CG_GEMM_PARAMS), {
  gemm<false>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn);
})
