// The activations a fused epilogue applies (epilogue.cuh), in float, as PyTorch defines them:
//   relu       max(v, 0)                                   (torch.relu)
//   gelu_erf   v/2 (1 + erf(v / sqrt 2))                   (torch.nn.functional.gelu)
//   gelu_tanh  v/2 (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))   (gelu(approximate="tanh"))
//   silu       v * sigmoid(v) = v / (1 + exp(-v))          (torch.nn.functional.silu)
// In float with the accurate libdevice erff, tanhf and expf (a few ulp); kFast (a 16-bit
// result) takes tanh.approx for gelu_tanh (error about 2^-11), below the result's own
// rounding, where tanhf cost a fused tile's epilogue more than its store
// (docs/design/epilogue.md#the-activations-cost).
// A NaN stays a NaN (relu's comparison fails for it and returns it).
#pragma once

namespace cg {

enum class Act : int { none = 0, relu = 1, gelu_erf = 2, gelu_tanh = 3, silu = 4 };

__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <Act kAct, bool kFast = false>
__device__ __forceinline__ float activate(float v) {
  if constexpr (kAct == Act::relu) {
    return v < 0.0f ? 0.0f : v;
  } else if constexpr (kAct == Act::gelu_erf) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  } else if constexpr (kAct == Act::gelu_tanh) {
    const float u = 0.79788456080286536f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + (kFast ? tanh_approx(u) : tanhf(u)));
  } else if constexpr (kAct == Act::silu) {
    return v / (1.0f + expf(-v));
  } else {
    return v;
  }
}

}  // namespace cg
