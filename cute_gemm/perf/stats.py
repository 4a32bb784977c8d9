"""Arithmetic on measurements: statistics over repeats, TFLOP/s, the FP32 peak, ratios
to cuBLAS, and the sampled rows/columns of a large reference. Pure CPU, no device."""
from __future__ import annotations

import numpy as np

from ..precisions import PRECISION
from .schema import CUBLAS, Row


def summarize(times_ms) -> dict:
    """median, min, max, quartiles (linear interpolation, numpy's default) and IQR."""
    t = np.asarray(list(times_ms), dtype=np.float64)
    if t.size == 0:
        raise ValueError("no timings to summarize")
    q1, med, q3 = (float(x) for x in np.percentile(t, [25, 50, 75]))
    return {"median": med, "min": float(t.min()), "max": float(t.max()), "q1": q1, "q3": q3,
            "iqr": q3 - q1, "n": int(t.size)}


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def tflops(m: int, n: int, k: int, ms: float | None) -> float | None:
    """2 M N K / time, in TFLOP/s (None for a missing or non-positive time)."""
    if ms is None or not ms > 0:
        return None
    return gemm_flops(m, n, k) / (ms * 1e-3) / 1e12


def peak_tflops(sm_count: int, lanes_per_sm: int, clock_khz: float) -> float:
    """FP32 peak: SMs x FP32 lanes per SM x 2 flop per FMA x clock."""
    return sm_count * lanes_per_sm * 2 * clock_khz * 1e3 / 1e12


def peak_formula(sm_count: int, lanes_per_sm: int, clock_khz: float) -> str:
    p = peak_tflops(sm_count, lanes_per_sm, clock_khz)
    return (f"FP32 peak = {sm_count} SMs x {lanes_per_sm} FP32 lanes/SM x 2 flop/FMA x "
            f"{clock_khz / 1e6:.3f} GHz = {p:.1f} TFLOP/s")


def precision_peaks(fp32_peak: float | None, arch_int: int) -> dict[str, float | None]:
    """Dense peak TFLOP/s per precision at the clock of the FP32 peak (the precision
    table's ratio to it on this arch: precisions.Precision.peak)."""
    ratios = {name: p.peak_over_fp32(arch_int) for name, p in PRECISION.items()}
    return {name: None if fp32_peak is None or r is None else fp32_peak * r
            for name, r in ratios.items()}


def fill_ratios(rows: list[Row], peak: float | dict | None) -> None:
    """Set vs_cublas (against cuBLAS at the same precision, shape and layout) and frac_peak
    (peak: the FP32 peak, or a precision -> peak mapping)."""
    peaks = peak if isinstance(peak, dict) else {"fp32": peak}
    ref = {(r.m, r.n, r.k, r.layout, r.precision): r for r in rows
           if r.kernel == CUBLAS and r.timed}
    for r in rows:
        if not r.timed:
            r.vs_cublas = r.frac_peak = None
            continue
        c = ref.get((r.m, r.n, r.k, r.layout, r.precision))
        r.vs_cublas = r.tflops / c.tflops if c is not None and c.tflops else None
        pk = peaks.get(r.precision)
        r.frac_peak = r.tflops / pk if pk else None


def sample_indices(size: int, count: int, rng) -> np.ndarray:
    """`count` random indices in [0, size) plus the first and the last, sorted."""
    if size <= count + 2:
        return np.arange(size)
    pick = rng.choice(np.arange(1, size - 1), size=count, replace=False)
    return np.unique(np.concatenate([[0, size - 1], pick]))


def ratio_summary(rows: list[Row], groups=()) -> list[dict]:
    """Per (kernel, precision, layout), over the shapes where its ratio to cuBLAS was
    measured: how many, the geometric mean, the minimum and its shape, and the minimum over
    each of `groups` ((name, predicate(m, n, k)) pairs; None where no shape falls in one)."""
    runs: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        if r.kernel != CUBLAS and r.vs_cublas is not None and r.vs_cublas > 0:
            runs.setdefault((r.kernel, r.precision, r.layout), []).append(r)
    out = []
    for (kernel, prec, lay), rs in runs.items():
        worst = min(rs, key=lambda r: r.vs_cublas)
        mins = {}
        for name, pred in groups:
            inside = [r.vs_cublas for r in rs if pred(r.m, r.n, r.k)]
            mins[name] = min(inside) if inside else None
        out.append({"kernel": kernel, "precision": prec, "layout": lay, "shapes": len(rs),
                    "geomean": float(np.exp(np.mean(np.log([r.vs_cublas for r in rs])))),
                    "min": worst.vs_cublas, "min_shape": worst.shape, "groups": mins})
    return out
