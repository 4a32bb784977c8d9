// Register reallocation between the warpgroups of a warp-specialized kernel (sm_90a).
// A CTA starts with the same register budget per thread (the __launch_bounds__ share of the
// register file); setmaxnreg moves it: a warpgroup that only issues TMA loads gives most of
// its registers back to the pool (dec), the wgmma warpgroups take them (inc; it waits until the
// pool has them). Every warp of a warpgroup executes it (.sync.aligned), with counts that are
// multiples of 8 in [24, 256].
#pragma once

namespace cg::sm90 {

template <int Regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(Regs % 8 == 0 && Regs >= 24 && Regs <= 256, "setmaxnreg: 24..256, multiple of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(Regs));
}

template <int Regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(Regs % 8 == 0 && Regs >= 24 && Regs <= 256, "setmaxnreg: 24..256, multiple of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(Regs));
}

}  // namespace cg::sm90
