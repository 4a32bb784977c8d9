// cute_wgmma — CuTe on Hopper tensor cores: wgmma from swizzled shared memory, fed by TMA
// (the idea of CuTe's tutorial hopper/wgmma_tma_sm90.cu). sm_90a only.
//
// Adds over the SIMT ladder (c3_multistage):
//  * The math is GMMA: one warpgroup (128 threads, 4 warps) issues wgmma.mma_async, each
//    instruction a 64 x BLK_N x (32 bytes of k) product whose A and B come straight from
//    shared memory through 64-bit matrix descriptors (the SS form); fp32 accumulators live in
//    registers, BLK_M * BLK_N / 128 per thread. bf16 and fp16 read either major (the
//    descriptor says which); tf32 needs both operands k-major.
//  * Operands are loaded by the TMA unit: one thread issues a bulk tensor copy per stage and
//    operand (sm90_operand.cuh: the box, the GMMA smem layout it lands in), and the stage's
//    mbarrier counts its bytes. No thread computes an address or a predicate for a load:
//    boxes past the edge of A or B arrive zero-filled, so M, N and K residues add exact zeros.
//  * A ring of STAGES stages with two barriers each: `full` (TMA bytes landed: the warpgroup
//    may read) and `empty` (all 128 threads' wgmma of it retired: the producer may refill).
//    Thread 0 is both a consumer and the producer: after its own k-tile it waits on `empty`
//    and refills. Nothing else overlaps: every k-tile's wgmma batch is waited for before the
//    next is issued (warpgroup_wait<0>), so the tensor cores idle while a batch drains. The
//    next stage (c6_wgmma_ws) gives the loads their own warp, keeps one batch in flight and
//    uses two consumer warpgroups.
// Geometry: BLK_M x BLK_N x BLK_K = 128 x 128 x (128 bytes of k: 64 bf16/fp16, 32 tf32),
//           STAGES = 4 (the registry's config, ladder_hopper.py); 128 threads; the one-atom TiledMMA (64 x BLK_N x k16
//           or k8) covers BLK_M in BLK_M / 64 steps, so a thread holds 2 x 64 accumulators.
// Residues: TMA zero-fills loads; the epilogue predicates stores on M and N.
// Strides:  A, B: the variant's majors, pointers and leading strides 16-byte aligned (TMA);
//           C: any strides (sm90_epilogue.cuh).
// Bottleneck: the serialized mainloop above (issue, drain, refill) and the 128-thread CTA:
//           one warpgroup per SM cannot keep the tensor cores busy between batches.
//
// Layouts (one stage, 16-bit, BLK_K = 64):
//   sA k-major  = Sw<3,4,3> o (8,64):(64,1) tiled (BLK_M,BLK_K): row m at 128 m bytes
//   sA m-major  = Sw<3,4,3> o (64,8):(1,64) tiled k first: slab s (64 m) at s * 64 * BLK_K,
//                 row k at 128 k bytes within it          (B: likewise with n)
//   TMA boxes   = k-major (BLK_K, BLK_M) of the (K, M) tensor, one per stage;
//                 m-major (64, BLK_K) of the (M, K) tensor, BLK_M / 64 per stage
//   accumulator = per 64-row atom, thread t (warp w, lane l) owns rows 16w + l/4 and +8,
//                 columns 8j + 2(l%4) and +1 (CuTe's partition_C says so exactly)
#include <cute_gemm/cute.cuh>
#include <cute/arch/mma_sm90.hpp>
#include <cute_gemm/common.cuh>
#include <cute_gemm/sm90_tma.cuh>
#include <cute_gemm/sm90_operand.cuh>
#include <cute_gemm/sm90_epilogue.cuh>

using namespace cute;

// BLK_M, BLK_N, BLK_K (64: 128 bytes of 16-bit k), STAGES, THREADS: emitted by the registry's
// config (ladder_hopper.py, _wgmma and TileConfig)
constexpr int kThreads = 128;   // one warpgroup
static_assert(THREADS == kThreads, "the registry's block");

