// Rows of T = alpha A B + beta C recomputed with float64 sums: cute_3xtf32's answer for rows
// whose sum cancels far below the split's representation error (c7_3xtf32.cu's finish marks
// them). The products of two floats are exact in float64 and the sums lose ~2^-53, so each
// element is the exact result rounded once to float32: no fp32 GEMM is more accurate.
// Geometry: CTAs of 256 threads walk 64x64 tiles of T (x over rows, y over columns, both
// grid-stride in 64-bit indices); a tile of rows with no marked row is skipped whole. Each
// thread sums a 4x4 patch (rows ty + 16 i, columns tx + 16 j) over k-tiles of 16 staged in
// shared memory as float64. Any strides: consecutive threads load along an operand's unit
// stride. Only marked rows are written, so an unmarked row keeps what finish wrote.
#pragma once

namespace cute_gemm {

constexpr int kRefineTile = 64, kRefineK = 16, kRefineThreads = 256;

__device__ void refine_rows(int M, int N, int K, const float* __restrict__ A, long long sam,
                            long long sak, const float* __restrict__ B, long long sbk,
                            long long sbn, const float* C, long long scm, long long scn,
                            float* T, long long stm, long long stn, float alpha, float beta,
                            const int* __restrict__ marked) {
  constexpr int TL = kRefineTile, TK = kRefineK;
  static_assert(TL * TK % kRefineThreads == 0 && kRefineThreads == 16 * 16 && TL == 4 * 16,
                "16x16 threads, 4x4 outputs each, whole tiles per load");
  __shared__ double sA[TK][TL];                // (k, m)
  __shared__ double sB[TK][TL];                // (k, n)
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  for (long long m0 = (long long)blockIdx.x * TL; m0 < M; m0 += (long long)gridDim.x * TL) {
    const bool mine = tid < TL && m0 + tid < M && marked[m0 + tid] != 0;
    if (!__syncthreads_or(mine)) continue;     // (uniform: every thread skips the tile)
    for (long long n0 = (long long)blockIdx.y * TL; n0 < N; n0 += (long long)gridDim.y * TL) {
      double acc[4][4] = {};
      for (long long k0 = 0; k0 < K; k0 += TK) {
        for (int l = tid; l < TL * TK; l += kRefineThreads) {
          const int am = sak == 1 ? l / TK : l % TL, ak = sak == 1 ? l % TK : l / TL;
          const long long gm = m0 + am, gk = k0 + ak;
          sA[ak][am] = gm < M && gk < K ? double(A[gm * sam + gk * sak]) : 0.0;
          const int bn = sbn == 1 ? l % TL : l / TK, bk = sbn == 1 ? l / TL : l % TK;
          const long long gn = n0 + bn, hk = k0 + bk;
          sB[bk][bn] = gn < N && hk < K ? double(B[hk * sbk + gn * sbn]) : 0.0;
        }
        __syncthreads();
        for (int kk = 0; kk < TK; ++kk) {
          double a[4], b[4];
          for (int i = 0; i < 4; ++i) a[i] = sA[kk][ty + 16 * i];
          for (int j = 0; j < 4; ++j) b[j] = sB[kk][tx + 16 * j];
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        __syncthreads();                       // the tiles are refilled next
      }
      for (int i = 0; i < 4; ++i) {
        const long long m = m0 + ty + 16 * i;
        if (m >= M || marked[m] == 0) continue;
        for (int j = 0; j < 4; ++j) {
          const long long n = n0 + tx + 16 * j;
          if (n >= N) continue;
          double v = double(alpha) * acc[i][j];
          if (beta != 0.0f) v = fma(double(beta), double(C[m * scm + n * scn]), v);
          T[m * stm + n * stn] = float(v);     // the one rounding
        }
      }
    }
  }
}

}  // namespace cute_gemm
