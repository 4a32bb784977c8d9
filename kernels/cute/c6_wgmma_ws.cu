// cute_wgmma_ws — the Hopper speed stage: warp-specialized, persistent wgmma GEMM. sm_90a.
//
// Adds over cute_wgmma (c5), each idea a header in include/cute_gemm/:
//  * Warp specialization: warpgroup 0 is the producer — one thread issues every TMA load
//    (sm90_operand.cuh) into the stage ring (sm90_pipeline.cuh) — and warpgroups 1..CONSUMERS
//    only run wgmma and the epilogue. The producer runs ahead by up to STAGES k-tiles, across
//    tile boundaries, so the next tile's operands load during this tile's epilogue.
//  * setmaxnreg: the producer warpgroup gives its registers back (producer_regs), the
//    consumers take them (consumer_regs): 128 fp32 accumulators + descriptors per thread.
//  * One wgmma batch stays in flight: k-tile t is issued before k-tile t-1 is waited for
//    (warpgroup_wait<1>), then t-1's stage is released to the producer.
//  * Two consumer warpgroups share a BLK_M x BLK_N tile (each 64 rows of it, all BLK_N
//    columns: one B read from smem feeds both), the TiledMMA's 2 x 1 atom layout.
//  * Persistent: one CTA per SM walks tiles in grouped order (sm90_tile_scheduler.cuh), so no
//    CTA launch, barrier init or pipeline fill per tile.
//  * Clusters of cluster_m CTAs along m (__cluster_dims__): the CTAs of a cluster compute
//    vertically adjacent tiles of one n block; each loads 1/cluster_m of every B stage and
//    multicasts it to all (sm90_operand.cuh load_part), and its consumers release a stage in
//    every CTA of the cluster (a stage is refilled only when all have read it).
// Geometry: struct Config (ladder_cute.WgmmaWsConfig): BLK_M x BLK_N = 128 x 256, BLK_K = 128
//           bytes of k, 4 stages (48 KB each), 384 threads (1 producer + 2 consumer
//           warpgroups), 1 CTA per SM, clusters of 2 along m, groups of 16 tile rows.
// Residues: TMA zero-fills loads; the epilogue predicates stores on M and N (as c5); a CTA of
//           a cluster whose tile lies past M still loads its part of B.
// Strides:  A, B: the variant's majors, 16-byte aligned; C any strides (row-major C: paired
//           stores, sm90_epilogue.cuh).
// TF32, A m-major: TF32 wgmma reads only k-major smem, so such an A comes from registers (RS
//           wgmma, sm90_register_operand.cuh, sm90_consumer_rs.cuh): the consumers load it
//           from TMA's m-major stages, accumulator rows permuted for conflict-free loads. A
//           row-major B is the same case on the transposed problem C^T = B^T A^T: the _ak_bn
//           entry swaps the operands (and C's strides) and runs the _am_bk instance.
// Promote:  Config::promote > 1 moves the wgmma accumulator into a compensated float32
//           register sum every `promote` k-tiles (sm90_consumer_promote.cuh; cute_3xtf32's
//           GEMM), at 2x the accumulator registers; the right half's adds run under the
//           next window's first wgmmas (on the left half). 8-bit operands (promote 1): every
//           k-tile into a float32 sum, scaled by its block scales (sm90_consumer_scaled.cuh).
// Tail:     Config::tail_split > 0: the last wave's units are cut along K into runs of whole
//           windows (k-tiles where not promoted), their partials added by the last piece
//           (sm90_tail_split.cuh): split-K where the units are fewer than the clusters. Its
//           twin entry NAME_cut takes (ws, dp, pieces) after the maps, planned on the problem
//           it walks (C^T for the swapped tf32 entry: Variant.walks_transposed), and runs the
//           walks that plan cuts; NAME, without the cut's code, the others.
// Batch:    Config::batched: twins NAME_b walk a batch of problems as one sequence of units
//           (sm90_tile_scheduler.cuh BatchedTiles), A and B in 4-D tensor maps (a broadcast
//           operand's mode: extent 1, coordinate 0), C moved per problem; never cut.
// Ping-pong: Config::pingpong gives each consumer warpgroup tiles of its own (BLK_M of 64 or
//           128 rows), the two in turn: one's epilogue under the other's wgmmas
//           (sm90_consumer_pingpong.cuh); SS wgmma only, never cut or promoted.
// Bottleneck: the epilogue stalls both consumer warpgroups once per tile (only the producer's
//           loads overlap it; not so in ping-pong); at 4096^3, 512 tiles on 132 SMs leave a
//           partial last wave.
//           Measurements: docs/design/cute_wgmma_ws.md.
#include <cute_gemm/cute.cuh>
#include <cute/arch/mma_sm90.hpp>
#include <cute_gemm/common.cuh>
#include <cute_gemm/sm90_tma.cuh>
#include <cute_gemm/sm90_operand.cuh>
#include <cute_gemm/sm90_pipeline.cuh>
#include <cute_gemm/sm90_mainloop.cuh>
#include <cute_gemm/sm90_tile_scheduler.cuh>
#include <cute_gemm/sm90_epilogue.cuh>
#include <cute_gemm/sm90_setmaxnreg.cuh>
#include <cute_gemm/sm90_register_operand.cuh>
#include <cute_gemm/sm90_consumer_rs.cuh>
#include <cute_gemm/sm90_consumer_promote.cuh>
#include <cute_gemm/sm90_consumer_scaled.cuh>
#include <cute_gemm/sm90_tail_split.cuh>
#include <cute_gemm/sm90_split_parts.cuh>
#include <cute_gemm/sm90_consumer_pingpong.cuh>

