"""`cute-gemm layouts`: the CuTe layouts of registered kernels, as a summary, full text grids,
or SVG/PNG pictures with an index.html gallery; and the layout self-checks `check` runs.

The full dump of every kernel is ~70,000 lines, so the default is a few lines per kernel (the
layouts every entry point shares); --full gives CuTe's print_layout grids and the thread maps.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from html import escape
from pathlib import Path
from typing import Sequence

from .. import layouts as L
from .. import registry
from .base import Progress, kernel_name, nonneg_int, print_json, shape_mnk
from ..base.errors import UnknownKernelError
from ..layouts import analysis
from ..layouts import draw as D

FORMATS = ("text", "svg", "png")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


# ---- self-checks ---------------------------------------------------------------------------


def self_check(kernel, problem=None, thread=None) -> tuple[int, list[str]]:
    """(layouts checked, problems) for one CuTe kernel: the pure-Python properties that
    tests/test_layouts.py asserts (layouts.analysis.check), so `cute-gemm check` can report
    them without pytest."""
    try:
        rec = L.build(kernel, problem or L.PROBLEM, L.THREAD if thread is None else thread)
    except KeyError as e:
        return 0, [str(e).strip("'\"")]
    return len(list(rec.items())), analysis.check(rec)


def self_check_all(names: Sequence[str], progress: bool | None = None) -> list[dict]:
    bar = Progress(len(names), progress, verb="checking layouts of")
    out = []
    try:
        for n in names:
            bar.start(n)
            count, problems = self_check(registry.get(n))
            out.append({"kernel": n, "layouts": count, "problems": problems})
            bar.finish(n, "ok" if not problems else f"{len(problems)} problems")
    finally:
        bar.close()
    return out


# ---- text ---------------------------------------------------------------------------------------


def summary(kernel, rec) -> str:
    """A few lines: what the kernel is, how many layouts it has, and those every entry shares."""
    items = list(rec.items())
    kinds = Counter(it.kind for it in items)
    tile = "x".join(map(str, kernel.tile)) if kernel.tile else "-"
    out = [f"{kernel.name}  ({rec.source}): tile {tile}, {kernel.threads} threads; "
           f"{len(items)} layouts in {len(rec.sections)} sections ("
           + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())) + ")"]
    shared = [s for s in rec.sections if "every entry" in s.title] or rec.sections[-1:]
    picked = [it for s in shared for it in s.items if it.kind not in ("tv", "ldsm")]   # TV maps: long, see --full
    w = max([4] + [len(it.name.rsplit("/", 1)[-1]) for it in picked]) + 2
    for it in picked:
        leaf = it.name.rsplit("/", 1)[-1]
        out.append(f"  {leaf:<{w}}{L.fmt(it.layout)}")
    return "\n".join(out) + "\n"


def full_text(rec) -> str:
    """layouts.dump_text without the repeated line: print_layout restates the layout that
    the line above it already gives."""
    out = [f"# {rec.kernel.name}  ({rec.source})\n\n"]
    for s in rec.sections:
        out.append(f"## {s.title}\n\n")
        for it in s.items:
            lines = L.describe(it).split("\n")
            for j in (2, 3):
                if j < len(lines) and lines[j] == lines[1]:
                    del lines[j]
                    break
            out.append("\n".join(lines))
    return "".join(out)


# ---- pictures -----------------------------------------------------------------------------------

_CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
nav a{margin-right:1em}h2{margin-top:2em;border-bottom:1px solid #ccc}
.g{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0;max-width:420px}
figure img{max-width:420px;max-height:320px;border:1px solid #ddd;background:#fff}
figcaption{font-size:.85em}code{font-size:.9em;word-break:break-all}"""


