// cute_tiny_k — a small K (a k-tile or two) in one pass: C's stores are the work.
//
// Adds over the ladder: nothing to pipeline. With K <= 32 a GEMM is a sum of a few rank-1
// terms, bound by writing C (and reading it when beta != 0); a mainloop's prologue,
// pipeline fill and per-tile epilogue stall are most of what the other stages spend there,
// and their operands may need copies first (TMA, 16-byte vectors). Here each CTA stages
// its (BLK_M,BLK_K) and (BLK_N,BLK_K) strips of A and B in shared memory as float
// (converted from bf16/fp16; tf32: rounded to nearest, ties away, so each product is the
// tensor cores' exactly), and every thread sums its outputs over the k-tile's K with FFMA
// (c0's partition of C, from shared memory). Any K runs, k-tile by k-tile, but a long K is
// what the other stages are for: gemm() sends this kernel K <= 32 (select/auto.py tiny_k).
// Geometry: BLK_M x BLK_N x BLK_K = 64 x 64 x 32 (the registry's TileConfig); 256 threads,
//           tC = (16,16) n fastest, thread (ty, tx) owning rows ty + 16 i and columns
//           tx + 16 j of the tile (4 x 4): a half-warp stores 16 consecutive elements of a
//           row. 16 accumulators and a strip's 8 staged values fit 124 registers: 2 CTAs
//           an SM (MIN_BLOCKS; at 3 CTAs' 80 registers the staging spilled).
// Residues: predicated element loads (zeros outside A and B); elem_less on C's identity
//           tensor predicates the stores.
// Strides:  any, all dynamic: a strip is loaded along the operand's unit-stride mode where
//           it has one (coalesced), else along k. One entry per (precision, result type).
// Bottleneck: C's stores (HBM bandwidth) for large M*N; the launch for small ones.
//
// Layouts:
//   tC   = (16,16):(16,1)                      thread -> (m,n) of its first C element
//   sA   = (BLK_M,BLK_K):(1,BLK_M+1)           rows of BLK_M+1 floats: loads along m or k, 32 banks
//   sB   = (BLK_N,BLK_K):(1,BLK_N+1)
//   tCsA = local_partition(sA, tC, tid, Step<_1,X>)   rows ty + 16 i of the strip
//   tCsB = local_partition(sB, tC, tid, Step<X,_1>)   columns tx + 16 j
#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>

using namespace cute;

// BLK_M, BLK_N, BLK_K, THREADS, MIN_BLOCKS: emitted by the registry's config (ladder_cute.py,
// TileConfig); MIN_BLOCKS CTAs an SM: the more warps, the more of each CTA's load latency hidden
static_assert(THREADS == 256, "the registry's block: the 16x16 thread layout below");
constexpr int kTM = BLK_M / 16, kTN = BLK_N / 16;   // a thread's rows and columns of C

// n fastest: a half-warp's 16 threads own 16 consecutive columns of a row of C
template <class = void>
CUTE_HOST_DEVICE constexpr auto thr_layout_c() {                            // (THR_M,THR_N) n-major
  return make_layout(make_shape(Int<16>{}, Int<16>{}), LayoutRight{});
}
// (X,BLK_K), x fastest, rows padded by one float: a warp's 32 stores along x or along k
// both land in 32 banks
template <int X>
CUTE_HOST_DEVICE constexpr auto smem_layout() {                              // (X,BLK_K)
  return make_layout(make_shape(Int<X>{}, Int<BLK_K>{}), make_stride(Int<1>{}, Int<X + 1>{}));
}

template <class T> __device__ __forceinline__ float to_f32(T x) { return float(x); }

