// The promoted accumulator of the warp-specialized kernel's consumers (WgmmaWsConfig.promote
// > 0, sm_90a; kernels/cute/c6_wgmma_ws.cu): fp32-accurate sums from tf32 wgmma, cute_3xtf32's
// GEMM.
//
// wgmma adds into its float accumulator truncating: a bias of up to an ulp of the running
// sum per k-step, which grows with K. So the k-tiles are cut into windows of `promote`; at
// each window's end the accumulator moves into a float32 register sum by CUDA-core adds,
// compensated: (sum, acc) = Fast2Sum(sum, acc) leaves the add's rounding error in acc, and
// the next window's wgmmas add on top of it, so the long sum of windows (K / 32 of them for
// cute_3xtf32) loses nothing either. docs/design/cute_3xtf32.md#the-accumulation.
//
// Half of the adds overlap the tensor cores: a window's first k-tile goes out as two wgmma
// batches of BLK_N / 2 columns (left, right); the left half of the accumulator is promoted
// after the last window's end retired, the right half while this left batch runs. The other
// k-tiles go out whole. Each element sees its adds in the order an unsplit promotion gives,
// the last window promoted too (before the epilogue's sum + acc).
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute/arch/mma_sm90.hpp>
#include <cute_gemm/sm90_pipeline.cuh>
#include <cute_gemm/sm90_setmaxnreg.cuh>
#include <cute_gemm/sm90_epilogue.cuh>
#include <cute_gemm/sm90_tile_scheduler.cuh>
#include <cute_gemm/sm90_tail_split.cuh>

