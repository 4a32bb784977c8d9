"""Host µs per call of cute_gemm.run() and of what it is made of, on a GPU, for
docs/design/host_overhead.md. Works with any checkout of cute_gemm on PYTHONPATH (run it
once per checkout to compare them): it uses run(), DeviceArray and the driver calls only.

Per kernel, in interleaved rounds, on 16x16 float32 arrays with out= given, two figures per
method (medians over rounds): `calls` back-to-back calls and one final synchronize, per call
(cute_gemm.perf.timing.wall_us: the GPU's rate where it is the slower side), and the host
alone (timing.host_us: bursts the launch queue holds, no wait for the GPU):
  totals   run() on DeviceArrays, PyTorch tensors and CuPy arrays; torch.mm and cupy.matmul
           on the same tensors; a raw launch of the same entry by cuda.bindings and by ctypes
  levers   reading three operands by __cuda_array_interface__ against by attributes (per
           kind); cuCtxGetCurrent by cuda.bindings and by ctypes; cuLaunchKernel with its
           fixed arguments converted per call, bound beforehand, or through ctypes
    python3 scripts/host_overhead.py --tag new naive cute_pipelined --json out.json
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import json
import statistics
import sys
import time


def sync():
    from cute_gemm.driver import launch
    launch.synchronize()


def wall_us(fn, calls: int) -> float:
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def host_us(fn, calls: int, burst: int = 128) -> float:
    total = 0.0
    for i in range(0, calls, burst):
        n = min(burst, calls - i)
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        total += time.perf_counter() - t0
    sync()
    return total / calls * 1e6


def timed(methods: dict, calls: int, rounds: int) -> tuple[dict, dict]:
    """({method: wall µs}, {method: host µs}), medians over interleaved rounds."""
    for fn in methods.values():
        wall_us(fn, 200)
    wall = {k: [] for k in methods}
    host = {k: [] for k in methods}
    for _ in range(rounds):
        for k, fn in methods.items():
            wall[k].append(wall_us(fn, calls))
            host[k].append(host_us(fn, calls))
    return ({k: statistics.median(v) for k, v in wall.items()},
            {k: statistics.median(v) for k, v in host.items()})


def ctypes_driver():
    """(cuLaunchKernel, cuCtxGetCurrent) through ctypes on the driver's own entry points."""
    from cuda.bindings import driver as drv
    F = drv.CUdriverProcAddress_flags
    out = []
    for sym in (b"cuLaunchKernel", b"cuCtxGetCurrent"):
        r = drv.cuGetProcAddress(sym, 12000, F.CU_GET_PROC_ADDRESS_LEGACY_STREAM)
        assert r[0] == drv.CUresult.CUDA_SUCCESS and r[1], (sym, r)
        out.append(ctypes.CFUNCTYPE(ctypes.c_int)(int(r[1])))    # no argtypes: ctypes values
    return out


