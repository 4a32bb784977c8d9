// The epilogue of the tuned kernel (c3_pipelined.cu): C = alpha * acc + beta * C for one
// CTA tile, straight from the fragments or through shared memory, through a fused epilogue's
// pieces where the call has one (epilogue.cuh).
//
// Edge tiles store scalar and predicated (cg::epilogue_axpby). Interior tiles of an entry
// whose epilogue policy (Epi, Config::epi_*) asks for it, with C row-major and its rows
// 16-byte aligned, go through smem: the fragments' scalar stores from global memory put 8
// bytes in each of 16 sectors per instruction, 4 times over (4x the L2 write requests, from
// every CTA of a wave at once).
//   Epi::smem16  scalar STS of the fragments, then whole rows back as LDS.128 and out as
//                STG.128 (beta read the same way when non-zero);
//   Epi::bulk    (sm_90+, beta 0; else as Epi::scalar) scalar STS, then each of the first
//                BLK_M threads has its row copied out whole by the TMA unit
//                (cp.async.bulk, the async proxy: a proxy fence between the STS and the
//                copy). The STS stay scalar on purpose (st.shared in asm, which NVVM does not
//                merge): merged to STS.128 they need aligned register quads, and ptxas then
//                allocates ak_bn's mainloop with fewer operand reuse flags, slower.
// ptxas schedules each entry's mainloop anew with its epilogue, faster or slower, and so
// with the order of the STS (last fragment element first here): the policy is per entry
// (docs/design/cute_pipelined.md#epilogue).
// The C tile in smem: (BLK_M,BLK_N):(BLK_N+4,1) over the pipeline's buffers, once every
// warp's last mainloop reads are done (2-way conflicts for the fragments' scalar stores).
#pragma once

#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>
#include <cute_gemm/epilogue.cuh>
#include <cute_gemm/pipelined_config.cuh>

