// cute_pipelined — CuTe: the tuned kernel, composed from one-idea parts in include/cute_gemm/.
//
// Adds over cute_multistage (c3_multistage.cu, the multistage cp.async pipeline alone), each
// part its own header and each choice a member of one Config (pipelined_config.cuh; the
// registry writes it: ladder_cute.PipelinedConfig, measurements: docs/design/cute_pipelined.md):
//  * mainloop (pipelined_mainloop.cuh): register fragments double-buffered from smem as
//    LDS.128 by a permuted TiledMMA (8x8 FFMA per thread, FFMA order by config), k-tiles
//    unrolled where it pays, interior CTAs with every check compiled out;
//  * operand copies (pipelined_copies.cuh): 16-byte cp.async along m/n; along k
//    register-staged in groups (one k-major operand) or through k-major raw stages and a
//    transpose (both k-major; one too with Config::raw_k); 4-byte cp.async fallbacks for any
//    alignment;
//  * compute stages (kquad_stages.cuh): padded, or k-quad stages whose transposed stores are
//    free of bank conflicts;
//  * epilogue (smem_epilogue.cuh): scalar, or a row-major C through smem as 16-byte stores or
//    bulk copies (sm_90), by entry;
//  * tile scheduler (tile_scheduler.cuh, streamk.cuh): grouped CTA order for L2 reuse, and
//    persistent stream-K twins (*_sk) for a partly empty last wave, started by programmatic
//    dependent launch (Config::stream_k); split-K shares (*_part) summed by a second launch
//    (util/split_reduce.cu) for gemm()'s split picks.
// Geometry: Config::blk_m x blk_n x blk_k, thr_m x thr_n threads, `stages` k-tiles in flight;
//           each thread owns (blk_m/thr_m) x (blk_n/thr_n) accumulators (8x8 at 128x128 /
//           16x16 threads), in 4x4 blocks 4*thr_m apart along m.
// Residues: predicated copies through identity tensors (pipelined_mainloop.cuh); the
//           16-byte entry points only when the contiguous extents are multiples of 4.
// Bottleneck: FFMA issue; per k-tile the barrier, the refill and its address math.
//
// Config: prepended to this file by the registry (compile.read_source, Kernel.config).
#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>
#include <cute_gemm/pipelined_config.cuh>
#include <cute_gemm/pipelined_copies.cuh>
#include <cute_gemm/pipelined_mainloop.cuh>
#include <cute_gemm/smem_epilogue.cuh>
#include <cute_gemm/tile_scheduler.cuh>

constexpr int kThreads = cg::PipeGeometry<Config>::kThreads;
// The copies of each entry point (pipelined_copies.cuh)
using CpVecM = cg::CpVecMN<Config, Config::blk_m>;   // 16-byte cp.async along m
using CpVecN = cg::CpVecMN<Config, Config::blk_n>;   // ... along n
// 16-byte along k for a single k-major operand: register-staged, or through raw stages as
// when both are (Config::raw_k: a prefetch distance of the whole ring instead of one k-tile)
using VecK1 = cute::conditional_t<Config::raw_k, cg::CpVecK<Config>, cg::LdVecK<Config>>;
using CpVecK = cg::CpVecK<Config>;                   // 16-byte along k, raw stages (both k-major)
using CpSclMN = cg::CpSclMN<Config>;                 // 4-byte cp.async along m/n
using CpSclK = cg::CpSclK<Config>;                   // 4-byte cp.async along k

// One tile's k-tiles [k0, k1). kFast: interior tiles take the unchecked instantiation
// (vector entry points; the scalar fallbacks serve odd shapes and alignments and keep
// one instantiation).
template <bool kFast, class StrideA, class StrideB, class CopyA, class CopyB, class KEnd, class Epi,
          class Fused>
__device__ __forceinline__ void tile_gemm(int tile_m, int tile_n, int k0, KEnd k1, Epi&& epi,
                                          int M, int N, int K, float alpha, const float* A,
                                          StrideA dA, const float* B, StrideB dB, float beta,
                                          float* C, long long sCm, long long sCn, Fused const& fused) {
  // 128-byte aligned: the stream-K twins put it after their static smem (48 bytes), and
  // 16-byte aligned there their raw stages' cp.async touched twice the sectors
  // (see docs/design/cute_pipelined.md#twin-smem)
  extern __shared__ __align__(128) float smem_buf[];
  if constexpr (kFast) {
    // block-uniform; a stream-K run of a tile whose K has a residue checks every copy
    // (pipelined_mainloop.cuh: residue first is for data-parallel tiles)
    if ((tile_m + 1) * Config::blk_m <= M && (tile_n + 1) * Config::blk_n <= N &&
        (cute::is_same_v<KEnd, cg::KEndValue> || K % Config::blk_k == 0)) {
      cg::gemm_pipelined<Config, false>(tile_m, tile_n, k0, k1, epi, M, N, K, alpha, A, dA, B, dB,
                                        beta, C, sCm, sCn, CopyA{}, CopyB{}, smem_buf, fused);
      return;
    }
  }
  cg::gemm_pipelined<Config, true>(tile_m, tile_n, k0, k1, epi, M, N, K, alpha, A, dA, B, dB, beta,
                                   C, sCm, sCn, CopyA{}, CopyB{}, smem_buf, fused);
}

