"""PNG charts of a bench result (the optional `plot` extra), on matplotlib's object API (Figure +
Agg canvas: no pyplot state, headless); each names the device, date and units."""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

from ..api import flops
from .schema import CUBLAS, LAYOUT_TEXT, TIMINGS, BenchResult, pick_ladder_size
from .stats import SLOW, ratio_stats, ratio_summary, tflops, timing_ratios
from .sweep import sweep_class

RANDOM_PNG = "random_ratios.png"
FP8_ACCURACY_PNG = "fp8_accuracy.png"
FAMILY_COLORS = {"handwritten": "#4C72B0", "cute": "#DD8452"}
OTHER_COLOR = "#55A868"


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _figure(w: float, h: float, layout: str | None = None, panels: int = 0):
    """A figure of w x h inches at 120 dpi on an Agg canvas, and its axes (`panels` side by
    side sharing y; 0: one)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(w, h), dpi=120, layout=layout)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, panels, sharey=True) if panels else fig.add_subplot(1, 1, 1)


def _title(result: BenchResult, text: str) -> str:
    """`text` over the device and the date of the run."""
    dev, date = result.meta.get("device", {}), str(result.meta.get("date", "?"))[:10]
    return f"{text}\n{dev.get('name', '?')} ({dev.get('arch', '?')}) · {date}"


def _save(fig, path) -> Path:
    fig.savefig(path)
    return Path(path)


def ladder_chart(result: BenchResult, path, *, size: int | None = None, layout: str = "nn") -> Path:
    """Horizontal bars, one per kernel top to bottom in ladder order (long kernel names stay
    readable with thirty kernels), IQR whiskers, cuBLAS fp32 and FP32 peak as vertical lines."""
    size = pick_ladder_size(result, size, layout)
    if size is None:
        raise ValueError("no timed square size to draw a ladder for")
    rows = [r for r in result.rows if r.shape == (size, size, size) and r.layout == layout
            and r.kernel != CUBLAS and r.precision == "fp32"]
    cub = result.cublas_row(size, size, size, layout)
    cub_t = cub.tflops if cub is not None and cub.timed else None
    peak = result.meta.get("device", {}).get("fp32_peak_tflops")

    fig, ax = _figure(10.0, max(4.0, 0.34 * len(rows) + 2.6), layout="constrained")
    ys = list(range(len(rows)))
    widths = [r.tflops if r.timed else 0.0 for r in rows]
    top = max(widths + [cub_t or 0.0, 1e-9])
    colors = [FAMILY_COLORS.get(r.family, OTHER_COLOR) for r in rows]
    lo = [r.tflops - tflops(r.m, r.n, r.k, r.q3_ms) if r.timed and r.q3_ms else 0.0 for r in rows]
    hi = [tflops(r.m, r.n, r.k, r.q1_ms) - r.tflops if r.timed and r.q1_ms else 0.0 for r in rows]
    ax.barh(ys, widths, color=colors, edgecolor="black", linewidth=0.5, height=0.72, zorder=2,
            xerr=[lo, hi], capsize=2, error_kw={"elinewidth": 0.8, "ecolor": "black"})
    for y, r in zip(ys, rows):
        if r.timed:
            label = f"{r.tflops:.1f}" + (f"  ({100 * r.vs_cublas:.0f}% of cuBLAS)"
                                         if r.vs_cublas is not None else "")
            ax.annotate(label, (r.tflops + hi[y], y), xytext=(4, 0), textcoords="offset points",
                        ha="left", va="center", fontsize=7.5)
        else:
            ax.barh([y], [0.03 * top], color="white", edgecolor="#C44E52", hatch="///", height=0.72,
                    zorder=2)
            ax.annotate(f"{r.status.upper()}: no speed figure", (0.03 * top, y), xytext=(4, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=7.5,
                        color="#C44E52", fontweight="bold")
    if cub_t is not None:
        ax.axvline(cub_t, color="black", linestyle="--", linewidth=1.4, zorder=3,
                   label=f"cuBLAS fp32 ({cub.message}): {cub_t:.1f} TFLOP/s")
    show_peak = bool(peak) and peak <= 1.6 * top
    if show_peak:
        ax.axvline(peak, color="grey", linestyle=":", linewidth=1.2, zorder=1,
                   label=f"FP32 peak: {peak:.1f} TFLOP/s")
    ax.set_xlim(0, max(top, cub_t or 0.0, peak if show_peak else 0.0) * 1.25)
    ax.set_ylim(len(rows) - 0.5, -0.5)                     # first rung at the top
    ax.set_yticks(ys, [r.kernel for r in rows], fontsize=8.5)
    ax.set_xlabel("TFLOP/s (fp32, higher is better)\nbars: median of per-launch CUDA-event times; "
                  "whiskers: interquartile range", fontsize=9)
    ax.grid(axis="x", alpha=0.3, zorder=0)
    ax.set_title(_title(result, f"SGEMM ladder at M = N = K = {size} ({LAYOUT_TEXT.get(layout, layout)})"),
                 fontsize=11)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles, labels = ax.get_legend_handles_labels()
    if cub_t is None:
        handles.append(Line2D([], [], color="#C44E52", linestyle="--"))
        labels.append("cuBLAS fp32: NOT MEASURED (no CuPy/PyTorch)")
    fams = list(dict.fromkeys(r.family for r in rows))
    handles += [Patch(facecolor=FAMILY_COLORS.get(f, OTHER_COLOR), edgecolor="black") for f in fams]
    labels += [f"{f} kernels" for f in fams]
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    return _save(fig, path)


def tflops_vs_size(result: BenchResult, path, *, layout: str = "nn") -> Path:
    fp32 = [r for r in result.rows if r.precision == "fp32"]     # an SGEMM chart
    sq = [r for r in fp32 if r.m == r.n == r.k and r.layout == layout]
    if not (squares := sorted({r.m for r in sq})):
        raise ValueError(f"no square sizes with layout {layout} to plot")
    names = list(dict.fromkeys(r.kernel for r in fp32 if r.kernel != CUBLAS))
    ncol = 1 if len(names) <= 16 else 2
    fig, ax = _figure(10.0 + 2.2 * ncol, max(5.8, 0.2 * len(names) / ncol + 2.0))
    import matplotlib
    colors = ([f"C{i}" for i in range(10)] if len(names) <= 10 else   # else 40 distinguishable
              [matplotlib.colormaps[c](i) for c in ("tab20", "tab20b") for i in range(20)])
    markers = "osD^vP*Xh<>p"
    fam = {r.kernel: r.family for r in result.rows}
    for i, name in enumerate(names):
        if not (pts := sorted((r.m, r.tflops) for r in sq if r.kernel == name and r.timed)):
            continue
        ax.plot(*zip(*pts), marker=markers[i % len(markers)],
                color=colors[i % len(colors)], linewidth=1.4, markersize=4.5, label=name,
                linestyle="-" if fam.get(name) != "cute" else "-.")
    if cpts := sorted((r.m, r.tflops) for r in sq if r.kernel == CUBLAS and r.timed):
        lib = result.meta.get("cublas", {}).get("library") or ""
        ax.plot(*zip(*cpts), color="black", linestyle="--",
                linewidth=2.2, marker="s", markersize=5, label=f"cuBLAS fp32 ({lib})".replace(" ()", ""))
    if peak := result.meta.get("device", {}).get("fp32_peak_tflops"):
        ax.axhline(peak, color="grey", linestyle=":", linewidth=1.2, label=f"FP32 peak {peak:.1f} TFLOP/s")
    ax.set_xscale("log", base=2)
    ax.set(xticks=squares, xticklabels=[str(s) for s in squares], xlabel="M = N = K",
           ylabel="TFLOP/s (fp32, higher is better)")
    ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(_title(result, f"SGEMM TFLOP/s against size ({LAYOUT_TEXT.get(layout, layout)})"),
                 fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, frameon=False, ncol=ncol,
              title="solid: handwritten, dash-dot: cute" if "cute" in fam.values() else None,
              title_fontsize=7.5)
    if not cpts:
        fig.text(0.01, 0.01, "cuBLAS NOT MEASURED (no CuPy/PyTorch in this run)", fontsize=7,
                 color="#C44E52")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return _save(fig, path)


def ratio_chart(result: BenchResult, path, *, precision: str = "fp32", layout: str = "nn") -> Path:
    """The ratio to cuBLAS (same precision, same run) per shape, shapes along x in the run's
    order labelled with their sweep class, one line of markers per kernel; 1 = cuBLAS."""
    rows = [r for r in result.rows if r.precision == precision and r.layout == layout
            and r.kernel != CUBLAS]
    shapes = list(dict.fromkeys(r.shape for r in rows))
    names = list(dict.fromkeys(r.kernel for r in rows if r.vs_cublas is not None))
    if len(shapes) < 2 or not names:
        raise ValueError(f"no ratios to cuBLAS on two shapes ({precision}, {layout}) to plot")
    geo = {x["kernel"]: x["geomean"] for x in ratio_summary(rows)}
    fig, ax = _figure(max(8.0, 0.42 * len(shapes) + 3.0), 5.6, layout="constrained")
    xs = range(len(shapes))
    for i, name in enumerate(names):
        by = {r.shape: r.vs_cublas for r in rows if r.kernel == name and r.vs_cublas is not None}
        ax.plot(xs, [by.get(sh, float("nan")) for sh in shapes], marker="osD^vP*X"[i % 8],
                color=f"C{i % 10}", linewidth=0.8, linestyle=":", markersize=5,
                label=f"{name} (geometric mean {geo[name]:.3f}×)" if name in geo else name)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1.2, label="cuBLAS (same run)")
    ax.set_xticks(list(xs), [f"{'×'.join(map(str, sh))}\n{sweep_class(*sh)}" for sh in shapes],
                  rotation=60, ha="right", fontsize=7)
    ax.set(ylabel=f"TFLOP/s ÷ cuBLAS {precision} TFLOP/s (higher is better)", ylim=(0, None))
    ax.grid(alpha=0.3)
    ax.set_title(_title(result, f"Ratio to cuBLAS per shape ({precision}, "
                                f"{LAYOUT_TEXT.get(layout, layout)})"), fontsize=11)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def random_chart(result: BenchResult, path) -> Path:
    """Ratio cuBLAS time / time (> 1: faster than cuBLAS) against 2·M·N·K, both axes log2,
    a panel per timing (schema.TIMINGS), a series per kernel and precision with its
    geometric mean in the legend; the seed of the draw in the title."""
    series = {t: timing_ratios(result.random_rows(), t) for t in TIMINGS}
    keys = list(dict.fromkeys(key for t in TIMINGS for key in series[t]))
    if not keys:
        raise ValueError("no ratios to cuBLAS to plot")
    one_kernel = len({k for k, _ in keys}) == 1
    fig, axes = _figure(5.2 * len(TIMINGS), 5.4, layout="constrained", panels=len(TIMINGS))
    from matplotlib.ticker import FuncFormatter
    for ax, timing in zip(axes, TIMINGS):
        for i, key in enumerate(keys):
            pairs = sorted((flops(*r.shape), x) for r, x in series[timing].get(key, []))
            if not pairs:
                continue
            geo = ratio_stats([x for _, x in pairs])["geomean"]
            name = key[1] if one_kernel else f"{key[0]} {key[1]}"
            ax.plot(*zip(*pairs), marker="osD^vP*X"[i % 8], linestyle="none", color=f"C{i % 10}",
                    markersize=4.5, alpha=0.85,
                    label=f"{name} (geometric mean {geo:.3f}×)")
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1.2)
        ax.axhline(SLOW, color="grey", linestyle=":", linewidth=1.0)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("2·M·N·K (flop)")
        ax.set_title(textwrap.fill(f"{timing}: {TIMINGS[timing][1]}", 56), fontsize=8.5)
        ax.grid(alpha=0.3, which="both")
        ax.legend(loc="best", fontsize=7)
    axes[0].set_ylabel("cuBLAS time ÷ time, same precision (> 1: faster than cuBLAS)")
    rnd = result.meta.get("random", {})
    who = ("gemm()" if keys[0][0] == "auto" else keys[0][0]) if one_kernel else "kernels"
    fig.suptitle(_title(result, f"{who} against cuBLAS on {rnd.get('count', '?')} random shapes, "
                                f"seed {rnd.get('seed', '?')} (dashed: 1, dotted: {SLOW})"), fontsize=11)
    return _save(fig, path)


def fp8_accuracy_chart(res: dict, path) -> Path:
    """Relative error against float64 over K (both axes log2) of `cute-gemm bench --size fp8`'s
    result `res` (fp8.json): gemm(), torch._scaled_mm, and _scaled_mm with fast accumulation
    (no promotion)."""
    rows = res["summary"]["fp8_e4m3"]["accuracy"]
    fig, ax = _figure(6.4, 4.6, layout="constrained")
    ks = [r["k"] for r in rows]
    for key, label, style in (("ours_rel_err", "gemm(): promoted every 128 k", "o-"),
                              ("scaled_mm_rel_err", "torch._scaled_mm", "s--"),
                              ("fast_accum_rel_err", "torch._scaled_mm, use_fast_accum", "^:")):
        if all(key in r for r in rows):
            ax.plot(ks, [r[key] for r in rows], style, markersize=5, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("K")
    ax.set_ylabel("relative error (Frobenius) vs float64, float32 result")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="best", fontsize=8)
    ax.set_title(f"e4m3 x e4m3, 256 x 256 x K, N(0, 1) operands\n{res.get('device', '?')} · "
                 f"{str(res.get('date', '?'))[:10]} · torch {res.get('torch', '?')}", fontsize=10)
    return _save(fig, path)


def write_all(result: BenchResult, out_dir, *, ladder_size: int | None = None) -> list[Path]:
    """ladder_<N>.png (nn layout), tflops_vs_size_<layout>.png for each layout with squares,
    and ratios_<layout>[_<precision>].png for each layout and precision with ratios to cuBLAS
    on three shapes or more; for a random run, RANDOM_PNG in their place."""
    d = Path(out_dir)
    out = []
    size = pick_ladder_size(result, ladder_size, "nn")
    if size is not None:
        out.append(ladder_chart(result, d / f"ladder_{size}.png", size=size, layout="nn"))
    for lay in dict.fromkeys(r.layout for r in result.rows):
        if len({r.m for r in result.rows if r.layout == lay and r.m == r.n == r.k
                and r.timed and r.precision == "fp32"}) >= 2:
            out.append(tflops_vs_size(result, d / f"tflops_vs_size_{lay}.png", layout=lay))
    if result.meta.get("random"):
        if any(r.vs_cublas is not None and r.kernel != CUBLAS for r in result.random_rows()):
            out.append(random_chart(result, d / RANDOM_PNG))
        return out
    for prec, lay in dict.fromkeys((r.precision, r.layout) for r in result.rows):
        if len({r.shape for r in result.rows if (r.precision, r.layout) == (prec, lay)
                and r.vs_cublas is not None and r.kernel != CUBLAS}) >= 3:
            tag = "" if prec == "fp32" else f"_{prec}"
            out.append(ratio_chart(result, d / f"ratios_{lay}{tag}.png", precision=prec, layout=lay))
    return out