using namespace cute;

constexpr int kThreads = 128 * (1 + Config::consumers);

// ---- consumers ---------------------------------------------------------------------------
// The consumer warpgroups: wgmma over the ring's stages, one batch in flight
// (sm90_mainloop.cuh), then the epilogue of each tile straight from the accumulators.
// (With Config::promote > 0: consume_promoted, sm90_consumer_promote.cuh.)
template <class TC, int kCluster, class OpA, class OpB, class Mma, class Ring, class Tiles,
          class Epi>
__device__ __forceinline__ void consume(Mma const& mma, Ring* ring, typename OpA::Elem* smemA,
                                        typename OpB::Elem* smemB,
                                        Tiles const& tiles, cg::sm90::TailSplit split, float* ws,
                                        int stride, int rank, int k_tiles,
                                        TC* C, long long sCm, long long sCn,
                                        int M, int N, float alpha, float beta, Epi epi) {
  constexpr int kBlkM = Config::blk_m, kBlkN = Config::blk_n, kStages = Config::stages;
  static_assert(!Epi::kBlocks, "block scales: on promoted sums only (consume_promoted)");
  using State = cg::sm90::RingState<kStages>;
  cg::sm90::setmaxnreg_inc<Config::consumer_regs>();
  const int thread = threadIdx.x - 128;                    // within the consumer warpgroups
  const bool releaser = threadIdx.x % 32 == 0;             // one arrival per warp
  auto [tCrA, tCrB] = cg::sm90::stage_fragments<OpA, OpB>(mma, thread, smemA, smemB);
  Tensor acc = partition_fragment_C(mma.get_slice(thread), Shape<Int<kBlkM>, Int<kBlkN>>{});  // (MMA,MMA_M,MMA_N)
  State st;
  for (int item = cg::sm90::first_unit<kCluster>(); item < split.items(tiles.count());
       item += stride) {
    // the k-tiles the producer streams for this item (a cut unit's piece: its own)
    cg::sm90::mainloop_ss<kCluster>(mma, ring, st, tCrA, tCrB, acc, split.run(item, k_tiles),
                                    releaser);
    int m_unit, n_blk;
    tiles.coord(split.unit(item), m_unit, n_blk);
    const int m_blk = m_unit * kCluster + rank;
    if (m_blk * kBlkM >= M) continue;                      // a cluster's tile past M: no partial
    if (!cg::sm90::piece_done<kThreads - 128, kCluster, false>(acc, acc, split, item, ws, thread,
                                                               rank))
      continue;                                            // another piece adds this one's
    cg::sm90::store_axpby<kBlkM, kBlkN>(mma, thread, acc, tiles.at(C, split.unit(item)), sCm, sCn, M, N, m_blk * kBlkM,
                                        n_blk * kBlkN, alpha, beta, epi);
  }
}

