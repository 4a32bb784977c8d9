// cute_pipelined — CuTe: multistage smem pipeline + register fragments, any operand majors.
//
// Adds over cute_tiled (c2):
//  * STAGES >= 3 k-tiles in flight: while k-tile t is computed, t+1 .. t+STAGES-1 are on
//    their way to shared memory. One barrier per k-tile (cp_async_wait<STAGES-2> +
//    __syncthreads before switching stages).
//    m-/n-major operands: 16-byte cp.async (SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>,
//    4 floats along m/n), no register staging.
//    k-major operands (4 k per 16-byte vector, BLK_K/4 threads per row = whole 32-byte
//    sectors; the compute side wants m/n contiguous and cp.async cannot transpose):
//    - one k-major operand (LdVecK): register-staged LDG.128 for k-tile t+STAGES-1,
//      stored to its (m/n-contiguous) stage as 4 STS.32 later in k-tile t, in groups
//      spread over the k-tile where registers are short (see kPhases);
//    - both k-major (CpVecK): 16-byte cp.async into k-major "raw" stages (STAGES of
//      them); mid k-tile t each thread reads its own vectors of k-tile t+1 back
//      (LDS.128) and stores them (4 STS.32) to one of 2 m/n-contiguous compute buffers.
//      No registers held across a global load (staging both in registers needs 4
//      groups at 128 registers, slower; see docs/tuning/cute_pipelined.md#raw-stages).
//  * TiledMMA with a permutation so each thread owns 4 consecutive m (and n) per group:
//    its fragments load from smem as LDS.128 (2 per operand per k for 8x8 outputs),
//    and a hierarchical atom layout so a warp is a WARP_M x (32/WARP_M) patch of threads
//    (4 x 8: one warp LDS.128 reads 64 B of A and 128 B of B, broadcast to the rest).
//  * Shared -> registers: FRAG_DB=1 double-buffers k-block kb+1 while kb is computed;
//    FRAG_DB=0 loads each k-block's fragment in place and lets ptxas hoist the LDS as
//    registers allow (fewer live registers). Edge CTAs of the register-staged (LdVecK)
//    entries take the latter (double buffering spills there on sm_80).
//  * KT_UNROLL k-tiles per mainloop iteration in the both-k-major data-parallel entry
//    (stage indices fold into fewer instructions; see kKtUnroll).
//  * Interior CTAs (tile inside M x N, K % BLK_K == 0) run an instantiation with every
//    check compiled out; edge CTAs and the 4-byte fallbacks run the checked one.
//  * Grouped CTA order (RASTER_N tile columns per group) for L2 reuse of A and B strips.
// Geometry: BLK_M x BLK_N x BLK_K, THR_M x THR_N threads, STAGES, all from the registry;
//           each thread owns (BLK_M/THR_M) x (BLK_N/THR_N) accumulators (8x8 at
//           128x128 / 16x16 threads), in 4x4 blocks 4*THR_M apart along m.
// Residues: identity tensors through the same TiledCopy/TiledMMA partitions; elem_less
//           against (M,K) / (N,K) decides each copy (cp.async zero-fill, or zeroed
//           registers) — every k-tile, so a partial last k-tile adds exact zeros. 16-byte
//           entry points are chosen only when the contiguous extent is a multiple of 4
//           (Variant.extent_align): a vector is then entirely in or out. Scalar epilogue
//           (C any strides), predicated in edge CTAs; interior CTAs of two
//           data-parallel entries store a row-major C through smem: both k-major as
//           16-byte stores (EPI_AK_BK), ak_bn by bulk copies on sm_90 when beta is 0
//           (EPI_AK_BN; see the epilogue of gemm_pipelined).
//  * STREAM_K=1 builds: persistent stream-K twins (*_sk, extra arguments ws and tile0)
//    for the last, partly empty wave of a grid, after a data-parallel launch of the
//    whole waves (include/cute_gemm/streamk.cuh; when each is taken: registry.stream_k_plan
//    and the Variant.stream_k* fields).
// Bottleneck: FFMA issue (64 FFMA per 4 LDS.128 per thread per k); per k-tile the
//           barrier, the refill and its address math are the visible overheads
//           (profiles against cuBLAS and what was tried: docs/tuning/cute_pipelined.md#bottleneck).
//
// Layouts (tid = threadIdx.x; P = SMEM_PAD = 4; examples at 128x128x8, 16x16 threads):
//   sA = (BLK_M,BLK_K,STAGES):(1,BLK_M+P,(BLK_M+P)*BLK_K)   sB likewise with BLK_N
//        (CpVecK operands: 2 such buffers, and raw rA = (BLK_M,BLK_K,STAGES):
//        (BLK_K,1,BLK_M*BLK_K), unpadded: a warp's vectors are 8 whole 64-byte rows)
//        (m/n contiguous; k columns padded by 4 words: a warp's 4-byte k-major stores,
//        4 rows x 8 k (CpSclK) or 16 rows x 2 k-quads (LdVecK, BLK_K 8), land in banks
//        m + 4k = 32 distinct; columns stay 16-B aligned. At BLK_K 16 a warp's transposed
//        stores (8 rows x 4 quads) are 2-way conflicted there, so KQ_LAYOUT gives the
//        k-major operands k-quad stages instead:
//        (BLK,(4,BLK_K/4),BUF):(1,(BLK,4*BLK+32/(BLK_K/4)),BLK_K*BLK+32),
//        the quads 8 words (BLK_K 16) out of step, banks m + 8*quad; no more smem than the
//        padded stages, so the 2 CTAs/SM keep the same L1/smem carveout;
//        see docs/tuning/cute_pipelined.md#k-quad-stages)
//   copy 16 B along m/n: thr (E/4, T/(E/4)):(1,E/4) with E = BLK_M or BLK_N, capped at
//        T threads along m/n, val (4,1)        [128x128, 256 thr: (32,8), val (4,1)]
//   copy 16 B along k (registers, or cp.async to raw): thr (T/Q, Q):(Q,1) with Q = BLK_K/4, val (1,4)
//                                          [BLK_K 8, 256 thr: (128,2):(2,1)]
//   copy 4 B along m/n:  thr (32, T/32):(1,32), val (1,1)
//   copy 4 B along k:    thr (T/8, 8):(8,1),    val (1,1)
//   TiledMMA: UniversalFMA<float> atoms,
//     atom layout ((WARP_M, THR_M/WARP_M), (32/WARP_M, THR_N/(32/WARP_M)), 1)
//               : ((1, 32), (WARP_M, 32*THR_M/WARP_M), 0)         thread -> (tm, tn)
//                 [default ((4,4),(8,2),1):((1,32),(4,128),0)]
//     permutation M: (THR_M, 4, BLK_M/(4*THR_M)):(4, 1, 4*THR_M)  [(16,4,2):(4,1,64)]
//     permutation N: (THR_N, 4, BLK_N/(4*THR_N)):(4, 1, 4*THR_N)
//     -> thread (tm,tn) owns C(4*tm + i0 + 4*THR_M*i1, 4*tn + j0 + 4*THR_N*j1), i0,j0 < 4.
//   CTA order: pid = bid.x + bid.y*tiles_m; group g = pid / (RASTER_N*tiles_m) covers tile
//        columns [g*RASTER_N, ...); inside it tile_n = first + r % cols, tile_m = r / cols.
#include <cute/tensor.hpp>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>
#include <cute_gemm/streamk.cuh>

