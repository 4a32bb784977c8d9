// The register epilogue of the Hopper stages: C = alpha * acc + beta * C straight from the
// wgmma accumulators, predicated on the M and N residues, any strides of C.
//
// A wgmma accumulator fragment holds, per thread, pairs of neighbouring columns in rows r and
// r + 8 of each 64-row atom (CuTe's partition_C of the TiledMMA says which); a row-major C
// takes each pair in one store, any other strides one value at a time. With beta == 0 C is not read (BLAS: an
// uninitialised or NaN-poisoned C stays out of the result). The float result is converted to
// TC by round-to-nearest (cute::bfloat16_t / half_t constructors).
#pragma once
#include <cute/tensor.hpp>

namespace cg::sm90 {

template <int TileM, int TileN, class TC, class TiledMma, class Acc>
__device__ void store_axpby(TiledMma const& mma, int thread, Acc const& acc,
                            TC* C, long long sCm, long long sCn, int M, int N, int m0, int n0,
                            float alpha, float beta) {
  using namespace cute;
  Tensor gC = make_tensor(make_gmem_ptr(C + m0 * sCm + n0 * sCn),
                          make_shape(Int<TileM>{}, Int<TileN>{}), make_stride(sCm, sCn));  // (TileM,TileN)
  Tensor cC = make_identity_tensor(make_shape(Int<TileM>{}, Int<TileN>{}));                // (TileM,TileN) -> (m,n)
  auto thr = mma.get_slice(thread);
  Tensor tCgC = thr.partition_C(gC);                                                       // (MMA,MMA_M,MMA_N)
  Tensor tCcC = thr.partition_C(cC);                                                       // (MMA,MMA_M,MMA_N)
  CUTE_STATIC_ASSERT_V(size(tCgC) == size(acc));                                          // one value each
  const int rows = M - m0, cols = N - n0;
  // Row-major C (unit column stride, even row stride, base aligned to a pair): each thread's
  // values 2j, 2j+1 are neighbouring columns of one row (the wgmma accumulator layout), so
  // they go out as one 8-byte (float) or 4-byte (16-bit) store; half the store instructions.
  // The static unit stride makes every column offset a compile-time constant (a thread's
  // rows are few: their row offsets are computed once), and interior tiles skip predicates.
  if (sCn == 1 && sCm % 2 == 0 && reinterpret_cast<unsigned long long>(C) % (2 * sizeof(TC)) == 0) {
    struct alignas(2 * sizeof(TC)) Pair { TC x, y; };
    Tensor gR = make_tensor(make_gmem_ptr(C + m0 * sCm + n0),
                            make_shape(Int<TileM>{}, Int<TileN>{}), make_stride(sCm, _1{}));  // (BLK_M,BLK_N)
    Tensor tCgR = thr.partition_C(gR);                                                     // (MMA,MMA_M,MMA_N)
    auto put = [&](int i) {
      TC* p = &tCgR(i);
      float v0 = alpha * acc(i), v1 = alpha * acc(i + 1);
      if (beta != 0.0f) {
        const Pair old = *reinterpret_cast<const Pair*>(p);
        v0 += beta * float(old.x);
        v1 += beta * float(old.y);
      }
      *reinterpret_cast<Pair*>(p) = Pair{TC(v0), TC(v1)};
    };
    if (rows >= TileM && cols >= TileN) {
      CUTE_UNROLL
      for (int i = 0; i < size(acc); i += 2) put(i);
      return;
    }
    CUTE_UNROLL
    for (int i = 0; i < size(acc); i += 2) {
      const int r = get<0>(tCcC(i)), c = get<1>(tCcC(i));
      if (r >= rows || c >= cols) continue;
      if (c + 1 < cols) {
        put(i);
      } else {
        TC* p = &tCgR(i);
        *p = TC(beta == 0.0f ? alpha * acc(i) : alpha * acc(i) + beta * float(*p));
      }
    }
    return;
  }
  if (beta == 0.0f) {
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i)
      if (get<0>(tCcC(i)) < rows && get<1>(tCcC(i)) < cols) tCgC(i) = TC(alpha * acc(i));
  } else {
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i)
      if (get<0>(tCcC(i)) < rows && get<1>(tCcC(i)) < cols)
        tCgC(i) = TC(alpha * acc(i) + beta * float(tCgC(i)));
  }
}

}  // namespace cg::sm90
