"""Time one kernel on one shape with CUDA events (the bench module builds on this)."""
from __future__ import annotations

import statistics

import numpy as np

from . import launch
from .api import flops, run
from .arrays import DeviceArray
from .check import judge, reference


def time_kernel(name: str, m: int, n: int, k: int, *, repeats: int = 20, warmup: int = 3,
                seed=None) -> dict:
    """Check once on fresh random inputs, then median time of `repeats` launches."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    dA, dB = DeviceArray.from_host(a), DeviceArray.from_host(b)
    out = DeviceArray.full((m, n), float("nan"))
    try:
        run(name, dA, dB, out=out)
        launch.check_last(name)
        ref, gauge = reference(a, b, None, 1.0, 0.0)
        verdict = judge(name, out.to_host(), ref, gauge, exact=False)
        for _ in range(warmup):
            run(name, dA, dB, out=out)
        times = []
        for _ in range(repeats):
            e0, e1 = launch.Event(), launch.Event()
            e0.record()
            run(name, dA, dB, out=out)
            e1.record()
            times.append(e1.elapsed_ms(e0))
        ms = statistics.median(times)
        return {"kernel": name, "m": m, "n": n, "k": k, "ms": ms, "min_ms": min(times),
                "max_ms": max(times), "tflops": flops(m, n, k) / (ms * 1e-3) / 1e12,
                "gauge_ratio": verdict.gauge_ratio, "status": verdict.status}
    finally:
        for d in (dA, dB, out):
            d.close()
