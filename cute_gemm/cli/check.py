"""`cute-gemm check`: with a GPU, every kernel against a float64 reference and each other; without
one, what a CPU can check (compiles, registers, spills, layout self-checks) and what was not run."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .. import check, registry
from ..select import auto
from . import base, compile as compile_cli
from ..build import cache, compile as comp
from ..driver import launch
from .base import (DEFAULT_ARCH, add_jobs_progress, arch_name, error, finite_float, kernel_or_auto,
                   nonneg_int, shape_mnk, show)
from .compile import compile_table, format_table, kernel_of, report_failures, resource_problems, rows
from .layouts import self_check_all


def register(sub) -> None:
    s = sub.add_parser(
        "check", help="cross-check kernels on the GPU; without one, compile them and check their resources and "
                      "layouts",
        description="With a GPU: every kernel against a float64 reference and against each other. Without one (or "
                    "with --no-gpu): compile for --arch one entry point per kernel source (one per kernel named; "
                    "with a GPU, also what gemm()'s picks launch on it), check registers and spills, run the "
                    "layout self-checks, and say what was not run and what --all adds.")
    s.add_argument("kernels", nargs="*", type=kernel_or_auto, metavar="KERNEL",
                   help="kernels to check, auto for gemm()'s choice (default: all, and auto)")
    s.add_argument("--kernels", dest="kernel_list", nargs="+", type=kernel_or_auto, metavar="KERNEL",
                   help="the same as naming them positionally")
    s.add_argument("--shape", action="append", type=shape_mnk, metavar="MxNxK", help="problem shape, "
                   f"repeatable (default: {', '.join('x'.join(map(str, d)) for d in check.DEFAULT_SHAPES)})")
    s.add_argument("--alpha", type=finite_float, default=1.0, help="C = alpha A B + beta C (default 1)")
    s.add_argument("--beta", type=finite_float, default=0.0, help="(default 0: C is not read)")
    s.add_argument("--exact", action="store_true", help="small-integer inputs, bitwise agreement")
    s.add_argument("--layout", default="nn", choices=registry.LAYOUTS,
                   help="op(A) op(B): t passes that operand as a transposed view (default nn)")
    s.add_argument("--seed", type=nonneg_int, help="seed of the random inputs (default: fresh)")
    s.add_argument("--arch", type=arch_name, help=f"without a GPU: the arch to compile for (default {DEFAULT_ARCH})")
    s.add_argument("--no-gpu", action="store_true", help="only the checks that need no GPU, even with one")
    s.add_argument("--all", action="store_true",
                   help="without a GPU: compile every entry point of every kernel (~25 CPU-minutes of NVRTC cold) "
                        "and check every CuTe kernel's layouts (default: one entry point per kernel source, ~2 "
                        "minutes on 2 cores)")
    add_jobs_progress(s)
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of tables")
    s.set_defaults(fn=cmd_check)


def report_json(rep) -> dict:
    return {"gpu": True, "ok": rep.ok, "shapes": [
        {"shape": list(s.shape), "alpha": s.alpha, "beta": s.beta, "exact": s.exact, "ok": s.ok,
         "results": [{"kernel": r.name, "status": r.status, "gauge_ratio": r.gauge_ratio,
                      "rel_frobenius": r.rel_frobenius, "first_fail": list(r.first_fail) if r.first_fail else None,
                      "message": r.message, "seconds": r.seconds} for r in s.results],
         "pairwise_max_abs": {"kernels": s.names, "matrix": s.pairwise.tolist()}} for s in rep.shapes]}


def cmd_check(args) -> int:
    names = list(dict.fromkeys((args.kernels or []) + (args.kernel_list or []))) or None
    why = "--no-gpu given" if args.no_gpu else base.gpu_unavailable()
    if why:
        # --no-gpu on a GPU host: also what gemm()'s picks launch on that GPU
        gpu_arch = (launch.device_info().arch_int if args.no_gpu and base.gpu_unavailable() is None else None)
        arch = args.arch or (f"sm_{gpu_arch}" if gpu_arch else DEFAULT_ARCH)
        progress = args.progress if args.progress is not None or not args.all else True
        return offline_check(names, arch, why, jobs=args.jobs, progress=progress,
                             as_json=args.json, everything=args.all, gpu_arch=gpu_arch)
    # every launch's entry points compiled side by side first (the CLI's own process: a pool
    # of spawned workers is safe here), then the checks read them from disk
    ahead = cache.Prefetch(check.launch_jobs(names, args.shape or check.DEFAULT_SHAPES, args.layout))
    try:
        rep = check.cross_check(kernels=names, shapes=args.shape, seed=args.seed, alpha=args.alpha,
                                beta=args.beta, exact=args.exact, layout=args.layout)
    finally:
        ahead.close()
    show(args.json, report_json(rep), rep.table)
    return 0 if rep.ok else 1


def representatives(kernels: list[registry.Kernel], arch_int: int) -> list[registry.Kernel]:
    """Per kernel source, the first kernel that runs on `arch_int` (else the first, reported skipped):
    a source's kernels differ in tiles and knobs, not in code NVRTC could reject."""
    by_source: dict[str, registry.Kernel] = {}
    for k in kernels:
        if k.source not in by_source or (not by_source[k.source].runs_on(arch_int) and k.runs_on(arch_int)):
            by_source[k.source] = k
    return [k for k in kernels if by_source.get(k.source) is k]