namespace cg::sm90 {

// sum + acc into sum (rounded to nearest), its rounding error into acc (exact when |sum| >=
// |acc|), in PTX so that nothing reassociates the three adds. Where the sum is ±Inf the
// error is NaN: an Inf does not survive a promotion (cute_3xtf32's pre-pass flags Inf inputs
// and run() takes the fp32 fallback; a clamp here makes ptxas serialize the wgmmas).
__device__ __forceinline__ void fast_two_sum(float& sum, float& acc) {
  asm("{\n\t.reg .f32 t;\n\tadd.rn.f32 t, %0, %1;\n\tsub.rn.f32 %0, %0, t;\n\t"
      "add.rn.f32 %1, %0, %1;\n\tmov.f32 %0, t;\n\t}"
      : "+f"(sum), "+f"(acc));
}

// fast_two_sum over every element of acc and sum, kGroup elements at a time: each group's
// sums take a dependency (an OR with `zero`, 0 at run time, opaque to the compiler) on the
// group before, so the compiler cannot interleave all of them, which needs a register per
// element in flight (spills beside 2 x 96 accumulators)
template <int kGroup, class Sum, class Acc>
__device__ __forceinline__ void promote_compensated(Sum& sum, Acc& acc, unsigned zero) {
  using namespace cute;
  constexpr int kSize = decltype(size(acc))::value;
  static_assert(kSize % kGroup == 0, "whole groups");
  CUTE_UNROLL
  for (int g = 0; g < kSize / kGroup; ++g) {
    if (g > 0) {
      const unsigned z = __float_as_uint(acc(kGroup * g - 1)) & zero;
      CUTE_UNROLL
      for (int i = kGroup * g; i < kGroup * (g + 1); ++i)
        sum(i) = __uint_as_float(__float_as_uint(sum(i)) | z);
    }
    CUTE_UNROLL
    for (int i = kGroup * g; i < kGroup * (g + 1); ++i) fast_two_sum(sum(i), acc(i));
  }
}

// The consumer warpgroups with promoted sums. mma: the TiledMMA of the whole BLK_M x BLK_N
// tile (its accumulator layout is the epilogue's); half: the same atom over BLK_N / 2 columns,
// whose accumulator is the first (or the second) half of the whole one's registers (the
// wgmma accumulator's columns go 8 per 4 registers, in order). split: the walk's items
// (sm90_tail_split.cuh), a cut one's partials in ws.
template <class WsConfig, class TC, int kCluster, class OpA, class OpB, class Mma, class Half,
          class Ring, class Tiles, class E = Epilogue<>>
__device__ __forceinline__ void consume_promoted(Mma const& mma, Half const& half, Ring* ring,
                                                 typename OpA::Elem* smemA,
                                                 typename OpB::Elem* smemB, Tiles const& tiles,
                                                 TailSplit split, float* ws, int stride, int rank, int K,
                                                 TC* C, long long sCm, long long sCn, int M,
                                                 int N, float alpha, float beta, E e = E{}) {
  using namespace cute;
  constexpr int kBlkM = WsConfig::blk_m, kBlkN = WsConfig::blk_n, kStages = WsConfig::stages;
  constexpr int kPromote = WsConfig::promote;
  constexpr int kHalfN = kBlkN / 2;
  using State = RingState<kStages>;
  setmaxnreg_inc<WsConfig::consumer_regs>();
  const int thread = threadIdx.x - 128;                    // within the consumer warpgroups
  const bool releaser = threadIdx.x % 32 == 0;             // one arrival per warp
  Tensor sA = make_tensor(make_smem_ptr(smemA), typename OpA::Layout{});   // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), typename OpB::Layout{});   // (BLK_N,BLK_K,PIPE)
  constexpr int kBlkK = decltype(size<1>(sB))::value;
  Tensor sBh = flat_divide(sB, Shape<Int<kHalfN>, Int<kBlkK>>{});         // (BLK_N/2,BLK_K,2,1,PIPE)
  ThrMMA thr_mma = mma.get_slice(thread);
  ThrMMA thr_half = half.get_slice(thread);
  // (the half atom splits N only: its A descriptors are the whole one's, tCrA; a second set
  // costs the registers that keep ptxas from serializing the wgmmas)
  Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));         // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));         // (MMA,MMA_N,MMA_K,PIPE)
  Tensor tHrB0 = thr_half.make_fragment_B(thr_half.partition_B(sBh(_, _, 0, 0, _)));  // (MMA,MMA_N,MMA_K,PIPE)
  Tensor tHrB1 = thr_half.make_fragment_B(thr_half.partition_B(sBh(_, _, 1, 0, _)));  // (MMA,MMA_N,MMA_K,PIPE)
  Tensor acc = partition_fragment_C(thr_mma, Shape<Int<kBlkM>, Int<kBlkN>>{});  // (MMA,MMA_M,MMA_N)
  Tensor sum = make_fragment_like(acc);                                     // (MMA,MMA_M,MMA_N)
  using HalfAcc = decltype(partition_fragment_C(thr_half, Shape<Int<kBlkM>, Int<kHalfN>>{}));
  using HalfLayout = typename HalfAcc::layout_type;
  constexpr int kHalfSize = decltype(size(HalfAcc{}))::value;
  Tensor acc0 = make_tensor(acc.data(), HalfLayout{});                      // (MMA,MMA_M,MMA_N) of half
  Tensor acc1 = make_tensor(acc.data() + kHalfSize, HalfLayout{});
  Tensor sum0 = make_tensor(sum.data(), HalfLayout{});
  Tensor sum1 = make_tensor(sum.data() + kHalfSize, HalfLayout{});

  // Preconditions
  static_assert(kPromote >= 2, "a window's start and end: two k-tiles");
  static_assert(!E::kBlocks, "block scales: 8-bit operands' (sm90_consumer_scaled.cuh)");
  static_assert(kHalfN % 8 == 0, "a wgmma's N: a multiple of 8 (and of the 8-row swizzle atom)");
  CUTE_STATIC_ASSERT_V(size(acc) == Int<2 * kHalfSize>{});                 // two halves

  const unsigned zero = unsigned(M) >> 31;                 // 0 (M >= 1), opaque to the compiler
  State st;
  for (int item = first_unit<kCluster>(); item < split.items(tiles.count()); item += stride) {
    clear(acc);
    clear(sum);
    int prev = -1;                                         // the stage last read by a batch in flight
    // a whole k-tile: one batch in flight, the one before retires
    auto whole = [&] {
      ring->wait(st);
      const int s = st.index;
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      gemm(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), acc);  // acc += sA * sB
      warpgroup_commit_batch();
      warpgroup_wait<1>();                                 // k-tile - 1's batch has retired
      warpgroup_fence_operand(acc);
      if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
      prev = s;
      st.advance();
    };
    // A window's end and the next one's start. The end's k-tile goes out whole and retires
    // before its left half is promoted; the right half is promoted while the start's left
    // half runs, then the start's right half goes out. (Overlapping the left half with the
    // end's right half too makes ptxas serialize every wgmma, and so would wgmmas in
    // branches or outside this one loop: docs/design/cute_3xtf32.md#overlapped-promotion.)
    auto end_start = [&] {
      whole();                                             // the end
      warpgroup_wait<0>();
      warpgroup_fence_operand(acc);
      if (releaser) ring->template release<kCluster>(prev);
      promote_compensated<4>(sum0, acc0, zero);
      warpgroup_fence_operand(acc0);
      ring->wait(st);                                      // the start: left, then right
      const int s = st.index;
      warpgroup_arrive();
      gemm(half, tCrA(_, _, _, s), tHrB0(_, _, _, s), acc0);
      warpgroup_commit_batch();
      warpgroup_wait<1>();                                 // (nothing else in flight)
      warpgroup_fence_operand(acc1);
      promote_compensated<4>(sum1, acc1, zero);
      warpgroup_fence_operand(acc1);
      warpgroup_arrive();
      gemm(half, tCrA(_, _, _, s), tHrB1(_, _, _, s), acc1);
      warpgroup_commit_batch();
      warpgroup_wait<1>();                                 // the start's left half
      warpgroup_fence_operand(acc0);
      prev = s;
      st.advance();
    };
    // The stream the producer loads: k-tiles -1 .. windows * kPromote + kPromote - 2, those
    // outside K zero-filled by TMA, so that every window's end and the next one's start
    // share an iteration with no wgmma outside the loop: iteration w takes window w-1's end
    // (zeros for w = 0), then window w's start and middle (zeros for the last w).
    // (a cut unit's piece: its own windows, the producer's stream shifted to their start)
    const int windows = cg::ceil_div(K, kBlkK * kPromote); // the producer's k_tiles / kPromote
    for (int w = 0; w <= split.run(item, windows); ++w) {
      end_start();
      CUTE_UNROLL
      for (int j = 2; j < kPromote; ++j) whole();          // the middle
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
    if (split.cut(item)) {                                 // a piece: the last one adds them all
      if (!piece_done<128 * WsConfig::consumers, kCluster, true>(acc, sum, split, item, ws,
                                                                  thread, rank))
        continue;
    } else {
      CUTE_UNROLL
      for (int i = 0; i < size(acc); ++i) acc(i) = sum(i) + acc(i);   // the last window, and the carries
    }
    int m_unit, n_blk;                                     // (not held through the k-loop)
    tiles.coord(split.unit(item), m_unit, n_blk);
    const int m_blk = m_unit * kCluster + rank;
    store_axpby<kBlkM, kBlkN>(mma, thread, acc, C, sCm, sCn, M, N, m_blk * kBlkM, n_blk * kBlkN,
                              alpha, beta, e);
  }
}

}  // namespace cg::sm90
