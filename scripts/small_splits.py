#!/usr/bin/env python3
"""Small 16-bit problems split along K on cute_mma_sm80_64x64's stream-K twins: the figures of
docs/design/cute_mma_sm80.md#a-splits-shares-meet-in-a-cluster-sm_90 and
docs/design/auto.md#small-splits. Needs a GPU and PyTorch.

    python scripts/small_splits.py cluster            # clusters against the workspace
    python scripts/small_splits.py draw [--seed S]    # random shapes: plain against each split
    python scripts/small_splits.py past [--seed S]    # 13-40 k-tiles: the walk against splits
    python scripts/small_splits.py rule [--seed S]    # gemm()'s heuristic where it splits

GPU time: CUDA events around one call after zeroing 256 MB (which evicts the L2 and keeps the
GPU busy while the host enqueues the call), median of 25 (40 for `cluster`); back to back:
200 calls between two events, L2 warm. One JSON object a line; the seed is printed first."""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import os
import statistics
import time

import numpy as np
import torch

os.environ.setdefault("CUTE_GEMM_TUNE", "off")       # the heuristic's picks, not first-use tuning
import cute_gemm  # noqa: E402
from cute_gemm import api, registry  # noqa: E402
from cute_gemm.driver import launch  # noqa: E402
from cute_gemm.select import auto  # noqa: E402
from cute_gemm.select.choice import Choice  # noqa: E402

SMALL = "cute_mma_sm80_64x64"
DRAWN_LAYOUTS = ("nn", "nt", "tn", "tt")      # (this order: the documented seeds' shapes)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# (kernel, split, M, N, K, layout, precision): the cluster table's rows
CLUSTER_CASES = [(SMALL, 4, 38, 42, 926, "nt", "bf16"), (SMALL, 4, 22, 174, 595, "tt", "fp16"),
                 (SMALL, 4, 64, 64, 4096, "nt", "bf16"), (SMALL, 8, 64, 64, 4096, "nt", "bf16"),
                 (SMALL, 2, 100, 300, 700, "nn", "bf16"), (SMALL, 8, 128, 192, 8192, "tn", "fp16"),
                 ("cute_pipelined", 4, 256, 256, 2048, "nn", "fp32"),
                 ("cute_pipelined", 8, 100, 130, 5000, "nt", "fp32")]


class Timer:
    def __init__(self):
        self.scrub = torch.empty(64 << 20, dtype=torch.int32, device="cuda")

    def gpu_us(self, fn, reps: int = 25) -> float:
        ts = []
        for _ in range(reps):
            self.scrub.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e) * 1e3)
        return round(statistics.median(ts), 2)

    @staticmethod
    def burst_us(fn, calls: int = 200) -> float:
        fn()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        return round(s.elapsed_time(e) * 1e3 / calls, 2)


def operands(m, n, k, layout, dtype):
    """A (M, K) and B (K, N) in `dtype`, each the transposed view of a row-major array where
    `layout` says "t"."""
    a = torch.randn((m, k) if layout[0] == "n" else (k, m), device="cuda").to(dtype)
    b = torch.randn((k, n) if layout[1] == "n" else (n, k), device="cuda").to(dtype)
    return (a if layout[0] == "n" else a.t()), (b if layout[1] == "n" else b.t())


def runner(key, a, b, out, precision):
    c = Choice.of_key(key, source="script")
    return lambda: api.run_choice(c, a, b, out=out, precision=precision)


def loguniform(rng, lo, hi) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def first_calls(calls) -> None:
    """Every call once, side by side (their compiles in parallel), then the compiles waited for."""
    with cf.ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda f: f(), calls))
    cute_gemm.wait_for_compiles()
    torch.cuda.synchronize()


def cluster(timer, args) -> None:
    for name, s, m, n, k, layout, p in CLUSTER_CASES:
        a, b = operands(m, n, k, layout, DTYPES[p])
        ref = a.double() @ b.double()
        gauge = (a.double().abs() @ b.double().abs()).max().item()
        got = {}
        for mode, key, env in (("cluster", f"{name}/splitk{s}", "1"), ("workspace", f"{name}/splitk{s}", "0"),
                               ("plain", name, "1"), ("torch", None, "1")):
            os.environ["CUTE_GEMM_CLUSTER_SPLIT"] = env
            cute_gemm.clear_caches()         # resolved launches keep what the variable said
            out = torch.full((m, n), float("nan"), dtype=DTYPES[p], device="cuda")
            fn = (lambda: torch.matmul(a, b, out=out)) if key is None else runner(key, a, b, out, p)
            fn()
            torch.cuda.synchronize()
            got[mode] = out.clone()
            plans = [q for q in cute_gemm.resolved_launches() if q.shape[2] == k]
            print(json.dumps({"case": f"{name} {m}x{n}x{k} {layout} {p}", "split": s, "mode": mode,
                              "cluster": max([q.cluster for q in plans] or [0]),
                              "gpu_us": timer.gpu_us(fn, 40), "back_to_back_us": timer.burst_us(fn),
                              "err_over_gauge": f"{(out.double() - ref).abs().max().item() / gauge:.2e}",
                              "bits_of_cluster": bool(torch.equal(got["cluster"], out))}), flush=True)


