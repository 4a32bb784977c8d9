// v8 double — v7 with double-buffered shared memory and register fragments.
//
// Adds over v7: overlap. Two shared-memory stages: while the block computes on stage s,
// each thread's global loads for the next k-tile are already in flight (issued into
// registers before the math, stored to stage s^1 after it), so their latency hides
// behind 8 x 64 FMAs. One barrier per k-tile suffices: stage s^1 was last read before
// the previous barrier. The A/B fragments are double-buffered in registers too: the
// shared loads for k+1 are issued before the FMAs of k, hiding shared-memory latency.
// Geometry: as v7: 128 x 128 x 8, 256 threads (16 x 16), 8 x 8 outputs per thread at
//           rows 8*ty.., columns 8*tx..; static smem 2 x (8 x 132 + 8 x 128) floats.
// Entries:  v8_double (align=4, float4 global accesses) and v8_double_a1 (any alignment).
// Bottleneck: instruction issue and the B-fragment reads: a warp's LDS.128 of sB[k][8*tx..]
//           touches 16 distinct 16-byte words (two wavefronts); v9's warp tiling halves it.
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
  __shared__ __align__(16) float sAT[2][BK][BM + APAD];   // [stage][k][m]
  __shared__ __align__(16) float sB[2][BK][BN];           // [stage][k][n]
  const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ar = tid / (BK / 4), ak = 4 * (tid % (BK / 4));
  const int bk = tid / (BN / 4), bn = 4 * (tid % (BN / 4));
  const float* gA = A + (m0 + ar) * sAm + ak;
  const float* gB = B + bk * sBk + n0 + bn;
  const bool full_mn = m0 + BM <= M && n0 + BN <= N;
  const int ktiles = cg::ceil_div(K, BK);

  float4 va, vb;                                  // the k-tile in flight
  auto fetch = [&](int k0) {
    if (full_mn && k0 + BK <= K) {                // block-uniform branch
      va = cg::load4<VEC, false>(gA + k0, true, 4);
      vb = cg::load4<VEC, false>(gB + k0 * sBk, true, 4);
    } else {
      va = cg::load4<VEC, true>(gA + k0, m0 + ar < M, K - (k0 + ak));
      vb = cg::load4<VEC, true>(gB + k0 * sBk, k0 + bk < K, N - (n0 + bn));
    }
  };
  auto stash = [&](int s) {
    sAT[s][ak + 0][ar] = va.x;
    sAT[s][ak + 1][ar] = va.y;
    sAT[s][ak + 2][ar] = va.z;
    sAT[s][ak + 3][ar] = va.w;
    *reinterpret_cast<float4*>(&sB[s][bk][bn]) = vb;
  };
  float a[2][TM], b[2][TN];
  auto frag = [&](int s, int k, int r) {
#pragma unroll
    for (int i = 0; i < TM; i += 4)
      *reinterpret_cast<float4*>(&a[r][i]) = *reinterpret_cast<const float4*>(&sAT[s][k][ty * TM + i]);
#pragma unroll
    for (int j = 0; j < TN; j += 4)
      *reinterpret_cast<float4*>(&b[r][j]) = *reinterpret_cast<const float4*>(&sB[s][k][tx * TN + j]);
  };

  float acc[TM][TN] = {};
  fetch(0);
  stash(0);
  __syncthreads();
  frag(0, 0, 0);
  int s = 0;
  for (int kt = 0; kt < ktiles; ++kt) {
    const bool more = kt + 1 < ktiles;           // block-uniform
    if (more) fetch((kt + 1) * BK);              // in flight during the FMAs below
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK) {
        frag(s, k + 1, (k + 1) & 1);
      } else if (more) {
        stash(s ^ 1);                            // stage s^1: last read before the previous barrier
        __syncthreads();
        frag(s ^ 1, 0, (k + 1) & 1);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[k & 1][i] * b[k & 1][j];
    }
    s ^= 1;
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

CG_ENTRY(v8_double, __launch_bounds__(THREADS), (CG_GEMM_PARAMS), {
  gemm<true>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn);
})
CG_ENTRY(v8_double_a1, __launch_bounds__(THREADS), (CG_GEMM_PARAMS), {
  gemm<false>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn);
})
