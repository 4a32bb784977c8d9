// row_block — one block per row of C; its threads stride over the columns.
//
// Adds over flat1d: a block owns a whole row m of C, so every thread of the block reads
// the same row of A (L1 broadcast, read from DRAM once per block) and the k-loop over
// that row is shared; consecutive threads take consecutive columns, so the reads of a
// row of B and the writes of C coalesce.
// Geometry: THREADS (256) threads per block, grid (M, 1, 1); thread t computes columns
//           t, t + 256, t + 512, ... of row blockIdx.x. Any N: the stride loop ends at N.
// Strides:  row-major A, B, C; leading dims from sAm, sBk, sCm.
// Bottleneck: global/L2 bandwidth for B — all of B is streamed once per row of C —
//           and the 1-row blocks leave the A value in L1 only by luck.
#include <cute_gemm/common.cuh>

// THREADS: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#if CG_ENTRY_ON(row_block)   // include/cute_gemm/entries.cuh
extern "C" __global__ void __launch_bounds__(THREADS)
row_block(CG_GEMM_PARAMS) {
  const int m = blockIdx.x;
  const float* a = A + m * sAm;
  float* c = C + m * sCm;
  for (int n = threadIdx.x; n < N; n += THREADS) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += a[k] * B[k * sBk + n];
    cg::store_axpby(alpha, acc, beta, c + n);
  }
}
#endif
