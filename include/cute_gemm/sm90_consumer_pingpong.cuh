// Ping-pong consumers of the warp-specialized Hopper kernel (sm_90): each consumer warpgroup
// computes whole tiles of its own, the two taking the CTA's units in turn, so one warpgroup's
// epilogue runs while the other's wgmmas do (CUTLASS's KernelTmaWarpSpecializedPingpong idea).
// The cooperative consumers (c6's consume) share a tile and both wait in its epilogue while
// the tensor cores idle: a fused bias and GELU cost a 2048-token linear layer 18 %
// (docs/design/epilogue.md#what-a-fused-epilogue-costs).
//
// The producer is unchanged: it streams every unit's k-tiles through the ring in walk order.
// Warpgroup w takes units w, w + 2, ... of the CTA's walk and steps its RingState past the
// other's k-tiles (RingState::skip), so a stage is read, and released, by one warpgroup: the
// ring's `empty` barriers count 4 warps per CTA of the cluster. The mainloops take turns
// (named barriers 4 and 5, CUTLASS's math order barrier): a stage's wait is by phase parity,
// which tells one pass through the ring from the next only, and a warpgroup that skipped more
// k-tiles than the ring has stages waited on its first one an even number of passes early
// (it read the other's stage: launch failures at K = 4096 on 5 stages).
// Geometry: a warpgroup's tile BLK_M x BLK_N (64 or 128 rows: MMA_M = BLK_M / 64 wgmmas per
// k-step on one B), its accumulators BLK_M * BLK_N / 128 registers a thread.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute_gemm/sm90_pipeline.cuh>
#include <cute_gemm/sm90_mainloop.cuh>
#include <cute_gemm/sm90_epilogue.cuh>
#include <cute_gemm/sm90_setmaxnreg.cuh>
#include <cute_gemm/sm90_tile_scheduler.cuh>

namespace cg::sm90 {

// A ping-pong warpgroup's turn: wait until the other has passed its own (barrier 4 + wg, the
// 128 threads of each), and pass it on when this one's mainloop has read its stages
__device__ __forceinline__ void wait_turn(int wg) {
  asm volatile("bar.sync %0, 256;" :: "r"(4 + wg) : "memory");
}
__device__ __forceinline__ void pass_turn(int wg) {
  asm volatile("bar.arrive %0, 256;" :: "r"(5 - wg) : "memory");
}

template <class WsConfig, class TC, int kCluster, class OpA, class OpB, class Mma, class Ring,
          class Tiles, class Epi>
__device__ __forceinline__ void consume_pingpong(Mma const& mma, Ring* ring,
                                                 typename OpA::Elem* smemA,
                                                 typename OpB::Elem* smemB, Tiles const& tiles,
                                                 int stride, int rank, int k_tiles, TC* C,
                                                 long long sCm, long long sCn, int M, int N,
                                                 float alpha, float beta, Epi epi) {
  using namespace cute;
  constexpr int kBlkM = WsConfig::blk_m, kBlkN = WsConfig::blk_n, kStages = WsConfig::stages;
  static_assert(!Epi::kBlocks, "block scales: on promoted sums only (consume_promoted)");
  setmaxnreg_inc<WsConfig::consumer_regs>();
  const int wg = int(threadIdx.x) / 128 - 1;               // this consumer warpgroup: 0 or 1
  const int thread = threadIdx.x % 128;                    // within it
  const bool releaser = threadIdx.x % 32 == 0;             // one arrival per warp
  auto [tCrA, tCrB] = stage_fragments<OpA, OpB>(mma, thread, smemA, smemB);
  Tensor acc = partition_fragment_C(mma.get_slice(thread), Shape<Int<kBlkM>, Int<kBlkN>>{});  // (MMA,MMA_M,MMA_N)
  RingState<kStages> st;
  int item = first_unit<kCluster>();
  if (wg == 1) {                                           // past warpgroup 0's first unit
    st.skip(k_tiles);
    item += stride;
  }
  for (bool turn = wg == 1; item < tiles.count(); item += 2 * stride, turn = true) {
    if (turn) wait_turn(wg);                               // (warpgroup 0's first: at once)
    mainloop_ss<kCluster>(mma, ring, st, tCrA, tCrB, acc, k_tiles, releaser);
    pass_turn(wg);
    st.skip(k_tiles);                                      // the other warpgroup's next unit
    int m_unit, n_blk;
    tiles.coord(item, m_unit, n_blk);
    const int m_blk = m_unit * kCluster + rank;
    if (m_blk * kBlkM >= M) continue;                      // a cluster's tile past M
    store_axpby<kBlkM, kBlkN, 2>(mma, thread, acc, tiles.at(C, item), sCm, sCn, M, N,
                                 m_blk * kBlkM, n_blk * kBlkN, alpha, beta, epi, wg);
  }
}

}  // namespace cg::sm90
