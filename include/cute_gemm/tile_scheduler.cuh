// Which tiles a CTA of the tuned kernel (c3_pipelined.cu) computes: the grouped CTA order of a
// data-parallel grid, and the persistent stream-K walk of the *_sk twins (the decomposition
// and the partial-tile reduction: streamk.cuh).
#pragma once

#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/pipelined_config.cuh>
#include <cute_gemm/smem_epilogue.cuh>
#include <cute_gemm/streamk_walk.cuh>

namespace cg {

// CTA rasterisation for L2 reuse: linear tile ids walk groups of kRasterN tile columns, M
// fastest inside a group, so the CTAs resident together read ~sqrt(#resident) A strips and B
// strips instead of all of A (large M).
//   pid = bid.x + bid.y*tiles_m; group g = pid / (kRasterN*tiles_m) covers tile columns
//   [g*kRasterN, ...); inside it tile_n = first + r % cols, tile_m = r / cols.
__device__ __forceinline__ void tile_coord(int pid, int tiles_m, int tiles_n, int& tile_m,
                                           int& tile_n) {
  const int per_group = kRasterN * tiles_m;
  const int first_n = (pid / per_group) * kRasterN;
  const int cols = min(tiles_n - first_n, kRasterN);
  tile_n = first_n + (pid % per_group) % cols;
  tile_m = (pid % per_group) / cols;
}
// The grid: (tiles along M, tiles along N), or 1-D over the first tiles of the walk (the
// data-parallel half of a split stream-K launch, streamk.stream_k_plan).
template <int BLK_M, int BLK_N>
__device__ __forceinline__ void cta_tile(int M, int N, int& tile_m, int& tile_n) {
  tile_coord(blockIdx.y * gridDim.x + blockIdx.x, cg::ceil_div(M, BLK_M), cg::ceil_div(N, BLK_N),
             tile_m, tile_n);
}

// Persistent stream-K launch over tiles [tile0, tiles) in the grouped order (streamk_walk.cuh),
// whole tiles stored by the scalar epilogue. run_tile(tile_m, tile_n, k0, k1, epi) computes
// k-tiles [k0, k1) of a tile and hands the accumulators to epi (smem_epilogue.cuh's
// StoreTile, or the reduction of a cut tile).
template <int kThreads, int BLK_M, int BLK_N, int BLK_K, class RunTile>
__device__ __forceinline__ void streamk_tiles(int M, int N, int K, float* ws, int tile0,
                                              RunTile&& run_tile) {
  streamk_walk<kThreads, BLK_M, BLK_N, BLK_K>(
      M, N, K, ws, tile0,
      [](int t, int tiles_m, int tiles_n, int& tile_m, int& tile_n) {
        tile_coord(t, tiles_m, tiles_n, tile_m, tile_n);
      },
      StoreTile<Epi::scalar>{}, run_tile);
}

// Programmatic dependent launch of split stream-K launches (streamk.stream_k_plan;
// launch.launch(pdl=True), Kernel.pdl), sm_90+. The data-parallel entries let dependents
// start at once, so the twin's CTAs take the SMs as the last data-parallel CTAs leave rather
// than after the last one and a launch gap. The twin touches none of their tiles, and waits
// for them to finish before it ends, so that its completion is the whole product's.
// (docs/design/cute_pipelined.md#stream-k)
template <bool kPdl>
__device__ __forceinline__ void pdl_launch_dependents() {
  if constexpr (kPdl && kArch >= 900) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
template <bool kPdl>
__device__ __forceinline__ void pdl_wait() {
  if constexpr (kPdl && kArch >= 900) asm volatile("griddepcontrol.wait;" ::: "memory");
}

}  // namespace cg
