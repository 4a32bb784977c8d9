// The register epilogue of an RS wgmma tile whose accumulator rows are permuted: fragment row f
// holds row RowMap(f) of the tile (sm90_register_operand.cuh says why), C = alpha * acc +
// beta * C predicated on the M and N residues, any strides of C.
//
// In a wgmma accumulator atom (CLayout_64xN) values i and i + 1 are neighbouring columns and
// values i and i + 2 (i % 4 < 2) are rows f and f + 8, which RowMap makes neighbouring rows.
// So whichever of C's strides is 1, a thread's values go out in pairs: column pairs of a
// row-major C, row pairs of a column-major one (the transposed problem's C^T of a row-major C,
// which is how a row-major B reaches the register operand). With beta == 0 C is not read.
// A fused epilogue e (epilogue.cuh; the default: none) as in sm90_epilogue.cuh.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute_gemm/epilogue.cuh>

namespace cg::sm90 {

template <int TileM, int TileN, class RowMap, class TC, class TiledMma, class Acc,
          class E = Epilogue<>>   // (inlined, as sm90_epilogue.cuh's store_axpby)
__device__ __forceinline__ void store_axpby_rows(TiledMma const& mma, int thread, Acc const& acc, TC* C,
                                 long long sCm, long long sCn, int M, int N, int m0, int n0,
                                 float alpha, float beta, E const& e = E{}) {
  using namespace cute;
  static_assert(size(RowMap{}) == TileM, "a permutation of the tile's rows");
  static_assert(size<0>(RowMap{}) == 8 && size<1>(RowMap{}) == 2 && stride<1>(RowMap{}) == 1,
                "rows f and f + 8 of an atom are neighbours");
  auto thr = mma.get_slice(thread);
  // (fragment row, column) -> C's element, and -> its (row, column) in the tile
  auto by_rows = [&](auto row_stride, auto col_stride) {
    return make_tensor(make_gmem_ptr(C + m0 * sCm + n0 * sCn),
                       make_layout(composition(make_layout(Int<TileM>{}, row_stride), RowMap{}),
                                   make_layout(Int<TileN>{}, col_stride)));    // (TileM,TileN)
  };
  Tensor cC = make_identity_tensor(make_shape(Int<TileM>{}, Int<TileN>{}));
  Tensor cR = make_tensor(cC.data(), make_layout(composition(layout<0>(cC), RowMap{}),
                                                 layout<1>(cC)));               // (TileM,TileN) -> (m,n)
  Tensor tCcR = thr.partition_C(cR);                                            // (MMA,MMA_M,MMA_N)
  CUTE_STATIC_ASSERT_V(size(tCcR) == size(acc));                               // one value each
  const int rows = M - m0, cols = N - n0;
  const bool interior = rows >= TileM && cols >= TileN;
  const auto base = reinterpret_cast<unsigned long long>(C);
  struct alignas(2 * sizeof(TC)) Pair { TC x, y; };
  alpha = e.tile_scale(alpha);                             // (per element: e.element_scale)
  // values (r, c) and its neighbour, (r + 1, c) if kDown else (r, c + 1), each alpha * acc
  // scaled and finished by the epilogue as a pair: the vectors' loads of a pair as one where
  // they can (finish2; per-element pinned loads spilled the fused tf32 entries' registers)
  auto put = [&](auto down, TC* p, float a0, float a1, int r, int c) {
    constexpr bool kDown = decltype(down)::value;
    const int r1 = m0 + r + kDown, c1 = n0 + c + !kDown;
    float v0 = e.element_scale(alpha, m0 + r, n0 + c) * a0, v1 = e.element_scale(alpha, r1, c1) * a1;
    if (beta != 0.0f) {
      const Pair old = *reinterpret_cast<const Pair*>(p);
      v0 += beta * float(old.x);
      v1 += beta * float(old.y);
    }
    const float2 v = kDown ? e.template finish2_down<TC>(v0, v1, m0 + r, n0 + c)
                           : e.template finish2<TC>(v0, v1, m0 + r, n0 + c);
    *reinterpret_cast<Pair*>(p) = Pair{TC(v.x), TC(v.y)};
  };
  auto put1 = [&](TC* p, float a, int r, int c) {
    const float v = e.element_scale(alpha, m0 + r, n0 + c) * a;
    *p = TC(e.template finish<TC>(beta == 0.0f ? v : v + beta * float(*p), m0 + r, n0 + c));
  };

  if (sCn == 1 && sCm % 2 == 0 && base % (2 * sizeof(TC)) == 0) {
    // row-major: values i, i + 1 are columns c, c + 1 of one row
    Tensor tCgR = thr.partition_C(by_rows(sCm, _1{}));                          // (MMA,MMA_M,MMA_N)
    CUTE_UNROLL
    for (int i = 0; i < size(acc); i += 2) {
      const int r = get<0>(tCcR(i)), c = get<1>(tCcR(i));
      if (!interior && (r >= rows || c >= cols)) continue;
      if (interior || c + 1 < cols) put(cute::false_type{}, &tCgR(i), acc(i), acc(i + 1), r, c);
      else put1(&tCgR(i), acc(i), r, c);
    }
    return;
  }
  if (sCm == 1 && sCn % 2 == 0 && base % (2 * sizeof(TC)) == 0) {
    // column-major: values i, i + 2 are rows r, r + 1 of one column
    Tensor tCgR = thr.partition_C(by_rows(_1{}, sCn));                          // (MMA,MMA_M,MMA_N)
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i) {
      if (i % 4 >= 2) continue;
      const int r = get<0>(tCcR(i)), c = get<1>(tCcR(i));
      if (!interior && (r >= rows || c >= cols)) continue;
      if (interior || r + 1 < rows) put(cute::true_type{}, &tCgR(i), acc(i), acc(i + 2), r, c);
      else put1(&tCgR(i), acc(i), r, c);
    }
    return;
  }
  Tensor tCgC = thr.partition_C(by_rows(sCm, sCn));                             // (MMA,MMA_M,MMA_N)
  CUTE_UNROLL
  for (int i = 0; i < size(acc); ++i)
    if (get<0>(tCcR(i)) < rows && get<1>(tCcR(i)) < cols)
      put1(&tCgC(i), acc(i), get<0>(tCcR(i)), get<1>(tCcR(i)));
}

}  // namespace cg::sm90
