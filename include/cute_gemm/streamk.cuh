// Stream-K work decomposition for persistent GEMM launches (device side).
//
// Why: a data-parallel grid of T output tiles runs in ceil(T / slots) waves, slots =
// SMs x CTAs per SM; the last wave is partly empty (4096^3 in 128x128 tiles on 132 SMs
// x 2: 1024 tiles = 3.88 waves, the last one 88 % full). A persistent grid of G CTAs
// shares the work out evenly instead: whole tiles first, data-parallel, then the last
// tiles cut along K into G equal runs of k-tile iterations (Osama et al., "Stream-K",
// PPoPP 2023; CUTLASS's "data-parallel + stream-K" hybrid).
//
//   T tiles of I k-tiles each, G = gridDim.x CTAs:
//   * T % G == 0: every tile data-parallel (dp = T);
//   * else dp = (ceil(T/G) - 2) * G whole tiles (CTA c takes c, c + G, ...; none when
//     T < 2G), and the other T - dp tiles (between G and 2G of them, or T when T < G)
//     form S = (T - dp) * I iterations; CTA c takes [c*S/G, (c+1)*S/G). The host keeps
//     G <= S so that every CTA has at least one iteration (see streamk.stream_k_ctas).
//   A tile cut between CTAs (its "contributors", consecutive CTAs) is reduced by
//   streamk_fixup below through a workspace: kStreamKCounters int32 arrival counters
//   (one per stream-K tile; zero before a launch, and the last arrival at each tile
//   resets it, so every launch leaves them zero), then 2 partial-tile slots per CTA
//   (slot 0: the CTA's first run, which may end a tile; slot 1: its last run, which may
//   begin one). The counters sit at a fixed place whatever G is: one workspace serves
//   launches of any size (streamk.stream_k_workspace_bytes, STREAM_K_COUNTERS).
#pragma once

namespace cg {

// >= 2 * G for every launch (the host checks); the registry's value (records.STREAM_K_COUNTERS),
// defined in front of the kernel source by its Config (records.device_constants)
constexpr int kStreamKCounters = CUTE_GEMM_STREAM_K_COUNTERS;

// An aggregate (no constructor), so that a kernel can keep it in __shared__: read back
// per run, none of it stays live in registers across the mainloop (the register-staged
// 128-register entry points have none to spare).
// tile0: the launch covers tiles [tile0, tiles_m * tiles_n) of the grid's tile order (a
// data-parallel launch has run the whole waves before it: the host's split launch,
// streamk.stream_k_plan); the tile numbers below count from tile0.
struct StreamK {
  int tiles_m, tiles_n, tile0, k_tiles, ctas, dp_tiles;
  int sk_iters;              // < 2^31: the host launches stream-K only then
  int q, r;                  // sk_iters = q * ctas + r
  float inv;                 // ctas / sk_iters, for cta_of's estimate

