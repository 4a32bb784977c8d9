// Device helpers for the handwritten ladder: guarded 4-wide loads, 4-wide epilogue
// stores and the L2-friendly block order. Row-major operands only (the unit stride is
// the fastest one); leading dimensions come in as element strides.
//
// Naming: VEC = the operands are 16-byte aligned (pointers and leading strides are
// multiples of 4 floats), so one float4 access may replace four scalar ones. GUARD =
// the tile touches an edge of the matrix, so every element is checked against the
// bounds and out-of-range elements read as 0 (they then add nothing to a dot product).
#pragma once
#include <cute_gemm/common.cuh>
#include <cute_gemm/epilogue.cuh>

namespace cg {

// Four consecutive floats starting at p (p[0..3] along the contiguous dimension).
// row_ok: this row/column lies inside the matrix; left: valid elements from p on
// (<= 0 means none). Never dereferences an element outside the matrix.
template <bool VEC, bool GUARD>
__device__ __forceinline__ float4 load4(const float* p, bool row_ok, int left) {
  if (!GUARD) {
    if (VEC) return *reinterpret_cast<const float4*>(p);
    return make_float4(p[0], p[1], p[2], p[3]);
  }
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (!row_ok) return v;
  if (VEC && left >= 4) return *reinterpret_cast<const float4*>(p);
  if (left > 0) v.x = p[0];
  if (left > 1) v.y = p[1];
  if (left > 2) v.z = p[2];
  if (left > 3) v.w = p[3];
  return v;
}

// C[p..p+3] = alpha * acc + beta * C[p..p+3]; C is read only when beta != 0. GUARD:
// only the first `left` elements exist (row_ok false: none). Through a fused epilogue e
// (epilogue.cuh; the default: none), p being element (m, n) of C.
template <bool VEC, bool GUARD, class E = Epilogue<>>
__device__ __forceinline__ void store4_axpby(float alpha, float4 acc, float beta, float* p,
                                             bool row_ok, int left, E const& e = E{},
                                             int m = 0, int n = 0) {
  if (GUARD && (!row_ok || left <= 0)) return;
  if constexpr (!E::kNone) {        // each element's own scale, then alpha' = 1 (exact)
    // (columns past the result's clamped to its last: a scale is never read past N)
    const int last = GUARD ? left - 1 : 3;
    acc = make_float4(e.scale(alpha, m, n) * acc.x, e.scale(alpha, m, n + min(1, last)) * acc.y,
                      e.scale(alpha, m, n + min(2, last)) * acc.z,
                      e.scale(alpha, m, n + min(3, last)) * acc.w);
    alpha = 1.0f;
  }
  if (VEC && (!GUARD || left >= 4)) {
    float4 c = make_float4(0.f, 0.f, 0.f, 0.f);
    if (beta != 0.0f) c = *reinterpret_cast<const float4*>(p);   // one 128-bit read, only if needed
    float4 r;
    r.x = e.finish(axpby(alpha, acc.x, beta, &c.x), m, n);
    r.y = e.finish(axpby(alpha, acc.y, beta, &c.y), m, n + 1);
    r.z = e.finish(axpby(alpha, acc.z, beta, &c.z), m, n + 2);
    r.w = e.finish(axpby(alpha, acc.w, beta, &c.w), m, n + 3);
    *reinterpret_cast<float4*>(p) = r;
    return;
  }
  if (!GUARD || left > 0) store_axpby(alpha, acc.x, beta, p + 0, e, m, n);
  if (!GUARD || left > 1) store_axpby(alpha, acc.y, beta, p + 1, e, m, n + 1);
  if (!GUARD || left > 2) store_axpby(alpha, acc.z, beta, p + 2, e, m, n + 2);
  if (!GUARD || left > 3) store_axpby(alpha, acc.w, beta, p + 3, e, m, n + 3);
}

// Block order for L2 reuse. The grid is (tiles along N, tiles along M); launched in
// blockIdx order, consecutive blocks sweep a whole row of C tiles, so the blocks
// resident together need all of B. Grouping GROUP_M tile rows and walking them
// column by column makes the resident blocks share a few A strips and a few B strips.
// Valid for any grid (the last group may have fewer rows).
template <int kGroupM>   // (names here avoid the -D tile macros)
__device__ __forceinline__ void grouped_tile(int& tile_m, int& tile_n) {
  const int tiles_n = gridDim.x, tiles_m = gridDim.y;
  const int pid = blockIdx.y * tiles_n + blockIdx.x;
  const int per_group = kGroupM * tiles_n;
  const int first_m = (pid / per_group) * kGroupM;
  const int rows = min(tiles_m - first_m, kGroupM);
  tile_m = first_m + (pid % per_group) % rows;
  tile_n = (pid % per_group) / rows;
}

// Lane -> (lm, ln) on an LM x LN lane grid (powers of two, LM * LN = 32) in Z (Morton)
// order: lane bits alternate n, m, n, m, ... (the leftover bits go to the longer side),
// so every 8 consecutive lanes form a 2 x 4 patch. An 8-lane phase of a 128-bit shared
// load then touches 2 words of the A fragment row and 4 of the B row — broadcasts,
// never two words on one bank — the SIMT warp arrangement CUTLASS uses
// (RowMajorInterleaved<2>). The loop unrolls to a few shifts and masks.
template <int kLM, int kLN>
__device__ __forceinline__ void zorder_lane(int lane, int& lm, int& ln) {
  static_assert(kLM * kLN == 32 && (kLM & (kLM - 1)) == 0, "a warp as a power-of-two grid");
  lm = 0;
  ln = 0;
  int nm = 0, nn = 0;
#pragma unroll
  for (int b = 0; b < 5; ++b) {
    const int bit = (lane >> b) & 1;
    if ((1 << nn) < kLN && ((b & 1) == 0 || (1 << nm) >= kLM)) ln |= bit << nn++;
    else lm |= bit << nm++;
  }
}

}  // namespace cg
