// cute_3xtf32 — fp32 accuracy from tensor cores (3xTF32, its products in fp16): the passes
// around the GEMM. sm_90a.
//
// Each fp32 element is split x = big + small, big the 11 significant bits tf32 keeps (rounded
// to nearest), small the next 11 (rounded): big·big + big·small + small·big is 3xTF32. fp16
// also holds 11 significant bits, and its tensor cores run at twice tf32's rate, so the parts
// are stored as fp16, each row of A and column of B first scaled by the power of two 2^p that
// brings its largest magnitude into [2^14, 2^15) (fp16's range is 2^-24 .. 65504):
//   A' = [.. | A_small(c) | A_big(c) | ..]   (M x K' halves, row-major)
//   B' = [.. ; B_small(c) ; B_big(c) ; ..]   (K' x N, column-major),  chunks of 64 k,
//   K' = 2 * 64 * ceil(K / 64).
// The GEMM (cute_3xtf32_gemm: c6's promoted fp16 entry, split_parts = 2) reads three k-tiles a
// chunk (small·big, big·small, big·big) into a scratch W = 2^(p_m + q_n) (A B)_mn.
// Passes, in stream order (composed.Composed):
//   range   the largest finite |x| of each row (atomicMax on the bits) and the ±Inf flags;
//   split   the parts (B's first); counts per row the elements whose parts miss x by more than
//           2^-22 |x| (small below fp16's normal range: x under ~2^-16 of its row's largest),
//           and flags where fp16 cannot carry the split: an element below 2^-24 after scaling
//           (or subnormal), or more than kMaxInexact such elements in 32 of a row. On the way,
//           B's pass sums b_kn^2 per k and tile of 32 n, norms adds those up (|B_k|^2), and
//           A's pass sums a_mk^2 |B_k|^2 per row m and CTA column: S_m = sum_kn (a_mk b_kn)^2;
//   (the GEMM)
//   finish  T = alpha (2^-(p_m + q_n) W + r_A B) + beta C by rows: the scales undone and the
//           residuals r = x - (big + small) of A's counted elements (exact in fp32) added in
//           k order; a row whose |T_m|^2 < kCancel alpha^2 S_m is left to refine instead;
//   fix     T += alpha A r_B by columns, for B's counted elements. Every element then counts
//           as x to 2^-22 |x|, as in a tf32 split, and the sums are deterministic;
//   refine  the rows finish left, with float64 sums (refine_rows.cuh).
// Nothing is read back on the host: where the flags are set (bits 0, 1: A, B out of fp16's
// reach; 2, 3: ±Inf, which the GEMM's compensated sums would turn into NaN), finish marks
// every row and writes none, fix does nothing, and refine computes all of T from A, B and C
// as a float64 computation would (NaN, ±Inf, subnormals and any magnitude included), at
// refine's speed, for those calls only. So the call is deterministic and a graph can hold it.
// The split's representation error in a row is about 2^-24 |alpha| sqrt(S_m), random in sign:
// on uncorrelated data |T_m|^2 ~ alpha^2 S_m and 3xTF32 is as accurate as SGEMM; where the row's
// sum cancels (|T_m| far below sqrt(S_m)), that error does not shrink with it, but SGEMM's,
// made in the running sums, does. Such a row is recomputed (docs/design/cute_3xtf32.md#cancel).
// Geometry: range and split walk 32x32 (rows x k) tiles through smem, 32x8 threads (the
//           transpose of util/scale2d.cu: reads along the source's unit-stride mode); grid x
//           over rows, y over K (records.SplitGrid), grid-stride in 64-bit indices. finish /
//           fix: a CTA of 256 per row of C / column of B (fix: most return at once). norms:
//           256 threads, a k each. refine: refine_rows.cuh.
#include <cute_gemm/entries.cuh>
#include <cute_gemm/refine_rows.cuh>

constexpr int TILE = 32, ROWS = 8, FIX = 256;
constexpr int kMaxInexact = 4;                 // per 32 elements of a row: the fix's work bound
constexpr int kTop = 14;                       // a row's largest magnitude scaled into [2^14, 2^15)
constexpr unsigned short kHalfNaN = 0x7fffu;
constexpr double kCancel = 0.5;                // |T_m|^2 / (alpha^2 S_m) below it: refine the row

