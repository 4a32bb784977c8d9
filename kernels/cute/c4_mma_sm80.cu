// cute_mma_sm80 — CuTe: Ampere tensor cores (mma.sync), ldmatrix from swizzled smem, cp.async ring.
//
// Adds over cute_multistage (c3):
//  * A TiledMMA of warp-wide tensor-core atoms instead of one FFMA per thread:
//    SM80_16x8x16_F32BF16BF16F32_TN / _F32F16F16F32_TN (16-bit operands) and
//    SM80_16x8x8_F32TF32TF32F32_TN (float operands multiplied as tf32), float accumulators.
//  * Fragments go shared -> registers by ldmatrix (one instruction fills a whole 16x16 A
//    or 2x 8x16 B fragment for the warp): SM75_U32x4_LDSM_N for k-major operands,
//    SM75_U16x8_LDSM_T (transposing) for m-/n-major 16-bit ones, through make_tiled_copy_A/B
//    so the copy's thread-value layout is the MMA's. The fragments of k-block kb+1 are loaded
//    while the MMAs of k-block kb run.
//  * Swizzled smem instead of padding: rows of 128 bytes, the 16-byte chunk index XORed with
//    the row index (Swizzle<3,M,3>, M = log2 of the elements in 16 bytes). ldmatrix reads 8
//    rows x 16 bytes per phase and a warp's cp.async writes whole 128-byte rows: both touch 8
//    distinct chunks = all 32 banks, with no padding words.
//  * Residues at element granularity, and any alignment, without copies of the operands:
//    each smem granule gets the bytes of it inside the matrix (computed from identity-tensor
//    coordinates), the rest zero-filled, and nothing past them is read (sm80_copies.cuh
//    copy_granule): 16-byte cp.asyncs for 16-byte aligned operands, 4-byte ones for 4-byte
//    aligned (_al2: 16-bit rows of even length; tf32 _al1: any float), 8 threads on a
//    32-byte sector; operands of any alignment (_al1) by 16-bit loads into registers,
//    a k-tile's all issued at once and stored to smem a k-tile later, under its MMAs (a
//    vector stored as its loads land would cost a memory latency each). CuTe's ZFILL atom
//    is all-or-nothing per vector, which would need extents that are multiples of 8 (or 4).
//    k-tiles inside K test only the m/n of each line of granules (a k-major line's
//    granules then differ by immediates); only the last, partial one tests K per element.
//  * tf32: operands arrive as float bits and are rounded to nearest (cvt.rna.tf32.f32, ties
//    away from zero), once per element, in smem: each thread rounds the vectors it copied when
//    they have landed, before the barrier that publishes the stage (rounding the fragments
//    after ldmatrix instead spilled on sm_90). The MMA alone would truncate (ignore the low 13
//    bits): a bias of up to 1 ulp of tf32 per operand; rounded, the error is u = 2^-11.
//  * Epilogue alpha*acc + beta*C converted to TC with round-to-nearest(-even) (cvt.rn), C read
//    only when beta != 0: a row-major C in column pairs, any other strides scalar; predicated.
//  * Split picks (cute_mma_sm80_64x64): each entry's stream-K twin (*_sk, streamk_walk.cuh)
//    runs split_k CTAs a tile on even runs of its k-tiles; the last to arrive adds the partial
//    sums in order and stores (docs/design/cute_mma_sm80.md#split-picks-on-the-small-configuration).
// Geometry: the registry's TileConfig. cute_mma_sm80: 128 x 256 tiles, 2x4 warps of 64x64 of
//           C (4 (m) x 8 (n) MMA atoms, 128 float accumulators a thread), 3 stages (144 KB
//           smem, 1 CTA per SM). cute_mma_sm80_64x64, for small problems: 2x2 warps of 32x32,
//           3 stages (48 KB). BLK_K = 128 bytes of k (64 16-bit, 32 tf32 elements).
// Strides:  one entry per (precision, result type, A major, B major, alignment class); the
//           unit stride is static. 16-bit: all four majors (k-major operands via LDSM_N, m-/
//           n-major via LDSM_T); tf32: A and B k-major only (ldmatrix has no 32-bit transpose;
//           the runtime copies other majors). A, B pointers and leading strides: 16-byte
//           aligned, or (entries registered for the small-problem configuration) 4-byte
//           aligned (_al2) or any (_al1).
//           C: any strides.
// Bottleneck: mma.sync itself on Hopper (cuBLAS uses wgmma): H100, 4096^3, bf16 333-366
//           TFLOP/s against cuBLAS bf16 734-786 in the same runs (0.43-0.47x), about the CuTe
//           sgemm_sm80 tutorial's half-precision figure; 128x256 tiles (2x4 warps) measured
//           +1-4 %, 256x128 -2 %: docs/design/cute_mma_sm80.md. The epilogue at small K (pair
//           stores of a row-major C: +3-8 % at 4096^3, 0.47-0.51x).
//
// Layouts (tid = threadIdx.x, warp w = tid/32; V = 16 bytes / element = 8 or 4):
//   smem atom, k-major:  Swizzle<3,log2 V,3> o (8,8V):(8V,1)   (8 rows of 128 bytes)
//   smem atom, m/n-major: Swizzle<3,3,3> o (64,8):(1,64)        (16-bit only)
//   sA = tile_to_shape(atom, (BLK_M,BLK_K,STAGES)), sB likewise with BLK_N
//   gmem->smem, 16 B cp.async along k: thr (16,8):(8,1), val (1,V)
//                          along m/n:  thr (16,8):(1,16), val (8,1)
//   TiledMMA: atom layout (2,2,1) (warp w at (w%2, w/2)), tile 32 x 32 x atom-K: a warp owns
//       rows 16*(w%2) + 32i + [0,16) and columns 8*(w/2) + 16j + [0,8), i < 4, j < 8 (its two
//       8-wide B atoms 16 apart are one LDSM x4).
#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>
#include <cute_gemm/quad_blocks.cuh>
#include <cute_gemm/read_ahead.cuh>
#include <cute_gemm/sm80_copies.cuh>
#include <cute_gemm/streamk_walk.cuh>