// A (X,BLK_K,k) strip's k-tile `kt` into smem as float: thread t takes elements t, t + 256,
// ... numbered along the operand's unit-stride mode (x_unit: x, else k), zeros outside. As
// 256 is a multiple of X and of BLK_K, a thread's elements share one coordinate and step the
// other evenly: one pointer and one step. All its loads are issued before its first store
// (a store after each load waited for it: a memory latency an element).
template <bool TF32, class Strip, class Smem>
__device__ __forceinline__ void stage(Strip const& g, Smem& s, int x_left, int k_left, bool x_unit) {
  constexpr int X = decltype(size<0>(s))::value, KB = decltype(size<1>(s))::value;
  constexpr int PER = X * KB / THREADS;            // elements a thread stages
  static_assert(THREADS % X == 0 && THREADS % KB == 0 && X * KB % THREADS == 0,
                "a thread's elements: one coordinate fixed, the other in even steps");
  const int t = threadIdx.x;
  const int x0 = x_unit ? t % X : t / KB, k0 = x_unit ? t / X : t % KB;
  const int dx = x_unit ? 0 : THREADS / KB, dk = x_unit ? THREADS / X : 0;
  auto const* p = raw_pointer_cast(g.data()) + (x0 * stride<0>(g) + k0 * stride<1>(g));
  const long long step = dx * stride<0>(g) + dk * stride<1>(g);
  float v[PER];
  CUTE_UNROLL
  for (int i = 0; i < PER; ++i)
    v[i] = x0 + i * dx < x_left && k0 + i * dk < k_left ? to_f32(p[i * step]) : 0.0f;
  CUTE_UNROLL
  for (int i = 0; i < PER; ++i) {
    if constexpr (TF32) {                          // cvt.rna: round to nearest, ties away
      unsigned u = __float_as_uint(v[i]);
      asm("cvt.rna.tf32.f32 %0, %0;\n" : "+r"(u));
      v[i] = __uint_as_float(u);
    }
    s(x0 + i * dx, k0 + i * dk) = v[i];
  }
}

template <bool TF32, class TAB, class TC, class Epi>
__device__ void gemm_tiny_k(int M, int N, int K, float alpha,
                            const TAB* A, long long sAm, long long sAk,
                            const TAB* B, long long sBk, long long sBn,
                            float beta, TC* C, long long sCm, long long sCn, int Lin, int z0,
                            long long bA0, long long bA1, long long bB0, long long bB1,
                            long long bC0, long long bC1, Epi epi) {
  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<BLK_K>{};
  auto cta_tiler = make_shape(bM, bN, bK);                                    // (BLK_M,BLK_N,BLK_K)
  auto tC = thr_layout_c();                                                   // (THR_M,THR_N) n-major

  // Preconditions
  CUTE_STATIC_ASSERT_V(bM % size<0>(tC) == Int<0>{});                         // BLK_M / THR_M
  CUTE_STATIC_ASSERT_V(bN % size<1>(tC) == Int<0>{});                         // BLK_N / THR_N
  CUTE_STATIC_ASSERT_V(size(tC) == Int<THREADS>{});                           // the launch block
  static_assert(BLK_M == 16 * kTM && BLK_N == 16 * kTN, "THR_M x THR_N outputs a thread");

  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(sAm, sAk)); // (M,K)
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(sBn, sBk)); // (N,K)
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(sCm, sCn)); // (M,N)
  Tensor cC = make_identity_tensor(shape(mC));                                        // (M,N) -> (m,n)

  auto cta_coord = make_coord(blockIdx.x, blockIdx.y, _);                            // (m,n,:)
  Tensor gA  = local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gB  = local_tile(mB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)
  Tensor gC  = local_tile(mC, cta_tiler, cta_coord, Step<_1, _1, X>{});               // (BLK_M,BLK_N)
  Tensor gcC = local_tile(cC, cta_tiler, cta_coord, Step<_1, _1, X>{});               // (BLK_M,BLK_N)

  __shared__ float smemA[cosize_v<decltype(smem_layout<BLK_M>())>];
  __shared__ float smemB[cosize_v<decltype(smem_layout<BLK_N>())>];
  Tensor sA = make_tensor(make_smem_ptr(smemA), smem_layout<BLK_M>());               // (BLK_M,BLK_K)
  Tensor sB = make_tensor(make_smem_ptr(smemB), smem_layout<BLK_N>());               // (BLK_N,BLK_K)

  Tensor tCsA = local_partition(sA, tC, threadIdx.x, Step<_1, X>{});                 // (THR_M,BLK_K)
  Tensor tCsB = local_partition(sB, tC, threadIdx.x, Step< X, _1>{});                // (THR_N,BLK_K)
  Tensor tCgC = local_partition(gC, tC, threadIdx.x, Step<_1, _1>{});                // (THR_M,THR_N)
  Tensor tCcC = local_partition(gcC, tC, threadIdx.x, Step<_1, _1>{});               // (THR_M,THR_N)
  Tensor tCrC = make_tensor<float>(shape(tCgC));                                      // (THR_M,THR_N)
  clear(tCrC);

  const int m_left = M - int(blockIdx.x) * BLK_M, n_left = N - int(blockIdx.y) * BLK_N;
  const int l = z0 + int(blockIdx.z), l0 = l / Lin, l1 = l - l0 * Lin;     // (CG_BATCH_PARAMS)
  const int k_tiles = ceil_div(K, BLK_K);
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int k_left = min(BLK_K, K - kt * BLK_K);
    // this CTA's problem of a batch, offset where used: three pointers held from the start
    // (CG_BATCH_STEP) took more than the 128 registers of 2 CTAs an SM
    Tensor gAk = make_tensor(gA(_, _, kt).data() + (l0 * bA0 + l1 * bA1),
                             gA(_, _, kt).layout());                                  // (BLK_M,BLK_K)
    Tensor gBk = make_tensor(gB(_, _, kt).data() + (l0 * bB0 + l1 * bB1),
                             gB(_, _, kt).layout());                                  // (BLK_N,BLK_K)
    stage<TF32>(gAk, sA, m_left, k_left, sAm == 1 && sAk != 1);
    stage<TF32>(gBk, sB, n_left, k_left, sBn == 1 && sBk != 1);
    __syncthreads();
