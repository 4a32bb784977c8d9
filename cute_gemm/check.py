"""cross_check(): every kernel against a float64 reference and against each other.

Judged by the reference BLAS's gauge (sblat3's SMMCH): ratio = |C - C_ref| / (u * G), G = |alpha|
|A| |B| + |beta| |C0|, u the unit roundoff of the precision (or the result type's, where larger);
a pass is max ratio <= 16. Exact mode draws integers in [-8, 8], summed exactly in float32: a
correct kernel equals the reference bit for bit. Outputs are poisoned with NaN (an unwritten
element fails); kernels are diffed one precision at a time."""
from __future__ import annotations

import contextlib
import itertools
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from . import api, registry          # api.run looked up per call: tests stand in for it
from .api import call_precision, validate
from .driver import launch
from .plan import resolve
from .select import auto, standin
from .driver.arrays import ArrayLike, DeviceArray, narrow, to_numpy, widen
from .driver.epilogue import (SLOPE, Epilogue, reference as epilogue_reference, reference_blocks,
                              reference_scale as epilogue_scale)
from .base.errors import CuteGemmError, InputError, ShapeLimitError
from .base.precisions import DTYPE, EPS, PRECISION, DTypeName, as_accurate   # EPS: float32's epsilon
from .registry.records import PRECISION_DTYPE, PRECISIONS, LayoutName, PrecisionName

THRESHOLD = 16.0
# the types some precision writes its results in
RESULT_DTYPES = tuple(d for d in DTYPE if any(d in p.outs for p in PRECISION.values()))
DEFAULT_SHAPES = ((1, 1, 1), (129, 67, 33), (257, 383, 129), (1000, 1300, 700))


@dataclass
class KernelResult:
    name: str
    status: str                        # "pass" | "FAIL" | "skip" | "error"
    gauge_ratio: float = float("nan")
    rel_frobenius: float = float("nan")
    first_fail: tuple[int, ...] | None = None      # (row, column), a batch's index first
    message: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "skip")


@dataclass
class ShapeReport:
    shape: tuple[int, int, int]
    alpha: float
    beta: float
    exact: bool
    results: list[KernelResult]
    names: list[str]
    pairwise: np.ndarray               # max |C_i - C_j|, NaN where a kernel produced nothing
    precision: str = "fp32"
    out_dtype: str = "float32"
    batch: tuple[int, ...] = ()        # the result's batch extents (a batch of products)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results) and (
            not self.exact or not np.any(np.nan_to_num(self.pairwise, nan=0.0) != 0))


@dataclass
class CheckReport:
    shapes: list[ShapeReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.shapes)

    @property
    def failures(self) -> list[tuple[tuple[int, int, int], KernelResult]]:
        return [(s.shape, r) for s in self.shapes for r in s.results if not r.ok]

    def table(self) -> str:
        lines = []
        for s in self.shapes:
            (m, n, k), mode, names = s.shape, "exact integers" if s.exact else "random normal", s.names
            kw = max([22] + [len(r.name) + 2 for r in s.results])
            w = max(map(len, names)) if len(names) > 1 else 0
            lines += [(f"batch {s.batch} of " if s.batch else "") + f"M={m} N={n} K={k}  alpha={s.alpha:g} "
                      f"beta={s.beta:g}  ({mode}; {s.precision} -> {s.out_dtype})",
                      f"  {'kernel':<{kw}}{'status':<8}{'gauge ratio':>12}{'rel frob':>11}  first fail / note"]
            for r in s.results:
                note = (f"({', '.join(map(str, r.first_fail))}) " if r.first_fail else "") + r.message
                lines.append(f"  {r.name:<{kw}}{r.status:<8}{r.gauge_ratio:>12.3g}{r.rel_frobenius:>11.2e}  "
                             + note.strip())
            if 1 < len(names) <= 8:
                lines += ["  pairwise max |C_i - C_j|:", f"    {'':<{w}} " + " ".join(f"{x[:9]:>9}" for x in names)]
                lines += [f"    {a:<{w}} " + " ".join(f"{v:9.2e}" for v in s.pairwise[i])
                          for i, a in enumerate(names)]
            elif len(names) > 8:   # too many columns for a terminal: each one's largest
                lines.append("  pairwise max |C_i - C_j| (largest per kernel; "
                             "CheckReport.shapes[i].pairwise has the matrix):")
                for i, a in enumerate(names):
                    row = np.where(np.arange(len(names)) == i, np.nan, s.pairwise[i])
                    j = None if np.all(np.isnan(row)) else int(np.nanargmax(row))
                    lines.append(f"    {a:<{w}} -" if j is None else f"    {a:<{w}} {row[j]:9.2e}  (vs {names[j]})")
        lines.append("cross_check: " + ("PASS" if self.ok else f"FAIL ({len(self.failures)} failing)"))
        return "\n".join(lines)


