"""The dumps drawn: as text (CuTe's `print` and `print_layout`, and the maps CuTe has no text for: T#/V#
thread maps, bank maps, TMA boxes), and as SVG or PNG pictures of the item's tile with an index.html."""
from __future__ import annotations

import colorsys
from dataclasses import dataclass
from html import escape
from pathlib import Path

from .algebra import fmt, print_layout, product_each, rank, values
from .model import Item, Recipe, first

COMPUTED = ("banks", "boxes", "ldsm")   # maps computed here, not printed by CuTe


def item_text(it: Item, once: bool = False) -> str:
    """What CuTe C++ prints for the item too: `print(layout)`, offset, `print_layout` grid (`once`:
    without the grid's first line where it restates the layout)."""
    out = [f"@@ {it.name}\n", fmt(it.layout), "\n"]
    if it.kind == "partition":
        out.append(f"offset {int(it.offset)}\n")
    if rank(it.layout) in (2, 3):
        g = first(it.layout)
        out.append(print_layout(g).split("\n", 1)[1] if once and g is it.layout else print_layout(g))
    return "".join(out)


def describe(it: Item, once: bool = False) -> str:
    """One item for people: title, CuTe's text (`once`: see item_text) and, but for a layout's own grid,
    the map its picture draws: who holds, reads or brings in each element of the tile, or its bank."""
    body = f"{fmt(it.layout)}\n" if it.kind in COMPUTED else item_text(it, once).split("\n", 1)[1]
    out = [f"== {it.title}\n", body]
    if it.kind not in ("layout", "thread"):          # those: CuTe's print_layout grid above
        g = grid_of(it)
        text = {(r, c): cell.text.replace("\n", "") or "." for (r, c), cell in g.cells.items()}
        rows, cols = range(g.rows), range(g.cols)
        w = max(len(text.get((r, c), ".")) for r in rows for c in cols) + 1
        out += [f"{g.legend}:\n     " + "".join(f"{c:>{w}}" for c in cols) + "\n"]
        out += [f"{r:>4} " + "".join(f"{text.get((r, c), '.'):>{w}}" for c in cols) + "\n" for r in rows]
    return "".join(out) + "\n"


def dump_text(rec: Recipe) -> str:
    """Every item of a recipe, by section (`cute-gemm layouts --full`)."""
    out = [f"# {rec.kernel.name}  ({rec.kernel.source})\n\n"]
    for s in rec.sections:
        out.append(f"## {s.title}\n\n")
        out += [describe(it, once=True) for it in s.items]
    return "".join(out)


# ---- pictures -----------------------------------------------------------------------------------
GREY = "#eeeeee"


