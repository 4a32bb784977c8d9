"""`cute-gemm tune`: the command line of perf/tune.py (registered by cli.py)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..build import cache
from ..driver import launch
from ..select import autotable
from .bench import parse_layouts_arg, parse_precisions_arg, parse_size_arg
from . import base
from .base import error, nonneg_int, positive_float, show
from ..perf.tune import format_table, tune

_DESCRIPTION = """\
Time gemm()'s candidates (the kernels tagged "auto", and each on the transposed problem where M != N) on this
GPU, each checked against float64 first, and write the table gemm() reads: by default the tuned table of this
GPU and cute_gemm version in the cache folder, merged with the one there (rows of the same problem replaced).
Everything, compiles included, fits --max-seconds; problems past it are listed as not measured. --show prints
the tables gemm() consults on this GPU (without a GPU: every table found)."""


def register(sub) -> None:
    s = sub.add_parser("tune", help="measure gemm()'s candidates on this GPU and write its table (needs a GPU; "
                                    "--show does not)", description=_DESCRIPTION)
    s.add_argument("--size", action="append", type=parse_size_arg, metavar="N|MxNxK|sweep|grid|squares|odd",
                   help="repeatable; default: sweep (the bench's sweep of shapes); the shipped tables hold sweep "
                        "and grid")
    s.add_argument("--precision", default="fp32", type=parse_precisions_arg, metavar="P[,P...]|all",
                   help="fp32 (default), tf32, bf16, fp16, fp32_3xtf32, a comma list, or all")
    s.add_argument("--layouts", default="nn", type=parse_layouts_arg,
                   help="comma list of nn, tn, nt, tt or all (default nn)")
    s.add_argument("--max-seconds", type=positive_float, default=480.0,
                   help="time budget of the whole run, compiles included (default 480)")
    s.add_argument("--out", metavar="FILE|DIR", help="write the table here (a folder: <gpu>.json in it, as the "
                   "shipped tables in cute_gemm/tables/ are named)")
    s.add_argument("--fresh", action="store_true", help="start a new table (default: merge)")
    s.add_argument("--seed", type=nonneg_int, default=0, help="seed of the random inputs")
    s.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    s.add_argument("--show", action="store_true", help="print the tables gemm() consults here, in order, and exit")
    s.add_argument("--json", action="store_true", help="with --show: JSON on stdout")
    s.set_defaults(fn=_cmd_tune)


def _cmd_tune(args) -> int:
    if args.show:
        return _show(None if base.gpu_unavailable() else launch.device_info().name, args.json)
    if (rc := base.no_gpu("tune")) is not None:
        return rc
    try:
        table, path, left = tune(args.size or "sweep", precisions=args.precision,
                                 layouts=args.layouts, max_seconds=args.max_seconds,
                                 out=args.out, fresh=args.fresh, seed=args.seed, progress=not args.no_progress)
    except ValueError as e:
        return error(str(e), "cute-gemm tune")
    show(args.json, table.to_dict(), lambda: format_table(table, path))
    if not args.json:
        wins = Counter(r.winner for r in table.rows if r.winner)
        print(f"\nwrote {path}: {len(table.rows)} problems; wins: "
              + (", ".join(f"{c} {n}" for c, n in wins.most_common()) or "none")
              + (f"; {len(left)} not measured within --max-seconds" if left else ""))
    return 1 if any(x.startswith("FAIL") for r in table.rows for x in r.notes.values()) else 0


def _show(gpu: str | None, as_json: bool) -> int:
    """The tables gemm() consults on GPU `gpu`, in order; without one, every table found."""
    if gpu is not None:
        paths, tables = [autotable.tuned_path(gpu), autotable.shipped_path(gpu)], autotable.tables_for(gpu)
        head = f"gemm() on {gpu} consults, in order:"
    else:
        paths = sorted((cache.cache_dir() / "tune").glob("*.json")) + sorted(autotable.SHIPPED_DIR.glob("*.json"))
        tables = []
        for p in paths:
            try:
                tables.append(autotable.read(p))
            except (OSError, ValueError) as e:
                print(f"{p}: unreadable ({e})")
        head = "no GPU here: every tune table found (tuned in the cache folder, then shipped):"
    show(as_json, {"gpu": gpu, "paths": [str(p) for p in paths],
                   "tables": [dict(t.to_dict(), source=t.source) for t in tables]},
         lambda: "\n".join([head, *(f"  {p}{'' if Path(p).exists() else '  (none)'}" for p in paths),
                            *(f"\n{format_table(t)}" for t in tables)] + ([] if tables else [
             "no table: gemm() follows its heuristic (cute_gemm/select/auto.py, docs/design/auto.md)"])))
    return 0
