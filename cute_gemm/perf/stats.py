"""Arithmetic on measurements: statistics over repeats, TFLOP/s, peaks, ratios to cuBLAS and
their summaries, the sampled rows/columns of a large reference. Pure CPU."""
from __future__ import annotations

import numpy as np

from ..api import flops
from ..base.precisions import PRECISION
from ..driver.launch import peak_tflops
from .schema import CUBLAS, TIMINGS, Row

SLOW = 0.9      # a ratio below this is a shape where cuBLAS is clearly faster


def summarize(times_ms) -> dict:
    t = np.asarray(list(times_ms), dtype=np.float64)
    if t.size == 0:
        raise ValueError("no timings to summarize")
    q1, med, q3 = (float(x) for x in np.percentile(t, [25, 50, 75]))
    return {"median": med, "min": float(t.min()), "max": float(t.max()), "q1": q1, "q3": q3,
            "iqr": q3 - q1, "n": int(t.size)}


def tflops(m: int, n: int, k: int, ms: float | None) -> float | None:
    return flops(m, n, k) / (ms * 1e-3) / 1e12 if ms is not None and ms > 0 else None


def peak_formula(sm_count: int, lanes_per_sm: int, clock_khz: float) -> str:
    return (f"FP32 peak = {sm_count} SMs x {lanes_per_sm} FP32 lanes/SM x 2 flop/FMA x "
            f"{clock_khz / 1e6:.3f} GHz = {peak_tflops(sm_count, lanes_per_sm, clock_khz):.1f} TFLOP/s")


def precision_peaks(fp32_peak: float | None, arch_int: int) -> dict[str, float | None]:
    """Dense peak TFLOP/s per precision at the clock of the FP32 peak (Precision.peak_over_fp32)."""
    return {name: None if fp32_peak is None or (r := p.peak_over_fp32(arch_int)) is None
            else fp32_peak * r for name, p in PRECISION.items()}


def sample_indices(size: int, count: int, rng) -> np.ndarray:
    """`count` random indices in [0, size), the first and the last: the rows a check samples."""
    if size <= count + 2:
        return np.arange(size)
    pick = rng.choice(np.arange(1, size - 1), size=count, replace=False)
    return np.unique(np.concatenate([[0, size - 1], pick]))


def _problem(r: Row) -> tuple:
    return (r.m, r.n, r.k, r.layout, r.precision)


def cublas_peers(rows: list[Row]) -> dict[tuple, Row]:
    """The timed cuBLAS row of each (M, N, K, layout, precision): every row's peer."""
    return {_problem(r): r for r in rows if r.kernel == CUBLAS and r.timed}


def fill_ratios(rows: list[Row], peak: float | dict | None) -> None:
    """Set vs_cublas (against cuBLAS at the same precision, shape and layout) and frac_peak
    (peak: the FP32 peak, or a precision -> peak mapping)."""
    peaks = peak if isinstance(peak, dict) else {"fp32": peak}
    ref = cublas_peers(rows)
    for r in rows:
        c, pk = ref.get(_problem(r)), peaks.get(r.precision)
        r.vs_cublas = r.tflops / c.tflops if r.timed and c is not None and c.tflops else None
        r.frac_peak = r.tflops / pk if r.timed and pk else None


def ratio_stats(ratios) -> dict:
    """count, geometric mean, minimum and share below SLOW of ratios (cuBLAS time / our time:
    > 1 is faster than cuBLAS); None for the figures of an empty list."""
    r = np.asarray(list(ratios), dtype=np.float64)
    if r.size == 0:
        return {"count": 0, "geomean": None, "min": None, "below_0_9": None}
    if not np.all(r > 0):
        raise ValueError("ratios must be positive")
    return {"count": int(r.size), "geomean": float(np.exp(np.mean(np.log(r)))),
            "min": float(r.min()), "below_0_9": float(np.mean(r < SLOW))}


def ratio_summary(rows: list[Row], groups=()) -> list[dict]:
    """Per (kernel, precision, layout), over the shapes with a ratio to cuBLAS: how many, the
    geometric mean, the minimum and its shape, and the minimum over each of `groups`
    ((name, predicate(m, n, k)) pairs; None where no shape falls in one)."""
    runs: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        if r.kernel != CUBLAS and r.vs_cublas is not None and r.vs_cublas > 0:
            runs.setdefault((r.kernel, r.precision, r.layout), []).append(r)
    out = []
    for (kernel, prec, lay), rs in runs.items():
        worst = min(rs, key=lambda r: r.vs_cublas)
        out.append({"kernel": kernel, "precision": prec, "layout": lay, "shapes": len(rs),
                    "geomean": ratio_stats(r.vs_cublas for r in rs)["geomean"],
                    "min": worst.vs_cublas, "min_shape": worst.shape,
                    "groups": {name: min((r.vs_cublas for r in rs if pred(*r.shape)), default=None)
                               for name, pred in groups}})
    return out


def timing_ratios(rows: list[Row], timing: str) -> dict[tuple[str, str], list[tuple[Row, float]]]:
    """(kernel, precision) -> [(row, cuBLAS time / its time)] for one of schema.TIMINGS."""
    attr, ref = TIMINGS[timing][0], cublas_peers(rows)
    out: dict[tuple[str, str], list[tuple[Row, float]]] = {}
    for r in rows:
        peer = ref.get(_problem(r))
        mine, theirs = getattr(r, attr), peer and getattr(peer, attr)
        if r.kernel != CUBLAS and r.timed and mine and theirs:
            out.setdefault((r.kernel, r.precision), []).append((r, theirs / mine))
    return out


def random_summary(rows: list[Row]) -> list[dict]:
    """Per kernel, precision and timing: ratio_stats of its ratios to cuBLAS over the shapes
    where both were timed, and the shape of the minimum."""
    per = {t: timing_ratios(rows, t) for t in TIMINGS}
    out = []
    for kernel, prec in dict.fromkeys(key for t in TIMINGS for key in per[t]):
        for timing in TIMINGS:
            if pairs := per[timing].get((kernel, prec)):
                worst = min(pairs, key=lambda p: p[1])[0]
                out.append({"kernel": kernel, "precision": prec, "timing": timing,
                            **ratio_stats(x for _, x in pairs),
                            "min_shape": [worst.m, worst.n, worst.k, worst.layout]})
    return out
