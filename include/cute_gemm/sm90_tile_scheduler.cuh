// The persistent tile walk of the warp-specialized Hopper kernel (sm_90): a grid of at most
// one CTA per SM (records.PersistentGrid), CTA b taking output tiles b, b + gridDim.x, ...
// Tiles are numbered in grouped order: GROUP_M tile rows at a time, column by column within
// the group, so the CTAs of one wave share a few k-panels of A (GROUP_M rows) and B (a wave /
// GROUP_M columns) in L2 instead of streaming all of B per row of tiles.
// The producer warp and the consumer warpgroups each walk the same sequence.
#pragma once
#include <cute_gemm/sm90_tma.cuh>

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

  // C of tile t's problem, and where A and B find theirs (one problem: C itself, 2-D maps)
  template <class TC> __device__ __forceinline__ TC* at(TC* C, int) const { return C; }
  using Operand = NoProblem;
  __device__ __forceinline__ void operands(int, NoProblem&, NoProblem&) const {}
};

// A batch of `problems` problems walked as one sequence, problem by problem (each in grouped
// order): tile t is tile t % per-problem of problem t / per-problem. Problem l is (l / Lin,
// l % Lin) in a batch of two modes; A and B find theirs in 4-D tensor maps (coordinates 0
// along a mode they are broadcast over: bit 0 / 1 of a_modes, b_modes says they have it), C
// steps by its batch strides.
struct BatchedTiles : GroupedTiles {
  int problems, lin, a_modes, b_modes;
  long long bc0, bc1;

  __device__ int count() const { return GroupedTiles::count() * problems; }

  __device__ __forceinline__ void coord(int t, int& m_blk, int& n_blk) const {
    GroupedTiles::coord(t % GroupedTiles::count(), m_blk, n_blk);
  }

  // (outer, inner) coordinates of tile t's problem
  __device__ __forceinline__ void problem(int t, int& l0, int& l1) const {
    const int l = t / GroupedTiles::count();
    l0 = l / lin;
    l1 = l - l0 * lin;
  }

  template <class TC> __device__ __forceinline__ TC* at(TC* C, int t) const {
    int l0, l1;
    problem(t, l0, l1);
    return C + l0 * bc0 + l1 * bc1;
  }

  using Operand = Problem;
  __device__ __forceinline__ void operands(int t, Problem& a, Problem& b) const {
    int l0, l1;
    problem(t, l0, l1);
    a = Problem{a_modes & 1 ? l0 : 0, a_modes & 2 ? l1 : 0};
    b = Problem{b_modes & 1 ? l0 : 0, b_modes & 2 ? l1 : 0};
  }
};

// What a batched entry walks (its CG_WS_BATCH_PARAMS: problems, Lin and the batch strides
// of A, B and C, 0 where an operand is broadcast), or NoBatch; walk() makes its tile walk.
struct NoBatch {};
struct Batch {
  int problems, lin;
  long long a0, a1, b0, b1, c0, c1;
};

__device__ __forceinline__ GroupedTiles walk(GroupedTiles g, NoBatch) { return g; }
__device__ __forceinline__ BatchedTiles walk(GroupedTiles g, Batch b) {
  return BatchedTiles{g, b.problems, b.lin, (b.a0 != 0) | (b.a1 != 0) << 1,
                      (b.b0 != 0) | (b.b1 != 0) << 1, b.c0, b.c1};
}

// This CTA's first unit of the walk (units of kCluster tiles along m); the next ones follow
// gridDim.x / kCluster apart. Each role reads it itself: a start the kernel hands to every
// role keeps one register through all of them, and the promoted consumer has none to spare
// (ptxas spilled it beside the 2 x 96 accumulators).
template <int kCluster>
__device__ __forceinline__ int first_unit() { return int(blockIdx.x) / kCluster; }

}  // namespace cg::sm90
