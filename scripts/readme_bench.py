#!/usr/bin/env python3
"""Turn a `cute-gemm bench --out DIR` JSON into the benchmark section of docs/benchmarks.md.

    python scripts/readme_bench.py bench-out/bench.json                 # print markdown
    python scripts/readme_bench.py docs/bench/nn.json docs/bench/layouts.json \
        --tensor-cores docs/bench/tensor_cores.json \
        --sweep docs/bench/sweep.json --sweep-plot ratios_nn.png \
        --plot ladder_4096.png --update docs/benchmarks.md --details docs/bench/README.md

--update replaces the text between `<!-- bench:begin -->` and `<!-- bench:end -->` in the
file (both markers must be there); nothing else in the file changes. With --details, that
section keeps only the ladder table and the plot and links the details page, which is
written whole: every shape and layout of the run, the host overhead, the method. The
table, date, device and versions all come from the JSON: the numbers are never typed by hand.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def replace_section(text: str, section: str) -> str:
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < 0 or j < i:
        raise ValueError(f"markers {BEGIN} ... {END} not found (in that order)")
    return text[:i + len(BEGIN)] + "\n" + section + text[j:]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json", nargs="+", help="bench.json written by `cute-gemm bench --out DIR`; "
                   "several runs from one session (e.g. a layout sweep) are merged, the first one's "
                   "device, date and versions heading the section")
    p.add_argument("--size", type=int, help="square size of the table (default 4096, else the largest)")
    p.add_argument("--layout", default="nn")
    p.add_argument("--plot", help="path of the ladder PNG to reference (relative to the README)")
    p.add_argument("--update", metavar="README", help="rewrite this file between the bench markers")
    p.add_argument("--tensor-cores", metavar="JSON", help="a bench JSON of the tensor-core kernels "
                   "(--precision bf16,fp16,tf32): its own table, with its own date and versions")
    p.add_argument("--sweep", metavar="JSON", help="a bench JSON over many shapes (`--size sweep`, "
                   "gemm() as `auto`): its summary (geometric mean and minimum of the ratio to "
                   "cuBLAS per kernel; every shape on the details page), with its own date and versions")
    p.add_argument("--sweep-plot", metavar="PNG", help="the sweep's ratios_<layout>.png "
                   "(relative to the README)")
    p.add_argument("--details", metavar="PAGE", help="with --update: write the whole record to this "
                   "markdown page and keep only the ladder table (a row per stage) and plot in the section, linking it")
    args = p.parse_args(argv)
    if args.details and not args.update:
        p.error("--details needs --update")

    from cute_gemm.perf.report import readme_markdown
    from cute_gemm.perf.schema import load_json
    res = load_json(args.json[0])
    for extra in args.json[1:]:
        more = load_json(extra)
        if more.meta.get("device", {}).get("name") != res.meta.get("device", {}).get("name"):
            raise SystemExit(f"{extra}: measured on another device; not merged")
        res.rows.extend(more.rows)
    def named(j):
        return f"`{Path(j).parent.name}/{Path(j).name}`"
    source = ", ".join(named(j) for j in args.json)
    tc = (load_json(args.tensor_cores), named(args.tensor_cores)) if args.tensor_cores else None
    sw = (load_json(args.sweep), named(args.sweep), args.sweep_plot) if args.sweep else None
    md = readme_markdown(res, size=args.size, layout=args.layout, plot=args.plot, source=source,
                         tensor_cores=tc, sweep=sw)
    if not args.update:
        sys.stdout.write(md)
        return 0
    path = Path(args.update)
    if args.details:
        page = Path(args.details)

        def rel(target: str, start: Path) -> str:       # links are relative to the file holding them
            return Path(os.path.relpath(path.parent / target, start)).as_posix()
        sw_page = sw and (sw[0], sw[1], rel(sw[2], page.parent) if sw[2] else None)
        full = readme_markdown(res, size=args.size, layout=args.layout, source=source,
                               plot=rel(args.plot, page.parent) if args.plot else None,
                               tensor_cores=tc, sweep=sw_page)
        page.write_text(f"# Benchmark record\n\nThe latest `cute-gemm bench` record in full; "
                        f"`{path.name}` shows its summary tables.\n\n{full}")
        md = readme_markdown(res, size=args.size, layout=args.layout, plot=args.plot, source=source,
                             details=Path(os.path.relpath(page, path.parent)).as_posix(),
                             tensor_cores=tc, sweep=sw)
        print(f"wrote {page}")
    path.write_text(replace_section(path.read_text(), md))
    print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
