#!/usr/bin/env python3
"""Host µs per call of gemm() on PyTorch tensors beside torch.mm / torch.addmm on the same
tensors (cute_gemm.perf.timing.host_us: bursts the launch queue holds, no wait for the GPU),
for each launch path a PyTorch user meets: fp32 with out, without out, in place, tf32, bf16,
fp32_3xtf32 (gemm()'s answer, and cute_3xtf32 by name), and under autograd (forward only:
plain gemm(), cute_gemm.torch's mm, and a linear layer); plus what reading torch's current
stream costs.
Every call runs once first (compile, load, resolve). Median of 5 rounds, interleaved.

    python scripts/torch_host_cost.py [SIZE ...]     (default 16 1024)"""
from __future__ import annotations

import statistics
import sys

import torch

import cute_gemm
import cute_gemm.torch as cgt
from cute_gemm.perf.timing import host_us

sizes = [int(x) for x in sys.argv[1:]] or [16, 1024]


def _no_grad(f, *args):
    with torch.no_grad():
        return f(*args)


print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
cute_gemm.gemm(torch.ones(2, 2, device="cuda"), torch.ones(2, 2, device="cuda"))   # the context
t0 = host_us(lambda: torch.cuda.current_stream(0).cuda_stream, calls=20000)
print(f"torch.cuda.current_stream(0).cuda_stream: {t0:.2f} us")
t1 = host_us(lambda: torch._C._cuda_getCurrentRawStream(0), calls=20000)
print(f"torch._C._cuda_getCurrentRawStream(0): {t1:.2f} us")
for n in sizes:
    a, b, o = (torch.randn(n, n, device="cuda") for _ in range(3))
    h = [x.to(torch.bfloat16) for x in (a, b, o)]
    g = a.detach().clone().requires_grad_(True)
    w, bias = torch.nn.Parameter(b.detach().clone()), torch.nn.Parameter(o[0].detach().clone())
    cases = {
        "torch.mm(out)": lambda: torch.mm(a, b, out=o),
        "gemm fp32 out": lambda: cute_gemm.gemm(a, b, out=o),
        "torch.mm new": lambda: torch.mm(a, b),
        "gemm fp32 new": lambda: cute_gemm.gemm(a, b),
        "torch.addmm in place": lambda: torch.addmm(o, a, b, out=o),
        "gemm fp32 in place": lambda: cute_gemm.gemm(a, b, o, beta=1.0, out=o),
        "gemm tf32 out": lambda: cute_gemm.gemm(a, b, out=o, precision="tf32"),
        "torch.mm bf16 out": lambda: torch.mm(h[0], h[1], out=h[2]),
        "gemm bf16 out": lambda: cute_gemm.gemm(h[0], h[1], out=h[2]),
        "gemm fp32_3xtf32 out": lambda: cute_gemm.gemm(a, b, out=o, precision="fp32_3xtf32"),
        "cute_3xtf32 out": lambda: cute_gemm.run("cute_3xtf32", a, b, out=o,
                                                 precision="fp32_3xtf32"),
        "torch.mm autograd": lambda: torch.mm(g, b),
        "gemm autograd": lambda: cute_gemm.gemm(g, b),
        "cgt.mm autograd": lambda: cgt.mm(g, b),
        "F.linear autograd": lambda: torch.nn.functional.linear(a, w, bias),
        "cgt.linear autograd": lambda: cgt.linear(a, w, bias),
        "F.linear no_grad": lambda: _no_grad(torch.nn.functional.linear, a, w, bias),
        "cgt.linear no_grad": lambda: _no_grad(cgt.linear, a, w, bias),
    }
    for f in cases.values():
        f()
    cute_gemm.wait_for_compiles()
    for f in cases.values():
        f()
    torch.cuda.synchronize()
    got = {k: [] for k in cases}
    for _ in range(5):
        for k, f in cases.items():
            got[k].append(host_us(f, calls=600, burst=40))
    med = {k: statistics.median(v) for k, v in got.items()}
    peer = {"gemm fp32 out": "torch.mm(out)", "gemm fp32 new": "torch.mm new",
            "gemm fp32 in place": "torch.addmm in place", "gemm tf32 out": "torch.mm(out)",
            "gemm bf16 out": "torch.mm bf16 out", "gemm fp32_3xtf32 out": "torch.mm(out)",
            "cute_3xtf32 out": "torch.mm(out)",
            "gemm autograd": "torch.mm autograd", "cgt.mm autograd": "torch.mm autograd",
            "cgt.linear autograd": "F.linear autograd", "cgt.linear no_grad": "F.linear no_grad"}
    for k, v in med.items():
        ratio = f"  {v / med[peer[k]]:.2f}x {peer[k]}" if k in peer else ""
        print(f"{n:5d}^3 {k:24s} {v:7.2f} us{ratio}")