def gauge_ratio(c: np.ndarray, ref: np.ndarray, gauge: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Elementwise |c - ref| / (eps * G); 0 where both agree exactly, inf for a NaN/Inf
    where the reference has a finite value (or a different non-finite one)."""
    c64 = c.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.abs(c64 - ref)
        r = np.where(gauge > 0, diff / (eps * gauge), np.where(diff == 0, 0.0, np.inf))
    same_nonfinite = (~np.isfinite(ref)) & ((c64 == ref) | (np.isnan(c64) & np.isnan(ref)))
    return np.where(same_nonfinite, 0.0, np.where(np.isnan(r), np.inf, r))


def reference(a, b, c, alpha, beta, epilogue: Epilogue | None = None):
    """float64 reference and the gauge G. With a fused epilogue: the value before its
    activation, t, has the gauge G_t = |alpha * srow * scol| (|A| @ |B|) + |beta| |C| + |bias|;
    the activation moves an error by at most its largest slope and adds a few ulp of its
    own, so the result's gauge is SLOPE * G_t + 4 |D| (docs/guide/epilogues.md)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if epilogue is not None:
        a64, b64 = reference_blocks(epilogue, a64, b64)
    s = 1.0 if epilogue is None else epilogue_scale(epilogue, a.shape[-2], b.shape[-1])
    ref, gauge = alpha * s * (a64 @ b64), np.abs(alpha * s) * (np.abs(a64) @ np.abs(b64))
    if c is not None and beta != 0.0:
        c64 = c.astype(np.float64)
        ref, gauge = ref + beta * c64, gauge + abs(beta) * np.abs(c64)
    if epilogue is not None:
        if epilogue.bias is not None:
            bias_only = replace(epilogue, activation=None, clamp=None, scale_rows=None, scale_cols=None)
            gauge = gauge + np.abs(epilogue_reference(bias_only, np.zeros_like(ref)))
        ref = epilogue_reference(epilogue, ref)
        gauge = SLOPE * gauge + 4 * np.abs(ref)
    return ref, gauge


def unit(precision: str, out_dtype: str = "float32") -> float:
    """The unit roundoff a kernel of `precision` writing `out_dtype` is judged with: its own,
    or where rounding into the result type costs more, that (a 16-bit result)."""
    return max(PRECISION[precision].unit, DTYPE[out_dtype].unit)


def judge(name: str, c: np.ndarray, ref: np.ndarray, gauge: np.ndarray, exact: bool,
          eps: float = EPS, out_dtype: str = "float32") -> KernelResult:
    """A kernel's result c against the reference: within THRESHOLD gauge ratios, or when
    exact, equal to the reference rounded into out_dtype."""
    if exact and out_dtype != "float32":   # the reference as a correct kernel stores it
        with np.errstate(over="ignore", invalid="ignore"):
            ref = widen(narrow(ref.astype(np.float32), out_dtype), out_dtype).astype(np.float64)
    tiny = DTYPE[out_dtype].tiny     # below its normal range a result's rounding error is
    if tiny:                         # absolute (float16: below 2^-14, up to half of 2^-24)
        gauge = gauge + tiny / eps
    ratio = gauge_ratio(c, ref, gauge, eps)
    worst = float(ratio.max()) if ratio.size else 0.0
    c64, finite = c.astype(np.float64), np.isfinite(ref)
    with np.errstate(invalid="ignore", over="ignore"):
        nref = float(np.linalg.norm(ref[finite]))
        nd = float(np.linalg.norm(np.where(finite, c64 - ref, 0.0)))
    rel = nd / nref if nref > 0 else (0.0 if nd == 0 else float("inf"))
    bad = ~((c64 == ref) | (np.isnan(c) & np.isnan(ref))) if exact else ratio > THRESHOLD
    if not bad.any():
        return KernelResult(name, "pass", worst, rel)
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad.ravel())), c.shape))
    nans = int(np.isnan(c).sum() - np.isnan(ref).sum())
    msg = f"got {c[first]:.6g}, want {ref[first]:.6g}" + (f"; {nans} NaN (unwritten?)" if nans > 0 else "")
    return KernelResult(name, "FAIL", worst, rel, first, msg)