def measure(kernel: str, size: int, calls: int, rounds: int, with_levers: bool = True) -> dict:
    import cute_gemm
    from cute_gemm import registry
    from cute_gemm.driver import launch
    from cute_gemm.plan import resolve
    from cute_gemm.driver.arrays import DeviceArray, parse
    from cuda.bindings import driver as drv
    import numpy as np
    rng = np.random.default_rng()
    k = registry.get(kernel)
    dev = [DeviceArray.from_host(rng.standard_normal((size, size), dtype=np.float32))
           for _ in range(3)]
    cute_gemm.run(kernel, dev[0], dev[1], out=dev[2])
    launch.check_last(kernel)
    A, B, C = (parse(n, x) for n, x in zip(("a", "b", "out"), dev))
    variant, _ = resolve.choose(k, {"a": A, "b": B, "c": C})
    f = resolve.loaded(k, 0).function(variant.entry)
    grid, block, smem = k.grid(size, size, size), k.block, k.dyn_smem(size, size, size)
    packed = launch.pack_gemm_args(size, size, size, 1.0, A.ptr, size, 1, B.ptr, size, 1, 0.0,
                                   C.ptr, size, 1)
    addr, ptrs = packed[1], packed[0][1]
    go = functools.partial(drv.cuLaunchKernel, f.handle, *grid, *block, smem)
    c_launch, c_ctx = ctypes_driver()
    fixed = (ctypes.c_void_p(int(f.handle)), *map(ctypes.c_uint, (*grid, *block, smem)))
    s0 = ctypes.c_void_p(0)
    cur = ctypes.c_void_p()
    pcur = ctypes.pointer(cur)
    totals = {
        "run_device_array": lambda: cute_gemm.run(kernel, dev[0], dev[1], out=dev[2]),
        "raw_launch_bindings": lambda: drv.cuLaunchKernel(f.handle, *grid, *block, smem, 0, addr, 0),
        "raw_launch_ctypes": lambda: c_launch(*fixed, s0, ptrs, None),
    }
    levers = {
        "read3_device_array_cai": lambda: [x.__cuda_array_interface__ for x in dev],
        "read3_device_array_attrs": lambda: [(x.shape, x.strides, x.dtype_name, x.ptr) for x in dev],
        "ctx_bindings": lambda: int(drv.cuCtxGetCurrent()[1]),
        "ctx_ctypes": lambda: (c_ctx(pcur), cur.value),
        "launch_launch_py": lambda: launch.launch(f, grid, block, smem, 0, packed),
        "launch_bound_bindings": lambda: go(0, addr, 0),
        "launch_ctypes": lambda: c_launch(*fixed, s0, ptrs, None),
    }
    versions = {"python": sys.version.split()[0]}
    try:
        import torch
        ta, tb, to = (torch.randn((size, size), device="cuda") for _ in range(3))
        versions["torch"] = torch.__version__
        totals["run_torch"] = lambda: cute_gemm.run(kernel, ta, tb, out=to)
        totals["torch_mm"] = lambda: torch.mm(ta, tb, out=to)
        tt = (ta, tb, to)
        levers["read3_torch_cai"] = lambda: [x.__cuda_array_interface__ for x in tt]
        levers["read3_torch_attrs"] = lambda: [(x.is_cuda, x.data_ptr(), x.shape, x.stride(), x.dtype,
                                                x.requires_grad) for x in tt]
    except Exception as e:
        versions["torch"] = f"not measured: {e!r}"
    try:
        import cupy as cp
        ca, cb = (cp.random.standard_normal((size, size), dtype=cp.float32) for _ in range(2))
        co = cp.empty((size, size), dtype=cp.float32)
        versions["cupy"] = cp.__version__
        totals["run_cupy"] = lambda: cute_gemm.run(kernel, ca, cb, out=co)
        totals["cupy_matmul"] = lambda: cp.matmul(ca, cb, out=co)
        cc = (ca, cb, co)
        current = cp.cuda.get_current_stream
        levers["read3_cupy_cai"] = lambda: [x.__cuda_array_interface__ for x in cc]
        levers["read3_cupy_attrs"] = lambda: [(x.data.ptr, x.shape, x.strides, x.dtype, current().ptr)
                                              for x in cc]
    except Exception as e:
        versions["cupy"] = f"not measured: {e!r}"
    t, th = timed(totals, calls, rounds)
    lv = timed(levers, calls, rounds)[1] if with_levers else {}
    out = {"kernel": kernel, "entry": variant.entry, "size": size, "calls": calls,
           "rounds": rounds, "totals_us": t, "totals_host_us": th, "levers_host_us": lv,
           "versions": versions}
    for tag, x in (("", t), ("_host", th)):
        if "torch_mm" in x:
            out[f"ratios_to_torch_mm{tag}"] = {k: v / x["torch_mm"] for k, v in x.items()
                                              if k.startswith("run")}
        if "cupy_matmul" in x:
            out[f"run_cupy_over_cupy_matmul{tag}"] = x["run_cupy"] / x["cupy_matmul"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="+")
    ap.add_argument("--tag", default="")
    ap.add_argument("--size", type=int, default=16)
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--no-levers", action="store_true")
    args = ap.parse_args()
    res = [measure(k, args.size, args.calls, args.rounds, not args.no_levers) for k in args.kernels]
    for r in res:
        print(f"[{args.tag}] {r['kernel']} ({r['entry']}), {r['size']}^3, µs/call, median of "
              f"{r['rounds']} rounds x {r['calls']}: with sync | host alone")
        for k, v in r["totals_us"].items():
            ratio, rh = r.get("ratios_to_torch_mm", {}).get(k), r.get("ratios_to_torch_mm_host", {}).get(k)
            print(f"  {k:28s}{v:8.2f}{r['totals_host_us'][k]:8.2f}"
                  + (f"   {ratio:.2f}x | {rh:.2f}x torch.mm" if ratio else ""))
        for k, v in r["levers_host_us"].items():
            print(f"  {k:28s}{'':8s}{v:8.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"tag": args.tag, "results": res}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