template <class TAB, class TC, GMMA::Major MajA, GMMA::Major MajB>
__device__ void gemm_wgmma(CG_GEMM_PARAMS_T(TAB, TC), const TmaDescriptor* tma_a,
                           const TmaDescriptor* tma_b) {
  using T = cg::sm90::mma_t<TAB>;
  constexpr int kBlkK = BLK_K * 2 / int(sizeof(T));   // 128 bytes of k
  using OpA = cg::sm90::OperandTile<TAB, MajA, BLK_M, kBlkK, STAGES>;
  using OpB = cg::sm90::OperandTile<TAB, MajB, BLK_N, kBlkK, STAGES>;
  TiledMMA mma = make_tiled_mma(
      GMMA::ss_op_selector<T, T, float, Shape<_64, Int<BLK_N>, Int<kBlkK>>, MajA, MajB>());

  // Preconditions
  static_assert(BLK_M % 64 == 0, "BLK_M / 64 wgmma atoms along m");
  static_assert(BLK_N % 8 == 0 && BLK_N <= 256, "a wgmma's N: a multiple of 8, at most 256");
  static_assert(STAGES >= 2, "a stage loading while one is computed");
  CUTE_STATIC_ASSERT_V(size(mma) == Int<kThreads>{});                  // one warpgroup
  CUTE_STATIC_ASSERT_V(Int<kBlkK>{} % size<2>(typename decltype(mma)::AtomShape_MNK{}) == _0{});  // BLK_K / MMA_K

  extern __shared__ __align__(1024) unsigned char smem[];   // stages keep 1024-byte alignment
  if (cg::sm90::smem_addr(smem) % 1024 != 0) __trap();     // the swizzle atoms' alignment
  T* smemA = reinterpret_cast<T*>(smem);
  T* smemB = smemA + cosize_v<typename OpA::Layout>;
  uint64_t* full  = reinterpret_cast<uint64_t*>(smemB + cosize_v<typename OpB::Layout>);
  uint64_t* empty = full + STAGES;
  Tensor sA = make_tensor(make_smem_ptr(smemA), typename OpA::Layout{});   // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), typename OpB::Layout{});   // (BLK_N,BLK_K,PIPE)

  ThrMMA thr_mma = mma.get_slice(threadIdx.x);
  Tensor tCsA = thr_mma.partition_A(sA);                                   // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tCsB = thr_mma.partition_B(sB);                                   // (MMA,MMA_N,MMA_K,PIPE)
  Tensor tCrA = thr_mma.make_fragment_A(tCsA);                             // descriptors, same shape
  Tensor tCrB = thr_mma.make_fragment_B(tCsB);
  Tensor tCrC = partition_fragment_C(mma, Shape<Int<BLK_M>, Int<BLK_N>>{}); // (MMA,MMA_M,MMA_N)
  clear(tCrC);

  const int m0 = blockIdx.x * BLK_M, n0 = blockIdx.y * BLK_N;
  const int k_tiles = cg::ceil_div(K, kBlkK);
  const bool producer = threadIdx.x == 0;
  constexpr uint32_t kTxBytes = OpA::kStageBytes + OpB::kStageBytes;
  auto refill = [&](int stage, int k_tile) {
    cg::sm90::mbar_arrive_expect_tx(&full[stage], kTxBytes);
    OpA::load(tma_a, &full[stage], smemA + stage * OpA::kStageElems, m0, k_tile);
    OpB::load(tma_b, &full[stage], smemB + stage * OpB::kStageElems, n0, k_tile);
  };

  if (producer) {
    cg::sm90::tma_prefetch_map(tma_a);
    cg::sm90::tma_prefetch_map(tma_b);
    for (int s = 0; s < STAGES; ++s) {
      cg::sm90::mbar_init(&full[s], 1);          // the producer's arrive_expect_tx
      cg::sm90::mbar_init(&empty[s], kThreads);  // every consumer thread
    }
    cg::sm90::mbar_fence_init();
  }
  __syncthreads();
  if (producer)
    for (int s = 0; s < STAGES && s < k_tiles; ++s) refill(s, s);

  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    const int stage = k_tile % STAGES;
    const uint32_t phase = (k_tile / STAGES) & 1;
    cg::sm90::mbar_wait(&full[stage], phase);                   // its bytes have landed
    warpgroup_fence_operand(tCrC);
    warpgroup_arrive();
    gemm(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), tCrC);  // (MMA,MMA_M,MMA_N) += sA * sB
    warpgroup_commit_batch();
    warpgroup_wait<0>();                                        // this thread's wgmma retired
    warpgroup_fence_operand(tCrC);
    cg::sm90::mbar_arrive(&empty[stage]);
    if (producer && k_tile + STAGES < k_tiles) {
      cg::sm90::mbar_wait(&empty[stage], phase);                // everyone's has
      refill(stage, k_tile + STAGES);
    }
  }

  cg::sm90::store_axpby<BLK_M, BLK_N>(mma, threadIdx.x, tCrC, C, sCm, sCn, M, N, m0, n0,
                                      alpha, beta);
}

// Entry points: cute_wgmma_<precision>_<out>_a<major>_b<major>; TAB is what A and B hold,
// TC what C holds. B is seen as (N,K) by GMMA: an n-major B is MN-major.
#define CG_WGMMA_ENTRY(NAME, TAB, TC, MA, MB)                                               \
  CG_ENTRY(NAME, __launch_bounds__(kThreads, 1),                                            \
           (CG_GEMM_PARAMS_T(TAB, TC), CG_TMA_PARAMS), {                                    \
    gemm_wgmma<TAB, TC, GMMA::Major::MA, GMMA::Major::MB>(                                  \
        M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, &tma_a, &tma_b);       \
  })
#define CG_WGMMA_16BIT(PREC, TAB, OUT, TC)                                                  \
  CG_WGMMA_ENTRY(cute_wgmma_##PREC##_##OUT##_ak_bk, TAB, TC, K, K)                          \
  CG_WGMMA_ENTRY(cute_wgmma_##PREC##_##OUT##_ak_bn, TAB, TC, K, MN)                         \
  CG_WGMMA_ENTRY(cute_wgmma_##PREC##_##OUT##_am_bk, TAB, TC, MN, K)                         \
  CG_WGMMA_ENTRY(cute_wgmma_##PREC##_##OUT##_am_bn, TAB, TC, MN, MN)

CG_WGMMA_16BIT(bf16, cute::bfloat16_t, f32, float)
CG_WGMMA_16BIT(bf16, cute::bfloat16_t, bf16, cute::bfloat16_t)
CG_WGMMA_16BIT(fp16, cute::half_t, f32, float)
CG_WGMMA_16BIT(fp16, cute::half_t, fp16, cute::half_t)
CG_WGMMA_ENTRY(cute_wgmma_tf32_f32_ak_bk, float, float, K, K)