def supported_kernels() -> list[registry.Kernel]:
    """The registered kernels the current GPU runs."""
    arch = launch.device_info().arch_int
    return [k for k in registry.kernels() if k.runs_on(arch)]


def launch_jobs(kernels: Iterable[str] | None, shapes: Iterable[tuple[int, int, int]],
                layout: LayoutName = "nn", out_dtype: DTypeName = "float32") -> list[tuple]:
    """cache.Prefetch's jobs for what cross_check(kernels=, shapes=, layout=) launches here on fresh
    operands: each entry point alone (the unit a launch compiles), so that a cold check waits for its
    slowest compile, not their sum. "auto" adds nothing: its picks are kernels."""
    arch = launch.device_info().arch_int
    ks = supported_kernels() if kernels is None else [registry.get(x) for x in kernels if x != registry.AUTO]
    jobs = set()
    for k, (m, n, kk) in itertools.product([k for k in ks if k.runs_on(arch)], shapes):
        for p in (p for p in k.precisions if k.computes(p, out_dtype)):
            try:
                v = resolve.choose_contiguous(k, m, n, kk, layout, p, out_dtype)[0]
            except CuteGemmError:        # (cross_check reports it; nothing to compile)
                continue
            jobs.update((k.name, k.target(arch), False, (e,)) for e in resolve.launch_entries(k, v, split=False))
    return sorted(jobs)


def as_given(x: np.ndarray | None, dtype: str) -> np.ndarray | None:
    """The float32 values of x once stored as `dtype` (what a kernel of that type reads)."""
    return x if x is None or dtype == "float32" else widen(narrow(x, dtype), dtype)


def _pairwise(outs: list[np.ndarray | None]) -> np.ndarray:
    """max |C_i - C_j| of every pair of results, NaN where either is missing."""
    pw = np.full((len(outs), len(outs)), np.nan)
    for (i, x), (j, y) in itertools.product(enumerate(outs), repeat=2):
        if x is not None and y is not None:
            with np.errstate(invalid="ignore"):
                d = np.abs(x.astype(np.float64) - y)
            pw[i, j] = float(np.nanmax(d)) if d.size and not np.all(np.isnan(d)) else 0.0
    return pw


