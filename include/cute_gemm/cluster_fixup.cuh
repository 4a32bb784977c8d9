// A cut tile's shares reduced in a thread-block cluster (sm_90): a split launched as clusters
// of its shares along x (modes.cluster_split) adds them up in distributed shared memory, with
// no workspace, no arrival counter and no global-memory round trip (streamk_fixup's route).
// Every share but rank 0 stores its fp32 partial into its own dynamic smem (the pipeline's,
// idle once the mainloop is done), the cluster meets, rank 0 reads the others' partials over
// DSMEM in rank order (the workspace's order: the same sums, the same bits) and runs the
// epilogue; a second meeting keeps each share's smem alive until rank 0 has read it.
#pragma once

#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm80.hpp>

namespace cg {

// CTAs in this CTA's cluster: 1 on sm_80 and for a launch without clusters.
__device__ __forceinline__ int cluster_ctas() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return int(n);
#else
  return 1;
#endif
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Every thread of the cluster meets: the arrive releases this CTA's smem stores, the wait
// acquires the others'. The memory clobber keeps the compiler's smem accesses on their side
// (CuTe's cluster_arrive/cluster_wait have none).
__device__ __forceinline__ void cluster_meet() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ float ld_dsmem(unsigned addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
#endif

// Reduce the tile this cluster's CTAs share: `smem` this CTA's dynamic smem, at least
// kThreads * size(acc) floats. Element i of thread t at i * kThreads + t, as streamk_fixup.
// True for rank 0, which holds the sum in acc and alone runs the epilogue.
template <int kThreads, class Acc>
__device__ __forceinline__ bool cluster_fixup(Acc& acc, float* smem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned rank = cute::block_rank_in_cluster();
  const int n = cluster_ctas();
  cute::cp_async_wait<0>();     // no copy still lands in the ring, no thread still reads it
  __syncthreads();
  if (rank != 0) {
#pragma unroll
    for (int i = 0; i < int(cute::size(acc)); ++i) smem[i * kThreads + threadIdx.x] = acc(i);
  }
  cluster_meet();
  if (rank == 0) {
    const unsigned mine = unsigned(__cvta_generic_to_shared(smem)) + 4u * threadIdx.x;
    for (int j = 1; j < n; ++j) {
      const unsigned theirs = cute::set_block_rank(mine, unsigned(j));
#pragma unroll
      for (int i = 0; i < int(cute::size(acc)); ++i) acc(i) += ld_dsmem(theirs + 4u * i * kThreads);
    }
  }
  cluster_meet();
  return rank == 0;
#else
  return true;    // never called: sm_80 launches no clusters
#endif
}

}  // namespace cg
