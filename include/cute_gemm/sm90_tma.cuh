// Transaction barriers and TMA loads (sm_90): the thin layer the Hopper stages build their
// pipelines on.
//
// An mbarrier (8 bytes of shared memory) completes a phase when its expected arrivals have
// arrived AND the transaction bytes announced with arrive_expect_tx have landed: a TMA load
// names the barrier and counts its bytes down as they are written to shared memory, so a
// consumer that waits on the barrier's phase sees the whole stage. Phases alternate parity
// 0, 1, 0, ...; a waiter passes the parity of the phase it waits to complete.
//
// The tensor maps (CUtensorMap, 128 bytes) are encoded on the host per call
// (cute_gemm/driver/launch.py encode_tensor_map) and passed as __grid_constant__ parameters
// (common.cuh CG_TMA_PARAMS): the TMA unit reads them from the kernel parameter space.
// Coordinates are elements, innermost (contiguous) first; boxes that reach past the tensor's
// extent arrive zero-filled, which is how every stage here handles M, N and K residues.
#pragma once
#include <cute/arch/copy_sm90_tma.hpp>   // SM90_TMA_LOAD_2D (the cp.async.bulk.tensor PTX)

namespace cg::sm90 {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier ----------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(arrivals));
}

// Make initialised barriers visible to the async proxy (the TMA unit) before first use;
// a __syncthreads() must follow so that every thread sees them initialised.
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival that also announces `bytes` more transaction bytes for the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}

// Spin until the phase of parity `phase` has completed (try_wait suspends the thread for a
// system-dependent time before returning false, so the loop does not hammer the barrier).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" :: "r"(smem_addr(bar)), "r"(phase) : "memory");
}

// ---- clusters ----------------------------------------------------------------------
// The CTAs of a cluster (sm_90) can address each other's shared memory: a TMA multicast
// writes one box into the same offset of several CTAs' smem and completes on each one's
// barrier at the same offset; a consumer frees a stage of every CTA it shares loads with
// by arriving on their `empty` barriers remotely.
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster (a CTA-wide __syncthreads() besides): barrier
// inits are visible cluster-wide after it, and no CTA leaves while a peer may still write
// its smem or arrive on its barriers.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// An arrival on the barrier at `bar`'s offset in CTA `cta` of this cluster (itself included).
// Default semantics (release at CTA scope): what it orders are this warp's wgmma reads of the
// stage, which warpgroup_wait has retired; a .release.cluster arrive is a cluster-wide fence
// per warp and k-tile, and halved the throughput (docs/design/cute_wgmma_ws.md).
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}" :: "r"(smem_addr(bar)), "r"(cta) : "memory");
}

// ---- TMA ---------------------------------------------------------------------------
// One box of a 2-D tensor map into shared memory at `smem`, completing on `bar`.
// crd0 runs along the contiguous extent, crd1 along the other (records.TmaBoxes).
__device__ __forceinline__ void tma_load_2d(const cute::TmaDescriptor* map, uint64_t* bar,
                                            void* smem, int crd0, int crd1) {
  // cache hint: the L2 "evict normal" policy CUTLASS names CacheHintSm90::EVICT_NORMAL
  constexpr uint64_t kEvictNormal = 0x1000000000000000ull;
  cute::SM90_TMA_LOAD_2D::copy(map, bar, kEvictNormal, smem, crd0, crd1);
}

// The same box into `smem` of every CTA in `cta_mask` (bit r: cluster rank r), each completing
// on its own barrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_2d_multicast(const cute::TmaDescriptor* map, uint64_t* bar,
                                                      void* smem, uint16_t cta_mask, int crd0,
                                                      int crd1) {
  constexpr uint64_t kEvictNormal = 0x1000000000000000ull;
  cute::SM90_TMA_LOAD_MULTICAST_2D::copy(map, bar, cta_mask, kEvictNormal, smem, crd0, crd1);
}

// A batch's problem in 4-D tensor maps (the matrix's two extents, then the batch's two
// modes; sm90_tile_scheduler.cuh BatchedTiles): its coordinates along the two modes.
// NoProblem: a 2-D map. The loads above and OperandTile's take either.
struct NoProblem {};
struct Problem { int l0, l1; };

__device__ __forceinline__ void tma_load_2d(const cute::TmaDescriptor* map, uint64_t* bar,
                                            void* smem, int crd0, int crd1, NoProblem) {
  tma_load_2d(map, bar, smem, crd0, crd1);
}

__device__ __forceinline__ void tma_load_2d(const cute::TmaDescriptor* map, uint64_t* bar,
                                            void* smem, int crd0, int crd1, Problem l) {
  constexpr uint64_t kEvictNormal = 0x1000000000000000ull;
  cute::SM90_TMA_LOAD_4D::copy(map, bar, kEvictNormal, smem, crd0, crd1, l.l0, l.l1);
}

__device__ __forceinline__ void tma_load_2d_multicast(const cute::TmaDescriptor* map, uint64_t* bar,
                                                      void* smem, uint16_t cta_mask, int crd0,
                                                      int crd1, NoProblem) {
  tma_load_2d_multicast(map, bar, smem, cta_mask, crd0, crd1);
}

__device__ __forceinline__ void tma_load_2d_multicast(const cute::TmaDescriptor* map, uint64_t* bar,
                                                      void* smem, uint16_t cta_mask, int crd0,
                                                      int crd1, Problem l) {
  constexpr uint64_t kEvictNormal = 0x1000000000000000ull;
  cute::SM90_TMA_LOAD_MULTICAST_4D::copy(map, bar, cta_mask, kEvictNormal, smem, crd0, crd1,
                                         l.l0, l.l1);
}

// Bring the tensor map's 128 bytes into the TMA unit's cache ahead of the first load.
__device__ __forceinline__ void tma_prefetch_map(const cute::TmaDescriptor* map) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

}  // namespace cg::sm90
