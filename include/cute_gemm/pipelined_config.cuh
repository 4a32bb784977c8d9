// The configuration of the tuned CuTe kernel (kernels/cute/c3_pipelined.cu), and the thread
// geometry every part of it derives from one.
//
// A registered configuration is one `struct Config` of static constexpr members, written by
// the registry (cute_gemm/registry/ladder_cute.py, PipelinedConfig.cpp()) in front of the kernel
// source. The parts the kernel is composed of are templates over it: the mainloop
// (pipelined_mainloop.cuh), its operand copies (pipelined_copies.cuh), its smem stages
// (kquad_stages.cuh), the epilogue (smem_epilogue.cuh) and the tile scheduler
// (tile_scheduler.cuh). Members, named alike in Python; why each value is what it is:
// docs/design/cute_pipelined.md, by the anchor given.
//   blk_m, blk_n, blk_k    CTA tile                                      (#tile-and-stages)
//   stages                 k-tiles in the shared-memory ring (>= 3)
//   thr_m, thr_n           threads along m and n; the block is thr_m * thr_n
//   min_blocks             __launch_bounds__ minimum CTAs per SM (2: the 128-register cap)
//   min_blocks_mn          ... of the data-parallel am_bn entry          (#register-cap)
//   fma_order              FFMA order of one k-block's outer product     (#ffma-order)
//   fma_order_raw          ... in the entry with raw stages (both operands k-major)
//   load1_k, stash0_k, stash_k  k-blocks where register-staged groups are loaded and
//                          stored to smem                                (#staged-groups)
//   trans_k                k-block of the raw -> compute transpose       (#trans-k)
//   kq_layout              k-quad compute stages of k-major operands: bit 0 those fed from
//                          raw stages, bit 1 register-staged ones, bit 2 the latter in
//                          stream-K twins as well (sm_90+)               (#k-quad-stages)
//   kt_unroll              k-tiles per mainloop iteration of the both-k-major
//                          data-parallel entry                           (#kt-unroll)
//   epi_ak_bk, epi_ak_bn   interior epilogue of those data-parallel entries (#epilogue)
//   stream_k               persistent stream-K twins (*_sk), started by programmatic
//                          dependent launch on sm_90+                    (#stream-k)
//   twin_am_bk             am_bk has a twin of its own (else ak_bn's on C^T) (#skinny)
//   twins_scalar           the 4-byte entries have twins too             (#skinny)
//   raw_k                  a single k-major operand (ak_bn, am_bk) through raw stages and
//                          a transpose, as when both are; else register-staged (#raw-k)
//   sk_smem                (derived) dynamic smem bytes the twins are launched with (#twin-smem)
//   dyn_smem               (derived) ... and the data-parallel entries (pipelined_mainloop.cuh
//                          checks both against what it addresses)
#pragma once

#include <cute_gemm/cute.cuh>

namespace cg {

// How a data-parallel interior tile stores C (smem_epilogue.cuh): scalar stores from the
// fragments, a row-major C through smem as 16-byte stores, or (sm_90+, beta 0) through smem
// by bulk copies. Stream-K runs and edge tiles store scalar.
enum class Epi { scalar, smem16, bulk };

// The same in every configuration: constants, not knobs (the sweeps that settled them:
// docs/design/cute_pipelined.md#tile-and-stages, #frag-db). The registry's values
// (ladder_cute.WARP_M, SMEM_PAD), defined in front of the kernel source by its Config.
constexpr int kWarpM = CUTE_GEMM_WARP_M;     // a warp is a kWarpM x (32 / kWarpM) patch of the TiledMMA's threads
constexpr int kSmemPad = CUTE_GEMM_SMEM_PAD; // words of padding per k column of a padded stage
constexpr int kRasterN = 8;   // tile columns per group of the CTA order (tile_scheduler.cuh)

// Threads and TiledMMA of a configuration. UniversalFMA atoms with a permutation so that each
// thread owns 4 consecutive m (and n) per group: its fragments load from smem as LDS.128,
// and a hierarchical atom layout so that a warp is a kWarpM x kWarpN patch of threads
// (4 x 8: one warp LDS.128 reads 64 B of A and 128 B of B, broadcast to the rest).
//   atom layout ((kWarpM, thr_m/kWarpM), (kWarpN, thr_n/kWarpN), 1)
//             : ((1, 32), (kWarpM, 32*thr_m/kWarpM), 0)                    thread -> (tm, tn)
//   permutation M: (thr_m, 4, blk_m/(4*thr_m)):(4, 1, 4*thr_m), N likewise
//   -> thread (tm,tn) owns C(4*tm + i0 + 4*thr_m*i1, 4*tn + j0 + 4*thr_n*j1), i0,j0 < 4.
template <class Cfg>
struct PipeGeometry {
  static constexpr int kThreads = Cfg::thr_m * Cfg::thr_n;
  static constexpr int kWarpN = 32 / kWarpM;
  static constexpr int kQuadsK = Cfg::blk_k / 4;     // 16-byte k-quads in one k-major row of a k-tile
  using MmaAtomLayout =
      cute::Layout<cute::Shape<cute::Shape<cute::Int<kWarpM>, cute::Int<Cfg::thr_m / kWarpM>>,
                               cute::Shape<cute::Int<kWarpN>, cute::Int<Cfg::thr_n / kWarpN>>, cute::_1>,
                   cute::Stride<cute::Stride<cute::_1, cute::_32>,
                                cute::Stride<cute::Int<kWarpM>, cute::Int<32 * (Cfg::thr_m / kWarpM)>>,
                                cute::_0>>;
  using PermM = cute::Layout<cute::Shape<cute::Int<Cfg::thr_m>, cute::_4, cute::Int<Cfg::blk_m / (4 * Cfg::thr_m)>>,
                             cute::Stride<cute::_4, cute::_1, cute::Int<4 * Cfg::thr_m>>>;
  using PermN = cute::Layout<cute::Shape<cute::Int<Cfg::thr_n>, cute::_4, cute::Int<Cfg::blk_n / (4 * Cfg::thr_n)>>,
                             cute::Stride<cute::_4, cute::_1, cute::Int<4 * Cfg::thr_n>>>;
  using TiledMma = decltype(cute::make_tiled_mma(cute::UniversalFMA<float, float, float, float>{},
                                                 MmaAtomLayout{},
                                                 cute::Tile<PermM, PermN, cute::Underscore>{}));

  static_assert(Cfg::blk_m % (4 * Cfg::thr_m) == 0 && Cfg::blk_n % (4 * Cfg::thr_n) == 0, "4x4 blocks per thread");
  static_assert(32 % kWarpM == 0 && Cfg::thr_m % kWarpM == 0 && Cfg::thr_n % kWarpN == 0, "warp patch");
  static_assert(Cfg::stages >= 3, "multistage: at least 2 k-tiles in flight during compute");
  static_assert(Cfg::blk_k % 4 == 0, "k-quads; BLK_K even for the register double buffer");
  static_assert(Cfg::kq_layout == 0 || 8 % (Cfg::blk_k / 4) == 0,
                "k-quad stages (kquad_stages.cuh): quads 32/(BLK_K/4) words apart, a whole number "
                "of 16-byte columns: BLK_K 4, 8, 16 or 32");
  static_assert(Cfg::blk_m % 32 == 0 && Cfg::blk_n % 32 == 0 && kSmemPad == 4,
                "(BLK + 4) % 32 == 4: conflict-free 4-byte k-major stores, 16-byte aligned columns");
};

}  // namespace cg
