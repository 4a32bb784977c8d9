// Column-major 16-bit C (unit row stride: what a transposed walk's C^T is) in 16-byte
// stores. In a wgmma accumulator atom, for each 8-column block j and row half h, a warp's 32
// lanes hold an 8 x 8 matrix of 16-bit pairs in ldmatrix's fragment layout (lane t: row t/4,
// columns 2(t%4) and +1). stmatrix .trans writes four such matrices to shared memory as
// their columns: each 16 bytes is 8 consecutive rows of one column of C, which one lane then
// stores with one instruction, where the values alone went out as 2-byte stores, 4 sectors
// half-written by each. ldmatrix .trans is its inverse: C's blocks read back into each lane's
// own pairs (beta != 0). A 512-byte buffer per warp: only the warp's lanes meet in it.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/copy_sm90.hpp>
#include <cute_gemm/quad_blocks.cuh>
#include <cute_gemm/read_ahead.cuh>

namespace cg::sm90 {

// The 4 matrices of a warp, each 8 rows of 16 bytes; kWarps: the storing warps of a CTA.
template <int kWarps>
__device__ __forceinline__ cute::uint128_t* cols_buffer(int warp) {
  __shared__ cute::uint128_t buf[kWarps][32];
  return buf[warp];
}

// Column-block groups of an accumulator atom: blocks 2g and 2g + 1, row halves 0 and 1, the
// 4 matrices of one stmatrix; matrix k holds value pair group_value(g, k) of each lane
template <class Acc>
constexpr int groups_of() {
  constexpr int kVals = decltype(cute::size<0>(Acc{}))::value;   // an atom's (2,2,N/8) values
  static_assert(kVals % 8 == 0, "an atom of whole pairs of column blocks of 8");
  return kVals / 8;
}
__device__ __forceinline__ constexpr int group_value(int g, int k) {
  return 8 * g + 4 * (k / 2) + 2 * (k % 2);
}

// f(mm, nn) for each atom of the accumulators, unrolled
template <class Acc, class F>
__device__ __forceinline__ void for_each_atom(Acc const& acc, F const& f) {
  CUTE_UNROLL
  for (int mm = 0; mm < cute::size<1>(acc); ++mm) {
    CUTE_UNROLL
    for (int nn = 0; nn < cute::size<2>(acc); ++nn) f(mm, nn);
  }
}

// Where lane `lane` stores group g of atom (mm, nn) after the transpose: matrix k = lane / 8
// is block 2g + k / 2, rows 8 (k % 2) ..+7 of it; its column lane % 8 of that block. (row,
// col): that column's first row in the tile, and the column.
template <class Crd>
__device__ __forceinline__ void cols_target(Crd const& tCcC, int g, int mm, int nn, int lane,
                                            int& row, int& col) {
  using namespace cute;
  const int k = lane / 8;
  // lane's own value 0 of the atom lies in row base + lane/4 and column base + 2(lane%4)
  const int row0 = get<0>(tCcC(0, mm, nn)) - lane / 4, q2 = 2 * (lane % 4);
  const int col_lo = get<1>(tCcC(8 * g, mm, nn)) - q2, col_hi = get<1>(tCcC(8 * g + 4, mm, nn)) - q2;
  row = row0 + 8 * (k % 2);
  col = (k < 2 ? col_lo : col_hi) + lane % 8;
}

// The 4 packed pairs w (matrix k: value pair group_value(g, k)) through the buffer to C:
// 8 rows of one column a lane, at p; whole: all 8, else the first `in_range` (none if <= 0).
template <class TC>
__device__ __forceinline__ void cols_out(cute::uint128_t* buf, uint32_t const (&w)[4], TC* p,
                                         int lane, bool whole, int in_range) {
  __syncwarp();                                            // the last group's reads are done
  cute::SM90_U16x8_STSM_T::copy(w[0], w[1], w[2], w[3], buf[lane]);
  __syncwarp();
  const uint4 v = reinterpret_cast<const uint4*>(buf)[lane];
  const uint32_t o[4] = {v.x, v.y, v.z, v.w};
  if (whole) {
    store_block(p, o);
    return;
  }
  CUTE_UNROLL
  for (int e = 0; e < 8; ++e)
    if (e < in_range) *reinterpret_cast<uint16_t*>(p + e) = uint16_t(o[e / 2] >> (16 * (e % 2)));
}

// C with unit row stride, sCn % 8 == 0 and C 16-byte aligned: the tile's values as
// pair(i, mm, nn) packs accumulators i, i + 1 (neighbouring columns, finished), stored
// column by column, predicated on rows and cols unless interior. warp: the storing warp's
// index among kWarps.
template <int kWarps, class TC, class Acc, class Crd, class Pair>
__device__ __forceinline__ void store_cols_16B(Acc const& acc, Crd const& tCcC, TC* C,
                                               long long sCn, int m0, int n0, int rows,
                                               int cols, bool interior, int warp,
                                               Pair const& pair) {
  static_assert(sizeof(TC) == 2, "16-bit results: 8 rows in 16 bytes");
  cute::uint128_t* buf = cols_buffer<kWarps>(warp);
  const int lane = threadIdx.x % 32;
  for_each_atom(acc, [&](int mm, int nn) {
    CUTE_UNROLL
    for (int g = 0; g < groups_of<Acc>(); ++g) {
      uint32_t w[4];
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) w[k] = pair(group_value(g, k), mm, nn);
      int r, c;
      cols_target(tCcC, g, mm, nn, lane, r, c);
      const bool in = interior || c < cols;
      cols_out(buf, w, C + (m0 + r) + (n0 + c) * sCn, lane, interior || (in && r + 8 <= rows),
               in ? rows - r : 0);
    }
  });
}

// The same with beta != 0 on an interior tile: each lane's 16 bytes of C loaded (kAhead
// groups ahead of their stores), passed back through the buffer into the lanes' own pairs
// (ldmatrix .trans), then update(i, mm, nn, old) packs value pair i with C's pair `old`.
template <int kWarps, class TC, class Acc, class Crd, class Update>
__device__ __forceinline__ void update_cols_16B(Acc const& acc, Crd const& tCcC, TC* C,
                                                long long sCn, int m0, int n0, int warp,
                                                Update const& update) {
  static_assert(sizeof(TC) == 2, "16-bit results: 8 rows in 16 bytes");
  constexpr int kAhead = 4;
  cute::uint128_t* buf = cols_buffer<kWarps>(warp);
  const int lane = threadIdx.x % 32;
  for_each_atom(acc, [&](int mm, int nn) {
    auto at = [&](int g) {
      int r, c;
      cols_target(tCcC, g, mm, nn, lane, r, c);
      return C + (m0 + r) + (n0 + c) * sCn;
    };
    read_ahead<groups_of<Acc>(), kAhead>(
        [&](int g) { return *reinterpret_cast<const uint4*>(at(g)); },
        [&](int g, uint4 old) {
          __syncwarp();                                    // the last group's reads are done
          reinterpret_cast<uint4*>(buf)[lane] = old;
          __syncwarp();
          uint32_t o[4], w[4];
          cute::SM75_U16x8_LDSM_T::copy(buf[lane], o[0], o[1], o[2], o[3]);
          CUTE_UNROLL
          for (int k = 0; k < 4; ++k) w[k] = update(group_value(g, k), mm, nn, o[k]);
          cols_out(buf, w, at(g), lane, true, 8);
        });
  });
}

}  // namespace cg::sm90
