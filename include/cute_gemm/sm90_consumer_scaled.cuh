// The consumer warpgroups of 8-bit operands (WgmmaWsConfig.only "fp8", promote 1; sm_90a,
// kernels/cute/c6_wgmma_ws.cu): every k-tile (128 k) summed by the tensor cores alone, then
// added into a float32 register sum, scaled by the k-tile's block scales (DeepGEMM's
// promotion, DeepSeek-V3 §3.3.2).
//
// Why: FP8 wgmma keeps its sum in a reduced-precision adder (about 14 bits), so its error
// would grow with K; promoted every 128 k, each window's error stays that of 128 products
// and the float32 sum of the windows loses nothing. The k-tile's first wgmma overwrites the
// accumulator (scale-d 0): writing zeros into it made ptxas serialize every wgmma. Each
// warpgroup waits for its k-tile's wgmmas before promoting; the other warpgroup's wgmmas keep
// the tensor cores busy meanwhile.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute/arch/mma_sm90.hpp>
#include <cute_gemm/sm90_pipeline.cuh>
#include <cute_gemm/sm90_setmaxnreg.cuh>
#include <cute_gemm/sm90_epilogue.cuh>
#include <cute_gemm/sm90_tile_scheduler.cuh>
#include <cute_gemm/sm90_tail_split.cuh>

namespace cg::sm90 {

// mma: the TiledMMA of the whole BLK_M x BLK_N tile; split: the walk's items
// (sm90_tail_split.cuh), a cut one's partial sums in ws; E: the epilogue, whose block scales
// (E::kBlocks: A's per row and k-tile, B's per k-tile and 128 columns) scale each k-tile.
template <class WsConfig, class TC, int kCluster, class OpA, class OpB, class Mma, class Ring,
          class Tiles, class E>
__device__ __forceinline__ void consume_scaled(Mma const& mma, Ring* ring,
                                               typename OpA::Elem* smemA,
                                               typename OpB::Elem* smemB, Tiles const& tiles,
                                               TailSplit split, float* ws, int stride, int rank,
                                               int k_tiles, TC* C, long long sCm, long long sCn,
                                               int M, int N, float alpha, float beta, E e) {
  using namespace cute;
  constexpr int kBlkM = WsConfig::blk_m, kBlkN = WsConfig::blk_n, kStages = WsConfig::stages;
  using State = RingState<kStages>;
  setmaxnreg_inc<WsConfig::consumer_regs>();
  const int thread = threadIdx.x - 128;                    // within the consumer warpgroups
  const bool releaser = threadIdx.x % 32 == 0;             // one arrival per warp
  Tensor sA = make_tensor(make_smem_ptr(smemA), typename OpA::Layout{});   // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), typename OpB::Layout{});   // (BLK_N,BLK_K,PIPE)
  ThrMMA thr_mma = mma.get_slice(thread);
  Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));         // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));         // (MMA,MMA_N,MMA_K,PIPE)
  Tensor acc = partition_fragment_C(thr_mma, Shape<Int<kBlkM>, Int<kBlkN>>{});  // (MMA,MMA_M,MMA_N)
  Tensor sum = make_fragment_like(acc);                                     // (MMA,MMA_M,MMA_N)
  Tensor rows = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBlkM>, Int<kBlkN>>{}));
  Mma mma_first = mma;                                     // (scale-d 0: D = A B)
  mma_first.accumulate_ = GMMA::ScaleOut::Zero;

  // Preconditions
  static_assert(sizeof(typename OpA::Elem) == 1, "8-bit operands");
  static_assert(!E::kBlocks || (kBlkN == 128 && decltype(size<1>(sA))::value == 128),
                "block scales: k-tiles of 128 k, tiles 128 columns wide");

  State st;
  for (int item = first_unit<kCluster>(); item < split.items(tiles.count()); item += stride) {
    clear(sum);
    int m_unit, n_blk;
    tiles.coord(split.unit(item), m_unit, n_blk);
    const int m_blk = m_unit * kCluster + rank;
    // a cut unit's piece: its own k-tiles, from k-tile t0 (the producer's stream)
    const int run = split.run(item, k_tiles), t0 = split.piece(item) * run;
    // the block scales of k-tile t: f0 for this thread's first row r, f1 for r + 8 (the
    // wgmma accumulator gives each thread rows r and r + 8 of its warp's 16), rows past M
    // clamped (they compute zeros), k-tiles past K too (zero-filled)
    const int row0 = m_blk * kBlkM + get<0>(rows(0));
    float f0 = 1.0f, f1 = 1.0f;
    auto factors = [&](int t) {
      if constexpr (E::kBlocks) {
        const int g = min(t0 + t, k_tiles - 1);
        const float fb = e.block_b(n_blk, g);
        f0 = fb * e.block_a(min(row0, M - 1), g);
        f1 = fb * e.block_a(min(row0 + 8, M - 1), g);
      }
    };
    factors(0);
    for (int t = 0; t < run; ++t, st.advance()) {
      ring->wait(st);
      const int s = st.index;
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      gemm(mma_first, tCrA(_, _, 0, s), tCrB(_, _, 0, s), acc);
      CUTE_UNROLL
      for (int kb = 1; kb < size<2>(tCrA); ++kb) gemm(mma, tCrA(_, _, kb, s), tCrB(_, _, kb, s), acc);
      warpgroup_commit_batch();
      warpgroup_wait<0>();
      warpgroup_fence_operand(acc);
      if (releaser) ring->template release<kCluster>(s);
      CUTE_UNROLL
      for (int i = 0; i < size(acc); ++i) {
        const int dr = get<0>(rows(i)) - get<0>(rows(0));   // 0 or 8, known when unrolled
        sum(i) = fmaf(dr == 0 ? f0 : f1, acc(i), sum(i));
      }
      factors(t + 1);                                      // (loaded under the next k-tile)
    }
    if (m_blk * kBlkM >= M) continue;                      // a cluster's tile past M: no partial
    if (!piece_done<128 * WsConfig::consumers, kCluster, false>(sum, sum, split, item, ws, thread,
                                                                rank))
      continue;                                            // another piece adds this one's
    store_axpby<kBlkM, kBlkN>(mma, thread, sum, C, sCm, sCn, M, N, m_blk * kBlkM, n_blk * kBlkN,
                              alpha, beta, e);
  }
}

}  // namespace cg::sm90
