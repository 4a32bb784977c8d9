"""Pictures of layout dump items (model.Item): SVG written by hand, PNG via matplotlib.

Every picture is a grid of the tile the item describes, with row and column indices and a
title (the item's title and CuTe's `shape:stride`):
  layout     cells show the offset; colour = offset mod 32 (the 4-byte shared-memory bank)
  banks      cells show the bank (of 32) each element of a shared-memory layout lands in
  boxes      cells show B# (the TMA box of a stage that brings the element in), coloured by box
  thread     cells show T# (the thread index at that coordinate), coloured by thread
  tv         cells show T#/V# (thread, value) of a TiledCopy/TiledMMA TV layout, coloured by thread
  partition  cells show the owner thread (exact partitions), coloured by thread; the chosen
             thread's cells are outlined and show V# (the value index in its partition)
Large grids (more than ~64 columns) drop the per-cell labels and keep the colours.
"""
from __future__ import annotations

import colorsys
from dataclasses import dataclass
from html import escape

from . import algebra as L
from .model import Item


def thread_colour(t: int) -> str:
    """Distinct, light colours for neighbouring threads (golden-ratio hue steps)."""
    h = (t * 0.61803398875) % 1.0
    v = 0.97 if (t // 8) % 2 == 0 else 0.86
    r, g, b = colorsys.hsv_to_rgb(h, 0.42, v)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


GREY = "#eeeeee"


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
    sub = L.fmt(it.layout) + (f"   offset {int(it.offset)}" if it.offset is not None else "")
    cells: dict[tuple[int, int], Cell] = {}
    if it.kind in ("layout", "thread"):
        g = it.grid_layout()
        rows = int(L.size(L.get(g.shape, 0)))
        cols = int(L.size(L.get(g.shape, 1)))
        # g(r, c) is g's value at linear index r + rows * c (colexicographic)
        flat = L.values(g) if L.rank(g) == 2 else None
        for r in range(rows):
            for c in range(cols):
                v = flat[r + rows * c] if flat is not None else L.value(g, r, c)
                if it.kind == "thread":
                    cells[(r, c)] = Cell(thread_colour(v), f"T{v}")
                else:
                    cells[(r, c)] = Cell(thread_colour(v % 32), str(v))
        legend = ("cell = thread index; colour = thread" if it.kind == "thread" else
                  "cell = offset; colour = offset mod 32 (shared-memory bank of a 4-byte word)")
        if L.rank(it.layout) == 3:
            legend += "; showing index 0 of the third mode"
        return Grid(it.title, sub, rows, cols, cells, legend)
    rows, cols = it.tile
    if it.kind in ("banks", "boxes"):
        for r in range(rows):
            for c in range(cols):
                v = it.table[r][c]
                cells[(r, c)] = (Cell(thread_colour(v), str(v) if it.kind == "banks" else f"B{v}")
                                 if v >= 0 else Cell(GREY))
        legend = (f"cell = bank of a {it.elem_bytes}-byte element (4-byte word mod 32); colour = bank"
                  if it.kind == "banks" else
                  f"cell = TMA box {it.box[:2]} (contiguous extent first) bringing it in; grey: none")
        return Grid(it.title, sub, rows, cols, cells, legend)
    if it.kind in ("tv", "ldsm"):
        for (r, c), tvs in it.tv_cells().items():
            t, v = tvs[0]
            more = f"+{len(tvs) - 1}" if len(tvs) > 1 else ""
            cells[(r, c)] = Cell(thread_colour(t), f"T{t}\nV{v}{more}")
        return Grid(it.title, sub, rows, cols, cells,
                    "cell = T#/V# (thread, value) that maps there; colour = thread")
    # partition
    vals = it.values_of(it.thread)
    own = it.owners() if it.exact else None
    for r in range(rows):
        for c in range(cols):
            if (r, c) in vals:
                cells[(r, c)] = Cell(thread_colour(it.thread), f"V{vals[(r, c)]}", bold=True)
            elif own is not None:
                t = own[r + c * rows][0]
                cells[(r, c)] = Cell(thread_colour(t), f"T{t}")
            else:
                cells[(r, c)] = Cell(GREY)
    legend = (f"outlined: thread {it.thread}'s elements, V# = index in its partition"
              + ("; other cells: owner thread T#, coloured by thread" if it.exact else
                 "; grey: elements thread " f"{it.thread} does not read"))
    if it.src_rank == 3:
        legend += "; k-tile / stage 0"
    return Grid(it.title, sub, rows, cols, cells, legend)


# ---- geometry shared by SVG and PNG -----------------------------------------------------------

def _geometry(g: Grid):
    longest = max((max((len(s) for s in c.text.split("\n")), default=0)
                   for c in g.cells.values()), default=0)
    two = any("\n" in c.text for c in g.cells.values())
    cell_w = max(22, 7 * longest + 8)
    cell_h = 30 if two else 20
    if g.cols > 64 or g.rows > 256:      # too big to read labels: colours only
        cell_w = cell_h = max(4, min(12, 1600 // max(g.cols, 1)))
        labels = False
    else:
        labels = True
    left, top = 40, 78
    width = left + g.cols * cell_w + 20
    height = top + g.rows * cell_h + 36
    width = max(width, 8 * max(len(g.title), len(g.subtitle), len(g.legend)) // 1 + 30)
    return cell_w, cell_h, left, top, width, height, labels


def to_svg(g: Grid) -> str:
    cw, ch, left, top, width, height, labels = _geometry(g)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="DejaVu Sans Mono, monospace">',
         f'<rect width="{width}" height="{height}" fill="white"/>',
         f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(g.title)}</text>',
         f'<text x="10" y="38" font-size="12">{escape(g.subtitle)}</text>',
         f'<text x="10" y="54" font-size="11" fill="#555">{escape(g.legend)}</text>']
    step = 1 if labels else max(1, 8 * 12 // max(cw, 1))
    for c in range(0, g.cols, step):
        o.append(f'<text x="{left + c * cw + cw / 2}" y="{top - 4}" font-size="10" '
                 f'text-anchor="middle" fill="#333">{c}</text>')
    rstep = 1 if labels else max(1, 12 // max(ch, 1) + 1)
    for r in range(0, g.rows, rstep):
        o.append(f'<text x="{left - 4}" y="{top + r * ch + ch / 2 + 3.5}" font-size="10" '
                 f'text-anchor="end" fill="#333">{r}</text>')
    bold = []
    for (r, c), cell in g.cells.items():
        x, y = left + c * cw, top + r * ch
        o.append(f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" fill="{cell.fill}" '
                 f'stroke="#888" stroke-width="{0.5 if labels else 0.1}"/>')
        if cell.bold:
            bold.append(f'<rect x="{x + 1}" y="{y + 1}" width="{cw - 2}" height="{ch - 2}" '
                        f'fill="none" stroke="black" stroke-width="2"/>')
        if labels and cell.text:
            lines = cell.text.split("\n")
            for i, s in enumerate(lines):
                yy = y + ch / 2 + 4 + (i - (len(lines) - 1) / 2) * 12
                weight = ' font-weight="bold"' if cell.bold else ""
                o.append(f'<text x="{x + cw / 2}" y="{yy}" font-size="10" text-anchor="middle"'
                         f'{weight}>{escape(s)}</text>')
    o += bold
    o.append("</svg>\n")
    return "\n".join(o)


def write_png(g: Grid, path) -> None:
    """The same picture through matplotlib (the optional `plot` extra)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.collections import PatchCollection
        from matplotlib.patches import Rectangle
    except ImportError as e:
        raise RuntimeError("PNG output needs matplotlib: pip install 'cute_gemm[plot]' "
                           "(or use --format svg)") from e
    cw, ch, left, top, width, height, labels = _geometry(g)
    dpi = 100
    fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    pt = 72 / dpi           # points per pixel
    ax.text(10, 20, g.title, fontsize=14 * pt * 0.9 / 0.75 * 0.75, weight="bold", va="baseline",
            family="monospace")
    ax.text(10, 38, g.subtitle, fontsize=12 * pt, va="baseline", family="monospace")
    ax.text(10, 54, g.legend, fontsize=11 * pt, va="baseline", color="#555", family="monospace")
    rects, colours = [], []
    for (r, c), cell in g.cells.items():
        rects.append(Rectangle((left + c * cw, top + r * ch), cw, ch))
        colours.append(cell.fill)
    ax.add_collection(PatchCollection(rects, facecolor=colours, edgecolor="#888",
                                      linewidth=0.5 * pt if labels else 0.05))
    bold = [Rectangle((left + c * cw + 1, top + r * ch + 1), cw - 2, ch - 2)
            for (r, c), cell in g.cells.items() if cell.bold]
    if bold:
        ax.add_collection(PatchCollection(bold, facecolor="none", edgecolor="black", linewidth=2 * pt))
    step = 1 if labels else max(1, 8 * 12 // max(cw, 1))
    for c in range(0, g.cols, step):
        ax.text(left + c * cw + cw / 2, top - 4, str(c), fontsize=10 * pt, ha="center",
                va="baseline", color="#333")
    rstep = 1 if labels else max(1, 12 // max(ch, 1) + 1)
    for r in range(0, g.rows, rstep):
        ax.text(left - 4, top + r * ch + ch / 2, str(r), fontsize=10 * pt, ha="right",
                va="center", color="#333")
    if labels:
        for (r, c), cell in g.cells.items():
            if cell.text:
                ax.text(left + c * cw + cw / 2, top + r * ch + ch / 2, cell.text, fontsize=10 * pt,
                        ha="center", va="center", linespacing=1.0, family="monospace",
                        weight="bold" if cell.bold else "normal")
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
