"""PNG plots of a bench result (matplotlib, the optional `plot` extra).

Figures are built on matplotlib's object API (Figure + Agg canvas), not pyplot, so
plotting touches no global state and works headless. Two charts:
  ladder_chart      TFLOP/s per kernel at one size, IQR whiskers, cuBLAS fp32 and the FP32
                    peak as horizontal lines, % of cuBLAS over each bar;
  tflops_vs_size    TFLOP/s against M = N = K for every kernel and cuBLAS.
Both carry device and date in the title and units on the axes.
"""
from __future__ import annotations

from pathlib import Path

from .bench import CUBLAS, LAYOUT_TEXT, BenchResult, pick_ladder_size, tflops

FAMILY_COLORS = {"handwritten": "#4C72B0", "cute": "#DD8452"}
OTHER_COLOR = "#55A868"


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure(w: float, h: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(w, h), dpi=120)
    FigureCanvasAgg(fig)
    return fig


def _subtitle(result: BenchResult) -> str:
    md = result.meta
    dev = md.get("device", {})
    return f"{dev.get('name', '?')} ({dev.get('arch', '?')}) · {str(md.get('date', '?'))[:10]}"


def _peak(result: BenchResult):
    return result.meta.get("device", {}).get("fp32_peak_tflops")


def ladder_chart(result: BenchResult, path, *, size: int | None = None, layout: str = "nn") -> Path:
    size = pick_ladder_size(result, size, layout)
    if size is None:
        raise ValueError("no timed square size to draw a ladder for")
    rows = [r for r in result.rows if r.shape == (size, size, size) and r.layout == layout
            and r.kernel != CUBLAS]
    cub = result.cublas_row(size, size, size, layout)
    cub_t = cub.tflops if cub is not None and cub.timed else None
    peak = _peak(result)

    fig = _figure(max(7.0, 0.75 * len(rows) + 3.0), 5.6)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(rows)))
    heights = [r.tflops if r.timed else 0.0 for r in rows]
    top = max([h for h in heights] + [cub_t or 0.0, 1e-9])
    colors = [FAMILY_COLORS.get(r.family, OTHER_COLOR) for r in rows]
    lo = [r.tflops - tflops(r.m, r.n, r.k, r.q3_ms) if r.timed and r.q3_ms else 0.0 for r in rows]
    hi = [tflops(r.m, r.n, r.k, r.q1_ms) - r.tflops if r.timed and r.q1_ms else 0.0 for r in rows]
    ax.bar(xs, heights, color=colors, edgecolor="black", linewidth=0.6, zorder=2,
           yerr=[lo, hi], capsize=3, error_kw={"elinewidth": 0.8, "ecolor": "black"})
    for x, r in zip(xs, rows):
        if r.timed:
            label = f"{r.tflops:.1f}"
            if r.vs_cublas is not None:
                label += f"\n{100 * r.vs_cublas:.0f}% of cuBLAS"
            ax.annotate(label, (x, r.tflops), xytext=(0, 4), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7.5)
        else:
            ax.bar([x], [0.04 * top], color="white", edgecolor="#C44E52", hatch="///", zorder=2)
            ax.annotate(r.status.upper(), (x, 0.04 * top), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color="#C44E52", fontweight="bold")
    if cub_t is not None:
        ax.axhline(cub_t, color="black", linestyle="--", linewidth=1.4, zorder=3,
                   label=f"cuBLAS fp32 ({cub.message}): {cub_t:.1f} TFLOP/s")
    if peak and peak <= 1.6 * top:
        ax.axhline(peak, color="grey", linestyle=":", linewidth=1.2, zorder=1,
                   label=f"FP32 peak: {peak:.1f} TFLOP/s")
    ymax = max(top, cub_t or 0.0, peak if peak and peak <= 1.6 * top else 0.0) * 1.22
    ax.set_ylim(0, ymax)
    ax.set_xticks(xs)
    ax.set_xticklabels([r.kernel for r in rows], rotation=30, ha="right", fontsize=9)
    ax.set_ylabel("TFLOP/s (fp32, higher is better)")
    ax.set_xlabel("kernel (ladder order)")
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.set_title(f"SGEMM ladder at M = N = K = {size} ({LAYOUT_TEXT.get(layout, layout)})\n"
                 f"{_subtitle(result)}", fontsize=11)
    from matplotlib.patches import Patch
    handles, labels = ax.get_legend_handles_labels()
    fams = list(dict.fromkeys(r.family for r in rows))
    handles += [Patch(facecolor=FAMILY_COLORS.get(f, OTHER_COLOR), edgecolor="black") for f in fams]
    labels += [f"{f} kernels" for f in fams]
    ax.legend(handles, labels, loc="upper left", fontsize=8, framealpha=0.9)
    note = "bars: median of per-launch CUDA-event times; whiskers: interquartile range"
    if cub_t is None:
        note += "; cuBLAS NOT MEASURED (" + result.meta.get("cublas", {}).get("note", "no CuPy/PyTorch") \
            .replace("cuBLAS NOT MEASURED: ", "")[:80] + ")"
    if cub_t is None:
        ax.text(0.99, 0.97, "cuBLAS fp32: not measured", transform=ax.transAxes, ha="right",
                va="top", fontsize=9, color="#C44E52", fontweight="bold")
    fig.text(0.01, 0.01, note, fontsize=7, color="#444444")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = Path(path)
    fig.savefig(path)
    return path


