"""The text dumps: CuTe's own text (`print(layout)`, the `print_layout` grid, a partition's
offset and owners, which cppcheck.py compares with CuTe C++) and the maps CuTe has no text
for: T#/V# thread maps, bank maps, TMA boxes (computed here from the layouts CuTe checks)."""
from __future__ import annotations

from typing import Iterable

from .algebra import fmt, print_layout
from .model import Item, Recipe


COMPUTED = ("banks", "boxes", "ldsm")   # maps computed here, not printed by CuTe (ldsm: a
                                        # thread-value layout from PTX's ldmatrix definition)


def item_text(it: Item) -> str:
    """What CuTe C++ prints for the item too: `print(layout)`, offset, `print_layout` grid."""
    out = [f"@@ {it.name}\n", fmt(it.layout), "\n"]
    if it.kind == "partition":
        out.append(f"offset {int(it.offset)}\n")
    g = it.grid_layout()
    if g is not None:
        out.append(print_layout(g))
    return "".join(out)


def owners_text(it: Item) -> str:
    return "owners " + " ".join("/".join(map(str, o)) for o in it.owners()) + "\n"


def expected_output(recipes: Iterable[Recipe]) -> str:
    """What the C++ check program must print (cppcheck.py), computed here."""
    out = []
    for rec in recipes:
        for it in rec.items():
            if it.kind in COMPUTED:
                continue
            out.append(item_text(it))
            if it.kind == "partition":
                out.append(owners_text(it))
    return "".join(out)


def split_dump(text: str) -> dict[str, str]:
    """Check program or expected output -> {item name: its text (with the owners line)}."""
    out: dict[str, str] = {}
    for chunk in text.split("@@ ")[1:]:
        name, _, rest = chunk.partition("\n")
        out[name] = rest
    return out


def _grid_labels(rows: int, cols: int, cell) -> str:
    w = max(len(cell(r, c)) for r in range(rows) for c in range(cols))
    head = "     " + "".join(f"{c:>{w + 1}}" for c in range(cols))
    lines = [head] + [f"{r:>4} " + "".join(f"{cell(r, c):>{w + 1}}" for c in range(cols))
                      for r in range(rows)]
    return "\n".join(lines) + "\n"


def describe(it: Item) -> str:
    """One item for people: title, CuTe's text, and the thread/value maps."""
    # a computed map: the layout's text once, then the map (its offsets are the layout item's)
    body = f"{fmt(it.layout)}\n" if it.kind in COMPUTED else item_text(it).split("\n", 1)[1]
    out = [f"== {it.title}\n", body]
    if it.kind == "partition":
        rows, cols = it.tile
        vals = it.values_of(it.thread)
        out.append(f"thread {it.thread} owns (V# = its value index; . = another thread's):\n")
        out.append(_grid_labels(rows, cols, lambda r, c: f"V{vals[(r, c)]}" if (r, c) in vals else "."))
        if it.exact:
            own = it.owners()
            out.append("owner thread of every element of the tile:\n")
            out.append(_grid_labels(rows, cols, lambda r, c: f"T{own[r + c * rows][0]}"))
    elif it.kind == "banks":
        rows, cols = it.tile
        out.append(f"bank (4-byte word mod 32) of each element ({it.elem_bytes} bytes), stage 0:\n")
        out.append(_grid_labels(rows, cols, lambda r, c: str(it.table[r][c])))
    elif it.kind == "boxes":
        rows, cols = it.tile
        out.append(f"TMA box {it.box[:2]} (contiguous extent first) bringing each element in:\n")
        out.append(_grid_labels(rows, cols, lambda r, c: f"B{it.table[r][c]}" if it.table[r][c] >= 0
                                else "."))
    elif it.kind in ("tv", "ldsm"):
        rows, cols = it.tile
        cells = it.tv_cells()
        out.append("tile (row, col) -> T#V# (first owner):\n")
        out.append(_grid_labels(rows, cols, lambda r, c: "T{}V{}".format(*cells[(r, c)][0])
                                if (r, c) in cells else "."))
    return "".join(out) + "\n"


def dump_text(rec: Recipe) -> str:
    out = [f"# {rec.kernel.name}  ({rec.source})\n\n"]
    for s in rec.sections:
        out.append(f"## {s.title}\n\n")
        out += [describe(it) for it in s.items]
    return "".join(out)
