"""Which driver call ends a CUDA graph capture: every cuda.bindings.driver function is wrapped
so that, while the probe's capture stream records, the capture's status is read after each
call; the first call after which it reads INVALIDATED is printed with its Python stack.

    python scripts/capture_probe.py [global|thread_local|relaxed]

It captures, with torch.cuda.graph and no warm-up, gemm() calls of each precision on shapes
that take each launch path (the GPU tests' capture matrix, tests/test_capture_gpu.py)."""
from __future__ import annotations

import sys
import traceback

from cuda.bindings import driver as drv

_watch: list = []          # [stream handle] while a capture is watched
_found: list = []


def _wrap(name, f):
    def call(*args, **kw):
        r = f(*args, **kw)
        if _watch and not _found and name != "cuStreamIsCapturing":
            err, status = f_is(_watch[0])
            if status == drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_INVALIDATED:
                _found.append((name, "".join(traceback.format_stack(limit=12)[:-1])))
        return r
    return call


f_is = drv.cuStreamIsCapturing
for _n in dir(drv):
    _f = getattr(drv, _n)
    if _n.startswith("cu") and callable(_f) and not isinstance(_f, type):
        setattr(drv, _n, _wrap(_n, _f))

import torch  # noqa: E402
import cute_gemm  # noqa: E402

mode = sys.argv[1] if len(sys.argv) > 1 else "global"
cases = [(p, s) for p in ("fp32", "tf32", "bf16", "fp16", "fp32_3xtf32")
         for s in ((384, 512, 1024), (256, 256, 256), (128, 256, 16384), (333, 517, 1001))]
for prec, (m, n, k) in cases:
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(prec, torch.float32)
    a, b = torch.randn(m, k, device="cuda").to(dt), torch.randn(k, n, device="cuda").to(dt)
    c, o = torch.randn(m, n, device="cuda"), torch.empty(m, n, device="cuda")
    g = torch.cuda.CUDAGraph()
    _found.clear()
    try:
        with torch.cuda.graph(g, capture_error_mode=mode):
            _watch[:] = [torch.cuda.current_stream().cuda_stream]
            cute_gemm.gemm(a, b, c, alpha=0.5, beta=2.0, out=o, precision=prec)
            cute_gemm.gemm(a, b, precision=prec)
            _watch.clear()
        print(f"{mode} {prec} {m}x{n}x{k}: captured")
    except Exception as e:  # noqa: BLE001
        _watch.clear()
        print(f"{mode} {prec} {m}x{n}x{k}: {type(e).__name__}: {str(e)[:200]}")
        for name, stack in _found:
            print(f"  first call after which the capture was invalidated: {name}\n{stack}")
        torch.cuda.synchronize()