namespace cg {

// The epilogue policy of a data-parallel tile: this CTA computed all of K and stores (epi
// returns true: see gemm_pipelined). Stream-K runs pass their own callable (a reduction that
// returns true in the CTA that stores) and store scalar.
template <Epi E>
struct StoreTile {
  template <class Acc>
  __device__ bool operator()(Acc&) const { return true; }
};
template <class T> constexpr Epi kEpiOf = Epi::scalar;
template <Epi E> constexpr Epi kEpiOf<StoreTile<E>> = E;
template <class T> constexpr Epi kEpiPolicy = kEpiOf<cute::remove_cvref_t<T>>;

template <class Cfg>
constexpr int kEpiLd = Cfg::blk_n + 4;      // row pitch of the C tile in smem

// This thread's partition of the C tile in smem, once every thread's copies have landed and
// every warp is past its last mainloop smem reads.
template <class Cfg, class ThrMma>
__device__ __forceinline__ auto smem_c_partition(ThrMma const& thr_mma, float* smem) {
  using namespace cute;
  cp_async_wait<0>();
  __syncthreads();
  // 64-bit strides, not static ones: gC's layout type, so that this partition shares tCgC's
  // instantiation (costly to compile; the same SASS once the constants fold)
  Tensor sC = make_tensor(make_smem_ptr(smem), make_layout(make_shape(Int<Cfg::blk_m>{}, Int<Cfg::blk_n>{}),
                                                           make_stride((long long)kEpiLd<Cfg>, 1LL)));  // (BLK_M,BLK_N)
  return thr_mma.partition_C(sC);                                                                   // (MMA,MMA_M,MMA_N)
}

// Store the tile: kPred, an edge tile (every store checked against shapeC); tCgC / tCcC: C
// and its coordinates as partitioned for the accumulators tCrC; smem: the pipeline's buffers;
// e: the fused epilogue (epilogue.cuh), E::kNone the plain alpha/beta store. Every path
// stores finish(scale(alpha, m, n) * acc + beta * C, m, n) of element (m, n).
template <class Cfg, Epi kEpi, bool kPred, class ThrMma, class Acc, class TensorC, class TensorCoord,
          class ShapeC, class E>
__device__ __forceinline__ void store_tile(ThrMma const& thr_mma, Acc const& tCrC, TensorC&& tCgC,
                                           TensorCoord const& tCcC, ShapeC const& shapeC, float alpha,
                                           float beta, float* C, long long sCm, long long sCn,
                                           int tile_m, int tile_n, float* smem, E const& e) {
  using namespace cute;
  constexpr int kThreads = PipeGeometry<Cfg>::kThreads;
  // alpha * acc of element i, scaled as the epilogue says (and finished, where no C follows)
  auto scaled = [&](int i, bool finished) {
    if constexpr (E::kNone) {
      return alpha * tCrC(i);
    } else {
      const int m = get<0>(tCcC(i)), n = get<1>(tCcC(i));
      const float v = e.scale(alpha, m, n) * tCrC(i);
      return finished ? e.finish(v, m, n) : v;
    }
  };
  if constexpr (kPred) {
    cg::epilogue_axpby(tCrC, tCgC, tCcC, shapeC, alpha, beta, e);
  } else {
    static_assert(kEpi == Epi::scalar ||
                      Cfg::blk_m * kEpiLd<Cfg> <= Cfg::blk_k * (2 * (Cfg::blk_m + Cfg::blk_n + 2 * kSmemPad) +
                                                          Cfg::stages * (Cfg::blk_m + Cfg::blk_n)),
                  "C tile in smem");   // (dependent: checked only where instantiated)
    // the smem epilogues' condition: C row-major with 16-byte aligned rows
    const bool c_rows16 = sCn == 1 && sCm % 4 == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;
    if constexpr (kEpi == Epi::bulk && kArch >= 900) {
      if (beta == 0.0f && c_rows16) {
        static_assert(Cfg::blk_m <= kThreads && (kEpiLd<Cfg> * 4) % 16 == 0 && (Cfg::blk_n * 4) % 16 == 0,
                      "one C row per thread, 16-byte rows");
        Tensor tCsC = smem_c_partition<Cfg>(thr_mma, smem);                          // (MMA,MMA_M,MMA_N)
        CUTE_UNROLL
        for (int i = size(tCrC) - 1; i >= 0; --i)
          asm volatile("st.shared.f32 [%0], %1;" :: "r"(cast_smem_ptr_to_uint(&tCsC(i))),
                       "f"(scaled(i, true)) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // STS -> bulk copy
        __syncthreads();
        if (threadIdx.x < Cfg::blk_m) {
          float* g = C + (long long)(tile_m * Cfg::blk_m + threadIdx.x) * sCm + tile_n * Cfg::blk_n;   // row start
          const uint32_t s = cast_smem_ptr_to_uint(smem + threadIdx.x * kEpiLd<Cfg>);
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                       "cp.async.bulk.commit_group;\n"
                       "cp.async.bulk.wait_group 0;" :: "l"(g), "r"(s), "n"(Cfg::blk_n * 4) : "memory");
        }
        return;
      }
    }
    if constexpr (kEpi == Epi::smem16) {
      if (c_rows16) {
        Tensor tCsC = smem_c_partition<Cfg>(thr_mma, smem);                          // (MMA,MMA_M,MMA_N)
        CUTE_UNROLL
        for (int i = size(tCrC) - 1; i >= 0; --i) tCsC(i) = scaled(i, false);
        __syncthreads();
        constexpr int kVecRow = Cfg::blk_n / 4, kRows = kThreads / kVecRow;  // a warp: whole rows
        static_assert(kThreads % kVecRow == 0 && Cfg::blk_m % kRows == 0, "row-wise read-back");
        const int r0 = threadIdx.x / kVecRow, c4 = 4 * (threadIdx.x % kVecRow);
        float* g = C + (long long)(tile_m * Cfg::blk_m + r0) * sCm + tile_n * Cfg::blk_n + c4;
        CUTE_UNROLL
        for (int r = 0; r < Cfg::blk_m / kRows; ++r) {
          float4 v = *reinterpret_cast<const float4*>(&smem[(r0 + r * kRows) * kEpiLd<Cfg> + c4]);
          float* p = g + (long long)(r * kRows) * sCm;
          if (beta != 0.0f) {
            const float4 c = *reinterpret_cast<const float4*>(p);
            v.x += beta * c.x; v.y += beta * c.y; v.z += beta * c.z; v.w += beta * c.w;
          }
          if constexpr (!E::kNone) {
            const int m = tile_m * Cfg::blk_m + r0 + r * kRows, n = tile_n * Cfg::blk_n + c4;
            v = make_float4(e.finish(v.x, m, n), e.finish(v.y, m, n + 1), e.finish(v.z, m, n + 2),
                            e.finish(v.w, m, n + 3));
          }
          *reinterpret_cast<float4*>(p) = v;
        }
        return;
      }
    }
    CUTE_UNROLL
    for (int i = 0; i < size(tCrC); ++i) {
      if constexpr (E::kNone) {
        cg::store_axpby(alpha, tCrC(i), beta, &tCgC(i));
      } else {
        const int m = get<0>(tCcC(i)), n = get<1>(tCcC(i));
        cg::store_axpby(e.scale(alpha, m, n), tCrC(i), beta, &tCgC(i), e, m, n);
      }
    }
  }
}

}  // namespace cg