using namespace cute;

// BLK_M, BLK_N, BLK_K (16-bit elements: 128 bytes; tf32 tiles take the same bytes, BLK_K / 2),
// STAGES, WARPS_M, WARPS_N, THREADS (each warp computes BLK_M/WARPS_M x BLK_N/WARPS_N): emitted by the
// registry's config (cute_gemm/registry/ladder_cute.py, TileConfig), the one source of these numbers.
#define NUM_THREADS (32 * WARPS_M * WARPS_N)
static_assert(THREADS == NUM_THREADS, "the registry's block: a warp per MMA warp");

// What each operand type computes with: the MMA atom and the register type it reads.
template <class TAB> struct MmaFor;
template <> struct MmaFor<bfloat16_t> { using Atom = SM80_16x8x16_F32BF16BF16F32_TN; using T = bfloat16_t; };
template <> struct MmaFor<half_t>     { using Atom = SM80_16x8x16_F32F16F16F32_TN;   using T = half_t; };
template <> struct MmaFor<float>      { using Atom = SM80_16x8x8_F32TF32TF32F32_TN;  using T = tfloat32_t; };

template <class T> constexpr int kVec = 16 / int(sizeof(T));          // elements per 16 bytes
template <class T> constexpr int kBlkK = BLK_K * 2 / int(sizeof(T));   // 128 bytes of k

// The layouts, by name (cute_gemm/layouts/recipes.py dumps all of them, and ldmatrix's
// address side for an A atom; B's ldmatrix order, CuTe's retiling, is not dumped).
template <class T>
CUTE_HOST_DEVICE constexpr auto smem_atom_k() {                       // (8,BLK_K): 8 rows of 128 B
  constexpr int lv = kVec<T> == 8 ? 3 : 2;
  return composition(Swizzle<3, lv, 3>{},
                     Layout<Shape<_8, Int<kBlkK<T>>>, Stride<Int<kBlkK<T>>, _1>>{});
}
template <class T>
CUTE_HOST_DEVICE constexpr auto smem_atom_mn() {                      // (64,8): 8 columns of 128 B
  static_assert(sizeof(T) == 2, "m-/n-major smem is read by LDSM_T: 16-bit elements only");
  return composition(Swizzle<3, 3, 3>{}, Layout<Shape<_64, _8>, Stride<_1, _64>>{});
}
template <class TAB>
CUTE_HOST_DEVICE constexpr auto tiled_mma() {   // WARPS_M x WARPS_N warps, 16*WARPS_M x 16*WARPS_N x K tile
  // N tile 16 per warp (two 8-wide atoms): a warp's B fragments of both are one LDSM x4
  using Atom = typename MmaFor<TAB>::Atom;
  constexpr int ak = size<2>(typename MMA_Traits<Atom>::Shape_MNK{});
  return make_tiled_mma(Atom{}, Layout<Shape<Int<WARPS_M>, Int<WARPS_N>, _1>>{},
                        Tile<Int<16 * WARPS_M>, Int<16 * WARPS_N>, Int<ak>>{});
}

// Bytes a thread's copy moves at most for the entries' copy class G (bytes of alignment: 16,
// 4, or 2 for 16-bit loads staged through registers, which move 16-byte vectors).
template <int G> constexpr int kGranule = G == 4 ? 4 : 16;

