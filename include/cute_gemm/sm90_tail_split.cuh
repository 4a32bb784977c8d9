// A persistent walk whose last, partly empty wave is cut along K (sm_90 warp-specialized
// kernels: cute_wgmma_ws, cute_wgmma_ws_promote, cute_3xtf32's GEMM). With fewer units than
// clusters (a skinny or long-K product) every unit is in that wave: a split-K.
//
// Why: U units (kCluster tiles each) on G clusters leave U % G of them for the last round,
// while the other clusters idle (4096^3 in 128 x 192 tiles: 352 units on 66 clusters,
// 5.33 rounds, 13 % of the SMs' time idle). The host (streamk.tail_split_plan) cuts each of
// the last units into `pieces` runs of whole promotion windows, so that the last round
// has about as many work items as clusters:
//
//   items [0, dp): units 0 .. dp-1, whole;
//   items [dp, ...): unit dp + j / pieces, piece p = j % pieces, windows [p R, (p+1) R) of
//   the unit's W (R = ceil(W / pieces); those past W are zero-filled).
//
// Every piece of a cut tile stores its partial (its accumulators, before alpha; promoted: its
// sum and carried error) in the workspace, then counts itself in; the last to arrive adds all of them in
// piece order (the same order whoever arrives last: deterministic results) and runs the
// epilogue. No piece ever waits
// for another, so residency does not matter (the fixup of cute_pipelined's stream-K,
// streamk.cuh, with a compensated sum of the partials). Workspace: kStreamKCounters int32
// counters (zero before and after every launch: the last arrival resets its own), then one
// partial tile per piece (promoted: two, its sum and carried error):
// streamk.tail_split_workspace_bytes.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute_gemm/streamk.cuh>

namespace cg::sm90 {

struct TailSplit {
  int dp;        // whole units before the cut ones
  int pieces;    // runs each cut unit takes (1: none cut)