// Data-parallel: one tile per CTA, in the grouped order; kEpi: how the interior tiles store,
// fused: through what (the call's fused epilogue, epilogue.cuh).
template <bool kFast, cg::Epi kEpi, class StrideA, class StrideB, class CopyA, class CopyB, class Fused>
__device__ __forceinline__ void dispatch(int M, int N, int K, float alpha, const float* A,
                                         StrideA dA, const float* B, StrideB dB, float beta,
                                         float* C, long long sCm, long long sCn, Fused const& fused) {
  int tile_m, tile_n;
  cg::cta_tile<Config::blk_m, Config::blk_n>(M, N, tile_m, tile_n);
  tile_gemm<kFast, StrideA, StrideB, CopyA, CopyB>(tile_m, tile_n, 0,
                                                   cg::KEndValue{cg::ceil_div(K, Config::blk_k)},
                                                   cg::StoreTile<kEpi>{}, M, N, K, alpha, A, dA, B,
                                                   dB, beta, C, sCm, sCn, fused);
}

// Stream-K twin: the persistent walk (tile_scheduler.cuh) over runs of one tile's k-tiles,
// whose end each run reads from shared memory. Built only where the configuration has the
// twin (kOn; else the entry point traps: the registry lists no twin then).
template <bool kOn, bool kFast, class StrideA, class StrideB, class CopyA, class CopyB, class Fused>
__device__ __forceinline__ void dispatch_sk(int M, int N, int K, float alpha, const float* A,
                                            StrideA dA, const float* B, StrideB dB, float beta,
                                            float* C, long long sCm, long long sCn, float* ws,
                                            int tile0, Fused const& fused) {
  if constexpr (kOn) {
    cg::streamk_tiles<kThreads, Config::blk_m, Config::blk_n, Config::blk_k>(
        M, N, K, ws, tile0,
        [&](int tile_m, int tile_n, int k0, int k1, auto&& epi) CG_LAMBDA_INLINE_IF_FUSED {
          if (threadIdx.x == 0) cg::sk_k_end() = k1;
          __syncthreads();   // and the previous run's last smem reads are done before the prologue
          tile_gemm<kFast, StrideA, StrideB, CopyA, CopyB>(tile_m, tile_n, k0, cg::KEndShared{}, epi,
                                                          M, N, K, alpha, A, dA, B, dB, beta, C,
                                                          sCm, sCn, fused);
        });
  } else {
    __trap();
  }
}

// Split-K with a reduction launch: CTA (x, y, s) of a (tiles, split) grid is a data-parallel
// CTA of the GEMM over the s-th even share of K's k-tiles (A and B offset to its start, the
// partial k-tile in the last share: the same code as a data-parallel launch, k from 0, where a
// run-time first k-tile spilled), storing the plain sums in slice s of ws, (M, ldw) row-major
// with ldw = N rounded up to 4 (16-byte rows) through the entry's epilogue;
// util/split_reduce.cu then adds the slices in order into C. Nothing is counted and no CTA
// waits for another; the reduction starts by programmatic launch.
template <bool kOn, cg::Epi kEpi, class StrideA, class StrideB, class CopyA, class CopyB>
__device__ __forceinline__ void dispatch_part(int M, int N, int K, const float* A, StrideA dA,
                                              const float* B, StrideB dB, float* ws, int split) {
  if constexpr (kOn) {
    int tile_m, tile_n;
    cg::cta_tile<Config::blk_m, Config::blk_n>(M, N, tile_m, tile_n);
    // k_tiles * split < 2^31: the host splits only then (modes.SplitReduce.plan)
    const int k_tiles = cg::ceil_div(K, Config::blk_k), s = blockIdx.z;
    const int k_lo = s * k_tiles / split * Config::blk_k;
    const int k_len = min(K, (s + 1) * k_tiles / split * Config::blk_k) - k_lo;
    const long long ldw = (N + 3) & ~3;
    tile_gemm<true, StrideA, StrideB, CopyA, CopyB>(
        tile_m, tile_n, 0, cg::KEndValue{cg::ceil_div(k_len, Config::blk_k)}, cg::StoreTile<kEpi>{},
        M, N, k_len, 1.0f, A + k_lo * cute::get<1>(dA), dA, B + k_lo * cute::get<1>(dB), dB, 0.0f,
        ws + s * M * ldw, ldw, 1, cg::Epilogue<>{nullptr});
  } else {
    __trap();
  }
}