  __device__ static StreamK make(int tiles_m, int tiles_n, int tile0, int k_tiles, int ctas) {
    const int tiles = tiles_m * tiles_n - tile0;
    const int waves = (tiles + ctas - 1) / ctas;
    const int dp = tiles % ctas == 0 ? tiles : (waves >= 2 ? (waves - 2) * ctas : 0);
    const int s = (tiles - dp) * k_tiles;
    const float inv = s > 0 ? __fdividef(float(ctas), float(s)) : 0.f;
    return StreamK{tiles_m, tiles_n, tile0, k_tiles, ctas, dp, s, s / ctas, s % ctas, inv};
  }
  // first stream-K iteration of CTA c (c == ctas: the end): floor(c * sk_iters / ctas),
  // in 32-bit arithmetic (c * r < ctas^2; a 64-bit division is a called subroutine whose
  // register convention made the 128-register entry points spill)
  __device__ int begin(int c) const { return c * q + (c * r) / ctas; }
  // the CTA whose run holds iteration x: the largest c with begin(c) <= x, which is
  // ceil((x + 1) * ctas / sk_iters) - 1. Estimated in float: the relative error is below
  // 2^-21 and the quotient at most ctas <= kStreamKCounters, so the estimate is off by at
  // most one either way, and one or two begin() settle it (no division by sk_iters: a
  // 64-bit or floating-point division is a called subroutine, see begin).
  __device__ int cta_of(int x) const {
    const int c = min(int(float(x + 1) * inv), ctas - 1);
    if (begin(c) > x) return c - 1;
    return c + 1 < ctas && begin(c + 1) <= x ? c + 1 : c;
  }
  // workspace slot of CTA c's run in stream-K tile u: 0 if it is c's first run
  __device__ int slot(int c, int u) const { return begin(c) / k_tiles == u ? 0 : 1; }
};

// How the threads that share a cut tile meet in last_to_arrive: Meet::sync() is their
// barrier, Meet::share(leader, v) a barrier after which each of them has the leader's v.
// A whole CTA: bar.sync twice and a __shared__ flag. With __syncthreads_or carrying the flag
// instead, cute_pipelined's split launches ran 5 % slower at 1024^3 (H200,
// docs/design/cute_pipelined.md#meet).
struct CtaMeet {
  __device__ static void sync() { __syncthreads(); }
  __device__ static bool share(bool leader, bool v) {
    __shared__ int s_v;      // rewritten only after the next sync(), once every thread read it
    if (leader) s_v = v;
    __syncthreads();
    return s_v != 0;
  }
};

// Count one share of a cut tile in at `counter` (n shares in all), once the threads that
// wrote it have stored their part (Meet: how they meet, `leader` one of them). True for the
// last share to arrive, which then sees every share's stores, and which also zeroes the
// counter for the next launch. No share waits for another. The leader's count is one
// acquire-release atomic at GPU scope: the barrier before it orders the share's stores
// ahead of its release, the barrier after it the reads behind its acquire (CUTLASS's
// barrier does the same; a fence.sc in every thread cost more, docs/design/cute_mma_sm80.md).
template <class Meet>
__device__ __forceinline__ bool last_to_arrive(int* counter, int n, bool leader) {
  Meet::sync();
  bool last = false;
  if (leader) {
    int arrived;
    asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;"
                 : "=r"(arrived) : "l"(counter) : "memory");
    last = arrived == n - 1;
    if (last) *counter = 0;   // all n are in: ready for the next launch
  }
  return Meet::share(leader, last);
}

// Reduce one stream-K tile cut between `n` consecutive CTAs; `me` is this CTA's index
// among them, part(j) contributor j's slot (kThreads * size(acc) floats). Every
// contributor stores its partial (element i of thread t at i * kThreads + t: coalesced,
// and the reader thread t reads back what thread t of each contributor wrote), then
// counts itself in; the last to arrive sums all partials in contributor order (the
// same order whoever arrives last: deterministic results), leaves the sum in acc and
// returns true — it alone runs the epilogue. No CTA ever waits on another, so any
// number of CTAs may be resident at once.
template <int kThreads, class Acc, class Part>
__device__ __forceinline__ bool streamk_fixup(Acc& acc, int* counter, int n, int me, Part part) {
  float* mine = part(me);
#pragma unroll
  for (int i = 0; i < int(cute::size(acc)); ++i) __stcg(mine + i * kThreads + threadIdx.x, acc(i));
  if (!last_to_arrive<CtaMeet>(counter, n, threadIdx.x == 0)) return false;
  const float* p0 = part(0);
#pragma unroll
  for (int i = 0; i < int(cute::size(acc)); ++i) acc(i) = __ldcg(p0 + i * kThreads + threadIdx.x);
  for (int j = 1; j < n; ++j) {
    const float* pj = part(j);
#pragma unroll
    for (int i = 0; i < int(cute::size(acc)); ++i) acc(i) += __ldcg(pj + i * kThreads + threadIdx.x);
  }
  return true;
}

}  // namespace cg
