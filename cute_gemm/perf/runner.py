"""bench(): every kernel next to cuBLAS at the same precision; time_kernel(): one kernel, one
shape (`cute-gemm run`). Each is checked on a NaN-poisoned output first; only a pass is timed."""
from __future__ import annotations

import contextlib
import importlib.metadata
import math
import os
import sys
import time
from typing import Sequence

import numpy as np
from tqdm import tqdm

from .. import api, driver, registry
from ..build import cache
from ..build.compile import nvrtc_version
from ..driver import launch
from ..select import auto, standin
from ..driver.arrays import DeviceArray
from ..check import as_given, judge, reference, unit
from ..base.precisions import DTYPE, PRECISION
from ..base.version import __version__
from ..registry.records import ITEMSIZE, PRECISION_DTYPE, PRECISIONS
from .clocks import ClockLog
from .cublas import find_cublas
from .first_call import measure_first_call
from .overhead import measure_overhead
from .report import write_outputs
from .schema import BURST, CUBLAS, CUBLAS_PEER, BenchResult, Row, first_line, utc_now
from .shapes import native_layout, plan
from .stats import (fill_ratios, peak_formula, precision_peaks, random_summary, sample_indices,
                    summarize, tflops)
from .timing import Flush, burst_times, call_times, event_times, interruptible, rotation_sets, warm_up

FULL_CHECK_MAX = 2048 ** 3      # above this M*N*K the reference is a row x column sample
SAMPLE = 64


# ---- checking on the bench inputs -------------------------------------------------------
class Reference:
    """float64 C = A @ B, whole up to M*N*K = full_max, else `sample` random rows x columns
    plus the first and last (in the residue tiles) with every other element finite."""

    def __init__(self, a: np.ndarray, b: np.ndarray, rng, *, full_max: int | None = None,
                 sample: int = SAMPLE, precision: str = "fp32"):
        self.out_dtype = PRECISION[precision].timed_out
        self.eps = unit(precision, self.out_dtype)
        (m, k), n = a.shape, b.shape[1]
        self.rows, self.cols, self.mode = None, None, "full"
        if m * n * k > (FULL_CHECK_MAX if full_max is None else full_max):
            self.rows, self.cols = sample_indices(m, sample, rng), sample_indices(n, sample, rng)
            a, b = a[self.rows], b[:, self.cols]
            self.mode = f"sampled {len(self.rows)}x{len(self.cols)}"
        self.ref, self.gauge = reference(a, b, None, 1.0, 0.0)

    def judge(self, name: str, c: np.ndarray):
        whole = self.rows is None
        r = judge(name, c if whole else c[np.ix_(self.rows, self.cols)], self.ref, self.gauge, False,
                  self.eps, self.out_dtype)
        if whole:
            return r
        if r.first_fail is not None:
            r.first_fail = (int(self.rows[r.first_fail[0]]), int(self.cols[r.first_fail[1]]))
        elif r.status == "pass" and (bad := int(c.size - np.count_nonzero(np.isfinite(c)))):
            r.status, r.message = "FAIL", f"{bad} non-finite elements outside the checked sample (unwritten?)"
        return r


def measure_row(row: Row, check_fn, time_fn, catch=Exception) -> Row:
    """Check first (check_fn() -> check.KernelResult), then time (time_fn() -> per-launch ms)
    only a passing kernel. `catch`: the exceptions that become status 'error'."""
    try:
        verdict = check_fn()
    except catch as e:
        row.status, row.message = "error", first_line(e)
        return row
    g = verdict.gauge_ratio          # JSON has no inf/NaN: a non-finite ratio is None
    row.gauge_ratio = float(g) if g is not None and math.isfinite(g) else None
    if verdict.status != "pass":
        row.status, row.message = "FAIL", verdict.message or "check failed"
        if verdict.first_fail is not None:
            row.message = f"at {tuple(verdict.first_fail)}: {row.message}"
        return row
    try:
        s = summarize(time_fn())
    except catch as e:
        row.status, row.message = "error", "timing: " + first_line(e)
        return row
    row.repeats, row.median_ms, row.min_ms, row.max_ms = s["n"], s["median"], s["min"], s["max"]
    row.q1_ms, row.q3_ms, row.iqr_ms = s["q1"], s["q3"], s["iqr"]
    row.tflops = tflops(row.m, row.n, row.k, row.median_ms)
    return row


