// The persistent tile walk of the warp-specialized Hopper kernel (sm_90): a grid of at most
// one CTA per SM (records.PersistentGrid), CTA b taking output tiles b, b + gridDim.x, ...
// Tiles are numbered in grouped order: GROUP_M tile rows at a time, column by column within
// the group, so the CTAs of one wave share a few k-panels of A (GROUP_M rows) and B (a wave /
// GROUP_M columns) in L2 instead of streaming all of B per row of tiles.
// The producer warp and the consumer warpgroups each walk the same sequence.
#pragma once

namespace cg::sm90 {

struct GroupedTiles {
  int tiles_m, tiles_n, group_m;

  __device__ int count() const { return tiles_m * tiles_n; }

  // tile number -> (m block, n block)
  __device__ __forceinline__ void coord(int t, int& m_blk, int& n_blk) const {
    const int per_group = group_m * tiles_n;
    const int first_m = (t / per_group) * group_m;
    const int rows = min(tiles_m - first_m, group_m);   // the last group may be shorter
    const int r = t % per_group;
    m_blk = first_m + r % rows;
    n_blk = r / rows;
  }
};

// This CTA's first unit of the walk (units of kCluster tiles along m); the next ones follow
// gridDim.x / kCluster apart. Each role reads it itself: a start the kernel hands to every
// role keeps one register through all of them, and the promoted consumer has none to spare
// (ptxas spilled it beside the 2 x 96 accumulators).
template <int kCluster>
__device__ __forceinline__ int first_unit() { return int(blockIdx.x) / kCluster; }

}  // namespace cg::sm90