using namespace cute;

#ifndef BLK_M
#define BLK_M 128
#endif
#ifndef BLK_N
#define BLK_N 128
#endif
#ifndef BLK_K
#define BLK_K 8
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef THR_M
#define THR_M 16
#endif
#ifndef THR_N
#define THR_N 16
#endif
#ifndef WARP_M
#define WARP_M 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 2
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 4
#endif
#ifndef RASTER_N
#define RASTER_N 8
#endif
#ifndef TRANS_K
#define TRANS_K (BLK_K / 2)   // k-block of the raw -> compute transpose (CpVecK operands)
#endif
// Interior epilogue of each 16-byte data-parallel entry (gemm_pipelined, StoreTile): 0
// scalar stores from the fragments, 1 a row-major C through smem as 16-byte stores, 3
// (sm_90+; else 0) a row-major C through smem by bulk copies (cp.async.bulk), beta 0.
#ifndef EPI_AK_BK
#define EPI_AK_BK 0
#endif
#ifndef EPI_AK_BN
#define EPI_AK_BN 0
#endif
#ifndef EPI_AM_BK
#define EPI_AM_BK 0
#endif
#ifndef EPI_AM_BN
#define EPI_AM_BN 0
#endif
#ifndef STREAM_K
#define STREAM_K 0            // 1: also the persistent stream-K entry points (*_sk)
#endif
#ifndef FMA_ORDER
#define FMA_ORDER 0           // outer-product FFMA order (see outer_product) of the entries
#endif                        // without raw stages ...
#ifndef FMA_ORDER_RAW
#define FMA_ORDER_RAW 0       // ... and of those with (both operands k-major)
#endif
#ifndef MIN_BLOCKS_MN
#define MIN_BLOCKS_MN MIN_BLOCKS   // __launch_bounds__ minimum of the data-parallel entry with
#endif                             // both operands by 16-byte cp.async (am_bn; see kMinBlocks)
#ifndef STASH_K
#define STASH_K (BLK_K - 1)   // k-block where the last register-staged group goes to smem
#endif
#ifndef STASH0_K
#define STASH0_K (BLK_K / 2)  // ... and where the first goes, when there are two
#endif
#ifndef LOAD1_K
#define LOAD1_K (BLK_K / 2)   // k-block where the second register-staged group is loaded
#endif
#ifndef PDL
#define PDL 0                 // 1: programmatic dependent launch of split stream-K launches
#endif
#ifndef KQ_LAYOUT
#define KQ_LAYOUT 0           // k-quad compute stages (see StageLayout) for k-major operands:
#endif                        // bit 0 fed from raw stages, bit 1 register-staged (bit 2: in
                              // stream-K runs as well, sm_90+)
#ifndef SK_SMEM
#define SK_SMEM 0             // bytes of dynamic smem the stream-K twins are launched with
#endif
#ifndef KT_UNROLL
#define KT_UNROLL 1           // k-tiles per mainloop iteration of the raw-stage (CpVecK) entries
#endif
#ifndef FRAG_DB
#define FRAG_DB 1             // 1: explicit register double buffer; 0: ptxas schedules the LDS
#endif

constexpr int kThreads = THR_M * THR_N;
constexpr int kWarpN = 32 / WARP_M;
constexpr int kQuadsK = BLK_K / 4;        // 16-byte k-quads in one k-major row of a k-tile
// Compute stages (m/n contiguous). Padded: (EXT,BLK_K,BUF):(1,EXT+PAD,kStage), columns
// EXT + PAD words apart. k-quad (KQ_LAYOUT, k-major operands): k = (k in quad, quad),
// (EXT,(4,BLK_K/4),BUF):(1,(EXT,4*EXT+32/kQuadsK),kStage) — the 4 columns of a k-quad
// unpadded, quads 32/kQuadsK words apart, so a warp's transposed stores (8 rows x 4 quads at
// BLK_K 16, one k each) land in banks m + 8*quad: all 32 (padded: 2-way conflicts).
template <int EXT, bool kQuad>
constexpr int kStage = kQuad ? BLK_K * EXT + 32 : BLK_K * (EXT + SMEM_PAD);
template <int EXT, int BUF, bool kQuad>
using StageLayout = conditional_t<kQuad,
    Layout<Shape<Int<EXT>, Shape<_4, Int<kQuadsK>>, Int<BUF>>,
           Stride<_1, Stride<Int<EXT>, Int<4 * EXT + 32 / kQuadsK>>, Int<kStage<EXT, true>>>>,
    Layout<Shape<Int<EXT>, Int<BLK_K>, Int<BUF>>,
           Stride<_1, Int<EXT + SMEM_PAD>, Int<kStage<EXT, false>>>>>;
static_assert(!KQ_LAYOUT || (BLK_K >= 8 && BLK_K <= 32), "KQ_LAYOUT: BLK_K 8 to 32");
// A register-staged operand's stream-K twin takes k-quad stages on sm_90+ only: on sm_80
// ptxas spills there at 128 registers (see docs/tuning/cute_pipelined.md#k-quad-stages).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr bool kQuadStagedSk = false;
#else
constexpr bool kQuadStagedSk = (KQ_LAYOUT & 4) != 0;
#endif

using MmaAtomLayout = Layout<Shape <Shape <Int<WARP_M>, Int<THR_M / WARP_M>>,
                                    Shape <Int<kWarpN>, Int<THR_N / kWarpN>>, _1>,
                             Stride<Stride<_1, _32>,
                                    Stride<Int<WARP_M>, Int<32 * (THR_M / WARP_M)>>, _0>>;
using PermM = Layout<Shape<Int<THR_M>, _4, Int<BLK_M / (4 * THR_M)>>, Stride<_4, _1, Int<4 * THR_M>>>;
using PermN = Layout<Shape<Int<THR_N>, _4, Int<BLK_N / (4 * THR_N)>>, Stride<_4, _1, Int<4 * THR_N>>>;
using TiledMmaT = decltype(make_tiled_mma(UniversalFMA<float, float, float, float>{},
                                          MmaAtomLayout{}, Tile<PermM, PermN, Underscore>{}));

// Copy shapes; EXT is the tile extent along m or n (BLK_M or BLK_N).
constexpr int cmin(int a, int b) { return a < b ? a : b; }
template <int EXT>   // 16-byte cp.async along m/n, L2 only (.cg): the CTA reads it once
using CpVecMN = decltype(make_tiled_copy(
    Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>, float>{},
    Layout<Shape<Int<cmin(EXT / 4, kThreads)>, Int<kThreads / cmin(EXT / 4, kThreads)>>>{},
    Layout<Shape<_4, _1>>{}));
using CpSclMN = decltype(make_tiled_copy(                      // 4-byte, 32 threads along m/n
    Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
    Layout<Shape<_32, Int<kThreads / 32>>>{}));
using CpSclK = decltype(make_tiled_copy(                       // 4-byte, 8 threads along k
    Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>, float>{},
    Layout<Shape<Int<kThreads / 8>, _8>, Stride<_8, _1>>{}));
