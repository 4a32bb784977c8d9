// cute_pipelined — CuTe: cp.async multistage smem pipeline + register double buffer.
//
// Adds over cute_tiled (c2):
//  * cp.async global -> shared (no register staging), STAGES >= 3 k-tiles in flight:
//    while k-tile t is computed, t+1 .. t+STAGES-1 are being copied. One barrier per
//    k-tile (cp_async_wait<STAGES-2> + __syncthreads before switching stages).
//    m-/n-major operands: 16-byte copies (SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>,
//    4 floats along m/n). k-major operands: 4-byte copies (..._CACHEALWAYS_ZFILL<uint32_t>,
//    8 threads along k = 32-byte rows): cp.async cannot transpose, and the compute side
//    wants m/n contiguous in smem; a warp still reads whole 32-byte sectors.
//    Out-of-range vectors/elements are zero-filled (cp.async src-size 0): no smem clear.
//  * TiledMMA with a permutation so each thread owns 4 consecutive m (and n) per group:
//    its fragments load from smem as LDS.128 (2 per operand per k for 8x8 outputs),
//    and a hierarchical atom layout so a warp is a WARP_M x (32/WARP_M) patch of threads
//    (4 x 8: one warp LDS.128 reads 64 B of A and 128 B of B, broadcast to the rest).
//  * Shared -> register double buffer: k-block kb+1 is loaded while kb is computed.
// Geometry: BLK_M x BLK_N x BLK_K, THR_M x THR_N threads, STAGES, all from the registry;
//           each thread owns (BLK_M/THR_M) x (BLK_N/THR_N) accumulators (8x8 at
//           128x128 / 16x16 threads), in 4x4 blocks 4*THR_M apart along m.
// Residues: identity tensors through the same TiledCopy/TiledMMA partitions; elem_less
//           against (M,K) / (N,K) decides each copy (zero-fill otherwise) — every k-tile,
//           so a partial last k-tile adds exact zeros. 16-byte entry points are chosen
//           only when the contiguous extent is a multiple of 4 (Variant.extent_align):
//           a vector is then entirely in or out. Predicated scalar epilogue (C any strides).
// Bottleneck: FFMA issue (64 FFMA per 4 LDS.128 per thread per k); the epilogue's
//           scalar stores and the per-tile barrier are the visible overheads.
//
// Layouts (tid = threadIdx.x; P = SMEM_PAD = 4; defaults 128x128x8, 16x16 threads):
//   sA = (BLK_M,BLK_K,STAGES):(1,BLK_M+P,(BLK_M+P)*BLK_K)   sB likewise with BLK_N
//        (m/n contiguous; k columns padded by 4 words: the 4-byte k-major stores of a
//        warp, 4 rows x 8 k, land in banks m + 4k = 32 distinct; columns stay 16-B aligned)
//   copy 16 B along m/n: thr (E/4, T/(E/4)):(1,E/4) with E = BLK_M or BLK_N, capped at
//        T threads along m/n, val (4,1)        [128x128, 256 thr: (32,8), val (4,1)]
//   copy 4 B along m/n:  thr (32, T/32):(1,32), val (1,1)
//   copy 4 B along k:    thr (T/8, 8):(8,1),    val (1,1)
//   TiledMMA: UniversalFMA<float> atoms,
//     atom layout ((WARP_M, THR_M/WARP_M), (32/WARP_M, THR_N/(32/WARP_M)), 1)
//               : ((1, 32), (WARP_M, 32*THR_M/WARP_M), 0)         thread -> (tm, tn)
//                 [default ((4,4),(8,2),1):((1,32),(4,128),0)]
//     permutation M: (THR_M, 4, BLK_M/(4*THR_M)):(4, 1, 4*THR_M)  [(16,4,2):(4,1,64)]
//     permutation N: (THR_N, 4, BLK_N/(4*THR_N)):(4, 1, 4*THR_N)
//     -> thread (tm,tn) owns C(4*tm + i0 + 4*THR_M*i1, 4*tn + j0 + 4*THR_N*j1), i0,j0 < 4.
#include <cute/tensor.hpp>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>

