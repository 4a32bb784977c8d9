// cute_tiny_k — a small K (a k-tile or two) in one pass: C's stores are the work.
//
// Adds over the ladder: nothing to pipeline. With K <= 32 a GEMM is a sum of a few rank-1
// terms, bound by writing C (and reading it when beta != 0); a mainloop's prologue,
// pipeline fill and per-tile epilogue stall are most of what the other stages spend there,
// and their operands may need copies first (TMA, 16-byte vectors). Here each CTA stages
// its (BLK_M,BLK_K) and (BLK_N,BLK_K) strips of A and B in shared memory: fp32/tf32 as
// float (tf32 rounded to nearest, ties away, so each product is the tensor cores' exactly),
// every thread summing its outputs over the k-tile's K with FFMA (c0's partition of C, from
// shared memory); bf16/fp16 in their own type, k-major, multiplied by mma.sync (a k-block
// of 16 an instruction) and staged through shared memory into the same partition of C.
// Any K runs, k-tile by k-tile, but a long K is what the other stages are for: gemm()
// sends this kernel K <= 32 (select/auto.py tiny_k).
// Geometry: BLK_M x BLK_N x BLK_K = 64 x 64 x 32 (the registry's TileConfig); 256 threads,
//           tC = (16,16) n fastest. Where C's rows are runs of aligned 4-element vectors
//           (kVec, chosen once a launch; FFMA on sm_90 on), thread (ty, tx) owns rows
//           4 ty + i and columns 4 tx + j of the tile (4 x 4, order<true>): a row's 4
//           values are one vector store (16 bytes of float, 8 of a 16-bit type), a k's 4
//           values of each strip one 128-bit shared load; else c0's rows ty + 16 i and
//           columns tx + 16 j (a half-warp's scalar stores cover 16 neighbours). 16
//           accumulators and a strip's 8 staged values fit 128 registers: 2 CTAs an SM
//           (MIN_BLOCKS; at 3 CTAs' 80 registers the staging spilled). Grid: a CTA per
//           row of tiles along x, along y as many as fill the GPU twice (records.TileWalkN),
//           each walking its row's tiles gridDim.y apart: A's strip staged once and the next
//           tile's B strip loaded while this tile computes and stores (from one stepped
//           pointer a thread, StripWalk), into the other of two buffers: a barrier a tile
//           (two where the MMA's C is staged).
// Residues: predicated element loads (zeros outside A and B); elem_less on C's identity
//           tensor predicates an edge tile's stores, one element at a time (an interior
//           tile's go unchecked, in vectors where kVec).
// Strides:  any, all dynamic: a strip is loaded along the operand's unit-stride mode where
//           it has one (coalesced), else along k. One entry per (precision, result type).
// Bottleneck: C's stores (HBM bandwidth) for large M*N; the launch for small ones. A CTA
//           of one tile waited for its strips' loads with nothing to hide them behind.
//
// Layouts:
//   tC   = (16,16):(16,1)                      thread -> (m,n) of its first C element
//   order<true> = (16,4):(4,1)                 (thread coordinate, value) -> row or column of a tile
//   sA   = (BLK_M,BLK_K):(1,BLK_M+4)           rows of BLK_M+4 floats: each k's 16-byte aligned
//   sB   = (BLK_N,BLK_K):(1,BLK_N+4)           two buffers, tiles alternating
//   16-bit: sA = (BLK_M,BLK_K):(BLK_K+8,1), sB likewise (k-major, ldmatrix x4);
//           TiledMMA SM80_16x8x16 over 4 x 2 warps, tile 64 x 32 x 16 (a warp: 16 rows, two
//           8-wide atoms a step); sC = (BLK_M,BLK_N):(BLK_N+8,1) float, read back through
//           the stores' partition of C below
//   kVec:  tCsA = local_partition(composition(sA, by_thread_k<true>()), tC, tid, Step<_1,X>)
//          tCsB = local_partition(composition(sB, by_thread_k<true>()), tC, tid, Step<X,_1>)
//          tCgC = local_partition(composition(gC, by_thread_c<true>()), tC, tid)
//          rows 4 ty + i, columns 4 tx + j; else c0's local_partition(sA, tC, tid, ...) etc.
#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>
#include <cute_gemm/quad_blocks.cuh>

