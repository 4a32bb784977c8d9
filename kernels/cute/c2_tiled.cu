// cute_tiled — CuTe: TiledCopy (128-bit loads), TiledMMA, padded smem, register prefetch.
//
// Adds over cute_smem (c1):
//  * TiledCopy for global -> registers with a value layout of 4 floats along the
//    operand's contiguous mode: one 128-bit LDG per vector (UniversalCopy<uint128_t>).
//    The registers then go to shared memory with a plain copy: STS.128 when the smem
//    mode is also contiguous (m-/n-major operand), 4 scalar STS when the vector ran
//    along k (k-major operand; the transpose happens on the way into smem).
//  * TiledMMA of UniversalFMA atoms, 16x16 threads (m fastest), partitioning C and the
//    smem tiles of A and B (the sgemm_2 arrangement: a thread's 8x8 outputs are strided
//    by 16, so its smem reads are scalar but a warp reads 16 consecutive words).
//  * Shared tiles m-/n-major with each k column padded by 4 words: (BLK_M,BLK_K) with
//    stride BLK_M+4, so the transposing scalar stores of a k-major operand hit 32
//    distinct banks (m + 4k mod 32), while columns stay 16-byte aligned for STS.128.
//  * The next k-tile is loaded into registers while the current one is computed from
//    shared memory (one smem buffer, two barriers per k-tile).
// Geometry: BLK_M x BLK_N x BLK_K = 128 x 128 x 8 (the registry's config), 256 threads, 8x8
//           accumulators per thread.
// Residues: identity tensors through the same TiledCopy/TiledMMA partitions; a vector is
//           loaded iff its first element is inside (M,K) / (N,K) — exact because vector
//           entry points are only chosen when the contiguous extent is a multiple of 4
//           (Variant.extent_align) — otherwise its registers stay zero. Predicated
//           scalar epilogue.
// Strides:  one entry point per (A major, B major) with the unit stride static: 128-bit
//           (align 4, extent multiple of 4) and scalar (align 1) versions. C: any strides.
// Bottleneck: shared-memory load instructions (scalar LDS: one per 4 FMAs per operand)
//           and the exposed barrier/store phase of each k-tile.
//
// Layouts (tid = threadIdx.x, BLK_M = BLK_N = 128, BLK_K = 8):
//   sA = (BLK_M,BLK_K):(1,BLK_M+4)            sB = (BLK_N,BLK_K):(1,BLK_N+4)
//   copy, 128-bit along m/n (A m-major / B n-major):
//       thr (BLK/4, 256/(BLK/4)) = (32,8):(1,32), val (4,1):(1,0)
//   copy, 128-bit along k (A k-major / B k-major):
//       thr (256/(BLK_K/4), BLK_K/4) = (128,2):(2,1), val (1,4):(0,1)
//   copy, scalar along m/n: thr (32,8):(1,32), val (1,1)
//   copy, scalar along k:   thr (32,8):(8,1),  val (1,1)
//   TiledMMA: UniversalFMA<float> atoms, atom layout (16,16,1):(1,16,0), no permutation
//       -> thread (tm,tn) = (tid%16, tid/16) owns C(tm + 16i, tn + 16j), i,j < 8.
#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>

using namespace cute;

// BLK_M, BLK_N, BLK_K, THREADS: emitted by the registry's config (ladder_cute.py, TileConfig)
static_assert(THREADS == 256, "the registry's block: the 16x16 thread layouts below");
#define SMEM_PAD 4
#define NUM_THREADS 256

// The layouts, by name: the layout dumps show what these return (cute_gemm/layouts/recipes.py),
// and tests/test_layouts.py prints them from this file with CuTe to check that. Function
// templates, so each is instantiated where the kernel calls it, as its expression inline was.
template <class = void>
CUTE_HOST_DEVICE constexpr auto smem_layout_a() {                               // (BLK_M,BLK_K)
  return make_layout(make_shape(Int<BLK_M>{}, Int<BLK_K>{}),
                     make_stride(_1{}, Int<BLK_M>{} + Int<SMEM_PAD>{}));
}
template <class = void>
CUTE_HOST_DEVICE constexpr auto smem_layout_b() {                               // (BLK_N,BLK_K)
  return make_layout(make_shape(Int<BLK_N>{}, Int<BLK_K>{}),
                     make_stride(_1{}, Int<BLK_N>{} + Int<SMEM_PAD>{}));
}
template <class = void>
CUTE_HOST_DEVICE constexpr auto tiled_mma() {                                   // 16x16x1 threads
  return make_tiled_mma(UniversalFMA<float, float, float, float>{}, Layout<Shape<_16, _16, _1>>{});
}

