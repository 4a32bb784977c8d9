"""Cold NVRTC compile time of whole kernels against a selection of their entry points (no
cache), with NVRTC's own phases (--time). The figures in docs/design/first_call.md.

    python scripts/time_entries.py cute_pipelined:cute_pipelined_ak_bn cute_smem:cute_smem_ak_bn \
        cute_wgmma_ws:cute_wgmma_ws_bf16_f32_ak_bn [--arch sm_90] [--repeats 1] [--json]

KERNEL alone times the whole kernel only; KERNEL:E1,E2 times the whole kernel and the
selection E1,E2. CPU seconds are the process's (NVRTC runs in it), a steadier figure than
wall seconds on a shared machine.

    python scripts/time_entries.py --launch cute_pipelined:cute_pipelined_ak_bn [--arch sm_90]

Cold means cold: the driver's compute cache is off (CUDA_CACHE_DISABLE=1, children
included), since NVRTC 13 keeps its optimizer's and ptxas's output there where a driver
is installed, and a repeat compile would skip both phases.

--launch KERNEL:ENTRY times what the first launch of that entry point compiles
(resolve.launch_entries: with its stream-K twin and head), through Loaded.cubin_of into a
fresh disk cache, both ways: each entry point alone in processes side by side
(cache.compile_apart) and as one program; wall seconds, and CPU seconds of this process
and its children.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import tempfile
import time

os.environ["CUDA_CACHE_DISABLE"] = "1"     # (before NVRTC is loaded: see the docstring)

from cute_gemm import registry  # noqa: E402
from cute_gemm.build import compile as comp


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _phases(path: str) -> dict[str, float]:
    """NVRTC's --time CSV (file, phase name, metric, unit: one row per phase, in ms) as
    phase -> seconds."""
    out: dict[str, float] = {}
    with open(path, newline="") as f:
        for row in csv.reader(f, skipinitialspace=True):     # (a header row where NVRTC writes one)
            if len(row) >= 4 and row[3] == "ms":
                out[row[1]] = out.get(row[1], 0.0) + float(row[2]) / 1000
    return out


def _target(k, arch: str) -> str:
    """`arch` as NVRTC compiles `k` for it (sm_90 -> sm_90a for an arch-specific kernel)."""
    arch = comp.normalize_arch(arch)
    return arch + "a" if k.arch_specific and not arch.endswith("a") else arch


def time_one(k, arch: str, entries) -> dict:
    arch = _target(k, arch)
    sel = comp.select_entries(k, entries)
    fd, tpath = tempfile.mkstemp(suffix=".csv")
    os.close(fd)
    try:
        opts = comp.options(k, arch, (f"--time={tpath}",))
        w0, c0 = time.perf_counter(), _cpu()
        comp.run_nvrtc(k, comp.read_source(k, sel), opts, want_ptx=False)
        wall, cpu = time.perf_counter() - w0, _cpu() - c0
        phases = _phases(tpath)
    finally:
        os.unlink(tpath)
    return {"kernel": k.name, "arch": arch, "entries": list(sel or k.entries), "whole": sel is None,
            "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "phases_s": {p: round(s, 2) for p, s in phases.items()}}


def time_launch(k, arch: str, entry: str) -> dict:
    from cute_gemm.build import cache
    from cute_gemm.plan import resolve
    arch = _target(k, arch)
    variant = next(v for v in k.variants if v.entry == entry)
    group = resolve.launch_entries(k, variant, stream_k=True)
    out = {"kernel": k.name, "arch": arch, "entries": list(group)}
    apart, before = cache.compile_apart, os.environ.get("CUTE_GEMM_CACHE_DIR")
    try:
        for how in ("apart", "one program"):
            with tempfile.TemporaryDirectory() as d:
                os.environ["CUTE_GEMM_CACHE_DIR"] = d
                cache.clear_memory()
                cache.compile_apart = apart if how == "apart" else (lambda *a: None)
                lk = resolve.Loaded(k, 0, arch, 232448, 132)    # no device: compiles only
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                w0, c0 = time.perf_counter(), _cpu()
                lk.cubin_of(entry, group)
                wall, cpu = time.perf_counter() - w0, _cpu() - c0
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu += (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
                assert all(e in lk.cubins for e in group)
                out[how] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
    finally:
        cache.compile_apart = apart
        if before is None:
            os.environ.pop("CUTE_GEMM_CACHE_DIR", None)
        else:
            os.environ["CUTE_GEMM_CACHE_DIR"] = before
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+", metavar="KERNEL[:ENTRY,...]")
    ap.add_argument("--launch", action="store_true",
                    help="specs are KERNEL:ENTRY: time that launch's compile, apart and as one")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for spec in args.specs:
        name, _, sel = spec.partition(":")
        k = registry.get(name)
        if args.launch:
            for _ in range(args.repeats):
                r = time_launch(k, args.arch, sel)
                rows.append(r)
                if not args.json:
                    print(f"{r['kernel']} {r['arch']} {','.join(r['entries'])}: "
                          + "; ".join(f"{h} wall {r[h]['wall_s']:.2f} s, cpu {r[h]['cpu_s']:.2f} s"
                                      for h in ("apart", "one program")), flush=True)
            continue
        for entries in [None] + ([tuple(sel.split(","))] if sel else []):
            for _ in range(args.repeats):
                r = time_one(k, args.arch, entries)
                rows.append(r)
                if not args.json:
                    what = "whole" if r["whole"] else ",".join(r["entries"])
                    ph = "  ".join(f"{p} {s:.2f}" for p, s in r["phases_s"].items())
                    print(f"{r['kernel']:<16} {r['arch']:<7} {len(r['entries']):>3} entr. "
                          f"wall {r['wall_s']:6.2f} s  cpu {r['cpu_s']:6.2f} s  {what}\n    {ph}",
                          flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
