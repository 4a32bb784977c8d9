#!/usr/bin/env python3
"""Host-side launch policies on a GPU, against cuBLAS in the same process.

Kernel.transpose_skinny (compute C^T = B^T A^T where N is skinny) changes which entry
runs, not the cubin: each setting here re-registers the kernels with it under their own
names, clears the resolved launches and benchmarks them again, each table with its own
cuBLAS column (the same process, seconds apart). (Stream-K run lengths were probed
the same way: docs/design/cute_pipelined.md#skinny.)

  python3 scripts/sweep_transpose.py cute_pipelined_64x128x16_sk --transpose 1,0 \\
      --size 8192x64x4096 --max-seconds 0.4
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

import cute_gemm
from cute_gemm import registry
from cute_gemm.perf.report import format_table
from cute_gemm.perf.runner import bench


def replace(name: str, **fields) -> None:
    """Re-register kernel `name` with other Kernel fields (same name, same cubins)."""
    k = dataclasses.replace(registry.get(name), **fields)
    registry.KERNELS = tuple(k if x.name == name else x for x in registry.KERNELS)
    registry._BY_NAME[name] = k


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernels", nargs="+", help="registered kernel names")
    p.add_argument("--transpose", default="", help="comma-separated 0/1 transpose_skinny to try")
    p.add_argument("--size", action="append", default=None)
    p.add_argument("--layouts", default="nn")
    p.add_argument("--max-seconds", type=float, default=0.4)
    a = p.parse_args(argv)
    settings = [("transpose_skinny", v == "1") for v in a.transpose.split(",") if v]
    ok = True
    for field, value in settings or [(None, None)]:
        for name in a.kernels:
            if field:
                replace(name, **{field: value})
        cute_gemm.clear_caches()
        res = bench(a.kernels, a.size or ["256"], layouts=a.layouts, max_seconds=a.max_seconds,
                    plots=False, progress=False)
        print(f"\n== {field} = {value}" if field else "\n== as registered")
        print(format_table(res))
        ok = ok and res.ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