// gmem -> smem thread layout of an operand of extent EXT along m/n, contiguous along k or not,
// in granules of GB bytes: 8 threads on consecutive granules along the contiguous mode, so
// one copy instruction of a warp reads whole 32-byte sectors (4-byte granules in the places
// of 16-byte vectors read a quarter of each sector an instruction, and ran slower).
template <class T, int EXT, bool KMAJOR, int GB>
CUTE_HOST_DEVICE constexpr auto g2s_copy() {
  using Atom = Copy_Atom<UniversalCopy<uint_byte_t<GB>>, T>;   // only the partition is used
  constexpr int VG = GB / int(sizeof(T));                   // elements a granule
  if constexpr (KMAJOR) {
    return make_tiled_copy(Atom{}, Layout<Shape<Int<NUM_THREADS / 8>, _8>, Stride<_8, _1>>{},
                           Layout<Shape<_1, Int<VG>>>{});
  } else {
    constexpr int tm = GB == 16 ? EXT / VG : 8;             // threads along m/n
    return make_tiled_copy(Atom{}, Layout<Shape<Int<tm>, Int<NUM_THREADS / tm>>>{},
                           Layout<Shape<Int<VG>, _1>>{});
  }
}

// The mainloop: tile (tile_m, tile_n) of A*B into the accumulators tCrC (the TiledMMA's C
// partition of this thread). Templated on the operands only, so the entries of one
// (precision, majors) that differ in the type of C share its instantiation.
template <int G, class TAB, class StrideA, class StrideB, class Acc>
__device__ __forceinline__ void mainloop_mma_sm80(int tile_m, int tile_n, int M, int N, int K,
                                                  const TAB* A_, StrideA dA,
                                                  const TAB* B_, StrideB dB, Acc& tCrC) {
  using T = typename MmaFor<TAB>::T;                           // A, B as the MMA reads them
  constexpr bool a_k = is_static<decltype(get<1>(dA))>::value;  // A k-major (else m-major)
  constexpr bool b_k = is_static<decltype(get<1>(dB))>::value;  // B k-major (else n-major)
  constexpr int GB = kGranule<G>;
  constexpr int VG = GB / int(sizeof(T));                       // elements a copy
  const T* A = reinterpret_cast<const T*>(A_);                  // same bits (tf32: float bits)
  const T* B = reinterpret_cast<const T*>(B_);

  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<kBlkK<T>>{};
  auto bP = Int<STAGES>{};
  auto cta_tiler = make_shape(bM, bN, bK);                                    // (BLK_M,BLK_N,BLK_K)
  auto sA_layout = [&] {
    if constexpr (a_k) return tile_to_shape(smem_atom_k<T>(), make_shape(bM, bK, bP));
    else               return tile_to_shape(smem_atom_mn<T>(), make_shape(bM, bK, bP));
  }();                                                                        // (BLK_M,BLK_K,PIPE)
  auto sB_layout = [&] {
    if constexpr (b_k) return tile_to_shape(smem_atom_k<T>(), make_shape(bN, bK, bP));
    else               return tile_to_shape(smem_atom_mn<T>(), make_shape(bN, bK, bP));
  }();                                                                        // (BLK_N,BLK_K,PIPE)
  TiledMMA mma = tiled_mma<TAB>();
  auto g2s_a = g2s_copy<T, BLK_M, a_k, GB>();
  auto g2s_b = g2s_copy<T, BLK_N, b_k, GB>();
  using LdsmA = conditional_t<a_k, SM75_U32x4_LDSM_N, SM75_U16x8_LDSM_T>;
  using LdsmB = conditional_t<b_k, SM75_U32x4_LDSM_N, SM75_U16x8_LDSM_T>;
  auto s2r_a = make_tiled_copy_A(Copy_Atom<LdsmA, T>{}, mma);
  auto s2r_b = make_tiled_copy_B(Copy_Atom<LdsmB, T>{}, mma);

  // Preconditions
  CUTE_STATIC_ASSERT_V(size(mma) == Int<NUM_THREADS>{});                      // the launch block
  CUTE_STATIC_ASSERT_V(size(g2s_a) == size(mma));                             // one thread set
  CUTE_STATIC_ASSERT_V(size(g2s_b) == size(mma));
  CUTE_STATIC_ASSERT_V(bM % tile_size<0>(mma) == Int<0>{});                   // BLK_M / MMA_M tile
  CUTE_STATIC_ASSERT_V(bN % tile_size<1>(mma) == Int<0>{});                   // BLK_N / MMA_N tile
  CUTE_STATIC_ASSERT_V(bK % tile_size<2>(mma) == Int<0>{});                   // BLK_K / MMA_K tile
  CUTE_STATIC_ASSERT_V(bM % size<0>(typename decltype(g2s_a)::Tiler_MN{}) == Int<0>{});  // BLK_M / CPY_M
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename decltype(g2s_a)::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K
  CUTE_STATIC_ASSERT_V(bN % size<0>(typename decltype(g2s_b)::Tiler_MN{}) == Int<0>{});  // BLK_N / CPY_N
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename decltype(g2s_b)::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K
  static_assert(STAGES >= 2, "a k-tile in flight while one is computed");
  static_assert(a_k && b_k || sizeof(T) == 2, "tf32 operands are k-major (LDSM_T moves 16-bit values)");

  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), dA);                    // (M,K)
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), dB);                    // (N,K)
  Tensor cA = make_identity_tensor(shape(mA));                                        // (M,K) -> (m,k)
  Tensor cB = make_identity_tensor(shape(mB));                                        // (N,K) -> (n,k)

  auto cta_coord = make_coord(tile_m, tile_n, _);                                    // (m,n,:)
  Tensor gA  = local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gB  = local_tile(mB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)
  Tensor gcA = local_tile(cA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gcB = local_tile(cB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)

  extern __shared__ __align__(128) char smem_buf[];
  T* smemA = reinterpret_cast<T*>(smem_buf);
  T* smemB = smemA + cosize(sA_layout);
  Tensor sA = make_tensor(make_smem_ptr(smemA), sA_layout);                           // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), sB_layout);                           // (BLK_N,BLK_K,PIPE)

  // Global -> shared: 16-byte vectors along each operand's contiguous mode.
  ThrCopy g2s_thr_a = g2s_a.get_slice(threadIdx.x);
  Tensor tAgA = g2s_thr_a.partition_S(gA);                                            // (CPY,CPY_M,CPY_K,k)
  Tensor tAcA = g2s_thr_a.partition_S(gcA);                                           // (CPY,CPY_M,CPY_K,k)
  Tensor tAsA = g2s_thr_a.partition_D(sA);                                            // (CPY,CPY_M,CPY_K,PIPE)
  ThrCopy g2s_thr_b = g2s_b.get_slice(threadIdx.x);
  Tensor tBgB = g2s_thr_b.partition_S(gB);                                            // (CPY,CPY_N,CPY_K,k)
  Tensor tBcB = g2s_thr_b.partition_S(gcB);                                           // (CPY,CPY_N,CPY_K,k)
  Tensor tBsB = g2s_thr_b.partition_D(sB);                                            // (CPY,CPY_N,CPY_K,PIPE)
  CUTE_STATIC_ASSERT_V(size<0>(tAsA) == Int<VG>{} && size<0>(tBsB) == Int<VG>{});     // one granule

  // Compute partitions: register fragments, and ldmatrix views of smem that fill them.
  ThrMMA thr_mma = mma.get_slice(threadIdx.x);
  Tensor tCrA = thr_mma.partition_fragment_A(sA(_, _, 0));                            // (MMA,MMA_M,MMA_K)
  Tensor tCrB = thr_mma.partition_fragment_B(sB(_, _, 0));                            // (MMA,MMA_N,MMA_K)
  ThrCopy s2r_thr_a = s2r_a.get_slice(threadIdx.x);
  Tensor tXsA = s2r_thr_a.partition_S(sA);                                            // (CPY,MMA_M,MMA_K,PIPE)
  Tensor tXrA = s2r_thr_a.retile_D(tCrA);                                             // (CPY,MMA_M,MMA_K)
  ThrCopy s2r_thr_b = s2r_b.get_slice(threadIdx.x);
  Tensor tXsB = s2r_thr_b.partition_S(sB);                                            // (CPY,MMA_N,MMA_K,PIPE)
  Tensor tXrB = s2r_thr_b.retile_D(tCrB);                                             // (CPY,MMA_N,MMA_K)
  CUTE_STATIC_ASSERT_V(size<1>(tCrC) == size<1>(tCrA));                               // MMA_M
  CUTE_STATIC_ASSERT_V(size<2>(tCrC) == size<1>(tCrB));                               // MMA_N
  clear(tCrC);

  auto shapeA = shape(mA);
  auto shapeB = shape(mB);
  // k-tile k_tile into stage `stage`: each vector brings the bytes inside the matrix and
  // zero-fills the rest (a whole vector outside reads nothing and writes zero bytes).
  // G == 2 (any alignment: 16-bit loads, no cp.async) stages a k-tile in registers instead:
  // issue loads it into rA/rB, deposit stores them a k-tile later (see the mainloop).
  constexpr bool staged = G == 2;
  constexpr int VA = staged ? decltype(size<1>(tAsA) * size<2>(tAsA))::value : 1;
  constexpr int VB = staged ? decltype(size<1>(tBsB) * size<2>(tBsB))::value : 1;
  uint4 rA[VA], rB[VB];                              // (CPY_M*CPY_K), (CPY_N*CPY_K) vectors
  // Granules (m, k) of k-tile k_tile of one operand (extent `ext` along m/n, k contiguous or
  // not) into its stage. A whole k-tile's bytes follow from the m/n of the granule's line
  // alone; a k-major cp.async takes its source as it is (0 source bytes read nothing), the
  // others the operand's base where they read nothing (held, their pointers spilled or, in
  // 4-byte m/n-major granules, ran slower: docs/design/cute_mma_sm80.md).
  auto issue_one = [&](auto const& tXgX, auto const& tXcX, auto const& tXsX, int ext, auto shapeX,
                       T const* X, auto contig_k, uint4* rX, int k_tile, int stage, auto full) {
    constexpr bool kc = decltype(contig_k)::value, whole = decltype(full)::value;
    CUTE_UNROLL
    for (int m = 0; m < size<1>(tXsX); ++m)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tXsX); ++k) {
        int bytes;
        T const* g;
        if constexpr (whole) {
          bytes = cg::whole_tile_bytes<!kc, VG, sizeof(T)>(ext - get<0>(tXcX(0, m, 0, 0)));
          g = kc && !staged || bytes ? &tXgX(0, m, k, k_tile) : X;
        } else {
          bytes = cg::inside_bytes<kc ? 1 : 0, VG, sizeof(T)>(tXcX(0, m, k, k_tile), shapeX);
          g = bytes ? &tXgX(0, m, k, k_tile) : X;
        }
        if constexpr (staged) rX[m * size<2>(tXsX) + k] = cg::load_vec_any(g, bytes);
        else                  cg::copy_granule<GB, whole && kc>(&tXsX(0, m, k, stage), g, bytes);
      }
  };
  auto issue = [&](int k_tile, int stage, auto full) {
    issue_one(tAgA, tAcA, tAsA, M, shapeA, A, bool_constant<a_k>{}, rA, k_tile, stage, full);
    issue_one(tBgB, tBcB, tBsB, N, shapeB, B, bool_constant<b_k>{}, rB, k_tile, stage, full);
  };
  auto deposit = [&](int stage) {                    // staged: the fetched k-tile into `stage`
    CUTE_UNROLL
    for (int m = 0; m < size<1>(tAsA); ++m)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tAsA); ++k)
        *reinterpret_cast<uint4*>(&tAsA(0, m, k, stage)) = rA[m * size<2>(tAsA) + k];
    CUTE_UNROLL
    for (int n = 0; n < size<1>(tBsB); ++n)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tBsB); ++k)
        *reinterpret_cast<uint4*>(&tBsB(0, n, k, stage)) = rB[n * size<2>(tBsB) + k];
  };
  const int k_tiles = ceil_div(K, int(bK));
  const int k_full = K / int(bK);                    // k-tiles inside K
  auto issue_any = [&](int k_tile, int stage) {
    if (k_tile < k_full) issue(k_tile, stage, true_type{});
    else                 issue(k_tile, stage, false_type{});
  };
  // k-block kb of stage `stage`, smem -> registers.
  auto load_frags = [&](int kb, int stage) {
    copy(s2r_a, tXsA(_, _, kb, stage), tXrA(_, _, kb));
    copy(s2r_b, tXsB(_, _, kb, stage), tXrB(_, _, kb));
  };
  // tf32: every thread rounds the vectors it copied itself, once they have landed (a thread's
  // cp.async writes are visible to it after its wait), before the barrier that publishes the
  // stage: each element is rounded once, not once per warp that reads it.
  auto round_stage = [&](int stage) {
    if constexpr (is_same_v<T, tfloat32_t>) {
      cg::round_to_tf32(tAsA(_, _, _, stage));
      cg::round_to_tf32(tBsB(_, _, _, stage));
    }
  };

  constexpr int KB = size<2>(tCrA);                  // k-blocks (MMA_K) per k-tile
  static_assert(!staged || KB >= 2, "staged: a k-tile fetched at k-block 0 is deposited at the last");
  // Prologue: k-tiles 0 .. STAGES-2 in flight, one commit group each (empty past the end,
  // so that group g is always k-tile g); then the first k-block of k-tile 0 into registers.
  CUTE_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) {
      issue_any(s, s);
      if constexpr (staged) deposit(s);
    }
    cp_async_fence();
  }
  cp_async_wait<STAGES - 2>();
  round_stage(0);
  __syncthreads();
  load_frags(0, 0);

  int read = 0;                                      // the stage of k-tile k_tile
  CUTE_NO_UNROLL
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    const int next = k_tile + STAGES - 1;            // into the stage k-tile k_tile-1 used
    CUTE_UNROLL
    for (int kb = 0; kb < KB; ++kb) {
      if (kb == KB - 1) {
        // staged: k-tile `next`, fetched at k-block 0, into its stage (free since the last
        // barrier) before the barrier, its loads' latency spent under this k-tile's MMAs
        if constexpr (staged)
          if (next < k_tiles) deposit(next % STAGES);
        // The next k-tile has landed for this thread, then for all; and every thread has
        // loaded its last fragments of k-tile k_tile-1's stage (refilled at kb == 0 below).
        cp_async_wait<STAGES - 2>();
        read = read + 1 == STAGES ? 0 : read + 1;
        round_stage(read);
        __syncthreads();
      }
      if (kb == 0) {
        // before the next fragments load: the copies' addresses and predicates are then
        // computed while only one k-block of fragments is live
        if (next < k_tiles) issue_any(next, next % STAGES);
        cp_async_fence();
      }
      load_frags((kb + 1) % KB, read);               // in flight during the MMAs of kb
      gemm(mma, tCrA(_, _, kb), tCrB(_, _, kb), tCrC);   // (MMA,MMA_M,MMA_N) += A_kb * B_kb
    }
  }

}