def thread_colour(t: int) -> str:
    """Distinct, light colours for neighbouring threads (golden-ratio hue steps)."""
    r, g, b = colorsys.hsv_to_rgb((t * 0.61803398875) % 1.0, 0.42, 0.97 if (t // 8) % 2 == 0 else 0.86)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


@dataclass
class Cell:
    fill: str
    text: str = ""          # "\n" separates two lines
    bold: bool = False      # outlined (the chosen thread's elements)


@dataclass
class Grid:
    title: str
    subtitle: str
    rows: int
    cols: int
    cells: dict             # (r, c) -> Cell
    legend: str = ""


def grid_of(it: Item) -> Grid:
    sub = fmt(it.layout) + (f"   offset {int(it.offset)}" if it.offset is not None else "")
    rows, cols = it.tile or (int(e) for e in product_each(first(it.layout).shape))
    if it.kind in ("layout", "thread"):
        flat = values(first(it.layout))                  # g(r, c) at index r + rows * c

        def cell(r, c):
            v = flat[r + rows * c]
            return Cell(thread_colour(v), f"T{v}") if it.kind == "thread" else Cell(thread_colour(v % 32), str(v))
        legend = ("cell = thread index; colour = thread" if it.kind == "thread" else
                  "cell = offset; colour = offset mod 32 (shared-memory bank of a 4-byte word)")
        legend += ("; showing index 0 of the third mode" if rank(it.layout) == 3 else
                   "; showing index 0 of every mode past the second" if rank(it.layout) > 3 else "")
    elif it.kind in ("banks", "boxes"):
        def cell(r, c):
            v = it.table[r][c]
            return Cell(thread_colour(v), str(v) if it.kind == "banks" else f"B{v}") if v >= 0 else Cell(GREY)
        legend = (f"cell = bank of a {it.elem_bytes}-byte element (4-byte word mod 32) in stage 0; colour = bank"
                  if it.kind == "banks" else
                  f"cell = TMA box {it.box[:2]} (contiguous extent first) bringing it in; grey: none")
    elif it.kind in ("tv", "ldsm"):
        tvs = it.tv_cells()

        def cell(r, c):
            (t, v), *more = tvs.get((r, c)) or [(None, None)]
            return None if t is None else Cell(thread_colour(t), f"T{t}\nV{v}" + (f"+{len(more)}" if more else ""))
        legend = "cell = T#/V# (thread, value) that maps there (+n: n more); colour = thread"
    else:                                                # a partition
        vals, own = it.values_of(it.thread), it.owners if it.exact else None

        def cell(r, c):
            if (r, c) in vals:
                return Cell(thread_colour(it.thread), f"V{vals[(r, c)]}", bold=True)
            t = None if own is None else own[r + c * rows][0]
            return Cell(GREY) if t is None else Cell(thread_colour(t), f"T{t}")
        legend = (f"thread {it.thread} owns the V# cells (outlined; # = index in its partition)"
                  + ("; other cells: owner thread T#, coloured by thread" if it.exact else
                     f"; grey: elements thread {it.thread} does not read")
                  + ("; k-tile / stage 0" if it.src_rank == 3 else ""))
    cells = {(r, c): cell(r, c) for r in range(rows) for c in range(cols)}
    return Grid(it.title, sub, rows, cols, {k: v for k, v in cells.items() if v is not None}, legend)


# ---- one list of shapes, drawn as SVG or with matplotlib ----------------------------------------
def _marks(g: Grid):
    """(width, height, rects, texts): rects (x, y, w, h, fill, stroke, line width), texts
    (x, y, text, size, anchor, centred vertically, bold, colour); outlines after the cells."""
    longest = max((len(s) for c in g.cells.values() for s in c.text.split("\n")), default=0)
    cw, ch = max(22, 7 * longest + 8), 30 if any("\n" in c.text for c in g.cells.values()) else 20
    labels = not (g.cols > 64 or g.rows > 256)           # too big to read labels: colours only
    if not labels:
        cw = ch = max(4, min(12, 1600 // max(g.cols, 1)))
    left, top = 40, 78
    width = max(left + g.cols * cw + 20, 8 * max(len(g.title), len(g.subtitle), len(g.legend)) + 30)
    height = top + g.rows * ch + 36
    texts = [(10, 20, g.title, 14, "start", False, True, "black"),
             (10, 38, g.subtitle, 12, "start", False, False, "black"),
             (10, 54, g.legend, 11, "start", False, False, "#555")]
    texts += [(left + c * cw + cw / 2, top - 4, str(c), 10, "middle", False, False, "#333")
              for c in range(0, g.cols, 1 if labels else max(1, 96 // cw))]
    texts += [(left - 4, top + r * ch + ch / 2, str(r), 10, "end", True, False, "#333")
              for r in range(0, g.rows, 1 if labels else 12 // ch + 1)]
    rects = [(left + c * cw, top + r * ch, cw, ch, cell.fill, "#888", 0.5 if labels else 0.1)
             for (r, c), cell in g.cells.items()]
    rects += [(left + c * cw + 1, top + r * ch + 1, cw - 2, ch - 2, "none", "black", 2)
              for (r, c), cell in g.cells.items() if cell.bold]
    for (r, c), cell in g.cells.items():
        lines = cell.text.split("\n") if labels and cell.text else []
        texts += [(left + c * cw + cw / 2, top + r * ch + ch / 2 + (i - (len(lines) - 1) / 2) * 12,
                   s, 10, "middle", True, cell.bold, "black") for i, s in enumerate(lines)]
    return width, height, rects, texts


def to_svg(g: Grid) -> str:
    width, height, rects, texts = _marks(g)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="DejaVu Sans Mono, monospace">', f'<rect width="{width}" height="{height}" fill="white"/>']
    o += [f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}" stroke="{stroke}" '
          f'stroke-width="{lw}"/>' for x, y, w, h, fill, stroke, lw in rects]
    for x, y, s, pt, anchor, centred, bold, colour in texts:
        o.append(f'<text x="{x}" y="{y + (0.35 * pt if centred else 0)}" font-size="{pt}"'
                 + (f' text-anchor="{anchor}"' if anchor != "start" else "")
                 + (' font-weight="bold"' if bold else "")
                 + (f' fill="{colour}"' if colour != "black" else "") + f">{escape(s)}</text>")
    return "\n".join(o + ["</svg>\n"])


def write(g: Grid, path: Path) -> None:
    """The picture as SVG, or by its suffix as PNG through matplotlib (the optional `plot` extra,
    whose absence `cute-gemm layouts` reports before drawing)."""
    if path.suffix != ".png":
        path.write_text(to_svg(g))
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle
    (width, height, rects, texts), dpi = _marks(g), 100
    pt = 72 / dpi           # points per pixel
    fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1), xlim=(0, width), ylim=(height, 0))
    ax.axis("off")
    ax.add_collection(PatchCollection([Rectangle((x, y), w, h) for x, y, w, h, *_ in rects],
                                      facecolor=[r[4] for r in rects], edgecolor=[r[5] for r in rects],
                                      linewidth=[r[6] * pt for r in rects]))
    for x, y, s, size_, anchor, centred, bold, colour in texts:
        ax.text(x, y, s, fontsize=size_ * pt, ha={"start": "left", "middle": "center", "end": "right"}[anchor],
                va="center" if centred else "baseline", color=colour, family="monospace",
                weight="bold" if bold else "normal")
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


_CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
nav a{margin-right:1em}h2{margin-top:2em;border-bottom:1px solid #ccc}
.g{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0;max-width:420px}
figure img{max-width:420px;max-height:320px;border:1px solid #ddd;background:#fff}
figcaption{font-size:.85em}code{font-size:.9em;word-break:break-all}"""


def gallery(out: Path, fmt_: str, pages: list, problem, thread: int) -> Path:
    """index.html in `out`: per (kernel, recipe, [(item name, relative path)]) a section,
    a picture per layout with its caption; relative links, so the folder can move."""
    h = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
         "<title>cute_gemm: CuTe layouts</title>", f"<style>{_CSS}</style></head><body>",
         "<h1>CuTe layouts of the cute_gemm kernels</h1>",
         f"<p>Problem (M,N,K) = {escape(str(tuple(problem)))}, thread {thread}'s partitions outlined. Written by "
         f"<code>cute-gemm layouts --format {fmt_}</code>; click a picture for full size.</p>",
         "<nav>" + "".join(f'<a href="#{escape(k.name)}">{escape(k.name)}</a>' for k, _, _ in pages)
         + "</nav>"]
    for kernel, rec, pics in pages:
        h.append(f'<h2 id="{escape(kernel.name)}">{escape(kernel.name)} <small>({escape(kernel.source)})</small></h2>')
        by_item = dict(pics)
        for s in rec.sections:
            h += [f"<h3>{escape(s.title)}</h3>", '<div class="g">']
            h += [f'<figure><a href="{escape(by_item[it.name])}"><img src="{escape(by_item[it.name])}" '
                  f'loading="lazy" alt="{escape(it.title)}"></a><figcaption>{escape(it.title)}<br>'
                  f"<code>{escape(fmt(it.layout))}</code></figcaption></figure>" for it in s.items]
            h.append("</div>")
    h.append("</body></html>\n")
    p = out / "index.html"
    p.write_text("\n".join(h))
    return p
