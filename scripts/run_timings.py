#!/usr/bin/env python3
"""Wall-clock cost of run() on the issue's example (1000x700 @ 700x1300), on a GPU:
first call in a fresh process with a warm disk cache (module load included), then the
steady state for numpy in/out and for device arrays (cute_gemm.perf.timing.wall_us, the
loop the bench's overhead measurement uses)."""
from __future__ import annotations

import statistics
import time

import numpy as np

t0 = time.perf_counter()
import cute_gemm  # noqa: E402
from cute_gemm.perf.timing import wall_us  # noqa: E402

rng = np.random.default_rng()
a = rng.standard_normal((1000, 700), dtype=np.float32)
b = rng.standard_normal((700, 1300), dtype=np.float32)
t1 = time.perf_counter()
c = cute_gemm.run("cute_smem", a, b)
t2 = time.perf_counter()
print(f"import {t1 - t0:.3f} s; first run('cute_smem') with warm disk cache "
      f"(context, cubin load, upload, launch, download) {1e3 * (t2 - t1):.1f} ms")
for name in [k.name for k in cute_gemm.kernels()][:2]:
    us = wall_us(lambda: cute_gemm.run(name, a, b), repeats=20)
    print(f"steady run({name!r}) numpy in/out: median {1e-3 * statistics.median(us):.2f} ms")
dA, dB = cute_gemm.DeviceArray.from_host(a), cute_gemm.DeviceArray.from_host(b)
out = cute_gemm.DeviceArray((1000, 1300))
us = wall_us(lambda: cute_gemm.run("cute_smem", dA, dB, out=out), repeats=50)
print(f"steady run('cute_smem') device arrays incl. kernel: median {1e-3 * statistics.median(us):.3f} ms")
