"""A bench result for people: the text table, the README section (markdown, generated, never
typed) and write_outputs() (bench.json, bench.csv, bench_readme.md, plots). Reads schema records only."""
from __future__ import annotations

import re
from pathlib import Path
from statistics import median_high

from .. import registry
from ..registry import AUTO
from . import plots as P
from .schema import (CUBLAS, CUBLAS_PEER, FIRST_CALL_MODES, LAYOUT_TEXT, BenchResult, cublas_label,
                     pick_ladder_size, write_csv, write_json)
from .stats import random_summary, ratio_summary
from .sweep import GROUPS, sweep_class


def _f(x, fmt: str, empty: str = "-") -> str:
    return empty if x is None else format(x, fmt)


def _pct(x, empty: str = "-") -> str:
    return empty if x is None else f"{100 * x:.1f} %"


def _x(v) -> str:
    return "—" if v is None else f"{v:.3f}×"


def _shape(sh, sep: str = "×") -> str:
    return sep.join(map(str, sh))


def _table(head, align: str, rows=()) -> list[str]:
    """A markdown table: head, its rule (align: a letter a column, l or r) and rows of cells."""
    lines = ["| " + " | ".join(cells) + " |" for cells in [head, *rows]]
    return lines[:1] + ["|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"] + lines[1:]


def describe_clocks(c: dict | None) -> str:
    """One line of what perf/clocks.py sampled (meta["clocks"])."""
    if not c or not c.get("samples"):
        return (c or {}).get("note", "clocks not recorded")
    k, w = c["clock_mhz"], c["power_w"]
    tool = c.get("tool", "nvidia-smi")      # the files measured before NVML say no tool
    return (f"while timing ({tool}, {c['samples']} samples): SM clock median {k['median']:.0f} "
            f"MHz ({k['min']:.0f}–{k['max']:.0f}), power median {w['median']:.0f} W (max "
            f"{w['max']:.0f}), at most {c['temperature_c_max']:.0f} °C")


def _where(md: dict) -> str:
    dev = md.get("device", {})
    return f"{dev.get('name', '?')} ({dev.get('arch', '?')}), driver {md.get('driver', '?')}"


def _versions(v: dict) -> str:
    return (f"cute_gemm {v.get('cute_gemm')}, cuda-bindings {v.get('cuda-bindings')}, "
            f"NVRTC {v.get('nvrtc')}, nvidia-cutlass {v.get('nvidia-cutlass')}")


def format_header(result: BenchResult) -> str:
    md = result.meta
    lines = [f"cute-gemm bench — {_where(md)}, {md.get('date', '?')}",
             "versions: " + _versions(md.get("versions", {})),
             md.get("device", {}).get("peak_formula", "FP32 peak: unknown"),
             md.get("cublas", {}).get("note", "cuBLAS: unknown")]
    if "clocks" in md:
        lines.append("clocks " + describe_clocks(md["clocks"]))
    if "interrupted" in md:
        lines.append(f"interrupted {md['interrupted']}: the rows of those shapes")
    if meth := md.get("method", {}):
        lines += ["check: " + meth.get("check", ""), "timing: " + meth.get("timing", "")]
    return "\n".join(lines)


def _label(r) -> str:
    """A row's kernel, with its precision where it is not fp32 (cuBLAS: its peer's)."""
    if r.precision == "fp32":
        return r.kernel
    return cublas_label(r.precision) if r.kernel == CUBLAS else f"{r.kernel} {r.precision}"