def _check_one_shape(names, a, b, c, alpha, beta, exact, layout="nn", precision="fp32",
                     out_dtype="float32", epilogue: Epilogue | None = None) -> ShapeReport:
    (m, k), n = a.shape[-2:], b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])      # () for one product
    dt_a, dt_b = PRECISION[precision].dtype, PRECISION[precision].b_dtype
    a, b, c = as_given(a, dt_a), as_given(b, dt_b), as_given(c, out_dtype)
    if c is not None and c.shape != batch + (m, n):       # out holds C: every problem's
        c = np.ascontiguousarray(np.broadcast_to(c, batch + (m, n)))
    ref, gauge = reference(a, b, c, alpha, beta, epilogue)
    # (exact only where the epilogue keeps sums of integers exact: no GELU, no SiLU)
    exact = exact and (epilogue is None or epilogue.activation in (None, "relu"))
    eps = unit(precision, out_dtype)
    in_place = c is not None and beta != 0.0      # out holds C: read, then overwritten
    results, outs = [], []
    with contextlib.ExitStack() as held:       # (the arrays closed on the way out)
        def device(x, dtype=None):
            return held.enter_context(contextlib.closing(DeviceArray.from_host(x, dtype=dtype)))
        # "t": the transposed view of x's row-major transpose (each matrix of a batch)
        dA, dB = (device(np.ascontiguousarray(np.swapaxes(x, -1, -2)), dt).T if t == "t" else device(x, dt)
                  for x, t, dt in zip((a, b), layout, (dt_a, dt_b)))
        if epilogue is not None:        # its vectors on the device, float32, (1, L)
            epilogue = replace(epilogue, **{f: device(np.asarray(getattr(epilogue, f), np.float32).reshape(1, -1))
                                            for f in ("bias", "scale_rows", "scale_cols")
                                            if getattr(epilogue, f) is not None})
        for name in names:
            try:
                with contextlib.closing(DeviceArray.from_host(c, dtype=out_dtype) if in_place else
                                        DeviceArray.full(batch + (m, n), float("nan"), dtype=out_dtype)) as out:
                    t0 = time.perf_counter()
                    api.run(name, dA, dB, out if in_place else None, alpha=alpha, beta=beta,
                            out=out, precision=precision, epilogue=epilogue)
                    launch.check_last(name)
                    secs = time.perf_counter() - t0
                    got = out.to_host()
                r = judge(name, got, ref, gauge, exact, eps, out_dtype)
                r.seconds = secs
            except ShapeLimitError as e:
                r, got = KernelResult(name, "skip", message=str(e).split(" (")[0]), None
            except CuteGemmError as e:
                r, got = KernelResult(name, "error", message=str(e).splitlines()[0]), None
            results.append(r)
            outs.append(got)
    return ShapeReport((m, n, k), alpha, beta, exact, results, list(names), _pairwise(outs), precision,
                       out_dtype, tuple(batch))


