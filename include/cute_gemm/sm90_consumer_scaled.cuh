// The consumer warpgroups of 8-bit operands (WgmmaWsConfig.only "fp8", promote 1; sm_90a,
// kernels/cute/c6_wgmma_ws.cu): every k-tile (128 k) summed by the tensor cores alone, then
// added into a float32 register sum, scaled by the k-tile's block scales (DeepGEMM's
// promotion, DeepSeek-V3 §3.3.2).
//
// Why: FP8 wgmma keeps its sum in a reduced-precision adder (about 14 bits), so its error
// would grow with K; promoted every 128 k, each window's error stays that of 128 products
// and the float32 sum of the windows loses nothing. The k-tile's first wgmma overwrites the
// accumulator (scale-d 0): writing zeros into it made ptxas serialize every wgmma. Each
// warpgroup waits for its k-tile's wgmmas before promoting; the other warpgroup's wgmmas keep
// the tensor cores busy meanwhile.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute/arch/mma_sm90.hpp>
#include <cute_gemm/sm90_pipeline.cuh>
#include <cute_gemm/sm90_setmaxnreg.cuh>
#include <cute_gemm/sm90_epilogue.cuh>
#include <cute_gemm/sm90_tile_scheduler.cuh>
#include <cute_gemm/sm90_tail_split.cuh>

