#!/usr/bin/env python3
"""How well gemm()'s table lookup does on shapes it has no row for, measured from the
table itself: each row in turn is left out and its shape given to `nearest.from_tables` over
the rest; the row's own measured times then say how far that pick is from its fastest
candidate. No GPU needed. The figures in docs/design/tables.md#nearest-split.

    python3 scripts/table_loo.py cute_gemm/tables/nvidia-h200.json [--layout nn] [--worst 5]
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys

from cute_gemm.select import autotable, nearest
from cute_gemm.select.choice import split_key


def loss(table: autotable.Table, layout: str | None = None):
    """(shape, layout, pick key, time of the pick / time of the row's fastest) per row that
    another row can stand in for and whose own times include the pick."""
    out = []
    allowed = {split_key(c)[0] for r in table.rows for c in r.times}
    for i, q in enumerate(table.rows):
        if layout and q.layout != layout:
            continue
        ranked = q.ranked()
        if not ranked:
            continue
        rest = dataclasses.replace(table, rows=table.rows[:i] + table.rows[i + 1:])
        c = nearest.from_tables([rest], q.m, q.n, q.k, q.layout, q.precision, q.aligned, allowed)
        if c is None:
            continue
        # a split count the tune did not time here is one the launch does not take: its own plan
        key = c.key if c.key in q.times or not c.split_k else dataclasses.replace(c, split_k=0).key
        if q.times.get(key) is None:
            continue
        out.append((q.shape, q.layout, key, q.times[key] / ranked[0][1]))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tables", nargs="+", help="tune table files")
    p.add_argument("--layout", help="only rows of this layout")
    p.add_argument("--worst", type=int, default=5, help="list the N worst rows (default 5)")
    a = p.parse_args(argv)
    for path in a.tables:
        rows = loss(autotable.read(path), a.layout)
        if not rows:
            print(f"{path}: no row another row can stand in for")
            continue
        ratios = [r[3] for r in rows]
        gmean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{path}: {len(rows)} rows, geometric mean {gmean:.4f} of the fastest, "
              f"worst {max(ratios):.3f}, {sum(x > 1.05 for x in ratios)} over 1.05")
        for shape, lay, key, r in sorted(rows, key=lambda x: -x[3])[:a.worst]:
            print(f"  {'x'.join(map(str, shape)):>16} {lay}  {key:<44} {r:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
