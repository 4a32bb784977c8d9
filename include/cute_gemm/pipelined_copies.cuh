// Global -> shared copies of the tuned kernel (c3_pipelined.cu): one TiledCopy type per way
// an operand goes into the smem pipeline. EXT is the tile extent along m or n (BLK_M or BLK_N).
//
//   m/n-major operands: 16-byte cp.async straight into the m/n-contiguous compute stages
//     (CpVecMN), or 4-byte cp.async in the fallback entries (any alignment: CpSclMN, CpSclK).
//   k-major operands, 16-byte vectors of 4 consecutive k (BLK_K/4 threads per row = whole
//     32-byte sectors). The compute side wants m/n contiguous and cp.async cannot transpose:
//     - one k-major operand: register-staged (LdVecK). LDG.128 of k-tile t+STAGES-1 into
//       registers, stored to its compute stage as 4 STS.32 later in k-tile t, in groups
//       spread over the k-tile where registers are short (pipelined_mainloop.cuh, kPhases;
//       docs/design/cute_pipelined.md#staged-groups);
//     - both k-major: raw stages (CpVecK). 16-byte cp.async into k-major "raw" stages
//       (STAGES of them); mid k-tile t each thread reads its own vectors of k-tile t+1 back
//       (LDS.128) and stores them (4 STS.32) to one of 2 m/n-contiguous compute buffers. No
//       registers held across a global load (staging both in registers needs 4 groups at
//       128 registers, slower: docs/design/cute_pipelined.md#raw-stages).
//
//   copy 16 B along m/n: thr (E/4, T/(E/4)):(1,E/4), E = EXT capped at T threads, val (4,1)
//                                                   [128x128, 256 thr: (32,8), val (4,1)]
//   copy 16 B along k (registers, or cp.async to raw): thr (T/Q, Q):(Q,1), Q = BLK_K/4, val (1,4)
//                                                   [BLK_K 8, 256 thr: (128,2):(2,1)]
//   copy 4 B along m/n:  thr (32, T/32):(1,32), val (1,1)
//   copy 4 B along k:    thr (T/8, 8):(8,1),    val (1,1)
//   raw stages (CpVecK): (EXT,BLK_K,STAGES):(BLK_K,1,EXT*BLK_K), unpadded: a warp's vectors
//                        are whole 64-byte rows
#pragma once

#include <cute_gemm/cute.cuh>
#include <cute_gemm/pipelined_config.cuh>

namespace cg {

constexpr int cmin(int a, int b) { return a < b ? a : b; }

// Each copy is a tag naming its TiledCopy (Tiled): a compile of some entry points builds only
// the TiledCopy types they use (the CuTe algebra of make_tiled_copy is costly to compile).
// 16-byte cp.async along m/n, L2 only (.cg): the CTA reads each element once
template <class Cfg, int EXT, int T = PipeGeometry<Cfg>::kThreads>
struct CpVecMN {
  using Tiled = decltype(cute::make_tiled_copy(
      cute::Copy_Atom<cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>, float>{},
      cute::Layout<cute::Shape<cute::Int<cmin(EXT / 4, T)>, cute::Int<T / cmin(EXT / 4, T)>>>{},
      cute::Layout<cute::Shape<cute::_4, cute::_1>>{}));
};
template <class Cfg, int T = PipeGeometry<Cfg>::kThreads>      // 4-byte, 32 threads along m/n
struct CpSclMN {
  using Tiled = decltype(cute::make_tiled_copy(
      cute::Copy_Atom<cute::SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
      cute::Layout<cute::Shape<cute::_32, cute::Int<T / 32>>>{}));
};
template <class Cfg, int T = PipeGeometry<Cfg>::kThreads>      // 4-byte, 8 threads along k
struct CpSclK {
  using Tiled = decltype(cute::make_tiled_copy(
      cute::Copy_Atom<cute::SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
      cute::Layout<cute::Shape<cute::Int<T / 8>, cute::_8>, cute::Stride<cute::_8, cute::_1>>{}));
};
// k-major into raw stages; the thread layout also serves the raw -> compute transpose
// (partition_D of both buffers), so that a thread transposes its own vectors
template <class Cfg, int T = PipeGeometry<Cfg>::kThreads, int Q = PipeGeometry<Cfg>::kQuadsK>
struct CpVecK {
  using Tiled = decltype(cute::make_tiled_copy(
      cute::Copy_Atom<cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>, float>{},
      cute::Layout<cute::Shape<cute::Int<T / Q>, cute::Int<Q>>, cute::Stride<cute::Int<Q>, cute::_1>>{},
      cute::Layout<cute::Shape<cute::_1, cute::_4>>{}));
};
// k-major, register-staged: one LDG.128 per vector, stored to the stage later as 4 STS.32
template <class Cfg, int T = PipeGeometry<Cfg>::kThreads, int Q = PipeGeometry<Cfg>::kQuadsK>
struct LdVecK {
  using Tiled = decltype(cute::make_tiled_copy(
      cute::Copy_Atom<cute::UniversalCopy<cute::uint128_t>, float>{},
      cute::Layout<cute::Shape<cute::Int<T / Q>, cute::Int<Q>>, cute::Stride<cute::Int<Q>, cute::_1>>{},
      cute::Layout<cute::Shape<cute::_1, cute::_4>>{}));
};

// How an operand copied by TC goes in: through raw stages, or staged in registers.
template <class Cfg, class TC>
constexpr bool kRaw = cute::is_same_v<TC, CpVecK<Cfg>>;
template <class Cfg, class TC>
constexpr bool kStaged = cute::is_same_v<TC, LdVecK<Cfg>>;

// __launch_bounds__ minimum CTAs per SM of a data-parallel entry point, by its copies.
// min_blocks_mn = 1 lifts ptxas's 128-register cap for am_bn: it still allocates 128 (2
// CTAs/SM stay resident) but schedules the mainloop better; the other entries exceed 128
// registers without the cap and lose (docs/design/cute_pipelined.md#register-cap).
template <class Cfg, class CA, class CB>
constexpr int kMinBlocks = cute::is_same_v<CA, CpVecMN<Cfg, Cfg::blk_m>> && cute::is_same_v<CB, CpVecMN<Cfg, Cfg::blk_n>>
                               ? Cfg::min_blocks_mn : Cfg::min_blocks;

// One operand's share of a k-tile, issued: cp.async into stage `stage` of its compute
// stages (m/n-major) or raw stages (k-major, CpVecK) — a copy whose first element lies
// outside the matrix is zero-filled instead of read — or LDG.128 into registers (zeros
// outside) for a register-staged operand (LdVecK, `staged`). Only the CPY_M slices in
// [lo, hi) (compile-time bounds after unrolling). kPred: edge tile, every copy checked.
// kFirst: an interior tile's first k-tile of a walk shifted by the K residue, each copy
// checked against k >= k_lo alone.
// (static: as the mainloop's own lambdas were, so that NVVM inlines them the same way)
template <bool kPred, bool kFirst, class Cp, class TG, class TC, class TS, class TR, class Shp,
          class Staged>
static __device__ inline void issue_slices(Cp const& cp, TG const& tg, TC const& tc, TS& ts, TR& tr,
                                           Shp const& shp, int k_tile, int stage, Staged staged,
                                           int lo, int hi, int k_lo) {
  using namespace cute;
  static_assert(!(kPred && kFirst), "edge tiles walk K unshifted");
  CUTE_UNROLL
  for (int m = 0; m < size<1>(ts); ++m) {
    if (m < lo || m >= hi) continue;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(ts); ++k) {
      const bool in = kFirst ? get<1>(tc(0, m, k, k_tile)) >= k_lo
                             : !kPred || elem_less(tc(0, m, k, k_tile), shp);
      if constexpr (decltype(staged)::value) {
        if constexpr (kPred || kFirst) clear(tr(_, m, k));
        if (in) copy(cp, tg(_, m, k, k_tile), tr(_, m, k));
      } else {
        copy(cp.with(in), tg(_, m, k, k_tile), ts(_, m, k, stage));
      }
    }
  }
}

