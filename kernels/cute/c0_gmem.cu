// cute_gmem — CuTe twin of the naive kernel: tiles and partitions, straight from global.
//
// Adds over `naive`: the CuTe vocabulary only. The matrices are tensors (make_tensor
// with the strides inside the layout), each CTA takes its (BLK_M,BLK_N) tile of C and
// the (BLK_M,BLK_K,k) / (BLK_N,BLK_K,k) strips of A and B that feed it (local_tile),
// and each thread takes its rows of A, columns of B and elements of C through one
// thread layout (local_partition with a Step projection). No shared memory: every
// thread loads its own BLK_K-long pieces of A and B into registers, k-tile by k-tile.
// Geometry: THR_M x THR_N = 16 x 16 threads, n fastest; each thread owns
//           (BLK_M/16) x (BLK_N/16) elements of C strided by 16 (1 x 1 for 16x16).
// Residues: identity tensors through the same local_tile/local_partition; elem_less
//           against (M,K), (N,K), (M,N) predicates every load (zero outside) and store.
// Strides:  any. One entry point per (A major, B major) with the unit stride static
//           (_1), plus `cute_gmem_any` with all strides dynamic (views with no unit
//           stride, e.g. every other column). C: any strides.
// Bottleneck: global-memory / L1 traffic: nothing is shared between threads, so each
//           element of A is loaded by the 16 threads of its CTA row (and again by every
//           CTA column), each element of B likewise; L1/L2 absorb part of it.
//
// Layouts:
//   cta_tiler = (BLK_M,BLK_N,BLK_K)
//   tC        = (16,16):(16,1)               thread -> (m,n) of its C elements
//   tCgA      = local_partition(gA, tC, tid, Step<_1,X>)   rows m0 + 16*i of A
//   tCgB      = local_partition(gB, tC, tid, Step<X,_1>)   columns n0 + 16*j of B
#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>
#include <cute_gemm/cute_util.cuh>

using namespace cute;

// BLK_M, BLK_N, BLK_K, THREADS: emitted by the registry's config (ladder_cute.py, TileConfig)
static_assert(THREADS == 256, "the registry's block: the 16x16 thread layouts below");

// The layouts, by name: the layout dumps show what these return (cute_gemm/layouts/recipes.py),
// and tests/test_layouts.py prints them from this file with CuTe to check that. Function
// templates, so each is instantiated where the kernel calls it, as its expression inline was.

// n fastest, like naive's threadIdx.x: for row-major B and C a warp reads 16 consecutive
// floats of B and writes 16 consecutive floats of C, and its two rows of A broadcast.
template <class = void>
CUTE_HOST_DEVICE constexpr auto thr_layout_c() {                            // (THR_M,THR_N) n-major
  return make_layout(make_shape(Int<16>{}, Int<16>{}), LayoutRight{});
}