# ---- inputs on the device -----------------------------------------------------------------
def operands(a32: np.ndarray, b32: np.ndarray, precision: str, rng, info, full_max=None):
    """(a, b) in the precision's input type, their Reference, and how many input sets to
    rotate through on device `info` (timing.rotation_sets)."""
    dt = PRECISION_DTYPE[precision]
    a, b = (a32, b32) if dt == "float32" else (as_given(a32, dt), as_given(b32, dt))
    (m, k), n = a.shape, b.shape[1]
    per_set = ITEMSIZE[dt] * (m * k + k * n) + ITEMSIZE[PRECISION[precision].timed_out] * m * n
    return (a, b, Reference(a, b, rng, precision=precision, full_max=full_max),
            rotation_sets(per_set, info.l2_bytes, launch.mem_get_info(info.ordinal)[0]))


class Inputs:
    """n_sets copies of A, B (in `layout`) and C on the device; set 0 is the checked one, the
    others dtod copies of it (same values at new addresses, no host traffic)."""

    def __init__(self, a: np.ndarray, b: np.ndarray, layout: str, n_sets: int,
                 precision: str = "fp32"):
        self.A, self.B, self.C, self._owned = [], [], [], []
        dtype, out_dtype = PRECISION_DTYPE[precision], PRECISION[precision].timed_out
        ta, tb = layout[0] == "t", layout[1] == "t"     # stored as x.T row-major, used as its .T
        try:
            first = [DeviceArray.from_host(np.ascontiguousarray(x.T if t else x), dtype=dtype)
                     for x, t in ((a, ta), (b, tb))]
            self._owned += first
            for i in range(n_sets):
                ai, bi = first if i == 0 else [self._new(d.shape, d.dtype_name, d) for d in first]
                self.A.append(ai.T if ta else ai)
                self.B.append(bi.T if tb else bi)
                self.C.append(self._new((a.shape[0], b.shape[1]), out_dtype))
            launch.synchronize()
        except BaseException:
            self.close()
            raise

    def _new(self, shape, dtype: str, like: DeviceArray | None = None) -> DeviceArray:
        """An array owned by these inputs; a copy of `like`'s values when given."""
        self._owned.append(d := DeviceArray(shape, dtype=dtype))
        if like is not None:
            launch.memcpy_dtod(d.ptr, like.ptr, like.buffer_bytes)
        return d

    def __len__(self):
        return len(self.A)

    def __enter__(self) -> "Inputs":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for d in self._owned:
            with contextlib.suppress(Exception):
                d.close()
        self._owned = []


def gpu_check(name, fn, inputs: Inputs, ref: Reference):
    """Poison C0 with NaN, run once on set 0, judge on the host."""
    c0 = inputs.C[0]
    d = DTYPE[c0.dtype_name]
    launch.memset(c0.ptr, d.bits(float("nan")), c0.size, d.itemsize)
    fn(0)
    launch.check_last(name)
    return ref.judge(name, c0.to_host())


def compile_ahead(kernels, arch_int: int):
    """A cache.Prefetch (to be closed) compiling `kernels` and those a composed one runs."""
    todo = list(kernels)
    todo += [k.gemm_of.kernel for k in todo if k.gemm_of is not None]
    jobs = list(dict.fromkeys((k.name, k.target(arch_int), False) for k in todo
                              if k.runs_on(arch_int)))
    # one compile: in this process (a spawned worker would cost more than it saves)
    return cache.Prefetch(jobs if len(jobs) > 1 else [])