// Element by element, in cute::copy's order: for copies that cannot be vectorized (the
// transposing register -> smem stores), where cute::copy would first work that out through
// layout algebra that is costly to compile.
template <class TS, class TD>
__device__ __forceinline__ void copy_scalar(TS const& src, TD&& dst) {
  CUTE_UNROLL
  for (int i = 0; i < cute::size(dst); ++i) dst(i) = src(i);
}

// Register-staged slices [lo, hi): registers -> stage, 4 STS.32 per vector (the transpose).
template <class TR, class TS>
static __device__ inline void stash_slices(TR& tr, TS& ts, int stage, int lo, int hi) {
  using namespace cute;
  CUTE_UNROLL
  for (int m = 0; m < size<1>(ts); ++m)
    if (m >= lo && m < hi) copy_scalar(tr(_, m, _), ts(_, m, _, stage));
}

// The schedule of the register-staged slices (kSlA + kSlB CPY_M slices of the operand
// copied by LdVecK; 0 for the others) over a k-tile. They go in kPhases groups: one group
// is loaded at k-block 0 and stored to smem at stash_k; two (BLK_K 16, the 128-register
// budget of 2 CTAs/SM) are loaded at k-blocks 0 and load1_k and stored at stash0_k and
// stash_k (the stores before the k-tile's barrier, each after its own load). Each group's
// LDG has until its store to land: loading the second group early (load1_k) gives it the
// most cover (docs/design/cute_pipelined.md#staged-groups).
template <class Cfg, int SlA, int SlB>
struct StagedGroups {
  static constexpr int kSlA = SlA, kSlB = SlB, kU = SlA + SlB;
  static constexpr int kPhases = (kU > 1 && Cfg::blk_k >= 16) ? 2 : 1;
  static constexpr int load_k(int p) { return p == 0 ? 0 : Cfg::load1_k; }
  static constexpr int stash_k(int p) { return p + 1 == kPhases ? Cfg::stash_k : Cfg::stash0_k; }
  static_assert(kPhases <= 2, "at most two register-staged groups");
  static_assert(Cfg::stash_k <= Cfg::blk_k - 1 && Cfg::stash_k > (kPhases == 2 ? Cfg::load1_k : 0),
                "the last group's stores after its load, before the barrier");
  static_assert(kPhases == 1 || (Cfg::load1_k >= 0 && Cfg::stash0_k > 0 && Cfg::stash0_k <= Cfg::blk_k - 1),
                "the first group's stores after its load, before the barrier");
};

}  // namespace cg
