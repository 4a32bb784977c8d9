// Rows of T = alpha A B + beta C recomputed with float64 sums: cute_3xtf32's answer for rows
// whose sum cancels far below the split's representation error, and for every row of inputs
// the split cannot carry (c7_3xtf32.cu's finish marks them). The products of two floats are
// exact in float64 and the sums lose ~2^-53, so each element is the exact result rounded once
// to float32: no fp32 GEMM is more accurate. NaN and ±Inf come out as in float64.
// Geometry: CTAs of 256 threads (8 warps, 2 x 4) walk 64x128 tiles of T (x over rows, y over
// columns, both grid-stride in 64-bit indices); a tile of rows with no marked row is skipped
// whole. Each warp owns 32x32 of the tile as 4x4 float64 tensor-core MMAs (m8n8k4, DMMA:
// twice the CUDA cores' float64 rate), over k-tiles of 16 staged in shared memory as float64;
// the next k-tile's floats wait in registers while this one is multiplied. Any strides:
// consecutive threads load along an operand's unit stride. Only marked rows are written, so
// an unmarked row keeps what finish wrote.
#pragma once

namespace cute_gemm {

constexpr int kRefineTileM = 64, kRefineTileN = 128, kRefineK = 16, kRefineThreads = 256;

// D = A B + D for one 8x8x4 float64 tile: a = A[lane / 4][lane % 4], b = B[lane % 4][lane / 4],
// d = D[lane / 4][2 (lane % 4) + {0, 1}]
__device__ __forceinline__ void dmma_8x8x4(double (&d)[2], double a, double b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
               : "+d"(d[0]), "+d"(d[1])
               : "d"(a), "d"(b));
}

// One operand's k-tile as (rows, k) with strides (sr, sk) (A as it is, B transposed): element
// l of the TR x TK tile, consecutive threads along k where k_unit (its unit stride), else
// along the rows; L elements per thread, fetched into registers, then stored as float64.
template <int TR, int TK>
__device__ __forceinline__ void refine_at(int l, bool k_unit, int& r, int& k) {
  r = k_unit ? l / TK : l % TR;
  k = k_unit ? l % TK : l / TR;
}

template <int TR, int TK, int L>
__device__ __forceinline__ void refine_fetch(float (&reg)[L], const float* __restrict__ src,
                                             long long R, long long r0, long long sr,
                                             long long sk, bool k_unit, long long k0, int K) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    int r, k;
    refine_at<TR, TK>(threadIdx.x + i * kRefineThreads, k_unit, r, k);
    reg[i] = r0 + r < R && k0 + k < K ? src[(r0 + r) * sr + (k0 + k) * sk] : 0.0f;
  }
}

template <int TR, int TK, int P, int L>
__device__ __forceinline__ void refine_store(double (&stage)[TK][TR + P], const float (&reg)[L],
                                             bool k_unit) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    int r, k;
    refine_at<TR, TK>(threadIdx.x + i * kRefineThreads, k_unit, r, k);
    stage[k][r] = double(reg[i]);
  }
}

__device__ void refine_rows(int M, int N, int K, const float* __restrict__ A, long long sam,
                            long long sak, const float* __restrict__ B, long long sbk,
                            long long sbn, const float* C, long long scm, long long scn,
                            float* T, long long stm, long long stn, float alpha, float beta,
                            const int* __restrict__ marked) {
  constexpr int TM = kRefineTileM, TN = kRefineTileN, TK = kRefineK, P = 8;
  constexpr int LA = TM * TK / kRefineThreads, LB = TN * TK / kRefineThreads;
  static_assert(kRefineThreads == 256 && TM == 2 * 32 && TN == 4 * 32 && TK % 4 == 0,
                "8 warps as 2 x 4 warp tiles of 32 x 32");
  // +P: a row of the stage is 64 bytes past a multiple of 128, so the 4 k-rows a fragment
  // load reads fill one 128-byte wavefront pairwise (2 wavefronts for 32 doubles)
  __shared__ double sA[TK][TM + P];           // (k, m)
  __shared__ double sB[TK][TN + P];           // (k, n)
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, q = lane % 4;        // the MMA's group and thread in group
  const int wm = 32 * (warp / 4), wn = 32 * (warp % 4);
  const bool a_k = sak == 1, b_k = sbn != 1;  // loads along k (else along rows / columns)
  for (long long m0 = (long long)blockIdx.x * TM; m0 < M; m0 += (long long)gridDim.x * TM) {
    const bool mine = tid < TM && m0 + tid < M && marked[m0 + tid] != 0;
    if (!__syncthreads_or(mine)) continue;     // (uniform: every thread skips the tile)
    for (long long n0 = (long long)blockIdx.y * TN; n0 < N; n0 += (long long)gridDim.y * TN) {
      float ra[LA], rb[LB];                    // the next k-tile, on its way to smem
      auto fetch = [&](long long k0) {
        refine_fetch<TM, TK>(ra, A, M, m0, sam, sak, a_k, k0, K);
        refine_fetch<TN, TK>(rb, B, N, n0, sbn, sbk, b_k, k0, K);
      };
      double acc[4][4][2] = {};
      fetch(0);
      for (long long k0 = 0; k0 < K; k0 += TK) {
        refine_store<TM, TK, P>(sA, ra, a_k);
        refine_store<TN, TK, P>(sB, rb, b_k);
        __syncthreads();
        if (k0 + TK < K) fetch(k0 + TK);       // in flight while this k-tile is multiplied
#pragma unroll
        for (int kk = 0; kk < TK; kk += 4) {
          double a[4], b[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) a[i] = sA[kk + q][wm + 8 * i + g];
#pragma unroll
          for (int j = 0; j < 4; ++j) b[j] = sB[kk + q][wn + 8 * j + g];
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) dmma_8x8x4(acc[i][j], a[i], b[j]);
        }
        __syncthreads();                       // the stages are refilled next
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long m = m0 + wm + 8 * i + g;
        if (m >= M || marked[m] == 0) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
#pragma unroll
          for (int v = 0; v < 2; ++v) {
            const long long n = n0 + wn + 8 * j + 2 * q + v;
            if (n >= N) continue;
            double x = double(alpha) * acc[i][j][v];
            if (beta != 0.0f) x = fma(double(beta), double(C[m * scm + n * scn]), x);
            T[m * stm + n * stn] = float(x);   // the one rounding
          }
        }
      }
    }
  }
}

}  // namespace cute_gemm