// k-major: 16-byte cp.async of 4 consecutive k into a k-major "raw" stage (cp.async
// cannot transpose); the same thread later reads its own vectors back (LDS.128) and
// stores them to the m/n-contiguous compute buffer (4 STS.32). kQuadsK threads share a
// row (whole 32-byte sectors); a warp covers 32/kQuadsK rows. The thread layout also
// serves the raw -> compute transpose (partition_D of both buffers).
using CpVecK = decltype(make_tiled_copy(
    Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>, float>{},
    Layout<Shape<Int<kThreads / kQuadsK>, Int<kQuadsK>>, Stride<Int<kQuadsK>, _1>>{},
    Layout<Shape<_1, _4>>{}));
// k-major, register-staged (entries with one k-major operand): one LDG.128 of 4
// consecutive k per vector, stored to the m/n-contiguous stage later as 4 STS.32.
using LdVecK = decltype(make_tiled_copy(
    Copy_Atom<UniversalCopy<uint128_t>, float>{},
    Layout<Shape<Int<kThreads / kQuadsK>, Int<kQuadsK>>, Stride<Int<kQuadsK>, _1>>{},
    Layout<Shape<_1, _4>>{}));
template <class TC>
constexpr bool kRaw = is_same_v<TC, CpVecK>;
// __launch_bounds__ minimum CTAs per SM of a data-parallel entry point, by its copies.
// MIN_BLOCKS_MN = 1 lifts ptxas's 128-register cap for am_bn: it still allocates 128 (2
// CTAs/SM stay resident) but schedules the mainloop better; the other entries exceed 128
// registers without the cap and lose (see docs/tuning/cute_pipelined.md#register-cap).
template <class CA, class CB>
constexpr int kMinBlocks =
    is_same_v<CA, CpVecMN<BLK_M>> && is_same_v<CB, CpVecMN<BLK_N>> ? MIN_BLOCKS_MN : MIN_BLOCKS;
template <class TC>
constexpr bool kStaged = is_same_v<TC, LdVecK>;

// CTA rasterisation for L2 reuse: the grid is (tiles along M, tiles along N); linear block
// ids walk groups of RASTER_N tile columns, M fastest inside a group, so the CTAs resident
// together read ~sqrt(#resident) A strips and B strips instead of all of A (large M).
// tile_coord: the same walk for a linear tile id (persistent stream-K CTAs).
__device__ __forceinline__ void tile_coord(int pid, int tiles_m, int tiles_n, int& tile_m,
                                           int& tile_n) {
  const int per_group = RASTER_N * tiles_m;
  const int first_n = (pid / per_group) * RASTER_N;
  const int cols = min(tiles_n - first_n, RASTER_N);
  tile_n = first_n + (pid % per_group) % cols;
  tile_m = (pid % per_group) / cols;
}
// The grid: (tiles along M, tiles along N), or 1-D over the first tiles of the walk (the
// data-parallel half of a split stream-K launch, registry.stream_k_plan).
__device__ __forceinline__ void cta_tile(int M, int N, int& tile_m, int& tile_n) {
  tile_coord(blockIdx.y * gridDim.x + blockIdx.x, cg::ceil_div(M, BLK_M), cg::ceil_div(N, BLK_N),
             tile_m, tile_n);
}

// One k-block's 8x8 outer product. The FFMA order decides which operand registers the
// consecutive FFMAs share, and so ptxas's operand reuse and register-bank conflicts:
// 0 = CuTe's gemm (row-major kinked serpentine: rows m, m+1 share b[n]); 2 = col-major
// kinked serpentine (columns n, n+1 share a[m]); 6 = order 2 in 2x2 blocks (a U through
// (m,n) (m,n+1) (m+1,n+1) (m+1,n), then the next m pair): the same operand reuse as 2
// with fewer non-reused source registers in one bank. Measurements, and the orders that
// lost: docs/tuning/cute_pipelined.md#ffma-order.
template <int kOrder, class Mma, class TA, class TB, class TC>
__device__ __forceinline__ void outer_product(Mma const& mma, TA const& a, TB const& b, TC& c) {
  constexpr int M = decltype(size<1>(a))::value, N = decltype(size<1>(b))::value;
  static_assert(kOrder == 0 || (kOrder == 2 && N % 2 == 0) ||
                (kOrder == 6 && N % 2 == 0 && M % 2 == 0), "FMA_ORDER: 0, 2 or 6");
  if constexpr (kOrder == 0) {
    gemm(mma, a, b, c);
  } else if constexpr (kOrder == 2) {
    CUTE_UNROLL
    for (int n = 0; n < N; n += 2) {
      CUTE_UNROLL
      for (int m = 0; m < M; ++m) {
        const int ms = (n & 2) ? M - 1 - m : m;
        c(0, ms, n) = fmaf(a(0, ms), b(0, n), c(0, ms, n));
        c(0, ms, n + 1) = fmaf(a(0, ms), b(0, n + 1), c(0, ms, n + 1));
      }
    }
  } else {
    CUTE_UNROLL
    for (int n = 0; n < N; n += 2) {
      CUTE_UNROLL
      for (int m = 0; m < M; m += 2) {
        const int ms = (n & 2) ? M - 2 - m : m;
        c(0, ms, n) = fmaf(a(0, ms), b(0, n), c(0, ms, n));
        c(0, ms, n + 1) = fmaf(a(0, ms), b(0, n + 1), c(0, ms, n + 1));
        c(0, ms + 1, n + 1) = fmaf(a(0, ms + 1), b(0, n + 1), c(0, ms + 1, n + 1));
        c(0, ms + 1, n) = fmaf(a(0, ms + 1), b(0, n), c(0, ms + 1, n));
      }
    }
  }
}

// The end of a run's k-tiles. Whole-K runs: a value the compiler can rematerialise from
// the kernel arguments. Stream-K runs: read from shared memory each time it is needed
// (volatile: never cached in a register) — the register-staged entry points sit at the
// 128-register cap of 2 CTAs/SM, and one more live register across the mainloop spills.
struct KEndValue {
  int v;
  __device__ int operator()() const { return v; }
};
__device__ __forceinline__ volatile int& sk_k_end() {
  __shared__ int k_end;
  return k_end;
}
struct KEndShared {
  __device__ int operator()() const { return sk_k_end(); }
};

// The smem epilogues' C tile (BLK_M x BLK_N, row pitch kEpiLd: 2-way conflicts for the
// fragments' scalar stores), once every warp's last mainloop smem reads are done; this
// thread's partition of it.
constexpr int kEpiLd = BLK_N + 4;
template <class ThrMma>
__device__ __forceinline__ auto smem_c_partition(ThrMma const& thr_mma, float* smem) {
  cp_async_wait<0>();
  __syncthreads();
  Tensor sC = make_tensor(make_smem_ptr(smem), make_layout(make_shape(Int<BLK_M>{}, Int<BLK_N>{}),
                                                           make_stride(Int<kEpiLd>{}, _1{})));  // (BLK_M,BLK_N)
  return thr_mma.partition_C(sC);                                                                 // (MMA,MMA_M,MMA_N)
}

template <int kEpi> struct StoreTile;
template <class Epi> constexpr int kEpiOf = 0;       // stream-K runs: scalar
template <int E> constexpr int kEpiOf<StoreTile<E>> = E;
template <class Epi> constexpr int kEpiCode = kEpiOf<remove_cvref_t<Epi>>;

