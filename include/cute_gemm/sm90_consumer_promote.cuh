// The promoted accumulator of the warp-specialized kernel's consumers (WgmmaWsConfig.promote
// > 0, sm_90a; kernels/cute/c6_wgmma_ws.cu): fp32-accurate sums from tf32 wgmma, cute_3xtf32's
// GEMM.
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

}  // namespace cg::sm90
