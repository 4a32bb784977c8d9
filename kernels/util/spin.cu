// Utility (not a GEMM stage): every thread waits `cycles` cycles of its SM's clock (clock64).
// The benchmarks launch it after each L2 flush (perf/timing.Flush): it holds the GPU busy,
// without touching memory, while Python enqueues the timed launch, so the host's time per
// call never shows up between the start event and the kernel.
// Geometry: any grid; Flush launches 2 blocks an SM so that every SM is held.
#include <cute_gemm/entries.cuh>

CG_ENTRY(spin, , (long long cycles), {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
})
