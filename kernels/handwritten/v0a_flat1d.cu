// flat1d — one thread per element of C, the (m, n) coordinate taken from a flat index.
//
// Adds over naive: nothing but the index map. A 1D grid of 256-thread blocks covers the
// M*N outputs; n = i % N varies fastest, so a warp reads 32 consecutive floats of a row
// of B and writes 32 consecutive floats of C (coalesced), while all its lanes read the
// same A element (one broadcast). A warp that straddles two rows of C still coalesces
// into two segments.
// Geometry: 256 threads per block, ceil(M*N/256) blocks; the flat index is 64-bit so
//           M*N beyond 2^31 still works.
// Strides:  row-major A, B, C (unit inner stride); leading dims from sAm, sBk, sCm.
// Bottleneck: global/L2 bandwidth: every A and B element is re-read from L1/L2 for each
//           output that needs it; no reuse is arranged by the kernel.
#include <cute_gemm/common.cuh>

// THREADS: emitted by the registry's config (ladder_handwritten.py, LadderConfig)
#if CG_ENTRY_ON(flat1d)   // include/cute_gemm/entries.cuh
extern "C" __global__ void __launch_bounds__(THREADS)
flat1d(CG_GEMM_PARAMS) {
  const long long i = blockIdx.x * (long long)THREADS + threadIdx.x;
  if (i >= (long long)M * N) return;            // guarded tail of the last block
  const int m = (int)(i / N), n = (int)(i % N);
  const float* a = A + m * sAm;                  // row m of A, contiguous along k
  const float* b = B + n;                        // column n of B, stride sBk
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[k] * b[k * sBk];
  cg::store_axpby(alpha, acc, beta, C + m * sCm + n);
}
#endif