// An interior tile of row-major 16-bit C with 16-byte aligned rows, no fused epilogue: the
// pairs of four neighbouring n-atoms of a row quad-transposed into one 16-byte block a lane
// (quad_blocks.cuh), C read in the same blocks where beta != 0, kAhead blocks ahead of their
// stores (a load behind a store through C's pointer waited for it). A quarter of the pair
// stores' instructions, each warp access whole 32-byte sectors.
template <class TC, class Acc, class Part>
__device__ __forceinline__ void store_blocks_16B(Part const& tCgR, Acc const& acc, float alpha,
                                                 float beta) {
  constexpr int kM = decltype(size<1>(acc))::value, kN = decltype(size<2>(acc))::value;
  constexpr int kBlocks = kM * 2 * (kN / 4), kAhead = 8;    // (h, mm, J): row half, m-atom, 4 n-atoms
  static_assert(kN % 4 == 0 && decltype(size<0>(acc))::value == 4, "m16n8 atoms, n-atoms in fours");
  const int q = threadIdx.x & 3;
  // lane q's block of (h, mm, J): n-atom 4J + q, whose column 2q is its own pair's
  auto at = [&](int b) {
    const int h = b % 2, mm = (b / 2) % kM, J = b / (2 * kM);
    return reinterpret_cast<uint4*>(&tCgR(2 * h, mm, 4 * J + q) - 2 * q);
  };
  // block b stored: its n-atoms' pairs v(s, x, y), x and y the accumulators of n-atom 4J + s
  auto store = [&](int b, auto const& v) {
    const int h = b % 2, mm = (b / 2) % kM, J = b / (2 * kM);
    uint32_t w[4];
    CUTE_UNROLL
    for (int s = 0; s < 4; ++s)
      w[s] = v(s, acc(2 * h, mm, 4 * J + s), acc(2 * h + 1, mm, 4 * J + s));
    cg::quad_transpose(w);
    cg::store_block(at(b), w);
  };
  if (beta == 0.0f) {
    CUTE_UNROLL
    for (int b = 0; b < kBlocks; ++b)
      store(b, [&](int, float x, float y) { return cg::pack_pair<TC>(alpha * x, alpha * y); });
    return;
  }
  cg::read_ahead<kBlocks, kAhead>([&](int b) { return *at(b); }, [&](int b, uint4 old) {
    uint32_t o[4] = {old.x, old.y, old.z, old.w};
    cg::quad_transpose(o);                                  // each lane's own pairs of C
    store(b, [&](int s, float x, float y) {
      const float2 c = cg::unpack_pair<TC>(o[s]);
      return cg::pack_pair<TC>(alpha * x + beta * c.x, alpha * y + beta * c.y);
    });
  });
}