__device__ __forceinline__ unsigned short f16_rn(float x) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
__device__ __forceinline__ float f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// the exponent p of a row whose largest finite magnitude has these bits (0: an all-zero row)
__device__ __forceinline__ int row_exponent(unsigned max_bits) {
  if (max_bits == 0) return 0;
  int e;
  frexpf(__uint_as_float(max_bits), &e);       // max = f 2^e, f in [0.5, 1)
  return kTop + 1 - e;                         // max 2^p in [2^14, 2^15)
}

struct Parts {
  unsigned short big, small;
  float resid;                                 // x - (big + small) 2^-p, exact
  bool inexact;                                // resid above 2^-22 |x|: the fix adds it
  bool lost;                                   // below fp16's range: the split cannot carry it
};

__device__ __forceinline__ Parts split(float x, int p) {
  if (isnan(x)) return {kHalfNaN, kHalfNaN, 0.0f, false, false};
  const float y = ldexpf(x, p);                // exact: a power of two, |y| < 2^15
  const unsigned short big = f16_rn(y);
  const float d = y - f16_to_f32(big);         // exact: the bits of y below big's last
  const unsigned short small = f16_rn(d);
  const float r = d - f16_to_f32(small);       // exact
  const bool inexact = fabsf(r) > 0x1p-22f * fabsf(y);
  // below fp16's range after scaling, or subnormal in fp32 (its residual would underflow)
  const bool lost = x != 0.0f && (fabsf(y) < 0x1p-24f || fabsf(x) < 0x1p-126f);
  return {big, small, ldexpf(r, -p), inexact, lost};
}

// The source as (R, K) with strides (sr, sk): tile (r0, k0) into smem, zeros outside
__device__ __forceinline__ void load_tile(float (&tile)[TILE][TILE + 1], int R, int K,
                                          const float* __restrict__ src, long long sr,
                                          long long sk, long long r0, long long k0) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  const bool src_r = sr == 1 && sk != 1;       // the source's unit stride runs along R
  for (int j = ty; j < TILE; j += ROWS) {
    const int i = src_r ? tx : j, c = src_r ? j : tx;   // (row, k) within the tile
    const long long r = r0 + i, k = k0 + c;
    tile[i][c] = r < R && k < K ? src[r * sr + k * sk] : 0.0f;
  }
}

template <bool kA>
__device__ void range_body(int R, int K, const float* __restrict__ src, long long sr,
                           long long sk, unsigned* __restrict__ rmax, unsigned* __restrict__ flags) {
  __shared__ float tile[TILE][TILE + 1];       // +1: the transposed walk hits 32 banks
  const int tx = threadIdx.x, ty = threadIdx.y;
  bool inf = false;
  for (long long r0 = (long long)blockIdx.x * TILE; r0 < R; r0 += (long long)gridDim.x * TILE) {
    for (long long k0 = (long long)blockIdx.y * TILE; k0 < K; k0 += (long long)gridDim.y * TILE) {
      load_tile(tile, R, K, src, sr, sk, r0, k0);
      __syncthreads();
      for (int i = ty; i < TILE; i += ROWS) {  // a warp per row of the tile
        const float x = tile[i][tx];
        inf |= isinf(x);
        const unsigned bits = isfinite(x) ? __float_as_uint(fabsf(x)) : 0u;
        const unsigned m = __reduce_max_sync(0xffffffffu, bits);
        if (tx == 0 && m != 0 && r0 + i < R) atomicMax(rmax + r0 + i, m);
      }
      __syncthreads();                         // the tile is refilled next
    }
  }
  if (__syncthreads_or(inf) && tx == 0 && ty == 0) atomicOr(flags, kA ? 4u : 8u);
}

// The sum over a warp in one fixed order (a butterfly: every lane gets the same bits)
__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum over a CTA of FIX threads in one fixed order, to every thread
__device__ __forceinline__ double block_sum(double v) {
  __shared__ double s_part[FIX / 32];
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) s_part[threadIdx.x / 32] = v;
  __syncthreads();
  double s = 0.0;
  for (int w = 0; w < FIX / 32; ++w) s += s_part[w];
  __syncthreads();                             // s_part is refilled by the next call
  return s;
}

