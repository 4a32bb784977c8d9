// v6 vec — v5 with 128-bit global loads and 128-bit shared loads/stores.
//
// Adds over v5: every access is 16 bytes wide. Each thread fetches one float4 of A and
// one of B per k-tile and stores them to shared memory as float4. B fragments are read
// as two float4 per k. A stays [m][k] in shared memory, so a thread reads its 8 rows four
// k at a time (8 float4 = an 8 x 4 block of A) and then runs four k-steps: 16 LDS.128
// per 256 FMAs instead of 64 scalar LDS. Full tiles take unguarded float4 loads and
// stores; edge tiles (past M, N or K) use element-wise guarded loads, zero-filled.
// Geometry: as v5: 128 x 128 x 8, 256 threads (16 x 16), 8 x 8 outputs per thread at
//           rows 8*ty.., columns 8*tx..; A slot: row tid/2, k 4*(tid%2); B slot: k tid/32,
//           n 4*(tid%32).
// Entries:  v6_vec: 16-byte aligned operands (align=4); v6_vec_a1: any alignment, same
//           tile with scalar global accesses (shared memory is ours, always aligned).
// Bottleneck: shared memory: the A block reads are 2-way conflicted (rows 64 floats
//           apart share banks) and the 8 x 4 A block costs 32 registers; no overlap of
//           loads with math.
#include <cute_gemm/tiles.cuh>

// BM, BN, BK, THREADS: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#define TM 8
#define TN 8
static_assert(THREADS == (BM / TM) * (BN / TN), "the registry's block: TM x TN outputs a thread");
static_assert(THREADS == 256 && BM * BK == 4 * THREADS && BK * BN == 4 * THREADS,
              "one float4 of A and one of B per thread per k-tile");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 fragments");

template <bool VEC>
__device__ __forceinline__ void gemm(CG_GEMM_PARAMS) {
  __shared__ __align__(16) float sA[BM][BK];   // [m][k]
  __shared__ __align__(16) float sB[BK][BN];   // [k][n]
  const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ar = tid / (BK / 4), ak = 4 * (tid % (BK / 4));
  const int bk = tid / (BN / 4), bn = 4 * (tid % (BN / 4));
  const float* gA = A + (m0 + ar) * sAm + ak;   // dereferenced only when in range
  const float* gB = B + bk * sBk + n0 + bn;
  const bool full_mn = m0 + BM <= M && n0 + BN <= N;
  float acc[TM][TN] = {};

  for (int k0 = 0; k0 < K; k0 += BK) {
    float4 va, vb;
    if (full_mn && k0 + BK <= K) {              // block-uniform: no divergence
      va = cg::load4<VEC, false>(gA + k0, true, 4);
      vb = cg::load4<VEC, false>(gB + k0 * sBk, true, 4);
    } else {
      va = cg::load4<VEC, true>(gA + k0, m0 + ar < M, K - (k0 + ak));
      vb = cg::load4<VEC, true>(gB + k0 * sBk, k0 + bk < K, N - (n0 + bn));
    }
    *reinterpret_cast<float4*>(&sA[ar][ak]) = va;
    *reinterpret_cast<float4*>(&sB[bk][bn]) = vb;
    __syncthreads();
#pragma unroll
    for (int kq = 0; kq < BK; kq += 4) {
      float4 a[TM];                             // rows 8*ty + i, k = kq .. kq+3
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = *reinterpret_cast<const float4*>(&sA[ty * TM + i][kq]);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        float b[TN];
#pragma unroll
        for (int j = 0; j < TN; j += 4)
          *reinterpret_cast<float4*>(&b[j]) = *reinterpret_cast<const float4*>(&sB[kq + kk][tx * TN + j]);
#pragma unroll
        for (int i = 0; i < TM; ++i) {
          const float ai = kk == 0 ? a[i].x : kk == 1 ? a[i].y : kk == 2 ? a[i].z : a[i].w;
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] += ai * b[j];
        }
      }
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

CG_ENTRY(v6_vec, __launch_bounds__(THREADS), (CG_GEMM_PARAMS), {
  gemm<true>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn);
})
CG_ENTRY(v6_vec_a1, __launch_bounds__(THREADS), (CG_GEMM_PARAMS), {
  gemm<false>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn);
})