template <class StrideA, class StrideB, class CopyA, class CopyB>
__device__ void gemm_tiled(int M, int N, int K, float alpha,
                           const float* A, StrideA dA, const float* B, StrideB dB,
                           float beta, float* C, long long sCm, long long sCn,
                           CopyA copy_a, CopyB copy_b) {
  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<BLK_K>{};
  auto cta_tiler = make_shape(bM, bN, bK);                                      // (BLK_M,BLK_N,BLK_K)
  auto sA_layout = smem_layout_a();                                             // (BLK_M,BLK_K)
  auto sB_layout = smem_layout_b();                                             // (BLK_N,BLK_K)
  TiledMMA mma = tiled_mma();                                                   // 16x16x1 threads

  // Preconditions
  CUTE_STATIC_ASSERT_V(size(copy_a) == size(mma));                              // one thread set
  CUTE_STATIC_ASSERT_V(size(copy_b) == size(mma));
  CUTE_STATIC_ASSERT_V(size(mma) == Int<NUM_THREADS>{});                        // the launch block
  CUTE_STATIC_ASSERT_V(bM % size<0>(typename CopyA::Tiler_MN{}) == Int<0>{});  // BLK_M / CPY_M tile
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename CopyA::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K tile
  CUTE_STATIC_ASSERT_V(bN % size<0>(typename CopyB::Tiler_MN{}) == Int<0>{});  // BLK_N / CPY_N tile
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename CopyB::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K tile
  CUTE_STATIC_ASSERT_V(bM % Int<16>{} == Int<0>{});                             // BLK_M / THR_M
  CUTE_STATIC_ASSERT_V(bN % Int<16>{} == Int<0>{});                             // BLK_N / THR_N
  static_assert(BLK_M % 32 == 0 && BLK_N % 32 == 0, "(BLK+4) % 32 == 4: conflict-free k stores");

  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), dA);                    // (M,K)
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), dB);                    // (N,K)
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(sCm, sCn)); // (M,N)
  Tensor cA = make_identity_tensor(shape(mA));                                        // (M,K) -> (m,k)
  Tensor cB = make_identity_tensor(shape(mB));                                        // (N,K) -> (n,k)
  Tensor cC = make_identity_tensor(shape(mC));                                        // (M,N) -> (m,n)

  auto cta_coord = make_coord(blockIdx.x, blockIdx.y, _);                            // (m,n,:)
  Tensor gA  = local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gB  = local_tile(mB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)
  Tensor gC  = local_tile(mC, cta_tiler, cta_coord, Step<_1, _1, X>{});               // (BLK_M,BLK_N)
  Tensor gcA = local_tile(cA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gcB = local_tile(cB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)
  Tensor gcC = local_tile(cC, cta_tiler, cta_coord, Step<_1, _1, X>{});               // (BLK_M,BLK_N)

  __shared__ __align__(16) float smemA[cosize_v<decltype(sA_layout)>];
  __shared__ __align__(16) float smemB[cosize_v<decltype(sB_layout)>];
  Tensor sA = make_tensor(make_smem_ptr(smemA), sA_layout);                           // (BLK_M,BLK_K)
  Tensor sB = make_tensor(make_smem_ptr(smemB), sB_layout);                           // (BLK_N,BLK_K)

  // Global -> registers -> shared: the same TiledCopy partitions all three.
  ThrCopy thr_copy_a = copy_a.get_slice(threadIdx.x);
  Tensor tAgA = thr_copy_a.partition_S(gA);                                           // (CPY,CPY_M,CPY_K,k)
  Tensor tAcA = thr_copy_a.partition_S(gcA);                                          // (CPY,CPY_M,CPY_K,k)
  Tensor tAsA = thr_copy_a.partition_D(sA);                                           // (CPY,CPY_M,CPY_K)
  Tensor tArA = make_fragment_like(tAsA);                                             // (CPY,CPY_M,CPY_K)
  ThrCopy thr_copy_b = copy_b.get_slice(threadIdx.x);
  Tensor tBgB = thr_copy_b.partition_S(gB);                                           // (CPY,CPY_N,CPY_K,k)
  Tensor tBcB = thr_copy_b.partition_S(gcB);                                          // (CPY,CPY_N,CPY_K,k)
  Tensor tBsB = thr_copy_b.partition_D(sB);                                           // (CPY,CPY_N,CPY_K)
  Tensor tBrB = make_fragment_like(tBsB);                                             // (CPY,CPY_N,CPY_K)

  // Compute partitions.
  ThrMMA thr_mma = mma.get_slice(threadIdx.x);
  Tensor tCsA = thr_mma.partition_A(sA);                                              // (MMA,MMA_M,MMA_K)
  Tensor tCsB = thr_mma.partition_B(sB);                                              // (MMA,MMA_N,MMA_K)
  Tensor tCgC = thr_mma.partition_C(gC);                                              // (MMA,MMA_M,MMA_N)
  Tensor tCcC = thr_mma.partition_C(gcC);                                             // (MMA,MMA_M,MMA_N)
  Tensor tCrC = thr_mma.make_fragment_C(tCgC);                                        // (MMA,MMA_M,MMA_N)
  clear(tCrC);

  auto shapeA = shape(mA);
  auto shapeB = shape(mB);
  // Predicated vector loads into registers; vectors outside the matrix stay zero.
  auto load_tile = [&](int k_tile) {
    clear(tArA);
    clear(tBrB);
    CUTE_UNROLL
    for (int m = 0; m < size<1>(tArA); ++m)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tArA); ++k)
        if (elem_less(tAcA(0, m, k, k_tile), shapeA)) copy(copy_a, tAgA(_, m, k, k_tile), tArA(_, m, k));
    CUTE_UNROLL
    for (int n = 0; n < size<1>(tBrB); ++n)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tBrB); ++k)
        if (elem_less(tBcB(0, n, k, k_tile), shapeB)) copy(copy_b, tBgB(_, n, k, k_tile), tBrB(_, n, k));
  };

  const int k_tiles = size<2>(gA);
  load_tile(0);
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    __syncthreads();                     // all reads of the previous tile are done
    copy(tArA, tAsA);                    // registers -> smem (STS.128 or transposing STS)
    copy(tBrB, tBsB);
    __syncthreads();
    if (k_tile + 1 < k_tiles) load_tile(k_tile + 1);   // in flight during the FMAs below
    gemm(mma, tCsA, tCsB, tCrC);                       // (MMA,MMA_M,MMA_N) += sA * sB
  }

  cg::epilogue_axpby(tCrC, tCgC, tCcC, shape(mC), alpha, beta);
}