def compile_all(kernels, info, catch=Exception) -> dict[str, tuple[float | None, str, str]]:
    """Compile every kernel before anything is timed: name -> (NVRTC seconds, cache origin, error
    or skip reason). `catch`: the exceptions that become an error (tune catches none)."""
    out: dict[str, tuple[float | None, str, str]] = {}
    ahead = compile_ahead(kernels, info.arch_int)
    try:
        for k in kernels:
            if not k.runs_on(info.arch_int):
                out[k.name] = (None, "", f"needs sm_{k.min_arch}, device is {info.arch}")
                continue
            try:
                c = cache.get(k, k.target(info.arch_int))
                out[k.name] = (c.compile_seconds, c.origin, "")
            except catch as e:
                out[k.name] = (None, "", "compile: " + first_line(e))
    finally:
        ahead.close()
    return out


class Progress(tqdm):
    """The bench's progress bar on stderr: step(label) after each row."""

    def __init__(self, total: int, enabled: bool = True):
        super().__init__(total=total, disable=not enabled, file=sys.stderr, leave=True,
                         bar_format="[{bar:24}] {n_fmt}/{total_fmt} {percentage:3.0f}% {elapsed}{postfix}")

    def step(self, label: str) -> None:
        self.set_postfix_str(label, refresh=False)
        self.update()


# ---- one kernel, one shape ------------------------------------------------------------------
@standin.waiting()       # the pick itself, never its stand-in (standin.stand_in)
def time_kernel(name: str, m: int, n: int, k: int, *, repeats: int = 20, warmup: int = 3,
                seed=None) -> dict:
    """Check once on fresh random inputs, then time `repeats` launches. Exceptions propagate
    (the CLI names compile, shape and device errors itself)."""
    name = registry.check_name(name)
    info = launch.device_info()
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    ref = Reference(a, b, rng)
    row = Row(name, family(name), m, n, k, check=ref.mode)
    if name == registry.AUTO:
        row.message = _auto_message(m, n, k, "nn", "fp32", info)
    # errors (compile, shape limits, launch) go to the caller, as run()'s would
    with Inputs(a, b, "nn", 1) as inputs, Flush(info.l2_bytes) as flush:
        def fn(i):
            api.run(name, inputs.A[i], inputs.B[i], out=inputs.C[i])
        measure_row(row, lambda: gpu_check(name, fn, inputs, ref), lambda: event_times(
            fn, 1, flush, repeats=repeats, warmup=warmup, min_repeats=repeats), catch=())
    return {"kernel": name, "m": m, "n": n, "k": k, "ms": row.median_ms, "min_ms": row.min_ms,
            "max_ms": row.max_ms, "tflops": row.tflops, "gauge_ratio": row.gauge_ratio,
            "status": row.status, "check": row.check, "message": row.message}


