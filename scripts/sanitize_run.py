#!/usr/bin/env python3
"""The workload that scripts/sanitize.sh runs under compute-sanitizer: cross_check of the
chosen kernels (default: every registered one) on odd and tile-sized shapes in all four
operand layouts, with beta != 0, plus cute_pipelined's stream-K launches (grids smaller
than a wave, one tile cut 16 ways) and a split launch (whole waves data-parallel, then the
stream-K twin), so every entry point and both halves of the residue handling run.

Exit status 0 only when every check passed and every stream-K path named above ran;
the sanitizer's own verdict comes from its exit code (--error-exitcode in sanitize.sh).

    python3 scripts/sanitize_run.py [--quick] [--kernels a,b,...]
"""
from __future__ import annotations

import argparse
import sys

from cute_gemm import api, check, launch, registry

# odd extents (every residue path, the 4-byte fallbacks), one exact tile, tall/thin ones
SHAPES = [(1, 1, 1), (37, 45, 29), (128, 128, 64), (130, 259, 70), (1, 300, 17), (300, 1, 33)]
QUICK = [(37, 45, 29), (130, 259, 70)]
# stream-K (multiples of 4: the vector entries, which have the twins): less than a wave,
# and one tile whose 128 k-tiles are cut between 16 CTAs
SK_SHAPES = [(200, 4, 300), (4, 4, 2048)]


def split_shape() -> tuple[int, int, int]:
    """A shape whose tile count passes one wave of cute_pipelined on this GPU (a split
    launch: tile0 > 0), small in K to keep the sanitizer's run short."""
    k = registry.get("cute_pipelined")
    bm, bn, _ = k.tile
    slots = launch.device_info().sm_count * dict(k.defines)["MIN_BLOCKS"]
    tiles_n = 16
    tiles_m = slots // tiles_n + 2
    return tiles_m * bm - 4, tiles_n * bn - 4, 256


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer shapes (racecheck is slow)")
    p.add_argument("--kernels", help="comma-separated kernel names (default: all)")
    a = p.parse_args(argv)
    kernels = a.kernels.split(",") if a.kernels else [k.name for k in registry.kernels()]
    shapes = QUICK if a.quick else SHAPES
    ok = True
    for lay in (("n", "n"), ("t", "n"), ("n", "t"), ("t", "t")):
        rep = check.cross_check(kernels=kernels, shapes=shapes, layouts=lay, beta=-0.5, seed=7)
        sk_shapes = SK_SHAPES + ([] if a.quick else [split_shape()])
        rep_sk = check.cross_check(kernels=["cute_pipelined"], shapes=sk_shapes, layouts=lay,
                                   beta=-0.5, seed=8)
        fails = rep.failures + rep_sk.failures
        ran = {s: api._stream_k_used("cute_pipelined", *s, split=s not in SK_SHAPES)
               for s in sk_shapes}
        print(f"layouts {''.join(lay)}: {len(kernels)} kernels x {len(shapes)} shapes, "
              f"stream-K {sum(ran.values())}/{len(ran)} taken, {len(fails)} failures", flush=True)
        for shape, r in fails:
            print(f"   FAIL {shape} {r}")
        for s, took in ran.items():
            if not took:
                print(f"   stream-K path not taken at {s}")
        ok = ok and not fails and all(ran.values())
    print("sanitize workload:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
