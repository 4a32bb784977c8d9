// The consumer warpgroups of the warp-specialized kernel when the accumulator is promoted
// (WgmmaWsConfig.promote > 0, sm_90a): fp32-accurate sums from tf32 wgmma, cute_3xtf32's GEMM.
//
// wgmma adds into its float accumulator truncating: a bias of up to an ulp of the running
// sum per k-step, which grows with K. So the k-tiles are cut into windows of `promote`; at
// each window's end the warpgroup waits for its wgmmas (warpgroup_wait<0>) and moves the
// accumulator into a float32 register sum by CUDA-core adds, compensated: (sum, acc) =
// Fast2Sum(sum, acc) leaves the add's rounding error in acc, and the next window's wgmmas
// add on top of it, so the long sum of windows (K / 32 of them for cute_3xtf32) loses
// nothing either. docs/tuning/cute_3xtf32.md#the-accumulation.
#pragma once
#include <cute/tensor.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute_gemm/sm90_pipeline.cuh>
#include <cute_gemm/sm90_setmaxnreg.cuh>
#include <cute_gemm/sm90_epilogue.cuh>
#include <cute_gemm/sm90_ss_step.cuh>

namespace cg::sm90 {

// sum + acc into sum (rounded to nearest), its rounding error into acc (exact when |sum| >=
// |acc|), in PTX so that nothing reassociates the three adds
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
  static_assert(size(Acc{}) % kGroup == 0, "whole groups");
  CUTE_UNROLL
  for (int g = 0; g < size(acc) / kGroup; ++g) {
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

// WsConfig: the kernel's struct Config (ladder_cute.WgmmaWsConfig); OpA, OpB: OperandTiles.
template <class WsConfig, class TC, int kCluster, class OpA, class OpB, class Mma, class Ring,
          class Tiles>
__device__ __forceinline__ void consume_promote(Mma const& mma, Ring* ring,
                                                typename OpA::Elem* smemA,
                                                typename OpB::Elem* smemB, Tiles const& tiles,
                                                int first, int stride, int rank, int k_tiles,
                                                TC* C, long long sCm, long long sCn, int M,
                                                int N, float alpha, float beta) {
  using namespace cute;
  constexpr int kBlkM = WsConfig::blk_m, kBlkN = WsConfig::blk_n, kStages = WsConfig::stages;
  constexpr int kPromote = WsConfig::promote;
  using State = RingState<kStages>;
  // Preconditions
  static_assert(kPromote > 0, "promotion: k-tiles per window");
  setmaxnreg_inc<WsConfig::consumer_regs>();
  const int thread = threadIdx.x - 128;                    // within the consumer warpgroups
  const bool releaser = threadIdx.x % 32 == 0;             // one arrival per warp
  Tensor sA = make_tensor(make_smem_ptr(smemA), typename OpA::Layout{});   // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smemB), typename OpB::Layout{});   // (BLK_N,BLK_K,PIPE)
  ThrMMA thr_mma = mma.get_slice(thread);
  Tensor tCrA = thr_mma.make_fragment_A(thr_mma.partition_A(sA));         // (MMA,MMA_M,MMA_K,PIPE)
  Tensor tCrB = thr_mma.make_fragment_B(thr_mma.partition_B(sB));         // (MMA,MMA_N,MMA_K,PIPE)
  Tensor acc = partition_fragment_C(thr_mma, Shape<Int<kBlkM>, Int<kBlkN>>{});  // (MMA,MMA_M,MMA_N)
  Tensor sum = make_fragment_like(acc);                                   // (MMA,MMA_M,MMA_N)

  // every batch retired, acc final: into sum, compensated
  const unsigned zero = unsigned(M) >> 31;                 // 0 (M >= 1), opaque to the compiler
  auto promote = [&](int& prev) {
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
    prev = -1;
    promote_compensated<16>(sum, acc, zero);
    warpgroup_fence_operand(acc);
  };

  State st;
  for (int u = first; u < tiles.count(); u += stride) {
    int m_unit, n_blk;
    tiles.coord(u, m_unit, n_blk);
    const int m_blk = m_unit * kCluster + rank;
    clear(acc);
    clear(sum);
    int prev = -1;                                         // the stage of the batch in flight
    for (int k_tile = 0; k_tile < k_tiles; ++k_tile, st.advance()) {
      ss_k_tile<kCluster>(mma, ring, st, tCrA, tCrB, acc, prev, releaser);
      if ((k_tile + 1) % kPromote == 0 && k_tile + 1 < k_tiles) promote(prev);
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);
    if (prev >= 0 && releaser) ring->template release<kCluster>(prev);
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i) sum(i) += acc(i);   // the last window, and the carries
    store_axpby<kBlkM, kBlkN>(mma, thread, sum, C, sCm, sCn, M, N, m_blk * kBlkM, n_blk * kBlkN,
                              alpha, beta);
  }
}

}  // namespace cg::sm90
