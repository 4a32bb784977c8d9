// Device helpers shared by every cute_gemm kernel (handwritten and CuTe).
//
// The one kernel signature. Every entry point in kernels/ is (defined through CG_ENTRY,
// entries.cuh, so that a compile can select it)
//
//   extern "C" __global__ void ENTRY(CG_GEMM_PARAMS)
//
// i.e. (M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn), computing
// C = alpha * A @ B + beta * C with A (M,K), B (K,N), C (M,N) and element strides
// (64-bit, so M * stride never overflows). The Python launcher packs exactly these
// arguments; the registry says which stride patterns (row/column major, alignment)
// each entry point accepts, and the wrapper only hands it operands that qualify.
#pragma once

#include <cute_gemm/entries.cuh>

#define CG_GEMM_PARAMS                                                              \
  int M, int N, int K, float alpha,                                                 \
  const float* __restrict__ A, long long sAm, long long sAk,                        \
  const float* __restrict__ B, long long sBk, long long sBn,                        \
  float beta, float* __restrict__ C, long long sCm, long long sCn

// The same arguments for the tensor-core kernels, whose A and B hold TAB (float for tf32,
// cute::half_t, cute::bfloat16_t) and C holds TC (float, or TAB itself): the launcher packs
// them alike (pointers are pointers). An entry point with TMA loads (records.TmaBoxes) takes
// CG_TMA_PARAMS after them: the tensor maps of A and B, encoded per call by the launcher.
#define CG_GEMM_PARAMS_T(TAB, TC)                                                   \
  int M, int N, int K, float alpha,                                                 \
  const TAB* __restrict__ A, long long sAm, long long sAk,                          \
  const TAB* __restrict__ B, long long sBk, long long sBn,                          \
  float beta, TC* __restrict__ C, long long sCm, long long sCn

#define CG_TMA_PARAMS                                                               \
  const __grid_constant__ cute::TmaDescriptor tma_a,                                \
  const __grid_constant__ cute::TmaDescriptor tma_b

namespace cg {

// The architecture being compiled for (compute capability * 10), for `if constexpr` choices
// of arch-specific code. NVRTC compiles device code only, where __CUDA_ARCH__ is defined.
#ifdef __CUDA_ARCH__
constexpr int kArch = __CUDA_ARCH__;
#else
constexpr int kArch = 0;
#endif

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// BLAS semantics: with beta == 0, C is write-only. Reading it anyway would turn an
// uninitialised (or NaN-poisoned) output into NaN * 0 = NaN.
__device__ __forceinline__ float axpby(float alpha, float acc, float beta, const float* c) {
  return beta == 0.0f ? alpha * acc : alpha * acc + beta * (*c);
}

__device__ __forceinline__ void store_axpby(float alpha, float acc, float beta, float* c) {
  *c = axpby(alpha, acc, beta, c);
}

// ... into a 16-bit C (cute::half_t, cute::bfloat16_t: converted to nearest even)
template <class TC>
__device__ __forceinline__ void store_axpby(float alpha, float acc, float beta, TC* c) {
  *c = TC(beta == 0.0f ? alpha * acc : alpha * acc + beta * float(*c));
}

}  // namespace cg
