// cute_3xtf32 — fp32 accuracy from tf32 tensor cores (3xTF32): the pre-pass. sm_90a.
//
// Adds over cute_wgmma_ws (c6), whose GEMM runs unchanged after it: each fp32 element is
// split x = big + small, big = tf32(x) (round to nearest), small = tf32(x - big), and the
// operands are written K-concatenated, k-major, so that c6's tf32 k-major entry over
// K' = 3K sums the three products that matter (small·small, < 2^-22 |a||b|, is dropped):
//   A' = [A_small | A_big× | A_big]   (M x 3K, row-major)
//   B' = [B_big× ; B_small ; B_big]   (3K x N, column-major)
//   A'B' = A_small B_big + A_big B_small + A_big B_big   (small terms first, into a small sum)
// big× is big with ±Inf written as 0: it multiplies the other operand's small part, which is
// 0 (or of either sign) beside an Inf, and Inf·0 would make a NaN where fp32 has ±Inf.
// Both roles are one problem: an (R, K) source of any strides (R = M for A, N for B) written
// as R rows of ld floats, [part 0 | part 1 | part 2 | zeros up to ld].
// Range: the split is exact only while small's parts are normal floats; the block records
// in *flags (bit 0: A, bit 1: B) any finite x that is subnormal or whose x - big is, and
// run() then computes with an fp32 kernel instead (execute.py, docs/tuning/cute_3xtf32.md).
// Geometry: 32x8 threads per 32x32 (rows x k) tile through smem (util/scale2d.cu's transpose:
//           reads walk the source's unit-stride mode, writes walk k); grid x over R, y over
//           K (records.SplitGrid), each grid-stride in 64-bit indices.
// Bottleneck: memory — 4 bytes read and 12 written per element of A and B: ~0.54 GB at
//           4096^3, ~0.18 ms at 3 TB/s, beside ~1.1 ms for the GEMM over K' = 3K.
#include <cute_gemm/entries.cuh>

constexpr int TILE = 32, ROWS = 8;
constexpr unsigned kTf32Mask = 0xffffe000u;    // tf32 keeps the top 10 of 23 mantissa bits
constexpr float kMinNormal = 1.17549435e-38f;  // 2^-126
constexpr unsigned kQuietNaN = 0x7fffffffu;    // a NaN whose tf32 truncation is still NaN

__device__ __forceinline__ float tf32_rna(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r & kTf32Mask);         // the low bits: zero, whatever cvt leaves
}

struct Parts {
  float big, small, cross;                       // cross: big with ±Inf as 0
  bool inexact;                                  // the split loses bits (subnormal parts)
};

__device__ __forceinline__ Parts split(float x) {
  if (isnan(x)) {   // any payload may sit in bits the tensor core drops: a NaN that survives
    const float q = __uint_as_float(kQuietNaN);
    return {q, q, q, false};
  }
  if (isinf(x)) return {x, 0.0f, 0.0f, false};   // x - big would be NaN
  float big = tf32_rna(x);
  if (isinf(big)) big = __uint_as_float(__float_as_uint(x) & kTf32Mask);   // near FLT_MAX: rz
  const float d = x - big;                       // exact: the bits of x below big's last
  const bool inexact = (x != 0.0f && fabsf(x) < kMinNormal) || (d != 0.0f && fabsf(d) < kMinNormal);
  return {big, tf32_rna(d), big, inexact};
}

// kA: A's order [small | cross | big]; else B's [cross ; small ; big]
template <bool kA>
__device__ void split_body(int R, int K, const float* __restrict__ src, long long sr, long long sk,
                           float* __restrict__ dst, long long ld, unsigned* __restrict__ flags) {
  __shared__ float tile[TILE][TILE + 1];         // +1: the transposed walk hits 32 banks
  const int tx = threadIdx.x, ty = threadIdx.y;
  const bool src_r = sr == 1 && sk != 1;         // the source's unit stride runs along R
  const long long k3 = 3LL * K;
  bool inexact = false;
  for (long long r0 = (long long)blockIdx.x * TILE; r0 < R; r0 += (long long)gridDim.x * TILE) {
    for (long long k0 = (long long)blockIdx.y * TILE; k0 < K; k0 += (long long)gridDim.y * TILE) {
      for (int j = ty; j < TILE; j += ROWS) {
        const int i = src_r ? tx : j, c = src_r ? j : tx;   // (row, k) within the tile
        const long long r = r0 + i, k = k0 + c;
        tile[i][c] = r < R && k < K ? src[r * sr + k * sk] : 0.0f;
      }
      __syncthreads();
      for (int i = ty; i < TILE; i += ROWS) {
        const long long r = r0 + i, k = k0 + tx;
        if (r >= R) continue;
        float* row = dst + r * ld;
        if (k < K) {
          const Parts p = split(tile[i][tx]);
          inexact |= p.inexact;
          row[k] = kA ? p.small : p.cross;
          row[K + k] = kA ? p.cross : p.small;
          row[2LL * K + k] = p.big;
        }
        if (k0 + TILE >= K && k3 + tx < ld) row[k3 + tx] = 0.0f;   // the pad (ld - 3K < 32)
      }
      __syncthreads();                           // the tile is refilled next
    }
  }
  if (__syncthreads_or(inexact) && tx == 0 && ty == 0) atomicOr(flags, kA ? 1u : 2u);
}

#define CG_SPLIT(NAME, IS_A)                                                                 \
  CG_ENTRY(NAME, __launch_bounds__(TILE * ROWS),                                             \
           (int R, int K, const float* __restrict__ src, long long sr, long long sk,        \
            float* __restrict__ dst, long long ld, unsigned* __restrict__ flags), {         \
    split_body<IS_A>(R, K, src, sr, sk, dst, ld, flags);                                     \
  })
CG_SPLIT(cute_3xtf32_split_a, true)
CG_SPLIT(cute_3xtf32_split_b, false)