// Tile (tile_m, tile_n) of C = alpha * acc + beta * C in TC (round to nearest), C read only if
// beta != 0, through the fused epilogue.
template <class TAB, class TC, class Acc, class Epi>
__device__ __forceinline__ void epilogue_mma_sm80(int tile_m, int tile_n, int M, int N, float alpha,
                                                  float beta, TC* C, long long sCm, long long sCn,
                                                  Acc const& tCrC, Epi epi) {
  auto cta_tiler = make_shape(Int<BLK_M>{}, Int<BLK_N>{});                            // (BLK_M,BLK_N)
  Tensor mC  = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(sCm, sCn)); // (M,N)
  Tensor cC  = make_identity_tensor(shape(mC));                                       // (M,N) -> (m,n)
  Tensor gC  = local_tile(mC, cta_tiler, make_coord(tile_m, tile_n));                 // (BLK_M,BLK_N)
  Tensor gcC = local_tile(cC, cta_tiler, make_coord(tile_m, tile_n));                 // (BLK_M,BLK_N)
  ThrMMA thr_mma = tiled_mma<TAB>().get_slice(threadIdx.x);
  Tensor tCgC = thr_mma.partition_C(gC);                                              // (MMA,MMA_M,MMA_N)
  Tensor tCcC = thr_mma.partition_C(gcC);                                             // (MMA,MMA_M,MMA_N)
  // Epilogue: C = alpha * acc + beta * C in TC (round to nearest), C read only if beta != 0.
  // Row-major C (unit column stride, even row stride, pair-aligned base): values 2j, 2j+1 of
  // an MMA atom are neighbouring columns of one row, so each pair is one 8- or 4-byte store
  // (half the store instructions), with static column offsets and no predicates inside; a
  // 16-bit C's interior tiles in 16-byte blocks (store_blocks_16B) where rows allow.
  // Not for tf32: at 254 registers its mainloop has none to spare for it (it spilled).
  if (!is_same_v<TAB, float> && sCn == 1 && sCm % 2 == 0 && reinterpret_cast<unsigned long long>(C) % (2 * sizeof(TC)) == 0) {
    struct alignas(2 * sizeof(TC)) Pair { TC x, y; };
    Tensor gR   = make_tensor(make_gmem_ptr(C + tile_m * BLK_M * sCm + tile_n * BLK_N),
                              cta_tiler, make_stride(sCm, _1{}));                      // (BLK_M,BLK_N)
    Tensor tCgR = thr_mma.partition_C(gR);                                             // (MMA,MMA_M,MMA_N)
    const bool interior = (tile_m + 1) * BLK_M <= M && (tile_n + 1) * BLK_N <= N;
    if constexpr (Epi::kNone && sizeof(TC) == 2) {
      if (interior && sCm % 8 == 0 && reinterpret_cast<unsigned long long>(C) % 16 == 0) {
        store_blocks_16B<TC>(tCgR, tCrC, alpha, beta);
        return;
      }
    }
    if constexpr (Epi::kNone) {
      if (interior && beta != 0.0f) {
        // C's pairs read ahead of their stores (read_ahead.cuh)
        cg::read_ahead<decltype(size(tCrC))::value / 2, 8>(
            [&](int j) { return *reinterpret_cast<const Pair*>(&tCgR(2 * j)); },
            [&](int j, Pair old) {
              *reinterpret_cast<Pair*>(&tCgR(2 * j)) = Pair{TC(alpha * tCrC(2 * j) + beta * float(old.x)),
                                                            TC(alpha * tCrC(2 * j + 1) + beta * float(old.y))};
            });
        return;
      }
    }
    CUTE_UNROLL
    for (int i = 0; i < size(tCrC); i += 2) {
      const int r = get<0>(tCcC(i)), c = get<1>(tCcC(i));   // (m,n) of the MMA's first value
      if (!interior && (r >= M || c >= N)) continue;
      TC* p = &tCgR(i);
      // (c + 1 past N on an edge tile: its scale read at N - 1, the value never stored)
      float v0 = epi.scale(alpha, r, c) * tCrC(i),
            v1 = epi.scale(alpha, r, interior ? c + 1 : min(c + 1, N - 1)) * tCrC(i + 1);
      if (interior || c + 1 < N) {
        if (beta != 0.0f) {
          const Pair old = *reinterpret_cast<const Pair*>(p);
          v0 += beta * float(old.x);
          v1 += beta * float(old.y);
        }
        *reinterpret_cast<Pair*>(p) = Pair{TC(epi.template finish<TC>(v0, r, c)),
                                           TC(epi.template finish<TC>(v1, r, c + 1))};
      } else {
        *p = TC(epi.template finish<TC>(beta == 0.0f ? v0 : v0 + beta * float(*p), r, c));
      }
    }
    return;
  }
  auto shapeC = shape(mC);
  CUTE_UNROLL
  for (int i = 0; i < size(tCrC); ++i)
    if (elem_less(tCcC(i), shapeC)) {
      const int r = get<0>(tCcC(i)), c = get<1>(tCcC(i));
      float v = epi.scale(alpha, r, c) * tCrC(i);
      if (beta != 0.0f) v += beta * float(tCgC(i));
      tCgC(i) = TC(epi.template finish<TC>(v, r, c));
    }
}