namespace cg::sm90 {

// mma: the TiledMMA of the whole BLK_M x BLK_N tile (its accumulator layout is the float32
// sum's and the epilogue's); part: the same atom over a part of the tile's columns (at most
// 128: the whole tile when it is no wider), computed and promoted one part after the other,
// so a tile 256 wide needs the sum and one part's accumulator (2 x 64 + 64 registers), not
// two whole ones. A part's accumulator maps onto its stretch of the sum's registers (the
// wgmma accumulator's columns go 8 per 4 registers, in order). split: the walk's items
// (sm90_tail_split.cuh), a cut one's partial sums in ws; E: the epilogue, whose block scales
// (E::kBlocks: A's per row and k-tile, B's per k-tile and 128 columns) scale each k-tile.
template <class WsConfig, class TC, int kCluster, class OpA, class OpB, class Mma, class Part,
          class Ring, class Tiles, class E>
__device__ __forceinline__ void consume_scaled(Mma const& mma, Part const& part, Ring* ring,
                                               typename OpA::Elem* smemA,
                                               typename OpB::Elem* smemB, Tiles const& tiles,
                                               TailSplit split, float* ws, int stride, int rank,
                                               int k_tiles, TC* C, long long sCm, long long sCn,
                                               int M, int N, float alpha, float beta, E e) {
  using namespace cute;
  constexpr int kBlkM = WsConfig::blk_m, kBlkN = WsConfig::blk_n, kStages = WsConfig::stages;
  constexpr int kPartN = decltype(size<1>(typename Part::AtomShape_MNK{}))::value;
  constexpr int kParts = kBlkN / kPartN;
  using State = RingState<kStages>;
  setmaxnreg_inc<WsConfig::consumer_regs>();
  const int thread = threadIdx.x - 128;                    // within the consumer warpgroups
  const bool releaser = threadIdx.x % 32 == 0;             // one arrival per warp
  Tensor sA = make_tensor(make_smem_ptr(smemA), typename OpA::Layout{});   // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), typename OpB::Layout{});   // (BLK_N,BLK_K,PIPE)
  constexpr int kBlkK = decltype(size<1>(sB))::value;
  Tensor sBp = flat_divide(sB, Shape<Int<kPartN>, Int<kBlkK>>{});         // (PART_N,BLK_K,PARTS,1,PIPE)
  ThrMMA thr_mma = mma.get_slice(thread);
  ThrMMA thr_part = part.get_slice(thread);
  // (the part atom splits N only: its A descriptors are the whole one's)
  Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));         // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tPrB0 = thr_part.make_fragment_B(thr_part.partition_B(sBp(_, _, 0, 0, _)));  // (MMA,MMA_N,MMA_K,PIPE)
  Tensor tPrB1 = thr_part.make_fragment_B(thr_part.partition_B(sBp(_, _, kParts - 1, 0, _)));
  Tensor sum = partition_fragment_C(thr_mma, Shape<Int<kBlkM>, Int<kBlkN>>{});  // (MMA,MMA_M,MMA_N)
  Tensor acc = partition_fragment_C(thr_part, Shape<Int<kBlkM>, Int<kPartN>>{});  // (MMA,MMA_M,MMA_N)
  constexpr int kPartSize = decltype(size(acc))::value;
  Tensor sum0 = make_tensor(sum.data(), acc.layout());                     // a part's stretch of sum
  Tensor sum1 = make_tensor(sum.data() + (kParts - 1) * kPartSize, acc.layout());
  Tensor rows = thr_part.partition_C(make_identity_tensor(Shape<Int<kBlkM>, Int<kPartN>>{}));
  Part part_first = part;                                  // (scale-d 0: D = A B)
  part_first.accumulate_ = GMMA::ScaleOut::Zero;

  // Preconditions
  static_assert(sizeof(typename OpA::Elem) == 1, "8-bit operands");
  static_assert(kParts == 1 || kParts == 2, "a tile: one part, or two");
  CUTE_STATIC_ASSERT_V(size(sum) == Int<kParts * kPartSize>{});
  static_assert(!E::kBlocks || (128 % kPartN == 0 && kBlkK == 128),
                "block scales: k-tiles of 128 k, each part within one of B's 128-column blocks");

  State st;
  for (int item = first_unit<kCluster>(); item < split.items(tiles.count()); item += stride) {
    clear(sum);
    int m_unit, n_blk;
    tiles.coord(split.unit(item), m_unit, n_blk);
    const int m_blk = m_unit * kCluster + rank;
    // a cut unit's piece: its own k-tiles, from k-tile t0 (the producer's stream)
    const int run = split.run(item, k_tiles), t0 = split.piece(item) * run;
    // the block scales of k-tile t: fa0 for this thread's first row r, fa1 for r + 8 (the
    // wgmma accumulator gives each thread rows r and r + 8 of its warp's 16), fb[p] for part
    // p's columns; rows, blocks and k-tiles past the end clamped (they compute zeros)
    const int row0 = m_blk * kBlkM + get<0>(rows(0));
    const int col0 = n_blk * kBlkN;
    float fa0 = 1.0f, fa1 = 1.0f, fb[kParts];
    CUTE_UNROLL
    for (int p = 0; p < kParts; ++p) fb[p] = 1.0f;
    auto factors = [&](int t) {
      if constexpr (E::kBlocks) {
        const int g = min(t0 + t, k_tiles - 1);
        fa0 = e.block_a(min(row0, M - 1), g);
        fa1 = e.block_a(min(row0 + 8, M - 1), g);
        CUTE_UNROLL
        for (int p = 0; p < kParts; ++p) fb[p] = e.block_b(min(col0 + p * kPartN, N - 1) / 128, g);
      }
    };
    // part p of k-tile stage s: its wgmmas (the first overwrites acc), waited for; then acc
    // times f0 (row r) or f1 (row r + 8), the k-tile's block scales, added into the sum's part
    auto compute = [&](auto const& tPrB, auto& sum_p, float f0, float f1, int s, bool last) {
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      gemm(part_first, tCrA(_, _, 0, s), tPrB(_, _, 0, s), acc);
      CUTE_UNROLL
      for (int kb = 1; kb < size<2>(tCrA); ++kb) gemm(part, tCrA(_, _, kb, s), tPrB(_, _, kb, s), acc);
      warpgroup_commit_batch();
      warpgroup_wait<0>();
      warpgroup_fence_operand(acc);
      if (last && releaser) ring->template release<kCluster>(s);
      CUTE_UNROLL
      for (int i = 0; i < size(acc); ++i) {
        const int dr = get<0>(rows(i)) - get<0>(rows(0));   // 0 or 8, known when unrolled
        sum_p(i) = fmaf(dr == 0 ? f0 : f1, acc(i), sum_p(i));
      }
    };
    // k-tile t + 1's factors are loaded and multiplied while k-tile t is computed: ptxas puts
    // a product left to the next k-tile ahead of that k-tile's wgmmas, whose issue then waits
    // for the loads (docs/design/cute_wgmma_ws.md#block-scales)
    float f[kParts][2];
    auto products = [&] {
      CUTE_UNROLL
      for (int p = 0; p < kParts; ++p) f[p][0] = fa0 * fb[p], f[p][1] = fa1 * fb[p];
    };
    factors(0);
    products();
    for (int t = 0; t < run; ++t, st.advance()) {
      ring->wait(st);
      factors(t + 1);
      compute(tPrB0, sum0, f[0][0], f[0][1], st.index, kParts == 1);
      if constexpr (kParts == 2) compute(tPrB1, sum1, f[1][0], f[1][1], st.index, true);
      products();
    }
    if (m_blk * kBlkM >= M) continue;                      // a cluster's tile past M: no partial
    if (!piece_done<128 * WsConfig::consumers, kCluster, false>(sum, sum, split, item, ws, thread,
                                                                rank))
      continue;                                            // another piece adds this one's
    store_axpby<kBlkM, kBlkN>(mma, thread, sum, C, sCm, sCn, M, N, m_blk * kBlkM, n_blk * kBlkN,
                              alpha, beta, e);
  }
}

}  // namespace cg::sm90
