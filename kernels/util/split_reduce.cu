// Utility (not a GEMM stage): the second launch of a split-K GEMM,
//   C = alpha * (W_0 + W_1 + ... + W_{split-1}) + beta * C,
// W_s the plain sums of the s-th share of K (c3_pipelined.cu's *_part entries): `split`
// slices of (M, ldw) floats, row-major, ldw = N rounded up to 4, so every row starts 16-byte
// aligned. The slices are added in order, whatever order their CTAs ran in: the same bits
// on every launch. Memory-bound: one thread per 4 consecutive elements of a row, loads of
// 8 slices in flight at once (16-byte, L2 only: the slices were just written there); C
// 16-byte where row-major and aligned, else element by element, predicated at the row end.
// BLAS semantics: beta == 0 leaves C unread (cg::axpby).
// Started by programmatic dependent launch where the GEMM launch allows it (sm_90+): it
// waits for the whole split launch (griddepcontrol.wait) before its first load.
// Geometry: 256 threads a CTA, a grid-stride loop over one grid of M * N / 1024 CTAs
// (resolve.REDUCE: records.FlatGrid).
#include <cute_gemm/common.cuh>

constexpr int kInFlight = 8;

__device__ __forceinline__ void add4(float4& a, float4 b) {
  a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
}

__device__ __forceinline__ void split_reduce_body(int M, int N, int split,
                                                  const float* __restrict__ ws, float alpha,
                                                  float beta, float* __restrict__ C,
                                                  long long sCm, long long sCn) {
  if constexpr (cg::kArch >= 900) asm volatile("griddepcontrol.wait;" ::: "memory");
  const int q = (N + 3) >> 2;                     // float4s per row of a slice
  const long long slice4 = (long long)M * q;      // ... per slice
  const float4* w = reinterpret_cast<const float4*>(ws);
  // M * q < 2^31: the host launches a split only for one wave of tiles (streamk.split_k_ctas)
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < M * q; i += gridDim.x * blockDim.x) {
    float4 acc = __ldcg(w + i);
    for (int s0 = 1; s0 < split; s0 += kInFlight) {
      float4 t[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (s0 + u < split) t[u] = __ldcg(w + (s0 + u) * slice4 + i);
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (s0 + u < split) add4(acc, t[u]);
    }
    const int m = i / q, n = (i - m * q) * 4;
    float* c = C + m * sCm + n * sCn;
    if (sCn == 1 && n + 4 <= N && (reinterpret_cast<unsigned long long>(c) & 15) == 0) {
      float4 r = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
      if (beta != 0.0f) {
        const float4 v = *reinterpret_cast<const float4*>(c);
        r = make_float4(alpha * acc.x + beta * v.x, alpha * acc.y + beta * v.y,
                        alpha * acc.z + beta * v.z, alpha * acc.w + beta * v.w);
      }
      *reinterpret_cast<float4*>(c) = r;
    } else {
      const float v[4] = {acc.x, acc.y, acc.z, acc.w};
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (n + j < N) cg::store_axpby(alpha, v[j], beta, c + j * sCn);
    }
  }
}

CG_ENTRY(split_reduce, __launch_bounds__(256),
         (int M, int N, int split, const float* __restrict__ ws, float alpha, float beta,
          float* __restrict__ C, long long sCm, long long sCn),
         { split_reduce_body(M, N, split, ws, alpha, beta, C, sCm, sCn); })