// Inlined into its entry (CG_WS_INLINE: __forceinline__, written by WgmmaWsConfig.cpp): a
// call between the entry and the wgmmas serializes them (ptxas C7510), and the compiler
// stopped inlining it on its own as the 16-bit stores grew. Windows of several k-tiles
// (promote > 1: CG_INLINE_IF_FUSED) leave it to the compiler unless fused: there forced
// inlining serialized the wgmmas instead.
// (Batch: cg::sm90::NoBatch, or a batched entry's cg::sm90::Batch)
template <class TAB, class TC, GMMA::Major MajA, GMMA::Major MajB, class Epi,
          class Batch = cg::sm90::NoBatch>
__device__ CG_WS_INLINE void gemm_wgmma_ws(CG_GEMM_PARAMS_T(TAB, TC), const TmaDescriptor* tma_a,
                              const TmaDescriptor* tma_b, float* ws, cg::sm90::TailSplit split,
                              Epi epi, Batch batch = {}) {
  using T = cg::sm90::mma_t<cg::a_t<TAB>>;                  // A's (B's has its size)
  using TB = cg::sm90::mma_t<cg::b_t<TAB>>;
  static_assert(sizeof(T) == sizeof(TB), "A and B of one width");
  constexpr int kBlkM = Config::blk_m, kBlkN = Config::blk_n, kStages = Config::stages;
  constexpr int kBlkK = Config::k_bytes / int(sizeof(T));   // a k-tile: one swizzle row
  constexpr int kCluster = Config::cluster_m;              // CTAs along m sharing B tiles
  // tf32 with A m-major: A from registers (RS), the wgmma then sees a k-major A
  constexpr bool kRegA = sizeof(T) == 4 && MajA == GMMA::Major::MN;
  using OpA = cute::conditional_t<
      kRegA, cg::sm90::RegisterOperand<kBlkM, kBlkK, kStages>,
      cg::sm90::OperandTile<cg::a_t<TAB>, MajA, kBlkM, kBlkK, kStages, 1, Config::k_bytes>>;
  using OpB = cg::sm90::OperandTile<cg::b_t<TAB>, MajB, kBlkN, kBlkK, kStages, kCluster, Config::k_bytes>;
  using Ring = cg::sm90::StageRing<kStages>;
  using State = cg::sm90::RingState<kStages>;
  // a warpgroup per 64 rows (ping-pong: one warpgroup a tile); RS: the registers hold A as a
  // k-major wgmma operand
  constexpr int kMmaGroups = Config::pingpong ? 1 : Config::consumers;
  auto make_mma = [] {
    if constexpr (kRegA)
      return make_tiled_mma(
          GMMA::rs_op_selector<T, TB, float, Shape<_64, Int<kBlkN>, Int<kBlkK>>, GMMA::Major::K, MajB>(),
          Layout<Shape<Int<Config::consumers>, _1, _1>>{});
    else
      return make_tiled_mma(
          GMMA::ss_op_selector<T, TB, float, Shape<_64, Int<kBlkN>, Int<kBlkK>>, MajA, MajB>(),
          Layout<Shape<Int<kMmaGroups>, _1, _1>>{});
  };
  TiledMMA mma = make_mma();

  // Preconditions
  static_assert(Config::pingpong ? (kBlkM == 64 || kBlkM == 128) && Config::consumers == 2
                                 : kBlkM == 64 * Config::consumers,
                "BLK_M: 64 rows per consumer warpgroup (ping-pong: two, 64 or 128 rows a tile)");
  static_assert(!Config::pingpong || (!kRegA && sizeof(T) > 1 && Config::promote == 0
                                      && Config::tail_split == 0),
                "ping-pong: SS wgmma, neither promoted nor cut");
  static_assert(kBlkN % 8 == 0 && kBlkN <= 256, "a wgmma's N: a multiple of 8, at most 256");
  static_assert(kStages >= 2, "a stage loading while one is computed");
  static_assert(kCluster == 1 || kCluster == 2 || kCluster == 4, "cluster of 1, 2 or 4 along m");
  static_assert(Config::producer_regs + Config::consumers * Config::consumer_regs
                <= 65536 / 128, "setmaxnreg: the register file of one CTA");
  static_assert(Config::split_parts == 0 || Config::promote == 3, "a window: one chunk's three k-tiles");
  CUTE_STATIC_ASSERT_V(size(mma) == Int<128 * kMmaGroups>{});     // the threads of a tile
  CUTE_STATIC_ASSERT_V(Int<kBlkK>{} % size<2>(typename decltype(mma)::AtomShape_MNK{}) == _0{});  // BLK_K / MMA_K

  extern __shared__ __align__(1024) unsigned char smem[];
  if (cg::sm90::smem_addr(smem) % 1024 != 0) __trap();    // the swizzle atoms' alignment
  static_assert(Config::k_bytes == 128 || Config::k_bytes == 64, "a k-tile: 128 or 64 bytes");
  T* smemA = reinterpret_cast<T*>(smem);
  TB* smemB = reinterpret_cast<TB*>(smemA + cosize_v<typename OpA::Layout>);
  Ring* ring = reinterpret_cast<Ring*>(smemB + cosize_v<typename OpB::Layout>);
  static_assert(sizeof(T) * (cosize_v<typename OpA::Layout> + cosize_v<typename OpB::Layout>) + sizeof(Ring)
                <= Config::dyn_smem, "more dynamic smem than the registry gives it (dyn_smem)");

  // the scheduler walks units of kCluster tiles along m (one per CTA of a cluster, the same
  // n block: they share its B tiles); a CTA whose tile lies past M still loads its part of
  // B and computes zeros that it does not store
  // (a batch: its problems one after the other, sm90_tile_scheduler.cuh BatchedTiles)
  const auto tiles = cg::sm90::walk(
      cg::sm90::GroupedTiles{cg::ceil_div(cg::ceil_div(M, kBlkM), kCluster), cg::ceil_div(N, kBlkN),
                             cute::max(Config::group_m / kCluster, 1)},
      batch);
  using Tiles = cute::remove_cvref_t<decltype(tiles)>;
  static_assert(cute::is_same_v<Tiles, cg::sm90::GroupedTiles> || Config::promote == 0,
                "a batch: on the unpromoted consumers (consume, consume_rs)");
  const int rank = kCluster == 1 ? 0 : int(cg::sm90::cluster_rank());
  const int stride = gridDim.x / kCluster;
  // k-tiles a tile takes: whole windows when promoted (consume_promoted counts its windows
  // from K itself, as each role finds its first tile: sm90_tile_scheduler.cuh says why)
  constexpr int kWindow = Config::promote > 0 ? Config::promote : 1;
  using Parts = cg::sm90::SplitParts<Config::split_parts>;  // the k-tiles of A and B it reads
  const int k_read = Parts::k_read(K);
  const int k_tiles = cg::ceil_div(cg::ceil_div(k_read, kBlkK), kWindow) * kWindow;
  const int warp_group = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    cg::sm90::tma_prefetch_map(tma_a);
    cg::sm90::tma_prefetch_map(tma_b);
    ring->init(4 * kMmaGroups * kCluster);                 // every consumer warp reading a stage
  }
  if constexpr (kCluster == 1) __syncthreads();
  else cg::sm90::cluster_sync();                           // the peers' barriers too

  if (warp_group == 0) {
    // ---- producer ----------------------------------------------------------------
    cg::sm90::setmaxnreg_dec<Config::producer_regs>();   // all 4 warps; one thread works
    if (threadIdx.x == 0) {
      // compensated sums: the stream starts one k-tile early and runs a window long
      // (consume_promoted); TMA zero-fills the k-tiles outside K: they add zeros
      const int k_first = Config::promote > 1 ? -1 : 0;
      const int k_last = Config::promote > 1 ? k_tiles + kWindow - 1 : k_tiles;
      // a stage's bytes: its A, and all of its B (this CTA's part and the peers' multicasts)
      constexpr uint32_t kTxBytes = OpA::kStageBytes + OpB::kStageBytes;
      constexpr uint16_t kPeers = (1u << kCluster) - 1;
      State st;
      for (int item = cg::sm90::first_unit<kCluster>(); item < split.items(tiles.count());
           item += stride) {
        int m_unit, n_blk;
        tiles.coord(split.unit(item), m_unit, n_blk);
        const int m_blk = m_unit * kCluster + rank;
        typename Tiles::Operand la, lb;                    // the problem's, in A's and B's maps
        tiles.operands(split.unit(item), la, lb);
        // a cut unit's piece: its own k-tiles [k0, k1); the stream around them zero-filled
        const int run = split.run(item, k_tiles / kWindow) * kWindow;
        const int k0 = split.piece(item) * run, k1 = min(k0 + run, k_tiles);
        for (int t = k0 + k_first; t < k0 + run + k_last - k_tiles; ++t, st.advance()) {
          const int k_tile = t < k0 || t >= k1 ? -1 : t;  // outside: out of bounds, zeros
          uint64_t* full = ring->acquire(st, kTxBytes);
          OpA::load(tma_a, full, smemA + st.index * OpA::kStageElems, m_blk * kBlkM,
                    Parts::a(k_tile), la);
          if constexpr (kCluster == 1)
            OpB::load(tma_b, full, smemB + st.index * OpB::kStageElems, n_blk * kBlkN,
                      Parts::b(k_tile), lb);
          else
            OpB::load_part(tma_b, full, smemB + st.index * OpB::kStageElems, n_blk * kBlkN,
                           Parts::b(k_tile), rank, kPeers, lb);
        }
      }
    }
    __syncwarp();
  } else if constexpr (Config::pingpong) {
    cg::sm90::consume_pingpong<Config, TC, kCluster, OpA, OpB>(mma, ring, smemA, smemB, tiles,
                                                               stride, rank, k_tiles, C, sCm,
                                                               sCn, M, N, alpha, beta, epi);
  } else if constexpr (kRegA) {
    cg::sm90::consume_rs<Config, TC, kCluster, OpA, OpB>(mma, ring, smemA, smemB, tiles, split,
                                                         ws, stride, rank, k_tiles, C, sCm,
                                                         sCn, M, N, alpha, beta, epi);
  } else if constexpr (sizeof(T) == 1) {
    // the same atom over parts of at most 128 columns, computed one after the other
    TiledMMA part = make_tiled_mma(
        GMMA::ss_op_selector<T, TB, float, Shape<_64, Int<(kBlkN > 128 ? kBlkN / 2 : kBlkN)>, Int<kBlkK>>,
                             MajA, MajB>(),
        Layout<Shape<Int<Config::consumers>, _1, _1>>{});
    cg::sm90::consume_scaled<Config, TC, kCluster, OpA, OpB>(mma, part, ring, smemA, smemB, tiles,
                                                             split, ws, stride, rank, k_tiles, C,
                                                             sCm, sCn, M, N, alpha, beta, epi);
  } else if constexpr (Config::promote > 0) {
    // the same atom over half the tile's columns: the k-tiles consume_promoted splits
    TiledMMA half = make_tiled_mma(
        GMMA::ss_op_selector<T, TB, float, Shape<_64, Int<kBlkN / 2>, Int<kBlkK>>, MajA, MajB>(),
        Layout<Shape<Int<Config::consumers>, _1, _1>>{});
    cg::sm90::consume_promoted<Config, TC, kCluster, OpA, OpB>(
        mma, half, ring, smemA, smemB, tiles, split, ws, stride, rank, k_read, C, sCm, sCn, M, N,
        alpha, beta, epi);
  } else {
    consume<TC, kCluster, OpA, OpB>(mma, ring, smemA, smemB, tiles, split, ws, stride, rank,
                                    k_tiles, C, sCm, sCn, M, N, alpha, beta, epi);
  }
  if constexpr (kCluster > 1) cg::sm90::cluster_sync();    // no peer writes our smem any more
}