// One CTA a tile: (blockIdx.x, blockIdx.y), all of K.
template <int G, class TAB, class TC, class StrideA, class StrideB, class Epi>
__device__ void gemm_mma_sm80(int M, int N, int K, float alpha, const TAB* A, StrideA dA,
                              const TAB* B, StrideB dB, float beta, TC* C, long long sCm,
                              long long sCn, Epi epi) {
  ThrMMA thr_mma = tiled_mma<TAB>().get_slice(threadIdx.x);
  Tensor tCrC = partition_fragment_C(thr_mma, Shape<Int<BLK_M>, Int<BLK_N>>{});       // (MMA,MMA_M,MMA_N) float
  mainloop_mma_sm80<G>(blockIdx.x, blockIdx.y, M, N, K, A, dA, B, dB, tCrC);
  epilogue_mma_sm80<TAB>(blockIdx.x, blockIdx.y, M, N, alpha, beta, C, sCm, sCn, tCrC, epi);
}

// The stream-K twin (streamk_walk.cuh): runs of a tile's k-tiles, A and B offset to the run's
// first k (a 16-byte aligned step: whole k-tiles of 128 bytes), the run's K the rest; the CTA
// that completes a tile stores it. Tiles in column order. The registry takes it for split
// picks (split_k CTAs a tile: one run each) only: a stream-K head would be the plain entry on
// a 1-D grid of the walk's first tiles, and the plain entry reads its tile from a 2-D grid.
template <int G, class TAB, class TC, class StrideA, class StrideB, class Epi>
__device__ void gemm_mma_sm80_sk(int M, int N, int K, float alpha, const TAB* A, StrideA dA,
                                 const TAB* B, StrideB dB, float beta, TC* C, long long sCm,
                                 long long sCn, Epi epi, float* ws, int tile0) {
  constexpr int bk = kBlkK<typename MmaFor<TAB>::T>;
  cg::streamk_walk<NUM_THREADS, BLK_M, BLK_N, bk>(
      M, N, K, ws, tile0,
      [](int t, int tiles_m, int, int& tile_m, int& tile_n) {
        tile_m = t % tiles_m;
        tile_n = t / tiles_m;
      },
      [](auto&) { return true; },
      [&](int tile_m, int tile_n, int k0, int k1, auto&& store) {
        ThrMMA thr_mma = tiled_mma<TAB>().get_slice(threadIdx.x);
        Tensor tCrC = partition_fragment_C(thr_mma, Shape<Int<BLK_M>, Int<BLK_N>>{});  // (MMA,MMA_M,MMA_N) float
        const int k_lo = k0 * bk;
        mainloop_mma_sm80<G>(tile_m, tile_n, M, N, min(K, k1 * bk) - k_lo, A + k_lo * get<1>(dA), dA,
                             B + k_lo * get<1>(dB), dB, tCrC);
        if (store(tCrC))
          epilogue_mma_sm80<TAB>(tile_m, tile_n, M, N, alpha, beta, C, sCm, sCn, tCrC, epi);
      });
}