// kPred: the CTA tile crosses M or N, or K % BLK_K != 0 — every copy and store is checked.
// Interior CTAs (kPred false) run the same code with the checks compiled out.
// k-tiles [k_begin, k_end()) of the tile are accumulated (all of them but in stream-K
// runs); epi(acc) then says whether this CTA stores the tile (a stream-K partial is
// handed to streamk_fixup instead, and only the last contributor stores the sum).
template <bool kPred, class StrideA, class StrideB, class CopyA, class CopyB, class KEnd, class Epi>
__device__ __forceinline__ void gemm_pipelined(int tile_m, int tile_n, int k_begin, KEnd k_end,
                                               Epi&& epi, int M, int N, int K,
                                               float alpha, const float* A, StrideA dA,
                                               const float* B, StrideB dB, float beta, float* C,
                                               long long sCm, long long sCn, CopyA copy_a,
                                               CopyB copy_b, float* smem_buf) {
  constexpr bool kRawA = kRaw<CopyA>;   // k-major: raw stages + 2 compute buffers
  constexpr bool kRawB = kRaw<CopyB>;
  constexpr bool kStagedA = kStaged<CopyA>;  // k-major: LDG.128 -> registers -> compute stage
  constexpr bool kStagedB = kStaged<CopyB>;
  constexpr int kBufA = kRawA ? 2 : STAGES;
  constexpr int kBufB = kRawB ? 2 : STAGES;
  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<BLK_K>{};
  auto bP = Int<STAGES>{};
  auto cta_tiler = make_shape(bM, bN, bK);                                      // (BLK_M,BLK_N,BLK_K)
  constexpr bool kQuadRaw = (KQ_LAYOUT & 1) != 0;
  constexpr bool kQuadStaged = (KQ_LAYOUT & 2) && (!is_same_v<KEnd, KEndShared> || kQuadStagedSk);
  constexpr bool kQuadA = kRawA ? kQuadRaw : kStagedA && kQuadStaged;
  constexpr bool kQuadB = kRawB ? kQuadRaw : kStagedB && kQuadStaged;
  auto sA_layout = StageLayout<BLK_M, kBufA, kQuadA>{};                         // (BLK_M,BLK_K,BUF)
  auto sB_layout = StageLayout<BLK_N, kBufB, kQuadB>{};                         // (BLK_N,BLK_K,BUF)
  auto rA_layout = make_layout(make_shape(bM, bK, bP), make_stride(bK, _1{}, bM * bK));     // (BLK_M,BLK_K,PIPE)
  auto rB_layout = make_layout(make_shape(bN, bK, bP), make_stride(bK, _1{}, bN * bK));     // (BLK_N,BLK_K,PIPE)
  TiledMmaT mma;

  // Preconditions
  CUTE_STATIC_ASSERT_V(size(copy_a) == size(mma));                              // one thread set
  CUTE_STATIC_ASSERT_V(size(copy_b) == size(mma));
  CUTE_STATIC_ASSERT_V(size(mma) == Int<kThreads>{});                           // the launch block
  CUTE_STATIC_ASSERT_V(tile_size<0>(mma) == bM);                                // MMA tile = CTA tile
  CUTE_STATIC_ASSERT_V(tile_size<1>(mma) == bN);
  static_assert(BLK_M % (4 * THR_M) == 0 && BLK_N % (4 * THR_N) == 0, "4x4 blocks per thread");
  static_assert(32 % WARP_M == 0 && THR_M % WARP_M == 0 && THR_N % kWarpN == 0, "warp patch");
  CUTE_STATIC_ASSERT_V(bM % size<0>(typename CopyA::Tiler_MN{}) == Int<0>{});  // BLK_M / CPY_M tile
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename CopyA::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K tile
  CUTE_STATIC_ASSERT_V(bN % size<0>(typename CopyB::Tiler_MN{}) == Int<0>{});  // BLK_N / CPY_N tile
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename CopyB::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K tile
  static_assert(STAGES >= 3, "multistage: at least 2 k-tiles in flight during compute");
  static_assert(BLK_K % 4 == 0, "k-quads; BLK_K even for the register double buffer");
  static_assert(SMEM_PAD % 4 == 0, "16-byte aligned smem columns (cp.async 16 B, LDS.128)");
  static_assert(BLK_M % 32 == 0 && BLK_N % 32 == 0 && SMEM_PAD == 4,
                "(BLK + 4) % 32 == 4: conflict-free 4-byte k-major stores");

  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), dA);                    // (M,K)
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), dB);                    // (N,K)
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(sCm, sCn)); // (M,N)
  Tensor cA = make_identity_tensor(shape(mA));                                        // (M,K) -> (m,k)
  Tensor cB = make_identity_tensor(shape(mB));                                        // (N,K) -> (n,k)
  Tensor cC = make_identity_tensor(shape(mC));                                        // (M,N) -> (m,n)

  auto cta_coord = make_coord(tile_m, tile_n, _);                                    // (m,n,:)
  Tensor gA  = local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gB  = local_tile(mB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)
  Tensor gC  = local_tile(mC, cta_tiler, cta_coord, Step<_1, _1, X>{});               // (BLK_M,BLK_N)
  Tensor gcA = local_tile(cA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gcB = local_tile(cB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)
  Tensor gcC = local_tile(cC, cta_tiler, cta_coord, Step<_1, _1, X>{});               // (BLK_M,BLK_N)

  // Dynamic smem, one region per operand of 2 compute buffers + STAGES raw stages (an
  // m/n-major operand's STAGES compute stages fit in it): the registry's FixedSmem =
  // 4 * BLK_K * (2 * (BLK_M + BLK_N + 2 * PAD) + STAGES * (BLK_M + BLK_N)).
  constexpr int kRegionA = BLK_K * (2 * (BLK_M + SMEM_PAD) + STAGES * BLK_M);
  constexpr int kComputeA = kStage<BLK_M, kQuadA> * kBufA, kComputeB = kStage<BLK_N, kQuadB> * kBufB;
  static_assert(kComputeA + (kRawA ? BLK_M * BLK_K * STAGES : 0) <= kRegionA, "A region");
  static_assert(kComputeB + (kRawB ? BLK_N * BLK_K * STAGES : 0) <=
                BLK_K * (2 * (BLK_N + SMEM_PAD) + STAGES * BLK_N), "B region");
  // The stream-K twins get only the dynamic smem they use (registry Kernel.stream_k_smem,
  // ladder_cute._twin_smem, passed in as SK_SMEM bytes): what this instantiation addresses.
  static_assert(!is_same_v<KEnd, KEndShared> ||
                    4 * (kRegionA + kComputeB + (kRawB ? BLK_N * BLK_K * STAGES : 0)) <= SK_SMEM,
                "stream-K twin: more dynamic smem than the registry gives it (SK_SMEM)");
  float* smem_b = smem_buf + kRegionA;
  Tensor sA = make_tensor(make_smem_ptr(smem_buf), sA_layout);                        // (BLK_M,BLK_K,BUF)
  Tensor sB = make_tensor(make_smem_ptr(smem_b), sB_layout);                          // (BLK_N,BLK_K,BUF)
  Tensor rA = make_tensor(make_smem_ptr(smem_buf + kComputeA), rA_layout);            // (BLK_M,BLK_K,PIPE)
  Tensor rB = make_tensor(make_smem_ptr(smem_b + kComputeB), rB_layout);              // (BLK_N,BLK_K,PIPE)

  // Global -> shared copy partitions (cp.async into the compute stages, or into the raw
  // stages for k-major operands), with their coordinates; tXtX: the raw -> compute
  // transpose's destination (same thread layout, so a thread transposes its own vectors).
  ThrCopy thr_copy_a = copy_a.get_slice(threadIdx.x);
  Tensor tAgA = thr_copy_a.partition_S(gA);                                           // (CPY,CPY_M,CPY_K,k)
  Tensor tAcA = thr_copy_a.partition_S(gcA);                                          // (CPY,CPY_M,CPY_K,k)
  Tensor tAsA = thr_copy_a.partition_D(sA);                                           // (CPY,CPY_M,CPY_K,BUF)
  Tensor tAqA = thr_copy_a.partition_D(rA);                                           // (CPY,CPY_M,CPY_K,PIPE)
  Tensor tArA = make_tensor<float>(shape(tAqA(_, _, _, 0)));                          // (CPY,CPY_M,CPY_K)
  ThrCopy thr_copy_b = copy_b.get_slice(threadIdx.x);
  Tensor tBgB = thr_copy_b.partition_S(gB);                                           // (CPY,CPY_N,CPY_K,k)
  Tensor tBcB = thr_copy_b.partition_S(gcB);                                          // (CPY,CPY_N,CPY_K,k)
  Tensor tBsB = thr_copy_b.partition_D(sB);                                           // (CPY,CPY_N,CPY_K,BUF)
  Tensor tBqB = thr_copy_b.partition_D(rB);                                           // (CPY,CPY_N,CPY_K,PIPE)
  Tensor tBrB = make_tensor<float>(shape(tBqB(_, _, _, 0)));                          // (CPY,CPY_N,CPY_K)

  // Compute partitions: smem fragments, double-buffered registers, accumulators.
  ThrMMA thr_mma = mma.get_slice(threadIdx.x);
  Tensor tCsA = thr_mma.partition_A(sA);                                              // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tCsB = thr_mma.partition_B(sB);                                              // (MMA,MMA_N,MMA_K,PIPE)
  Tensor tCrA = make_tensor<float>(make_shape(shape<0>(tCsA), shape<1>(tCsA), _2{})); // (MMA,MMA_M,2)
  Tensor tCrB = make_tensor<float>(make_shape(shape<0>(tCsB), shape<1>(tCsB), _2{})); // (MMA,MMA_N,2)
  Tensor tCgC = thr_mma.partition_C(gC);                                              // (MMA,MMA_M,MMA_N)
  Tensor tCcC = thr_mma.partition_C(gcC);                                             // (MMA,MMA_M,MMA_N)
  Tensor tCrC = thr_mma.make_fragment_C(tCgC);                                        // (MMA,MMA_M,MMA_N)
  clear(tCrC);

  CUTE_STATIC_ASSERT_V(size<1>(tCgC) == size<1>(tCrA));                              // MMA_M
  CUTE_STATIC_ASSERT_V(size<2>(tCgC) == size<1>(tCrB));                              // MMA_N
  CUTE_STATIC_ASSERT_V(size<2>(tCsA) == bK);                                         // one k per k-block

  auto shapeA = shape(mA);
  auto shapeB = shape(mB);
  // One operand's share of a k-tile, issued: cp.async into stage `stage` of its compute
  // stages (m/n-major) or raw stages (k-major, CpVecK) — a copy whose first element lies
  // outside the matrix is zero-filled instead of read — or LDG.128 into registers (zeros
  // outside) for a register-staged operand (LdVecK). Only the CPY_M slices in [lo, hi)
  // (compile-time bounds after unrolling).
  auto issue = [&](auto const& cp, auto const& tg, auto const& tc, auto& ts, auto& tr,
                   auto const& shp, int k_tile, int stage, auto staged, int lo, int hi) {
    CUTE_UNROLL
    for (int m = 0; m < size<1>(ts); ++m) {
      if (m < lo || m >= hi) continue;
      CUTE_UNROLL
      for (int k = 0; k < size<2>(ts); ++k) {
        const bool in = !kPred || elem_less(tc(0, m, k, k_tile), shp);
        if constexpr (decltype(staged)::value) {
          if constexpr (kPred) clear(tr(_, m, k));
          if (in) copy(cp, tg(_, m, k, k_tile), tr(_, m, k));
        } else {
          copy(cp.with(in), tg(_, m, k, k_tile), ts(_, m, k, stage));
        }
      }
    }
  };
  // Register-staged slices: registers -> stage (scalar STS, the transpose).
  auto stash = [&](auto& tr, auto& ts, int stage, int lo, int hi) {
    CUTE_UNROLL
    for (int m = 0; m < size<1>(ts); ++m)
      if (m >= lo && m < hi) copy(tr(_, m, _), ts(_, m, _, stage));
  };
  // The refill. cp.async (all but LdVecK operands) all goes out at k-block 0.
  // Register-staged slices (LdVecK: the entries with one k-major operand) go in kPhases
  // groups: one group is loaded at k-block 0 and stored to smem at STASH_K; two (BLK_K
  // 16, the 128-register budget of 2 CTAs/SM) are loaded at k-blocks 0 and LOAD1_K and
  // stored at STASH0_K and STASH_K (registry). Both operands k-major take the raw stages
  // instead (CpVecK): staging both in registers needed 4 groups at 128x128x16, slower;
  // one staged operand measured ahead of raw (see docs/tuning/cute_pipelined.md#raw-stages).
  constexpr int kSlA = kStagedA ? decltype(size<1>(tAsA))::value : 0;
  constexpr int kSlB = kStagedB ? decltype(size<1>(tBsB))::value : 0;
  constexpr int kU = kSlA + kSlB;
  static_assert(!(kStagedA && kStagedB), "both k-major: raw stages (CpVecK)");
  constexpr int kPhases = (kU > 1 && BLK_K >= 16) ? 2 : 1;
  // Where group p is loaded and where it goes to smem (k-blocks of the k-tile; the stores
  // before the k-tile's barrier, each after its own load). Each group's LDG has until its
  // store to land: loading the second group early (LOAD1_K) gives it the most cover
  // (see docs/tuning/cute_pipelined.md#staged-groups).
  constexpr auto load_k = [](int p) { return p == 0 ? 0 : LOAD1_K; };
  constexpr auto stash_k = [](int p) { return p + 1 == kPhases ? STASH_K : STASH0_K; };
  static_assert(kPhases <= 2, "at most two register-staged groups");
  static_assert(STASH_K <= BLK_K - 1 && STASH_K > (kPhases == 2 ? LOAD1_K : 0),
                "the last group's stores after its load, before the barrier");
  static_assert(kPhases == 1 || (LOAD1_K >= 0 && STASH0_K > 0 && STASH0_K <= BLK_K - 1),
                "the first group's stores after its load, before the barrier");
  // phase p: cp.async (p == 0) + staged group p
  auto load_phase = [&](int phase, int k_tile, int stage) {
    const int lo = phase * kU / kPhases, hi = (phase + 1) * kU / kPhases;
    if (phase == 0 || kStagedA) {
      if constexpr (kRawA)
        issue(copy_a, tAgA, tAcA, tAqA, tArA, shapeA, k_tile, stage, false_type{}, 0, 1 << 20);
      else
        issue(copy_a, tAgA, tAcA, tAsA, tArA, shapeA, k_tile, stage, bool_constant<kStagedA>{},
              kStagedA ? lo : 0, kStagedA ? hi : 1 << 20);
    }
    if (phase == 0 || kStagedB) {
      if constexpr (kRawB)
        issue(copy_b, tBgB, tBcB, tBqB, tBrB, shapeB, k_tile, stage, false_type{}, 0, 1 << 20);
      else
        issue(copy_b, tBgB, tBcB, tBsB, tBrB, shapeB, k_tile, stage, bool_constant<kStagedB>{},
              kStagedB ? lo - kSlA : 0, kStagedB ? hi - kSlA : 1 << 20);
    }
  };
  auto stash_phase = [&](int phase, int stage) {
    const int lo = phase * kU / kPhases, hi = (phase + 1) * kU / kPhases;
    if constexpr (kStagedA) stash(tArA, tAsA, stage, lo, hi);
    if constexpr (kStagedB) stash(tBrB, tBsB, stage, lo - kSlA, hi - kSlA);
  };
  // Raw stage -> compute buffer for CpVecK operands: the thread's own 16-byte vectors
  // back (LDS.128; landed once its cp_async_wait returns) and out as 4 STS.32 each.
  // Registers live for one LDS latency instead of a global load's.
  auto transpose = [&](int raw_stage, int buf) {
    if constexpr (kRawA) { copy(tAqA(_, _, _, raw_stage), tArA); copy(tArA, tAsA(_, _, _, buf)); }
    if constexpr (kRawB) { copy(tBqB(_, _, _, raw_stage), tBrB); copy(tBrB, tBsB(_, _, _, buf)); }
  };
  constexpr bool kAnyRaw = kRawA || kRawB;
  // k-block of the transpose of k-tile t+1 during k-tile t (TRANS_K, registry): its
  // stores overlap FFMA and the tile has had over 2 k-tiles to land. Late is better
  // (see docs/tuning/cute_pipelined.md#trans-k).
  constexpr int kTransK = TRANS_K;
  static_assert(TRANS_K >= 0 && TRANS_K < BLK_K - 1, "before the k-tile's barrier");

  constexpr int K_BLOCK_MAX = BLK_K;

  // Prologue: STAGES-1 k-tiles in flight (one commit group each, empty past the end so
  // that group g is always k-tile k_begin + g).
  CUTE_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (k_begin + s < k_end()) {
      CUTE_UNROLL
      for (int p = 0; p < kPhases; ++p) load_phase(p, k_begin + s, s);
      CUTE_UNROLL
      for (int p = 0; p < kPhases; ++p) stash_phase(p, s);
    }
    cp_async_fence();
  }
  // Stage bookkeeping in registers: k-tile k_tile sits in read_stage (compute stage, or
  // raw stage of a CpVecK operand) and in compute buffer read_buf (CpVecK operands, 2
  // buffers); the k-tile in flight to smem this iteration, k_tile + STAGES - 1, goes to
  // the stage read during the previous k-tile, (read_stage - 1) mod STAGES.
  int read_stage = 0, read_buf = 0;
  auto prev_stage = [&] { return read_stage == 0 ? STAGES - 1 : read_stage - 1; };
  auto next_stage = [&] { return read_stage + 1 == STAGES ? 0 : read_stage + 1; };
  auto idxA = [&] { return kRawA ? read_buf : read_stage; };
  auto idxB = [&] { return kRawB ? read_buf : read_stage; };

  cp_async_wait<STAGES - 2>();        // k-tile 0 has landed (for this thread) ...
  if constexpr (kAnyRaw) transpose(0, 0);
  __syncthreads();                    // ... and for every thread
  // Edge CTAs (kPred) of the register-staged entries load fragments in place: with the
  // checks' registers, double buffering spills there on sm_80; elsewhere FRAG_DB.
  // Stream-K runs (KEndShared) of those entries as well: the run's bounds take registers.
  constexpr bool kDB = FRAG_DB && !((kPred || is_same_v<KEnd, KEndShared>) && (kStagedA || kStagedB));
  if constexpr (kDB) {
    copy(tCsA(_, _, 0, idxA()), tCrA(_, _, 0));                                       // LDS.128
    copy(tCsB(_, _, 0, idxB()), tCrB(_, _, 0));
  }

  // KT_UNROLL k-tiles per iteration in the data-parallel raw-stage entries (both operands
  // k-major): stage indices fold into fewer instructions and ptxas schedules it better.
  // Not in the register-staged entries nor the stream-K twins (they spill), nor am_bn
  // (over 128 registers unrolled): see docs/tuning/cute_pipelined.md#kt-unroll.
  constexpr int kKtUnroll = is_same_v<KEnd, KEndValue> && (kRawA || kRawB) ? KT_UNROLL : 1;
