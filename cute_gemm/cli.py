"""The `cute-gemm` command line: list, run, check, compile, cache (bench, layouts when present)."""
from __future__ import annotations

import argparse
import json
import sys


from . import cache, registry
from .errors import CuteGemmError


def _cmd_list(args) -> int:
    ks = registry.kernels(args.family)
    w = max([22] + [len(k.name) + 2 for k in ks])
    print(f"{'name':<{w}}{'family':<13}{'tile':<14}{'threads':>8}  {'seed':<38}summary")
    for k in ks:
        tile = "x".join(map(str, k.tile)) if k.tile else "-"
        print(f"{k.name:<{w}}{k.family:<13}{tile:<14}{k.threads:>8}  {k.seed:<38}{k.summary}")
    return 0


def _cmd_compile(args) -> int:
    from . import compile as comp
    names = registry.names() if args.all or not args.kernels else args.kernels
    archs = args.arch or [None]
    if archs == [None]:
        from . import launch
        if not launch.available():
            print("no GPU: pass --arch (e.g. --arch sm_90) to compile without one", file=sys.stderr)
            return 2
        archs = [launch.device_info().arch]
    if args.jobs > 1 and cache.disk_enabled():
        _compile_parallel([(n, comp.normalize_arch(a)) for a in archs for n in names], args.jobs)
    print(f"{'kernel':<26}{'arch':<7}{'origin':<9}{'secs':>6}  {'entry':<30}{'regs':>5}{'smem':>7}{'stack':>6}{'spill st/ld':>12}")
    rc = 0
    for arch in archs:
        arch = comp.normalize_arch(arch)
        for name in names:
            k = registry.get(name)
            try:
                c = cache.get(k, arch)
            except CuteGemmError as e:
                print(f"{name:<26}{arch:<7}FAILED\n{e}", file=sys.stderr)
                rc = 1
                continue
            res = c.resources
            for entry in k.entries:
                r = res.get(entry)
                if r is None:
                    print(f"{name:<26}{arch:<7}{c.origin:<9}{c.compile_seconds:>6.1f}  {entry:<30}{'?':>5}")
                    continue
                print(f"{name:<26}{arch:<7}{c.origin:<9}{c.compile_seconds:>6.1f}  {entry:<30}{r.registers:>5}"
                      f"{r.smem_bytes:>7}{r.stack_bytes:>6}" + (f"{r.spill_stores:>6}/{r.spill_loads:<5}" if r.spill_stores >= 0 else "   n/a (ELF)"))
    return rc


def _compile_one(job):
    name, arch = job
    try:
        c = cache.get(registry.get(name), arch)
        return name, arch, c.origin, c.compile_seconds, None
    except CuteGemmError as e:
        return name, arch, "failed", 0.0, str(e)


def _compile_parallel(jobs, workers: int) -> None:
    """Fill the disk cache with a process pool (NVRTC holds the GIL-free work per process);
    the table that follows then reads every entry back from disk."""
    from concurrent.futures import ProcessPoolExecutor
    import time
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(_compile_one, jobs))
    fresh = [d for d in done if d[2] == "compiled"]
    print(f"compiled {len(fresh)} of {len(jobs)} (kernel, arch) pairs in {time.perf_counter() - t0:.1f} s "
          f"with {workers} processes (the rest were cached)")
    cache.clear_memory()


def _cmd_cache(args) -> int:
    if args.action == "clear":
        n = cache.clear()
        print(f"removed {n} cached cubins from {cache.cache_dir()}")
        return 0
    info = cache.info()
    for k, v in info.items():
        print(f"{k:<16}{v}")
    return 0


def _cmd_check(args) -> int:
    from .check import cross_check
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shape] if args.shape else None
    rep = cross_check(kernels=args.kernels or None, shapes=shapes, seed=args.seed,
                      alpha=args.alpha, beta=args.beta, exact=args.exact,
                      layouts=tuple(args.layout))
    print(rep.table())
    return 0 if rep.ok else 1


def _cmd_run(args) -> int:
    from .timing import time_kernel
    r = time_kernel(args.name, args.m, args.n, args.k, repeats=args.repeats, seed=args.seed)
    print(json.dumps(r, indent=2) if args.json else
          f"{args.name}: M={args.m} N={args.n} K={args.k}  median {r['ms']:.3f} ms  "
          f"{r['tflops']:.2f} TFLOP/s  gauge ratio {r['gauge_ratio']:.3g} ({r['status']})")
    return 0 if r["status"] == "pass" else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="cute-gemm", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("list", help="list registered kernels")
    s.add_argument("--family", choices=("handwritten", "cute"))
    s.set_defaults(fn=_cmd_list)

    s = sub.add_parser("run", help="time one kernel on one shape (and check it)")
    s.add_argument("name")
    s.add_argument("--m", type=int, default=4096)
    s.add_argument("--n", type=int, default=4096)
    s.add_argument("--k", type=int, default=4096)
    s.add_argument("--repeats", type=int, default=20)
    s.add_argument("--seed", type=int)
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=_cmd_run)

    s = sub.add_parser("check", help="cross-check kernels against float64 and each other")
    s.add_argument("kernels", nargs="*")
    s.add_argument("--shape", action="append", help="MxNxK, repeatable")
    s.add_argument("--alpha", type=float, default=1.0)
    s.add_argument("--beta", type=float, default=0.0)
    s.add_argument("--exact", action="store_true", help="small-integer inputs, bitwise agreement")
    s.add_argument("--layout", nargs=2, default=["n", "n"], choices=("n", "t"),
                   help="pass A / B as transposed views (t)")
    s.add_argument("--seed", type=int)
    s.set_defaults(fn=_cmd_check)

    s = sub.add_parser("compile", help="compile kernels (no GPU needed with --arch)")
    s.add_argument("kernels", nargs="*")
    s.add_argument("--all", action="store_true")
    s.add_argument("--arch", action="append", help="sm_80, sm_90 ... (repeatable)")
    s.add_argument("--jobs", type=int, default=1, help="compile in parallel processes")
    s.set_defaults(fn=_cmd_compile)

    s = sub.add_parser("cache", help="show or clear the cubin cache")
    s.add_argument("action", choices=("info", "clear"), nargs="?", default="info")
    s.set_defaults(fn=_cmd_cache)

    for extra in ("bench", "layouts"):
        try:
            mod = __import__(f"cute_gemm.{extra}_cli", fromlist=["register"])
        except ImportError:
            continue
        mod.register(sub)

    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except CuteGemmError as e:
        print(f"cute-gemm: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:   # `cute-gemm list | head`: the reader left; not an error
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