# ---- every kernel, every shape and layout, next to cuBLAS -----------------------------------
@standin.waiting()       # the pick itself, never its stand-in (standin.stand_in)
def bench(kernels: str | Sequence[str] | None = None,
          sizes: int | str | Sequence[int | str | tuple[int, int, int]] | None = None, *,
          layouts: str | Sequence[str] | None = None, repeats: int = 30, warmup: int = 3,
          min_repeats: int = 5, max_seconds: float = 2.0, cublas: str = "auto",
          overhead: bool = False, overhead_kernel: str | None = None, seed: int | None = None,
          first_call: bool = False, out_dir: str | os.PathLike | None = None, plots: bool = True,
          ladder_size: int | None = None, progress: bool = True,
          precisions: str | Sequence[str] = ("fp32",),
          flops: tuple[float, float] | None = None) -> BenchResult:
    """Check, then time, every kernel (default: all; "auto" with random sizes, which also get
    call_ms and burst_ms) on every shapes.plan case and precision, next to cuBLAS."""
    info = launch.device_info()
    driver.ensure_context(info.ordinal)
    todo = plan(sizes, layouts, seed=seed, flops=flops)
    if not kernels:
        kernels = list(registry.names()) if todo.random is None else [registry.AUTO]
    names = [registry.check_name(x) for x in ([kernels] if isinstance(kernels, str) else kernels)]
    precs = parse_precisions(precisions)
    backend, cublas_note = find_cublas(cublas, precisions=precs)
    tkw = dict(repeats=repeats, warmup=warmup, min_repeats=min_repeats, max_seconds=max_seconds)
    result = BenchResult(_meta(info, backend, cublas_note, todo, **tkw, precisions=list(precs)))
    meta, settings = result.meta, result.meta["settings"]
    if todo.random is not None:
        meta["random"] = todo.record()
    # gemm()'s candidates are not compiled whole here: its first use of a problem compiles the
    # entry points it times, side by side (docs/benchmarks.md#random-shapes-size-random)
    ks = [registry.get(x) for x in names if x != registry.AUTO]
    compiled = compile_all(list({k.name: k for k in ks}.values()), info)
    meta["compile"] = {x: {"nvrtc_seconds": cs, "origin": origin, "error": err or None}
                       for x, (cs, origin, err) in compiled.items() if not err.startswith("needs")}
    compiled[registry.AUTO] = (None, "", "")
    by_prec = {p: [x for x in names if offers(x, p, info.arch_int)] for p in precs}
    by_prec = {p: xs for p, xs in by_prec.items() if xs or p != "fp32" or not names}
    bar = Progress(sum(len(lays) for _, lays in todo.cases)
                   * sum(len(xs) + (backend is not None) for xs in by_prec.values()), progress)
    rng = np.random.default_rng(todo.seed)
    try:
        clocks = ClockLog(launch.pci_bus_id(info.ordinal))
    except Exception:     # NVML then samples its first GPU
        clocks = ClockLog(None)
    done = 0
    with bar, clocks, Flush(info.l2_bytes) as flush, interruptible():
        warm_up(flush)
        settings.update(flush_bytes=flush.nbytes, flush_hold_us=flush.hold_us, rotation={})
        try:
            for (m, n, kk), lays in todo.cases:
                a32 = rng.standard_normal((m, kk), dtype=np.float32)
                b32 = rng.standard_normal((kk, n), dtype=np.float32)
                for prec, pnames in by_prec.items():
                    a, b, ref, n_sets = operands(a32, b32, prec, rng, info)
                    settings["rotation"][f"{m}x{n}x{kk}" + ("" if prec == "fp32" else f" {prec}")] = n_sets
                    for lay in lays:
                        _bench_shape(result, pnames, compiled, backend, a, b, ref, lay, n_sets, flush,
                                     bar, tkw, info, prec, clocks, callers=todo.random is not None)
                    del a, b, ref
                done += 1
        except KeyboardInterrupt:     # (or SIGTERM): the shapes done are kept, summed up and written
            meta["interrupted"] = f"after {done} of {len(todo.cases)} shapes"
            overhead = first_call = False
            finished = {shape for shape, _ in todo.cases[:done]}
            result.rows = [r for r in result.rows if (r.m, r.n, r.k) in finished]
    meta["clocks"] = clocks.summary(clocks.timed)
    fill_ratios(result.rows, precision_peaks(meta["device"]["fp32_peak_tflops"], info.arch_int))
    if todo.random is not None:
        meta["random"]["summary"] = random_summary(result.random_rows())
    if overhead:
        try:
            result.overhead = measure_overhead(overhead_kernel or (names[0] if names else None),
                                               backend=backend)
        except Exception as e:
            result.overhead = {"error": first_line(e)}
    if first_call:
        result.first_call = measure_first_call()
    if out_dir is not None:
        write_outputs(result, out_dir, plots=plots, ladder_size=ladder_size)
    return result


