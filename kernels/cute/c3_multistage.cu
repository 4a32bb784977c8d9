// cute_multistage — CuTe: a multistage cp.async pipeline (the idea of CuTe's sgemm_sm80).
//
// Adds over cute_tiled (c2):
//  * Global -> shared by cp.async (SM80_CP_ASYNC_CACHEALWAYS_ZFILL): the copy engine writes
//    shared memory itself, so no registers hold a k-tile on its way (c2 staged the next
//    k-tile in registers) and nothing waits for a load until its data is needed.
//  * STAGES k-tiles in a ring of shared-memory stages. The prologue puts STAGES-1 k-tiles in
//    flight, one commit group each. Then per k-tile t: wait until at most STAGES-2 groups are
//    pending (k-tile t has landed for this thread), one barrier (it has for every thread,
//    and every thread is done with k-tile t-1), refill the stage t-1 used with k-tile
//    t+STAGES-1, compute k-tile t from its stage. One barrier per k-tile (c2: two), and the
//    loads of STAGES-1 k-tiles overlap the FMAs.
//  * Every copy is predicated, and a copy predicated off (ZFILL) writes zeros to shared
//    memory without reading global memory: the residue tiles of M, N and K need no other
//    code, and a partial last k-tile adds exact zeros.
// Geometry: BLK_M x BLK_N x BLK_K = 128 x 128 x 8, STAGES = 4 (the registry's config), 256 threads, and
//           c2's TiledMMA: 16x16 threads, 8x8 accumulators per thread, fragments read from
//           shared memory by the FMAs.
// Strides:  cp.async cannot transpose and the smem tiles stay m-/n-major (what the TiledMMA
//           reads): an m-/n-major operand goes in 16-byte vectors (align 4, extent multiple
//           of 4), a k-major one element by element along k. _s entries: 4-byte copies only
//           (any alignment). C: any strides.
// Bottleneck: shared-memory loads (scalar LDS, one per 4 FMAs per operand, as in c2); the
//           tuned kernel (c3_pipelined) reads LDS.128 fragments into registers instead.
//
// Layouts (tid = threadIdx.x, BLK_M = BLK_N = 128, BLK_K = 8, STAGES = 4):
//   sA = (BLK_M,BLK_K,STAGES):(1,BLK_M+4,(BLK_M+4)*BLK_K)       sB likewise with BLK_N
//        (k columns padded by 4 words: 4-byte stores along k from a warp, 4 rows x 8 k,
//        hit banks m + 4k, all 32; columns stay 16-byte aligned for the 16-byte cp.async)
//   copy, 16 B along m/n:  thr (BLK/4, 256/(BLK/4)) = (32,8):(1,32), val (4,1)
//   copy, 4 B along m/n:   thr (32,8):(1,32), val (1,1)
//   copy, 4 B along k:     thr (32,8):(8,1),  val (1,1)
//   TiledMMA: UniversalFMA<float> atoms, (16,16,1):(1,16,0) -> thread (tid%16, tid/16) owns
//       C(tm + 16i, tn + 16j), i,j < 8 (as c2).
#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>

using namespace cute;

// BLK_M, BLK_N, BLK_K, STAGES, THREADS: emitted by the registry's config (ladder_cute.py, TileConfig)
static_assert(THREADS == 256, "the registry's block: the 16x16 thread layouts below");
#define SMEM_PAD 4
#define NUM_THREADS 256