@standin.waiting()       # the pick itself, never its stand-in (standin.stand_in)
def cross_check(a: ArrayLike | None = None, b: ArrayLike | None = None, *,
                kernels: str | Iterable[str] | None = None,
                shapes: Iterable[tuple[int, int, int]] | None = None, seed: int | None = None,
                alpha: float = 1.0, beta: float = 0.0, c: ArrayLike | None = None,
                exact: bool = False, layout: LayoutName = "nn",
                precision: PrecisionName | None = None,
                out_dtype: Literal["float32", "same"] | DTypeName = "float32",
                epilogue: Epilogue | None = None, batch: tuple[int, ...] = ()) -> CheckReport:
    """Run kernels on the same inputs; judge each against float64 by its precision's gauge and
    compare every pair. A kernel that cannot run a shape is reported, not raised: "skip" (beyond
    its design's limits) or "error" (any other CuteGemmError, its first line kept).

    Args:
        a: A, (M, K) or a batch (..., M, K), any array run() takes. Default: fresh inputs per shape.
        b: B, (K, N) or a batch (..., K, N), broadcasting against a's as numpy.matmul's.
        kernels: Kernel names; "auto" is gemm()'s pick. Default: all this GPU runs, and "auto".
        shapes: (M, N, K) of fresh inputs. Default: DEFAULT_SHAPES.
        seed: Seed of fresh inputs. Default: fresh entropy.
        alpha: Scale of a @ b.
        beta: Scale of C; fresh inputs include a C when beta != 0.
        c: C, (M, N), with `a` and `b`.
        exact: Fresh inputs of small integers, whose float32 sums are exact.
        layout: "nn", "tn", "nt" or "tt": "t" passes fresh A or B as a transposed view.
        precision: Only this arithmetic. Default: each kernel in each precision it offers.
        out_dtype: The result type: "float32", "same" (the input type's), or a type's name ("bfloat16",
            "float16": an 8-bit precision's rounded results); each precision is checked where a kernel
            writes that type.
        epilogue: A fused Epilogue (host vectors; fresh inputs draw each present one anew per shape),
            applied by the kernels that take one (Kernel.takes_epilogue) and by the reference.
        batch: Leading extents of fresh A, B and C: only the kernels that batch are run.

    Returns:
        CheckReport: a ShapeReport per shape and precision, with a KernelResult per kernel (status,
        gauge ratio, relative Frobenius error, first failing element) and the pairwise maximum
        differences; `.ok`, `.table()`.

    Raises:
        InputError: an unknown layout; or a, b, c that run() rejects (ShapeError, DTypeError, ...).
        UnknownKernelError: a name in `kernels` is not registered.
        CuteGemmError: an unknown precision or out_dtype, or only one of a and b.
        NoDeviceError: no GPU or CUDA driver.
    """
    registry.layout_majors(layout)          # a named error for anything else
    asked = None if kernels is None else [kernels] if isinstance(kernels, str) else list(kernels)
    chosen = supported_kernels() if asked is None else [registry.get(x) for x in asked if x != registry.AUTO]
    # gemm()'s choice ("auto") is checked like a kernel, named or by default, in the
    # precisions it has a candidate for on the device
    with_auto = asked is None or registry.AUTO in asked
    auto_arch = launch.device_info().arch_int if with_auto else None
    if given := a is not None and b is not None:
        sig = validate(a, b, c, None, alpha, beta)
        modes = 0 if sig.batch == (1, 1) else sig.modes      # (a shared B folds: one problem)
    else:
        batch = tuple(int(x) for x in batch)
        if any(x < 0 for x in batch):
            raise InputError(f"batch: extents >= 0, got {batch}")
        modes = 1 if math.prod(batch) > 1 else 0     # (A and B alike: their modes merge into one)

    def named(p: str, od: str | None) -> list[str]:
        return [k.name for k in chosen if (od is None and p in k.precisions or k.computes(p, od))
                and (epilogue is None or k.takes_epilogue) and k.batch_modes >= modes] + (
            [registry.AUTO] if with_auto and auto.offers(p, od, auto_arch) else [])
    if precision is not None and precision not in PRECISIONS:
        raise CuteGemmError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if out_dtype != "same" and out_dtype not in RESULT_DTYPES:
        raise CuteGemmError(f"out_dtype must be 'same' or one of {', '.join(RESULT_DTYPES)}, got {out_dtype!r}")
    precisions = [p for p in PRECISIONS if named(p, None) and (precision is None or p == precision)]
    if given:
        prec = call_precision(sig.A, sig.B, None, None, precision)[0]
        # unasked: the precision the operands' type implies, then each held to its gauge
        # (what run() takes on a kernel that computes only that: fp32_3xtf32 for float32);
        # the first is reported even where no kernel computes it
        precs = [prec] + ([p for p in as_accurate(prec)[1:] if p in precisions] if precision is None else [])
        runs = [(to_numpy("a", a), to_numpy("b", b), None if c is None else to_numpy("c", c),
                 0.0 if c is None else float(beta), precs, prec, epilogue)]
    elif a is not None or b is not None:
        raise CuteGemmError("cross_check needs both a and b (or neither)")
    else:
        rng = np.random.default_rng(seed)

        def draw(shape):    # fresh inputs: integers in [-8, 8] when exact, else standard normal
            return (rng.integers(-8, 9, size=shape).astype(np.float32) if exact
                    else rng.standard_normal(shape, dtype=np.float32))

        def vectors(m, n):  # the epilogue's vectors drawn anew for an M x N result
            length = {"bias": m if epilogue.bias_axis == "row" else n, "scale_rows": m, "scale_cols": n}
            return replace(epilogue, **{f: draw((length[f],)) for f in length if getattr(epilogue, f) is not None})
        runs = ((draw((*batch, m, k)), draw((*batch, k, n)), draw((*batch, m, n)) if beta != 0.0 else None,
                 float(beta), precisions, None, None if epilogue is None else vectors(m, n))
                for (m, n, k) in (shapes or DEFAULT_SHAPES))
    report = CheckReport()
    for a_, b_, c_, beta_, precs, always, ep in runs:
        for p in precs:
            od = PRECISION_DTYPE[p] if out_dtype == "same" else out_dtype
            if (names := named(p, od)) or p == always:
                report.shapes.append(_check_one_shape(names, a_, b_, c_, float(alpha), beta_, exact,
                                                      layout, p, od, ep))
    return report
