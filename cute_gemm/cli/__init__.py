"""The `cute-gemm` command line: list, run, check, compile, cache, bench, layouts, tune.

Exit status: 0 all good; 1 the command ran and found a problem (a failing kernel, a spill,
a compile error); 2 it could not do what was asked (a bad argument, no GPU for a command that
needs one, any CuteGemmError) — always as one line on stderr, never a traceback. Arguments are
checked by argparse before any device is looked for, so `run nope` names the kernel, not the
missing GPU. Tables and JSON (--json) go to stdout; progress goes to stderr.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap
import warnings
from typing import Sequence

from . import base, bench, check, compile, layouts, tune
from .. import __version__, registry
from ..build import cache
from .base import (error, device_reason, kernel_or_auto, nonneg_int, one_line, positive_int,
                   print_json, reset_warnings, save_log, show, show_warning)
from ..base.errors import CompileError, CuteGemmError, NoDeviceError
from ..perf.runner import time_kernel


def _cmd_list(args) -> int:
    ks = registry.kernels(args.family)
    if args.json:
        keys = ("name", "family", "source", "tile", "block", "threads", "min_arch", "dtypes", "precisions",
                "constraints", "seed", "summary", "entries")
        print_json([{a: f"sm_{k.min_arch}" if a == "min_arch" else getattr(k, a) for a in keys} for k in ks])
        return 0
    cols = shutil.get_terminal_size((100, 24)).columns
    tiles = ["x".join(map(str, k.tile)) if k.tile else "-" for k in ks]
    w, tw = (max([6] + [len(x) + 2 for x in xs]) for xs in ([k.name for k in ks], tiles))
    sw = max([6] + [len(k.seed) + 2 for k in ks]) if args.wide else 0   # --wide: the seeds too
    print(f"{'name':<{w}}{'family':<13}{'tile':<{tw}}{'threads':>7}  {'seed' if sw else '':<{sw}}summary")
    for k, tile in zip(ks, tiles):
        summ = k.summary if args.wide else textwrap.shorten(k.summary, max(cols - w - tw - 23, 10), placeholder="…")
        print(f"{k.name:<{w}}{k.family:<13}{tile:<{tw}}{k.threads:>7}  {k.seed if sw else '':<{sw}}{summ}")
    # the count `check` gives too: apart, the GEMMs composed kernels run (built, never called by name)
    internal = [k.name for k in registry.compiled(args.family) if k.name not in registry.names()]
    foot = f"{len(ks)} registered kernels" + (
        f"; `check` and `compile` also build {', '.join(internal)}, the GEMM "
        f"{'a composed kernel runs' if len(internal) == 1 else 'composed kernels run'}" if internal else "") + (
        "" if args.wide else "; --wide for the seeds and whole summaries")
    print("\n" + (foot if args.wide else textwrap.fill(foot, cols - 1)))
    return 0


def _cmd_run(args) -> int:
    shape = f"{args.name}: M={args.m} N={args.n} K={args.k}  "
    if 0 in (args.m, args.n, args.k):    # what gemm() does with it, no kernel launched
        what = "C is empty" if 0 in (args.m, args.n) else "C = beta C (no product to add)"
        msg = f"an empty problem: {what}; gemm() launches no kernel, so there is nothing to time"
        show(args.json, {"kernel": args.name, "m": args.m, "n": args.n, "k": args.k, "ms": None,
                         "status": "empty", "message": msg}, lambda: shape + msg)
        return 0
    if (rc := base.no_gpu("run", "a kernel", hint=True)) is not None:
        return rc
    r = time_kernel(args.name, args.m, args.n, args.k, repeats=args.repeats, seed=args.seed)
    show(args.json, r, lambda: shape + (   # checked before timing: a wrong kernel gets no speed figure
        f"median {r['ms']:.3f} ms  {r['tflops']:.2f} TFLOP/s  gauge ratio {r['gauge_ratio']:.3g} ({r['status']})"
        + (f"; {r['message']}" if args.name == registry.AUTO else "") if r["status"] == "pass"
        else f"{r['status']}: {r['message']} (not timed)"))
    return 0 if r["status"] == "pass" else 1


def _cmd_cache(args) -> int:
    if args.action == "clear":
        n = cache.clear()
        show(args.json, {"removed": n, "dir": str(cache.cache_dir())},
             lambda: f"removed {n} cached cubins from {cache.cache_dir()}")
        return 0
    info = cache.info()
    show(args.json, info, lambda: "\n".join(f"{k:<16}{v}" for k, v in info.items()))
    return 0


class UsageError(Exception):
    """A bad command line: main() prints it as one line and returns 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own prints the whole usage block, then exits
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="cute-gemm", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"cute-gemm {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    s = sub.add_parser("list", help="list the registered kernels")
    s.add_argument("--family", choices=("handwritten", "cute"), help="only this family")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--wide", action="store_true",
                   help="every column (the seed too) and whole summaries, however long the lines "
                        "(default: summaries cut to the terminal's width)")
    g.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")
    s.set_defaults(fn=_cmd_list)

    s = sub.add_parser("run", help="check, then time, one kernel on one shape (needs a GPU)")
    s.add_argument("name", type=kernel_or_auto, metavar="KERNEL",
                   help="a name from `cute-gemm list`, or auto (gemm()'s choice)")
    for dim, what in (("m", "rows of A and C"), ("n", "columns of B and C"), ("k", "inner dimension")):
        s.add_argument(f"--{dim}", type=nonneg_int, default=4096, help=f"{what} (default 4096)")
    s.add_argument("--repeats", type=positive_int, default=20,
                   help="timed launches; the median is reported (default 20)")
    s.add_argument("--seed", type=nonneg_int, help="seed of the random inputs (default: fresh)")
    s.add_argument("--json", action="store_true", help="JSON on stdout")
    s.set_defaults(fn=_cmd_run)

    check.register(sub)
    compile.register(sub)
    s = sub.add_parser("cache", help="show or clear the cubin cache")
    s.add_argument("action", choices=("info", "clear"), nargs="?", default="info", help="info (default) or clear")
    s.add_argument("--json", action="store_true", help="JSON on stdout")
    s.set_defaults(fn=_cmd_cache)
    for mod in (bench, layouts, tune):
        mod.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = build_parser()
    try:
        args = p.parse_args(argv)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    except SystemExit as e:       # --help, --version
        return e.code if isinstance(e.code, int) else 0
    if args.cmd is None:          # a bare `cute-gemm`: what can it do?
        p.print_help()
        return 0
    try:
        with warnings.catch_warnings():     # (restores showwarning: main() may run again)
            warnings.showwarning = show_warning
            reset_warnings()
            return args.fn(args)
    except CompileError as e:
        path = save_log(e.kernel, next((o[6:] for o in e.options if o.startswith("-arch=")), "arch"), str(e))
        return error(one_line(e) + (f"; full log: {path}" if path else ""))
    except NoDeviceError as e:
        return error(device_reason(e) + "; `cute-gemm check` and `cute-gemm compile` work without a GPU")
    except CuteGemmError as e:
        return error(one_line(e))
    except BrokenPipeError:       # `cute-gemm list | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("cute-gemm: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        return error("out of host memory (a smaller shape?)")
    except OSError as e:          # --out in a read-only place, a missing --readme file ...
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        return error(f"{e.strerror or one_line(e)}{where}")
    except Exception as e:        # a bug: one line, the traceback on request
        if os.environ.get("CUTE_GEMM_DEBUG"):
            raise
        print(f"cute-gemm: internal error: {type(e).__name__}: {one_line(e)} (a bug; "
              "CUTE_GEMM_DEBUG=1 shows the traceback: please report it)", file=sys.stderr)
        return 1