def format_table(result: BenchResult) -> str:
    kw = max([len(_label(r)) for r in result.rows] + [6]) + 2
    callers = any(r.call_ms is not None for r in result.rows)     # a random run's two timings
    hdr = (f"{'M x N x K':<18}{'lay':<4}{'kernel':<{kw}}{'status':<7}{'gauge':>7}  "
           f"{'median ms':>10}{'IQR ms':>9}{'min-max ms':>19}{'n':>4}{'TFLOP/s':>9}"
           f"{'vs cuBLAS':>10}{'% peak':>8}{'MHz':>6}{'W':>5}"
           + (f"{'call ms':>10}{'burst ms':>10}" if callers else "") + "  note")
    lines = [format_header(result), "", hdr, "-" * len(hdr)]
    for i, r in enumerate(result.rows):
        prev = result.rows[i - 1] if i else r
        if (r.shape, r.layout, r.precision) != (prev.shape, prev.layout, prev.precision):
            lines.append("")
        mm = f"{_f(r.min_ms, '.4g')}-{_f(r.max_ms, '.4g')}" if r.timed else "-"
        note = r.message if r.status != "pass" or r.kernel in (CUBLAS, AUTO) else ""
        lines.append(f"{_shape(r.shape, 'x'):<18}{r.layout:<4}{_label(r):<{kw}}{r.status:<7}"
                     f"{_f(r.gauge_ratio, '7.3g'):>7}  {_f(r.median_ms, '.4f'):>10}"
                     f"{_f(r.iqr_ms, '.4f'):>9}{mm:>19}{r.repeats or '-':>4}{_f(r.tflops, '.2f'):>9}"
                     f"{_pct(r.vs_cublas):>10}{_pct(r.frac_peak):>8}"
                     f"{_f(r.clock_mhz, '.0f'):>6}{_f(r.power_w, '.0f'):>5}"
                     + (f"{_f(r.call_ms, '.4f'):>10}{_f(r.burst_ms, '.4f'):>10}" if callers else "")
                     + f"  {note}")
    if comp := result.meta.get("compile", {}):
        lines += ["", "compile (separate from run time; origin = where the cubin came from):"]
        for name, c in comp.items():
            cs = c.get("nvrtc_seconds")
            lines.append(f"  {name:<{kw}}{c.get('origin') or '-':<10}"
                         f"{'-' if cs is None else f'NVRTC {cs:.2f} s':<14}{c.get('error') or ''}")
    for part in (format_summary(result), result.meta.get("random") and format_random(result),
                 result.overhead and format_overhead(result.overhead),
                 result.first_call and format_first_call(result.first_call)):
        if part:
            lines += ["", part]
    return "\n".join(lines)


def _columns(head, rows) -> list[str]:
    """Text columns, each as wide as its widest cell, two spaces apart."""
    widths = [max(len(r[i]) for r in [head, *rows]) + 2 for i in range(len(head))]
    return ["  " + "".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows]]


def _summary(result: BenchResult, code=str) -> tuple[list[str], list[dict], list[list[str]]]:
    """Per kernel, precision and layout measured on two shapes or more (stats.ratio_summary):
    the head, the summaries and the cells of the table of its ratios to cuBLAS."""
    summ = [x for x in ratio_summary(result.rows, GROUPS) if x["shapes"] >= 2]
    head = (["kernel", "precision", "layout", "shapes", "geometric mean", "minimum (shape)"]
            + [f"min: {g}" for g, _ in GROUPS])
    return head, summ, [[code(x["kernel"]), x["precision"], x["layout"], str(x["shapes"]), _x(x["geomean"]),
                         f"{_x(x['min'])} ({_shape(x['min_shape'])})"]
                        + [_x(x["groups"][g]) for g, _ in GROUPS] for x in summ]


def format_summary(result: BenchResult) -> str:
    head, _, cells = _summary(result)
    return "\n".join(["ratio to cuBLAS at the same precision over the shapes of this run:"]
                     + _columns(head, cells)) if cells else ""


_RANDOM_HEAD = ["kernel", "precision", "timing", "shapes", "geomean", "min (shape)", "< 0.9×"]


def _random_lines(result: BenchResult, bold: str = "") -> tuple[str, str, list[list[str]]]:
    """The draw (seed included) in a line, the timings (names wrapped in `bold`) in a line,
    and the random summary's cells."""
    rnd = result.meta["random"]
    cells = [[x["kernel"], x["precision"], x["timing"], str(x["count"]), _x(x["geomean"]),
              f"{_x(x['min'])} ({_shape(x['min_shape'][:3])} {x['min_shape'][3]})",
              "—" if x["below_0_9"] is None else f"{100 * x['below_0_9']:.0f} %"]
             for x in random_summary(result.random_rows())]
    timings = "; ".join(f"{bold}{t}{bold}: {w}" for t, w in rnd.get("timings", {}).items())
    return rnd.get("about", f"random shapes, seed {rnd.get('seed')}"), timings, cells


def format_random(result: BenchResult) -> str:
    """The random run's summary: per kernel, precision and timing, cuBLAS time / our time."""
    about, timings, cells = _random_lines(result)
    return "\n".join([about, "ratio cuBLAS time / time at the same precision (> 1: faster than "
                      "cuBLAS); timings: " + timings] + _columns(_RANDOM_HEAD, cells) + _first_calls(result))


