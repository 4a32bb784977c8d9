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
// cute::half_t, cute::bfloat16_t, an 8-bit float, or cg::Mixed<TA, TB>: A of one type, B of
// another) and C holds TC (float, or TAB itself): the launcher packs them alike (pointers
// are pointers). An entry point with TMA loads (records.TmaBoxes) takes CG_TMA_PARAMS after
// them: the tensor maps of A and B, encoded per call by the launcher.
#define CG_GEMM_PARAMS_T(TAB, TC)                                                   \
  int M, int N, int K, float alpha,                                                 \
  const cg::a_t<TAB>* __restrict__ A, long long sAm, long long sAk,                 \
  const cg::b_t<TAB>* __restrict__ B, long long sBk, long long sBn,                 \
  float beta, TC* __restrict__ C, long long sCm, long long sCn

namespace cg {
// Operands of two types (e4m3 A, e5m2 B): TAB of the kernels that compute such a pair
template <class TA, class TB> struct Mixed {};
template <class T> struct OperandTypes { using A = T; using B = T; };
template <class TA, class TB> struct OperandTypes<Mixed<TA, TB>> { using A = TA; using B = TB; };
template <class T> using a_t = typename OperandTypes<T>::A;
template <class T> using b_t = typename OperandTypes<T>::B;
}  // namespace cg

// A batch of problems (gemm() on (..., M, K) @ (..., K, N) operands): the entry points of a
// kernel the registry marks batched (Kernel.batched) that run on their own grid take this
// after CG_GEMM_PARAMS. Problem l = z0 + blockIdx.z of the launch is (l / Lin, l % Lin) in a
// batch of two modes, and each operand steps by its two batch strides (elements; 0: the
// operand is broadcast along that mode). A 2-D call is a batch of one: Lin 1, strides 0.
#define CG_BATCH_PARAMS                                                             \
  int Lin, int z0, long long bA0, long long bA1, long long bB0, long long bB1,     \
  long long bC0, long long bC1

// Moves A, B and C to this CTA's problem of the batch (the entry's first statement).
#define CG_BATCH_STEP()                                                             \
  do {                                                                              \
    const int l_ = z0 + static_cast<int>(blockIdx.z), l0_ = l_ / Lin, l1_ = l_ - l0_ * Lin; \
    A += l0_ * bA0 + l1_ * bA1;                                                     \
    B += l0_ * bB0 + l1_ * bB1;                                                     \
    C += l0_ * bC0 + l1_ * bC1;                                                     \
  } while (0)

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

// ... through a fused epilogue's finish (epilogue.cuh) on element (m, n), alpha already
// its scale there
template <class TC, class E>
__device__ __forceinline__ void store_axpby(float alpha, float acc, float beta, TC* c,
                                            E const& e, int m, int n) {
  *c = TC(e.template finish<TC>(beta == 0.0f ? alpha * acc : alpha * acc + beta * float(*c), m, n));
}

}  // namespace cg
