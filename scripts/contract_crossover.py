#!/usr/bin/env python3
"""fp32_3xtf32's two answers on random shapes (docs/design/auto.md#accuracy-contracts):
gemm() in fp32 (its SIMT pick) and cute_3xtf32 by name, GPU ms per call (10 calls between
CUDA events after a warm call), and what gemm(precision="fp32_3xtf32") picks. Shapes: 2MNK
log-uniform in 2^28..2^39, each dimension in [8, 12288]; a fresh seed, printed.

    python scripts/contract_crossover.py [N]        (default 24 shapes; needs PyTorch)"""
import math
import os
import random
import sys

import torch

import cute_gemm

seed = int.from_bytes(os.urandom(4), "little")
rng = random.Random(seed)
print("seed", seed)
def draw(lo, hi):
    while True:
        f = rng.uniform(lo, hi)
        x = [rng.random() for _ in range(3)]; s = sum(x)
        m, n, k = (max(8, round(2 ** ((f - 1) * xi / s))) for xi in x)
        if max(m, n, k) <= 12288:
            return m, n, k
shapes = [draw(28, 39) for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 24)]
shapes.sort(key=lambda s: s[0] * s[1] * s[2])
def t(f, reps=10):
    f(); torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(reps): f()
    e1.record(); torch.cuda.synchronize()
    return e0.elapsed_time(e1) / reps
print(f"{'shape':>20} {'log2flop':>8} {'fp32 ms':>9} {'3x ms':>9} {'3x/fp32':>8}  pick")
for m, n, k in shapes:
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    o = torch.empty(m, n, device="cuda")
    f32 = t(lambda: cute_gemm.gemm(a, b, out=o, precision="fp32"))
    x3 = t(lambda: cute_gemm.run("cute_3xtf32", a, b, out=o, precision="fp32_3xtf32"))
    c = cute_gemm.gemm_choice(m, n, k, precision="fp32_3xtf32")
    print(f"{m:>6}x{n:>6}x{k:>6} {math.log2(2*m*n*k):8.2f} {f32:9.4f} {x3:9.4f} {x3/f32:8.2f}  {c.kernel}{' in ' + c.precision if c.precision else ''}", flush=True)
