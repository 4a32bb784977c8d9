// Utility (not a GEMM stage): dst = s * src over an (M,N) matrix with any strides.
//
// The wrapper uses it to move device operands a kernel cannot take as they are into a
// layout it can (and back), and for K = 0, where C = beta * C needs no GEMM at all.
// BLAS semantics: s == 0 writes zeros without reading src (src may be NaN or null).
extern "C" __global__ void scale2d(int M, int N, float s,
                                   const float* __restrict__ src, long long ss0, long long ss1,
                                   float* __restrict__ dst, long long ds0, long long ds1) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)M * N) return;
  // Walk dst in its own fastest order so the writes coalesce.
  int m, n;
  if (ds1 == 1 || ds0 != 1) { m = (int)(i / N); n = (int)(i % N); }
  else                      { n = (int)(i / M); m = (int)(i % M); }
  dst[m * ds0 + n * ds1] = (s == 0.0f || src == nullptr) ? 0.0f : s * src[m * ss0 + n * ss1];
}
