// cute_3xtf32 — fp32 accuracy from tf32 tensor cores (3xTF32): the pre-pass. sm_90a.
//
// Adds over cute_wgmma_ws_promote (c6 with promoted sums), whose GEMM then runs on its output:
// each fp32 element is split x = big + small, big = tf32(x) (round to nearest), small =
// tf32(x - big), and both operands are written k-major, the two parts side by side per chunk
// of 32 k (one k-tile of the GEMM):
//   A' = [.. | A_small(c) | A_big(c) | ..]   (M x K', row-major)
//   B' = [.. ; B_small(c) ; B_big(c) ; ..]   (K' x N, column-major),   K' = 2 * 32 * ceil(K / 32)
// The GEMM (Config::split_parts = 2, sm90_split_parts.cuh) reads three k-tiles per chunk,
// A_small·B_big, A_big·B_small, A_big·B_big, loading big twice: the products that matter
// (small·small, < 2^-22 |a||b|, is dropped), the cross terms while its tensor-core sum is still
// small, and big·big last, right before it moves the sum into float32 (promote = 3): no
// tensor-core sum holds more than one chunk of big products
// (docs/tuning/cute_3xtf32.md#the-accumulation).
// Both roles are one problem: an (R, K) source of any strides (R = M for A, N for B) written
// as R rows of ld = K' floats, chunk c at 64c: two parts of 32; the last chunk's columns past K
// are zero in both parts.
// Range: the split is exact only while small's parts are normal floats; the block records
// in *flags (bit 0: A, bit 1: B) any finite x that is subnormal or whose x - big is, and
// (bits 2, 3) any ±Inf, which the GEMM's compensated sum turns into NaN (and a ±Inf beside a
// small part of 0 would make Inf·0 = NaN where fp32 has ±Inf); run() then computes with an
// fp32 kernel instead (execute.py, docs/tuning/cute_3xtf32.md).
// Geometry: 32x8 threads per 32x32 (rows x k) tile through smem (util/scale2d.cu's transpose:
//           reads walk the source's unit-stride mode, writes walk k); grid x over R, y over
//           K (records.SplitGrid), each grid-stride in 64-bit indices.
// Bottleneck: memory — 4 bytes read and 8 written per element of A and B: ~0.40 GB at
//           4096^3, beside ~1.3 ms for the GEMM over three k-tiles a chunk.
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
  float big, small;
  bool inexact;                                  // the split loses bits (subnormal parts)
  bool inf;                                      // ±Inf: the GEMM's promoted sum loses it
};

__device__ __forceinline__ Parts split(float x) {
  if (isnan(x)) {   // any payload may sit in bits the tensor core drops: a NaN that survives
    const float q = __uint_as_float(kQuietNaN);
    return {q, q, false, false};
  }
  if (isinf(x)) return {x, 0.0f, false, true};   // x - big would be NaN
  float big = tf32_rna(x);
  if (isinf(big)) big = __uint_as_float(__float_as_uint(x) & kTf32Mask);   // near FLT_MAX: rz
  const float d = x - big;                       // exact: the bits of x below big's last
  const bool inexact = (x != 0.0f && fabsf(x) < kMinNormal) || (d != 0.0f && fabsf(d) < kMinNormal);
  return {big, tf32_rna(d), inexact, false};
}

// kA: A's flag bits; the parts are written alike for both roles
template <bool kA>
__device__ void split_body(int R, int K, const float* __restrict__ src, long long sr, long long sk,
                           float* __restrict__ dst, long long ld, unsigned* __restrict__ flags) {
  __shared__ float tile[TILE][TILE + 1];         // +1: the transposed walk hits 32 banks
  const int tx = threadIdx.x, ty = threadIdx.y;
  const bool src_r = sr == 1 && sk != 1;         // the source's unit stride runs along R
  bool inexact = false, inf = false;
  // a 32-column tile of k is one chunk of A' / B': k0 = 32c writes columns 64c .. 64c + 63
  static_assert(TILE == 32, "a tile of k: one chunk, the GEMM's k-tile of tf32");
  for (long long r0 = (long long)blockIdx.x * TILE; r0 < R; r0 += (long long)gridDim.x * TILE) {
    for (long long k0 = (long long)blockIdx.y * TILE; k0 < K; k0 += (long long)gridDim.y * TILE) {
      for (int j = ty; j < TILE; j += ROWS) {
        const int i = src_r ? tx : j, c = src_r ? j : tx;   // (row, k) within the tile
        const long long r = r0 + i, k = k0 + c;
        tile[i][c] = r < R && k < K ? src[r * sr + k * sk] : 0.0f;
      }
      __syncthreads();
      for (int i = ty; i < TILE; i += ROWS) {
        const long long r = r0 + i;
        if (r >= R) continue;
        float* chunk = dst + r * ld + 2 * k0;
        Parts p{0.0f, 0.0f, false, false};        // columns past K: zeros in both parts
        if (k0 + tx < K) p = split(tile[i][tx]);
        inexact |= p.inexact;
        inf |= p.inf;
        chunk[tx] = p.small;
        chunk[TILE + tx] = p.big;
      }
      __syncthreads();                           // the tile is refilled next
    }
  }
  if (__syncthreads_or(inexact) && tx == 0 && ty == 0) atomicOr(flags, kA ? 1u : 2u);
  if (__syncthreads_or(inf) && tx == 0 && ty == 0) atomicOr(flags, kA ? 4u : 8u);
}

#define CG_SPLIT(NAME, IS_A)                                                                 \
  CG_ENTRY(NAME, __launch_bounds__(TILE * ROWS),                                             \
           (int R, int K, const float* __restrict__ src, long long sr, long long sk,        \
            float* __restrict__ dst, long long ld, unsigned* __restrict__ flags), {         \
    split_body<IS_A>(R, K, src, sr, sk, dst, ld, flags);                                     \
  })
CG_SPLIT(cute_3xtf32_split_a, true)
CG_SPLIT(cute_3xtf32_split_b, false)
