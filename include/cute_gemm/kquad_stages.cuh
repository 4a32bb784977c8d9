// Compute stages in shared memory for the tuned kernel (c3_pipelined.cu): padded, or in
// k-quads for k-major operands.
//
// The compute side wants m/n contiguous (LDS.128 of 4 consecutive m or n), so a k-major
// operand is transposed on its way in: 4 STS.32 per 16-byte vector of 4 consecutive k.
//   Padded  (EXT,BLK_K,BUF):(1,EXT+PAD,kStage), PAD = 4: a warp's 4-byte k-major stores,
//           4 rows x 8 k (4-byte copies) or 16 rows x 2 k-quads (vectors, BLK_K 8), land in
//           banks m + 4k: 32 distinct; columns stay 16-byte aligned. At BLK_K 16 a warp's
//           transposed stores (8 rows x 4 quads) are 2-way conflicted there.
//   k-quad  (EXT,(4,BLK_K/4),BUF):(1,(EXT,4*EXT+32/(BLK_K/4)),kStage): the 4 columns of a
//           k-quad unpadded, quads 32/(BLK_K/4) words out of step (8 at BLK_K 16), so the
//           same stores land in banks m + 8*quad: all 32. No more smem than the padded
//           stages, so 2 CTAs/SM keep the same L1/smem carveout.
// (docs/design/cute_pipelined.md#k-quad-stages; ladder_cute.kquad_stage mirrors the sizes.)
#pragma once

#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/pipelined_config.cuh>

namespace cg {

// Words of one compute stage of extent EXT (BLK_M or BLK_N) along m/n.
template <class Cfg, int EXT, bool kQuad>
constexpr int kStage = kQuad ? Cfg::blk_k * EXT + 32 : Cfg::blk_k * (EXT + kSmemPad);

template <class Cfg, int EXT, int BUF, bool kQuad>
using StageLayout = cute::conditional_t<kQuad,
    cute::Layout<cute::Shape<cute::Int<EXT>, cute::Shape<cute::_4, cute::Int<Cfg::blk_k / 4>>, cute::Int<BUF>>,
                 cute::Stride<cute::_1, cute::Stride<cute::Int<EXT>, cute::Int<4 * EXT + 32 / (Cfg::blk_k / 4)>>,
                              cute::Int<kStage<Cfg, EXT, true>>>>,
    cute::Layout<cute::Shape<cute::Int<EXT>, cute::Int<Cfg::blk_k>, cute::Int<BUF>>,
                 cute::Stride<cute::_1, cute::Int<EXT + kSmemPad>, cute::Int<kStage<Cfg, EXT, false>>>>>;

// Which operands take k-quad stages (Config::kq_layout): those fed from raw stages (bit 0),
// register-staged ones (bit 1) — in stream-K runs (kSk) only with bit 2 and on sm_90+: on
// sm_80 ptxas spills there at 128 registers.
template <class Cfg>
constexpr bool kQuadRaw = (Cfg::kq_layout & 1) != 0;
template <class Cfg, bool kSk>
constexpr bool kQuadStaged = (Cfg::kq_layout & 2) && (!kSk || (kArch >= 900 && (Cfg::kq_layout & 4) != 0));

}  // namespace cg
