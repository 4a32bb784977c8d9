// Utility (not a GEMM stage): dst = s * src over an (M,N) matrix with any strides, for
// float32, float16, bfloat16 and the 8-bit floats (the product in float32, rounded to nearest
// even), and from a narrower type to float32 or back (gemm()'s fp32 stand-in for 16-bit calls;
// into 8 bits as PyTorch converts: e4m3 saturates at ±448, e5m2 goes ±Inf). src is
// (MS,NS) <= (M,N): dst's elements outside it are zeroed (the pad of a relayout copy, which
// an entry fetching whole vectors at a row end reads).
//
// The wrapper uses it to move device operands a kernel cannot take as they are into a
// layout it can (and back), and for K = 0, where C = beta * C needs no GEMM at all.
// BLAS semantics: s == 0 writes zeros without reading src (src may be NaN or null).
// A 32x32 tile goes through shared memory, so a transposing copy (row-major src into a
// column-major dst, as a TF32 entry's k-major B needs) reads and writes whole 128-byte
// lines on both sides: each side walks the tile along its own unit-stride mode.
// Geometry: 32x8 threads per 32x32 tile of dst, grid (M/32, N/32) (records.TileGridMN), and
// along z the matrices of a batch (Lin, z0 and the batch strides, as CG_BATCH_PARAMS has them).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cute_gemm/entries.cuh>
template <class T> __device__ __forceinline__ float to_f32(T x) { return float(x); }
template <class T> __device__ __forceinline__ T from_f32(float x) { return T(x); }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __nv_fp8_e4m3 from_f32<__nv_fp8_e4m3>(float x) {
  __nv_fp8_e4m3 r;
  r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  return r;
}
template <> __device__ __forceinline__ __nv_fp8_e5m2 from_f32<__nv_fp8_e5m2>(float x) {
  __nv_fp8_e5m2 r;
  r.__x = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
  return r;
}

constexpr int TILE = 32, ROWS = 8;

template <class S, class D>
__device__ void scale2d_body(int M, int N, int MS, int NS, float s, const S* __restrict__ src, long long ss0,
                             long long ss1, D* __restrict__ dst, long long ds0, long long ds1) {
  __shared__ float tile[TILE][TILE + 1];          // +1: the transposed walk hits 32 banks
  const int m0 = blockIdx.x * TILE, n0 = blockIdx.y * TILE;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const bool read = !(s == 0.0f || src == nullptr);
  // the unit-stride mode of each side runs along the 32 lanes of a warp
  const bool src_m = ss0 == 1 && ss1 != 1, dst_m = ds0 == 1 && ds1 != 1;
  for (int j = ty; j < TILE; j += ROWS) {
    int i = src_m ? tx : j, k = src_m ? j : tx;   // (i, k): (row, col) within the tile
    int m = m0 + i, n = n0 + k;
    tile[i][k] = read && m < MS && n < NS ? s * to_f32(src[m * ss0 + n * ss1]) : 0.0f;
  }
  __syncthreads();
  for (int j = ty; j < TILE; j += ROWS) {
    int i = dst_m ? tx : j, k = dst_m ? j : tx;
    int m = m0 + i, n = n0 + k;
    if (m < M && n < N) dst[m * ds0 + n * ds1] = from_f32<D>(tile[i][k]);
  }
}

#define CG_SCALE2D(NAME, S, D)                                                              \
  CG_ENTRY(NAME, __launch_bounds__(TILE * ROWS),                                            \
           (int M, int N, int MS, int NS, float s, const S* __restrict__ src, long long ss0, \
            long long ss1, D* __restrict__ dst, long long ds0, long long ds1, int Lin, int z0, \
            long long bs0, long long bs1, long long bd0, long long bd1), {                  \
    const int l = z0 + static_cast<int>(blockIdx.z), l0 = l / Lin, l1 = l - l0 * Lin;      \
    if (src != nullptr) src += l0 * bs0 + l1 * bs1;                                         \
    dst += l0 * bd0 + l1 * bd1;                                                             \
    scale2d_body<S, D>(M, N, MS, NS, s, src, ss0, ss1, dst, ds0, ds1);                      \
  })
// One entry per (source, destination) type that resolve.UTIL_ENTRY names from the precision
// table's suffixes (precisions.DType.suffix): scale2d_<type> within a type, scale2d_<from>_<to>
// to and from float32 (tests/test_precisions.py checks the two lists agree)
CG_SCALE2D(scale2d, float, float)
CG_SCALE2D(scale2d_fp16, __half, __half)
CG_SCALE2D(scale2d_bf16, __nv_bfloat16, __nv_bfloat16)
CG_SCALE2D(scale2d_fp16_f32, __half, float)
CG_SCALE2D(scale2d_bf16_f32, __nv_bfloat16, float)
CG_SCALE2D(scale2d_f32_fp16, float, __half)
CG_SCALE2D(scale2d_f32_bf16, float, __nv_bfloat16)
CG_SCALE2D(scale2d_e4m3, __nv_fp8_e4m3, __nv_fp8_e4m3)
CG_SCALE2D(scale2d_e5m2, __nv_fp8_e5m2, __nv_fp8_e5m2)
CG_SCALE2D(scale2d_e4m3_f32, __nv_fp8_e4m3, float)
CG_SCALE2D(scale2d_e5m2_f32, __nv_fp8_e5m2, float)
CG_SCALE2D(scale2d_f32_e4m3, float, __nv_fp8_e4m3)
CG_SCALE2D(scale2d_f32_e5m2, float, __nv_fp8_e5m2)