// kA: A's flag bit and its parts' order; B's chunk is stored alike ([small | big]): the
// GEMM's k-tiles pair A small with B big and A big with B small (sm90_split_parts.cuh).
// Sums of squares for finish's cancellation test, each in one fixed order: B's pass writes
// sums[t K + k] = sum of b_kn^2 over the tile t of 32 n; A's reads norms[k] = |B_k|^2 and
// writes sums[m gridDim.y + blockIdx.y] = sum of a_mk^2 |B_k|^2 over this CTA's k.
template <bool kA>
__device__ void split_body(int R, int K, const float* __restrict__ src, long long sr,
                           long long sk, unsigned short* __restrict__ dst, long long ld,
                           const unsigned* __restrict__ rmax, int* __restrict__ inexact_rows,
                           unsigned* __restrict__ flags, const double* __restrict__ norms,
                           double* __restrict__ sums) {
  __shared__ float tile[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  bool lost = false;                           // (ld: K', whole chunks, written to its end)
  static_assert(2 * TILE == 64, "two tiles of k: one chunk of 64");
  for (long long r0 = (long long)blockIdx.x * TILE; r0 < R; r0 += (long long)gridDim.x * TILE) {
    double row_sq[TILE / ROWS] = {};           // A: this lane's share of its warp's rows
    for (long long k0 = (long long)blockIdx.y * TILE; k0 < ld / 2; k0 += (long long)gridDim.y * TILE) {
      load_tile(tile, R, K, src, sr, sk, r0, k0);
      __syncthreads();
      if (!kA && ty == 0 && k0 + tx < K) {     // B: column tx of the tile, rows in order
        double s = 0.0;
        for (int i = 0; i < TILE; ++i) s += double(tile[i][tx]) * tile[i][tx];
        sums[r0 / TILE * K + k0 + tx] = s;
      }
#pragma unroll
      for (int j = 0; j < TILE / ROWS; ++j) {  // a warp per row of the tile
        const int i = ty + ROWS * j;
        const long long r = r0 + i;
        if (r >= R) continue;
        const int p = row_exponent(rmax[r]);
        Parts q{0, 0, 0.0f, false, false};     // columns past K: zeros in both parts
        if (k0 + tx < K) {
          q = split(tile[i][tx], p);
          if (kA) row_sq[j] += double(tile[i][tx]) * tile[i][tx] * norms[k0 + tx];
        }
        const long long c = k0 / 64, o = k0 % 64 + tx;      // chunk, and k within it
        unsigned short* chunk = dst + r * ld + 128 * c;
        chunk[o] = q.small;
        chunk[64 + o] = q.big;
        const int n = __popc(__ballot_sync(0xffffffffu, q.inexact));
        lost |= q.lost || n > kMaxInexact;
        if (tx == 0 && n > 0) atomicAdd(inexact_rows + r, n);
      }
      __syncthreads();
    }
    if (kA) {
#pragma unroll
      for (int j = 0; j < TILE / ROWS; ++j) {  // each lane's k in order, then the butterfly
        const double sum = warp_sum(row_sq[j]);
        const long long r = r0 + ty + ROWS * j;
        if (tx == 0 && r < R) sums[r * gridDim.y + blockIdx.y] = sum;
      }
    }
  }
  if (__syncthreads_or(lost) && tx == 0 && ty == 0) atomicOr(flags, kA ? 1u : 2u);
}

// norms[k] = |B_k|^2: the tiles' sums of B's split added in tile order
__device__ void norms_body(int R, int K, const double* __restrict__ sums,
                           double* __restrict__ norms) {
  const long long tiles = (R + TILE - 1) / TILE, threads = blockDim.x * blockDim.y;
  for (long long k = blockIdx.x * threads + threadIdx.y * blockDim.x + threadIdx.x; k < K;
       k += gridDim.x * threads) {
    double s = 0.0;
    for (long long t = 0; t < tiles; ++t) s += sums[t * K + k];
    norms[k] = s;
  }
}

// The counted elements of row i of S (an (R, K) source of strides (sr, sk), its rows' exponent
// p), FIX at a time in k order, into (s_k, s_r); calls add(n) for each batch of n.
template <class Add>
__device__ __forceinline__ void residuals(int i, int K, const float* __restrict__ src,
                                          long long sr, long long sk, int p, int (&s_k)[FIX],
                                          float (&s_r)[FIX], Add add) {
  __shared__ int s_warp[FIX / 32];
  const int t = threadIdx.x;
  for (long long k0 = 0; k0 < K; k0 += FIX) {
    const long long k = k0 + t;
    Parts q{0, 0, 0.0f, false, false};
    if (k < K) q = split(src[i * sr + k * sk], p);
    const unsigned ballot = __ballot_sync(0xffffffffu, q.inexact);
    if (t % 32 == 0) s_warp[t / 32] = __popc(ballot);
    __syncthreads();
    int before = __popc(ballot & ((1u << (t % 32)) - 1)), n = 0;
    for (int w = 0; w < FIX / 32; ++w) {
      before += w < t / 32 ? s_warp[w] : 0;
      n += s_warp[w];
    }
    if (q.inexact) { s_k[before] = int(k); s_r[before] = q.resid; }
    __syncthreads();
    if (n > 0) add(n);
    __syncthreads();                            // the lists are refilled next
  }
}

// Row i of T = alpha (2^-(p_i + q_j) W_ij + sum_k r_ik B_kj) + beta C_ij, j < N
__device__ void finish_body(int M, int N, int K, const float* __restrict__ A, long long sam,
                            long long sak, const float* __restrict__ B, long long sbk,
                            long long sbn, const unsigned* __restrict__ rmax,
                            const int* __restrict__ inexact_rows, const float* __restrict__ W,
                            long long ldw, const float* C, long long scm,
                            long long scn, float* T, long long stm, long long stn,
                            float alpha, float beta, const unsigned* __restrict__ flags,
                            const double* __restrict__ sums, int ny, int* __restrict__ marked) {
  __shared__ int s_k[FIX];
  __shared__ float s_r[FIX];
  const int i = blockIdx.x, t = threadIdx.x;
  if (i >= M) return;
  if (*flags != 0) {                           // flagged: W is no answer, refine computes the row
    if (t == 0) { marked[i] = 1; atomicAdd(marked + M, 1); }
    return;
  }
  const int p = row_exponent(rmax[i]);
  const unsigned* qmax = rmax + M;             // B's columns follow A's rows
  auto value = [&](long long j) {
    const float w = ldexpf(W[i * ldw + j], -(p + row_exponent(qmax[j])));
    return beta == 0.0f ? alpha * w : fmaf(alpha, w, beta * C[i * scm + j * scn]);
  };
  double s = 0.0, tt = 0.0;                    // S_i, |T_i|^2
  for (long long y = t; y < ny; y += FIX) s += sums[i * ny + y];
  for (long long j = t; j < N; j += FIX) {
    const double v = value(j);
    tt += v * v;
  }
  s = block_sum(s);
  tt = block_sum(tt);
  if (tt < kCancel * double(alpha) * alpha * s) {   // (false for NaN: it stays where it lands)
    if (t == 0) { marked[i] = 1; atomicAdd(marked + M, 1); }
    return;                                    // T's row (and C's, in place) untouched
  }
  // T's row is written by this CTA alone: the residual batches add into it in k order
  for (long long j = t; j < N; j += FIX) T[i * stm + j * stn] = value(j);
  if (inexact_rows[i] == 0) return;
  residuals(i, K, A, sam, sak, p, s_k, s_r, [&](int n) {
    for (long long j = t; j < N; j += FIX) {
      float acc = 0.0f;
      for (int e = 0; e < n; ++e) acc = fmaf(s_r[e], B[s_k[e] * sbk + j * sbn], acc);
      T[i * stm + j * stn] += alpha * acc;
    }
  });
}

// Column j of T += alpha sum_k A_ik r_kj, i < M, for B's counted elements
__device__ void fix_body(int M, int N, int K, const float* __restrict__ A, long long sam,
                         long long sak, const float* __restrict__ B, long long sbk,
                         long long sbn, const unsigned* __restrict__ rmax,
                         const int* __restrict__ inexact_rows, float* __restrict__ T,
                         long long stm, long long stn, float alpha,
                         const unsigned* __restrict__ flags, const int* __restrict__ marked) {
  __shared__ int s_k[FIX];
  __shared__ float s_r[FIX];
  const int j = blockIdx.x, t = threadIdx.x;
  if (j >= N || *flags != 0 || inexact_rows[M + j] == 0) return;
  const int q = row_exponent(rmax[M + j]);
  residuals(j, K, B, sbn, sbk, q, s_k, s_r, [&](int n) {
    for (long long i = t; i < M; i += FIX) {
      if (marked[i] != 0) continue;            // refine computes that row whole
      float acc = 0.0f;
      for (int e = 0; e < n; ++e) acc = fmaf(A[i * sam + s_k[e] * sak], s_r[e], acc);
      T[i * stm + j * stn] += alpha * acc;
    }
  });
}

#define CG_RANGE(NAME, IS_A)                                                                 \
  CG_ENTRY(NAME, __launch_bounds__(TILE * ROWS),                                             \
           (int R, int K, const float* __restrict__ src, long long sr, long long sk,        \
            unsigned* __restrict__ rmax, unsigned* __restrict__ flags), {                   \
    range_body<IS_A>(R, K, src, sr, sk, rmax, flags);                                        \
  })
#define CG_SPLIT(NAME, IS_A)                                                                 \
  CG_ENTRY(NAME, __launch_bounds__(TILE * ROWS),                                             \
           (int R, int K, const float* __restrict__ src, long long sr, long long sk,        \
            unsigned short* __restrict__ dst, long long ld, const unsigned* __restrict__ rmax, \
            int* __restrict__ inexact_rows, unsigned* __restrict__ flags,                   \
            const double* __restrict__ norms, double* __restrict__ sums), {                  \
    split_body<IS_A>(R, K, src, sr, sk, dst, ld, rmax, inexact_rows, flags, norms, sums);    \
  })
#define CG_FINISH(NAME)                                                                      \
  CG_ENTRY(NAME, __launch_bounds__(FIX),                                                     \
           (int M, int N, int K, const float* __restrict__ A, long long sam, long long sak,   \
            const float* __restrict__ B, long long sbk, long long sbn,                       \
            const unsigned* __restrict__ rmax, const int* __restrict__ inexact_rows,         \
            const float* __restrict__ W, long long ldw, const float* C,                      \
            long long scm, long long scn, float* T, long long stm, long long stn,            \
            float alpha, float beta, const unsigned* __restrict__ flags,                    \
            const double* __restrict__ sums, int ny, int* __restrict__ marked), {            \
    finish_body(M, N, K, A, sam, sak, B, sbk, sbn, rmax, inexact_rows, W, ldw, C, scm, scn, T, \
                stm, stn, alpha, beta, flags, sums, ny, marked);                             \
  })
#define CG_FIX(NAME)                                                                         \
  CG_ENTRY(NAME, __launch_bounds__(FIX),                                                     \
           (int M, int N, int K, const float* __restrict__ A, long long sam, long long sak,   \
            const float* __restrict__ B, long long sbk, long long sbn,                       \
            const unsigned* __restrict__ rmax, const int* __restrict__ inexact_rows,         \
            float* __restrict__ T, long long stm, long long stn, float alpha,                \
            const unsigned* __restrict__ flags, const int* __restrict__ marked), {           \
    fix_body(M, N, K, A, sam, sak, B, sbk, sbn, rmax, inexact_rows, T, stm, stn, alpha, flags, \
             marked);                                                                        \
  })
CG_ENTRY(cute_3xtf32_norms_b, __launch_bounds__(TILE * ROWS),
         (int R, int K, const double* __restrict__ sums, double* __restrict__ norms), {
  norms_body(R, K, sums, norms);
})
CG_ENTRY(cute_3xtf32_refine, __launch_bounds__(cute_gemm::kRefineThreads),
         (int M, int N, int K, const float* __restrict__ A, long long sam, long long sak,
          const float* __restrict__ B, long long sbk, long long sbn, const float* C,
          long long scm, long long scn, float* T, long long stm, long long stn, float alpha,
          float beta, const int* __restrict__ marked), {
  if (marked[M] == 0) return;                  // no row to refine
  cute_gemm::refine_rows(M, N, K, A, sam, sak, B, sbk, sbn, C, scm, scn, T, stm, stn, alpha,
                         beta, marked);
})
CG_RANGE(cute_3xtf32_range_a, true)
CG_RANGE(cute_3xtf32_range_b, false)
CG_SPLIT(cute_3xtf32_split_a, true)
CG_SPLIT(cute_3xtf32_split_b, false)
CG_FINISH(cute_3xtf32_finish)
CG_FIX(cute_3xtf32_fix)
