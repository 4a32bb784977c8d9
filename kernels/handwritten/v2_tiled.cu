// v2 tiled — the shared-memory sliding window: TILE x TILE tiles of A and B step along K.
//
// Adds over v1: K is no longer bounded by shared memory. The block walks K in
// TILE-wide steps, staging one TILE x TILE tile of A and one of B in static shared
// memory per step (one element per thread each), so shared memory is fixed and many
// blocks fit per SM. Each staged element is used TILE times.
// Geometry: TILE x TILE threads (16x16 = 256 or 32x32 = 1024), one output each; grid
//           (ceil(N/TILE), ceil(M/TILE)); static smem 2*TILE*TILE floats. Edge tiles
//           load 0 for elements past M, N or K, so the inner loop never branches.
// Strides:  row-major A, B, C; leading dims from sAm, sBk, sCm.
// Bottleneck: shared-memory bandwidth and instruction issue: two shared loads per FMA,
//           plus a barrier pair every TILE FMAs.
#include <cute_gemm/common.cuh>

// BM, BN, BK: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
// Square tiles: each thread stages exactly one element of A and one of B per k-tile.
static_assert(BM == BN && BN == BK, "v2 needs BM == BN == BK");
#define TILE BM
static_assert(TILE * TILE <= 1024, "one thread per output of the tile");
#if CG_ENTRY_ON(v2_tiled)   // include/cute_gemm/entries.cuh
extern "C" __global__ void __launch_bounds__(TILE * TILE)
v2_tiled(CG_GEMM_PARAMS) {
  __shared__ float sA[TILE][TILE];   // [m][k]
  __shared__ float sB[TILE][TILE];   // [k][n]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m = blockIdx.y * TILE + ty, n = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // tx walks the contiguous dimension of both operands: coalesced loads and
    // conflict-free stores. Threads outside M/N still load (zeros) and reach the barriers.
    sA[ty][tx] = (m < M && k0 + tx < K) ? A[m * sAm + k0 + tx] : 0.0f;
    sB[ty][tx] = (k0 + ty < K && n < N) ? B[(k0 + ty) * sBk + n] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += sA[ty][k] * sB[k][tx];   // sA: broadcast
    __syncthreads();                 // the tile is consumed before it is overwritten
  }
  if (m < M && n < N) cg::store_axpby(alpha, acc, beta, C + m * sCm + n);
}
#endif
