#!/usr/bin/env python3
"""8-bit float candidates one by one on random large shapes: each kernel (and its transposed
walk) against torch._scaled_mm, and what gemm()'s heuristic picks there (its regret against
the best). Needs a GPU and PyTorch.

    python scripts/fp8_tiles.py draw [--seed S] [--shapes N]   # the candidates on a draw
    python scripts/fp8_tiles.py once KEY M N K                  # KEY three times (for ncu)
    python scripts/fp8_tiles.py host                            # gemm() with scales: host, GPU

e4m3 x e4m3 -> bf16, A (M, K) and B the transpose of an (N, K) weight, as `cute-gemm bench
--size fp8` draws them (perf/fp8.py). GPU time: CUDA events around one call after zeroing
256 MB (L2 evicted), median of 9. One JSON object a line; the seed is printed first."""
from __future__ import annotations

import argparse
import math
import json
import os
import time

import torch

os.environ.setdefault("CUTE_GEMM_TUNE", "off")       # the heuristic's picks, not first-use tuning
import cute_gemm  # noqa: E402
from cute_gemm import api, registry  # noqa: E402
from cute_gemm.perf import fp8  # noqa: E402
from cute_gemm.select.choice import Choice  # noqa: E402

from small_splits import Timer, first_calls  # noqa: E402


def candidates() -> list[str]:
    """Every registered kernel computing e4m3 (gemm()'s candidates and those that may become
    one), as itself and transposed."""
    names = [k.name for k in registry.KERNELS if any(v.precision == "fp8_e4m3" for v in k.variants)]
    return [f"{n}{t}" for n in names for t in ("", ".T")]


def operands(m, n, k):
    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    return a, w, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)


def runner(key, a, w, out):
    c = Choice.of_key(key, source="script")
    return lambda: api.run_choice(c, a, w.T, out=out, precision="fp8_e4m3")


def draw(timer, args) -> None:
    keys, one = candidates(), torch.ones((), device="cuda")
    shapes = list(fp8.SQUARES) + fp8.draw(args.shapes, args.seed)
    cases = []
    for m, n, k in shapes:
        a, w, out = operands(m, n, k)
        pick = cute_gemm.gemm_choice(m, n, k, layout="nt", precision="fp8_e4m3", out_dtype="bfloat16")
        cases.append(((m, n, k), pick.key, a, w, out, {key: runner(key, a, w, out) for key in keys}))
    first_calls([f for case in cases for f in case[5].values()])
    best, picked = [], []
    for (m, n, k), pick, a, w, out, fns in cases:
        ref = (a.double() @ w.double().T)
        gauge = (a.double().abs() @ w.double().abs().T).max().item()
        times = {}
        for key, fn in fns.items():
            out.fill_(float("nan"))
            fn()
            err = (out.double() - ref).abs().max().item() / gauge
            times[key] = timer.gpu_us(fn, 9) if err < 2.0 ** -7 else float("nan")
        peer = timer.gpu_us(lambda: torch._scaled_mm(a, w.T, one, one, out_dtype=torch.bfloat16), 9)
        fastest = min((t, key) for key, t in times.items() if t == t)
        best.append(peer / fastest[0])
        picked.append(peer / times[pick])
        print(json.dumps({"m": m, "n": n, "k": k, "scaled_mm": peer, "pick": pick,
                          "pick_vs_scaled_mm": round(peer / times[pick], 3), "best": fastest[1],
                          "best_vs_scaled_mm": round(peer / fastest[0], 3), **times}), flush=True)
    for name, r in (("best candidate", best), ("heuristic's pick", picked)):
        print(f"{name} vs _scaled_mm: geomean {math.exp(sum(map(math.log, r)) / len(r)):.3f}, "
              f"min {min(r):.3f}")


def once(timer, args) -> None:
    m, n, k = args.mnk
    a, w, out = operands(m, n, k)
    fn = runner(args.key, a, w, out)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()


def host(timer, args) -> None:
    """gemm() with and without per-tensor scales against _scaled_mm: host µs a call (2,000
    calls of a 64x64x128 product queued, one synchronize), and GPU µs at 4096^3."""
    one = torch.ones((), device="cuda")
    for m, n, k in ((64, 64, 128), (4096, 4096, 4096)):
        a, w, out = operands(m, n, k)
        fns = {"gemm scaled": lambda: api.gemm(a, w.T, out=out, scale_a=one, scale_b=one),
               "gemm": lambda: api.gemm(a, w.T, out=out),
               "scaled_mm": lambda: torch._scaled_mm(a, w.T, one, one, out_dtype=torch.bfloat16)}
        first_calls(list(fns.values()))
        row = {"m": m, "n": n, "k": k}
        for name, fn in fns.items():
            if m == 64:
                fn()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(2000):
                    fn()
                torch.cuda.synchronize()
                row[f"{name} host"] = round((time.perf_counter() - t0) / 2000 * 1e6, 2)
            else:
                row[f"{name} gpu"] = timer.gpu_us(fn, 15)
        print(json.dumps(row), sorted({(q.kernel, q.entry) for q in cute_gemm.resolved_launches()}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    d = sub.add_parser("draw")
    d.add_argument("--seed", type=int, default=None, help="the draw's seed (default: drawn, printed)")
    d.add_argument("--shapes", type=int, default=8)
    o = sub.add_parser("once")
    o.add_argument("key")
    o.add_argument("mnk", type=int, nargs=3)
    sub.add_parser("host")
    args = p.parse_args()
    if args.what == "draw":
        args.seed = int(time.time_ns() % 2**31) if args.seed is None else args.seed
        print(f"seed {args.seed}; {torch.cuda.get_device_name()}", flush=True)
    {"draw": draw, "once": once, "host": host}[args.what](Timer(), args)


if __name__ == "__main__":
    main()
