// The persistent stream-K walk (grid = (G,1,1), G from streamk.stream_k_plan or, for a split
// pick, tiles x split_k from streamk.split_k_ctas) over tiles [tile0, tiles): whole tiles
// first, then this CTA's run of the k-tile iterations of the remaining tiles, a cut tile
// reduced by streamk_fixup (the decomposition: streamk.cuh), or where the launch groups a
// split's shares in clusters (sm_90), by cluster_fixup in distributed shared memory. Any
// kernel whose tile can run a range of k-tiles walks with it (c3_pipelined through
// tile_scheduler.cuh, c4_mma_sm80).
// ws: the arrival counters (zero before the first launch; each launch leaves them zero),
// then 2 * G partial-tile slots of BLK_M x BLK_N floats; null for a split in clusters.
//   coord(t, tiles_m, tiles_n, tile_m, tile_n): the kernel's order of the tiles it walks;
//   run_tile(tile_m, tile_n, k0, k1, epi): k-tiles [k0, k1) of a tile, then epi(acc), true
//     where this CTA stores the tile: `whole` for whole tiles, else the cut tile's reduction.
#pragma once

#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/epilogue.cuh>
#include <cute_gemm/cluster_fixup.cuh>
#include <cute_gemm/streamk.cuh>

namespace cg {

template <int kThreads, int BLK_M, int BLK_N, int BLK_K, class Coord, class Whole, class RunTile>
__device__ __forceinline__ void streamk_walk(int M, int N, int K, float* ws, int tile0, Coord&& coord,
                                             Whole whole, RunTile&& run_tile) {
  constexpr int kTileElems = BLK_M * BLK_N;
  __shared__ StreamK s_sk;     // the schedule, read back per run (no registers held)
  if (threadIdx.x == 0)
    s_sk = StreamK::make(ceil_div(M, BLK_M), ceil_div(N, BLK_N), tile0, ceil_div(K, BLK_K), gridDim.x);
  __syncthreads();
  auto run = [&](int tile, int k0, int k1, auto&& epi) CG_LAMBDA_INLINE_IF_FUSED {
    int tile_m, tile_n;
    coord(s_sk.tile0 + tile, s_sk.tiles_m, s_sk.tiles_n, tile_m, tile_n);
    run_tile(tile_m, tile_n, k0, k1, epi);
  };
  // The loop positions live in shared memory as well and are read back after each run:
  // a register held across the mainloop is one the 128-register entry points lack.
  __shared__ int s_pos;
  if (threadIdx.x == 0) s_pos = blockIdx.x;
  __syncthreads();
  while (s_pos < s_sk.dp_tiles) {                    // whole tiles: blockIdx.x, + G, ...
    run(s_pos, 0, s_sk.k_tiles, whole);
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
      if (cluster_ctas() > 1) {    // a split's shares, CTAs c_lo..c_hi: one cluster (the host's)
        extern __shared__ __align__(16) float cg_walk_smem[];
        return cluster_fixup<kThreads>(acc, cg_walk_smem);
      }
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

}  // namespace cg