def gallery(out: Path, fmt: str, pages: list[tuple[object, object, list[tuple[str, object]]]],
            problem, thread: int) -> Path:
    """index.html in `out`: a section per kernel, a picture per layout with its caption,
    every link relative so the folder can be moved or served as it is."""
    h = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
         "<title>cute_gemm: CuTe layouts</title>", f"<style>{_CSS}</style></head><body>",
         "<h1>CuTe layouts of the cute_gemm kernels</h1>",
         f"<p>Problem (M,N,K) = {escape(str(tuple(problem)))}, thread {thread}'s partitions "
         f"outlined. Written by <code>cute-gemm layouts --format {fmt}</code>; click a picture "
         "for full size.</p>",
         "<nav>" + "".join(f'<a href="#{escape(k.name)}">{escape(k.name)}</a>' for k, _, _ in pages)
         + "</nav>"]
    for kernel, rec, pics in pages:
        h.append(f'<h2 id="{escape(kernel.name)}">{escape(kernel.name)} '
                 f"<small>({escape(rec.source)})</small></h2>")
        by_item = dict(pics)
        for s in rec.sections:
            h.append(f"<h3>{escape(s.title)}</h3>")
            h.append('<div class="g">')
            for it in s.items:
                rel = by_item[it.name]
                h.append(f'<figure><a href="{escape(rel)}"><img src="{escape(rel)}" loading="lazy" '
                         f'alt="{escape(it.title)}"></a><figcaption>{escape(it.title)}<br>'
                         f"<code>{escape(L.fmt(it.layout))}</code></figcaption></figure>")
            h.append("</div>")
    h.append("</body></html>\n")
    p = out / "index.html"
    p.write_text("\n".join(h))
    return p


# ---- the command ----------------------------------------------------------------------------------


def _fail(msg: str) -> int:
    print(f"cute-gemm layouts: error: {msg}", file=sys.stderr)
    return 2


def record_json(kernel, rec, full: bool = False) -> dict:
    """The layouts of one kernel as data: its sections, each layout as CuTe prints it (with
    `full`, also the text grid --full prints)."""
    return {"kernel": kernel.name, "source": rec.source,
            "tile": list(kernel.tile) if kernel.tile else None, "threads": kernel.threads,
            "sections": [{"title": sec.title, "items": [
                dict({"name": it.name, "kind": it.kind, "title": it.title,
                      "layout": L.fmt(it.layout)}, **({"text": L.describe(it)} if full else {}))
                for it in sec.items]} for sec in rec.sections]}


def run(kernels: list[str] | None = None, fmt: str | None = None, out: str | None = None,
        thread: int | None = None, shape: str | tuple[int, int, int] | None = None,
        full: bool = False, as_json: bool = False) -> int:
    """Everything is checked, and every recipe built, before the first file is written.
    `fmt` None: a text summary on stdout, or with `out` SVG pictures (~2 s for every kernel;
    PNG through matplotlib takes minutes per kernel)."""
    fmt = fmt or ("svg" if out else "text")
    cute = tuple(k for k in registry.kernels("cute") if L.has_recipe(k))
    try:
        chosen = [registry.get(n) for n in kernels] if kernels else list(cute)
    except UnknownKernelError as e:
        return _fail(str(e))
    composed = [k for k in chosen if k.gemm_of is not None]
    if composed:     # a pre-pass and another kernel's GEMM: the layouts are that GEMM's
        return _fail("; ".join(f"{k.name} runs {k.gemm_of.kernel}'s GEMM after a pre-pass: "
                               f"see `cute-gemm layouts {k.gemm_of.kernel}`" for k in composed))
    bad = [k.name for k in chosen if k.family != "cute"]
    if bad:
        return _fail(f"{', '.join(bad)} {'is not a CuTe kernel' if len(bad) == 1 else 'are not CuTe kernels'} "
                     f"(choose from {', '.join(k.name for k in cute)})")
    if fmt not in FORMATS:
        return _fail(f"--format {fmt!r}: choose from {', '.join(FORMATS)}")
    try:
        problem = shape_mnk(shape) if isinstance(shape, str) else tuple(shape or L.PROBLEM)
    except argparse.ArgumentTypeError as e:
        return _fail(f"--shape: {e}")
    thr = L.THREAD if thread is None else thread
    for k in chosen:
        if not 0 <= thr < k.threads:
            return _fail(f"--thread {thr} outside 0..{k.threads - 1} for {k.name}")
    if fmt == "png":
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return _fail("--format png needs matplotlib: pip install 'cute_gemm[plot]' "
                         "(or use --format svg)")
    recs = [(k, L.build(k, problem, thr)) for k in chosen]
    if fmt == "text":
        if as_json and out is None:
            print_json({"problem": list(problem), "thread": thr,
                        "kernels": [record_json(k, rec, full) for k, rec in recs]})
            return 0
        return _write_text(recs, out, full, as_json)
    root = Path(out or "layouts")
    pages = []
    for k, rec in recs:
        d = root / k.name
        d.mkdir(parents=True, exist_ok=True)
        pics = []
        for i, it in enumerate(rec.items()):
            p = d / f"{i:02d}_{_safe(it.name.split('/', 1)[1])}.{fmt}"
            g = D.grid_of(it)
            if fmt == "svg":
                p.write_text(D.to_svg(g))
            else:
                D.write_png(g, p)
            pics.append((it.name, p.relative_to(root).as_posix()))
        pages.append((k, rec, pics))
        if not as_json:
            print(f"{d}/ ({len(pics)} {fmt} files)")
    index = gallery(root, fmt, pages, problem, thr)
    if as_json:
        print_json({"format": fmt, "index": str(index), "kernels": [
            {"kernel": k.name, "files": [str(root / rel) for _, rel in pics]}
            for k, _, pics in pages]})
    else:
        print(f"{index}: {sum(len(p) for _, _, p in pages)} pictures of {len(pages)} kernels; "
              "open it in a browser")
    return 0