using namespace cute;

#ifndef BLK_M
#define BLK_M 128
#endif
#ifndef BLK_N
#define BLK_N 128
#endif
#ifndef BLK_K
#define BLK_K 8
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef THR_M
#define THR_M 16
#endif
#ifndef THR_N
#define THR_N 16
#endif
#ifndef WARP_M
#define WARP_M 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 4
#endif

constexpr int kThreads = THR_M * THR_N;
constexpr int kWarpN = 32 / WARP_M;

using MmaAtomLayout = Layout<Shape <Shape <Int<WARP_M>, Int<THR_M / WARP_M>>,
                                    Shape <Int<kWarpN>, Int<THR_N / kWarpN>>, _1>,
                             Stride<Stride<_1, _32>,
                                    Stride<Int<WARP_M>, Int<32 * (THR_M / WARP_M)>>, _0>>;
using PermM = Layout<Shape<Int<THR_M>, _4, Int<BLK_M / (4 * THR_M)>>, Stride<_4, _1, Int<4 * THR_M>>>;
using PermN = Layout<Shape<Int<THR_N>, _4, Int<BLK_N / (4 * THR_N)>>, Stride<_4, _1, Int<4 * THR_N>>>;
using TiledMmaT = decltype(make_tiled_mma(UniversalFMA<float, float, float, float>{},
                                          MmaAtomLayout{}, Tile<PermM, PermN, Underscore>{}));

