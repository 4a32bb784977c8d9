// The register epilogue of the Hopper stages: C = alpha * acc + beta * C straight from the
// wgmma accumulators, predicated on the M and N residues, any strides of C.
//
// A wgmma accumulator fragment holds, per thread, pairs of neighbouring columns in rows r and
// r + 8 of each 64-row atom (CuTe's partition_C of the TiledMMA says which); a row-major
// 16-bit C with beta == 0 and 16-byte aligned rows takes them in 16-byte stores after a quad
// transpose (with beta != 0 on interior tiles, C read in the same blocks), another row-major
// C each pair in one store; a column-major 16-bit C in 16-byte column blocks through shared
// memory (sm90_store_cols.cuh); any other strides one value at a time. With beta == 0 C is not
// read (BLAS: an uninitialised or NaN-poisoned C stays out of the result). The float result
// is converted to TC by round-to-nearest (cute::bfloat16_t / half_t constructors). A fused
// epilogue e (epilogue.cuh; the default: none) scales each accumulator and finishes each
// value at its (m, n) of C before it is converted.
#pragma once
#include <cute_gemm/cute.cuh>
#include <cute_gemm/epilogue.cuh>
#include <cute_gemm/quad_blocks.cuh>
#include <cute_gemm/read_ahead.cuh>
#include <cute_gemm/sm90_store_cols.cuh>