#pragma unroll 4
    for (int k = 0; k < k_left; ++k) {               // only the k-tile's K: no zero products
      float a[kTM], b[kTN];
      CUTE_UNROLL
      for (int i = 0; i < kTM; ++i) a[i] = tCsA(i, k);
      CUTE_UNROLL
      for (int j = 0; j < kTN; ++j) b[j] = tCsB(j, k);
      CUTE_UNROLL
      for (int i = 0; i < kTM; ++i)
        CUTE_UNROLL
        for (int j = 0; j < kTN; ++j) tCrC(i, j) = fmaf(a[i], b[j], tCrC(i, j));
    }
    __syncthreads();                                 // before the next k-tile overwrites
  }

  // Epilogue: alpha * acc + beta * C in TC (round to nearest even), C read only if beta != 0,
  // through the fused epilogue
  cg::epilogue_axpby(tCrC, make_tensor(tCgC.data() + (l0 * bC0 + l1 * bC1),
                                      tCgC.layout()), tCcC, shape(mC), alpha, beta, epi);
}

#define CG_TINY_K_ENTRY(NAME, TF32, TAB, TC)                                                \
  CG_ENTRY(NAME, __launch_bounds__(THREADS, MIN_BLOCKS),                                   \
           (CG_GEMM_PARAMS_T(TAB, TC), CG_BATCH_PARAMS, CG_EPI_PARAMS), {                    \
    gemm_tiny_k<TF32>(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn, Lin, z0, \
                      bA0, bA1, bB0, bB1, bC0, bC1, CG_EPILOGUE{&epi});                      \
  })

CG_TINY_K_ENTRY(cute_tiny_k_fp32_f32, false, float, float)
CG_TINY_K_ENTRY(cute_tiny_k_tf32_f32, true, float, float)
CG_TINY_K_ENTRY(cute_tiny_k_bf16_f32, false, bfloat16_t, float)
CG_TINY_K_ENTRY(cute_tiny_k_bf16_bf16, false, bfloat16_t, bfloat16_t)
CG_TINY_K_ENTRY(cute_tiny_k_fp16_f32, false, half_t, float)
CG_TINY_K_ENTRY(cute_tiny_k_fp16_fp16, false, half_t, half_t)
