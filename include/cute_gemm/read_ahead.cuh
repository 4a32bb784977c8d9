// Reading C ahead of its stores. C is read and written through the same pointer, so the
// compiler cannot move a load of C above a store of C: a load after a store waits for it, one
// memory latency an item. Items loaded kAhead at a time, then each stored: one a chunk.
#pragma once
#include <cute_gemm/cute.cuh>

namespace cg {

// For i in 0 .. kCount - 1: old_i = load(i), kAhead of them before put(i, old_i) of each.
template <int kCount, int kAhead, class Load, class Put>
__device__ __forceinline__ void read_ahead(Load const& load, Put const& put) {
  using T = decltype(load(0));
  CUTE_UNROLL
  for (int i0 = 0; i0 < kCount; i0 += kAhead) {
    T old[kAhead];
    CUTE_UNROLL
    for (int j = 0; j < kAhead && i0 + j < kCount; ++j) old[j] = load(i0 + j);
    CUTE_UNROLL
    for (int j = 0; j < kAhead && i0 + j < kCount; ++j) put(i0 + j, old[j]);
  }
}

}  // namespace cg