#pragma unroll (kKtUnroll)
  for (int k_tile = k_begin; k_tile < k_end(); ++k_tile) {
    const bool refill = k_tile + STAGES - 1 < k_end();
    CUTE_UNROLL
    for (int k_block = 0; k_block < K_BLOCK_MAX; ++k_block) {
      CUTE_UNROLL
      for (int p = 0; p < kPhases; ++p)     // group p's registers -> smem
        if (refill && kU > 0 && k_block == stash_k(p))
          stash_phase(p, prev_stage());
      if (kAnyRaw && k_block == kTransK && k_tile + 1 < k_end()) {
        // k-tile+1 landed for this thread; its compute buffer was last read in k-tile-1
        cp_async_wait<STAGES - 2>();
        transpose(next_stage(), read_buf ^ 1);
      }
      if (kDB && k_block == K_BLOCK_MAX - 1) {
        // k-tile+1 complete and visible; every thread is past its reads of the stage the
        // next refill overwrites (last read at k_block - 1).
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        read_stage = next_stage();
        read_buf ^= 1;
      }
      // smem -> registers: FRAG_DB, the next k-block (k_block 0 of the next tile at the
      // end) into the other slot; else this k-block, hoisted by ptxas as registers allow
      const int k_next = kDB ? (k_block + 1) % K_BLOCK_MAX : k_block;
      const int slot = kDB ? (k_block + 1) & 1 : k_block & 1;
      copy(tCsA(_, _, k_next, idxA()), tCrA(_, _, slot));
      copy(tCsB(_, _, k_next, idxB()), tCrB(_, _, slot));
      // Refill the stage read during the previous k-tile (freed by its last barrier) with
      // k-tile k_tile + STAGES - 1 (one cp.async group per k-tile, empty past the end).
      CUTE_UNROLL
      for (int p = 0; p < kPhases; ++p)     // group p (and cp.async) out
        if (refill && k_block == load_k(p)) load_phase(p, k_tile + STAGES - 1, prev_stage());
      if (k_block == 0) cp_async_fence();
      outer_product<kAnyRaw ? FMA_ORDER_RAW : FMA_ORDER>(mma, tCrA(_, _, k_block & 1),
                                                         tCrB(_, _, k_block & 1), tCrC);  // 8x8 FFMA
      if (!kDB && k_block == K_BLOCK_MAX - 1) {
        cp_async_wait<STAGES - 2>();  // as above, after this k-tile's last smem reads
        __syncthreads();
        read_stage = next_stage();
        read_buf ^= 1;
      }
    }
  }

  if (!epi(tCrC)) return;
  if constexpr (kPred) {
    cg::epilogue_axpby(tCrC, tCgC, tCcC, shape(mC), alpha, beta);
  } else {
    static_assert(kEpiCode<Epi> == 0 || BLK_M * kEpiLd <= BLK_K * (2 * (BLK_M + BLK_N + 2 * SMEM_PAD) +
                                                             STAGES * (BLK_M + BLK_N)),
                  "C tile in smem");   // (dependent: checked only where instantiated)
    // the smem epilogues' condition: C row-major with 16-byte aligned rows
    const bool c_rows16 = sCn == 1 && sCm % 4 == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (kEpiCode<Epi> == 3) {
      // beta 0, row-major, 16-byte aligned rows: alpha * acc to smem (row pitch BLK_N + 4)
      // by scalar STS, then each of the first BLK_M threads has its row copied out whole
      // (BLK_N * 4 bytes) by the TMA unit (cp.async.bulk, the async proxy: a proxy fence
      // between the STS and the copy). The STS stay scalar on purpose (st.shared in asm,
      // which NVVM does not merge): merged to STS.128 they need aligned register quads,
      // and ptxas then allocates ak_bn's mainloop with fewer operand reuse flags, slower
      // (see docs/tuning/cute_pipelined.md#epilogue). Else (beta != 0, other strides) the scalar stores.
      if (beta == 0.0f && c_rows16) {
        static_assert(kEpiCode<Epi> != 3 || (BLK_M <= kThreads && (kEpiLd * 4) % 16 == 0 &&
                                             (BLK_N * 4) % 16 == 0),
                      "one C row per thread, 16-byte rows");   // (dependent, as above)
        Tensor tCsC = smem_c_partition(thr_mma, smem_buf);                         // (MMA,MMA_M,MMA_N)
        CUTE_UNROLL
        for (int i = size(tCrC) - 1; i >= 0; --i)
          asm volatile("st.shared.f32 [%0], %1;" :: "r"(cast_smem_ptr_to_uint(&tCsC(i))),
                       "f"(alpha * tCrC(i)) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // STS -> bulk copy
        __syncthreads();
        if (threadIdx.x < BLK_M) {
          float* g = C + (long long)(tile_m * BLK_M + threadIdx.x) * sCm + tile_n * BLK_N;   // row start
          const uint32_t s = cast_smem_ptr_to_uint(smem_buf + threadIdx.x * kEpiLd);
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                       "cp.async.bulk.commit_group;\n"
                       "cp.async.bulk.wait_group 0;" :: "l"(g), "r"(s), "n"(BLK_N * 4) : "memory");
        }
        return;
      }
    }
#endif
    if constexpr (kEpiCode<Epi> == 1) {
      // C through smem when row-major and 16-byte aligned. Scalar STG from the fragments
      // put 8 bytes in each of 16 sectors per instruction, 4 times over (4x the L2 write
      // requests, from every CTA of a wave at once). Here: scalar STS of the fragments
      // (smem_c_partition), then whole rows back as LDS.128 and out as STG.128. Per entry
      // (EPI_*): ptxas schedules each function's mainloop anew with it, faster or slower,
      // and so with the order of the STS (last fragment element first here; see
      // docs/tuning/cute_pipelined.md#epilogue).
      if (c_rows16) {
        Tensor tCsC = smem_c_partition(thr_mma, smem_buf);                         // (MMA,MMA_M,MMA_N)
        CUTE_UNROLL
        for (int i = size(tCrC) - 1; i >= 0; --i) tCsC(i) = alpha * tCrC(i);
        __syncthreads();
        constexpr int kVecRow = BLK_N / 4, kRows = kThreads / kVecRow;  // a warp: whole rows
        static_assert(kThreads % kVecRow == 0 && BLK_M % kRows == 0, "row-wise read-back");
        const int r0 = threadIdx.x / kVecRow, c4 = 4 * (threadIdx.x % kVecRow);
        float* g = C + (long long)(tile_m * BLK_M + r0) * sCm + tile_n * BLK_N + c4;
        CUTE_UNROLL
        for (int r = 0; r < BLK_M / kRows; ++r) {
          float4 v = *reinterpret_cast<const float4*>(&smem_buf[(r0 + r * kRows) * kEpiLd + c4]);
          float* p = g + (long long)(r * kRows) * sCm;
          if (beta != 0.0f) {
            const float4 c = *reinterpret_cast<const float4*>(p);
            v.x += beta * c.x; v.y += beta * c.y; v.z += beta * c.z; v.w += beta * c.w;
          }
          *reinterpret_cast<float4*>(p) = v;
        }
        return;
      }
    }
    CUTE_UNROLL
    for (int i = 0; i < size(tCrC); ++i) cg::store_axpby(alpha, tCrC(i), beta, &tCgC(i));
  }
}