def quick_plan(kernels: list[registry.Kernel], gpu_arch: int | None) -> dict[str, list]:
    """kernel name -> [its first variant's entry point (leading precision, row-major)]; with `gpu_arch`
    also what gemm()'s candidates there launch for row-major operands (None: the whole kernel)."""
    out = {k.name: {comp.select_entries(k, (k.variants[0].entry,)): 1} for k in kernels}
    if gpu_arch is not None:
        cands = dict.fromkeys(k.name for p in registry.PRECISIONS for k in auto.candidates(p, arch_int=gpu_arch))
        for n, sets in compile_cli.layout_plan(list(cands), ["nn"], None).items():
            out.setdefault(n, {}).update(dict.fromkeys(sets))
    return {n: ([None] if None in d else list(d)) for n, d in out.items()}


def offline_check(names: list[str] | None, arch: str, why: str, *, jobs: int | None = None,
                  progress: bool | None = None, as_json: bool = False, everything: bool = False,
                  gpu_arch: int | None = None) -> int:
    """`cute-gemm check` without a GPU: compile one entry point per kernel source (with `gpu_arch`, also
    gemm()'s picks there; `everything`: all), check registers, spills and layouts, say what did not run."""
    if names and registry.AUTO in names:     # gemm()'s choice: the candidates it may run
        names = list(dict.fromkeys([n for n in names if n != registry.AUTO] + [
            k.name for p in registry.PRECISIONS for k in auto.candidates(p)]))
    # a composed kernel's GEMM (Kernel.gemm_of) is compiled, not registered: counted apart, as `list` does
    chosen = [kernel_of(n) for n in names] if names else list(registry.compiled())
    registered = [k for k in chosen if k.name in registry.names()]
    internal = [k for k in chosen if k.name not in registry.names()]
    if bad_arch := compile_cli.unsupported_arch(arch):
        return error(f"NVRTC cannot compile for {arch}: {bad_arch}", "cute-gemm check")
    num = compile_cli.arch_number(arch)

    def some(ks: list[registry.Kernel]) -> list[registry.Kernel]:    # every one (--all) or those named
        return ks if everything or names else representatives(ks, num)
    plan = ({k.name: [None] for k in chosen} if everything else
            quick_plan(some(chosen), gpu_arch if gpu_arch == num else None))
    if not as_json:
        print(f"no GPU: compiling for {arch} and checking what needs no GPU (the GPU cross-check is not run)",
              flush=True)
    cute = [k for k in registered if k.family == "cute" and k.gemm_of is None]
    with ThreadPoolExecutor(1) as pool:      # the layout self-checks (pure Python) while workers compile
        checked = pool.submit(self_check_all, [k.name for k in some(cute)])
        outcomes = compile_table(plan, [arch], jobs, progress)
    layouts = checked.result()
    failed = [o for o in outcomes if o.origin == "failed"]
    compiled = [o for o in outcomes if o.origin not in ("failed", "skipped")]
    probs = [p for o in compiled for p in resource_problems(kernel_of(o.kernel), o.resources, o.entries).values()]
    layout_probs = [p for r in layouts for p in r["problems"]]
    ok = not failed and not probs and not layout_probs
    n_entries = sum(len(o.entries or kernel_of(o.kernel).entries) for o in compiled)
    runnable = [k for k in chosen if k.runs_on(num)]
    n_all = sum(len(k.entries) for k in runnable)
    more = [m for yes, m in (
        (n_all > n_entries, f"{n_all - n_entries} more entry points (all {n_all} of the {len(runnable)} kernels "
                            f"that run on {arch})"),
        (len(cute) > len(layouts), f"the layout self-checks of {len(cute) - len(layouts)} more CuTe kernels"))
        if yes and not everything]
    not_run = [f"the GPU cross-check (each kernel against float64 and the others) needs a CUDA GPU: {why}"] + (
        ["`cute-gemm check --all` adds " + " and ".join(more) + " (tens of CPU-minutes of NVRTC)"] if more else [])
    show(as_json, {"gpu": False, "reason": why, "arch": arch, "ok": ok, "all": everything,
                   "kernels": {"registered": [k.name for k in registered], "internal": [k.name for k in internal]},
                   "entries": {"compiled": n_entries, "all": n_all},
                   "compile": rows(outcomes, verdicts=True), "layouts": layouts, "not_run": not_run},
         lambda: format_table(outcomes, verdicts=True))
    report_failures(outcomes, "cute-gemm check")
    if as_json:
        return 0 if ok else 1
    what = (f"{len(registered)} registered kernel{'s' if len(registered) != 1 else ''} (`cute-gemm list`)"
            + (f" and {len(internal)} GEMM{'s' if len(internal) > 1 else ''} run inside composed kernels ("
               + ", ".join(k.name for k in internal) + ")" if internal else ""))
    scope = ("every entry point" if everything else "one entry point per kernel" if names else
             f"one entry point per kernel source ({len({k.source for k in chosen})} sources)")
    n = sum(r["layouts"] for r in layouts)
    print("\n".join([
        f"\nkernels: {what}",
        f"compile: {scope}: {n_entries} entry points of {len(compiled)} kernels for {arch}"
        + (" (with what gemm()'s picks launch on this GPU)" if gpu_arch == num and not everything else "")
        + (f", {len(failed)} FAILED" if failed else ""),
        f"registers and spills: {n_entries} entry points, "
        + ("all within limits" if not probs else f"{len(probs)} over a limit (see the check column)"),
        f"layout self-checks: {len(layouts)} CuTe kernel{'s' if len(layouts) > 1 else ''}, {n} layouts: "
        + ("all pass (partitions cover their tiles, TV layouts land in their tiles, thread layouts are "
           "bijections, tiles match the registry)" if not layout_probs else f"{len(layout_probs)} problems")
        if layouts else "layout self-checks: none (no CuTe kernel chosen)",
        *(f"  {p}" for p in layout_probs), *(f"NOT RUN: {line}" for line in not_run),
        f"check without a GPU: {'PASS' if ok else 'FAIL'} (compile, resources, layouts; nothing was run on a GPU)"]))
    return 0 if ok else 1
