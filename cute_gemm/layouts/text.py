"""The text dumps: CuTe's own text (`print(layout)`, the `print_layout` grid, a partition's
offset) and the maps CuTe has no text for: T#/V# thread maps, bank maps, TMA boxes."""
from __future__ import annotations

from .algebra import fmt, print_layout
from .model import Item, Recipe

COMPUTED = ("banks", "boxes", "ldsm")   # maps computed here, not printed by CuTe


def item_text(it: Item) -> str:
    """What CuTe C++ prints for the item too: `print(layout)`, offset, `print_layout` grid."""
    out = [f"@@ {it.name}\n", fmt(it.layout), "\n"]
    if it.kind == "partition":
        out.append(f"offset {int(it.offset)}\n")
    g = it.grid_layout()
    if g is not None:
        out.append(print_layout(g))
    return "".join(out)


def _grid(rows: int, cols: int, cell) -> str:
    w = max(len(cell(r, c)) for r in range(rows) for c in range(cols))
    lines = ["     " + "".join(f"{c:>{w + 1}}" for c in range(cols))]
    lines += [f"{r:>4} " + "".join(f"{cell(r, c):>{w + 1}}" for c in range(cols)) for r in range(rows)]
    return "\n".join(lines) + "\n"


def describe(it: Item) -> str:
    """One item for people: title, CuTe's text, and the thread/value maps."""
    body = f"{fmt(it.layout)}\n" if it.kind in COMPUTED else item_text(it).split("\n", 1)[1]
    out = [f"== {it.title}\n", body]
    rows, cols = it.tile or (0, 0)
    if it.kind == "partition":
        vals = it.values_of(it.thread)
        out += [f"thread {it.thread} owns (V# = its value index; . = another thread's):\n",
                _grid(rows, cols, lambda r, c: f"V{vals[(r, c)]}" if (r, c) in vals else ".")]
        if it.exact:
            own = it.owners()
            out += ["owner thread of every element of the tile:\n",
                    _grid(rows, cols, lambda r, c: f"T{own[r + c * rows][0]}")]
    elif it.kind == "banks":
        out += [f"bank (4-byte word mod 32) of each element ({it.elem_bytes} bytes), stage 0:\n",
                _grid(rows, cols, lambda r, c: str(it.table[r][c]))]
    elif it.kind == "boxes":
        out += [f"TMA box {it.box[:2]} (contiguous extent first) bringing each element in:\n",
                _grid(rows, cols, lambda r, c: f"B{it.table[r][c]}" if it.table[r][c] >= 0 else ".")]
    elif it.kind in ("tv", "ldsm"):
        cells = it.tv_cells()
        out += ["tile (row, col) -> T#V# (first owner):\n",
                _grid(rows, cols, lambda r, c: "T{}V{}".format(*cells[(r, c)][0]) if (r, c) in cells else ".")]
    return "".join(out) + "\n"


def _once(text: str) -> str:
    """describe()'s text without print_layout's first line, which restates the layout."""
    lines = text.split("\n")
    j = next((j for j in (2, 3) if j < len(lines) and lines[j] == lines[1]), None)
    return "\n".join(lines if j is None else lines[:j] + lines[j + 1:])


def dump_text(rec: Recipe) -> str:
    """Every item of a recipe, by section (`cute-gemm layouts --full`)."""
    out = [f"# {rec.kernel.name}  ({rec.source})\n\n"]
    for s in rec.sections:
        out.append(f"## {s.title}\n\n")
        out += [_once(describe(it)) for it in s.items]
    return "".join(out)