  __device__ __forceinline__ int items(int units) const { return dp + (units - dp) * pieces; }
  // item -> unit
  __device__ __forceinline__ int unit(int item) const {
    return item < dp ? item : dp + (item - dp) / pieces;
  }
  // item -> piece of its unit (0 for a whole unit)
  __device__ __forceinline__ int piece(int item) const {
    return item < dp ? 0 : (item - dp) % pieces;
  }
  __device__ __forceinline__ bool cut(int item) const { return item >= dp && pieces > 1; }
  // windows an item runs: a cut unit's pieces ceil(windows / pieces) each, the last one's
  // past the unit's end zero-filled (one division: a piece's own length, which takes a
  // modulo more, made ptxas serialize the promoted consumer's wgmmas)
  __device__ __forceinline__ int run(int item, int windows) const {
    return item < dp ? windows : (windows + pieces - 1) / pieces;
  }
};

// s + x into s (rounded to nearest), its rounding error added into e: Knuth's TwoSum, exact
// whatever the magnitudes (the partials of a cut tile have any signs and sizes)
__device__ __forceinline__ void two_sum_into(float& s, float x, float& e) {
  const float t = __fadd_rn(s, x);
  const float xv = __fsub_rn(t, s);
  const float sv = __fsub_rn(t, xv);
  e = __fadd_rn(e, __fadd_rn(__fsub_rn(s, sv), __fsub_rn(x, xv)));
  s = t;
}

// The consumer warpgroups meet in last_to_arrive on named barrier 1 (streamk.cuh's Meet):
// bar.red.or carries the leader's flag, no __shared__ one (a static flag took 1 KB of smem
// in the sm_90 kernels, the dynamic smem's alignment, and cute_wgmma_ws ran 3 % slower with
// it on short K: docs/design/cute_wgmma_ws.md#tail-code).
template <int kThreads>
struct ConsumersMeet {
  __device__ static bool any(bool p) {
    uint32_t r;
    asm volatile("{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n"
                 " bar.red.or.pred q, 1, %2, p;\n selp.u32 %0, 1, 0, q;\n}"
                 : "=r"(r) : "r"(uint32_t(p)), "n"(kThreads) : "memory");
    return r != 0;
  }
  __device__ static void sync() { any(false); }
  __device__ static bool share(bool, bool v) { return any(v); }   // v: false but the leader's
};

// The consumer warpgroups' share of a cut tile (kThreads of them, named barrier 1, counted
// in by streamk.cuh's last_to_arrive as stream-K's are): store this piece's partial as
// partial `piece` of cut tile `slot` (its counter the slot-th of ws, its partials after the
// counters; element i of thread t at i * kThreads + t: coalesced, and each thread reads back
// what its own index wrote), count it in, and, for the last piece to arrive, leave in acc
// the sum of every piece's partial in piece order (deterministic whoever arrives last) and
// return true (it alone runs the epilogue). kCompensated (the promoted consumers): a partial is the pair
// (sum, acc) a whole tile's epilogue adds, sums then errors, 2 * kThreads * size(acc) floats;
// the sums are added by TwoSum, the errors into the compensation: no rounding a whole tile
// does not have. Else a partial is acc (`sum` unused), added as a longer k-loop would add it.
// kGroup elements at a time, each piece's loads in flight together (one element at a time,
// the reads' latency made the fixup cost more than the cut saved).
template <int kThreads, bool kCompensated, class Acc>
__device__ __forceinline__ bool tail_fixup(Acc& acc, Acc const& sum, int thread, float* ws,
                                           int slot, int piece, int pieces) {
  constexpr int kSize = decltype(cute::size(acc))::value;
  constexpr int kPart = (kCompensated ? 2 : 1) * kThreads * kSize;   // floats of one partial
  // loads in flight per thread: 32, or the largest power of two dividing a narrower tile's
  // accumulators (80 of a 64x160 warpgroup tile: 16)
  constexpr int kGroup = kSize % 32 == 0 ? 32 : kSize % 16 == 0 ? 16 : 8;
  static_assert(kSize % kGroup == 0, "whole groups");
  int* counter = reinterpret_cast<int*>(ws) + slot;
  float* parts = ws + kStreamKCounters + slot * pieces * kPart;
  float* mine = parts + piece * kPart + thread;
  CUTE_UNROLL
  for (int i = 0; i < kSize; ++i) {
    if constexpr (kCompensated) {
      __stcg(mine + i * kThreads, sum(i));
      __stcg(mine + (kSize + i) * kThreads, acc(i));
    } else {
      __stcg(mine + i * kThreads, acc(i));
    }
  }
  if (!last_to_arrive<ConsumersMeet<kThreads>>(counter, pieces, thread == 0)) return false;
  const float* p = parts + thread;
  CUTE_UNROLL
  for (int g = 0; g < kSize; g += kGroup) {                // a group of elements at a time:
    float s[kGroup], e[kGroup];                            // each piece's loads all in flight
    CUTE_UNROLL
    for (int q = 0; q < kGroup; ++q) {
      s[q] = __ldcg(p + (g + q) * kThreads);
      if constexpr (kCompensated) e[q] = __ldcg(p + (kSize + g + q) * kThreads);
    }
    for (int j = 1; j < pieces; ++j) {                     // in piece order: deterministic
      const float* pj = p + j * kPart;
      float x[kGroup];
      CUTE_UNROLL
      for (int q = 0; q < kGroup; ++q) x[q] = __ldcg(pj + (g + q) * kThreads);
      if constexpr (kCompensated) {
        CUTE_UNROLL
        for (int q = 0; q < kGroup; ++q) two_sum_into(s[q], x[q], e[q]);
        CUTE_UNROLL
        for (int q = 0; q < kGroup; ++q) x[q] = __ldcg(pj + (kSize + g + q) * kThreads);
        CUTE_UNROLL
        for (int q = 0; q < kGroup; ++q) e[q] = __fadd_rn(e[q], x[q]);
      } else {
        CUTE_UNROLL
        for (int q = 0; q < kGroup; ++q) s[q] = __fadd_rn(s[q], x[q]);
      }
    }
    CUTE_UNROLL
    for (int q = 0; q < kGroup; ++q) acc(g + q) = kCompensated ? __fadd_rn(s[q], e[q]) : s[q];
  }
  return true;
}

// A consumer's item done (its k-loop retired): true where its consumers run the epilogue of
// the item's tile: a whole unit's, or the tile of a cut unit whose last piece this is (every
// piece's partial then added into acc: tail_fixup, kCompensated with the promoted `sum`).
template <int kThreads, int kCluster, bool kCompensated, class Acc>
__device__ __forceinline__ bool piece_done(Acc& acc, Acc const& sum, TailSplit const& split,
                                           int item, float* ws, int thread, int rank) {
  if (!split.cut(item)) return true;
  const int slot = (split.unit(item) - split.dp) * kCluster + rank;   // a tile of a cut unit
  return tail_fixup<kThreads, kCompensated>(acc, sum, thread, ws, slot, split.piece(item),
                                            split.pieces);
}

}  // namespace cg::sm90
