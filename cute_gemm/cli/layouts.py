"""`cute-gemm layouts`: the CuTe kernels' layouts as a summary, full text grids (--full) or SVG/PNG
pictures with an index.html gallery; and the self-checks."""
from __future__ import annotations

import functools
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Sequence

from .. import layouts as L, registry
from .base import error, kernel_name, nonneg_int, print_json, shape_mnk, show
from ..layouts import draw, model
from ..perf import plots


def self_check(kernel) -> tuple[int, list[str]]:
    """(layouts checked, problems) of one CuTe kernel: layouts.model.check."""
    try:
        rec = L.build(kernel)
    except KeyError as e:
        return 0, [str(e).strip("'\"")]
    return len(list(rec.items())), model.check(rec)


def self_check_all(names: Sequence[str]) -> list[dict]:
    return [dict(zip(("kernel", "layouts", "problems"), (n, *self_check(registry.get(n))))) for n in names]


def summary(kernel, rec) -> str:
    """A few lines: what the kernel is, how many layouts it has, and those every entry shares."""
    kinds, tile = Counter(it.kind for it in rec.items()), "x".join(map(str, kernel.tile)) if kernel.tile else "-"
    out = [f"{kernel.name}  ({kernel.source}): tile {tile}, {kernel.threads} threads; "
           f"{sum(kinds.values())} layouts in {len(rec.sections)} sections ("
           + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())) + ")"]
    shared = [s for s in rec.sections if "every entry" in s.title] or rec.sections[-1:]
    picked = [it for s in shared for it in s.items if it.kind not in ("tv", "ldsm")]   # long: --full
    w = max([4] + [len(it.name.rsplit("/", 1)[-1]) for it in picked]) + 2
    out += [f"  {it.name.rsplit('/', 1)[-1]:<{w}}{L.fmt(it.layout)}" for it in picked]
    return "\n".join(out) + "\n"


def record_json(kernel, rec, full: bool = False) -> dict:
    """One kernel's layouts as data, each as CuTe prints it (`full`: with the text grids)."""
    return {"kernel": kernel.name, "source": kernel.source, "tile": list(kernel.tile) if kernel.tile else None,
            "threads": kernel.threads, "sections": [{"title": sec.title, "items": [
                {"name": it.name, "kind": it.kind, "title": it.title, "layout": L.fmt(it.layout),
                 **({"text": L.describe(it)} if full else {})} for it in sec.items]} for sec in rec.sections]}


