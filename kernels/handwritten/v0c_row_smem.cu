// row_smem — one block per row of C with that row of A held in (dynamic) shared memory.
//
// Adds over row_block: the row of A is read from global memory once per block, by all
// threads together (coalesced), and then served from shared memory, where every lane of
// a warp reads the same word (a broadcast, no bank conflict). Only B streams from L2.
// Geometry: THREADS (256) threads per block, grid (M, 1, 1); K floats of dynamic shared
//           memory (registry: StripSmem(1, 0)), so K is bounded by the device's opt-in
//           shared memory per block (232448 B on H100/H200 -> K <= 58112); the wrapper
//           raises ShapeLimitError beyond it.
// Strides:  row-major A, B, C; leading dims from sAm, sBk, sCm.
// Bottleneck: B traffic: each block still streams all of B (K x N) through L2.
#include <cute_gemm/common.cuh>

// THREADS: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#if CG_ENTRY_ON(row_smem)   // include/cute_gemm/entries.cuh
extern "C" __global__ void __launch_bounds__(THREADS)
row_smem(CG_GEMM_PARAMS) {
  extern __shared__ float a_row[];               // K floats
  const int m = blockIdx.x;
  const float* a = A + m * sAm;
  for (int k = threadIdx.x; k < K; k += THREADS) a_row[k] = a[k];
  __syncthreads();                               // the whole row before anyone reads it
  float* c = C + m * sCm;
  for (int n = threadIdx.x; n < N; n += THREADS) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += a_row[k] * B[k * sBk + n];
    cg::store_axpby(alpha, acc, beta, c + n);
  }
}
#endif