using namespace cute;

// BLK_M, BLK_N, BLK_K, THREADS, MIN_BLOCKS: emitted by the registry's config (ladder_cute.py,
// TileConfig); MIN_BLOCKS CTAs an SM: the more warps, the more of each CTA's load latency hidden
static_assert(THREADS == 256, "the registry's block: the 16x16 thread layout below");
constexpr int kTM = BLK_M / 16, kTN = BLK_N / 16;   // a thread's rows and columns of C

// n fastest: a half-warp's 16 threads own 64 consecutive columns of a row of C
template <class = void>
CUTE_HOST_DEVICE constexpr auto thr_layout_c() {                            // (THR_M,THR_N) n-major
  return make_layout(make_shape(Int<16>{}, Int<16>{}), LayoutRight{});
}
// A tile's rows (columns) as (thread coordinate, value). kAdjacent: thread coordinate t owns
// the 4 neighbours 4 t .. 4 t + 3 (a vector); else t, t + 16, ... as c0's partition gives it
template <bool kAdjacent>
CUTE_HOST_DEVICE constexpr auto order() {                                   // (16,4) -> m or n
  if constexpr (kAdjacent)
    return make_layout(make_shape(Int<16>{}, Int<4>{}), make_stride(Int<4>{}, Int<1>{}));
  else
    return make_layout(make_shape(Int<16>{}, Int<4>{}), make_stride(Int<1>{}, Int<16>{}));
}
// The tilers that reorder a strip's x, and a tile's rows and columns, before c0's partition
template <bool kAdjacent>
CUTE_HOST_DEVICE constexpr auto by_thread_k() {
  return make_tile(order<kAdjacent>(), make_layout(Int<BLK_K>{}));
}
template <bool kVec>
CUTE_HOST_DEVICE constexpr auto by_thread_c() { return make_tile(order<kVec>(), order<kVec>()); }
// t reordered by the tiler where kVec; c0's order is t's own
template <bool kVec, class T, class Tiler>
CUTE_HOST_DEVICE auto ordered(T const& t, Tiler const& by) {
  if constexpr (kVec) return composition(t, by);
  else return t;
}
// (X,BLK_K), x fastest, rows padded by 4 floats: each k's 4 values of a thread one aligned
// 128-bit load (stores along k meet 8-way bank conflicts, once a strip)
template <int X>
CUTE_HOST_DEVICE constexpr auto smem_layout() {                              // (X,BLK_K)
  return make_layout(make_shape(Int<X>{}, Int<BLK_K>{}), make_stride(Int<1>{}, Int<X + 4>{}));
}

// a B strip's buffer, in floats (the 16-bit strips take fewer bytes of it)
constexpr int kStripFloats = cosize_v<decltype(smem_layout<BLK_N>())>;

// A thread's share of a (X,BLK_K) strip: elements t, t + 256, ... numbered along the
// operand's unit-stride mode (x_unit: x, else k). As 256 is a multiple of X and of BLK_K, they
// share one coordinate and step the other evenly: (x0, k0) + i (dx, dk).
template <int X, int KB>
struct StripShare {
  static constexpr int kPer = X * KB / THREADS;   // elements a thread stages
  static_assert(THREADS % X == 0 && THREADS % KB == 0 && X * KB % THREADS == 0,
                "a thread's elements: one coordinate fixed, the other in even steps");
  int x0, k0, dx, dk;
  __device__ __forceinline__ explicit StripShare(bool x_unit)
      : x0(x_unit ? threadIdx.x % X : threadIdx.x / KB), k0(x_unit ? threadIdx.x / X : threadIdx.x % KB),
        dx(x_unit ? 0 : THREADS / KB), dk(x_unit ? THREADS / X : 0) {}
};