// G: the bytes each copy moves at most (16: A, B 16-byte aligned; 4: 4-byte; 2: 16-bit any).
// Launch bounds of 1 CTA an SM: without them ptxas held the 64x64 tf32 entry to 128 registers
// and spilled.
#define CG_MMA_ENTRY(NAME, TAB, TC, DA, DB, G)                                              \
  CG_ENTRY(NAME, __launch_bounds__(NUM_THREADS, 1),                                         \
           (CG_GEMM_PARAMS_T(TAB, TC), CG_BATCH_PARAMS, CG_EPI_PARAMS), {                    \
    CG_BATCH_STEP();                                                                        \
    gemm_mma_sm80<G>(M, N, K, alpha, A, DA, B, DB, beta, C, sCm, sCn, CG_EPILOGUE{&epi});    \
  })                                                                                        \
  CG_ENTRY(NAME##_sk, __launch_bounds__(NUM_THREADS, 1),                                    \
           (CG_GEMM_PARAMS_T(TAB, TC), float* __restrict__ ws, int tile0, CG_EPI_PARAMS), {  \
    gemm_mma_sm80_sk<G>(M, N, K, alpha, A, DA, B, DB, beta, C, sCm, sCn, CG_EPILOGUE{&epi},  \
                        ws, tile0);                                                         \
  })