// Copy shapes for 256 threads; EXT is the tile extent along m or n (BLK_M or BLK_N).
template <int EXT>   // 128-bit vectors along m/n: (EXT/4, 256/(EXT/4)) threads, m/n fastest
using VecMN = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
                                       Layout<Shape<Int<EXT / 4>, Int<NUM_THREADS / (EXT / 4)>>>{},
                                       Layout<Shape<_4, _1>>{}));
using VecK = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},   // along k
                                      Layout<Shape<Int<NUM_THREADS / (BLK_K / 4)>, Int<BLK_K / 4>>,
                                             Stride<Int<BLK_K / 4>, _1>>{},
                                      Layout<Shape<_1, _4>>{}));
using SclMN = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<float>, float>{},      // 32 along m/n
                                       Layout<Shape<_32, Int<NUM_THREADS / 32>>>{}));
using SclK = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<float>, float>{},       // 8 along k
                                      Layout<Shape<Int<NUM_THREADS / 8>, _8>, Stride<_8, _1>>{}));

#define CG_TILED_ENTRY(NAME, DA, DB, CA, CB)                                             \
  CG_ENTRY(NAME, __launch_bounds__(NUM_THREADS), (CG_GEMM_PARAMS), {                     \
    gemm_tiled(M, N, K, alpha, A, DA, B, DB, beta, C, sCm, sCn, CA{}, CB{});             \
  })

// 128-bit global loads (align 4; the contiguous extents are multiples of 4)
CG_TILED_ENTRY(cute_tiled_ak_bn, CG_DA_k, CG_DB_n, VecK, VecMN<BLK_N>)
CG_TILED_ENTRY(cute_tiled_am_bn, CG_DA_m, CG_DB_n, VecMN<BLK_M>, VecMN<BLK_N>)
CG_TILED_ENTRY(cute_tiled_ak_bk, CG_DA_k, CG_DB_k, VecK, VecK)
CG_TILED_ENTRY(cute_tiled_am_bk, CG_DA_m, CG_DB_k, VecMN<BLK_M>, VecK)
// scalar global loads (any alignment, any extents)
CG_TILED_ENTRY(cute_tiled_am_bn_s, CG_DA_m, CG_DB_n, SclMN, SclMN)
CG_TILED_ENTRY(cute_tiled_ak_bk_s, CG_DA_k, CG_DB_k, SclK, SclK)
CG_TILED_ENTRY(cute_tiled_am_bk_s, CG_DA_m, CG_DB_k, SclMN, SclK)
CG_TILED_ENTRY(cute_tiled_ak_bn_s, CG_DA_k, CG_DB_n, SclK, SclMN)
