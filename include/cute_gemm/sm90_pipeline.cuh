// The stage ring of a warp-specialized Hopper mainloop (sm_90): STAGES smem stages, each with
// a `full` barrier (the producer announced the stage's TMA bytes; it completes when they have
// landed) and an `empty` barrier (every consumer warp has retired its wgmma reads of it).
//
// Producer and consumers walk the ring with their own RingState (stage index, pass parity);
// both see the same sequence of k-tiles, tile after tile, so the ring needs no other
// bookkeeping. A fresh mbarrier is in phase 0 and a wait on parity 1 passes at once (the phase
// "before" it counts as completed): the producer waits on `empty` with the opposite parity of
// its pass, so its first pass through the ring does not wait.
#pragma once
#include <cute_gemm/sm90_tma.cuh>

namespace cg::sm90 {

template <int Stages>
struct RingState {
  int index = 0;
  uint32_t phase = 0;      // parity of the current pass through the ring
  __device__ __forceinline__ void advance() {
    if (++index == Stages) { index = 0; phase ^= 1; }
  }
  // past n k-tiles another consumer takes (a ping-pong kernel's other warpgroup's tile)
  __device__ __forceinline__ void skip(int n) {
    const int t = index + n;
    phase ^= (t / Stages) & 1;
    index = t % Stages;
  }
};

template <int Stages>
struct StageRing {
  uint64_t full[Stages];
  uint64_t empty[Stages];

  // One thread, before a __syncthreads(): `releasers` arrivals free a stage.
  __device__ void init(uint32_t releasers) {
    for (int s = 0; s < Stages; ++s) {
      mbar_init(&full[s], 1);            // the producer's arrive_expect_tx
      mbar_init(&empty[s], releasers);
    }
    mbar_fence_init();
  }
  // producer: wait until the stage is free, then announce `bytes` of TMA loads into it
  // (which complete on the returned barrier)
  __device__ __forceinline__ uint64_t* acquire(RingState<Stages> const& st, uint32_t bytes) {
    mbar_wait(&empty[st.index], st.phase ^ 1);
    mbar_arrive_expect_tx(&full[st.index], bytes);
    return &full[st.index];
  }
  // consumer: wait until the stage's bytes have landed
  __device__ __forceinline__ void wait(RingState<Stages> const& st) {
    mbar_wait(&full[st.index], st.phase);
  }
  // consumer (one lane per releasing warp): this warp is done reading stage `index` — of its
  // own CTA, and of every CTA of the cluster whose stage its CTA's loads also fill (their
  // producers multicast into it), so `releasers` counts the warps of all Ctas CTAs
  template <int Ctas = 1>
  __device__ __forceinline__ void release(int index) {
    if constexpr (Ctas == 1) {
      mbar_arrive(&empty[index]);
    } else {
      CUTE_UNROLL
      for (int c = 0; c < Ctas; ++c) mbar_arrive_cluster(&empty[index], c);
    }
  }
};

}  // namespace cg::sm90
