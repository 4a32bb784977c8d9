"""`cute-gemm bench`: the command line of cute_gemm.perf (registered by cli.py when present)."""
from __future__ import annotations

import argparse
import sys
from functools import partial

from . import base
from .. import registry
from .base import checked, error, kernel_name, kernel_or_auto, nonneg_int, positive_float, positive_int, show
from ..perf.batched import PRECISIONS as BATCHED_PRECISIONS, batched_count, main as batched_main, \
    run as batched_run
from ..perf.peers import main as peers_main
from ..perf.cublas import find_cublas
from ..perf.fp8 import fp8_count, main as fp8_main
from ..perf.linear import linear_count, main as linear_main
from ..perf.overhead import measure_overhead
from ..perf.report import format_overhead, format_table, readme_markdown
from ..perf.runner import bench, parse_precisions
from ..perf.schema import load_json
from ..perf.shapes import count_of, describe, parse_flops
from ..perf.shapes import parse_layouts, parse_sizes, plan

_DESCRIPTION = """\
Check, then time, every registered kernel next to cuBLAS at the same precision (CuPy or PyTorch;
fp32 and fp32_3xtf32 next to cuBLAS fp32 with TF32 off). A kernel that fails its float64 check gets
no speed figure. Prints a table (--json: the results as JSON); --out DIR writes bench.json,
bench.csv, bench_readme.md, plots. Sizes: N (N^3), MxNxK; 'squares' (256..8192), 'odd' (non-square,
non-multiple), 'all' (default: both); 'sweep' (28 shapes: squares, odd, skinny, long and short K,
model layers; the summary gives each kernel's geometric mean and minimum ratio to cuBLAS);
'held-out' (24 shapes of those classes in no shipped table); 'grid' (the 144 shapes, half unaligned,
that fill the shipped tables between the sweep's); 'random[:N]' (N shapes, default 40, drawn from
--seed with 2*M*N*K log-uniform in --flops, each in one layout of --layouts; kernels default to
auto; also timed as one call, host included, and as 20 calls back to back). 'auto' names gemm()'s
choice, timed like a kernel. Against PyTorch, each alone (--out writes NAME.json): 'batched[:N]'
random batched products next to torch.matmul (or one kernel that batches, in gemm()'s stead);
'linear[:N]' a linear layer with bias and GELU at N token counts, gemm(epilogue=) next to torch
eager and fused; 'fp8[:N]' e4m3 products next to torch._scaled_mm, block scaled too, then the error
over K. Details: docs/benchmarks.md."""


def register(sub) -> None:
    s = sub.add_parser("bench", help="benchmark kernels against cuBLAS at the same precision (checked first; "
                                     "needs a GPU)", description=_DESCRIPTION)
    s.add_argument("kernels", nargs="*", type=kernel_or_auto, metavar="KERNEL",
                   help="kernel names, or auto for gemm()'s choice (default: every kernel the device supports; "
                        "with --size random: auto)")
    s.add_argument("--size", action="append", type=parse_size_arg,
                   metavar="N|MxNxK|squares|odd|sweep|held-out|grid|random[:N]|batched[:N]|linear[:N]|fp8[:N]|all",
                   help="repeatable; default: all")
    s.add_argument("--layouts", type=parse_layouts_arg,
                   help="comma list of nn, tn, nt, tt (t = transposed view) or all; default nn; with --size "
                        "random, each random shape gets one of these at random (default: all four)")
    s.add_argument("--flops", type=parse_flops_arg, metavar="LO:HI",
                   help="with --size random: log2 bounds of 2*M*N*K (default 18:36), clipped to what M, N, K "
                        "in [8, 12288] reach (10:41.75)")
    s.add_argument("--precision", type=parse_precisions_arg, metavar="P[,P...]|all",
                   help="fp32 (the default; --size linear: bf16), tf32, bf16, fp16, fp32_3xtf32, a comma "
                        "list, or all: each kernel in the precisions it offers, next to cuBLAS at the same "
                        "precision (fp32_3xtf32: cuBLAS fp32, TF32 off)")
    s.add_argument("--repeats", type=positive_int, default=30, help="timed launches per kernel and shape")
    s.add_argument("--min-repeats", type=positive_int, default=5,
                   help="the fewest timed launches, whatever --max-seconds says (default 5)")
    s.add_argument("--warmup", type=nonneg_int, default=3, help="untimed launches before timing (default 3)")
    s.add_argument("--max-seconds", type=positive_float, default=2.0, help="GPU time budget per kernel and "
                   "shape; slow kernels get fewer repeats (never below --min-repeats)")
    s.add_argument("--cublas", choices=("auto", "cupy", "torch", "none"), default="auto",
                   help="the cuBLAS route to compare with (default auto: CuPy, then PyTorch)")
    s.add_argument("--overhead", action="store_true",
                   help="also measure host µs per call: run() vs raw launch vs cuBLAS (16^3)")
    s.add_argument("--overhead-only", action="store_true", help="only the overhead measurement")
    s.add_argument("--overhead-kernel", type=kernel_name, metavar="KERNEL",
                   help="kernel for the overhead measurement (default: the first named, else naive)")
    s.add_argument("--first-call", action="store_true", help="also time gemm()'s first call of a fresh process "
                   "on an empty cubin cache (quick and wait), and with the cache filled (4096^3)")
    s.add_argument("--out", metavar="DIR", help="write JSON, CSV, README section and plots here")
    s.add_argument("--no-plots", action="store_true", help="with --out: no PNG plots")
    s.add_argument("--ladder-size", type=positive_int, help="square size of the ladder chart (default 4096)")
    s.add_argument("--seed", type=nonneg_int,
                   help="the run's seed: it draws the input values and, with --size random, the shapes and their "
                        "layouts (default 0; with --size random a fresh seed, printed and stored in the JSON: give "
                        "it again to repeat the draw)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.add_argument("--json", action="store_true",
                   help="the results as JSON on stdout (what --out writes to bench.json) instead of the table")
    s.add_argument("--readme", metavar="BENCH_JSON",
                   help="print the README section (markdown) for a saved bench JSON and exit; no GPU")
    s.set_defaults(fn=_cmd_bench)