// This thread's elements of a strip (X,BLK_K) into registers as V, zeros outside: the
// loads are issued together, waited for where v is first read (a store after each load
// waited for it: a memory latency an element)
template <int X, int KB, class Strip, class V>
__device__ __forceinline__ void load_strip(Strip const& g, V (&v)[StripShare<X, KB>::kPer],
                                           int x_left, int k_left, bool x_unit) {
  const StripShare<X, KB> sh(x_unit);
  auto const* p = raw_pointer_cast(g.data()) + (sh.x0 * stride<0>(g) + sh.k0 * stride<1>(g));
  const long long step = sh.dx * stride<0>(g) + sh.dk * stride<1>(g);
  CUTE_UNROLL
  for (int i = 0; i < StripShare<X, KB>::kPer; ++i)
    v[i] = sh.x0 + i * sh.dx < x_left && sh.k0 + i * sh.dk < k_left ? V(p[i * step]) : V(0.0f);
}

// The B strips of a CTA's walk, strip t at x = t X: this thread's first element, the step
// between its elements and between strips, and which of them lie inside K, worked out once
// (load_strip's address and bound arithmetic per element was half a tile's instructions)
template <int X, int KB, class T>
struct StripWalk {
  using Share = StripShare<X, KB>;
  const T* p;
  long long step, next;
  unsigned in_k = 0;      // bit i: element i's k < K
  int x0, dx;
  __device__ __forceinline__ StripWalk(const T* base, long long sx, long long sk, int K,
                                       bool x_unit) {
    const Share sh(x_unit);
    p = base + (sh.x0 * sx + sh.k0 * sk);
    step = sh.dx * sx + sh.dk * sk;
    next = X * sx;
    x0 = sh.x0;
    dx = sh.dx;
    CUTE_UNROLL
    for (int i = 0; i < Share::kPer; ++i) in_k |= unsigned(sh.k0 + i * sh.dk < K) << i;
  }
  // strip t into registers (V: float, or the operands' own type), zeros outside (x_left:
  // its extent left inside the operand)
  template <class V>
  __device__ __forceinline__ void load(V (&v)[Share::kPer], int t, int x_left) const {
    const T* q = p + t * next;
    const bool whole = x_left >= X;
    CUTE_UNROLL
    for (int i = 0; i < Share::kPer; ++i, q += step)
      v[i] = (in_k >> i & 1u) && (whole || x0 + i * dx < x_left) ? V(*q) : V(0.0f);
  }
};

// ... and from registers into smem (tf32: cvt.rna, round to nearest, ties away)
template <bool TF32, int X, int KB, class Smem, class V>
__device__ __forceinline__ void store_strip(Smem& s, V const (&v)[StripShare<X, KB>::kPer],
                                            bool x_unit) {
  const StripShare<X, KB> sh(x_unit);
  CUTE_UNROLL
  for (int i = 0; i < StripShare<X, KB>::kPer; ++i) {
    using TS = typename Smem::value_type;    // float, or the operands' 16-bit type (V's)
    if constexpr (TF32) {
      unsigned u = __float_as_uint(v[i]);
      asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(u));
      s(sh.x0 + i * sh.dx, sh.k0 + i * sh.dk) = __uint_as_float(u);
    } else {
      s(sh.x0 + i * sh.dx, sh.k0 + i * sh.dk) = TS(v[i]);
    }
  }
}

// tCrC += the strips' product over the first k_left of their BLK_K (no zero products past K);
// kVec: a k's 4 rows of A are neighbours in smem, one 128-bit load, and so are B's 4 columns
template <bool kVec, class TA, class TB, class Acc>
__device__ __forceinline__ void fma_strips(TA const& tCsA, TB const& tCsB, Acc& tCrC, int k_left) {
  static_assert(kTM == 4 && kTN == 4, "a thread's rows and columns: one float4 a k");
#pragma unroll 4
  for (int k = 0; k < k_left; ++k) {
    float a[kTM], b[kTN];
    if constexpr (kVec) {
      const float4 a4 = *reinterpret_cast<const float4*>(&tCsA(0, k));
      const float4 b4 = *reinterpret_cast<const float4*>(&tCsB(0, k));
      a[0] = a4.x; a[1] = a4.y; a[2] = a4.z; a[3] = a4.w;
      b[0] = b4.x; b[1] = b4.y; b[2] = b4.z; b[3] = b4.w;
    } else {
      CUTE_UNROLL
      for (int i = 0; i < kTM; ++i) a[i] = tCsA(i, k);
      CUTE_UNROLL
      for (int j = 0; j < kTN; ++j) b[j] = tCsB(j, k);
    }
    CUTE_UNROLL
    for (int i = 0; i < kTM; ++i)
      CUTE_UNROLL
      for (int j = 0; j < kTN; ++j) tCrC(i, j) = fmaf(a[i], b[j], tCrC(i, j));
  }
}

