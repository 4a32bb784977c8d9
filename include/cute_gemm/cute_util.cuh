// Helpers shared by the CuTe ladder (kernels/cute/*.cu).
//
// Operand strides. A is viewed (M,K), B is viewed (N,K) (so A and B partition alike),
// C is (M,N). An entry point fixes each operand's major mode at compile time: the unit
// stride becomes a static _1 (what lets CuTe prove a 128-bit vector is contiguous),
// the other stride stays dynamic. "any" keeps both dynamic.
//   A  k-major (row-major)    : (sAm, _1)      m-major (column-major) : (_1, sAk)
//   B  n-major (row-major)    : (_1, sBk)      k-major (column-major) : (sBn, _1)
// The macros read the CG_GEMM_PARAMS argument names.
#pragma once

#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/epilogue.cuh>

#define CG_DA_k    cute::make_stride(sAm, cute::Int<1>{})
#define CG_DA_m    cute::make_stride(cute::Int<1>{}, sAk)
#define CG_DA_any  cute::make_stride(sAm, sAk)
#define CG_DB_n    cute::make_stride(cute::Int<1>{}, sBk)
#define CG_DB_k    cute::make_stride(sBn, cute::Int<1>{})
#define CG_DB_any  cute::make_stride(sBn, sBk)

namespace cg {

// Predicated epilogue: C = alpha * acc + beta * C for every accumulator whose
// coordinate (carried by tCcC, the identity tensor partitioned exactly like tCgC) lies
// inside the (M,N) shape, through a fused epilogue E (epilogue.cuh; the default: none).
// Scalar stores: C may have any strides, of float or a 16-bit type. C is never read when
// beta == 0 (see axpby). interior: the caller knows every coordinate lies inside, and the
// stores go unchecked (a branch an element fewer).
template <class TensorAcc, class TensorC, class TensorCoord, class ShapeC, class E = Epilogue<>>
__device__ __forceinline__ void epilogue_axpby(TensorAcc const& tCrC, TensorC&& tCgC,
                                               TensorCoord const& tCcC, ShapeC const& shapeC,
                                               float alpha, float beta, E const& e = E{},
                                               bool interior = false) {
  auto put = [&](auto checked) {
    CUTE_UNROLL
    for (int i = 0; i < cute::size(tCrC); ++i)
      if (!decltype(checked)::value || cute::elem_less(tCcC(i), shapeC)) {
        if constexpr (E::kNone) {
          store_axpby(alpha, tCrC(i), beta, &tCgC(i));
        } else {
          const int m = cute::get<0>(tCcC(i)), n = cute::get<1>(tCcC(i));
          store_axpby(e.scale(alpha, m, n), tCrC(i), beta, &tCgC(i), e, m, n);
        }
      }
  };
  if (interior) put(cute::false_type{});
  else put(cute::true_type{});
}

}  // namespace cg