// Entry points: cute_wgmma_ws_<precision>_<out>_a<major>_b<major> (as cute_wgmma's), whose
// walks are never cut; with CG_WS_TAIL_SPLIT (1 where Config::tail_split > 0: both written by
// WgmmaWsConfig.cpp, a macro because it picks definitions) each
// also has a twin NAME_cut that takes the tail's workspace and cut after the maps
// (streamk.tail_split_plan). Twins, not one entry: with the cut's code compiled in, walks it
// does not cut ran 3-10 % slower (docs/design/cute_wgmma_ws.md#tail-code). With
// CG_WS_BATCHED, a twin NAME_b walks a batch of problems (never cut).
// (a fused epilogue's EpiArgs last, epilogue.cuh)
#define CG_WS_PARAMS(TAB, TC) (CG_GEMM_PARAMS_T(TAB, TC), CG_TMA_PARAMS, CG_EPI_PARAMS)
#define CG_WS_CUT_PARAMS(TAB, TC) \
  (CG_GEMM_PARAMS_T(TAB, TC), CG_TMA_PARAMS, float* __restrict__ ws, int split_dp, int split_pieces, \
   CG_EPI_PARAMS)
// A batched twin NAME_b (CG_WS_BATCHED, WgmmaWsConfig.batched): the problems and their batch
// strides after the maps (A's and B's are in its 4-D maps too; their zeros say broadcast)
#define CG_WS_BATCH_PARAMS(TAB, TC) \
  (CG_GEMM_PARAMS_T(TAB, TC), CG_TMA_PARAMS, int problems, int Lin, long long bA0, long long bA1, \
   long long bB0, long long bB1, long long bC0, long long bC1, CG_EPI_PARAMS)
