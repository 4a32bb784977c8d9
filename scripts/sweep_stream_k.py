#!/usr/bin/env python3
"""Stream-K run lengths and transposition on a GPU, against cuBLAS in the same process.

Kernel.stream_k_min_iters (the fewest k-tiles a stream-K run takes) and
Kernel.transpose_skinny (compute C^T = B^T A^T where N is skinny) are host-side policies:
the cubins stay the same, so each setting here replaces the registered kernels' records
under their own names, clears the resolved launches and benchmarks them again. Each
setting's table is printed with its cuBLAS column (the same process, minutes apart).

  python3 scripts/sweep_stream_k.py cute_pipelined cute_pipelined_64x64x8_sk \\
      --min-iters 8,4,2 --size 256 --size 512 --max-seconds 0.4
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
    p.add_argument("--min-iters", default="", help="comma-separated stream_k_min_iters to try")
    p.add_argument("--transpose", default="", help="comma-separated 0/1 transpose_skinny to try")
    p.add_argument("--size", action="append", default=None)
    p.add_argument("--layouts", default="nn")
    p.add_argument("--max-seconds", type=float, default=0.4)
    a = p.parse_args(argv)
    settings = ([("stream_k_min_iters", int(v)) for v in a.min_iters.split(",") if v]
                + [("transpose_skinny", v == "1") for v in a.transpose.split(",") if v])
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