// One tile's k-tiles [k0, k1). kFast: interior tiles take the unchecked instantiation
// (vector entry points; the scalar fallbacks serve odd shapes and alignments and keep
// one instantiation).
template <bool kFast, class StrideA, class StrideB, class CopyA, class CopyB, class KEnd, class Epi>
__device__ __forceinline__ void tile_gemm(int tile_m, int tile_n, int k0, KEnd k1, Epi&& epi,
                                          int M, int N, int K, float alpha, const float* A,
                                          StrideA dA, const float* B, StrideB dB, float beta,
                                          float* C, long long sCm, long long sCn) {
  // 128-byte aligned: the stream-K twins put it after their static smem (48 bytes), and
  // 16-byte aligned there their raw stages' cp.async touched twice the sectors
  // (see docs/tuning/cute_pipelined.md#twin-smem)
  extern __shared__ __align__(128) float smem_buf[];
  if constexpr (kFast) {
    if ((tile_m + 1) * BLK_M <= M && (tile_n + 1) * BLK_N <= N && K % BLK_K == 0) {  // block-uniform
      gemm_pipelined<false>(tile_m, tile_n, k0, k1, epi, M, N, K, alpha, A, dA, B, dB, beta, C,
                            sCm, sCn, CopyA{}, CopyB{}, smem_buf);
      return;
    }
  }
  gemm_pipelined<true>(tile_m, tile_n, k0, k1, epi, M, N, K, alpha, A, dA, B, dB, beta, C, sCm,
                       sCn, CopyA{}, CopyB{}, smem_buf);
}