#define CG_WS_WHOLE nullptr, cg::sm90::TailSplit{0, 1}
#define CG_WS_CUT ws, cg::sm90::TailSplit{split_dp, split_pieces}
#define CG_WS_ONE cg::sm90::NoBatch{}
#define CG_WS_BATCH cg::sm90::Batch{problems, Lin, bA0, bA1, bB0, bB1, bC0, bC1}
#define CG_WS_BATCH_SWAPPED cg::sm90::Batch{problems, Lin, bB0, bB1, bA0, bA1, bC0, bC1}
#define CG_WGMMA_WS_AS(NAME, PARAMS, SPLIT, BATCH, TAB, TC, MA, MB)                         \
  CG_ENTRY(NAME, __launch_bounds__(kThreads, 1)                                            \
                 __cluster_dims__(Config::cluster_m, 1, 1), PARAMS, {                      \
    gemm_wgmma_ws<TAB, TC, GMMA::Major::MA, GMMA::Major::MB>(                               \
        M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, &tma_a, &tma_b, SPLIT, \
        CG_EPILOGUE{&epi}, BATCH);                                                          \
  })
// A k-major, B n-major (tf32): C^T = B^T A^T, B^T the m-major register operand, A^T k-major.
#define CG_WGMMA_WS_SWAPPED_AS(NAME, PARAMS, SPLIT, BATCH, TAB, TC)                         \
  CG_ENTRY(NAME, __launch_bounds__(kThreads, 1)                                            \
                 __cluster_dims__(Config::cluster_m, 1, 1), PARAMS, {                      \
    gemm_wgmma_ws<TAB, TC, GMMA::Major::MN, GMMA::Major::K>(                                \
        N, M, K, alpha, B, sBn, sBk, A, sAk, sAm, beta, C, sCn, sCm, &tma_b, &tma_a, SPLIT, \
        cg::transposed(CG_EPILOGUE{&epi}), BATCH);  /* its tile's rows are C's columns */    \
  })