namespace cg::sm90 {

// A fused epilogue's bias for tile (m0, n0), staged once a tile in shared memory by the
// kThreads threads storing it: the tile's rows' part, then its columns' (Epilogue's bias_row,
// bias_col: zeros along the axis the vector does not run, and past M or N, so that an edge
// tile's values may be finished before their stores' predicates). The stores then read a
// pair's bias with one shared load at an offset a compile knows, where a global load per pair
// put its latency and a branch on the store path (docs/design/epilogue.md#the-bias-loads).
// Named barrier 2 + slot, before (the previous tile's readers are done) and after the writes;
// kSlots: the warpgroups that store tiles of their own at once (a ping-pong kernel's two).
template <int TileM, int TileN, int kThreads, int kSlots, class E>
__device__ __forceinline__ const float* stage_bias(E const& e, int thread, int slot, int m0,
                                                   int n0, int rows, int cols) {
  __shared__ __align__(16) float staged[kSlots][TileM + TileN];
  asm volatile("bar.sync %0, %1;" :: "r"(2 + slot), "n"(kThreads) : "memory");
  for (int x = thread; x < TileM + TileN; x += kThreads)
    staged[slot][x] = x < TileM ? (x < rows ? e.bias_row(m0 + x) : 0.0f)
                                : (x - TileM < cols ? e.bias_col(n0 + x - TileM) : 0.0f);
  asm volatile("bar.sync %0, %1;" :: "r"(2 + slot), "n"(kThreads) : "memory");
  return staged[slot];
}

// Accumulators i and i + 1 of atom (mm, nn) (neighbouring columns of one row), scaled and
// finished by the fused epilogue e, as a 16-bit pair. staged: stage_bias's values
// (E::kStagedBias), else null.
template <int TileM, class TC, class Acc, class Crd, class E>
__device__ __forceinline__ uint32_t finished_pair(Acc const& acc, Crd const& tCcC, int i, int mm,
                                                  int nn, int m0, int n0, float alpha,
                                                  E const& e, const float* staged) {
  using namespace cute;
  if constexpr (E::kNone) {
    return pack_pair<TC>(alpha * acc(i, mm, nn), alpha * acc(i + 1, mm, nn));
  } else if constexpr (E::kStagedBias) {
    const int r = get<0>(tCcC(i, mm, nn)), c = get<1>(tCcC(i, mm, nn));
    const float br = staged[r];
    const float2 bc = *reinterpret_cast<const float2*>(staged + TileM + c);   // (c even)
    const float2 v = e.template finish2_plus<TC>(alpha * acc(i, mm, nn), alpha * acc(i + 1, mm, nn),
                                                 make_float2(br + bc.x, br + bc.y));
    return pack_pair<TC>(v.x, v.y);
  } else {
    const int r = m0 + get<0>(tCcC(i, mm, nn)), c = n0 + get<1>(tCcC(i, mm, nn));
    const float2 v = e.template finish2<TC>(e.element_scale(alpha, r, c) * acc(i, mm, nn),
                                            e.element_scale(alpha, r, c + 1) * acc(i + 1, mm, nn), r, c);
    return pack_pair<TC>(v.x, v.y);
  }
}

// Row-major 16-bit C with beta == 0, in 16-byte stores. In a wgmma accumulator atom, value
// 4j + 2h + {0,1} of lane q of a quad lies in row r0 + 8h, columns 8j + 2q + {0,1}: the quad
// holds 8 whole columns of a row per j, 4 bytes per lane. A quad transpose over j = 4J..4J+3
// gives lane q all 8 columns of j = 4J + q: one 16-byte store instead of four 4-byte ones, and
// a warp's store covers 64 contiguous bytes of each of 8 rows (whole sectors, a quarter of the
// store instructions: docs/design/cute_wgmma_ws.md).
// staged: stage_bias's values (E::kStagedBias), else null.
template <int TileM, int TileN, class TC, class Thr, class Acc, class E>
__device__ __forceinline__ void store_rows_16B(Thr const& thr, Acc const& acc, TC* C,
                                               long long sCm, int m0, int n0, int rows,
                                               int cols, bool interior, float alpha, E const& e,
                                               const float* staged) {
  using namespace cute;
  static_assert(sizeof(TC) == 2, "16-bit results: 8 columns in 16 bytes");
  constexpr int kVals = decltype(size<0>(acc))::value;   // an atom's (2,2,N/8) values
  static_assert(kVals % 16 == 0, "an atom of whole groups of 4 column blocks of 8");
  Tensor gR = make_tensor(make_gmem_ptr(C + m0 * sCm + n0),
                          make_shape(Int<TileM>{}, Int<TileN>{}), make_stride(sCm, _1{}));  // (BLK_M,BLK_N)
  Tensor cC = make_identity_tensor(make_shape(Int<TileM>{}, Int<TileN>{}));                  // (BLK_M,BLK_N) -> (m,n)
  Tensor tCgR = thr.partition_C(gR);                                                         // (MMA,MMA_M,MMA_N)
  Tensor tCcC = thr.partition_C(cC);                                                         // (MMA,MMA_M,MMA_N)
  const int q = threadIdx.x & 3;
  CUTE_UNROLL
  for (int mm = 0; mm < size<1>(acc); ++mm) {
    CUTE_UNROLL
    for (int nn = 0; nn < size<2>(acc); ++nn) {
      CUTE_UNROLL
      for (int g = 0; g < kVals / 16; ++g) {       // column blocks 4g .. 4g + 3 of the atom
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {              // rows r0 and r0 + 8
          const int i0 = 16 * g + 2 * h;           // value (0, h, 4g): lane q's column 32g + 2q
          uint32_t w[4];
          CUTE_UNROLL
          for (int s = 0; s < 4; ++s)
            w[s] = finished_pair<TileM, TC>(acc, tCcC, i0 + 4 * s, mm, nn, m0, n0, alpha, e, staged);
          quad_transpose(w);
          TC* p = &tCgR(i0, mm, nn) + 6 * q;       // column 32g + 8q of the same row
          if (interior) {
            store_block(p, w);
            continue;
          }
          const int r = get<0>(tCcC(i0, mm, nn)), c = get<1>(tCcC(i0, mm, nn)) + 6 * q;
          if (r >= rows || c >= cols) continue;
          if (c + 8 <= cols) {
            store_block(p, w);
            continue;
          }
          CUTE_UNROLL
          for (int e = 0; e < 8; ++e)
            if (c + e < cols) *reinterpret_cast<uint16_t*>(p + e) = uint16_t(w[e / 2] >> (16 * (e % 2)));
        }
      }
    }
  }
}

// Row-major 16-bit C with beta != 0, an interior tile, no fused epilogue: C read and written
// in store_rows_16B's 16-byte blocks, kAhead blocks loaded before their stores (one memory
// latency a chunk, where 4-byte pair loads waited one a pair). The quad transpose is its own
// inverse: applied to a loaded block it gives each lane the pairs of its own accumulators.
template <int TileM, int TileN, class TC, class Thr, class Acc>
__device__ __forceinline__ void update_rows_16B(Thr const& thr, Acc const& acc, TC* C,
                                                long long sCm, int m0, int n0, float alpha,
                                                float beta) {
  using namespace cute;
  static_assert(sizeof(TC) == 2, "16-bit results: 8 columns in 16 bytes");
  constexpr int kVals = decltype(size<0>(acc))::value;   // an atom's (2,2,N/8) values
  constexpr int kBlocks = kVals / 8, kAhead = 8;         // a lane's 16-byte blocks of an atom
  Tensor gR = make_tensor(make_gmem_ptr(C + m0 * sCm + n0),
                          make_shape(Int<TileM>{}, Int<TileN>{}), make_stride(sCm, _1{}));  // (BLK_M,BLK_N)
  Tensor tCgR = thr.partition_C(gR);                                                         // (MMA,MMA_M,MMA_N)
  const int q = threadIdx.x & 3;
  CUTE_UNROLL
  for (int mm = 0; mm < size<1>(acc); ++mm) {
    CUTE_UNROLL
    for (int nn = 0; nn < size<2>(acc); ++nn) {
      // block b = (g, h) = (b / 2, b % 2): its first value i0, lane q's 8 columns at
      // &tCgR(i0) + 6q (column 32g + 8q)
      auto at = [&](int b) { return &tCgR(16 * (b / 2) + 2 * (b % 2), mm, nn) + 6 * q; };
      read_ahead<kBlocks, kAhead>(
          [&](int b) { return *reinterpret_cast<const uint4*>(at(b)); },
          [&](int b, uint4 old) {
            const int i0 = 16 * (b / 2) + 2 * (b % 2);
            uint32_t o[4] = {old.x, old.y, old.z, old.w}, w[4];
            quad_transpose(o);
            CUTE_UNROLL
            for (int s = 0; s < 4; ++s) {
              const float2 c = unpack_pair<TC>(o[s]);
              w[s] = pack_pair<TC>(alpha * acc(i0 + 4 * s, mm, nn) + beta * c.x,
                                   alpha * acc(i0 + 4 * s + 1, mm, nn) + beta * c.y);
            }
            quad_transpose(w);
            store_block(at(b), w);
          });
    }
  }
}

// (inlined: called with the accumulators by reference, which would otherwise go to local
// memory, the wgmma's operands with them, when a fused epilogue makes it too large to inline)
// (kSlots, slot: stage_bias's, for the warpgroups that store tiles of their own at once)
template <int TileM, int TileN, int kSlots = 1, class TC, class TiledMma, class Acc,
          class E = Epilogue<>>
__device__ __forceinline__ void store_axpby(TiledMma const& mma, int thread, Acc const& acc,
                            TC* C, long long sCm, long long sCn, int M, int N, int m0, int n0,
                            float alpha, float beta, E const& e = E{}, int slot = 0) {
  using namespace cute;
  Tensor gC = make_tensor(make_gmem_ptr(C + m0 * sCm + n0 * sCn),
                          make_shape(Int<TileM>{}, Int<TileN>{}), make_stride(sCm, sCn));  // (TileM,TileN)
  Tensor cC = make_identity_tensor(make_shape(Int<TileM>{}, Int<TileN>{}));                // (TileM,TileN) -> (m,n)
  auto thr = mma.get_slice(thread);
  Tensor tCgC = thr.partition_C(gC);                                                       // (MMA,MMA_M,MMA_N)
  Tensor tCcC = thr.partition_C(cC);                                                       // (MMA,MMA_M,MMA_N)
  CUTE_STATIC_ASSERT_V(size(tCgC) == size(acc));                                          // one value each
  const int rows = M - m0, cols = N - n0;
  const bool interior = rows >= TileM && cols >= TileN;
  alpha = e.tile_scale(alpha);                             // (per element: e.element_scale)
  // Row-major 16-bit C, rows 16-byte aligned: 16-byte blocks (above), read too where beta != 0
  // on an interior tile. store_rows_16B finishes every value of a block before its stores'
  // predicates: a fused edge tile takes it only where that reads no vector past M or N
  // (E::kEdgeSafe: no per-element scales, the bias staged with zeros there); else the pair
  // stores below, which test first.
  if constexpr (sizeof(TC) == 2 && E::kNone) {
    if (beta != 0.0f && interior && sCn == 1 && sCm % 8 == 0
        && reinterpret_cast<unsigned long long>(C) % 16 == 0) {
      update_rows_16B<TileM, TileN>(thr, acc, C, sCm, m0, n0, alpha, beta);
      return;
    }
  }
  if constexpr (sizeof(TC) == 2) {
    if (beta == 0.0f && sCn == 1 && sCm % 8 == 0 && reinterpret_cast<unsigned long long>(C) % 16 == 0
        && (E::kNone || E::kEdgeSafe || interior)) {
      const float* staged = nullptr;
      if constexpr (E::kStagedBias)
        staged = stage_bias<TileM, TileN, decltype(size(mma))::value, kSlots>(e, thread, slot, m0,
                                                                               n0, rows, cols);
      if constexpr (E::kNone) {
        store_rows_16B<TileM, TileN>(thr, acc, C, sCm, m0, n0, rows, cols, interior, alpha, e, staged);
      } else if (interior) {     // (a constant here: the fused interior tile's tests fold away)
        store_rows_16B<TileM, TileN>(thr, acc, C, sCm, m0, n0, rows, cols, true, alpha, e, staged);
      } else {
        store_rows_16B<TileM, TileN>(thr, acc, C, sCm, m0, n0, rows, cols, false, alpha, e, staged);
      }
      return;
    }
  }
  // Column-major 16-bit C, columns 16-byte aligned (a transposed walk's): 8 rows of a column
  // a store through stmatrix .trans (sm90_store_cols.cuh): with beta == 0 where a fused
  // epilogue may finish values past M and N (not per-element scales: beside a batched twin's
  // accumulators those spilled), interior tiles of an unfused epilogue with beta != 0.
#if defined(CUTE_ARCH_STSM_SM90_ENABLED)
  if constexpr (sizeof(TC) == 2 && decltype(size<0>(acc))::value % 8 == 0
                && (E::kNone || E::kEdgeSafe)) {
    constexpr int kWarps = decltype(size(mma))::value / 32;
    const int warp = slot * kWarps + thread / 32;
    if (sCm == 1 && sCn % 8 == 0 && reinterpret_cast<unsigned long long>(C) % 16 == 0) {
      if (beta == 0.0f) {
        const float* staged = nullptr;
        if constexpr (E::kStagedBias)
          staged = stage_bias<TileM, TileN, kWarps * 32, kSlots>(e, thread, slot, m0, n0, rows, cols);
        store_cols_16B<kSlots * kWarps>(acc, tCcC, C, sCn, m0, n0, rows, cols, interior, warp,
            [&](int i, int mm, int nn) {
              return finished_pair<TileM, TC>(acc, tCcC, i, mm, nn, m0, n0, alpha, e, staged);
            });
        return;
      }
      if constexpr (E::kNone) {
        if (interior) {
          update_cols_16B<kSlots * kWarps>(acc, tCcC, C, sCn, m0, n0, warp,
              [&](int i, int mm, int nn, uint32_t old) {
                const float2 c = unpack_pair<TC>(old);
                return pack_pair<TC>(alpha * acc(i, mm, nn) + beta * c.x, alpha * acc(i + 1, mm, nn) + beta * c.y);
              });
          return;
        }
      }
    }
  }
#endif
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
    auto old_at = [&](int i) { return *reinterpret_cast<const Pair*>(&tCgR(i)); };
    // values i, i + 1 with `old`, C's pair there (read only where beta != 0)
    auto put = [&](int i, Pair old) {
      TC* p = &tCgR(i);
      const int r = m0 + get<0>(tCcC(i)), c = n0 + get<1>(tCcC(i));   // (folds away without e)
      float v0 = e.element_scale(alpha, r, c) * acc(i), v1 = e.element_scale(alpha, r, c + 1) * acc(i + 1);
      if (beta != 0.0f) {
        v0 += beta * float(old.x);
        v1 += beta * float(old.y);
      }
      const float2 v = e.template finish2<TC>(v0, v1, r, c);
      *reinterpret_cast<Pair*>(p) = Pair{TC(v.x), TC(v.y)};
    };
    if (interior) {
      if constexpr (E::kNone) {
        if (beta != 0.0f) {
          // C's pairs read ahead of their stores (read_ahead.cuh: 64 memory latencies a
          // thread in a 128x256 tile, 8)
          read_ahead<decltype(size(acc))::value / 2, 8>([&](int j) { return old_at(2 * j); },
                                                       [&](int j, Pair old) { put(2 * j, old); });
          return;
        }
      }
      CUTE_UNROLL
      for (int i = 0; i < size(acc); i += 2) put(i, beta != 0.0f ? old_at(i) : Pair{});
      return;
    }
    CUTE_UNROLL
    for (int i = 0; i < size(acc); i += 2) {
      const int r = get<0>(tCcC(i)), c = get<1>(tCcC(i));
      if (r >= rows || c >= cols) continue;
      if (c + 1 < cols) {
        put(i, beta != 0.0f ? old_at(i) : Pair{});
      } else {
        TC* p = &tCgR(i);
        const float a = e.element_scale(alpha, m0 + r, n0 + c);
        *p = TC(e.template finish<TC>(beta == 0.0f ? a * acc(i) : a * acc(i) + beta * float(*p), m0 + r, n0 + c));
      }
    }
    return;
  }
  if (beta == 0.0f) {
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i) {
      const int r = get<0>(tCcC(i)), c = get<1>(tCcC(i));
      if (r < rows && c < cols)
        tCgC(i) = TC(e.template finish<TC>(e.element_scale(alpha, m0 + r, n0 + c) * acc(i), m0 + r, n0 + c));
    }
  } else {
    CUTE_UNROLL
    for (int i = 0; i < size(acc); ++i) {
      const int r = get<0>(tCcC(i)), c = get<1>(tCcC(i));
      if (r < rows && c < cols)
        tCgC(i) = TC(e.template finish<TC>(e.element_scale(alpha, m0 + r, n0 + c) * acc(i) + beta * float(tCgC(i)),
                              m0 + r, n0 + c));
    }
  }
}

}  // namespace cg::sm90