def _as_given(parse):
    """An argparse type that checks a value with parse (so that a typo is reported before the
    GPU is looked for) and keeps it as given."""
    def check(s: str) -> str:
        parse(s)
        return s
    return checked(check)


_COUNTS = (count_of, batched_count, linear_count, fp8_count)      # "random[:N]", "batched[:N]" ...
parse_size_arg = _as_given(lambda s: any(c(s) is not None for c in _COUNTS) or parse_sizes([s]))
parse_layouts_arg = _as_given(parse_layouts)
parse_precisions_arg = _as_given(parse_precisions)


def parse_flops_arg(s: str) -> tuple[float, float]:
    try:
        return parse_flops(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--flops {s}: ")) from None


def _cmd_bench(args) -> int:
    if args.readme:
        try:
            saved = load_json(args.readme)
        except (OSError, ValueError) as e:   # missing, not JSON, or another schema
            msg = getattr(e, "strerror", None) or str(e)
            return error(f"--readme: {msg if args.readme in msg else f'{args.readme}: {msg}'}", "cute-gemm bench")
        print(readme_markdown(saved, size=args.ladder_size, source=args.readme), end="")
        return 0
    # the benches against PyTorch: (size word, its count reader, main, against what, precision)
    for word, count, run_main, peer, default in (
            ("linear", linear_count, linear_main, "gemm(epilogue=) against torch", "bf16"),
            ("fp8", fp8_count, fp8_main, "8-bit gemm() against torch._scaled_mm", "fp8_e4m3"),
            ("batched", batched_count, batched_main, "gemm() against torch.matmul", "fp32")):
        counts = [n for n in map(count, args.size or []) if n is not None]
        if not counts:
            continue
        # (a batch: one batched kernel may stand in for gemm(), in the precisions it computes)
        named = (word == "batched" and len(args.kernels) == 1
                 and (args.kernels[0] == registry.AUTO or registry.get(args.kernels[0]).batched))
        if len(counts) != len(args.size) or (args.kernels and not named):
            return error(f"--size {word}[:N] times {peer} alone: no other size, no kernel names"
                         + (" (batched: one kernel that batches)" if word == "batched" else ""),
                         "cute-gemm bench")
        if (rc := base.no_gpu("bench")) is not None:
            return rc
        precisions = [p for p in parse_precisions(args.precision or default)
                      if p in BATCHED_PRECISIONS]
        if named and args.kernels[0] != registry.AUTO:
            k = registry.get(args.kernels[0])
            run_main = partial(peers_main, partial(batched_run, kernel=k.name))
            precisions = [p for p in precisions if p in k.precisions] or \
                [p for p in BATCHED_PRECISIONS if p in k.precisions][:1]
        return run_main(sum(counts), args.seed, precisions or [default], args.out)
    try:        # before the GPU is looked for: a bad combination, and the seed of a draw
        todo = plan(args.size, args.layouts, seed=args.seed, flops=args.flops)
    except ValueError as e:
        return error(str(e), "cute-gemm bench")
    if (rc := base.no_gpu("bench", hint=True)) is not None:
        return rc
    if todo.random is not None and not args.overhead_only:     # (the table says it again)
        print(f"cute-gemm bench: {describe(todo.random, todo.seed)}", file=sys.stderr)
    if args.overhead_only:
        backend, note = find_cublas(args.cublas)
        print(note, file=sys.stderr if args.json else sys.stdout)
        o = measure_overhead(args.overhead_kernel or (args.kernels[0] if args.kernels else None), backend=backend)
        show(args.json, o, lambda: format_overhead(o))
        return 0 if o["meets_target"] else 1
    try:
        res = bench(args.kernels or None, args.size, layouts=args.layouts, repeats=args.repeats,
                    warmup=args.warmup, min_repeats=args.min_repeats, max_seconds=args.max_seconds,
                    cublas=args.cublas, overhead=args.overhead, overhead_kernel=args.overhead_kernel,
                    seed=todo.seed, first_call=args.first_call, out_dir=args.out, plots=not args.no_plots,
                    ladder_size=args.ladder_size, progress=not args.no_progress,
                    precisions=args.precision or "fp32", flops=args.flops)
    except ValueError as e:
        return error(str(e), "cute-gemm bench")
    show(args.json, res.to_dict(), lambda: format_table(res))
    if args.out:      # (with --json, stdout holds the JSON alone)
        print(f"{'' if args.json else chr(10)}wrote {args.out}/bench.json, bench.csv, "
              "bench_readme.md" + ("" if args.no_plots else " and PNG plots (if matplotlib is "
                                   "installed)"), file=sys.stderr if args.json else sys.stdout)
    if "interrupted" in res.meta:
        print(f"cute-gemm bench: interrupted {res.meta['interrupted']}", file=sys.stderr)
        return 130
    return 0 if res.ok else 1
