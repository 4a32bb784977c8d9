// Utility (not a GEMM stage): every thread waits `cycles` cycles of its SM's clock (clock64).
// Timed with CUDA events it reads the SM clock the GPU runs at: cycles / elapsed time. The
// benchmarks keep the GPU busy with it until that clock has settled (perf/timing.warm_up), so
// that no timing starts while the clock still ramps up from idle.
// Geometry: any grid; one block per SM is enough to read the clock, more keep every SM busy.
#include <cute_gemm/entries.cuh>

CG_ENTRY(spin, , (long long cycles), {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
})