def _first_calls(result: BenchResult) -> list[str]:
    """gemm()'s first call of each problem (tuning included): per precision, median and most."""
    by: dict[str, list] = {}
    for r in result.random_rows():
        if r.kernel == "auto" and r.first_ms is not None:
            by.setdefault(r.precision, []).append(r)
    parts = []
    for p, rows in by.items():
        top = max(rows, key=lambda r: r.first_ms)
        parts.append(f"{p} median {median_high(r.first_ms for r in rows):.3g} ms, most {top.first_ms:.3g} ms "
                     f"({_shape(top.shape)} {top.layout})")
    return ["gemm()'s first call of each problem, its tuning on first use included (host time "
            "until the GPU is done): " + "; ".join(parts)] if parts else []


def random_markdown(result: BenchResult, plot: str | None = None) -> list[str]:
    """format_random as a markdown table, with its plot; empty without random shapes."""
    if not (rnd := result.meta.get("random")):
        return []
    about, timings, cells = _random_lines(result, "**")
    return (["#### Random shapes: ratio cuBLAS time / time, same precision, same run", "",
             f"{about}. Timings: {timings}.", ""] + _table(_RANDOM_HEAD, "lllrrrr", cells)
            + [""]
            + ([f"![ratio to cuBLAS against flops, seed {rnd.get('seed')}]({plot})", ""] if plot else []))


def _picked(message: str) -> str:
    """gemm()'s pick from its row's message ("picked KEY (SOURCE: why)") as "KEY (SOURCE)"."""
    m = re.match(r"picked (\S+) \((\w+)", message or "")
    return f"`{m.group(1)}` ({m.group(2)})" if m else ""


def sweep_markdown(result: BenchResult, source: str | None = None, *, plot: str | None = None,
                   per_shape: bool = True) -> list[str]:
    """The summary of a run over many shapes (as format_summary), the plot, and with per_shape
    every shape's ratios and what gemm() picked. Empty without kernels timed on two shapes."""
    head, summ, cells = _summary(result, lambda k: f"`{k}`")
    if not summ:
        return []
    shapes = list(dict.fromkeys(r.shape for r in result.rows))
    out = [f"#### Over {len(shapes)} shapes: ratio to cuBLAS at the same precision, same run", ""]
    out += _table(head, "lllrrr" + "r" * len(GROUPS), cells) + [""]
    if result.first_call:
        out += ["```", format_first_call(result.first_call), "```", ""]
    if plot:
        out += [f"![ratio to cuBLAS per shape]({plot})", ""]
    cell = {(r.kernel, r.precision, r.layout, r.shape): r for r in result.rows}
    for prec, lay in dict.fromkeys((x["precision"], x["layout"]) for x in summ) if per_shape else ():
        names = list(dict.fromkeys(x["kernel"] for x in summ if (x["precision"], x["layout"]) == (prec, lay)))
        auto = AUTO in names
        out += [f"Per shape ({prec}, {LAYOUT_TEXT.get(lay, lay)}): TFLOP/s and × cuBLAS; "
                "what gemm() (`auto`) ran, and from where (a tune table row, the nearest row, "
                "or the heuristic):", ""]
        rows = []
        for sh in shapes:
            if (cub := cell.get((CUBLAS, prec, lay, sh))) is None:
                continue
            rs = [cell.get((n, prec, lay, sh)) for n in names]
            ran = cell.get((AUTO, prec, lay, sh))
            rows.append([_shape(sh), sweep_class(*sh), f"{cub.tflops:.1f}" if cub.timed else cub.status]
                        + ["" if r is None else f"{r.tflops:.1f} ({_x(r.vs_cublas)})"
                           if r.timed and r.vs_cublas is not None else r.status for r in rs]
                        + ([_picked(ran.message) if ran is not None else ""] if auto else []))
        out += _table(["shape", "class", "cuBLAS TFLOP/s"] + [f"`{n}`" for n in names]
                      + ["`auto` ran"] * auto, "llr" + "r" * len(names) + "l" * auto, rows) + [""]
    return out + ([_provenance(result.meta, source), ""] if source is not None else [])


