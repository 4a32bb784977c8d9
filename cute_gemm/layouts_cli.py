"""`cute-gemm layouts`: dump the CuTe layouts of registered kernels as text, SVG or PNG."""
from __future__ import annotations

import re
import sys
from pathlib import Path


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def run(kernels: list[str] | None = None, fmt: str = "text", out: str | None = None,
        thread: int | None = None, shape: str | None = None) -> int:
    from . import layouts as L
    from . import registry
    cute = registry.kernels("cute")
    chosen = [registry.get(n) for n in kernels] if kernels else list(cute)
    bad = [k.name for k in chosen if k.family != "cute"]
    if bad:
        print(f"cute-gemm layouts: {', '.join(bad)} are not CuTe kernels "
              f"(choose from {', '.join(k.name for k in cute)})", file=sys.stderr)
        return 2
    problem = tuple(int(x) for x in shape.split("x")) if shape else L.PROBLEM
    if len(problem) != 3:
        print("cute-gemm layouts: --shape wants MxNxK", file=sys.stderr)
        return 2
    thr = L.THREAD if thread is None else thread
    for k in chosen:
        if not 0 <= thr < k.threads:
            print(f"cute-gemm layouts: --thread {thr} outside 0..{k.threads - 1} for {k.name}",
                  file=sys.stderr)
            return 2
    if fmt != "text" and out is None:
        out = "layouts"
    for k in chosen:
        rec = L.build(k, problem, thr)
        if fmt == "text":
            text = L.dump_text(rec)
            if out is None:
                sys.stdout.write(text)
            else:
                Path(out).mkdir(parents=True, exist_ok=True)
                p = Path(out) / f"{k.name}.txt"
                p.write_text(text)
                print(p)
            continue
        from . import layout_draw as D
        d = Path(out) / k.name
        d.mkdir(parents=True, exist_ok=True)
        for i, it in enumerate(rec.items()):
            leaf = _safe(it.name.split("/", 1)[1])
            g = D.grid_of(it)
            p = d / f"{i:02d}_{leaf}.{fmt}"
            if fmt == "svg":
                p.write_text(D.to_svg(g))
            else:
                D.write_png(g, p)
        print(f"{d}/ ({sum(1 for _ in rec.items())} {fmt} files)")
    return 0


def add_arguments(p) -> None:
    p.add_argument("kernels", nargs="*", metavar="KERNEL",
                   help="registered CuTe kernels (default: all of them)")
    p.add_argument("--format", choices=("text", "svg", "png"), default="text",
                   help="text (CuTe print_layout form), svg, or png (needs matplotlib)")
    p.add_argument("--out", help="output directory (text: default stdout; svg/png: default ./layouts)")
    p.add_argument("--thread", type=int, help="the thread whose partitions are shown (default 37)")
    p.add_argument("--shape", help="representative problem MxNxK for the global tiles (default 256x256x256)")


def register(subparsers) -> None:
    s = subparsers.add_parser("layouts", help="dump the CuTe kernels' layouts (text, svg, png)",
                              description=__doc__)
    add_arguments(s)
    s.set_defaults(fn=lambda a: run(a.kernels, a.format, a.out, a.thread, a.shape))
