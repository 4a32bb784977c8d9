"""`cute-gemm bench`: the command line of bench.py (registered by cli.py when present)."""
from __future__ import annotations

import sys

_DESCRIPTION = """\
Check, then time, every registered kernel next to cuBLAS fp32 (CuPy or PyTorch, TF32 off).
Prints a table; with --out DIR writes bench.json, bench.csv, bench_readme.md and PNG plots.
A kernel that fails its float64 check is reported as failing, with no speed figure.
Sizes: N (N^3), MxNxK, 'squares' (256..8192), 'odd' (non-square, non-multiple shapes),
'all' (default: both)."""


def register(sub) -> None:
    s = sub.add_parser("bench", help="benchmark kernels against cuBLAS fp32 (checked first)",
                       description=_DESCRIPTION)
    s.add_argument("kernels", nargs="*", help="kernel names (default: all the device supports)")
    s.add_argument("--size", action="append", metavar="N|MxNxK|squares|odd|all",
                   help="repeatable; default: all")
    s.add_argument("--layouts", default="nn",
                   help="comma list of nn, tn, nt, tt (t = transposed view) or all; default nn")
    s.add_argument("--repeats", type=int, default=30, help="timed launches per kernel and shape")
    s.add_argument("--min-repeats", type=int, default=5)
    s.add_argument("--warmup", type=int, default=3)
    s.add_argument("--max-seconds", type=float, default=2.0,
                   help="GPU time budget per kernel and shape; slow kernels get fewer repeats "
                        "(never below --min-repeats)")
    s.add_argument("--cublas", choices=("auto", "cupy", "torch", "none"), default="auto")
    s.add_argument("--overhead", action="store_true",
                   help="also measure host µs per call: run() vs raw launch vs cuBLAS (16^3)")
    s.add_argument("--overhead-only", action="store_true", help="only the overhead measurement")
    s.add_argument("--overhead-kernel", help="kernel for the overhead measurement")
    s.add_argument("--out", metavar="DIR", help="write JSON, CSV, README section and plots here")
    s.add_argument("--no-plots", action="store_true")
    s.add_argument("--ladder-size", type=int, help="square size of the ladder chart (default 4096)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--no-progress", action="store_true")
    s.add_argument("--readme", metavar="BENCH_JSON",
                   help="print the README section (markdown) for a saved bench JSON and exit; no GPU")
    s.set_defaults(fn=_cmd_bench)


def _cmd_bench(args) -> int:
    from cute_gemm.bench import (bench, find_cublas, format_overhead, load_json,
                                 measure_overhead, readme_markdown)
    if args.readme:
        print(readme_markdown(load_json(args.readme), size=args.ladder_size,
                              source=args.readme), end="")
        return 0
    if args.overhead_only:
        backend, note = find_cublas(args.cublas)
        print(note)
        o = measure_overhead(args.overhead_kernel or (args.kernels[0] if args.kernels else None),
                             backend=backend)
        print(format_overhead(o))
        return 0 if o["meets_target"] else 1
    try:
        res = bench(args.kernels or None, args.size, layouts=args.layouts, repeats=args.repeats,
                    warmup=args.warmup, min_repeats=args.min_repeats, max_seconds=args.max_seconds,
                    cublas=args.cublas, overhead=args.overhead, overhead_kernel=args.overhead_kernel,
                    seed=args.seed, out_dir=args.out, plots=not args.no_plots,
                    ladder_size=args.ladder_size, progress=not args.no_progress)
    except ValueError as e:
        print(f"cute-gemm bench: {e}", file=sys.stderr)
        return 2
    from cute_gemm.bench import format_table
    print(format_table(res))
    if args.out:
        print(f"\nwrote {args.out}/bench.json, bench.csv, bench_readme.md"
              + ("" if args.no_plots else " and PNG plots (if matplotlib is installed)"))
    return 0 if res.ok else 1