#define CG_PIPE_ENTRY(NAME, DA, DB, CA, CB, FAST, EPI)                                   \
  CG_ENTRY(NAME, __launch_bounds__(kThreads, (cg::kMinBlocks<Config, CA, CB>)),          \
           (CG_GEMM_PARAMS, CG_EPI_PARAMS), {                                             \
    cg::pdl_launch_dependents<Config::stream_k>();                                        \
    dispatch<FAST, EPI, decltype(DA), decltype(DB), CA, CB>(M, N, K, alpha, A, DA, B, DB,   \
                                                             beta, C, sCm, sCn,           \
                                                             CG_EPILOGUE{&epi});          \
  })
// A batch (CG_BATCH_PARAMS, one mode: Kernel.batch_modes): the entry again, moved to its
// problem first. Twins, not the entries themselves: moved pointers cost am_bn 40 registers,
// which 2-D calls would pay for; two modes spilled ak_bn and am_bk (docs/design/batched.md).
#define CG_PIPE_BATCH_ENTRY(NAME, DA, DB, CA, CB, FAST, EPI)                             \
  CG_ENTRY(NAME##_b, __launch_bounds__(kThreads, Config::min_blocks),                    \
           (CG_GEMM_PARAMS, CG_BATCH_PARAMS, CG_EPI_PARAMS), {                            \
    const long long l_ = z0 + blockIdx.z;                                                 \
    A += l_ * bA1;                                                                        \
    B += l_ * bB1;                                                                        \
    C += l_ * bC1;                                                                        \
    dispatch<FAST, EPI, decltype(DA), decltype(DB), CA, CB>(M, N, K, alpha, A, DA, B, DB,   \
                                                             beta, C, sCm, sCn,           \
                                                             CG_EPILOGUE{&epi});          \
  })
#define CG_PIPE_SK_ENTRY(NAME, DA, DB, CA, CB, FAST, ON)                                 \
  CG_ENTRY(NAME, __launch_bounds__(kThreads, Config::min_blocks),                        \
           (CG_GEMM_PARAMS, float* __restrict__ ws, int tile0, CG_EPI_PARAMS), {          \
    dispatch_sk<Config::stream_k && (ON), FAST, decltype(DA), decltype(DB), CA, CB>(       \
        M, N, K, alpha, A, DA, B, DB, beta, C, sCm, sCn, ws, tile0, CG_EPILOGUE{&epi});   \
    cg::pdl_wait<Config::stream_k>();                                                     \
  })

#define CG_PIPE_PART_ENTRY(NAME, DA, DB, CA, CB, EPI, ON)                                 \
  CG_ENTRY(NAME, __launch_bounds__(kThreads, (cg::kMinBlocks<Config, CA, CB>)),          \
           (CG_GEMM_PARAMS, float* __restrict__ ws, int split, CG_EPI_PARAMS), {          \
    cg::pdl_launch_dependents<Config::stream_k>();                                        \
    dispatch_part<Config::stream_k && (ON), EPI, decltype(DA), decltype(DB), CA, CB>(        \
        M, N, K, A, DA, B, DB, ws, split);                                                \
  })

