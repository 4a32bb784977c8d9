#!/usr/bin/env python3
"""Tile/pipeline sweep for cute_pipelined on a GPU, against cuBLAS in the same run.

Each spec registers one more configuration of kernels/cute/c3_pipelined.cu (the same
source, another ladder_cute.PipelinedConfig, built by ladder_cute._pipe exactly like the
registered ones)
for this process only, next to the registered kernels named on the command line; all of
them are compiled in parallel (one process per configuration), their register and spill
figures printed, then checked and timed by `cute-gemm bench`.

  spec: NAME=BMxBNxBK/STAGES[,key=value...]   keys: the PipelinedConfig fields (thr_m
                                              thr_n min_blocks min_blocks_mn fma_order
                                              fma_order_raw load1_k stash0_k stash_k
                                              trans_k kq_layout kt_unroll stream_k raw_k (0/1)
                                              epi_ak_bk epi_ak_bn (scalar/smem16/bulk))
                                              smem (bytes; experiments: too small for _ak_bk)
                                              rul (ptxas --register-usage-level 0-10)
                                              opt (other compiler settings, _OPTS)
  python3 scripts/sweep_pipelined.py cute_pipelined \
      'p256=256x128x8/4,min_blocks=1' --size 4096 --layouts nn,nt

With --tune the specs become gemm() candidates for this process and `cute-gemm tune` times
them, with every registered candidate (or those named on the command line), as given and
transposed and with their split_k launches: the table it writes (--out, a file) shows where
a configuration would win, measured the way the shipped tables are.

  python3 scripts/sweep_pipelined.py --tune --out probe.json cute_pipelined_64x32x16_sk \
      'p128x32=128x32x16/4,thr_m=16,thr_n=8,min_blocks=4,stream_k=1' --size 512 --size 8192x32x4096
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from concurrent.futures import ProcessPoolExecutor

from cute_gemm import registry
from cute_gemm.build import cache
from cute_gemm.driver import launch
from cute_gemm.registry import ladder_cute
from cute_gemm.select import auto
from cute_gemm.build import compile as comp
from cute_gemm.perf.report import format_table
from cute_gemm.perf.runner import bench

_SPEC = re.compile(r"^(\w+)=(\d+)x(\d+)x(\d+)/(\d+)((?:,\w+=\w+)*)$")


# opt=N: NVRTC / ptxas settings other than the defaults (the schedule ptxas picks for
# the 128-register entries moves their speed by several per cent)
_OPTS = {
    1: ("--extra-device-vectorization",),
    2: ("--ptxas-options=-O2",),
    3: ("--ptxas-options=--allow-expensive-optimizations=false",),
    4: ("--ptxas-options=-O1",),
}


def parse_spec(text: str) -> registry.Kernel:
    m = _SPEC.match(text)
    if not m:
        raise SystemExit(f"bad spec {text!r}: NAME=BMxBNxBK/STAGES[,key=value...]")
    name, bm, bn, bk, st, rest = m.groups()
    kw = {k: v if k.startswith("epi_") else int(v)
          for k, v in (kv.split("=") for kv in rest.split(",") if kv)}
    for f in dataclasses.fields(ladder_cute.PipelinedConfig):   # 0/1 for the bool fields
        if f.name in kw and f.type in (bool, "bool"):
            kw[f.name] = bool(kw[f.name])
    smem = kw.pop("smem", None)
    rul = kw.pop("rul", None)
    opt = kw.pop("opt", None)
    cfg = ladder_cute.PipelinedConfig(int(bm), int(bn), int(bk), int(st), **kw)
    k = ladder_cute._pipe(name, cfg)
    if rul is not None:   # ptxas --register-usage-level (0-10)
        k = dataclasses.replace(k, options=(f"--ptxas-options=--register-usage-level={rul}",))
    if opt is not None:   # other compiler settings (_OPTS)
        k = dataclasses.replace(k, options=k.options + _OPTS[opt])
    if smem is not None:   # experiments only: less than the both-k-major entry needs
        k = dataclasses.replace(k, dyn_smem=registry.FixedSmem(smem))
    return k


def register(k: registry.Kernel) -> None:
    if k.name in registry._BY_NAME:
        raise SystemExit(f"{k.name!r} is already registered")
    registry.KERNELS = registry.KERNELS + (k,)
    registry._BY_NAME[k.name] = k


def _compile(job):
    name, arch = job
    try:
        c = cache.get(registry.get(name), arch)
        return name, c.compile_seconds, c.log, None
    except Exception as e:   # reported, the rest of the sweep goes on
        return name, None, "", str(e).splitlines()[0] if str(e) else repr(e)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("items", nargs="+", help="registered kernel names and/or specs")
    p.add_argument("--size", action="append", default=None)
    p.add_argument("--layouts", default="nn")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--jobs", type=int, default=16)
    p.add_argument("--out")
    p.add_argument("--tune", action="store_true",
                   help="time the specs as gemm() candidates with cute-gemm tune (--out: the table)")
    a = p.parse_args(argv)
    names, specs = [], []
    for item in a.items:
        if "=" in item:
            k = parse_spec(item)
            if a.tune:
                k = dataclasses.replace(k, tags=k.tags + (auto.TAG,))
            register(k)
            specs.append(k.name)
            names.append(k.name)
        else:
            names.append(registry.get(item).name)
    arch = comp.normalize_arch(launch.device_info().arch)
    with ProcessPoolExecutor(max_workers=min(a.jobs, len(names))) as pool:   # fork: sees the specs
        for name, secs, _log, err in pool.map(_compile, [(n, arch) for n in names]):
            if err:
                print(f"{name}: compile FAILED: {err}")
                names.remove(name)
            else:
                print(f"{name}: compiled in {secs:.1f} s" if secs else f"{name}: cached")
    cache.clear_memory()
    for name in names:
        c = cache.get(registry.get(name), arch)
        k = registry.get(name)
        print(f"{name:<28} tile {k.tile} config {k.config} smem {k.dyn_smem(1, 1, 1)}")
        for entry in k.entries:
            r = c.resources.get(entry)
            if r is not None:
                print(f"    {entry:<30} regs {r.registers:>4} stack {r.stack_bytes:>4} "
                      f"spills {r.spill_stores}/{r.spill_loads}")
    if a.tune:
        return _tune(names, specs, a)
    res = bench(names, a.size or ["4096"], layouts=a.layouts, repeats=a.repeats,
                out_dir=a.out, plots=False, progress=False)
    print(format_table(res))
    return 0 if res.ok else 1


def _tune(names: list[str], specs: list[str], a) -> int:
    """The specs as gemm()'s candidates beside the registered ones (only those named, where
    any is), timed by cute-gemm tune into the table a.out (its cubins compiled above, in
    forked processes that know the specs: tune's own spawned compiles would not)."""
    from cute_gemm.perf import tune
    if set(names) - set(specs):
        keep = set(names)
        registry.KERNELS = tuple(k for k in registry.KERNELS
                                 if auto.TAG not in k.tags or k.name in keep)
    table, path, left = tune.tune(a.size or ["sweep"], layouts=a.layouts,
                                  out=a.out or "sweep_tune.json", fresh=True)
    print(tune.format_table(table, path))
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