def tflops_vs_size(result: BenchResult, path, *, layout: str = "nn") -> Path:
    squares = sorted({r.m for r in result.rows if r.m == r.n == r.k and r.layout == layout})
    if not squares:
        raise ValueError(f"no square sizes with layout {layout} to plot")
    names = list(dict.fromkeys(r.kernel for r in result.rows if r.kernel != CUBLAS))
    fig = _figure(10.0, 5.8)
    ax = fig.add_subplot(1, 1, 1)
    import matplotlib
    cmap = matplotlib.colormaps["tab20" if len(names) > 10 else "tab10"]
    markers = "osD^vP*Xh<>p"
    for i, name in enumerate(names):
        pts = sorted((r.m, r.tflops) for r in result.rows
                     if r.kernel == name and r.m == r.n == r.k and r.layout == layout and r.timed)
        if not pts:
            continue
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[i % len(markers)],
                color=cmap(i % cmap.N), linewidth=1.5, markersize=5, label=name)
    cpts = sorted((r.m, r.tflops) for r in result.rows
                  if r.kernel == CUBLAS and r.m == r.n == r.k and r.layout == layout and r.timed)
    if cpts:
        lib = result.meta.get("cublas", {}).get("library") or ""
        ax.plot([p[0] for p in cpts], [p[1] for p in cpts], color="black", linestyle="--",
                linewidth=2.2, marker="s", markersize=5, label=f"cuBLAS fp32 ({lib})".replace(" ()", ""))
    peak = _peak(result)
    if peak:
        ax.axhline(peak, color="grey", linestyle=":", linewidth=1.2, label=f"FP32 peak {peak:.1f} TFLOP/s")
    ax.set_xscale("log", base=2)
    ax.set_xticks(squares)
    ax.set_xticklabels([str(s) for s in squares])
    ax.minorticks_off()
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOP/s (fp32, higher is better)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"SGEMM TFLOP/s against size ({LAYOUT_TEXT.get(layout, layout)})\n{_subtitle(result)}",
                 fontsize=11)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if not cpts:
        fig.text(0.01, 0.01, "cuBLAS NOT MEASURED (no CuPy/PyTorch in this run)", fontsize=7,
                 color="#C44E52")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = Path(path)
    fig.savefig(path)
    return path


def write_all(result: BenchResult, out_dir, *, ladder_size: int | None = None) -> list[Path]:
    """ladder_<N>.png (nn layout) and tflops_vs_size_<layout>.png for each layout with squares."""
    d = Path(out_dir)
    out = []
    size = pick_ladder_size(result, ladder_size, "nn")
    if size is not None:
        out.append(ladder_chart(result, d / f"ladder_{size}.png", size=size, layout="nn"))
    for lay in dict.fromkeys(r.layout for r in result.rows):
        if sum(1 for s in {r.m for r in result.rows if r.layout == lay and r.m == r.n == r.k
                             and r.timed}) >= 2:
            out.append(tflops_vs_size(result, d / f"tflops_vs_size_{lay}.png", layout=lay))
    return out
