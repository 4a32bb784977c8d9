"""`cute-gemm check`: with a GPU, every kernel against a float64 reference and against each
other (check.cross_check); without one, what can be checked on a CPU: compiles (registers,
shared memory, spills) and the CuTe layout self-checks, saying plainly what was not run.
"""
from __future__ import annotations

from . import auto, check, registry
from . import cli_base as base
from . import compile_cli
from .cli_base import (DEFAULT_ARCH, add_jobs_progress, arch_name, error, finite_float,
                       kernel_or_auto, nonneg_int, print_json, shape_mnk)
from .compile_cli import compile_table, format_table, kernel_of, report_failures, resource_problems, rows
from .layouts_cli import self_check_all


def register(sub) -> None:
    s = sub.add_parser(
        "check", help="cross-check kernels on the GPU; without one, compile them and check "
                      "their resources and layouts",
        description="With a GPU: every kernel against a float64 reference and against each "
                    "other. Without one: compile every kernel for --arch, check registers and "
                    "spills, run the layout self-checks, and say what was not run.")
    s.add_argument("kernels", nargs="*", type=kernel_or_auto, metavar="KERNEL",
                   help="kernels to check, auto for gemm()'s choice (default: all, and auto)")
    s.add_argument("--kernels", dest="kernel_list", nargs="+", type=kernel_or_auto, metavar="KERNEL",
                   help="the same as naming them positionally")
    s.add_argument("--shape", action="append", type=shape_mnk, metavar="MxNxK",
                   help="problem shape, repeatable (default: " + ", ".join(
                       "x".join(map(str, d)) for d in check.DEFAULT_SHAPES) + ")")
    s.add_argument("--alpha", type=finite_float, default=1.0, help="C = alpha A B + beta C (default 1)")
    s.add_argument("--beta", type=finite_float, default=0.0, help="(default 0: C is not read)")
    s.add_argument("--exact", action="store_true", help="small-integer inputs, bitwise agreement")
    s.add_argument("--layout", default="nn", choices=registry.LAYOUTS,
                   help="op(A) op(B): t passes that operand as a transposed view (default nn)")
    s.add_argument("--seed", type=nonneg_int, help="seed of the random inputs (default: fresh)")
    s.add_argument("--arch", type=arch_name,
                   help=f"without a GPU: the arch to compile for (default {DEFAULT_ARCH})")
    s.add_argument("--no-gpu", action="store_true",
                   help="do only the checks that need no GPU, even where there is one")
    add_jobs_progress(s)
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of tables")
    s.set_defaults(fn=cmd_check)


def report_json(rep) -> dict:
    return {"gpu": True, "ok": rep.ok, "shapes": [
        {"shape": list(s.shape), "alpha": s.alpha, "beta": s.beta, "exact": s.exact, "ok": s.ok,
         "results": [{"kernel": r.name, "status": r.status, "gauge_ratio": r.gauge_ratio,
                      "rel_frobenius": r.rel_frobenius,
                      "first_fail": list(r.first_fail) if r.first_fail else None,
                      "message": r.message, "seconds": r.seconds} for r in s.results],
         "pairwise_max_abs": {"kernels": s.names, "matrix": s.pairwise.tolist()}}
        for s in rep.shapes]}


def cmd_check(args) -> int:
    names = list(dict.fromkeys((args.kernels or []) + (args.kernel_list or []))) or None
    why = "--no-gpu given" if args.no_gpu else base.gpu_unavailable()
    if why:
        return offline_check(names, args.arch or DEFAULT_ARCH, why, jobs=args.jobs,
                             progress=args.progress, as_json=args.json)
    rep = check.cross_check(kernels=names, shapes=args.shape, seed=args.seed, alpha=args.alpha,
                            beta=args.beta, exact=args.exact, layout=args.layout)
    if args.json:
        print_json(report_json(rep))
    else:
        print(rep.table())
    return 0 if rep.ok else 1


def offline_check(names: list[str] | None, arch: str, why: str, *, jobs: int | None = None,
                  progress: bool | None = None, as_json: bool = False) -> int:
    """`cute-gemm check` without a GPU: compile, check registers/spills, check the layouts,
    and say plainly that the numerical cross-check did not run."""
    if names and registry.AUTO in names:     # gemm()'s choice: the candidates it may run
        names = list(dict.fromkeys([n for n in names if n != registry.AUTO] + [
            k.name for p in registry.PRECISIONS for k in auto.candidates(p)]))
    names = names or [k.name for k in registry.compiled()]
    bad_arch = compile_cli.unsupported_arch(arch)
    if bad_arch:
        return error(f"NVRTC cannot compile for {arch}: {bad_arch}", "cute-gemm check")
    not_run = (f"the GPU cross-check (each kernel against float64 and the others) needs a CUDA "
               f"GPU: {why}")
    if not as_json:
        print(f"no GPU: compiling for {arch} and checking what needs no GPU (the GPU "
              "cross-check is not run)", flush=True)
    outcomes = compile_table(names, [arch], jobs, progress)
    # (a composed kernel's layouts are those of the GEMM it runs: Kernel.gemm_of)
    cute = [n for n in names if n in registry.names() and registry.get(n).family == "cute"
            and registry.get(n).gemm_of is None]
    layouts = self_check_all(cute, progress=progress)
    failed = [o for o in outcomes if o.origin == "failed"]
    probs = {(o.kernel, e): p for o in outcomes if o.origin not in ("failed", "skipped")
             for e, p in resource_problems(kernel_of(o.kernel), o.resources).items()}
    layout_probs = [p for r in layouts for p in r["problems"]]
    ok = not failed and not probs and not layout_probs
    if as_json:
        print_json({"gpu": False, "reason": why, "arch": arch, "ok": ok,
                    "compile": rows(outcomes, verdicts=True), "layouts": layouts,
                    "not_run": [not_run]})
        report_failures(outcomes, "cute-gemm check")
        return 0 if ok else 1
    print(format_table(outcomes, verdicts=True))
    report_failures(outcomes, "cute-gemm check")
    compiled = [o for o in outcomes if o.origin not in ("failed", "skipped")]
    n_entries = sum(len(kernel_of(o.kernel).entries) for o in compiled)
    print(f"\ncompile: {len(compiled)} of {len(outcomes)} kernels for {arch}"
          + (f", {len(failed)} FAILED" if failed else ""))
    print(f"registers and spills: {n_entries} entry points, "
          + ("all within limits" if not probs else f"{len(probs)} over a limit (see the check column)"))
    if layouts:
        n = sum(r["layouts"] for r in layouts)
        print(f"layout self-checks: {len(layouts)} CuTe kernel{'s' if len(layouts) > 1 else ''}, "
              f"{n} layouts: "
              + ("all pass (partitions cover their tiles, TV layouts land in their tiles, thread "
                 "layouts are bijections, tiles match the registry)" if not layout_probs else
                 f"{len(layout_probs)} problems"))
        for p in layout_probs:
            print(f"  {p}")
    else:
        print("layout self-checks: none (no CuTe kernel chosen)")
    print(f"NOT RUN: {not_run}")
    print(f"check without a GPU: {'PASS' if ok else 'FAIL'} (compile, resources, layouts; "
          "nothing was run on a GPU)")
    return 0 if ok else 1