def draw(timer, args) -> None:
    """Random shapes, M and N in [8, 700], K in [64, 1600]: the plain launch against each split
    of at least 2 k-tiles a share."""
    rng, cases = np.random.default_rng(args.seed), []
    for _ in range(args.shapes):
        m, n, k = loguniform(rng, 8, 700), loguniform(rng, 8, 700), loguniform(rng, 64, 1600)
        layout = str(rng.choice(DRAWN_LAYOUTS))
        a, b = operands(m, n, k, layout, torch.bfloat16)
        out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
        keys = [SMALL] + [f"{SMALL}/splitk{s}" for s in (2, 3, 4, 6, 8) if -(-k // 64) >= 2 * s]
        cases.append(((m, n, k, layout), {key: runner(key, a, b, out, "bf16") for key in keys}))
    first_calls([f for _, fns in cases for f in fns.values()])
    for shape, fns in cases:
        row = dict(zip("mnk", shape[:3]), layout=shape[3])
        row.update({key.partition("/")[2] or "plain": timer.gpu_us(fn) for key, fn in fns.items()})
        print(json.dumps(row), flush=True)


def past(timer, args) -> None:
    """Random unaligned shapes of 13-40 k-tiles, C within 2 waves: the heuristic's pick (the
    walk on copies) against the two largest splits."""
    rng, cases, sms = np.random.default_rng(args.seed), [], launch.device_info().sm_count
    x = registry.get(SMALL)
    while len(cases) < args.shapes:
        m, n, k = loguniform(rng, 8, 900), loguniform(rng, 8, 900), loguniform(rng, 13 * 64, 40 * 64)
        k += k % 8 == 0                      # rows not 16-byte aligned: the TMA kernels copy
        if -(-m // 64) * -(-n // 64) > 2 * sms:
            continue
        layout = str(rng.choice(DRAWN_LAYOUTS))
        a, b = operands(m, n, k, layout, torch.bfloat16)
        out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
        fns = {"heuristic": lambda a=a, b=b, out=out: cute_gemm.gemm(a, b, out=out, precision="bf16")}
        for s in [s for s in auto.split_ks(x, m, n, k, sms) if s <= 8][-2:]:
            fns[f"s{s}"] = runner(f"{SMALL}/splitk{s}", a, b, out, "bf16")
        cases.append(((m, n, k, layout), fns))
    first_calls([f for _, fns in cases for f in fns.values()])
    for (m, n, k, layout), fns in cases:
        row = {"m": m, "n": n, "k": k, "layout": layout, "pick": cute_gemm.gemm_choice(
            m, n, k, layout=layout, precision="bf16", out_dtype="bfloat16", aligned=False).key}
        row.update({name: timer.gpu_us(fn) for name, fn in fns.items()})
        print(json.dumps(row), flush=True)


def rule(timer, args) -> None:
    """Random shapes where gemm()'s heuristic splits the small kernel's K: gemm() against the
    same kernel unsplit and torch, its result against float64."""
    rng, cases, dev = np.random.default_rng(args.seed), [], launch.device_info()
    while len(cases) < args.shapes:
        m, n, k = loguniform(rng, 8, 700), loguniform(rng, 8, 700), loguniform(rng, 400, 2600)
        layout = str(rng.choice(DRAWN_LAYOUTS))
        ch = cute_gemm.gemm_choice(m, n, k, layout=layout, precision="bf16", out_dtype="bfloat16",
                                   aligned=False, device=dev)
        if ch.split_k:
            a, b = operands(m, n, k, layout, torch.bfloat16)
            out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
            cases.append(((m, n, k, layout), ch, a, b, out))
    calls = {}
    for shape, ch, a, b, out in cases:
        calls[shape] = (lambda a=a, b=b, out=out: cute_gemm.gemm(a, b, out=out, precision="bf16"),
                        runner(ch.kernel, a, b, out, "bf16"),
                        lambda a=a, b=b, out=out: torch.matmul(a, b, out=out))
    first_calls([f for fs in calls.values() for f in fs[:2]])
    ratios = {"torch": [], "plain": []}
    for shape, ch, a, b, out in cases:
        g, plain, torch_mm = calls[shape]
        out.fill_(float("nan"))
        g()
        a64, b64 = a.double(), b.double()
        err = (out.double() - a64 @ b64).abs().max() / (a64.abs() @ b64.abs()).max()
        ran = sorted({(q.kernel, q.split_k, q.cluster) for q in cute_gemm.resolved_launches()
                      if q.shape[2] == shape[2] and q.kernel == ch.kernel})
        row = dict(zip("mnk", shape[:3]), layout=shape[3], split=ch.split_k, ran=ran,
                   err_over_gauge=f"{err.item():.1e}",
                   gemm=timer.gpu_us(g), plain=timer.gpu_us(plain), torch=timer.gpu_us(torch_mm))
        ratios["torch"].append(row["torch"] / row["gemm"])
        ratios["plain"].append(row["plain"] / row["gemm"])
        print(json.dumps(row), flush=True)
    for name, r in ratios.items():
        print(f"{name} / gemm(): geomean {math.exp(sum(map(math.log, r)) / len(r)):.3f}, min {min(r):.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("cluster", "draw", "past", "rule"))
    p.add_argument("--seed", type=int, default=None, help="the draw's seed (default: drawn, printed)")
    p.add_argument("--shapes", type=int, default=30)
    args = p.parse_args()
    args.seed = int(time.time_ns() % 100_000) if args.seed is None else args.seed
    print(f"seed {args.seed}; {torch.cuda.get_device_name()}; CUTE_GEMM_TUNE="
          f"{os.environ['CUTE_GEMM_TUNE']}", flush=True)
    {"cluster": cluster, "draw": draw, "past": past, "rule": rule}[args.what](Timer(), args)


if __name__ == "__main__":
    main()
