// The activations a fused epilogue applies (epilogue.cuh), in float, as PyTorch defines them:
//   relu       max(v, 0)                                   (torch.relu)
//   gelu_erf   v/2 (1 + erf(v / sqrt 2))                   (torch.nn.functional.gelu)
//   gelu_tanh  v/2 (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))   (gelu(approximate="tanh"))
//   silu       v * sigmoid(v) = v / (1 + exp(-v))          (torch.nn.functional.silu)
// With the accurate libdevice erff, tanhf and expf (a few ulp), not the .approx instructions:
// the epilogue runs once per element of C, where a GEMM's time is not.
// A NaN stays a NaN (relu's comparison fails for it and returns it).
#pragma once

namespace cg {

enum class Act : int { none = 0, relu = 1, gelu_erf = 2, gelu_tanh = 3, silu = 4 };

template <Act kAct>
__device__ __forceinline__ float activate(float v) {
  if constexpr (kAct == Act::relu) {
    return v < 0.0f ? 0.0f : v;
  } else if constexpr (kAct == Act::gelu_erf) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  } else if constexpr (kAct == Act::gelu_tanh) {
    return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  } else if constexpr (kAct == Act::silu) {
    return v / (1.0f + expf(-v));
  } else {
    return v;
  }
}

}  // namespace cg