// 16-bit operands on the tensor cores: strips kept in their own type, k-major, rows of
// BLK_K + 8 elements (80 bytes: ldmatrix's 8 rows of 16 bytes land on 32 distinct banks)
template <int X>
CUTE_HOST_DEVICE constexpr auto smem_layout_mma() {                          // (X,BLK_K)
  return make_layout(make_shape(Int<X>{}, Int<BLK_K>{}), make_stride(Int<BLK_K + 8>{}, Int<1>{}));
}
// The accumulators staged as float, rows of BLK_N + 8: a half-warp's 64-bit stores (4 rows of
// 8 words) and a quarter-warp's 128-bit reads (a row's 32 words) fall on distinct banks
CUTE_HOST_DEVICE constexpr auto smem_layout_c() {                            // (BLK_M,BLK_N)
  return make_layout(make_shape(Int<BLK_M>{}, Int<BLK_N>{}), make_stride(Int<BLK_N + 8>{}, Int<1>{}));
}
template <class TAB> struct TinyMmaAtom;
template <> struct TinyMmaAtom<bfloat16_t> { using type = SM80_16x8x16_F32BF16BF16F32_TN; };
template <> struct TinyMmaAtom<half_t>     { using type = SM80_16x8x16_F32F16F16F32_TN; };
// 8 warps as 4 (m) x 2 (n): a warp's 16 rows by 16 columns a step (two 8-wide atoms, one
// ldmatrix x4 of B), 4 steps along n cover the 64 x 64 tile
template <class TAB>
CUTE_HOST_DEVICE constexpr auto tiny_mma() {
  static_assert(BLK_M == 64 && BLK_K % 16 == 0, "4 warps of 16 rows; k-blocks of the atom's 16");
  return make_tiled_mma(typename TinyMmaAtom<TAB>::type{}, Layout<Shape<_4, _2, _1>>{},
                        Tile<_64, _32, _16>{});
}

// The strips' product into the MMA's accumulators (k-blocks past k_left skipped: zeros)
template <class TAB, class SA, class SB, class Acc>
__device__ __forceinline__ void mma_strips(SA const& sA, SB const& sB, Acc& acc, int k_left) {
  auto mma = tiny_mma<TAB>();
  auto thr = mma.get_slice(threadIdx.x);
  Tensor tCrA = thr.partition_fragment_A(sA);                                  // (MMA,MMA_M,MMA_K)
  Tensor tCrB = thr.partition_fragment_B(sB);                                  // (MMA,MMA_N,MMA_K)
  auto s2r_a = make_tiled_copy_A(Copy_Atom<SM75_U32x4_LDSM_N, TAB>{}, mma);
  auto s2r_b = make_tiled_copy_B(Copy_Atom<SM75_U32x4_LDSM_N, TAB>{}, mma);
  auto s2r_thr_a = s2r_a.get_slice(threadIdx.x);
  auto s2r_thr_b = s2r_b.get_slice(threadIdx.x);
  Tensor tXsA = s2r_thr_a.partition_S(sA);                                     // (CPY,CPY_M,CPY_K)
  Tensor tXsB = s2r_thr_b.partition_S(sB);                                     // (CPY,CPY_N,CPY_K)
  Tensor tXrA = s2r_thr_a.retile_D(tCrA);
  Tensor tXrB = s2r_thr_b.retile_D(tCrB);
  CUTE_UNROLL
  for (int kb = 0; kb < size<2>(tCrA); ++kb) {
    if (kb * 16 >= k_left) break;
    copy(s2r_a, tXsA(_, _, kb), tXrA(_, _, kb));
    copy(s2r_b, tXsB(_, _, kb), tXrB(_, _, kb));
    gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb), acc);
  }
}

