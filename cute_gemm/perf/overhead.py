"""Host cost of a call: run() on a tiny GEMM beside a raw launch of the same cubin (the floor),
the cuBLAS peer, and torch/cupy calls on the same arrays. `{method}_us`: median of
timing.wall_us, `{method}_host_us`: of timing.host_us. docs/design/host_overhead.md."""
from __future__ import annotations

import importlib

import numpy as np

from .. import api, driver, registry
from ..driver import launch
from ..driver.arrays import DeviceArray, parse
from .shapes import resolve
from .schema import first_line
from .timing import host_us, wall_us

OVERHEAD_TARGET_US = 10.0       # run() may cost at most this much above a raw launch
_import = importlib.import_module      # (tests hand in stand-ins for torch and cupy)


def _torch_methods(name: str, size: int) -> tuple[dict, str]:
    """The PyTorch methods (name -> call) and torch's version; raises where it cannot run."""
    torch = _import("torch")
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    a, b, o = (torch.randn((size, size), device="cuda") for _ in range(3))
    return {"run_torch": lambda: api.run(name, a, b, out=o),
            "torch_mm": lambda: torch.mm(a, b, out=o),
            # the other forms a caller writes: a new result, and C += A B in place
            "run_torch_new": lambda: api.run(name, a, b),
            "torch_mm_new": lambda: torch.mm(a, b),
            "run_torch_inplace": lambda: api.run(name, a, b, c=o, out=o, beta=1.0),
            "torch_addmm_inplace": lambda: torch.addmm(o, a, b, out=o)}, torch.__version__


def _cupy_methods(name: str, size: int) -> tuple[dict, str]:
    cp = _import("cupy")
    a, b = (cp.random.standard_normal((size, size), dtype=cp.float32) for _ in range(2))
    o = cp.empty((size, size), dtype=cp.float32)
    return {"run_cupy": lambda: api.run(name, a, b, out=o),
            "cupy_matmul": lambda: cp.matmul(a, b, out=o)}, cp.__version__


def measure_overhead(kernel: str | None = None, *, size: int = 16, calls: int = 20000,
                     rounds: int = 5, backend=None, libraries=("torch", "cupy")) -> dict:
    """Host µs per call of each method (module docstring) on a size^3 GEMM: medians and
    minima, the ratios of run() to the libraries' calls, and what was not measured and why."""
    k = registry.get(kernel or registry.names()[0])
    name, owned = k.name, []
    try:
        while len(owned) < 3:       # A, B (ones) and C, each freed at the end
            owned.append(DeviceArray.full((size, size), 1.0) if len(owned) < 2 else DeviceArray((size, size)))
        dA, dB, dC = owned
        api.run(name, dA, dB, out=dC)
        launch.check_last(name)
        A, B, C = parse("a", dA), parse("b", dB), parse("out", dC)
        variant, copies, f = resolve(k, {"a": A, "b": B, "c": C}, ordinal=driver.current_ordinal())
        grid, smem = k.grid(size, size, size), k.dyn_smem(size, size, size)
        packed = launch.pack_gemm_args(size, size, size, 1.0, A.ptr, *A.strides, B.ptr, *B.strides,
                                       0.0, C.ptr, *C.strides)
        methods = {"raw_launch": lambda: launch.launch(f, grid, k.block, smem, 0, packed),
                   "run": lambda: api.run(name, dA, dB, out=dC)}
        notes: dict = {}
        for lib, add in (("torch", _torch_methods), ("cupy", _cupy_methods)):
            if lib in libraries:
                try:
                    more, notes[lib] = add(name, size)
                    methods.update(more)
                except Exception as e:      # not installed, or no CUDA build
                    notes[lib] = f"not measured ({first_line(e)})"
        if backend is not None:
            wa, wb, wc = backend.wrap(dA), backend.wrap(dB), backend.wrap(dC)
            methods["cublas"] = lambda: backend.matmul(wa, wb, wc)
        for fn in methods.values():       # warm-up (first resolution, cuBLAS handle, heuristics)
            wall_us(fn, 200)
        samples, host = {key: [] for key in methods}, {key: [] for key in methods}
        for _ in range(rounds):
            for key, fn in methods.items():
                samples[key] += wall_us(fn, calls)
                host[key].append(host_us(fn, calls))
        launch.check_last(name)
        out = {"kernel": name, "shape": [size, size, size], "calls": calls, "rounds": rounds,
               "entry": variant.entry, "relayout_copies": list(copies), "libraries": notes}
        for key in methods:
            for tag, v in (("us", samples[key]), ("host_us", host[key])):
                out[f"{key}_{tag}"], out[f"{key}_{tag}_min"] = float(np.median(v)), float(np.min(v))
        out.update(cublas_library=backend.library if backend is not None else None,
                   run_minus_raw_us=out["run_us"] - out["raw_launch_us"], target_us=OVERHEAD_TARGET_US)
        out["meets_target"] = out["run_minus_raw_us"] <= OVERHEAD_TARGET_US
        # run() against the library call on the same arrays, and every run() against torch.mm
        for mine, peer in (("run_torch", "torch_mm"), ("run_cupy", "cupy_matmul"),
                           ("run", "torch_mm"), ("run_cupy", "torch_mm"),
                           ("run_torch_new", "torch_mm_new"),
                           ("run_torch_inplace", "torch_addmm_inplace")):
            if f"{mine}_us" in out and f"{peer}_us" in out:
                out[f"{mine}_over_{peer}"] = out[f"{mine}_us"] / out[f"{peer}_us"]
                out[f"{mine}_over_{peer}_host"] = out[f"{mine}_host_us"] / out[f"{peer}_host_us"]
        return out
    finally:
        launch.synchronize()
        for d in owned:
            d.close()
