// The mainloop of the tuned kernel (c3_pipelined.cu): one CTA tile's k-tiles through a
// multistage cp.async pipeline into register fragments and 8x8 FFMA per thread, then the
// tile's epilogue (smem_epilogue.cuh). The idea alone, without the tuning, is the teaching
// stage kernels/cute/c3_multistage.cu.
//
//  * stages >= 3 k-tiles in flight: while k-tile t is computed, t+1 .. t+stages-1 are on
//    their way to shared memory; one barrier per k-tile (cp_async_wait<stages-2> +
//    __syncthreads before switching stages). How each operand gets there (cp.async, staged
//    in registers, raw stages + transpose): pipelined_copies.cuh; the compute stages'
//    layouts: kquad_stages.cuh.
//  * Shared -> registers: k-block kb+1 is double-buffered in registers while kb is computed
//    (kDB); edge CTAs and stream-K runs of the register-staged entries load each k-block's
//    fragment in place and let ptxas hoist the LDS as registers allow (double buffering
//    spills there). docs/design/cute_pipelined.md#frag-db.
//  * kt_unroll k-tiles per iteration in the both-k-major data-parallel entry.
//  * kPred: edge tiles (crossing M or N) check every copy and store; interior tiles run the
//    same code with the checks compiled out, the partial k-tile of a K % BLK_K != 0 first
//    (residue first: only the prologue checks, where checking every k-tile cost 2048x2048x300
//    a quarter more than 2048x2048x304: docs/design/cute_pipelined.md#k-residue); stream-K
//    runs of such tiles check every copy, as edge tiles do.
// Residues: identity tensors through the same TiledCopy/TiledMMA partitions; elem_less
//           against (M,K) / (N,K) decides each copy (cp.async zero-fill, or zeroed
//           registers) — every k-tile, so a partial last k-tile adds exact zeros. 16-byte
//           entry points are chosen only when the contiguous extent is a multiple of 4
//           (Variant.extent_align): a vector is then entirely in or out.
// Bottleneck: FFMA issue (64 FFMA per 4 LDS.128 per thread per k); per k-tile the barrier,
//           the refill and its address math are the visible overheads
//           (docs/design/cute_pipelined.md#bottleneck).
#pragma once

#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>
#include <cute_gemm/kquad_stages.cuh>
#include <cute_gemm/pipelined_config.cuh>
#include <cute_gemm/pipelined_copies.cuh>
#include <cute_gemm/smem_epilogue.cuh>