// A row's 4 neighbouring values of C in one access: float4, or 4 16-bit values in 8 bytes
__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  const float4 x = *reinterpret_cast<const float4*>(p);
  v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
}
template <class TC>
__device__ __forceinline__ void load4(const TC* p, float (&v)[4]) {
  const uint2 w = *reinterpret_cast<const uint2*>(p);
  const float2 lo = cg::unpack_pair<TC>(w.x), hi = cg::unpack_pair<TC>(w.y);
  v[0] = lo.x; v[1] = lo.y; v[2] = hi.x; v[3] = hi.y;
}
// alpha * acc + beta * c at (m, n) through the fused epilogue (c: C's old value, read only
// where beta != 0), as epilogue_axpby computes it
template <class TC, class E>
__device__ __forceinline__ float axpby(float acc, float c, int m, int n, float alpha, float beta,
                                       E const& e) {
  const float s = E::kNone ? alpha : e.scale(alpha, m, n);
  const float x = beta == 0.0f ? s * acc : s * acc + beta * c;
  if constexpr (E::kNone) return x;
  else return e.template finish<TC>(x, m, n);
}
// A row's 4 neighbours from (m, n) on, one vector access at p (aligned to 4 elements)
template <class TC, class E>
__device__ __forceinline__ void put4(TC* p, float const (&a)[4], int m, int n, float alpha,
                                     float beta, E const& e) {
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (beta != 0.0f) load4(p, c);
  auto v = [&](int j) { return axpby<TC>(a[j], c[j], m, n + j, alpha, beta, e); };
  if constexpr (sizeof(TC) == 2) {     // packed as they come: two values live, not four
    const uint32_t w0 = cg::pack_pair<TC>(v(0), v(1));
    const uint32_t w1 = cg::pack_pair<TC>(v(2), v(3));
    *reinterpret_cast<uint2*>(p) = make_uint2(w0, w1);
  } else {
    *reinterpret_cast<float4*>(p) = make_float4(v(0), v(1), v(2), v(3));
  }
}
// An interior tile's values from (m0, n0) on, row i's 4 in one vector (C: unit column stride,
// 4-element aligned rows)
template <class TC, class Acc, class E>
__device__ __forceinline__ void store_rows4(Acc const& tCrC, TC* C, long long sCm, int m0, int n0,
                                            float alpha, float beta, E const& e) {
  TC* p = C + m0 * sCm + n0;
  CUTE_UNROLL
  for (int i = 0; i < kTM; ++i, p += sCm) {
    const float a[4] = {tCrC(i, 0), tCrC(i, 1), tCrC(i, 2), tCrC(i, 3)};
    put4(p, a, m0 + i, n0, alpha, beta, e);
  }
}