# ---- where a number was made ------------------------------------------------------------------
def versions(backend=None) -> dict:
    """The versions of everything that changes a result (and of the cuBLAS route)."""
    v = {"cute_gemm": __version__, "python": sys.version.split()[0], "numpy": np.__version__}
    for dist in ("cuda-bindings", "cuda-core", "nvidia-cutlass", "nvidia-cuda-nvrtc"):
        try:
            v[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            v[dist] = None
    try:
        v["nvrtc"] = ".".join(map(str, nvrtc_version()))
    except Exception:
        v["nvrtc"] = None
    if backend is not None:
        v[backend.library] = backend.version
        if backend.cublas_version:
            v["cublas"] = backend.cublas_version
    return v


def driver_text(v: int) -> str:
    """13000 (the driver API's) -> "13.0"."""
    return f"{v // 1000}.{(v % 1000) // 10}"


def device_meta(info) -> dict:
    return {"name": info.name, "arch": info.arch, "ordinal": info.ordinal, "sm_count": info.sm_count,
            "fp32_lanes_per_sm": info.fp32_lanes_per_sm, "clock_khz": info.clock_khz,
            "l2_bytes": info.l2_bytes, "fp32_peak_tflops": info.fp32_peak_tflops,
            "peak_formula": peak_formula(info.sm_count, info.fp32_lanes_per_sm, info.clock_khz)}


def _meta(info, backend, cublas_note, todo, **settings) -> dict:
    return {
        "tool": "cute-gemm bench",
        "date": utc_now(),
        "device": device_meta(info), "driver": driver_text(info.driver_version),
        "versions": versions(backend),
        "cublas": {"available": backend is not None, "note": cublas_note,
                   "library": backend.library if backend else None},
        "settings": {**settings, "layouts": todo.layouts, "seed": todo.seed,
                     "sizes": [list(s) for s in todo.shapes]},
        "method": {
            "check": f"gauge ratio <= 16 against float64: whole product up to M*N*K = "
                     f"{FULL_CHECK_MAX} (2048^3), above that {SAMPLE} random rows x {SAMPLE} "
                     "random columns (+ first and last) and every element finite",
            "timing": "CUDA events around each launch; before each launch an L2-sized memset, "
                      "then a spin on every SM that holds the GPU while the host enqueues it; "
                      "input sets rotated to exceed 2x L2; median, min/max, IQR over repeats",
            "tflops": "2*M*N*K / median time",
        },
        "compile": {},
    }


def family(name: str) -> str:
    """A row's family: the kernel's, "auto" for gemm()'s choice, "reference" for cuBLAS."""
    return {registry.AUTO: registry.AUTO, CUBLAS: "reference"}.get(name) or registry.get(name).family


def offers(name: str, precision: str, arch_int: int | None = None) -> bool:
    """True if kernel `name` (or gemm()'s choice, "auto", on compute capability `arch_int`)
    computes `precision`."""
    if name == registry.AUTO:
        return auto.offers(precision, None, arch_int)
    return precision in registry.get(name).precisions


def parse_precisions(precisions) -> tuple[str, ...]:
    """("fp32",), ("bf16", "tf32"), "all" -> the precisions to bench, in PRECISIONS order."""
    if isinstance(precisions, str):
        precisions = PRECISIONS if precisions == "all" else precisions.split(",")
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad or not precisions:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)} or all, got "
                         f"{', '.join(bad) or 'nothing'}")
    return tuple(p for p in PRECISIONS if p in precisions)