namespace cg {

// One k-block's 8x8 outer product. The FFMA order decides which operand registers the
// consecutive FFMAs share, and so ptxas's operand reuse and register-bank conflicts:
// 0 = CuTe's gemm (row-major kinked serpentine: rows m, m+1 share b[n]); 2 = col-major
// kinked serpentine (columns n, n+1 share a[m]); 6 = order 2 in 2x2 blocks (a U through
// (m,n) (m,n+1) (m+1,n+1) (m+1,n), then the next m pair): the same operand reuse as 2
// with fewer non-reused source registers in one bank. Measurements, and the orders that
// lost: docs/design/cute_pipelined.md#ffma-order.
template <int kOrder, class Mma, class TA, class TB, class TC>
__device__ __forceinline__ void outer_product(Mma const& mma, TA const& a, TB const& b, TC& c) {
  using namespace cute;
  constexpr int M = decltype(size<1>(a))::value, N = decltype(size<1>(b))::value;
  static_assert(kOrder == 0 || (kOrder == 2 && N % 2 == 0) ||
                (kOrder == 6 && N % 2 == 0 && M % 2 == 0), "fma_order: 0, 2 or 6");
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

// An operand's raw stages (smem at p, layout l) as partitioned by its copy; false_type where
// the operand has none (kOn false), so that the partition is not instantiated.
template <bool kOn, class ThrCp, class Layout>
__device__ __forceinline__ auto raw_partition(ThrCp const& thr_copy, float* p, Layout const& l) {
  if constexpr (kOn) return thr_copy.partition_D(cute::make_tensor(cute::make_smem_ptr(p), l));
  else return cute::false_type{};
}

// One tile: k-tiles [k_begin, k_end()) are accumulated (all of them but in stream-K runs);
// epi(acc) then says whether this CTA stores the tile (a stream-K partial is handed to
// streamk_fixup instead, and only the last contributor stores the sum), and how
// (kEpiPolicy<Epi>, smem_epilogue.cuh). smem_buf: the dynamic smem, one region per operand;
// fused: the call's fused epilogue (epilogue.cuh; cg::Epilogue<> for none).
template <class Cfg, bool kPred, class StrideA, class StrideB, class CopyA, class CopyB, class KEnd,
          class Epi, class Fused>
__device__ __forceinline__ void gemm_pipelined(int tile_m, int tile_n, int k_begin, KEnd k_end,
                                               Epi&& epi, int M, int N, int K,
                                               float alpha, const float* A, StrideA dA,
                                               const float* B, StrideB dB, float beta, float* C,
                                               long long sCm, long long sCn, CopyA, CopyB,
                                               float* smem_buf, Fused const& fused) {
  using namespace cute;
  constexpr int BLK_M = Cfg::blk_m, BLK_N = Cfg::blk_n, BLK_K = Cfg::blk_k, STAGES = Cfg::stages;
  constexpr int kThreads = PipeGeometry<Cfg>::kThreads;
  constexpr bool kSk = is_same_v<KEnd, KEndShared>;   // a stream-K run
  constexpr bool kRawA = kRaw<Cfg, CopyA>;   // k-major: raw stages + 2 compute buffers
  constexpr bool kRawB = kRaw<Cfg, CopyB>;
  constexpr bool kStagedA = kStaged<Cfg, CopyA>;  // k-major: LDG.128 -> registers -> compute stage
  constexpr bool kStagedB = kStaged<Cfg, CopyB>;
  constexpr int kBufA = kRawA ? 2 : STAGES;
  constexpr int kBufB = kRawB ? 2 : STAGES;
  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<BLK_K>{};
  auto bP = Int<STAGES>{};
  auto cta_tiler = make_shape(bM, bN, bK);                                      // (BLK_M,BLK_N,BLK_K)
  constexpr bool kQuadA = kRawA ? kQuadRaw<Cfg> : kStagedA && kQuadStaged<Cfg, kSk>;
  constexpr bool kQuadB = kRawB ? kQuadRaw<Cfg> : kStagedB && kQuadStaged<Cfg, kSk>;
  auto sA_layout = StageLayout<Cfg, BLK_M, kBufA, kQuadA>{};                    // (BLK_M,BLK_K,BUF)
  auto sB_layout = StageLayout<Cfg, BLK_N, kBufB, kQuadB>{};                    // (BLK_N,BLK_K,BUF)
  auto rA_layout = make_layout(make_shape(bM, bK, bP), make_stride(bK, _1{}, bM * bK));     // (BLK_M,BLK_K,PIPE)
  auto rB_layout = make_layout(make_shape(bN, bK, bP), make_stride(bK, _1{}, bN * bK));     // (BLK_N,BLK_K,PIPE)
  typename PipeGeometry<Cfg>::TiledMma mma;
  typename CopyA::Tiled copy_a;                                                 // CopyA, CopyB: tags
  typename CopyB::Tiled copy_b;                                                 // (pipelined_copies.cuh)

  // Preconditions (and PipeGeometry's)
  CUTE_STATIC_ASSERT_V(size(copy_a) == size(mma));                              // one thread set
  CUTE_STATIC_ASSERT_V(size(copy_b) == size(mma));
  CUTE_STATIC_ASSERT_V(size(mma) == Int<kThreads>{});                           // the launch block
  CUTE_STATIC_ASSERT_V(tile_size<0>(mma) == bM);                                // MMA tile = CTA tile
  CUTE_STATIC_ASSERT_V(tile_size<1>(mma) == bN);
  CUTE_STATIC_ASSERT_V(bM % size<0>(typename CopyA::Tiled::Tiler_MN{}) == Int<0>{});  // BLK_M / CPY_M tile
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename CopyA::Tiled::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K tile
  CUTE_STATIC_ASSERT_V(bN % size<0>(typename CopyB::Tiled::Tiler_MN{}) == Int<0>{});  // BLK_N / CPY_N tile
  CUTE_STATIC_ASSERT_V(bK % size<1>(typename CopyB::Tiled::Tiler_MN{}) == Int<0>{});  // BLK_K / CPY_K tile
  static_assert(!Cfg::kq_layout || (BLK_K >= 8 && BLK_K <= 32), "kq_layout: BLK_K 8 to 32");

  // Residue first (interior tiles): where K % BLK_K != 0, k runs from -k_shift, so that
  // the partial k-tile is k-tile 0, loaded checked in the prologue; the main loop's
  // copies stay unchecked. (Edge tiles check every copy anyway: no shift.)
  // Not in stream-K runs: the check's branch there (k_begin from the walk) spills.
  constexpr bool kShifts = !kPred && !kSk;
  const int k_shift = kShifts ? (BLK_K - K % BLK_K) % BLK_K : 0;
  Tensor mA = make_tensor(make_gmem_ptr(A - k_shift * get<1>(dA)), make_shape(M, K + k_shift), dA);  // (M,K')
  Tensor mB = make_tensor(make_gmem_ptr(B - k_shift * get<1>(dB)), make_shape(N, K + k_shift), dB);  // (N,K')
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
  // m/n-major operand's STAGES compute stages fit in it): at most Config::dyn_smem bytes,
  // what the registry launches the data-parallel entries with.
  constexpr int kRegionA = BLK_K * (2 * (BLK_M + kSmemPad) + STAGES * BLK_M);
  constexpr int kComputeA = kStage<Cfg, BLK_M, kQuadA> * kBufA, kComputeB = kStage<Cfg, BLK_N, kQuadB> * kBufB;
  static_assert(kComputeA + (kRawA ? BLK_M * BLK_K * STAGES : 0) <= kRegionA, "A region");
  static_assert(kComputeB + (kRawB ? BLK_N * BLK_K * STAGES : 0) <=
                BLK_K * (2 * (BLK_N + kSmemPad) + STAGES * BLK_N), "B region");
  // The stream-K twins get only the dynamic smem they use (registry Kernel.stream_k_smem,
  // ladder_cute._twin_smem, Config::sk_smem bytes): what this instantiation addresses.
  static_assert(!kSk || 4 * (kRegionA + kComputeB + (kRawB ? BLK_N * BLK_K * STAGES : 0)) <= Cfg::sk_smem,
                "stream-K twin: more dynamic smem than the registry gives it (sk_smem)");
  static_assert(kSk || 4 * (kRegionA + BLK_K * (2 * (BLK_N + kSmemPad) + STAGES * BLK_N)) <= Cfg::dyn_smem,
                "data-parallel entry: more dynamic smem than the registry gives it (dyn_smem)");
  float* smem_b = smem_buf + kRegionA;
  Tensor sA = make_tensor(make_smem_ptr(smem_buf), sA_layout);                        // (BLK_M,BLK_K,BUF)
  Tensor sB = make_tensor(make_smem_ptr(smem_b), sB_layout);                          // (BLK_N,BLK_K,BUF)

  // Global -> shared copy partitions (cp.async into the compute stages, or into the raw
  // stages for k-major operands), with their coordinates; tXtX: the raw -> compute
  // transpose's destination (same thread layout, so a thread transposes its own vectors).
  // tXqX, the raw stages: only for CpVecK operands (else false_type; each partition is costly
  // to compile). tXrX: registers shaped like one k-tile of tXgX (the same shape as tXqX's).
  ThrCopy thr_copy_a = copy_a.get_slice(threadIdx.x);
  Tensor tAgA = thr_copy_a.partition_S(gA);                                           // (CPY,CPY_M,CPY_K,k)
  Tensor tAcA = thr_copy_a.partition_S(gcA);                                          // (CPY,CPY_M,CPY_K,k)
  Tensor tAsA = thr_copy_a.partition_D(sA);                                           // (CPY,CPY_M,CPY_K,BUF)
  auto tAqA = raw_partition<kRawA>(thr_copy_a, smem_buf + kComputeA, rA_layout);      // (CPY,CPY_M,CPY_K,PIPE)
  Tensor tArA = make_tensor<float>(shape(tAgA(_, _, _, 0)));                          // (CPY,CPY_M,CPY_K)
  ThrCopy thr_copy_b = copy_b.get_slice(threadIdx.x);
  Tensor tBgB = thr_copy_b.partition_S(gB);                                           // (CPY,CPY_N,CPY_K,k)
  Tensor tBcB = thr_copy_b.partition_S(gcB);                                          // (CPY,CPY_N,CPY_K,k)
  Tensor tBsB = thr_copy_b.partition_D(sB);                                           // (CPY,CPY_N,CPY_K,BUF)
  auto tBqB = raw_partition<kRawB>(thr_copy_b, smem_b + kComputeB, rB_layout);        // (CPY,CPY_N,CPY_K,PIPE)
  Tensor tBrB = make_tensor<float>(shape(tBgB(_, _, _, 0)));                          // (CPY,CPY_N,CPY_K)

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
  // The refill (pipelined_copies.cuh): cp.async all goes out at k-block 0; register-staged
  // slices go in Groups::kPhases groups, each loaded at k-block load_k(p) and stored to smem
  // at stash_k(p).
  using Groups = StagedGroups<Cfg, kStagedA ? decltype(size<1>(tAsA))::value : 0,
                              kStagedB ? decltype(size<1>(tBsB))::value : 0>;
  constexpr int kSlA = Groups::kSlA, kU = Groups::kU, kPhases = Groups::kPhases;
  static_assert(!(kStagedA && kStagedB), "both k-major: raw stages (CpVecK)");
  // phase p: cp.async (p == 0) + staged group p; first: k-tile 0 of a shifted walk, its
  // copies below k_shift zero-filled
  auto load_phase_as = [&](auto first, int phase, int k_tile, int stage) {
    constexpr bool kFirst = decltype(first)::value;
    const int lo = phase * kU / kPhases, hi = (phase + 1) * kU / kPhases;
    if (phase == 0 || kStagedA) {
      if constexpr (kRawA)
        issue_slices<kPred, kFirst>(copy_a, tAgA, tAcA, tAqA, tArA, shapeA, k_tile, stage,
                                    false_type{}, 0, 1 << 20, k_shift);
      else
        issue_slices<kPred, kFirst>(copy_a, tAgA, tAcA, tAsA, tArA, shapeA, k_tile, stage,
                                    bool_constant<kStagedA>{}, kStagedA ? lo : 0,
                                    kStagedA ? hi : 1 << 20, k_shift);
    }
    if (phase == 0 || kStagedB) {
      if constexpr (kRawB)
        issue_slices<kPred, kFirst>(copy_b, tBgB, tBcB, tBqB, tBrB, shapeB, k_tile, stage,
                                    false_type{}, 0, 1 << 20, k_shift);
      else
        issue_slices<kPred, kFirst>(copy_b, tBgB, tBcB, tBsB, tBrB, shapeB, k_tile, stage,
                                    bool_constant<kStagedB>{}, kStagedB ? lo - kSlA : 0,
                                    kStagedB ? hi - kSlA : 1 << 20, k_shift);
    }
  };
  auto load_phase = [&](int phase, int k_tile, int stage) {
    load_phase_as(false_type{}, phase, k_tile, stage);
  };
  auto stash_phase = [&](int phase, int stage) {
    const int lo = phase * kU / kPhases, hi = (phase + 1) * kU / kPhases;
    if constexpr (kStagedA) stash_slices(tArA, tAsA, stage, lo, hi);
    if constexpr (kStagedB) stash_slices(tBrB, tBsB, stage, lo - kSlA, hi - kSlA);
  };
  // Raw stage -> compute buffer for CpVecK operands: the thread's own 16-byte vectors
  // back (LDS.128; landed once its cp_async_wait returns) and out as 4 STS.32 each.
  // Registers live for one LDS latency instead of a global load's.
  // (cute::copy for the STS too: copy_scalar there changed ak_bk's SASS on sm_80)
  auto transpose = [&](int raw_stage, int buf) {
    if constexpr (kRawA) { copy(tAqA(_, _, _, raw_stage), tArA); copy(tArA, tAsA(_, _, _, buf)); }
    if constexpr (kRawB) { copy(tBqB(_, _, _, raw_stage), tBrB); copy(tBrB, tBsB(_, _, _, buf)); }
  };
  constexpr bool kAnyRaw = kRawA || kRawB;
  // k-block of the transpose of k-tile t+1 during k-tile t (trans_k): its stores overlap
  // FFMA and the tile has had over 2 k-tiles to land. Late is better
  // (see docs/design/cute_pipelined.md#trans-k).
  constexpr int kTransK = Cfg::trans_k;
  static_assert(Cfg::trans_k >= 0 && Cfg::trans_k < BLK_K - 1, "before the k-tile's barrier");

  constexpr int K_BLOCK_MAX = BLK_K;

  // Prologue: STAGES-1 k-tiles in flight (one commit group each, empty past the end so
  // that group g is always k-tile k_begin + g).
  CUTE_UNROLL
  for (int s = 0; s < STAGES - 1; ++s) {
    if (k_begin + s < k_end()) {
      CUTE_UNROLL
      for (int p = 0; p < kPhases; ++p) {
        if constexpr (kShifts) {
          if (k_begin + s == 0 && k_shift != 0) {   // (the main loop never loads k-tile 0)
            load_phase_as(true_type{}, p, 0, s);
            continue;
          }
        }
        load_phase(p, k_begin + s, s);
      }
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
  // smem -> register fragments: what copy(src, dst) picks for these static layouts, less its
  // search for stride-0 modes (there are none), costly to compile
  constexpr AutoVectorizingCopyWithAssumedAlignment<128> kFrag{};
  // Fragments double-buffered in registers, but not in edge CTAs (kPred) of the
  // register-staged entries: with the checks' registers, double buffering spills there on
  // sm_80; nor in their stream-K runs: the run's bounds take registers.
  constexpr bool kDB = !((kPred || kSk) && (kStagedA || kStagedB));
  if constexpr (kDB) {
    copy(kFrag, tCsA(_, _, 0, idxA()), tCrA(_, _, 0));                                // LDS.128
    copy(kFrag, tCsB(_, _, 0, idxB()), tCrB(_, _, 0));
  }

  // kt_unroll k-tiles per iteration in the data-parallel raw-stage entries (both operands
  // k-major): stage indices fold into fewer instructions and ptxas schedules it better.
  // Not in the register-staged entries nor the stream-K twins (they spill), nor am_bn
  // (over 128 registers unrolled): see docs/design/cute_pipelined.md#kt-unroll.
  constexpr int kKtUnroll = is_same_v<KEnd, KEndValue> && (kRawA || kRawB) ? Cfg::kt_unroll : 1;
#pragma unroll (kKtUnroll)
  for (int k_tile = k_begin; k_tile < k_end(); ++k_tile) {
    const bool refill = k_tile + STAGES - 1 < k_end();
    CUTE_UNROLL
    for (int k_block = 0; k_block < K_BLOCK_MAX; ++k_block) {
      CUTE_UNROLL
      for (int p = 0; p < kPhases; ++p)     // group p's registers -> smem
        if (refill && kU > 0 && k_block == Groups::stash_k(p))
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
      // smem -> registers: kDB, the next k-block (k_block 0 of the next tile at the end)
      // into the other slot; else this k-block, hoisted by ptxas as registers allow
      const int k_next = kDB ? (k_block + 1) % K_BLOCK_MAX : k_block;
      const int slot = kDB ? (k_block + 1) & 1 : k_block & 1;
      copy(kFrag, tCsA(_, _, k_next, idxA()), tCrA(_, _, slot));
      copy(kFrag, tCsB(_, _, k_next, idxB()), tCrB(_, _, slot));
      // Refill the stage read during the previous k-tile (freed by its last barrier) with
      // k-tile k_tile + STAGES - 1 (one cp.async group per k-tile, empty past the end).
      CUTE_UNROLL
      for (int p = 0; p < kPhases; ++p)     // group p (and cp.async) out
        if (refill && k_block == Groups::load_k(p)) load_phase(p, k_tile + STAGES - 1, prev_stage());
      if (k_block == 0) cp_async_fence();
      outer_product<kAnyRaw ? Cfg::fma_order_raw : Cfg::fma_order>(mma, tCrA(_, _, k_block & 1),
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
  store_tile<Cfg, kEpiPolicy<Epi>, kPred>(thr_mma, tCrC, tCgC, tCcC, shape(mC), alpha, beta, C,
                                          sCm, sCn, tile_m, tile_n, smem_buf, fused);
}

}  // namespace cg
