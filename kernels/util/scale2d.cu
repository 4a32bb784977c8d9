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
// A transposing copy (row-major src into a column-major dst, as a TF32 entry's k-major B
// needs) takes 32x32 tiles through shared memory, so that it reads and writes whole 128-byte
// lines on both sides: each side walks the tile along its own unit-stride mode. A copy whose
// sides share their unit-stride mode (C into out, a type conversion) needs no shared memory:
// it takes 32x256 tiles ("wide", long along that mode), 8-element vectors a thread, four lines
// of loads in flight before their stores (a 32x32 tile of 16-bit elements left the memory
// system idle between a block's few small loads).
// Geometry: 32x8 threads a tile of dst; a 1-D grid over the tiles of up to kCopies copies
// (each a batch of matrices: Lin, z0 and the batch strides as CG_BATCH_PARAMS has them).
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
constexpr int WIDE = 256, VEC = 8;      // a wide tile's length along the unit mode; a vector

// One copy of a launch: dst = s * src over the (M,N) matrices of a batch, in 32x32 tiles of
// dst numbered from `first` among the launch's blocks (m fastest, then n, then the problem)
struct Copy2d {
  int M, N, MS, NS;            // dst's extents written; src's read (zeros outside: a pad)
  float s;
  int tiles_m, tiles_n, first;
  int Lin, z0;                 // problem l = z0 + the tile's: (l / Lin, l % Lin) of the batch
  int wide;                    // 0: 32x32 tiles; 1 / 2: 256 long along m / n, both sides' unit mode
  const void* src;
  long long ss0, ss1, bs0, bs1;
  void* dst;
  long long ds0, ds1, bd0, bd1;
};
// A launch's copies (relayout.MAX_COPIES): a relayout's A and B, a stand-in's operands, in one
// launch rather than one each, as the host pays for every launch
constexpr int kCopies = 4;
struct Copies2d {
  Copy2d c[kCopies];
  int count;
};

template <class S, class D>
__device__ void scale2d_body(int m0, int n0, int M, int N, int MS, int NS, float s,
                             const S* __restrict__ src, long long ss0, long long ss1,
                             D* __restrict__ dst, long long ds0, long long ds1) {
  __shared__ float tile[TILE][TILE + 1];          // +1: the transposed walk hits 32 banks
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

// VEC elements as their bits, loaded and stored as one access where aligned (16-byte accesses
// at most); the loads held as bits, converted at the store (32 floats held across the loads
// of a 16-bit copy spilled to local memory)
template <int kBytes> struct BitsOf;
template <> struct BitsOf<1> { using type = unsigned char; };
template <> struct BitsOf<2> { using type = unsigned short; };
template <> struct BitsOf<4> { using type = unsigned int; };
template <class T> using Bits = typename BitsOf<sizeof(T)>::type;
template <class T> struct alignas(sizeof(T) * VEC < 16 ? sizeof(T) * VEC : 16) Vec { Bits<T> v[VEC]; };

template <class T> __device__ __forceinline__ T of_bits(Bits<T> b) {
  T t;
  memcpy(&t, &b, sizeof(T));
  return t;
}
template <class T> __device__ __forceinline__ Bits<T> bits_of(T t) {
  Bits<T> b;
  memcpy(&b, &t, sizeof(T));
  return b;
}

template <class T> __device__ __forceinline__ bool aligned(const T* p) {
  return reinterpret_cast<unsigned long long>(p) % alignof(Vec<T>) == 0;
}

// A wide tile: lines l0.. (TILE of them, ROWS a step, one a warp) of WIDE elements u0.. along
// the unit-stride mode both sides share (sl, dl: the line strides); LS x US of src read, the
// rest of L x U zeros. All four lines' loads are issued before the first store.
template <class S, class D>
__device__ void wide_body(int l0, int u0, int L, int U, int LS, int US, float s,
                          const S* __restrict__ src, long long sl, D* __restrict__ dst,
                          long long dl) {
  const bool read = !(s == 0.0f || src == nullptr);
  const int u = u0 + threadIdx.x * VEC;
  Vec<S> x[TILE / ROWS];            // the four lines' source bits (zeros where not read)
#pragma unroll
  for (int r = 0; r < TILE / ROWS; ++r) {
    const int l = l0 + threadIdx.y + r * ROWS;
    const bool line = read && l < LS;
    const S* p = line ? src + l * sl + u : nullptr;
    if (line && u + VEC <= US && aligned(p)) {
      x[r] = *reinterpret_cast<const Vec<S>*>(p);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) x[r].v[e] = line && u + e < US ? bits_of(p[e]) : Bits<S>(0);
    }
  }
#pragma unroll
  for (int r = 0; r < TILE / ROWS; ++r) {
    const int l = l0 + threadIdx.y + r * ROWS;
    if (l >= L) continue;
    const bool line = read && l < LS;
    D* q = dst + l * dl + u;
    Vec<D> y;
#pragma unroll
    for (int e = 0; e < VEC; ++e)
      y.v[e] = bits_of(from_f32<D>(line && u + e < US ? s * to_f32(of_bits<S>(x[r].v[e])) : 0.0f));
    if (u + VEC <= U && aligned(q)) {
      *reinterpret_cast<Vec<D>*>(q) = y;
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        if (u + e < U) q[e] = of_bits<D>(y.v[e]);
    }
  }
}

// This block's copy (the last whose first block it has reached) and tile of it
template <class S, class D>
__device__ __forceinline__ void copy_tile(Copies2d const& copies) {
  const int b = blockIdx.x;
  int i = 0;
#pragma unroll
  for (int j = 1; j < kCopies; ++j)
    if (j < copies.count && copies.c[j].first <= b) i = j;
  Copy2d const& c = copies.c[i];
  const int t = b - c.first, rest = t / c.tiles_m, tm = t - rest * c.tiles_m;
  const int p = rest / c.tiles_n, tn = rest - p * c.tiles_n;
  const int l = c.z0 + p, l0 = l / c.Lin, l1 = l - l0 * c.Lin;
  const S* src = c.src == nullptr ? nullptr : static_cast<const S*>(c.src) + (l0 * c.bs0 + l1 * c.bs1);
  D* dst = static_cast<D*>(c.dst) + (l0 * c.bd0 + l1 * c.bd1);
  if (c.wide == 2)          // lines are rows
    wide_body<S, D>(tm * TILE, tn * WIDE, c.M, c.N, c.MS, c.NS, c.s, src, c.ss0, dst, c.ds0);
  else if (c.wide == 1)     // lines are columns
    wide_body<S, D>(tn * TILE, tm * WIDE, c.N, c.M, c.NS, c.MS, c.s, src, c.ss1, dst, c.ds1);
  else
    scale2d_body<S, D>(tm * TILE, tn * TILE, c.M, c.N, c.MS, c.NS, c.s, src, c.ss0, c.ss1,
                       dst, c.ds0, c.ds1);
}

// __grid_constant__: the copies are read where the launch put them (a block picks one by a
// run-time index), not first copied to local memory
#define CG_SCALE2D(NAME, S, D)                                                              \
  CG_ENTRY(NAME, __launch_bounds__(TILE * ROWS), (const __grid_constant__ Copies2d copies), { \
    copy_tile<S, D>(copies);                                                                \
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
