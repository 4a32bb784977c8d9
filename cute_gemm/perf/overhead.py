"""Host cost of a call: cute_gemm.run() on device arrays against a raw driver launch of the
same cubin with pre-packed arguments, and against cuBLAS, on a GEMM small enough that the
GPU time is negligible. The difference run() - raw is what the Python layer adds."""
from __future__ import annotations

import numpy as np

from .. import api, launch, registry
from ..arrays import DeviceArray, parse
from .runtime import resolve
from .timing import wall_us

OVERHEAD_TARGET_US = 10.0       # run() may cost at most this much above a raw launch


def measure_overhead(kernel: str | None = None, *, size: int = 16, calls: int = 20000,
                     rounds: int = 5, backend=None) -> dict:
    """Host µs per call for a tiny GEMM on device arrays. Rounds interleave the methods;
    each figure is the median over rounds of timing.wall_us(fn, calls)."""
    name = registry.get(kernel or registry.names()[0]).name
    k = registry.get(name)
    owned = []
    try:
        dA = DeviceArray.full((size, size), 1.0)
        owned.append(dA)
        dB = DeviceArray.full((size, size), 1.0)
        owned.append(dB)
        dC = DeviceArray((size, size))
        owned.append(dC)
        api.run(name, dA, dB, out=dC)
        launch.check_last(name)
        A, B, C = parse("a", dA), parse("b", dB), parse("out", dC)
        variant, copies, f = resolve(k, {"a": A, "b": B, "c": C}, ordinal=launch.current_ordinal())
        grid, smem = k.grid(size, size, size), k.smem_bytes(size, size, size)
        packed = launch.pack_gemm_args(size, size, size, 1.0, A.ptr, A.strides[0], A.strides[1],
                                       B.ptr, B.strides[0], B.strides[1], 0.0,
                                       C.ptr, C.strides[0], C.strides[1])
        block = k.block
        methods = {
            "raw_launch": lambda: launch.launch(f, grid, block, smem, 0, packed),
            "run": lambda: api.run(name, dA, dB, out=dC),
        }
        if backend is not None:
            wa, wb, wc = backend.wrap(dA), backend.wrap(dB), backend.wrap(dC)
            methods["cublas"] = lambda: backend.matmul(wa, wb, wc)
        for fn in methods.values():       # warm-up (cuBLAS handle, heuristics)
            wall_us(fn, 200)
        samples = {key: [] for key in methods}
        for _ in range(rounds):
            for key, fn in methods.items():
                samples[key] += wall_us(fn, calls)
        launch.check_last(name)
        out = {"kernel": name, "shape": [size, size, size], "calls": calls, "rounds": rounds,
               "entry": variant.entry, "relayout_copies": list(copies)}
        for key, v in samples.items():
            out[f"{key}_us"] = float(np.median(v))
            out[f"{key}_us_min"] = float(np.min(v))
        out["cublas_library"] = backend.library if backend is not None else None
        out["run_minus_raw_us"] = out["run_us"] - out["raw_launch_us"]
        out["target_us"] = OVERHEAD_TARGET_US
        out["meets_target"] = out["run_minus_raw_us"] <= OVERHEAD_TARGET_US
        return out
    finally:
        launch.synchronize()
        for d in owned:
            d.close()
