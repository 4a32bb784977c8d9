// Utility (not a GEMM stage): dst = s * src over an (M,N) matrix with any strides, for
// float32, float16 and bfloat16 (the product in float32, rounded to nearest even).
//
// The wrapper uses it to move device operands a kernel cannot take as they are into a
// layout it can (and back), and for K = 0, where C = beta * C needs no GEMM at all.
// BLAS semantics: s == 0 writes zeros without reading src (src may be NaN or null).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <class T> __device__ __forceinline__ float to_f32(T x) { return float(x); }
template <class T> __device__ __forceinline__ T from_f32(float x) { return T(x); }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <class T>
__device__ void scale2d_body(int M, int N, float s, const T* __restrict__ src, long long ss0,
                             long long ss1, T* __restrict__ dst, long long ds0, long long ds1) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)M * N) return;
  // Walk dst in its own fastest order so the writes coalesce.
  int m, n;
  if (ds1 == 1 || ds0 != 1) { m = (int)(i / N); n = (int)(i % N); }
  else                      { n = (int)(i / M); m = (int)(i % M); }
  float v = (s == 0.0f || src == nullptr) ? 0.0f : s * to_f32(src[m * ss0 + n * ss1]);
  dst[m * ds0 + n * ds1] = from_f32<T>(v);
}

#define CG_SCALE2D(NAME, T)                                                                 \
  extern "C" __global__ void NAME(int M, int N, float s, const T* __restrict__ src,         \
                                  long long ss0, long long ss1, T* __restrict__ dst,        \
                                  long long ds0, long long ds1) {                           \
    scale2d_body<T>(M, N, s, src, ss0, ss1, dst, ds0, ds1);                                 \
  }
CG_SCALE2D(scale2d, float)
CG_SCALE2D(scale2d_f16, __half)
CG_SCALE2D(scale2d_bf16, __nv_bfloat16)