template <class StrideA, class StrideB, class CopyA, class CopyB>
__device__ void gemm_pipelined(int M, int N, int K, float alpha,
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
  TiledMmaT mma;

  // Preconditions
  CUTE_STATIC_ASSERT_V(size(copy_a) == size(mma));                              // one thread set
  CUTE_STATIC_ASSERT_V(size(copy_b) == size(mma));
  CUTE_STATIC_ASSERT_V(size(mma) == Int<kThreads>{});                           // the launch block
  CUTE_STATIC_ASSERT_V(tile_size<0>(mma) == bM);                                // MMA tile = CTA tile
  CUTE_STATIC_ASSERT_V(tile_size<1>(mma) == bN);
  static_assert(BLK_M % (4 * THR_M) == 0 && BLK_N % (4 * THR_N) == 0, "4x4 blocks per thread");
  static_assert(32 % WARP_M == 0 && THR_M % WARP_M == 0 && THR_N % kWarpN == 0, "warp patch");
  CUTE_STATIC_ASSERT_V(bM % size<0>(typename CopyA::Tiler_MN{}) == Int<0>{});  // BLK_M / CPY_M tile
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename CopyA::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K tile
  CUTE_STATIC_ASSERT_V(bN % size<0>(typename CopyB::Tiler_MN{}) == Int<0>{});  // BLK_N / CPY_N tile
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename CopyB::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K tile
  static_assert(STAGES >= 3, "multistage: at least 2 k-tiles in flight during compute");
  static_assert(BLK_K % 2 == 0, "register double buffer alternates slots k_block & 1");
  static_assert(SMEM_PAD % 4 == 0, "16-byte aligned smem columns (cp.async 16 B, LDS.128)");
  static_assert(BLK_M % 32 == 0 && BLK_N % 32 == 0 && SMEM_PAD == 4,
                "(BLK + 4) % 32 == 4: conflict-free 4-byte k-major stores");

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

  // Dynamic smem (the registry's FixedSmem = 4 * STAGES * BLK_K * (BLK_M + BLK_N + 2 * PAD)).
  extern __shared__ __align__(16) float smem_buf[];
  constexpr int kStageFloatsA = (BLK_M + SMEM_PAD) * BLK_K * STAGES;
  Tensor sA = make_tensor(make_smem_ptr(smem_buf), sA_layout);                        // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smem_buf + kStageFloatsA), sB_layout);        // (BLK_N,BLK_K,PIPE)

  // Global -> shared copy partitions (cp.async), with their coordinates.
  ThrCopy thr_copy_a = copy_a.get_slice(threadIdx.x);
  Tensor tAgA = thr_copy_a.partition_S(gA);                                           // (CPY,CPY_M,CPY_K,k)
  Tensor tAcA = thr_copy_a.partition_S(gcA);                                          // (CPY,CPY_M,CPY_K,k)
  Tensor tAsA = thr_copy_a.partition_D(sA);                                           // (CPY,CPY_M,CPY_K,PIPE)
  ThrCopy thr_copy_b = copy_b.get_slice(threadIdx.x);
  Tensor tBgB = thr_copy_b.partition_S(gB);                                           // (CPY,CPY_N,CPY_K,k)
  Tensor tBcB = thr_copy_b.partition_S(gcB);                                          // (CPY,CPY_N,CPY_K,k)
  Tensor tBsB = thr_copy_b.partition_D(sB);                                           // (CPY,CPY_N,CPY_K,PIPE)

  // Compute partitions: smem fragments, double-buffered registers, accumulators.
  ThrMMA thr_mma = mma.get_slice(threadIdx.x);
  Tensor tCsA = thr_mma.partition_A(sA);                                              // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tCsB = thr_mma.partition_B(sB);                                              // (MMA,MMA_N,MMA_K,PIPE)
  Tensor tCrA = make_tensor<float>(make_shape(shape<0>(tCsA), shape<1>(tCsA), _2{})); // (MMA,MMA_M,2)
  Tensor tCrB = make_tensor<float>(make_shape(shape<0>(tCsB), shape<1>(tCsB), _2{})); // (MMA,MMA_N,2)
  Tensor tCgC = thr_mma.partition_C(gC);                                              // (MMA,MMA_M,MMA_N)
  Tensor tCcC = thr_mma.partition_C(gcC);                                             // (MMA,MMA_M,MMA_N)
  Tensor tCrC = thr_mma.make_fragment_C(tCgC);                                        // (MMA,MMA_M,MMA_N)
  clear(tCrC);

  CUTE_STATIC_ASSERT_V(size<1>(tCgC) == size<1>(tCrA));                              // MMA_M
  CUTE_STATIC_ASSERT_V(size<2>(tCgC) == size<1>(tCrB));                              // MMA_N
  CUTE_STATIC_ASSERT_V(size<2>(tCsA) == bK);                                         // one k per k-block

  auto shapeA = shape(mA);
  auto shapeB = shape(mB);
  // Issue one k-tile's cp.async: a copy whose first element lies outside the matrix is
  // zero-filled instead of read.
  auto load_tile = [&](int k_tile, int stage) {
    CUTE_UNROLL
    for (int m = 0; m < size<1>(tAsA); ++m)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tAsA); ++k)
        copy(copy_a.with(elem_less(tAcA(0, m, k, k_tile), shapeA)),
             tAgA(_, m, k, k_tile), tAsA(_, m, k, stage));
    CUTE_UNROLL
    for (int n = 0; n < size<1>(tBsB); ++n)
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tBsB); ++k)
        copy(copy_b.with(elem_less(tBcB(0, n, k, k_tile), shapeB)),
             tBgB(_, n, k, k_tile), tBsB(_, n, k, stage));
  };

  const int k_tiles = size<2>(gA);
  constexpr int K_BLOCK_MAX = BLK_K;

  // Prologue: STAGES-1 k-tiles in flight (one commit group each, empty past the end so
  // that group g is always k-tile g).
  CUTE_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_tile(s, s);
    cp_async_fence();
  }
  int read_stage = 0;                 // smem stage holding k-tile k_tile
  int write_stage = STAGES - 1;       // smem stage receiving k-tile k_tile_next
  int k_tile_next = STAGES - 1;

  cp_async_wait<STAGES - 2>();        // k-tile 0 has landed (for this thread) ...
  __syncthreads();                    // ... and for every thread
  copy(tCsA(_, _, 0, read_stage), tCrA(_, _, 0));                                     // LDS.128
  copy(tCsB(_, _, 0, read_stage), tCrB(_, _, 0));

  CUTE_NO_UNROLL
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    CUTE_UNROLL
    for (int k_block = 0; k_block < K_BLOCK_MAX; ++k_block) {
      if (k_block == K_BLOCK_MAX - 1) {
        // k-tile+1 complete and visible; every thread is past its reads of the stage
        // the next iteration's cp.async will overwrite (last read at k_block - 1).
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        read_stage = (read_stage + 1 == STAGES) ? 0 : read_stage + 1;
      }
      // smem -> registers for the next k-block (k_block 0 of the next tile at the end)
      const int k_next = (k_block + 1) % K_BLOCK_MAX;
      copy(tCsA(_, _, k_next, read_stage), tCrA(_, _, (k_block + 1) & 1));
      copy(tCsB(_, _, k_next, read_stage), tCrB(_, _, (k_block + 1) & 1));
      if (k_block == 0) {
        // Refill the stage read during the previous k-tile (freed by its last barrier).
        if (k_tile_next < k_tiles) load_tile(k_tile_next, write_stage);
        cp_async_fence();
        ++k_tile_next;
        write_stage = (write_stage + 1 == STAGES) ? 0 : write_stage + 1;
      }
      gemm(mma, tCrA(_, _, k_block & 1), tCrB(_, _, k_block & 1), tCrC);              // 8x8 FFMA
    }
  }

  cg::epilogue_axpby(tCrC, tCgC, tCcC, shape(mC), alpha, beta);
}