def format_first_call(fc: dict) -> str:
    """perf.first_call's figures, one line per case, for the bench's text and the README."""
    lines = [f"first gemm() call of a fresh process, fp32 {_shape(fc.get('shape', ()))} "
             "(seconds from the call):"]
    for mode in FIRST_CALL_MODES:
        if (r := fc.get(mode)) is None:
            continue
        if "error" in r:
            lines.append(f"  {mode:<6} not measured ({r['error']})")
            continue
        text = (f"  {mode:<6} import {r['import_s']:.2f}, answered in {r['first_s']:.2f} by "
                f"{', '.join(r['first_kernels']) or 'nothing'}")
        if mode == "quick":
            text += (f"; the pick ({r['pick']}) ran from {r['pick_s']:.1f}, after {r['calls']} calls"
                     if r.get("pick_s") is not None else f"; the pick ({r['pick']}) had not run")
        lines.append(text)
    return "\n".join(lines)


def format_overhead(o: dict) -> str:
    if "error" in o:
        return f"host overhead: not measured ({o['error']})"
    w, run = 58, f"cute_gemm.run({o['kernel']!r}"
    host = "raw_launch_host_us" in o        # (records before 2026-11-24 have no host column)

    def row(label: str, key: str, note: str = "") -> str:
        h = f"{o[key + '_host_us']:9.2f}" if host else ""
        return f"  {label:<{w}}{o[key + '_us']:8.2f}{h}" + (f"   ({note})" if note else "")

    def ratio(key: str, peer: str, sep: str = "") -> str:
        if (r := o.get(f"{key}_over_{peer}")) is None:
            return ""
        rh = o.get(f"{key}_over_{peer}_host")
        return f"{sep}{r:.2f}x {peer.replace('_', '.')}" + (f", host {rh:.2f}x" if rh is not None else "")

    lines = [f"host cost per call, {_shape(o['shape'], 'x')} GEMM (µs/call, median of "
             f"{o['rounds']} rounds x {o['calls']} calls" + (
                 "; first column: back to back with one final sync, second: the host alone, "
                 "in bursts the launch queue holds):" if host else ", incl. one final sync):"),
             row("raw driver launch (same cubin, pre-packed args)", "raw_launch"),
             row(run + ") on DeviceArrays", "run",
                 f"+{o['run_minus_raw_us']:.2f} over raw; target <= {o['target_us']:g}: "
                 f"{'met' if o['meets_target'] else 'MISSED'}" + ratio("run", "torch_mm", "; "))]
    libs = o.get("libraries", {})
    for lib, kind, mine, peer, call in (
            ("torch", "PyTorch tensors", "run_torch", "torch_mm", "torch.mm(a, b, out=o)"),
            ("torch", "PyTorch, no out=", "run_torch_new", "torch_mm_new", "torch.mm(a, b)"),
            ("torch", "PyTorch, c=o, beta=1", "run_torch_inplace",
             "torch_addmm_inplace", "torch.addmm(o, a, b, out=o)"),
            ("cupy", "CuPy arrays", "run_cupy", "cupy_matmul", "cupy.matmul(a, b, out=o)")):
        if f"{mine}_us" in o:
            note = ratio(mine, peer) + (ratio(mine, "torch_mm", "; ") if lib == "cupy" else "")
            lines += [row(run + f") on {kind}", mine, note), row(call, peer)]
        elif lib in libs and mine in ("run_torch", "run_cupy"):     # (once a library)
            lines.append(f"  {kind:<{w}}{libs[lib]}")
    if o.get("cublas_us") is not None:
        lines.append(row(f"cuBLAS via {o.get('cublas_library')} on the DeviceArrays", "cublas"))
    return "\n".join(lines)


def _ladder_stage(name: str) -> bool:
    """True for a kernel source's first configuration (its ladder stage), and unknown names."""
    ks = registry.kernels()
    k = next((x for x in ks if x.name == name), None)
    return k is None or next(x for x in ks if x.source == k.source).name == name


