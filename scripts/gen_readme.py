#!/usr/bin/env python3
"""Regenerate the full kernel table from the registry (the one list of kernels).

    python scripts/gen_readme.py          # rewrite docs/ladder/kernels.md in place
    python scripts/gen_readme.py --check  # exit 1 if that table is stale or the README's
                                          # compact ladder misses a kernel file (used by the tests)

The table lives between the markers in docs/ladder/kernels.md (the docs site); the README
keeps a compact ladder, a row per kernel file, which --check holds to the registry's files.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BEGIN, END = "<!-- kernels:begin -->", "<!-- kernels:end -->"
PAGE = ROOT / "docs" / "ladder" / "kernels.md"
README = ROOT / "README.md"


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


def missing_from_readme(readme: str) -> list[str]:
    """The registry's kernel files the README's compact ladder does not name."""
    from cute_gemm import registry
    return sorted({k.source for k in registry.kernels() if Path(k.source).name not in readme})


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true")
    args = p.parse_args()
    old = PAGE.read_text()
    new = render(old)
    if args.check:
        missing = missing_from_readme(README.read_text())
        if missing:
            print(f"README.md's ladder names no row for {', '.join(missing)}", file=sys.stderr)
        if new != old:
            print("docs/ladder/kernels.md is stale: run python scripts/gen_readme.py", file=sys.stderr)
        return 1 if missing or new != old else 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