// Copy shapes; EXT is the tile extent along m or n (BLK_M or BLK_N).
constexpr int cmin(int a, int b) { return a < b ? a : b; }
template <int EXT>   // 16-byte cp.async along m/n, L2 only (.cg): the CTA reads it once
using CpVecMN = decltype(make_tiled_copy(
    Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>, float>{},
    Layout<Shape<Int<cmin(EXT / 4, kThreads)>, Int<kThreads / cmin(EXT / 4, kThreads)>>>{},
    Layout<Shape<_4, _1>>{}));
using CpSclMN = decltype(make_tiled_copy(                      // 4-byte, 32 threads along m/n
    Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
    Layout<Shape<_32, Int<kThreads / 32>>>{}));
using CpSclK = decltype(make_tiled_copy(                       // 4-byte, 8 threads along k
    Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
    Layout<Shape<Int<kThreads / 8>, _8>, Stride<_8, _1>>{}));

#define CG_PIPE_ENTRY(NAME, DA, DB, CA, CB)                                              \
  extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS) NAME(CG_GEMM_PARAMS) { \
    gemm_pipelined(M, N, K, alpha, A, DA, B, DB, beta, C, sCm, sCn, CA{}, CB{});         \
  }

// 16-byte copies for every m-/n-major operand (align 4 and extent % 4 == 0 for those)
CG_PIPE_ENTRY(cute_pipelined_am_bn, CG_DA_m, CG_DB_n, CpVecMN<BLK_M>, CpVecMN<BLK_N>)
CG_PIPE_ENTRY(cute_pipelined_am_bk, CG_DA_m, CG_DB_k, CpVecMN<BLK_M>, CpSclK)
CG_PIPE_ENTRY(cute_pipelined_ak_bn, CG_DA_k, CG_DB_n, CpSclK, CpVecMN<BLK_N>)
// 4-byte copies only (any alignment, any extents); ak_bk has no 16-byte form
CG_PIPE_ENTRY(cute_pipelined_ak_bk, CG_DA_k, CG_DB_k, CpSclK, CpSclK)
CG_PIPE_ENTRY(cute_pipelined_am_bn_s, CG_DA_m, CG_DB_n, CpSclMN, CpSclMN)
CG_PIPE_ENTRY(cute_pipelined_am_bk_s, CG_DA_m, CG_DB_k, CpSclMN, CpSclK)
CG_PIPE_ENTRY(cute_pipelined_ak_bn_s, CG_DA_k, CG_DB_n, CpSclK, CpSclMN)