def _time_row(row: Row, fn, name, inputs: Inputs, ref, flush, tkw: dict, clocks, callers) -> None:
    """measure_row of fn with the clock and power NVML saw meanwhile; with callers, a timed
    row's call_ms and burst_ms too, repeats fitted to --max-seconds (bursts: BURST calls each)."""
    t0 = time.monotonic()

    def first(i):       # the check's call: the problem's first (gemm() tunes in it)
        t = time.perf_counter()
        fn(i)
        launch.synchronize()
        row.first_ms = (time.perf_counter() - t) * 1e3
    measure_row(row, lambda: gpu_check(name, first, inputs, ref),
                lambda: event_times(fn, len(inputs), flush, **tkw))
    t1 = time.monotonic()
    clocks.timed.append((t0, t1))
    row.clock_mhz, row.power_w = clocks.window(t0, t1) or (None, None)
    if not (callers and row.timed):
        return

    def fit(want: int, ms: float) -> int:
        return max(tkw["min_repeats"], min(want, int(1e3 * tkw["max_seconds"] / max(ms, 1e-3))))
    try:        # a call: + the flush's memset and sync
        row.call_ms = float(np.median(call_times(fn, len(inputs), flush, repeats=fit(
            tkw["repeats"], row.median_ms + 0.1))))
        row.burst_ms = float(np.median(burst_times(fn, len(inputs), flush, repeats=fit(
            max(1, tkw["repeats"] // 3), BURST * row.median_ms))))
    except Exception as e:
        row.message = (row.message + "; " if row.message else "") + "call/burst: " + first_line(e)


def _bench_shape(result, names, compiled, backend, a, b, ref, lay, n_sets, flush, bar,
                 tkw, info, prec: str, clocks: ClockLog, callers: bool) -> None:
    """The rows of one shape, layout and precision: cuBLAS first, then each kernel."""
    (m, kk), n = a.shape, b.shape[1]
    label = f"{m}x{n}x{kk} {lay}" + ("" if prec == "fp32" else f" {prec}")
    try:
        inputs = Inputs(a, b, lay, n_sets, prec)
    except Exception as e:   # out of memory, typically: every row of this shape says so
        for name in ([CUBLAS] if backend else []) + names:
            result.rows.append(Row(name, family(name), m, n, kk, lay, "error", ref.mode,
                                   message="inputs: " + first_line(e), precision=prec))
            bar.step(f"{name} {label}")
        return
    timing = (inputs, ref, flush, tkw, clocks, callers)
    with inputs:
        if backend is not None:
            peer = CUBLAS_PEER[prec]     # fp32_3xtf32 is timed beside SGEMM (TF32 off)
            row = Row(CUBLAS, family(CUBLAS), m, n, kk, lay, check=ref.mode, precision=prec,
                      message=f"{backend.library} {backend.version}"
                              + ("" if peer == prec else f", {peer} (TF32 off)"))
            if peer not in getattr(backend, "precisions", ("fp32",)):
                row.status, row.message = "skip", f"{backend.library} has no {peer} GEMM"
            else:
                try:
                    wa, wb, wc = ([backend.wrap(x) for x in xs] for xs in (inputs.A, inputs.B, inputs.C))
                    extra = () if peer == "fp32" else (peer,)
                    _time_row(row, lambda i: backend.matmul(wa[i], wb[i], wc[i], *extra), CUBLAS, *timing)
                except Exception as e:
                    row.status, row.message = "error", first_line(e)
            result.rows.append(row)
            bar.step(f"{CUBLAS} {label}")
        for name in names:
            cs, origin, err = compiled[name]
            row = Row(name, family(name), m, n, kk, lay, check=ref.mode, compile_s=cs,
                      compile_origin=origin, precision=prec)
            k = None if name == registry.AUTO else registry.get(name)
            native = None if err or k is None else native_layout(k, m, n, kk, lay, prec)
            if err:
                row.status, row.message = "skip" if err.startswith("needs") else "error", err
            elif k is None:     # gemm(): said below, after its first call (tuning on first use)
                pass
            elif lay != "nn" and not native and prec == "fp32":
                row.status, row.message = "skip", f"no variant takes layout {lay} as is (run() would copy)"
            elif k.dyn_smem(m, n, kk) > info.smem_optin:
                row.status = "skip"
                row.message = f"needs {k.dyn_smem(m, n, kk)} B of shared memory > {info.smem_optin}"
            elif not native:
                row.message = "includes run()'s relayout copy of an operand"
            if row.status == "pass":
                _time_row(row, lambda i, name=name: api.run(name, inputs.A[i], inputs.B[i],
                                                             out=inputs.C[i], precision=prec),
                          name, *timing)
            if k is None and not err:   # what gemm() ran (the check and times are of that)
                row.message = _auto_message(m, n, kk, lay, prec, info)
            result.rows.append(row)
            bar.step(f"{name} {label}")


def _auto_message(m: int, n: int, kk: int, lay: str, prec: str, info) -> str:
    """What gemm() runs on the bench's operands (fresh contiguous arrays in `lay`)."""
    od = PRECISION[prec].timed_out
    try:
        c = auto.choose(m, n, kk, device=info, layout=lay, precision=prec, out_dtype=od,
                        aligned=auto.contiguous_aligned(m, n, kk, lay, prec, od))
    except Exception as e:      # run() raises the same error, and the row says so
        return first_line(e)
    return f"picked {c}"