template <class StrideA, class StrideB>
__device__ void gemm_gmem(int M, int N, int K, float alpha,
                          const float* A, StrideA dA, const float* B, StrideB dB,
                          float beta, float* C, long long sCm, long long sCn) {
  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<BLK_K>{};
  auto cta_tiler = make_shape(bM, bN, bK);                                    // (BLK_M,BLK_N,BLK_K)
  auto tC = thr_layout_c();                                                   // (THR_M,THR_N) n-major

  // Preconditions
  CUTE_STATIC_ASSERT_V(bM % size<0>(tC) == Int<0>{});                         // BLK_M / THR_M
  CUTE_STATIC_ASSERT_V(bN % size<1>(tC) == Int<0>{});                         // BLK_N / THR_N
  CUTE_STATIC_ASSERT_V(size(tC) == Int<256>{});                               // the launch block

  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), dA);                    // (M,K)
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), dB);                    // (N,K)
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(sCm, sCn)); // (M,N)
  Tensor cA = make_identity_tensor(shape(mA));                                        // (M,K) -> (m,k)
  Tensor cB = make_identity_tensor(shape(mB));                                        // (N,K) -> (n,k)
  Tensor cC = make_identity_tensor(shape(mC));                                        // (M,N) -> (m,n)

  auto cta_coord = make_coord(blockIdx.x, blockIdx.y, _);                            // (m,n,:)
  Tensor gA  = local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gB  = local_tile(mB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)
  Tensor gC  = local_tile(mC, cta_tiler, cta_coord, Step<_1, _1, X>{});               // (BLK_M,BLK_N)
  Tensor gcA = local_tile(cA, cta_tiler, cta_coord, Step<_1, X, _1>{});               // (BLK_M,BLK_K,k)
  Tensor gcB = local_tile(cB, cta_tiler, cta_coord, Step< X, _1, _1>{});              // (BLK_N,BLK_K,k)
  Tensor gcC = local_tile(cC, cta_tiler, cta_coord, Step<_1, _1, X>{});               // (BLK_M,BLK_N)

  // One thread layout splits C; its projections pick the matching rows of A / columns of B.
  Tensor tCgA = local_partition(gA, tC, threadIdx.x, Step<_1, X>{});                  // (THR_M,BLK_K,k)
  Tensor tCcA = local_partition(gcA, tC, threadIdx.x, Step<_1, X>{});                 // (THR_M,BLK_K,k)
  Tensor tCgB = local_partition(gB, tC, threadIdx.x, Step< X, _1>{});                 // (THR_N,BLK_K,k)
  Tensor tCcB = local_partition(gcB, tC, threadIdx.x, Step< X, _1>{});                // (THR_N,BLK_K,k)
  Tensor tCgC = local_partition(gC, tC, threadIdx.x, Step<_1, _1>{});                 // (THR_M,THR_N)
  Tensor tCcC = local_partition(gcC, tC, threadIdx.x, Step<_1, _1>{});                // (THR_M,THR_N)

  Tensor tCrA = make_tensor<float>(shape(tCgA(_, _, 0)));                             // (THR_M,BLK_K)
  Tensor tCrB = make_tensor<float>(shape(tCgB(_, _, 0)));                             // (THR_N,BLK_K)
  Tensor tCrC = make_tensor<float>(shape(tCgC));                                      // (THR_M,THR_N)
  clear(tCrC);

  auto shapeA = shape(mA);
  auto shapeB = shape(mB);
  const int k_tiles = size<2>(gA);
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    // Predicated loads; zeros outside the matrix make a partial k-tile exact.
    CUTE_UNROLL
    for (int i = 0; i < size(tCrA); ++i)
      tCrA(i) = elem_less(tCcA(_, _, k_tile)(i), shapeA) ? tCgA(_, _, k_tile)(i) : 0.0f;
    CUTE_UNROLL
    for (int i = 0; i < size(tCrB); ++i)
      tCrB(i) = elem_less(tCcB(_, _, k_tile)(i), shapeB) ? tCgB(_, _, k_tile)(i) : 0.0f;
    gemm(tCrA, tCrB, tCrC);                                                           // (THR_M,THR_N) += A * B
  }

  cg::epilogue_axpby(tCrC, tCgC, tCcC, shape(mC), alpha, beta);
}

#define CG_GMEM_ENTRY(NAME, DA, DB)                                                    \
  CG_ENTRY(NAME, __launch_bounds__(256), (CG_GEMM_PARAMS), {                           \
    gemm_gmem(M, N, K, alpha, A, DA, B, DB, beta, C, sCm, sCn);                        \
  })

CG_GMEM_ENTRY(cute_gmem_ak_bn, CG_DA_k, CG_DB_n)        // A row-major,    B row-major
CG_GMEM_ENTRY(cute_gmem_am_bn, CG_DA_m, CG_DB_n)        // A column-major, B row-major
CG_GMEM_ENTRY(cute_gmem_ak_bk, CG_DA_k, CG_DB_k)        // A row-major,    B column-major
CG_GMEM_ENTRY(cute_gmem_am_bk, CG_DA_m, CG_DB_k)        // A column-major, B column-major
CG_GMEM_ENTRY(cute_gmem_any, CG_DA_any, CG_DB_any)      // any strides (no unit stride needed)