// Vector entry points (align 4, contiguous extents % 4 == 0): 16-byte cp.async for m-/n-major
// operands, register-staged 16-byte loads for one k-major operand (raw stages with
// Config::raw_k), raw stages for two; interior CTAs unchecked.
CG_PIPE_ENTRY(cute_pipelined_am_bn, CG_DA_m, CG_DB_n, CpVecM, CpVecN, true, cg::Epi::scalar)
CG_PIPE_ENTRY(cute_pipelined_am_bk, CG_DA_m, CG_DB_k, CpVecM, VecK1, true, cg::Epi::scalar)
CG_PIPE_ENTRY(cute_pipelined_ak_bn, CG_DA_k, CG_DB_n, VecK1, CpVecN, true, Config::epi_ak_bn)
CG_PIPE_ENTRY(cute_pipelined_ak_bk, CG_DA_k, CG_DB_k, CpVecK, CpVecK, true, Config::epi_ak_bk)
// 4-byte cp.async only (any alignment, any extents), every copy checked
CG_PIPE_ENTRY(cute_pipelined_ak_bk_s, CG_DA_k, CG_DB_k, CpSclK, CpSclK, false, cg::Epi::scalar)
CG_PIPE_ENTRY(cute_pipelined_am_bk_s, CG_DA_m, CG_DB_k, CpSclMN, CpSclK, false, cg::Epi::scalar)
CG_PIPE_ENTRY(cute_pipelined_am_bn_s, CG_DA_m, CG_DB_n, CpSclMN, CpSclMN, false, cg::Epi::scalar)
CG_PIPE_ENTRY(cute_pipelined_ak_bn_s, CG_DA_k, CG_DB_n, CpSclK, CpSclMN, false, cg::Epi::scalar)
// Every entry above again on a batch
CG_PIPE_BATCH_ENTRY(cute_pipelined_am_bn, CG_DA_m, CG_DB_n, CpVecM, CpVecN, true, cg::Epi::scalar)
CG_PIPE_BATCH_ENTRY(cute_pipelined_am_bk, CG_DA_m, CG_DB_k, CpVecM, VecK1, true, cg::Epi::scalar)
CG_PIPE_BATCH_ENTRY(cute_pipelined_ak_bn, CG_DA_k, CG_DB_n, VecK1, CpVecN, true, Config::epi_ak_bn)
CG_PIPE_BATCH_ENTRY(cute_pipelined_ak_bk, CG_DA_k, CG_DB_k, CpVecK, CpVecK, true, Config::epi_ak_bk)
CG_PIPE_BATCH_ENTRY(cute_pipelined_ak_bk_s, CG_DA_k, CG_DB_k, CpSclK, CpSclK, false, cg::Epi::scalar)
CG_PIPE_BATCH_ENTRY(cute_pipelined_am_bk_s, CG_DA_m, CG_DB_k, CpSclMN, CpSclK, false, cg::Epi::scalar)
CG_PIPE_BATCH_ENTRY(cute_pipelined_am_bn_s, CG_DA_m, CG_DB_n, CpSclMN, CpSclMN, false, cg::Epi::scalar)
CG_PIPE_BATCH_ENTRY(cute_pipelined_ak_bn_s, CG_DA_k, CG_DB_n, CpSclK, CpSclMN, false, cg::Epi::scalar)
// The vector entry points again as persistent stream-K launches (Config::stream_k; extra
// arguments ws, tile0). ak_bn with a register-staged operand: interior tiles unchecked but
// with in-place fragment loads (kDB): with a run's bounds live, double-buffered fragments
// spill there (100-200 bytes on sm_90). am_bk's twin only with Config::twin_am_bk: at
// 128x128 it spilled on sm_80 (the registry runs ak_bn's on the transposed problem instead).
CG_PIPE_SK_ENTRY(cute_pipelined_am_bn_sk, CG_DA_m, CG_DB_n, CpVecM, CpVecN, true, true)
CG_PIPE_SK_ENTRY(cute_pipelined_ak_bn_sk, CG_DA_k, CG_DB_n, VecK1, CpVecN, true, true)
CG_PIPE_SK_ENTRY(cute_pipelined_ak_bk_sk, CG_DA_k, CG_DB_k, CpVecK, CpVecK, true, true)
CG_PIPE_SK_ENTRY(cute_pipelined_am_bk_sk, CG_DA_m, CG_DB_k, CpVecM, VecK1, true, Config::twin_am_bk)
// The 4-byte entries' twins (Config::twins_scalar): extents that are not multiples of 4
// (4097^3) take those entries, and their last wave is as empty as anyone's.
CG_PIPE_SK_ENTRY(cute_pipelined_ak_bk_s_sk, CG_DA_k, CG_DB_k, CpSclK, CpSclK, false, Config::twins_scalar)
CG_PIPE_SK_ENTRY(cute_pipelined_am_bk_s_sk, CG_DA_m, CG_DB_k, CpSclMN, CpSclK, false, Config::twins_scalar)
CG_PIPE_SK_ENTRY(cute_pipelined_am_bn_s_sk, CG_DA_m, CG_DB_n, CpSclMN, CpSclMN, false, Config::twins_scalar)
CG_PIPE_SK_ENTRY(cute_pipelined_ak_bn_s_sk, CG_DA_k, CG_DB_n, CpSclK, CpSclMN, false, Config::twins_scalar)
// The vector entry points again as the shares of a split-K launch with a reduction launch
// (Config::stream_k; extra arguments ws, split), where the twins are
CG_PIPE_PART_ENTRY(cute_pipelined_am_bn_part, CG_DA_m, CG_DB_n, CpVecM, CpVecN, cg::Epi::scalar, true)
CG_PIPE_PART_ENTRY(cute_pipelined_ak_bn_part, CG_DA_k, CG_DB_n, VecK1, CpVecN, Config::epi_ak_bn, true)
CG_PIPE_PART_ENTRY(cute_pipelined_ak_bk_part, CG_DA_k, CG_DB_k, CpVecK, CpVecK, Config::epi_ak_bk, true)
CG_PIPE_PART_ENTRY(cute_pipelined_am_bk_part, CG_DA_m, CG_DB_k, CpVecM, VecK1, cg::Epi::scalar, Config::twin_am_bk)