// data-parallel tiles: this CTA computed all of K, it stores. kEpi: how (EPI_*, see the
// epilogue of gemm_pipelined): scalar stores from the fragments, or through smem.
template <int kEpi>
struct StoreTile {
  template <class Acc>
  __device__ bool operator()(Acc&) const { return true; }
};

template <bool kFast, int kEpi, class StrideA, class StrideB, class CopyA, class CopyB>
__device__ __forceinline__ void dispatch(int M, int N, int K, float alpha, const float* A,
                                         StrideA dA, const float* B, StrideB dB, float beta,
                                         float* C, long long sCm, long long sCn) {
  int tile_m, tile_n;
  cta_tile(M, N, tile_m, tile_n);
  tile_gemm<kFast, StrideA, StrideB, CopyA, CopyB>(tile_m, tile_n, 0, KEndValue{cg::ceil_div(K, BLK_K)},
                                                   StoreTile<kEpi>{}, M, N, K, alpha, A, dA, B, dB,
                                                   beta, C, sCm, sCn);
}

// Persistent stream-K launch (grid = (G,1,1), G from registry.stream_k_plan) over tiles
// [tile0, tiles): whole tiles first, then this CTA's run of the k-tile iterations of the
// remaining tiles (see include/cute_gemm/streamk.cuh). ws: the arrival counters (zero
// before the first launch; each launch leaves them zero), then 2 * G partial-tile slots.
template <bool kFast, class StrideA, class StrideB, class CopyA, class CopyB>
__device__ __forceinline__ void dispatch_sk(int M, int N, int K, float alpha, const float* A,
                                            StrideA dA, const float* B, StrideB dB, float beta,
                                            float* C, long long sCm, long long sCn, float* ws,
                                            int tile0) {
  constexpr int kTileElems = BLK_M * BLK_N;
  __shared__ cg::StreamK s_sk;     // the schedule, read back per run (no registers held)
  if (threadIdx.x == 0)
    s_sk = cg::StreamK::make(cg::ceil_div(M, BLK_M), cg::ceil_div(N, BLK_N), tile0,
                             cg::ceil_div(K, BLK_K), gridDim.x);
  __syncthreads();
  auto run = [&](int tile, int k0, int k1, auto&& epi) {
    int tile_m, tile_n;
    tile_coord(s_sk.tile0 + tile, s_sk.tiles_m, s_sk.tiles_n, tile_m, tile_n);
    if (threadIdx.x == 0) sk_k_end() = k1;
    __syncthreads();   // and the previous run's last smem reads are done before the prologue
    tile_gemm<kFast, StrideA, StrideB, CopyA, CopyB>(tile_m, tile_n, k0, KEndShared{}, epi, M, N,
                                                    K, alpha, A, dA, B, dB, beta, C, sCm, sCn);
  };
  // The loop positions live in shared memory as well and are read back after each run:
  // a register held across the mainloop is one the 128-register entry points lack.
  __shared__ int s_pos;
  if (threadIdx.x == 0) s_pos = blockIdx.x;
  __syncthreads();
  while (s_pos < s_sk.dp_tiles) {                    // whole tiles: blockIdx.x, + G, ...
    run(s_pos, 0, s_sk.k_tiles, StoreTile<0>{});
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
      const cg::StreamK& sk = s_sk;
      const int u = s_pos / sk.k_tiles;
      const int c_lo = sk.cta_of(u * sk.k_tiles);                         // contributors c_lo..c_hi
      const int c_hi = sk.cta_of((u + 1) * sk.k_tiles - 1);
      if (c_lo == c_hi) return true;                                      // not cut: a whole tile
      int* counter = reinterpret_cast<int*>(ws) + u;
      return cg::streamk_fixup<kThreads>(acc, counter, c_hi - c_lo + 1, int(blockIdx.x) - c_lo,
                                         [&](int j) {
                                           const int c = c_lo + j;
                                           return ws + cg::kStreamKCounters +
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

// PDL=1: split stream-K launches (registry.stream_k_plan) start their twin by programmatic
// dependent launch on sm_90+ (launch.launch(pdl=True), Kernel.pdl). The data-parallel
// entries let dependents start at once (griddepcontrol.launch_dependents), so the twin's
// CTAs take the SMs as the last data-parallel CTAs leave rather than after the last one
// and a launch gap. The twin touches none of their tiles, and waits for them to finish
// (griddepcontrol.wait) before it ends, so that its completion is the whole product's.
// see docs/tuning/cute_pipelined.md#stream-k
#if PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CG_PDL_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#define CG_PDL_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define CG_PDL_LAUNCH_DEPENDENTS() ((void)0)
#define CG_PDL_WAIT() ((void)0)
#endif
#define CG_PIPE_ENTRY(NAME, DA, DB, CA, CB, FAST, EPI)                                   \
  extern "C" __global__ void __launch_bounds__(kThreads, (kMinBlocks<CA, CB>))          \
      NAME(CG_GEMM_PARAMS) {                                                              \
    CG_PDL_LAUNCH_DEPENDENTS();                                                           \
    dispatch<FAST, EPI, decltype(DA), decltype(DB), CA, CB>(M, N, K, alpha, A, DA, B, DB,   \
                                                             beta, C, sCm, sCn);          \
  }
#define CG_PIPE_SK_ENTRY(NAME, DA, DB, CA, CB, FAST)                                     \
  extern "C" __global__ void __launch_bounds__(kThreads, MIN_BLOCKS)                     \
      NAME(CG_GEMM_PARAMS, float* __restrict__ ws, int tile0) {                           \
    dispatch_sk<FAST, decltype(DA), decltype(DB), CA, CB>(M, N, K, alpha, A, DA, B, DB,    \
                                                           beta, C, sCm, sCn, ws, tile0);  \
    CG_PDL_WAIT();                                                                        \
  }

// Vector entry points (align 4, contiguous extents % 4 == 0): 16-byte cp.async for m-/n-major
// operands, register-staged 16-byte loads for k-major ones; interior CTAs unchecked.
CG_PIPE_ENTRY(cute_pipelined_am_bn, CG_DA_m, CG_DB_n, CpVecMN<BLK_M>, CpVecMN<BLK_N>, true, EPI_AM_BN)
CG_PIPE_ENTRY(cute_pipelined_am_bk, CG_DA_m, CG_DB_k, CpVecMN<BLK_M>, LdVecK, true, EPI_AM_BK)
CG_PIPE_ENTRY(cute_pipelined_ak_bn, CG_DA_k, CG_DB_n, LdVecK, CpVecMN<BLK_N>, true, EPI_AK_BN)
CG_PIPE_ENTRY(cute_pipelined_ak_bk, CG_DA_k, CG_DB_k, CpVecK, CpVecK, true, EPI_AK_BK)
// 4-byte cp.async only (any alignment, any extents), every copy checked
CG_PIPE_ENTRY(cute_pipelined_ak_bk_s, CG_DA_k, CG_DB_k, CpSclK, CpSclK, false, 0)
CG_PIPE_ENTRY(cute_pipelined_am_bk_s, CG_DA_m, CG_DB_k, CpSclMN, CpSclK, false, 0)
CG_PIPE_ENTRY(cute_pipelined_am_bn_s, CG_DA_m, CG_DB_n, CpSclMN, CpSclMN, false, 0)
CG_PIPE_ENTRY(cute_pipelined_ak_bn_s, CG_DA_k, CG_DB_n, CpSclK, CpSclMN, false, 0)
#if STREAM_K
// the vector entry points again as persistent stream-K launches (extra arguments: ws, tile0)
// A register-staged operand (ak_bn): interior tiles unchecked but with in-place fragment
// loads (kDB): with a run's bounds live, double-buffered fragments spill there (100-200
// bytes on sm_90). am_bk has no twin: it spilled on sm_80. (The registry says when each
// twin is taken.)
CG_PIPE_SK_ENTRY(cute_pipelined_am_bn_sk, CG_DA_m, CG_DB_n, CpVecMN<BLK_M>, CpVecMN<BLK_N>, true)
CG_PIPE_SK_ENTRY(cute_pipelined_ak_bn_sk, CG_DA_k, CG_DB_n, LdVecK, CpVecMN<BLK_N>, true)
CG_PIPE_SK_ENTRY(cute_pipelined_ak_bk_sk, CG_DA_k, CG_DB_k, CpVecK, CpVecK, true)
#endif
