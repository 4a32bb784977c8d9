// One k-tile of a consumer warpgroup whose wgmmas read A and B from shared memory (SS, sm_90):
// wait until the ring's stage has landed, issue the k-tile's wgmmas as one batch, retire the
// batch before it (one stays in flight: warpgroup_wait<1>) and give that one's stage back to
// the producer. The warp-specialized kernel's consumers, plain and promoted, run it per k-tile.
#pragma once
#include <cute/tensor.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute_gemm/sm90_pipeline.cuh>

namespace cg::sm90 {

// prev: the stage of the batch in flight (-1: none), on return this k-tile's;
// releaser: one thread per warp arrives on the stage's empty barrier
template <int kCluster, class Mma, class Ring, class State, class FragA, class FragB, class Acc>
__device__ __forceinline__ void ss_k_tile(Mma const& mma, Ring* ring, State const& st,
                                          FragA const& tCrA, FragB const& tCrB, Acc& acc,
                                          int& prev, bool releaser) {
  using namespace cute;
  ring->wait(st);
  warpgroup_fence_operand(acc);
  warpgroup_arrive();
  gemm(mma, tCrA(_, _, _, st.index), tCrB(_, _, _, st.index), acc);  // acc += sA * sB
  warpgroup_commit_batch();
  warpgroup_wait<1>();                                     // k-tile - 1's batch has retired
  warpgroup_fence_operand(acc);
  if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
  prev = st.index;
}

}  // namespace cg::sm90
