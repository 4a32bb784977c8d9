// The fused epilogue (gemm(..., epilogue=)): what becomes of element (i, j) of the result
// between the accumulator and the store,
//
//   D[i,j] = clamp(act(alpha * srow[i] * scol[j] * acc[i,j] + beta * C[i,j] + bias[i,j]), lo, hi)
//
// bias[i,j] = bias[i * bias_sm + j * bias_sn]: a per-column bias (a linear layer's) has
// bias_sm 0, a per-row one bias_sn 0. A kernel calls E.scale(alpha, i, j) where it
// multiplies the accumulator by alpha and E.finish(v, i, j) on the value it stores.
//
// The pieces a call uses are compiled in (the type cg::Epilogue<...>, which the source's
// prelude names as CG_EPILOGUE: registry/epilogue.py); the run-time half is EpiArgs, the
// entry's last parameter (CG_EPI_PARAMS), which the Epilogue reads where it lies: a
// __grid_constant__ parameter has an address without a copy (a copy of its 64 bytes went to
// the stack, local memory, of cute_mma_sm80's tf32 entries). The default, Epilogue<>, leaves
// the store as it was: E.scale returns alpha and E.finish its argument, and the coordinates
// fold away.
// NaN and Inf propagate: every piece keeps a NaN (the clamp and ReLU compare so that a NaN
// fails the comparison and passes through).
#pragma once

#include <cute_gemm/activations.cuh>