def _write_text(recs, out: str | None, full: bool, as_json: bool = False) -> int:
    if out is None:
        for i, (k, rec) in enumerate(recs):
            sys.stdout.write(full_text(rec) if full else ("\n" if i else "") + summary(k, rec))
        if not full:
            print("\n`cute-gemm layouts KERNEL --full` prints the grids; --format svg draws them "
                  "(with an index.html)")
        return 0
    Path(out).mkdir(parents=True, exist_ok=True)
    written = []
    for k, rec in recs:      # a file is where the whole dump belongs: always the full text
        p = Path(out) / f"{k.name}.txt"
        p.write_text(full_text(rec))
        written.append(str(p))
        if not as_json:
            print(p)
    if as_json:
        print_json({"format": "text", "files": written})
    return 0


def add_arguments(p) -> None:
    p.add_argument("kernels", nargs="*", metavar="KERNEL", type=kernel_name,
                   help="registered CuTe kernels (default: all of them)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="text (the default without --out: a summary on stdout), svg (the "
                        "default with --out: pictures in ~2 s), or png (needs matplotlib and is "
                        "slow: minutes per kernel); pictures come with an index.html gallery")
    p.add_argument("--full", action="store_true",
                   help="text: every layout with CuTe's print_layout grid and the thread maps "
                        "(default: a short summary per kernel)")
    p.add_argument("--out", metavar="DIR",
                   help="output folder: SVG pictures unless --format says otherwise (with "
                        "--format text: one full dump per kernel; default: stdout, or ./layouts "
                        "for --format svg/png)")
    p.add_argument("--thread", type=nonneg_int,
                   help="the thread whose partitions are shown (default 37)")
    p.add_argument("--shape", type=shape_mnk, metavar="MxNxK",
                   help="representative problem for the global tiles (default 256x256x256)")
    p.add_argument("--json", action="store_true",
                   help="JSON on stdout: the layouts (text), or the files written")


def register(subparsers) -> None:
    s = subparsers.add_parser("layouts", help="show the CuTe kernels' layouts (summary, full "
                              "text, svg or png pictures)", description=__doc__)
    add_arguments(s)
    s.set_defaults(fn=lambda a: run(a.kernels, a.format, a.out, a.thread, a.shape, a.full,
                                    a.json))
