#!/usr/bin/env python3
"""Regenerate the README's kernel table from the registry (the one list of kernels).

    python scripts/gen_readme.py          # rewrite README.md in place
    python scripts/gen_readme.py --check  # exit 1 if README.md is stale (used by the tests)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BEGIN, END = "<!-- kernels:begin -->", "<!-- kernels:end -->"


def table() -> str:
    from cute_gemm import registry
    rows = ["| kernel | family | file | tile (M×N×K) | threads | layouts taken as they are | seed stage | idea |",
            "|---|---|---|---|---|---|---|---|"]
    for k in registry.kernels():
        tile = "×".join(map(str, k.tile)) if k.tile else "—"
        lay = ", ".join(sorted({f"A:{v.a_major} B:{v.b_major}" + (f" (align {v.align})" if v.align > 1 else "")
                                for v in k.variants}))
        rows.append(f"| `{k.name}` | {k.family} | `kernels/{k.source}` | {tile} | {k.threads} | {lay} | {k.seed} | {k.summary} |")
    return "\n".join(rows)


def render(text: str) -> str:
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true")
    args = p.parse_args()
    readme = ROOT / "README.md"
    old = readme.read_text()
    new = render(old)
    if args.check:
        if new != old:
            print("README.md kernel table is stale: run python scripts/gen_readme.py", file=sys.stderr)
            return 1
        return 0
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
