"""The `cute-gemm` command line: list, run, check, compile, cache, bench, layouts.

Exit status: 0 all good; 1 the command ran and found a problem (a failing kernel, a spill,
a compile error); 2 it could not do what was asked (a bad argument, no GPU for a command that
needs one, any CuteGemmError) — always as one line on stderr, never a traceback. Arguments are
checked by argparse before any device is looked for, so `run nope` names the kernel, not the
missing GPU. Tables and JSON (--json) go to stdout; progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from . import __version__, cache, registry
from .errors import CompileError, CudaError, CuteGemmError, NoDeviceError, UnknownKernelError

DEFAULT_ARCH = "sm_90"   # what `check`/`compile` build for without a GPU: the H100/H200 hosts'

# ---- argument types: every bad value becomes one argparse error line -------------------------


def _int_at_least(lo: int) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {v}")
        return v
    parse.__name__ = f"integer >= {lo}"
    return parse


positive_int = _int_at_least(1)
nonneg_int = _int_at_least(0)


def positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {s}")
    return v


def finite_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be finite, got {s}")
    return v


def kernel_name(s: str) -> str:
    try:
        return registry.get(s).name
    except UnknownKernelError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def kernel_or_auto(s: str) -> str:
    """A registered kernel, or "auto" (gemm()'s choice) where a command runs kernels."""
    try:
        return registry.check_name(s)
    except UnknownKernelError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def shape_mnk(s: str) -> tuple[int, int, int]:
    """'MxNxK' -> (M, N, K), each >= 1."""
    parts = s.lower().split("x")
    if len(parts) != 3 or not all(re.fullmatch(r"\d+", p) for p in parts):
        raise argparse.ArgumentTypeError(f"expected MxNxK (e.g. 257x383x129), got {s!r}")
    dims = tuple(int(p) for p in parts)
    if min(dims) < 1:
        raise argparse.ArgumentTypeError(f"M, N and K must be >= 1, got {s!r}")
    return dims  # type: ignore[return-value]


def precision_list(s: str) -> tuple[str, ...]:
    """'bf16,tf32' -> ("bf16", "tf32"), each one of registry.PRECISIONS."""
    got = tuple(dict.fromkeys(p.strip() for p in s.split(",")))
    bad = [p for p in got if p not in registry.PRECISIONS]
    if bad or not got:
        raise argparse.ArgumentTypeError(f"expected precisions from {', '.join(registry.PRECISIONS)}"
                                         f", got {s!r}")
    return got


def arch_name(s: str) -> str:
    from .compile import normalize_arch
    try:
        return normalize_arch(s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an arch like sm_80, sm_90 or 90, got {s!r}") from None


# ---- helpers shared by the commands ------------------------------------------------------------


def one_line(e: BaseException | str) -> str:
    """The message of an error as one line (the first, whitespace collapsed)."""
    text = str(e).strip()
    first = text.splitlines()[0] if text else type(e).__name__
    return " ".join(first.split())


def error(msg: str, prog: str = "cute-gemm") -> int:
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return 2


def gpu_unavailable() -> str | None:
    """None when a CUDA device can be used, else one line saying why not.
    CUTE_GEMM_FORCE_NO_GPU=1 takes the no-GPU paths on a GPU host (as tests/conftest.py does)."""
    if os.environ.get("CUTE_GEMM_FORCE_NO_GPU"):
        return "CUTE_GEMM_FORCE_NO_GPU is set"
    from . import launch
    try:
        launch.device_info()
    except CudaError as e:
        return device_reason(e)
    return None


def device_reason(e: CudaError) -> str:
    """The first line of a device error without launch.py's advice for library users
    (compile_kernel(..., arch=...)): the CLI gives its own."""
    return one_line(e).split("; compile-only use")[0]


def save_log(kernel: str, arch: str, log: str) -> Path | None:
    """Write an NVRTC log where a person can read it; its path goes into a one-line error."""
    d = Path(tempfile.gettempdir()) / "cute_gemm-logs"
    try:
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{kernel}-{arch}.log"
        p.write_text(log)
        return p
    except OSError:
        return None


def json_safe(x: Any) -> Any:
    """NaN/inf become null (JSON has neither); tuples become lists."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if hasattr(x, "item") and callable(x.item):          # numpy scalars
        return json_safe(x.item())
    return x


def print_json(obj: Any) -> None:
    print(json.dumps(json_safe(obj), indent=2))


# ---- commands -------------------------------------------------------------------------------------


def _kernel_record(k: registry.Kernel) -> dict:
    return {"name": k.name, "family": k.family, "source": k.source,
            "tile": list(k.tile) if k.tile else None, "block": list(k.block),
            "threads": k.threads, "min_arch": f"sm_{k.min_arch}", "dtypes": list(k.dtypes), "precisions": list(k.precisions),
            "constraints": k.constraints, "seed": k.seed, "summary": k.summary,
            "entries": list(k.entries)}


def _cmd_list(args) -> int:
    ks = registry.kernels(args.family)
    if args.json:
        print_json([_kernel_record(k) for k in ks])
        return 0
    w = max([22] + [len(k.name) + 2 for k in ks])
    print(f"{'name':<{w}}{'family':<13}{'tile':<14}{'threads':>8}  {'seed':<38}summary")
    for k in ks:
        tile = "x".join(map(str, k.tile)) if k.tile else "-"
        print(f"{k.name:<{w}}{k.family:<13}{tile:<14}{k.threads:>8}  {k.seed:<38}{k.summary}")
    return 0


def _cmd_run(args) -> int:
    why = gpu_unavailable()
    if why:
        return error(f"run times a kernel on a CUDA GPU and none can be used here ({why}); "
                     "`cute-gemm check` does what can be done without one", "cute-gemm run")
    from .perf.runner import time_kernel
    r = time_kernel(args.name, args.m, args.n, args.k, repeats=args.repeats, seed=args.seed)
    if args.json:
        print_json(r)
    elif r["status"] == "pass":
        print(f"{args.name}: M={args.m} N={args.n} K={args.k}  median {r['ms']:.3f} ms  "
              f"{r['tflops']:.2f} TFLOP/s  gauge ratio {r['gauge_ratio']:.3g} ({r['status']})"
              + (f"; {r['message']}" if args.name == registry.AUTO else ""))
    else:   # checked before timing: a wrong kernel gets no speed figure
        print(f"{args.name}: M={args.m} N={args.n} K={args.k}  {r['status']}: {r['message']} "
              "(not timed)")
    return 0 if r["status"] == "pass" else 1


def _check_report_json(rep) -> dict:
    return {"gpu": True, "ok": rep.ok, "shapes": [
        {"shape": list(s.shape), "alpha": s.alpha, "beta": s.beta, "exact": s.exact, "ok": s.ok,
         "results": [{"kernel": r.name, "status": r.status, "gauge_ratio": r.gauge_ratio,
                      "rel_frobenius": r.rel_frobenius,
                      "first_fail": list(r.first_fail) if r.first_fail else None,
                      "message": r.message, "seconds": r.seconds} for r in s.results],
         "pairwise_max_abs": {"kernels": s.names, "matrix": s.pairwise.tolist()}}
        for s in rep.shapes]}


def _cmd_check(args) -> int:
    names = list(dict.fromkeys((args.kernels or []) + (args.kernel_list or []))) or None
    why = "--no-gpu given" if args.no_gpu else gpu_unavailable()
    if why:
        from .compile_cli import offline_check
        return offline_check(names, args.arch or DEFAULT_ARCH, why, jobs=args.jobs,
                             progress=args.progress, as_json=args.json)
    from .check import cross_check
    rep = cross_check(kernels=names, shapes=args.shape, seed=args.seed, alpha=args.alpha,
                      beta=args.beta, exact=args.exact, layout=args.layout)
    if args.json:
        print_json(_check_report_json(rep))
    else:
        print(rep.table())
    return 0 if rep.ok else 1


def _cmd_compile(args) -> int:
    from .compile_cli import cmd_compile
    return cmd_compile(args)


def _cmd_cache(args) -> int:
    if args.action == "clear":
        n = cache.clear()
        if args.json:
            print_json({"removed": n, "dir": str(cache.cache_dir())})
        else:
            print(f"removed {n} cached cubins from {cache.cache_dir()}")
        return 0
    info = cache.info()
    if args.json:
        print_json(info)
        return 0
    for k, v in info.items():
        print(f"{k:<16}{v}")
    return 0


# ---- the parser ------------------------------------------------------------------------------------


class UsageError(Exception):
    """A bad command line: main() prints it as one line and returns 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own prints the whole usage block, then exits
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


def add_jobs_progress(s) -> None:
    s.add_argument("--jobs", "-j", type=positive_int, default=None, metavar="N",
                   help="NVRTC compiles in parallel processes (default: the CPU cores, "
                        f"{cpu_cores()} here)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                   help="show progress on stderr even when it is not a terminal")
    g.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="no progress on stderr (default: shown when stderr is a terminal)")


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def build_parser() -> argparse.ArgumentParser:
    from .check import DEFAULT_SHAPES
    p = _Parser(prog="cute-gemm", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"cute-gemm {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")

    s = sub.add_parser("list", help="list the registered kernels")
    s.add_argument("--family", choices=("handwritten", "cute"), help="only this family")
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")
    s.set_defaults(fn=_cmd_list)

    s = sub.add_parser("run", help="check, then time, one kernel on one shape (needs a GPU)")
    s.add_argument("name", type=kernel_or_auto, metavar="KERNEL",
                   help="a name from `cute-gemm list`, or auto (gemm()'s choice)")
    s.add_argument("--m", type=positive_int, default=4096, help="rows of A and C (default 4096)")
    s.add_argument("--n", type=positive_int, default=4096, help="columns of B and C (default 4096)")
    s.add_argument("--k", type=positive_int, default=4096, help="inner dimension (default 4096)")
    s.add_argument("--repeats", type=positive_int, default=20,
                   help="timed launches; the median is reported (default 20)")
    s.add_argument("--seed", type=nonneg_int, help="seed of the random inputs (default: fresh)")
    s.add_argument("--json", action="store_true", help="JSON on stdout")
    s.set_defaults(fn=_cmd_run)

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
                       "x".join(map(str, d)) for d in DEFAULT_SHAPES) + ")")
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
    s.set_defaults(fn=_cmd_check)

    s = sub.add_parser("compile", help="compile kernels with NVRTC and show registers, smem and "
                                       "spills (no GPU needed)")
    s.add_argument("kernels", nargs="*", type=kernel_name, metavar="KERNEL",
                   help="kernels to compile (default: all)")
    s.add_argument("--all", action="store_true", help="every registered kernel (the default)")
    s.add_argument("--arch", action="append", type=arch_name,
                   help=f"sm_80, sm_90 ..., repeatable (default: the GPU's, or {DEFAULT_ARCH} "
                        "without one)")
    s.add_argument("--layout", choices=registry.LAYOUTS + ("all",),
                   help="only the entry points a call with A and B in this operand layout "
                        "(contiguous, aligned) needs, with their stream-K twins and the kernels "
                        "the call runs besides (default: every entry point)")
    s.add_argument("--precision", type=precision_list, metavar="P[,P...]",
                   help="with --layout: only these precisions (" + ", ".join(registry.PRECISIONS)
                        + "; default: all the kernel computes)")
    add_jobs_progress(s)
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")
    s.set_defaults(fn=_cmd_compile)

    s = sub.add_parser("cache", help="show or clear the cubin cache")
    s.add_argument("action", choices=("info", "clear"), nargs="?", default="info",
                   help="info (default) or clear")
    s.add_argument("--json", action="store_true", help="JSON on stdout")
    s.set_defaults(fn=_cmd_cache)

    for extra in ("bench", "layouts", "tune"):
        try:
            mod = __import__(f"cute_gemm.{extra}_cli", fromlist=["register"])
        except ImportError:
            continue
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
        return args.fn(args)
    except CompileError as e:
        path = save_log(e.kernel, next((o[6:] for o in e.options if o.startswith("-arch=")), "arch"),
                        str(e))
        return error(one_line(e) + (f"; full log: {path}" if path else ""))
    except NoDeviceError as e:
        return error(device_reason(e) + "; `cute-gemm check` and `cute-gemm compile` work "
                     "without a GPU")
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


if __name__ == "__main__":
    sys.exit(main())
