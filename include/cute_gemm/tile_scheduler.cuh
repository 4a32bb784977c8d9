// Which tiles a CTA of the tuned kernel (c3_pipelined.cu) computes: the grouped CTA order of a
// data-parallel grid, and the persistent stream-K walk of the *_sk twins (the decomposition
// and the partial-tile reduction: streamk.cuh).
#pragma once

#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/pipelined_config.cuh>
#include <cute_gemm/smem_epilogue.cuh>
#include <cute_gemm/streamk.cuh>

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

// Persistent stream-K launch (grid = (G,1,1), G from streamk.stream_k_plan) over tiles
// [tile0, tiles): whole tiles first, then this CTA's run of the k-tile iterations of the
// remaining tiles (streamk.cuh). ws: the arrival counters (zero before the first launch;
// each launch leaves them zero), then 2 * G partial-tile slots.
// run_tile(tile_m, tile_n, k0, k1, epi) computes k-tiles [k0, k1) of a tile and hands the
// accumulators to epi (smem_epilogue.cuh's StoreTile, or the reduction of a cut tile).
template <int kThreads, int BLK_M, int BLK_N, int BLK_K, class RunTile>
__device__ __forceinline__ void streamk_tiles(int M, int N, int K, float* ws, int tile0,
                                              RunTile&& run_tile) {
  constexpr int kTileElems = BLK_M * BLK_N;
  __shared__ StreamK s_sk;     // the schedule, read back per run (no registers held)
  if (threadIdx.x == 0)
    s_sk = StreamK::make(ceil_div(M, BLK_M), ceil_div(N, BLK_N), tile0, ceil_div(K, BLK_K), gridDim.x);
  __syncthreads();
  auto run = [&](int tile, int k0, int k1, auto&& epi) {
    int tile_m, tile_n;
    tile_coord(s_sk.tile0 + tile, s_sk.tiles_m, s_sk.tiles_n, tile_m, tile_n);
    run_tile(tile_m, tile_n, k0, k1, epi);
  };
  // The loop positions live in shared memory as well and are read back after each run:
  // a register held across the mainloop is one the 128-register entry points lack.
  __shared__ int s_pos;
  if (threadIdx.x == 0) s_pos = blockIdx.x;
  __syncthreads();
  while (s_pos < s_sk.dp_tiles) {                    // whole tiles: blockIdx.x, + G, ...
    run(s_pos, 0, s_sk.k_tiles, StoreTile<Epi::scalar>{});
    __syncthreads();
    if (threadIdx.x == 0) s_pos += gridDim.x;
    __syncthreads();
  }
  __syncthreads();   // every thread has read s_pos for the exit test before it changes
  if (threadIdx.x == 0) s_pos = s_sk.begin(blockIdx.x);
  __syncthreads();
  while (s_pos < s_sk.begin(blockIdx.x + 1)) {      // then this CTA's stream-K iterations
    const int k_tiles = s_sk.k_tiles;
    const int k0 = s_pos % k_tiles;                  // within stream-K tile s_pos / k_tiles
    const int k1 = cute::min(k_tiles, k0 + (s_sk.begin(blockIdx.x + 1) - s_pos));
    run(s_sk.dp_tiles + s_pos / k_tiles, k0, k1, [&](auto& acc) {
      const StreamK& sk = s_sk;
      const int u = s_pos / sk.k_tiles, me = blockIdx.x;
      // contributors c_lo..c_hi; a run that starts (ends) the tile is its first (last) one
      const int u0 = u * sk.k_tiles, u1 = u0 + sk.k_tiles;             // the tile's iterations
      const int c_lo = s_pos == u0 ? me : sk.cta_of(u0);
      const int c_hi = sk.begin(me + 1) >= u1 ? me : sk.cta_of(u1 - 1);
      if (c_lo == c_hi) return true;                                      // not cut: a whole tile
      int* counter = reinterpret_cast<int*>(ws) + u;
      return streamk_fixup<kThreads>(acc, counter, c_hi - c_lo + 1, me - c_lo,
                                     [&](int j) {
                                       const int c = c_lo + j;
                                       return ws + kStreamKCounters +
                                              (2LL * c + sk.slot(c, u)) * kTileElems;
                                     });
    });
    __syncthreads();
    if (threadIdx.x == 0) {                          // on to the next tile's first k-tile
      const int kt = s_sk.k_tiles;
      s_pos = cute::min(s_sk.begin(blockIdx.x + 1), (s_pos / kt + 1) * kt);
    }
    __syncthreads();
  }
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