def readme_markdown(result: BenchResult, *, size: int | None = None, layout: str = "nn",
                    plot: str | None = None, source: str = "bench.json", details: str | None = None,
                    tensor_cores: tuple[BenchResult, str] | None = None,
                    sweep: tuple[BenchResult, str, str | None] | None = None,
                    random_plot: str | None = None) -> str:
    """The ladder table at one square size, then the tensor-core, sweep and random tables, every
    shape, the overhead and the method; with `details` (a link to the rest) the short form.
    tensor_cores: (result, source), sweep: (result, source, plot) of runs of their own."""
    tc = _tensor_core_markdown(*(tensor_cores or (result,)))
    sw = (sweep_markdown(sweep[0], sweep[1], plot=sweep[2], per_shape=details is None) if sweep
          else [] if details is not None else sweep_markdown(result))
    size = pick_ladder_size(result, size, layout)
    md, dev = result.meta, result.meta.get("device", {})
    out = ["<!-- generated by scripts/readme_bench.py from a `cute-gemm bench` JSON; do not edit by hand -->"]
    rnd = random_markdown(result, random_plot)
    if size is None:
        out += (rnd + tc + sw) or ["_No timed square sizes in this bench result._"]
        if rnd or (tc and not tensor_cores) or (sw and sweep is None):
            out.append(_provenance(md, source))
        return "\n".join(out) + "\n"
    out += [f"#### SGEMM ladder at {size}×{size}×{size} ({LAYOUT_TEXT.get(layout, layout)}) — "
            f"{dev.get('name', '?')}, {str(md.get('date', '?'))[:10]}", ""]
    def timed(r, vs: str) -> list[str]:
        return [f"{r.tflops:.2f}", vs, _pct(r.frac_peak, "n/a"), f"{r.median_ms:.3f} ({r.iqr_ms:.3f})",
                f"{r.status}, ratio {_f(r.gauge_ratio, '.2g')}"]
    rungs = [r for r in result.rows if r.shape == (size,) * 3 and r.layout == layout and r.kernel != CUBLAS
             and r.precision == "fp32" and (details is None or _ladder_stage(r.kernel))]  # short: a stage
    cub = result.cublas_row(size, size, size, layout)
    out += _table(["kernel", "family", "TFLOP/s", "vs cuBLAS fp32", "% of FP32 peak", "median ms (IQR)",
                   "check"], "llrrrrl",
                  [[f"`{r.kernel}`", r.family] + (timed(r, _pct(r.vs_cublas, "n/a")) if r.timed
                                                   else ["—"] * 4 + [f"**{r.status}**: {r.message}"])
                   for r in rungs]
                  + ([[f"cuBLAS fp32 ({cub.message})", "reference"] + timed(cub, "100 %")]
                     if cub is not None and cub.timed else [])) + [""]
    figure = [f"![TFLOP/s per kernel at {size}³ on {dev.get('name', '?')}]({plot})", ""] if plot else []
    if details is not None:
        out += figure + [f"{_provenance(md, source)} Every shape and layout of this run, the host "
                         f"overhead per call and the method: [{details}]({details})."]
        out += ([""] + tc if tc else []) + ([""] + sw if sw else [])
        return "\n".join(out).rstrip("\n") + "\n"
    out += tc + sw + rnd + _all_shapes_markdown(result)
    if tensor_cores:
        out += _all_shapes_markdown(tensor_cores[0])
    if result.overhead and "error" not in result.overhead:
        out += ["```", format_overhead(result.overhead), "```", ""]
    note = md.get("cublas", {}).get("note")
    if not md.get("cublas", {}).get("available", False) and note:
        out += [f"_{note}_", ""]
    out += figure + [f"{dev.get('peak_formula', '')}. Median of per-launch CUDA-event times, inputs "
                     f"rotated beyond L2, each kernel checked against float64 first "
                     f"({md.get('method', {}).get('check', '')}).", "", _provenance(md, source)]
    return "\n".join(out) + "\n"


def _provenance(md: dict, source: str) -> str:
    """When, where and with what versions (and clocks) a result was measured, and its file."""
    v, lib = md.get("versions", {}), md.get("cublas", {}).get("library")
    clocks = f" Clocks {describe_clocks(md['clocks'])}." if md.get("clocks", {}).get("samples") else ""
    return (f"Measured {md.get('date', '?')} on {_where(md)}; {_versions(v)}"
            + (f", {lib} {v.get(lib)}" if lib else "")
            + f".{clocks} Generated from {source if source.startswith('`') else '`' + source + '`'}.")


def _range(xs, fmt: str) -> str:
    lo, hi = format(min(xs), fmt), format(max(xs), fmt)
    return lo if lo == hi else f"{lo}–{hi}"