namespace cg {

// The epilogue's vectors and bounds, one kernel parameter. A null srow or scol is a scale
// of 1 (a call with only one of them). The host swaps rows and columns for an entry that
// computes C^T (LaunchPlan.swap).
// Element offsets are 32-bit (the host keeps every vector's within 2^31 elements): 64-bit
// index math for each element of the tile spilled v9_warptile's registers.
struct EpiArgs {
  const void* bias;
  int bias_sm, bias_sn;            // element strides of bias along i and j (0: broadcast)
  const void* srow;
  const void* scol;
  int srow_s, scol_s;
  float lo, hi;                    // the clamp's bounds
  // block scales of 8-bit operands (float32; null: none), applied where a promoted kernel
  // adds a window of 128 k into its float32 sum: A's per row and window, B's per window and
  // 128 columns
  const float* blk_a;
  const float* blk_b;
  int blk_a_sm, blk_a_sk, blk_b_sk, blk_b_sn;
};

// One element of a vector. Pinned (the default): a volatile load, neither hoisted out of a
// kernel's unrolled store loops nor merged with its neighbours, so the vector's values are not
// all held in registers at once beside the accumulators (v9_warptile, at its 128-register
// budget, spilled). Not pinned: a plain load, which the compiler batches and shares between
// the rows of a column, for the stores of a kernel with registers to spare (the sm90 ones: a
// pinned load a piece kept each bias element's latency on the store path,
// docs/design/epilogue.md#the-bias-loads).
template <class TV, bool kPinned = true>
__device__ __forceinline__ float vector_at(const void* base, int i) {
  const TV* p = static_cast<const TV*>(base) + i;
  if constexpr (sizeof(TV) == 4) {
    float v;
    if constexpr (kPinned) asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
    else asm("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
  } else {
    unsigned short h;
    if constexpr (kPinned) asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(p));
    else asm("ld.global.nc.u16 %0, [%1];" : "=h"(h) : "l"(p));
    return float(TV::bitcast(h));
  }
}

// Elements o and o + step of a vector, not pinned (vector_at): one 32- or 64-bit load where the
// two are neighbours and aligned, one where step is 0 (a bias along the other axis).
template <class TV>
__device__ __forceinline__ float2 vector_pair(const void* base, int o, int step) {
  const TV* p = static_cast<const TV*>(base) + o;
  if (step == 0) {
    const float v = vector_at<TV, false>(base, o);
    return make_float2(v, v);
  }
  if (step == 1 && reinterpret_cast<unsigned long long>(p) % (2 * sizeof(TV)) == 0) {
    if constexpr (sizeof(TV) == 4) {
      float2 v;
      asm("ld.global.nc.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "l"(p));
      return v;
    } else {
      unsigned w;
      asm("ld.global.nc.b32 %0, [%1];" : "=r"(w) : "l"(p));
      return make_float2(float(TV::bitcast(uint16_t(w))), float(TV::bitcast(uint16_t(w >> 16))));
    }
  }
  return make_float2(vector_at<TV, false>(base, o), vector_at<TV, false>(base, o + step));
}

// kScale: row or column scales that are vectors; kTensorScale: scales of one value each (per
// tensor, or vectors of stride 0), which tile_scale takes into alpha once a tile, so that no
// value is scaled on its own (testing the scales' strides at every value made per-tensor
// scaled 8-bit products a tenth slower: docs/design/epilogue.md)
template <bool kBias = false, bool kScale = false, Act kAct = Act::none, bool kClamp = false,
          class TV = float, bool kBlockScales = false, bool kTensorScale = false>
struct Epilogue {
  static_assert(!(kScale && kTensorScale), "vector scales or per-tensor ones");
  static constexpr bool kNone = !kBias && !kScale && !kTensorScale && kAct == Act::none && !kClamp;
  static constexpr bool kBlocks = kBlockScales;   // (read by the promoted consumer alone)
  // the sm90 16-byte stores stage a tile's bias in shared memory (sm90_epilogue.cuh's
  // stage_bias); not beside per-element scales, whose loads with it spilled
  static constexpr bool kStagedBias = kBias && !kScale;
  // its values may be finished past M or N (no per-element global loads: the bias staged)
  static constexpr bool kEdgeSafe = !kScale;
  EpiArgs const* p;                // the kernel's parameter

  // the block scales of window w: A's of row i, B's of column block jb (128 columns); 1
  // for an operand without (null)
  __device__ __forceinline__ float block_a(int i, int w) const {
    return p->blk_a == nullptr ? 1.0f : vector_at<float>(p->blk_a, i * p->blk_a_sm + w * p->blk_a_sk);
  }
  __device__ __forceinline__ float block_b(int jb, int w) const {
    return p->blk_b == nullptr ? 1.0f : vector_at<float>(p->blk_b, w * p->blk_b_sk + jb * p->blk_b_sn);
  }

  // alpha * srow[i] * scol[j]: what multiplies the accumulator of (i, j)
  __device__ __forceinline__ float scale(float alpha, int i, int j) const {
    if constexpr (kScale || kTensorScale) {
      if (p->srow != nullptr) alpha *= vector_at<TV>(p->srow, i * p->srow_s);
      if (p->scol != nullptr) alpha *= vector_at<TV>(p->scol, j * p->scol_s);
    }
    return alpha;
  }
  // the same in two steps, for a kernel with registers to spare (the sm90 stores): a vector
  // of stride 0 (a per-tensor scale) once a tile, into alpha; per element only the others
  __device__ __forceinline__ float tile_scale(float alpha) const {
    if constexpr (kScale || kTensorScale) {
      if (p->srow != nullptr && p->srow_s == 0) alpha *= vector_at<TV>(p->srow, 0);
      if (p->scol != nullptr && p->scol_s == 0) alpha *= vector_at<TV>(p->scol, 0);
    }
    return alpha;
  }
  __device__ __forceinline__ float element_scale(float alpha, int i, int j) const {
    if constexpr (kScale) {
      if (p->srow != nullptr && p->srow_s != 0) alpha *= vector_at<TV>(p->srow, i * p->srow_s);
      if (p->scol != nullptr && p->scol_s != 0) alpha *= vector_at<TV>(p->scol, j * p->scol_s);
    }
    return alpha;
  }

  // bias, activation and clamp on the value alpha' * acc + beta * C of (i, j), stored as TO
  // (16 bits: the activation's fast form, activations.cuh)
  template <class TO = float>
  __device__ __forceinline__ float finish(float v, int i, int j) const {
    if constexpr (kBias)
      v += vector_at<TV>(p->bias, i * p->bias_sm + j * p->bias_sn);
    return tail<TO>(v);
  }
  // the bias of (i, j) as the sum of a part along rows and one along columns, one of them 0
  // (a vector runs along one axis; with both strides 0, a broadcast element, the column's)
  __device__ __forceinline__ float bias_row(int i) const {
    return p->bias_sm != 0 ? vector_at<TV, false>(p->bias, i * p->bias_sm) : 0.0f;
  }
  __device__ __forceinline__ float bias_col(int j) const {
    return p->bias_sm == 0 ? vector_at<TV, false>(p->bias, j * p->bias_sn) : 0.0f;
  }
  // finish2 with the pair's bias given (staged: bias_row + bias_col)
  template <class TO = float>
  __device__ __forceinline__ float2 finish2_plus(float v0, float v1, float2 b) const {
    return make_float2(tail<TO>(v0 + b.x), tail<TO>(v1 + b.y));
  }

  // the same on two neighbours of a row, (i, j) and (i, j + 1): their bias in one load where
  // it can (vector_pair); finish2_down: of a column, (i, j) and (i + 1, j)
  template <class TO = float>
  __device__ __forceinline__ float2 finish2(float v0, float v1, int i, int j) const {
    return pair<TO>(v0, v1, i, j, kBias ? p->bias_sn : 0);
  }
  template <class TO = float>
  __device__ __forceinline__ float2 finish2_down(float v0, float v1, int i, int j) const {
    return pair<TO>(v0, v1, i, j, kBias ? p->bias_sm : 0);
  }

 private:
  template <class TO>
  __device__ __forceinline__ float tail(float v) const {
    v = activate<kAct, sizeof(TO) == 2>(v);
    if constexpr (kClamp) v = v < p->lo ? p->lo : (v > p->hi ? p->hi : v);
    return v;
  }
  template <class TO>
  __device__ __forceinline__ float2 pair(float v0, float v1, int i, int j, int step) const {
    if constexpr (kBias) {
      const float2 b = vector_pair<TV>(p->bias, i * p->bias_sm + j * p->bias_sn, step);
      v0 += b.x;
      v1 += b.y;
    }
    return make_float2(tail<TO>(v0), tail<TO>(v1));
  }
};

// An epilogue seen from an entry that computes C^T itself (its tile's rows are C's columns)
template <class E>
struct Transposed {
  static_assert(!E::kBlocks, "block scales: rows per row, columns per 128 (never a C^T entry)");
  static constexpr bool kNone = E::kNone, kBlocks = false, kStagedBias = E::kStagedBias,
                        kEdgeSafe = E::kEdgeSafe;
  E e;
  __device__ __forceinline__ float bias_row(int i) const { return e.bias_col(i); }
  __device__ __forceinline__ float bias_col(int j) const { return e.bias_row(j); }
  template <class TO = float>
  __device__ __forceinline__ float2 finish2_plus(float v0, float v1, float2 b) const {
    return e.template finish2_plus<TO>(v0, v1, b);
  }
  __device__ __forceinline__ float scale(float alpha, int i, int j) const { return e.scale(alpha, j, i); }
  __device__ __forceinline__ float tile_scale(float alpha) const { return e.tile_scale(alpha); }
  __device__ __forceinline__ float element_scale(float alpha, int i, int j) const {
    return e.element_scale(alpha, j, i);
  }
  template <class TO = float>
  __device__ __forceinline__ float finish(float v, int i, int j) const {
    return e.template finish<TO>(v, j, i);
  }
  template <class TO = float>
  __device__ __forceinline__ float2 finish2(float v0, float v1, int i, int j) const {
    return e.template finish2_down<TO>(v0, v1, j, i);
  }
  template <class TO = float>
  __device__ __forceinline__ float2 finish2_down(float v0, float v1, int i, int j) const {
    return e.template finish2<TO>(v0, v1, j, i);
  }
};
template <class E>
__device__ __forceinline__ Transposed<E> transposed(E e) { return {e}; }

}  // namespace cg

// The call's epilogue type (the prelude defines it for a fused compile) and the parameter
// every fused kernel's entry takes last
#ifndef CG_EPILOGUE
#define CG_EPILOGUE cg::Epilogue<>
#define CG_INLINE_IF_FUSED
#define CG_LAMBDA_INLINE_IF_FUSED
#else
// a fused epilogue can make a kernel's body too large for ptxas to inline on its own (a
// call's stack frame spilled the accumulators): functions and lambdas on its path say so
#define CG_INLINE_IF_FUSED __forceinline__
#define CG_LAMBDA_INLINE_IF_FUSED __attribute__((always_inline))
#endif
#define CG_EPI_PARAMS const __grid_constant__ cg::EpiArgs epi