// One precision and result type in every (A major, B major), one alignment class (AL: the
// entries' suffix: none for 16 bytes, _al2 for 4, _al1 for any alignment)
#define CG_MMA_16BIT(PREC, TAB, OUT, TC, AL, G)                                             \
  CG_MMA_ENTRY(cute_mma_sm80_##PREC##_##OUT##_ak_bn##AL, TAB, TC, CG_DA_k, CG_DB_n, G)      \
  CG_MMA_ENTRY(cute_mma_sm80_##PREC##_##OUT##_ak_bk##AL, TAB, TC, CG_DA_k, CG_DB_k, G)      \
  CG_MMA_ENTRY(cute_mma_sm80_##PREC##_##OUT##_am_bn##AL, TAB, TC, CG_DA_m, CG_DB_n, G)      \
  CG_MMA_ENTRY(cute_mma_sm80_##PREC##_##OUT##_am_bk##AL, TAB, TC, CG_DA_m, CG_DB_k, G)

CG_MMA_16BIT(bf16, bfloat16_t, f32, float, , 16)
CG_MMA_16BIT(bf16, bfloat16_t, f32, float, _al2, 4)
CG_MMA_16BIT(bf16, bfloat16_t, f32, float, _al1, 2)
CG_MMA_16BIT(bf16, bfloat16_t, bf16, bfloat16_t, , 16)
CG_MMA_16BIT(bf16, bfloat16_t, bf16, bfloat16_t, _al2, 4)
CG_MMA_16BIT(bf16, bfloat16_t, bf16, bfloat16_t, _al1, 2)
CG_MMA_16BIT(fp16, half_t, f32, float, , 16)
CG_MMA_16BIT(fp16, half_t, f32, float, _al2, 4)
CG_MMA_16BIT(fp16, half_t, f32, float, _al1, 2)
CG_MMA_16BIT(fp16, half_t, fp16, half_t, , 16)
CG_MMA_16BIT(fp16, half_t, fp16, half_t, _al2, 4)
CG_MMA_16BIT(fp16, half_t, fp16, half_t, _al1, 2)
// tf32: float operands, both k-major, float C; 4-byte copies take any float pointer
CG_MMA_ENTRY(cute_mma_sm80_tf32_f32_ak_bk, float, float, CG_DA_k, CG_DB_k, 16)
CG_MMA_ENTRY(cute_mma_sm80_tf32_f32_ak_bk_al1, float, float, CG_DA_k, CG_DB_k, 4)