template <class StrideA, class StrideB, class CopyA, class CopyB>
__device__ void gemm_multistage(int M, int N, int K, float alpha,
                                const float* A, StrideA dA, const float* B, StrideB dB,
                                float beta, float* C, long long sCm, long long sCn,
                                CopyA copy_a, CopyB copy_b) {
  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<BLK_K>{};
  auto bP = Int<STAGES>{};
  auto cta_tiler = make_shape(bM, bN, bK);                                      // (BLK_M,BLK_N,BLK_K)
  auto sA_layout = make_layout(make_shape(bM, bK, bP),
                               make_stride(_1{}, bM + Int<SMEM_PAD>{}, (bM + Int<SMEM_PAD>{}) * bK));  // (BLK_M,BLK_K,PIPE)
  auto sB_layout = make_layout(make_shape(bN, bK, bP),
                               make_stride(_1{}, bN + Int<SMEM_PAD>{}, (bN + Int<SMEM_PAD>{}) * bK));  // (BLK_N,BLK_K,PIPE)
  TiledMMA mma = make_tiled_mma(UniversalFMA<float, float, float, float>{},
                                Layout<Shape<_16, _16, _1>>{});                 // 16x16x1 threads

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
  static_assert(STAGES >= 2, "a k-tile in flight while one is computed");
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
  Tensor sA = make_tensor(make_smem_ptr(smemA), sA_layout);                           // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), sB_layout);                           // (BLK_N,BLK_K,PIPE)

  // Global -> shared, straight: the same TiledCopy partitions the source, its coordinates
  // and every stage of the destination.
  ThrCopy thr_copy_a = copy_a.get_slice(threadIdx.x);
  Tensor tAgA = thr_copy_a.partition_S(gA);                                           // (CPY,CPY_M,CPY_K,k)
  Tensor tAcA = thr_copy_a.partition_S(gcA);                                          // (CPY,CPY_M,CPY_K,k)
  Tensor tAsA = thr_copy_a.partition_D(sA);                                           // (CPY,CPY_M,CPY_K,PIPE)
  ThrCopy thr_copy_b = copy_b.get_slice(threadIdx.x);
  Tensor tBgB = thr_copy_b.partition_S(gB);                                           // (CPY,CPY_N,CPY_K,k)
  Tensor tBcB = thr_copy_b.partition_S(gcB);                                          // (CPY,CPY_N,CPY_K,k)
  Tensor tBsB = thr_copy_b.partition_D(sB);                                           // (CPY,CPY_N,CPY_K,PIPE)

  // Compute partitions, every stage of them.
  ThrMMA thr_mma = mma.get_slice(threadIdx.x);
  Tensor tCsA = thr_mma.partition_A(sA);                                              // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tCsB = thr_mma.partition_B(sB);                                              // (MMA,MMA_N,MMA_K,PIPE)
  Tensor tCgC = thr_mma.partition_C(gC);                                              // (MMA,MMA_M,MMA_N)
  Tensor tCcC = thr_mma.partition_C(gcC);                                             // (MMA,MMA_M,MMA_N)
  Tensor tCrC = thr_mma.make_fragment_C(tCgC);                                        // (MMA,MMA_M,MMA_N)
  clear(tCrC);

  auto shapeA = shape(mA);
  auto shapeB = shape(mB);
  // k-tile k_tile into stage `stage`, asynchronously: a copy whose first element lies outside
  // the matrix (exact for vectors: the extent is a multiple of 4) zero-fills instead.
  auto issue = [&](int k_tile, int stage) {
    CUTE_UNROLL
    for (int m = 0; m < size<1>(tAsA); ++m)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tAsA); ++k)
        copy(copy_a.with(elem_less(tAcA(0, m, k, k_tile), shapeA)), tAgA(_, m, k, k_tile),
             tAsA(_, m, k, stage));
    CUTE_UNROLL
    for (int n = 0; n < size<1>(tBsB); ++n)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tBsB); ++k)
        copy(copy_b.with(elem_less(tBcB(0, n, k, k_tile), shapeB)), tBgB(_, n, k, k_tile),
             tBsB(_, n, k, stage));
  };

  const int k_tiles = size<2>(gA);
  // Prologue: k-tiles 0 .. STAGES-2 in flight, one commit group each (empty past the end, so
  // that group g is always k-tile g).
  CUTE_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) issue(s, s);
    cp_async_fence();
  }
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    cp_async_wait<STAGES - 2>();   // k-tile k_tile has landed for this thread ...
    __syncthreads();               // ... and for all; all are done computing k-tile k_tile-1
    const int next = k_tile + STAGES - 1;
    if (next < k_tiles) issue(next, next % STAGES);   // into the stage k_tile-1 used
    cp_async_fence();
    const int stage = k_tile % STAGES;
    gemm(mma, tCsA(_, _, _, stage), tCsB(_, _, _, stage), tCrC);   // (MMA,MMA_M,MMA_N) += sA * sB
  }

  cg::epilogue_axpby(tCrC, tCgC, tCcC, shape(mC), alpha, beta);
}

// Copy shapes for 256 threads; EXT is the tile extent along m or n (BLK_M or BLK_N).
template <int EXT>   // 16-byte vectors along m/n: (EXT/4, 256/(EXT/4)) threads, m/n fastest
using CpVecMN = decltype(make_tiled_copy(
    Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint128_t>, float>{},
    Layout<Shape<Int<EXT / 4>, Int<NUM_THREADS / (EXT / 4)>>>{}, Layout<Shape<_4, _1>>{}));
using CpSclMN = decltype(make_tiled_copy(                     // 4-byte, 32 threads along m/n
    Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
    Layout<Shape<_32, Int<NUM_THREADS / 32>>>{}));
using CpSclK = decltype(make_tiled_copy(                      // 4-byte, 8 threads along k
    Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
    Layout<Shape<Int<NUM_THREADS / 8>, _8>, Stride<_8, _1>>{}));

#define CG_MULTISTAGE_ENTRY(NAME, DA, DB, CA, CB)                                        \
  CG_ENTRY(NAME, __launch_bounds__(NUM_THREADS), (CG_GEMM_PARAMS), {                     \
    gemm_multistage(M, N, K, alpha, A, DA, B, DB, beta, C, sCm, sCn, CA{}, CB{});        \
  })

// 16-byte copies of the m-/n-major operands (align 4 and extents multiples of 4 for those)
CG_MULTISTAGE_ENTRY(cute_multistage_am_bn, CG_DA_m, CG_DB_n, CpVecMN<BLK_M>, CpVecMN<BLK_N>)
CG_MULTISTAGE_ENTRY(cute_multistage_am_bk, CG_DA_m, CG_DB_k, CpVecMN<BLK_M>, CpSclK)
CG_MULTISTAGE_ENTRY(cute_multistage_ak_bn, CG_DA_k, CG_DB_n, CpSclK, CpVecMN<BLK_N>)
// 4-byte copies only (any alignment, any extents)
CG_MULTISTAGE_ENTRY(cute_multistage_ak_bk, CG_DA_k, CG_DB_k, CpSclK, CpSclK)
CG_MULTISTAGE_ENTRY(cute_multistage_am_bn_s, CG_DA_m, CG_DB_n, CpSclMN, CpSclMN)
CG_MULTISTAGE_ENTRY(cute_multistage_am_bk_s, CG_DA_m, CG_DB_k, CpSclMN, CpSclK)
CG_MULTISTAGE_ENTRY(cute_multistage_ak_bn_s, CG_DA_k, CG_DB_n, CpSclK, CpSclMN)
