// cute_3xtf32's split operands as the promoted GEMM reads them (Config::split_parts = 2).
//
// The split (kernels/cute/c7_3xtf32.cu) stores each chunk of 32 k of A and B (k-major) as
// two k-tiles, [small | big]. The GEMM reads three k-tiles per chunk:
//
//   k-tile 3c + 0: A small(c) · B big(c)     the cross terms first, while the tensor-core
//   k-tile 3c + 1: A big(c)   · B small(c)   sum of the window is still small ...
//   k-tile 3c + 2: A big(c)   · B big(c)     ... big·big last, then the promotion
//
// so big is loaded twice rather than stored twice: the split writes a third fewer bytes, and
// A' and B' take a third less scratch. K of the entry is the stored extent (2 k-tiles a chunk).
// A and B are stored alike, so the GEMM of C^T (the operands swapped) reads the same three
// products, its two cross terms in the other order.
#pragma once

namespace cg::sm90 {

template <int kParts>
struct SplitParts {                      // 0: the operands as they are
  static_assert(kParts == 0, "split_parts: 0, or 2 (cute_3xtf32's [small | big] chunks)");
  __device__ static constexpr int k_read(int k) { return k; }
  __device__ static int a(int k_tile) { return k_tile; }
  __device__ static int b(int k_tile) { return k_tile; }
};

template <>
struct SplitParts<2> {
  // the k the GEMM runs over: three k-tiles for every two stored
  __device__ static constexpr int k_read(int k) { return k / 2 * 3; }
  // k-tile t read -> the stored k-tile it loads (negative: outside K, zero-filled by TMA)
  __device__ static int a(int t) { return t < 0 ? t : 2 * (t / 3) + (t % 3 != 0); }
  __device__ static int b(int t) { return t < 0 ? t : 2 * (t / 3) + (t % 3 != 1); }
};

}  // namespace cg::sm90
