// The mainloop of a consumer warpgroup of the warp-specialized Hopper kernel (sm_90): `run`
// k-tiles of the stage ring into the accumulators, SS wgmma (both operands from the stages'
// swizzled smem), one batch in flight: k-tile t is issued before t - 1 is waited for
// (warpgroup_wait<1>), then t - 1's stage is released to the producer. The cooperative
// consumers (c6's consume) and the ping-pong ones (sm90_consumer_pingpong.cuh) run it per tile.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute_gemm/sm90_pipeline.cuh>

namespace cg::sm90 {

// A consumer thread's SS wgmma fragments of the ring's stages (smem descriptors), each
// (MMA,MMA_M|N,MMA_K,PIPE), for mainloop_ss
template <class OpA, class OpB, class Mma>
__device__ __forceinline__ auto stage_fragments(Mma const& mma, int thread,
                                                typename OpA::Elem* smemA,
                                                typename OpB::Elem* smemB) {
  using namespace cute;
  Tensor sA = make_tensor(make_smem_ptr(smemA), typename OpA::Layout{});   // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), typename OpB::Layout{});   // (BLK_N,BLK_K,PIPE)
  ThrMMA thr_mma = mma.get_slice(thread);
  return make_tuple(thr_mma.make_fragment_A(thr_mma.partition_A(sA)),
                    thr_mma.make_fragment_B(thr_mma.partition_B(sB)));
}

// (releaser: one lane per warp arrives on a stage's `empty` barrier, in every CTA of the
// cluster whose loads fill it)
template <int kCluster, class Mma, class Ring, class State, class FragA, class FragB, class Acc>
__device__ __forceinline__ void mainloop_ss(Mma const& mma, Ring* ring, State& st,
                                            FragA const& tCrA, FragB const& tCrB, Acc& acc,
                                            int run, bool releaser) {
  using namespace cute;
  clear(acc);
  int prev = -1;                                           // the stage of the batch in flight
  for (int k_tile = 0; k_tile < run; ++k_tile, st.advance()) {
    ring->wait(st);
    warpgroup_fence_operand(acc);
    warpgroup_arrive();
    gemm(mma, tCrA(_, _, _, st.index), tCrB(_, _, _, st.index), acc);  // acc += sA * sB
    warpgroup_commit_batch();
    warpgroup_wait<1>();                                   // k-tile - 1's batch has retired
    warpgroup_fence_operand(acc);
    if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
    prev = st.index;
  }
  warpgroup_wait<0>();
  warpgroup_fence_operand(acc);
  if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
}

}  // namespace cg::sm90
