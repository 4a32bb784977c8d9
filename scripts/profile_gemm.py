#!/usr/bin/env python3
"""Launch one GEMM a few times on device arrays, for a profiler (ncu, nsys) to catch.

  python3 scripts/profile_gemm.py cute_pipelined --size 4096 --layout nt --iters 5
  python3 scripts/profile_gemm.py cublas --size 4096           (torch.mm, TF32 off)

ncu, for example (clocks left to the GPU as in the benchmark; CUTE_GEMM_LINEINFO=1 for source lines):
  CUTE_GEMM_LINEINFO=1 ncu --clock-control none -k regex:cute_pipelined --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats python3 scripts/profile_gemm.py ...
"""
from __future__ import annotations

import argparse

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("kernel", help="registered kernel name, a sweep spec (NAME=BMxBNxBK/STAGES,"
                   "..., see sweep_pipelined.py), or 'cublas'")
    p.add_argument("--size", default="4096", help="N or MxNxK")
    p.add_argument("--layout", default="nn", help="nn, tn, nt, tt (t: transposed view)")
    p.add_argument("--iters", type=int, default=5)
    a = p.parse_args()
    dims = [int(x) for x in a.size.split("x")]
    m, n, k = dims * 3 if len(dims) == 1 else dims
    rng = np.random.default_rng()
    ha = rng.standard_normal((k, m) if a.layout[0] == "t" else (m, k), dtype=np.float32)
    hb = rng.standard_normal((n, k) if a.layout[1] == "t" else (k, n), dtype=np.float32)
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    da, db = torch.from_numpy(ha).cuda(), torch.from_numpy(hb).cuda()
    if a.layout[0] == "t":
        da = da.t()
    if a.layout[1] == "t":
        db = db.t()
    out = torch.empty((m, n), device="cuda", dtype=torch.float32)
    if a.kernel == "cublas":
        for _ in range(a.iters):
            torch.mm(da, db, out=out)
    else:
        import cute_gemm
        if "=" in a.kernel:
            import os
            import sys
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import sweep_pipelined
            k = sweep_pipelined.parse_spec(a.kernel)
            sweep_pipelined.register(k)
            a.kernel = k.name
        for _ in range(a.iters):
            cute_gemm.run(a.kernel, da, db, out=out)
    torch.cuda.synchronize()
    ref = ha.T if a.layout[0] == "t" else ha
    refb = hb.T if a.layout[1] == "t" else hb
    i, j = rng.integers(0, m), rng.integers(0, n)
    want = float(np.dot(ref[i].astype(np.float64), refb[:, j].astype(np.float64)))
    print(f"{a.kernel} {m}x{n}x{k} {a.layout}: C[{i},{j}] = {out[i, j].item():.5f}, float64 {want:.5f}")


if __name__ == "__main__":
    main()
