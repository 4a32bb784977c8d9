// The consumer warpgroups of the warp-specialized kernel when A comes from registers (RS wgmma,
// sm_90a): the path of an m-major tf32 operand (sm90_register_operand.cuh), B k-major in smem.
//
// Per k-tile: wait for the stage, load this thread's A fragment of it (8 LDS.64), issue the
// k-tile's wgmmas, and keep one batch in flight as the SS consumer does (warpgroup_wait<1>,
// then the previous stage goes back to the producer). wgmma reads its register A
// asynchronously until its batch retires, so the fragment is double-buffered: k-tile t loads
// into buffer t % 2 while k-tile t - 1's batch still reads the other. The k loop is unrolled
// by two so that each buffer is a fixed set of registers (a run-time index would put them in
// local memory).
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute/arch/mma_sm90.hpp>
#include <cute_gemm/sm90_pipeline.cuh>
#include <cute_gemm/sm90_setmaxnreg.cuh>
#include <cute_gemm/sm90_epilogue_rows.cuh>
#include <cute_gemm/sm90_tile_scheduler.cuh>
#include <cute_gemm/sm90_tail_split.cuh>

namespace cg::sm90 {

// WsConfig: the kernel's struct Config (ladder_cute.WgmmaWsConfig); OpA: RegisterOperand;
// OpB: a k-major OperandTile.
template <class WsConfig, class TC, int kCluster, class OpA, class OpB, class Mma, class Ring,
          class Tiles, class E = Epilogue<>>
__device__ __forceinline__ void consume_rs(Mma const& mma, Ring* ring,
                                           typename OpA::Elem* smemA, typename OpB::Elem* smemB,
                                           Tiles const& tiles, TailSplit split, float* ws,
                                           int stride, int rank, int k_tiles,
                                           TC* C, long long sCm, long long sCn,
                                           int M, int N, float alpha, float beta, E e = E{}) {
  using namespace cute;
  constexpr int kBlkM = WsConfig::blk_m, kBlkN = WsConfig::blk_n, kStages = WsConfig::stages;
  static_assert(OpB::kKMajor, "TF32 wgmma reads a k-major B from smem");
  constexpr int kBlkK = OpB::kBox0;                        // a k-major stage: BlkK along k
  static_assert(WsConfig::promote == 0, "no promoted sums on the register-A path");
  static_assert(!E::kBlocks, "block scales: on promoted sums only (consume_promoted)");
  using State = RingState<kStages>;
  setmaxnreg_inc<WsConfig::consumer_regs>();
  const int thread = threadIdx.x - 128;                    // within the consumer warpgroups
  const bool releaser = threadIdx.x % 32 == 0;             // one arrival per warp
  Tensor sA = make_tensor(make_smem_ptr(smemA), typename OpA::Layout{});   // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), typename OpB::Layout{});   // (BLK_N,BLK_K,PIPE)
  ThrMMA thr_mma = mma.get_slice(thread);
  Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));         // (MMA,MMA_N,MMA_K,PIPE)
  // two A fragments, compact (4 values of an atom, then its k atoms): Reader::load's order
  Tensor tCrA0 = make_tensor<typename OpA::Elem>(Shape<_4, _1, Int<kBlkK / 8>>{});  // (MMA,MMA_M,MMA_K)
  Tensor tCrA1 = make_tensor<typename OpA::Elem>(Shape<_4, _1, Int<kBlkK / 8>>{});  // (MMA,MMA_M,MMA_K)
  using FragA = decltype(thr_mma.partition_fragment_A(sA(_, _, 0)));     // CuTe's: ((2,2),1,K/8)
  static_assert(size<0>(FragA{}) == 4 && size<1>(FragA{}) == 1 && size<2>(FragA{}) == kBlkK / 8,
                "the RS atom's A fragment: 4 values per k = 8 atom");
  Tensor acc = partition_fragment_C(thr_mma, Shape<Int<kBlkM>, Int<kBlkN>>{});  // (MMA,MMA_M,MMA_N)
  const typename OpA::Reader reader(thread);

  State st;
  int prev = -1;                                           // the stage of the batch in flight
  // one k-tile into fragment `frag`; its batch stays in flight, the one before retires
  auto step = [&](auto& frag) {
    ring->wait(st);
    reader.load(smemA + st.index * OpA::kStageElems, frag);
    warpgroup_fence_operand(acc);
    warpgroup_arrive();
    gemm(mma, frag, tCrB(_, _, _, st.index), acc);         // acc += rA * sB
    warpgroup_commit_batch();
    warpgroup_wait<1>();                                   // k-tile - 1's batch has retired
    warpgroup_fence_operand(acc);
    if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
    prev = st.index;
    st.advance();
  };
  for (int item = first_unit<kCluster>(); item < split.items(tiles.count()); item += stride) {
    clear(acc);
    const int run = split.run(item, k_tiles);              // a cut unit's piece: its own k-tiles
    int k_tile = 0;
    for (; k_tile + 1 < run; k_tile += 2) {
      step(tCrA0);
      step(tCrA1);
    }
    if (k_tile < run) step(tCrA0);
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
    prev = -1;
    int m_unit, n_blk;
    tiles.coord(split.unit(item), m_unit, n_blk);
    const int m_blk = m_unit * kCluster + rank;
    if (m_blk * kBlkM >= M) continue;                      // a cluster's tile past M: no partial
    if (!piece_done<128 * WsConfig::consumers, kCluster, false>(acc, acc, split, item, ws,
                                                                thread, rank))
      continue;                                            // another piece adds this one's
    store_axpby_rows<kBlkM, kBlkN, typename OpA::RowMap>(mma, thread, acc,
                                                         tiles.at(C, split.unit(item)), sCm, sCn, M, N,
                                                         m_blk * kBlkM, n_blk * kBlkN, alpha,
                                                         beta, e);
  }
}

}  // namespace cg::sm90