template <bool TF32, bool kVec, class TAB, class TC, class Epi>
__device__ __forceinline__ void tiles(int M, int N, int K, float alpha,
                                      const TAB* A, long long sAm, long long sAk,
                                      const TAB* B, long long sBk, long long sBn,
                                      float beta, TC* C, long long sCm, long long sCn, int Lin, int z0,
                                      long long bA0, long long bA1, long long bB0, long long bB1,
                                      long long bC0, long long bC1, Epi epi, float* smemA,
                                      float* smemB, float* smemC) {
  constexpr bool kMma = sizeof(TAB) == 2;   // 16-bit operands: the tensor cores multiply
  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<BLK_K>{};
  auto cta_tiler = make_shape(bM, bN, bK);                                    // (BLK_M,BLK_N,BLK_K)
  auto tC = thr_layout_c();                                                   // (THR_M,THR_N) n-major

  // Preconditions
  CUTE_STATIC_ASSERT_V(bM % size<0>(tC) == Int<0>{});                         // BLK_M / THR_M
  CUTE_STATIC_ASSERT_V(bN % size<1>(tC) == Int<0>{});                         // BLK_N / THR_N
  CUTE_STATIC_ASSERT_V(size(tC) == Int<THREADS>{});                           // the launch block
  static_assert(BLK_M == 16 * kTM && BLK_N == 16 * kTN, "THR_M x THR_N outputs a thread");
  static_assert(BLK_M == BLK_N, "one register array stages either strip");

  // this CTA's problem of a batch: the operands offset once (CG_BATCH_PARAMS)
  const int l = z0 + int(blockIdx.z), l0 = l / Lin, l1 = l - l0 * Lin;
  Tensor mA = make_tensor(make_gmem_ptr(A + (l0 * bA0 + l1 * bA1)), make_shape(M, K),
                          make_stride(sAm, sAk));                                     // (M,K)
  Tensor mB = make_tensor(make_gmem_ptr(B + (l0 * bB0 + l1 * bB1)), make_shape(N, K),
                          make_stride(sBn, sBk));                                     // (N,K)
  Tensor mC = make_tensor(make_gmem_ptr(C + (l0 * bC0 + l1 * bC1)), make_shape(M, N),
                          make_stride(sCm, sCn));                                     // (M,N)
  Tensor cC = make_identity_tensor(shape(mC));                                        // (M,N) -> (m,n)

  // the strips: float for FFMA; for the MMA their own 16-bit type, k-major (in the same bytes)
  using TS = conditional_t<kMma, TAB, float>;
  auto strip = [](float* p, auto layout) {
    return make_tensor(make_smem_ptr(reinterpret_cast<TS*>(p)), layout);
  };
  auto sA = strip(smemA, conditional_t<kMma, decltype(smem_layout_mma<BLK_M>()),
                                       decltype(smem_layout<BLK_M>())>{});            // (BLK_M,BLK_K)
  // B's strip in two buffers: the walk stores tile t + 1's while tile t's may still be read
  using LayoutB = conditional_t<kMma, decltype(smem_layout_mma<BLK_N>()),
                                decltype(smem_layout<BLK_N>())>;
  auto sB_at = [&](int buf) { return strip(smemB + buf * kStripFloats, LayoutB{}); };   // (BLK_N,BLK_K)
  auto sB = sB_at(0);
  static_assert(cosize_v<decltype(smem_layout_mma<BLK_M>())> * 2
                <= cosize_v<decltype(smem_layout<BLK_M>())> * 4, "16-bit strips in the float strips' bytes");

  // the CTA walks the tiles of its row of C: blockIdx.y, then gridDim.y tiles on
  // (records.TileWalkN: as many CTAs as fill the GPU a few times over)
  const int m_left = M - int(blockIdx.x) * BLK_M, n_tiles = ceil_div(N, BLK_N);
  const int k_tiles = ceil_div(K, BLK_K);
  const bool a_unit = sAm == 1 && sAk != 1, b_unit = sBn == 1 && sBk != 1;
  auto gA = local_tile(mA, cta_tiler, make_coord(blockIdx.x, _, _), Step<_1, X, _1>{});   // (BLK_M,BLK_K,k)
  auto gB = [&](int tn) {
    return local_tile(mB, cta_tiler, make_coord(_, tn, _), Step< X, _1, _1>{});          // (BLK_N,BLK_K,k)
  };
  TC* const Cl = raw_pointer_cast(mC.data());
  Tensor tCsA = local_partition(ordered<kVec>(sA, by_thread_k<kVec>()), tC, threadIdx.x,
                                Step<_1, X>{});                                        // (THR_M,BLK_K)
  auto tCsB_at = [&](int buf) {
    return local_partition(ordered<kVec>(sB_at(buf), by_thread_k<kVec>()), tC, threadIdx.x,
                           Step< X, _1>{});                                            // (THR_N,BLK_K)
  };
  // C of tile (blockIdx.x, tn): alpha * acc + beta * C in TC (round to nearest even), C read
  // only if beta != 0, through the fused epilogue; vectors on an interior tile (kVec), else
  // element by element
  auto store = [&](auto const& tCrC, int tn) {
    const bool interior = m_left >= BLK_M && N - tn * BLK_N >= BLK_N;
    if (kVec && interior) {
      store_rows4(tCrC, Cl, sCm, int(blockIdx.x) * BLK_M + 4 * int(threadIdx.x / 16),
                  tn * BLK_N + 4 * int(threadIdx.x % 16), alpha, beta, epi);
      return;
    }
    auto coord = make_coord(blockIdx.x, tn, _);
    Tensor gC  = ordered<kVec>(local_tile(mC, cta_tiler, coord, Step<_1, _1, X>{}),
                               by_thread_c<kVec>());                                     // (BLK_M,BLK_N)
    Tensor gcC = ordered<kVec>(local_tile(cC, cta_tiler, coord, Step<_1, _1, X>{}),
                               by_thread_c<kVec>());                                     // (BLK_M,BLK_N)
    cg::epilogue_axpby(tCrC, local_partition(gC, tC, threadIdx.x, Step<_1, _1>{}),
                       local_partition(gcC, tC, threadIdx.x, Step<_1, _1>{}), shape(mC), alpha, beta,
                       epi, interior);
  };
  // a tile's accumulators: the thread's (THR_M,THR_N) of C (FFMA), or its MMA fragment
  auto acc = [&]() {
    if constexpr (kMma) {
      Tensor t = partition_fragment_C(tiny_mma<TAB>(), Shape<Int<BLK_M>, Int<BLK_N>>{});   // (MMA,MMA_M,MMA_N)
      clear(t);
      return t;
    } else {
      Tensor t = make_tensor<float>(make_shape(Int<kTM>{}, Int<kTN>{}));               // (THR_M,THR_N)
      clear(t);
      return t;
    }
  };
  auto multiply = [&](auto& tAcc, int k_left, int buf) {
    if constexpr (kMma) mma_strips<TAB>(sA, sB_at(buf), tAcc, k_left);
    else fma_strips<kVec>(tCsA, tCsB_at(buf), tAcc, k_left);
  };
  // the tile's C stored from the thread's (THR_M,THR_N): the MMA's fragments pass through
  // smem into the partition the stores take
  auto finish = [&](auto const& tAcc, int tn) {
    if constexpr (kMma) {
      Tensor sC = make_tensor(make_smem_ptr(smemC), smem_layout_c());                  // (BLK_M,BLK_N)
      // an atom's (c0,c1) and (c2,c3) are neighbours in a row: one 64-bit store each
      Tensor tCsC = tiny_mma<TAB>().get_slice(threadIdx.x).partition_C(sC);           // (MMA,MMA_M,MMA_N)
      CUTE_STATIC_ASSERT_V(size<0>(tAcc) == Int<4>{});                               // c0..c3 of the 16x8 atom
      CUTE_UNROLL
      for (int i = 0; i < size(tAcc); i += 2)
        *reinterpret_cast<float2*>(&tCsC(i)) = make_float2(tAcc(i), tAcc(i + 1));
      __syncthreads();
      // (read where the stores use them, a row at a time: 16 values live at once spilled
      // the fused GELU(erf) entries)
      store(local_partition(ordered<kVec>(sC, by_thread_c<kVec>()), tC, threadIdx.x), tn);
    } else {
      store(tAcc, tn);
    }
  };

  if (k_tiles == 1) {
    // one k-tile (the K this kernel is for): A's strip staged once; the next tile's B strip
    // loaded into registers while this one computes and stores, so its load latency hides
    // behind them, and stored into the other buffer: one barrier a tile publishes it (tile
    // t - 2 read that buffer before the previous barrier); the MMA's staging of C takes a
    // second
    TS v[StripShare<BLK_N, BLK_K>::kPer];    // (the MMA's operands never leave their type)
    load_strip<BLK_M, BLK_K>(gA(_, _, 0), v, m_left, K, a_unit);
    store_strip<TF32, BLK_M, BLK_K>(sA, v, a_unit);
    const StripWalk<BLK_N, BLK_K, TAB> walk(raw_pointer_cast(mB.data()), sBn, sBk, K, b_unit);
    int tn = blockIdx.y, buf = 0;
    if (tn < n_tiles) walk.load(v, tn, N - tn * BLK_N);
    for (; tn < n_tiles; tn += gridDim.y, buf ^= 1) {
      auto sBt = sB_at(buf);
      store_strip<TF32, BLK_N, BLK_K>(sBt, v, b_unit);
      __syncthreads();
      const int next = tn + int(gridDim.y);
      if (next < n_tiles) walk.load(v, next, N - next * BLK_N);
      auto tAcc = acc();
      multiply(tAcc, K, buf);
      finish(tAcc, tn);
    }
    return;
  }
  for (int tn = blockIdx.y; tn < n_tiles; tn += gridDim.y) {
    auto tAcc = acc();
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int k_left = min(BLK_K, K - kt * BLK_K);
      TS v[StripShare<BLK_N, BLK_K>::kPer];
      __syncthreads();                                 // the last k-tile's reads are done
      load_strip<BLK_M, BLK_K>(gA(_, _, kt), v, m_left, k_left, a_unit);
      store_strip<TF32, BLK_M, BLK_K>(sA, v, a_unit);
      load_strip<BLK_N, BLK_K>(gB(tn)(_, _, kt), v, N - tn * BLK_N, k_left, b_unit);
      store_strip<TF32, BLK_N, BLK_K>(sB, v, b_unit);
      __syncthreads();
      multiply(tAcc, k_left, 0);
    }
    finish(tAcc, tn);
  }
}