def run(kernels: list[str] | None = None, fmt: str | None = None, out: str | None = None,
        thread: int | None = None, shape: tuple[int, int, int] | None = None,
        full: bool = False, as_json: bool = False) -> int:
    """Everything is checked, and every recipe built, before the first file is written.
    `fmt` None: a text summary on stdout, or with `out` SVG pictures (PNG: minutes per kernel)."""
    fail = functools.partial(error, prog="cute-gemm layouts")
    fmt = fmt or ("svg" if out else "text")
    cute = [k for k in registry.kernels("cute") if L.has_recipe(k)]
    chosen = [registry.get(n) for n in kernels] if kernels else cute
    composed = [k for k in chosen if k.gemm_of is not None]
    if composed:     # a pre-pass and another kernel's GEMM: the layouts are that GEMM's
        return fail("; ".join(f"{k.name} runs {k.gemm_of.kernel.name}'s GEMM after a pre-pass, a "
                              f"{k.gemm_of.kernel.source} kernel: see `cute-gemm layouts "
                              f"{next(x.name for x in cute if x.source == k.gemm_of.kernel.source)}`"
                              for k in composed))
    bad = [k.name for k in chosen if k.family != "cute"]
    if bad:
        return fail(f"{', '.join(bad)} {'is not a CuTe kernel' if len(bad) == 1 else 'are not CuTe kernels'} "
                    f"(choose from {', '.join(k.name for k in cute)})")
    problem, thr = tuple(shape or L.PROBLEM), L.THREAD if thread is None else thread
    for k in chosen:
        if not 0 <= thr < k.threads:
            return fail(f"--thread {thr} outside 0..{k.threads - 1} for {k.name}")
    if fmt == "png" and not plots.available():
        return fail("--format png needs matplotlib: pip install 'cute_gemm[plot]' (or use --format svg)")
    recs = [(k, L.build(k, problem, thr)) for k in chosen]
    if fmt == "text" and out is None:
        if as_json:
            print_json({"problem": list(problem), "thread": thr,
                        "kernels": [record_json(k, rec, full) for k, rec in recs]})
            return 0
        for i, (k, rec) in enumerate(recs):
            sys.stdout.write(L.dump_text(rec) if full else ("\n" if i else "") + summary(k, rec))
        if not full:
            print("\n`cute-gemm layouts KERNEL --full` prints the grids; --format svg draws them "
                  "(with an index.html)")
        return 0
    root = Path(out or "layouts")
    root.mkdir(parents=True, exist_ok=True)
    if fmt == "text":        # a file is where the whole dump belongs: always the full text
        written = [root / f"{k.name}.txt" for k, _ in recs]
        for p, (_, rec) in zip(written, recs):
            p.write_text(L.dump_text(rec))
        show(as_json, {"format": "text", "files": [str(p) for p in written]}, lambda: "\n".join(map(str, written)))
        return 0
    pages = []
    for k, rec in recs:
        d = root / k.name
        d.mkdir(parents=True, exist_ok=True)
        pics = []
        for i, it in enumerate(rec.items()):
            p = d / f"{i:02d}_{re.sub(r'[^A-Za-z0-9_.-]+', '_', it.name.split('/', 1)[1]).strip('_')}.{fmt}"
            draw.write(draw.grid_of(it), p)
            pics.append((it.name, p.relative_to(root).as_posix()))
        pages.append((k, rec, pics))
        if not as_json:
            print(f"{d}/ ({len(pics)} {fmt} files)")
    index = draw.gallery(root, fmt, pages, problem, thr)
    show(as_json, {"format": fmt, "index": str(index), "kernels": [
        {"kernel": k.name, "files": [str(root / rel) for _, rel in pics]} for k, _, pics in pages]},
        lambda: f"{index}: {sum(len(p) for _, _, p in pages)} pictures of {len(pages)} kernels; open it in a browser")
    return 0


def add_arguments(p) -> None:
    p.add_argument("kernels", nargs="*", metavar="KERNEL", type=kernel_name,
                   help="registered CuTe kernels (default: all of them)")
    p.add_argument("--format", choices=("text", "svg", "png"), default=None,
                   help="text (the default without --out: a summary on stdout), svg (the "
                        "default with --out: pictures in ~2 s), or png (needs matplotlib and is "
                        "slow: minutes per kernel); pictures come with an index.html gallery")
    p.add_argument("--full", action="store_true",
                   help="text: every layout with CuTe's print_layout grid and the thread maps "
                        "(default: a short summary per kernel)")
    p.add_argument("--out", metavar="DIR",
                   help="output folder: SVG pictures unless --format says otherwise (with --format text: one full "
                        "dump per kernel; default: stdout, or ./layouts for --format svg/png)")
    p.add_argument("--thread", type=nonneg_int, help="the thread whose partitions are shown (default 37)")
    p.add_argument("--shape", type=shape_mnk, metavar="MxNxK",
                   help="representative problem for the global tiles (default 256x256x256)")
    p.add_argument("--json", action="store_true", help="JSON on stdout: the layouts (text), or the files written")


def register(subparsers) -> None:
    s = subparsers.add_parser("layouts", help="show the CuTe kernels' layouts (summary, full "
                              "text, svg or png pictures)", description=__doc__)
    add_arguments(s)
    s.set_defaults(fn=lambda a: run(a.kernels, a.format, a.out, a.thread, a.shape, a.full, a.json))