def _tensor_core_markdown(result: BenchResult, source: str | None = None) -> list[str]:
    """Per kernel and precision other than fp32: TFLOP/s and × cuBLAS (ranges over the layouts)
    per square size, and the best fraction of the dense peak. Empty without such rows."""
    rows = [r for r in result.rows if r.precision != "fp32" and r.m == r.n == r.k]
    sizes = sorted({r.m for r in rows if r.timed})
    if not sizes:
        return []
    labels = sorted(dict.fromkeys((r.kernel, r.precision) for r in rows),
                    key=lambda x: x[0] == CUBLAS)     # (stable: cuBLAS last, else as run)
    lays = sorted({r.layout for r in rows}, key=list(LAYOUT_TEXT).index)
    head = ["kernel", "precision"] + [x for sz in sizes for x in (f"{sz}³ TFLOP/s", "× cuBLAS")] \
        + ["best % of dense peak"]
    out = [f"#### Tensor cores: {', '.join(f'{s}³' for s in sizes)}, A and B in "
           f"{len(lays)} layout{'s' if len(lays) > 1 else ''} ({', '.join(lays)}), ranges over them; "
           f"cuBLAS at the same precision in the same run"
           + ("" if all(CUBLAS_PEER.get(p, p) == p for _, p in labels) else
              " (fp32_3xtf32: beside cuBLAS fp32, SGEMM with TF32 off)"), ""]
    body = []
    for kernel, prec in labels:
        mine = [r for r in rows if (r.kernel, r.precision) == (kernel, prec)]
        peer = CUBLAS_PEER.get(prec, prec)      # the precision column says prec already
        cells = [f"`{kernel}`" if kernel != CUBLAS else CUBLAS + ("" if peer == prec else f" {peer}"),
                 prec]
        for sz in sizes:
            t = [r for r in mine if r.m == sz and r.timed]
            ratio = [r.vs_cublas for r in t if r.vs_cublas is not None]
            cells += [_range([r.tflops for r in t], ".0f") if t else "—",
                      "1" if kernel == CUBLAS else _range(ratio, ".2f") + "×" if ratio else "—"]
        peak = [r.frac_peak for r in mine if r.timed and r.frac_peak is not None]
        cells.append(f"{100 * max(peak):.0f} %" if peak else "—")
        if bad := [r for r in mine if r.status not in ("pass", "skip")]:
            cells[0] += f" (**{bad[0].status}** {bad[0].layout} {bad[0].m}³)"
        body.append(cells)
    out += _table(head, "ll" + "r" * (len(head) - 2), body) + [""]
    return out + ([_provenance(result.meta, source), ""] if source is not None else [])


def _all_shapes_markdown(result: BenchResult) -> list[str]:
    """Every (shape, layout) of the run side by side: TFLOP/s and × cuBLAS; empty for one."""
    cols = list(dict.fromkeys((r.shape, r.layout) for r in result.rows))
    if len(cols) < 2:
        return []
    names = sorted(dict.fromkeys((r.kernel, r.precision) for r in result.rows),
                   key=lambda x: x[0] == CUBLAS)      # (stable: cuBLAS last, else as run)
    cell = {(r.kernel, r.precision, r.shape, r.layout): r for r in result.rows}
    def text(r) -> str:
        if r is None or not r.timed:
            return "" if r is None else r.status
        ratio = r.vs_cublas is not None and r.kernel != CUBLAS
        return f"{r.tflops:.1f}" + (f" ({r.vs_cublas:.2f}×)" if ratio else "")
    return ["All shapes and layouts of this run (TFLOP/s, and × cuBLAS at the same precision on the "
            "same shape and layout):", ""] + _table(
        ["kernel"] + [f"{_shape(sh)} {LAYOUT_TEXT.get(lay, lay)}" for sh, lay in cols], "l" + "r" * len(cols),
        [[f"`{n}`" + ("" if prec == "fp32" else f" {prec}") if n != CUBLAS else cublas_label(prec)]
         + [text(cell.get((n, prec, sh, lay))) for sh, lay in cols] for n, prec in names]) + [""]


def write_outputs(result: BenchResult, out_dir, *, plots: bool = True,
                  ladder_size: int | None = None) -> dict:
    """bench.json, bench.csv, bench_readme.md and (matplotlib permitting) PNG plots."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    files = {"json": write_json(result, d / "bench.json"), "csv": write_csv(result, d / "bench.csv")}
    pngs = []
    if plots and P.available():
        pngs = P.write_all(result, d, ladder_size=ladder_size)
    elif plots:
        files["plots_skipped"] = "matplotlib is not installed (pip install 'cute_gemm[plot]')"
    files["plots"] = pngs
    names = [p.name for p in pngs]
    ladder = next((x for x in names if x.startswith("ladder")), None)
    md = readme_markdown(result, size=ladder_size, plot=ladder,
                         random_plot=P.RANDOM_PNG if P.RANDOM_PNG in names else None)
    files["readme"] = d / "bench_readme.md"
    files["readme"].write_text(md)
    return files
