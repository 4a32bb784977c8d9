// cute_smem — CuTe: global tiles staged through shared memory (the seed's gemm_device).
//
// Adds over the naive kernel: the CuTe vocabulary. Whole matrices become tensors
// (make_tensor), each CTA takes its (BLK_M,BLK_N) tile of C and the matching
// (BLK_M,BLK_K,k) / (BLK_N,BLK_K,k) strips of A and B (local_tile), threads split
// every tile by a thread layout (local_partition), and each k-tile of A and B is
// copied to shared memory once and read from there BLK_N / BLK_M times.
// Geometry: BLK_M x BLK_N x BLK_K from the registry's config, 256 threads; copy thread
//           layouts (32,8) laid along the operand's contiguous mode so a warp reads
//           32 consecutive floats; compute thread layout (16,16), each thread owns
//           (BLK_M/16) x (BLK_N/16) outputs strided by 16.
// Residues: predicated with identity tensors — coordinates go through the same
//           local_tile/local_partition as the data, elem_less against (M,N,K)
//           decides every load and store; out-of-range smem entries are zero.
// Strides:  any; the entry points differ only in the copy thread layouts.
// Bottleneck: shared-memory bandwidth (one smem load per FMA) and scalar copies.
//
// Layouts (tid = threadIdx.x):
//   sA = (BLK_M,BLK_K):(1,BLK_M)     sB = (BLK_N,BLK_K):(1,BLK_N)     (unpadded)
//   copy thread layout, operand contiguous along m/n: (32,8):(1,32)   one float each
//   copy thread layout, operand contiguous along k:   (32,8):(8,1)
//   compute thread layout tC = (16,16):(1,16) -> thread (tid%16, tid/16) owns
//       C(tm + 16i, tn + 16j); tCsA = rows tm + 16i of sA, tCsB = rows tn + 16j of sB
#include <cute_gemm/cute.cuh>
#include <cute_gemm/common.cuh>

using namespace cute;

// BLK_M, BLK_N, BLK_K, THREADS: emitted by the registry's config (ladder_cute.py, TileConfig)
static_assert(THREADS == 256, "the registry's block: the 16x16 thread layouts below");

// The layouts, by name: the layout dumps show what these return (cute_gemm/layouts/recipes.py),
// and tests/test_layouts.py prints them from this file with CuTe to check that. Function
// templates, so each is instantiated where the kernel calls it, as its expression inline was.
template <class = void>
CUTE_HOST_DEVICE constexpr auto thr_layout_c() {                     // (THR_M,THR_N) m-major
  return make_layout(make_shape(Int<16>{}, Int<16>{}));
}
// Shared tiles, m-/n-major so the compute threads (m fastest) read consecutive words.
template <class = void>
CUTE_HOST_DEVICE constexpr auto smem_layout_a() {                    // (BLK_M,BLK_K)
  return make_layout(make_shape(Int<BLK_M>{}, Int<BLK_K>{}));
}
template <class = void>
CUTE_HOST_DEVICE constexpr auto smem_layout_b() {                    // (BLK_N,BLK_K)
  return make_layout(make_shape(Int<BLK_N>{}, Int<BLK_K>{}));
}