// The tiles' columns by vector (kVec) where C's rows are runs of whole aligned vectors (a
// batch's offsets included), else as c0's partition takes them; one choice a launch
template <bool TF32, class TAB, class TC, class Epi>
__device__ void gemm_tiny_k(int M, int N, int K, float alpha,
                            const TAB* A, long long sAm, long long sAk,
                            const TAB* B, long long sBk, long long sBn,
                            float beta, TC* C, long long sCm, long long sCn, int Lin, int z0,
                            long long bA0, long long bA1, long long bB0, long long bB1,
                            long long bC0, long long bC1, Epi epi) {
  const int l = z0 + int(blockIdx.z), l0 = l / Lin, l1 = l - l0 * Lin;
  const TC* Cl = C + (l0 * bC0 + l1 * bC1);
  constexpr bool kMma = sizeof(TAB) == 2;
  const bool vectors = sCn == 1 && sCm % 4 == 0
                       && reinterpret_cast<uintptr_t>(Cl) % (4 * sizeof(TC)) == 0;
  __shared__ __align__(16) float smemA[cosize_v<decltype(smem_layout<BLK_M>())>];
  __shared__ __align__(16) float smemB[2 * kStripFloats];
  // (the MMA's accumulators staged on their way to the stores: 16-bit operands only)
  __shared__ __align__(16) float smemC[kMma ? cosize_v<decltype(smem_layout_c())> : 4];
  // (FFMA: sm_90 on, for sm_80 ptxas spilled the vector path's 16-bit results at 128 registers)
  if constexpr (kMma || cg::kArch >= 900) {
    if (vectors) {
      tiles<TF32, true>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, Lin, z0,
                        bA0, bA1, bB0, bB1, bC0, bC1, epi, smemA, smemB, smemC);
      return;
    }
  }
  tiles<TF32, false>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, Lin, z0,
                     bA0, bA1, bB0, bB1, bC0, bC1, epi, smemA, smemB, smemC);
}

#define CG_TINY_K_ENTRY(NAME, TF32, TAB, TC)                                                \
  CG_ENTRY(NAME, __launch_bounds__(THREADS, MIN_BLOCKS),                                   \
           (CG_GEMM_PARAMS_T(TAB, TC), CG_BATCH_PARAMS, CG_EPI_PARAMS), {                    \
    gemm_tiny_k<TF32>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, Lin, z0, \
                      bA0, bA1, bB0, bB1, bC0, bC1, CG_EPILOGUE{&epi});                      \
  })

CG_TINY_K_ENTRY(cute_tiny_k_fp32_f32, false, float, float)
CG_TINY_K_ENTRY(cute_tiny_k_tf32_f32, true, float, float)
CG_TINY_K_ENTRY(cute_tiny_k_bf16_f32, false, bfloat16_t, float)
CG_TINY_K_ENTRY(cute_tiny_k_bf16_bf16, false, bfloat16_t, bfloat16_t)
CG_TINY_K_ENTRY(cute_tiny_k_fp16_f32, false, half_t, float)
CG_TINY_K_ENTRY(cute_tiny_k_fp16_fp16, false, half_t, half_t)
