#!/usr/bin/env python3
"""Tile sweep for cute_wgmma_ws on a linear layer's shapes, against cuBLAS in the same run.

Each spec registers one more configuration of kernels/cute/c6_wgmma_ws.cu for this process
(a WgmmaWsConfig beside the registered ones, built as they are); all are compiled side by
side, then y = x @ W^T (bf16, W of (out, in)) is timed for each token count M and layer,
plain and with bias + GELU(tanh) fused, against F.linear and F.gelu(F.linear) (kernel time:
events around one launch on a flushed L2, the flush's spin hiding the host; median).

  spec: NAME=BMxBN/STAGES[,key=value...]   keys: WgmmaWsConfig's integer fields
                                           (cluster_m, group_m, tail_split, consumer_regs ...;
                                           pingpong=1: a warpgroup's own BMxBN tiles)
  python3 scripts/sweep_wgmma_ws.py cute_wgmma_ws 'w256c1=128x256/4,cluster_m=1' \
      --tokens 296,612,2048 --layers 4096x11008,11008x4096
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import re
import statistics
from concurrent.futures import ProcessPoolExecutor

from cute_gemm import api, registry
from cute_gemm.build import cache
from cute_gemm.driver import launch
from cute_gemm.driver.epilogue import Epilogue
from cute_gemm.perf.timing import Flush, event_times, warm_up
from cute_gemm.registry import ladder_hopper

FUSED = "bias+gelu_tanh+bfloat16"      # the tag of the fused epilogue timed (EpilogueSpec.tag)
_SPEC = re.compile(r"^(\w+)=(\d+)x(\d+)/(\d+)((?:,\w+=\d+)*)$")


def parse_spec(text: str) -> registry.Kernel:
    m = _SPEC.match(text)
    if not m:
        raise SystemExit(f"bad spec {text!r}: NAME=BMxBN/STAGES[,key=value...]")
    name, bm, bn, stages, rest = m.groups()
    keys = {k: int(v) for k, v in (kv.split("=") for kv in rest.split(",") if kv)}
    keys["pingpong"] = bool(keys.get("pingpong", 0))      # (ping-pong: two warpgroups, any BM)
    keys.setdefault("consumers", 2 if keys["pingpong"] else int(bm) // 64)
    cfg = ladder_hopper.WgmmaWsConfig(blk_n=int(bn), stages=int(stages), blk_m=int(bm), **keys)
    return ladder_hopper._wgmma_ws(f"cute_wgmma_ws_{name}", cfg)


def _compile(name):
    try:
        k = registry.get(name)
        c = cache.get(k, k.archs[0])        # (sm_90a: wgmma and setmaxnreg)
        return name, c.compile_seconds, None
    except Exception as e:      # reported; the rest of the sweep goes on
        return name, None, str(e).splitlines()[0] if str(e) else repr(e)


def registered(items) -> list[str]:
    """The names of `items` (registered names, specs) as this script registers them: without
    a batch, with the one variant a linear layer launches."""
    names = []
    for item in items:
        k = parse_spec(item) if "=" in item else registry.get(item)
        if k.config.batched:     # (no batch here: without the _b twins, a third of the compile)
            k = ladder_hopper._wgmma_ws(k.name, dataclasses.replace(k.config, batched=False))
        # the one variant the layer launches (bf16 -> bf16, x k-major, W^T k-major): a compile
        # of it alone, its cut twin included, instead of the kernel's every entry (a fused
        # compile of three entries took 187 CPU seconds here, on a 2-core machine)
        k = dataclasses.replace(k, variants=tuple(
            v for v in k.variants if (v.precision, v.out_dtype, v.a_major, v.b_major)
            == ("bf16", "bfloat16", "k", "k")))
        if k.name not in registry._BY_NAME:
            registry.KERNELS = registry.KERNELS + (k,)
        registry._BY_NAME[k.name] = k
        names.append(k.name)
    return names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("items", nargs="+", help="registered kernel names and/or specs")
    p.add_argument("--tokens", default="296,612,2048")
    p.add_argument("--layers", default="4096x11008,11008x4096")
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--jobs", type=int, default=16)
    p.add_argument("--compile-only", action="store_true",
                   help="compile and stop: a cache built here (no GPU needed) travels to the GPU host")
    a = p.parse_args(argv)
    names = registered(a.items)
    import torch
    import torch.nn.functional as F
    jobs = names + [f"{n}:{FUSED}" for n in names]
    print(f"compiling {len(jobs)} kernels side by side (minutes cold: carry a cubin cache)", flush=True)
    with ProcessPoolExecutor(max_workers=min(a.jobs, len(jobs))) as pool:   # fork: sees the specs
        for name, secs, err in pool.map(_compile, jobs):
            print(f"{name}: compile FAILED: {err}" if err else f"{name}: compiled ({secs or 0:.0f} s)")
            if err and name.split(":")[0] in names:
                names.remove(name.split(":")[0])
    if a.compile_only:
        return 0
    cache.clear_memory()
    info = launch.device_info(0)
    flush = Flush(info.l2_bytes)
    warm_up(flush)
    gen = torch.Generator(device="cuda").manual_seed(1)

    def median_us(fn) -> float:
        fn(0)
        return 1e3 * statistics.median(event_times(fn, 1, flush, repeats=a.repeats, warmup=2))

    print(f"{'M':>6} {'layer':>12} {'side':<30} {'plain us':>9} {'fused us':>9} {'vs F.linear':>11} {'fused vs eager':>14}")
    for layer in a.layers.split(","):
        k_in, n_out = map(int, layer.split("x"))
        w = (torch.randn(n_out, k_in, generator=gen, device="cuda") / math.sqrt(k_in)).bfloat16()
        b = torch.randn(n_out, generator=gen, device="cuda").bfloat16()
        ep = Epilogue(bias=b, activation="gelu_tanh")
        for m in map(int, a.tokens.split(",")):
            x = torch.randn(m, k_in, generator=gen, device="cuda").bfloat16()
            y = torch.empty(m, n_out, device="cuda", dtype=torch.bfloat16)     # (the result: bf16)
            ref = F.gelu(F.linear(x.float(), w.float(), b.float()), approximate="tanh")
            lin = median_us(lambda _: F.linear(x, w))
            eager = median_us(lambda _: F.gelu(F.linear(x, w, b), approximate="tanh"))
            print(f"{m:>6} {layer:>12} {'torch':<30} {lin:>9.1f} {eager:>9.1f}")
            for name in names:
                try:
                    api.run(name, x, w.T, out=y, epilogue=ep)
                    err = float((y.float() - ref).abs().max() / ref.abs().max())
                    plain = median_us(lambda _: api.run(name, x, w.T, out=y))
                    fused = median_us(lambda _: api.run(name, x, w.T, out=y, epilogue=ep))
                except Exception as e:     # reported; the other kernels go on
                    print(f"{m:>6} {layer:>12} {name:<30} FAILED {str(e).splitlines()[0][:80]}")
                    continue
                flag = "" if err < 2e-2 else f"  WRONG (rel err {err:.2g})"
                print(f"{m:>6} {layer:>12} {name:<30} {plain:>9.1f} {fused:>9.1f} "
                      f"{lin / plain:>10.2f}x {eager / fused:>13.2f}x{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