template <class ThrA, class ThrB>
__device__ void gemm_smem(CG_GEMM_PARAMS, ThrA tA, ThrB tB) {
  auto bM = Int<BLK_M>{};
  auto bN = Int<BLK_N>{};
  auto bK = Int<BLK_K>{};
  auto cta_tiler = make_shape(bM, bN, bK);                           // (BLK_M,BLK_N,BLK_K)
  auto tC = thr_layout_c();                                          // (THR_M,THR_N) m-major

  // Preconditions
  CUTE_STATIC_ASSERT_V(size(tA) == size(tC));                        // one thread set
  CUTE_STATIC_ASSERT_V(size(tB) == size(tC));
  CUTE_STATIC_ASSERT_V(bM % size<0>(tA) == Int<0>{});                // BLK_M / THR_M
  CUTE_STATIC_ASSERT_V(bK % size<1>(tA) == Int<0>{});                // BLK_K / THR_K
  CUTE_STATIC_ASSERT_V(bN % size<0>(tB) == Int<0>{});                // BLK_N / THR_N
  CUTE_STATIC_ASSERT_V(bK % size<1>(tB) == Int<0>{});                // BLK_K / THR_K
  CUTE_STATIC_ASSERT_V(bM % size<0>(tC) == Int<0>{});                // BLK_M / THR_M
  CUTE_STATIC_ASSERT_V(bN % size<1>(tC) == Int<0>{});                // BLK_N / THR_N

  // Whole matrices. B is viewed as (N,K) so that A and B partition alike.
  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(sAm, sAk));  // (M,K)
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(sBn, sBk));  // (N,K)
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(sCm, sCn));  // (M,N)
  // Their coordinates, for predication.
  Tensor cA = make_identity_tensor(shape(mA));                                         // (M,K) -> (m,k)
  Tensor cB = make_identity_tensor(shape(mB));                                         // (N,K) -> (n,k)
  Tensor cC = make_identity_tensor(shape(mC));                                         // (M,N) -> (m,n)

  auto cta_coord = make_coord(blockIdx.x, blockIdx.y, _);                             // (m,n,:)
  Tensor gA = local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{});                 // (BLK_M,BLK_K,k)
  Tensor gB = local_tile(mB, cta_tiler, cta_coord, Step< X, _1, _1>{});                // (BLK_N,BLK_K,k)
  Tensor gC = local_tile(mC, cta_tiler, cta_coord, Step<_1, _1, X>{});                 // (BLK_M,BLK_N)
  Tensor gcA = local_tile(cA, cta_tiler, cta_coord, Step<_1, X, _1>{});                // (BLK_M,BLK_K,k)
  Tensor gcB = local_tile(cB, cta_tiler, cta_coord, Step< X, _1, _1>{});               // (BLK_N,BLK_K,k)
  Tensor gcC = local_tile(cC, cta_tiler, cta_coord, Step<_1, _1, X>{});                // (BLK_M,BLK_N)

  __shared__ float smemA[BLK_M * BLK_K];
  __shared__ float smemB[BLK_N * BLK_K];
  Tensor sA = make_tensor(make_smem_ptr(smemA), smem_layout_a());                      // (BLK_M,BLK_K)
  Tensor sB = make_tensor(make_smem_ptr(smemB), smem_layout_b());                      // (BLK_N,BLK_K)

  // Copy partitions: thread tid's share of each tile.
  Tensor tAgA = local_partition(gA, tA, threadIdx.x);                                  // (THR_M,THR_K,k)
  Tensor tAcA = local_partition(gcA, tA, threadIdx.x);                                 // (THR_M,THR_K,k)
  Tensor tAsA = local_partition(sA, tA, threadIdx.x);                                  // (THR_M,THR_K)
  Tensor tBgB = local_partition(gB, tB, threadIdx.x);                                  // (THR_N,THR_K,k)
  Tensor tBcB = local_partition(gcB, tB, threadIdx.x);                                 // (THR_N,THR_K,k)
  Tensor tBsB = local_partition(sB, tB, threadIdx.x);                                  // (THR_N,THR_K)

  // Compute partitions: rows of sA and columns of sB that feed this thread's outputs.
  Tensor tCsA = local_partition(sA, tC, threadIdx.x, Step<_1, X>{});                   // (THR_M,BLK_K)
  Tensor tCsB = local_partition(sB, tC, threadIdx.x, Step< X, _1>{});                  // (THR_N,BLK_K)
  Tensor tCgC = local_partition(gC, tC, threadIdx.x, Step<_1, _1>{});                  // (THR_M,THR_N)
  Tensor tCcC = local_partition(gcC, tC, threadIdx.x, Step<_1, _1>{});                 // (THR_M,THR_N)
  Tensor tCrC = make_tensor_like(tCgC);                                                // (THR_M,THR_N)
  clear(tCrC);

  auto shapeA = shape(mA);
  auto shapeB = shape(mB);
  const int k_tiles = size<2>(gA);
  for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
    // Predicated global -> shared copy; zero-fill outside the matrix so the
    // inner product over a partial k-tile adds exact zeros.
    Tensor tAgAk = tAgA(_, _, k_tile);                             // (THR_M,THR_K)
    Tensor tAcAk = tAcA(_, _, k_tile);                             // (THR_M,THR_K)
    Tensor tBgBk = tBgB(_, _, k_tile);                             // (THR_N,THR_K)
    Tensor tBcBk = tBcB(_, _, k_tile);                             // (THR_N,THR_K)
    CUTE_UNROLL
    for (int i = 0; i < size(tAsA); ++i)
      tAsA(i) = elem_less(tAcAk(i), shapeA) ? tAgAk(i) : 0.0f;
    CUTE_UNROLL
    for (int i = 0; i < size(tBsB); ++i)
      tBsB(i) = elem_less(tBcBk(i), shapeB) ? tBgBk(i) : 0.0f;
    __syncthreads();
    gemm(tCsA, tCsB, tCrC);                                        // (THR_M,THR_N) += sA * sB
    __syncthreads();
  }

  // Predicated epilogue: C = alpha * acc + beta * C (C unread when beta == 0).
  auto shapeC = shape(mC);
  CUTE_UNROLL
  for (int i = 0; i < size(tCrC); ++i)
    if (elem_less(tCcC(i), shapeC)) cg::store_axpby(alpha, tCrC(i), beta, &tCgC(i));
}

// Copy thread layouts (32,8): 32 threads along the operand's contiguous mode.
using ThrMajor0 = Layout<Shape<_32, _8>>;                         // mode 0 (m or n) contiguous
using ThrMajor1 = Layout<Shape<_32, _8>, Stride<_8, _1>>;         // mode 1 (k) contiguous

#define CG_SMEM_ENTRY(NAME, TA, TB)                                            \
  CG_ENTRY(NAME, __launch_bounds__(256), (CG_GEMM_PARAMS), {                   \
    gemm_smem(M, N, K, alpha, A, sAm, sAk, B, sBk, sBn, beta, C, sCm, sCn,     \
              TA{}, TB{});                                                     \
  })

CG_SMEM_ENTRY(cute_smem_ak_bn, ThrMajor1, ThrMajor0)  // A row-major,    B row-major
CG_SMEM_ENTRY(cute_smem_am_bn, ThrMajor0, ThrMajor0)  // A column-major, B row-major
CG_SMEM_ENTRY(cute_smem_ak_bk, ThrMajor1, ThrMajor1)  // A row-major,    B column-major
CG_SMEM_ENTRY(cute_smem_am_bk, ThrMajor0, ThrMajor1)  // A column-major, B column-major
