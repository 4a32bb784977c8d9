// v1 strip — a BM x BN tile of C with whole-K strips of A and B in shared memory.
//
// Adds over row_smem: reuse in both operands. The block stages the BM x K strip of A
// and the K x BN strip of B in dynamic shared memory once, then every thread computes
// one output from shared memory only: each global element is read once per block
// instead of once per output (a BN- resp. BM-fold cut in global traffic).
// Geometry: BN x BM threads (16 x 16), one output each; grid (ceil(N/BN),
//           ceil(M/BM)). Dynamic smem 4*K*(BM + BN) bytes (StripSmem(BM, BN)):
//           K <= 1816 on H100/H200 (232448 B); beyond that the wrapper raises
//           ShapeLimitError. Rows/columns past M/N are stored as 0 and never written.
// Strides:  row-major A, B, C; leading dims from sAm, sBk, sCm.
// Bottleneck: the strip load is one long serial phase with no overlap with the FMAs,
//           and occupancy collapses as K grows (one or two blocks per SM at large K).
#include <cute_gemm/common.cuh>

// BM, BN: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#if CG_ENTRY_ON(v1_strip)   // include/cute_gemm/entries.cuh
extern "C" __global__ void __launch_bounds__(BM * BN)
v1_strip(CG_GEMM_PARAMS) {
  extern __shared__ float smem[];
  float* sA = smem;                  // [BM][K]: row r of the A strip, contiguous in k
  float* sB = smem + BM * K;         // [K][BN]: row k of the B strip
  const int tid = threadIdx.y * BN + threadIdx.x;   // block (BN, BM)
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  // Flat walks over each strip so consecutive threads touch consecutive addresses in
  // global memory (k for A, n for B): the loads coalesce.
  for (int i = tid; i < BM * K; i += BM * BN) {
    const int r = i / K, k = i % K;
    sA[i] = (m0 + r < M) ? A[(m0 + r) * sAm + k] : 0.0f;
  }
  for (int i = tid; i < K * BN; i += BM * BN) {
    const int k = i / BN, c = i % BN;
    sB[i] = (n0 + c < N) ? B[k * sBk + n0 + c] : 0.0f;
  }
  __syncthreads();

  const int m = m0 + threadIdx.y, n = n0 + threadIdx.x;
  if (m >= M || n >= N) return;      // after the only barrier: safe to leave early
  // A: a warp spans 32/BN rows (2) -> 2 words per read, each broadcast (a 2-way
  // bank conflict when K is a multiple of 32: cheaper than padding the strip);
  // B: consecutive threadIdx.x -> consecutive banks.
  const float* a = sA + threadIdx.y * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[k] * sB[k * BN + threadIdx.x];
  cg::store_axpby(alpha, acc, beta, C + m * sCm + n);
}
#endif