#if CG_WS_TAIL_SPLIT
#define CG_WS_CUT_TWIN(NAME, TAB, TC, MA, MB) \
  CG_WGMMA_WS_AS(NAME##_cut, CG_WS_CUT_PARAMS(TAB, TC), CG_WS_CUT, CG_WS_ONE, TAB, TC, MA, MB)
#define CG_WS_CUT_TWIN_SWAPPED(NAME, TAB, TC) \
  CG_WGMMA_WS_SWAPPED_AS(NAME##_cut, CG_WS_CUT_PARAMS(TAB, TC), CG_WS_CUT, CG_WS_ONE, TAB, TC)
#else
#define CG_WS_CUT_TWIN(NAME, TAB, TC, MA, MB)
#define CG_WS_CUT_TWIN_SWAPPED(NAME, TAB, TC)
#endif
#if CG_WS_BATCHED
#define CG_WS_BATCH_TWIN(NAME, TAB, TC, MA, MB) \
  CG_WGMMA_WS_AS(NAME##_b, CG_WS_BATCH_PARAMS(TAB, TC), CG_WS_WHOLE, CG_WS_BATCH, TAB, TC, MA, MB)
#define CG_WS_BATCH_TWIN_SWAPPED(NAME, TAB, TC)                                             \
  CG_WGMMA_WS_SWAPPED_AS(NAME##_b, CG_WS_BATCH_PARAMS(TAB, TC), CG_WS_WHOLE,               \
                         CG_WS_BATCH_SWAPPED, TAB, TC)
#else
#define CG_WS_BATCH_TWIN(NAME, TAB, TC, MA, MB)
#define CG_WS_BATCH_TWIN_SWAPPED(NAME, TAB, TC)
#endif
#define CG_WGMMA_WS_ENTRY(NAME, TAB, TC, MA, MB)                                            \
  CG_WGMMA_WS_AS(NAME, CG_WS_PARAMS(TAB, TC), CG_WS_WHOLE, CG_WS_ONE, TAB, TC, MA, MB)      \
  CG_WS_CUT_TWIN(NAME, TAB, TC, MA, MB)                                                     \
  CG_WS_BATCH_TWIN(NAME, TAB, TC, MA, MB)
#define CG_WGMMA_WS_SWAPPED_ENTRY(NAME, TAB, TC)                                            \
  CG_WGMMA_WS_SWAPPED_AS(NAME, CG_WS_PARAMS(TAB, TC), CG_WS_WHOLE, CG_WS_ONE, TAB, TC)      \
  CG_WS_CUT_TWIN_SWAPPED(NAME, TAB, TC)                                                     \
  CG_WS_BATCH_TWIN_SWAPPED(NAME, TAB, TC)
#define CG_WGMMA_WS_16BIT(PREC, TAB, OUT, TC)                                               \
  CG_WGMMA_WS_ENTRY(cute_wgmma_ws_##PREC##_##OUT##_ak_bk, TAB, TC, K, K)                    \
  CG_WGMMA_WS_ENTRY(cute_wgmma_ws_##PREC##_##OUT##_ak_bn, TAB, TC, K, MN)                   \
  CG_WGMMA_WS_ENTRY(cute_wgmma_ws_##PREC##_##OUT##_am_bk, TAB, TC, MN, K)                   \
  CG_WGMMA_WS_ENTRY(cute_wgmma_ws_##PREC##_##OUT##_am_bn, TAB, TC, MN, MN)

// 8-bit operands: k-major only (wgmma reads them so), every result type
#define CG_WGMMA_WS_8BIT(PREC, TAB)                                                         \
  CG_WGMMA_WS_ENTRY(cute_wgmma_ws_##PREC##_f32_ak_bk, TAB, float, K, K)                     \
  CG_WGMMA_WS_ENTRY(cute_wgmma_ws_##PREC##_bf16_ak_bk, TAB, cute::bfloat16_t, K, K)         \
  CG_WGMMA_WS_ENTRY(cute_wgmma_ws_##PREC##_fp16_ak_bk, TAB, cute::half_t, K, K)

// CG_WS_ONLY (WgmmaWsConfig.only, written by its cpp()): a configuration compiled for one
// k-major entry alone, 1 the tf32 one, 2 the fp16 one with float out (cute_3xtf32's GEMMs
// over its split operands); 3 the 8-bit entries (a promoted configuration); 4 the SS entries
// (16-bit, tf32 k-major: a ping-pong configuration); 0 every other entry
#if CG_WS_ONLY == 3
CG_WGMMA_WS_8BIT(fp8_e4m3, cute::float_e4m3_t)
CG_WGMMA_WS_8BIT(fp8_e5m2, cute::float_e5m2_t)
using E4m3E5m2 = cg::Mixed<cute::float_e4m3_t, cute::float_e5m2_t>;     // (one macro argument)
using E5m2E4m3 = cg::Mixed<cute::float_e5m2_t, cute::float_e4m3_t>;
CG_WGMMA_WS_8BIT(fp8_e4m3_e5m2, E4m3E5m2)
CG_WGMMA_WS_8BIT(fp8_e5m2_e4m3, E5m2E4m3)
#elif CG_WS_ONLY == 2
CG_WGMMA_WS_ENTRY(cute_wgmma_ws_fp16_f32_ak_bk, cute::half_t, float, K, K)
#elif CG_WS_ONLY == 0 || CG_WS_ONLY == 4
CG_WGMMA_WS_16BIT(bf16, cute::bfloat16_t, f32, float)
CG_WGMMA_WS_16BIT(bf16, cute::bfloat16_t, bf16, cute::bfloat16_t)
CG_WGMMA_WS_16BIT(fp16, cute::half_t, f32, float)
CG_WGMMA_WS_16BIT(fp16, cute::half_t, fp16, cute::half_t)
#endif
#if CG_WS_ONLY == 0
CG_WGMMA_WS_SWAPPED_ENTRY(cute_wgmma_ws_tf32_f32_ak_bn, float, float)
CG_WGMMA_WS_ENTRY(cute_wgmma_ws_tf32_f32_am_bk, float, float, MN, K)
#endif
#if CG_WS_ONLY == 0 || CG_WS_ONLY == 1 || CG_WS_ONLY == 4
CG_WGMMA_WS_ENTRY(cute_wgmma_ws_tf32_f32_ak_bk, float, float, K, K)
#endif
