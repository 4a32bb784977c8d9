"""bench(): every kernel against cuBLAS fp32 — checked first, then timed with CUDA events.

Method (printed with every run and stored in the JSON, so a number never travels
without how it was made):

* Check before timing. Each kernel (and cuBLAS) runs once on the bench inputs into a
  NaN-poisoned output and is judged with check.judge (gauge ratio <= 16, see check.py).
  Up to M*N*K = 2048^3 the float64 reference is the whole product; above that, a full
  float64 product on the host is too slow, so the reference is exact float64 on a
  sample of rows x columns (64 random rows and columns, plus the first and last, which
  sit in the residue tiles), and every other element must at least be finite (an
  unwritten element stays NaN). A kernel that fails gets no speed figure.
* Timing. CUDA events around each launch only (never around allocation or copies),
  after warm-up. Before each timed launch an L2-sized memset evicts the cache and keeps
  the GPU busy while Python enqueues the launch, so host overhead is not counted (it is
  measured separately: measure_overhead). Inputs are rotated: enough A/B/C sets that
  together they exceed twice the L2, launches cycle through them.
* Statistics over the repeats: median, min/max, quartiles (numpy linear interpolation)
  and IQR. The number of repeats shrinks for slow kernels to fit --max-seconds per
  kernel and shape, never below --min-repeats.
* TFLOP/s = 2 M N K / median time. Ratio to cuBLAS fp32 measured in the same run, same
  inputs and layout; fraction of the FP32 peak SMs x FP32 lanes/SM x 2 x clock.
* cuBLAS through CuPy or PyTorch (optional, imported lazily) with TF32 off; the check
  above would catch a TF32 result (its error is ~2^13 times fp32's). Without either
  library the output says so and the ratio column stays empty.
* Compile time (NVRTC, or the cache level that served the cubin) is reported apart
  from run time.

Note: `cute_gemm.bench` (the package attribute) is this module's bench() function; use
`from cute_gemm.bench import X` or importlib to reach the module itself.
"""
from __future__ import annotations

import csv
import datetime as _dt
import importlib
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Sequence

import numpy as np

from . import registry

SCHEMA = 1
DEFAULT_SQUARES = (256, 512, 1024, 2048, 4096, 8192)
# non-multiples of every tile, skinny/fat and short-K shapes
ODD_SHAPES = ((1000, 1000, 1000), (4095, 4097, 4093), (8192, 2048, 4096), (2048, 8192, 4096),
              (4096, 4096, 512), (257, 8191, 1025))
LAYOUTS = ("nn", "tn", "nt", "tt")
LAYOUT_TEXT = {"nn": "A, B row-major", "tn": "A transposed view (CuTe NT: A M-major, B N-major)",
               "nt": "B transposed view (CuTe TN: A, B K-major)",
               "tt": "A, B transposed views (A M-major, B K-major)"}
FULL_CHECK_MAX = 2048 ** 3      # above this M*N*K the reference is a row x column sample
SAMPLE = 64
OVERHEAD_TARGET_US = 10.0       # run() may cost at most this much above a raw launch
CUBLAS = "cuBLAS"


# ---- results --------------------------------------------------------------------------
@dataclass
class Row:
    """One kernel (or cuBLAS) on one shape and layout."""
    kernel: str
    family: str
    m: int
    n: int
    k: int
    layout: str = "nn"
    status: str = "pass"             # pass | FAIL | error | skip
    check: str = ""                  # "full" | "sampled RxC"
    gauge_ratio: float | None = None
    compile_s: float | None = None   # NVRTC seconds of the build that made the cubin
    compile_origin: str = ""         # compiled | disk | memory
    repeats: int = 0
    median_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    q1_ms: float | None = None
    q3_ms: float | None = None
    iqr_ms: float | None = None
    tflops: float | None = None
    vs_cublas: float | None = None   # this TFLOP/s / cuBLAS TFLOP/s
    frac_peak: float | None = None   # this TFLOP/s / FP32 peak
    message: str = ""

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)

    @property
    def timed(self) -> bool:
        return self.status == "pass" and self.median_ms is not None


_INT_FIELDS = {"m", "n", "k", "repeats"}
_FLOAT_FIELDS = {"gauge_ratio", "compile_s", "median_ms", "min_ms", "max_ms", "q1_ms", "q3_ms",
                 "iqr_ms", "tflops", "vs_cublas", "frac_peak"}
COLUMNS = tuple(f.name for f in fields(Row))


@dataclass
class BenchResult:
    meta: dict
    rows: list[Row] = field(default_factory=list)
    overhead: dict | None = None

    @property
    def ok(self) -> bool:
        """No kernel failed its check or errored (skips are fine)."""
        return all(r.status in ("pass", "skip") for r in self.rows)

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "meta": self.meta, "rows": [asdict(r) for r in self.rows],
                "overhead": self.overhead}

    @classmethod
    def from_dict(cls, d: dict) -> "BenchResult":
        known = set(COLUMNS)
        rows = [Row(**{k: v for k, v in r.items() if k in known}) for r in d.get("rows", [])]
        return cls(dict(d.get("meta", {})), rows, d.get("overhead"))

    def cublas_row(self, m, n, k, layout) -> Row | None:
        for r in self.rows:
            if r.kernel == CUBLAS and r.shape == (m, n, k) and r.layout == layout:
                return r
        return None


# ---- arithmetic -----------------------------------------------------------------------
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


def fill_ratios(rows: list[Row], peak: float | None) -> None:
    """Set vs_cublas (against cuBLAS on the same shape and layout) and frac_peak."""
    ref = {(r.m, r.n, r.k, r.layout): r for r in rows if r.kernel == CUBLAS and r.timed}
    for r in rows:
        if not r.timed:
            r.vs_cublas = r.frac_peak = None
            continue
        c = ref.get((r.m, r.n, r.k, r.layout))
        r.vs_cublas = r.tflops / c.tflops if c is not None and c.tflops else None
        r.frac_peak = r.tflops / peak if peak else None


def rotation_sets(bytes_per_set: int, l2_bytes: int, free_bytes: int | None = None, *,
                  factor: float = 2.0, max_sets: int = 256, mem_fraction: float = 0.5) -> int:
    """How many A/B/C sets to cycle through so that together they exceed factor x L2
    (at least 2), within mem_fraction of the free device memory."""
    want = max(2, math.ceil(factor * l2_bytes / max(bytes_per_set, 1)))
    n = min(want, max_sets)
    if free_bytes is not None:
        n = min(n, int(mem_fraction * free_bytes) // max(bytes_per_set, 1))
    return max(1, n)


def sample_indices(size: int, count: int, rng) -> np.ndarray:
    """`count` random indices in [0, size) plus the first and the last, sorted."""
    if size <= count + 2:
        return np.arange(size)
    pick = rng.choice(np.arange(1, size - 1), size=count, replace=False)
    return np.unique(np.concatenate([[0, size - 1], pick]))


# ---- sizes and layouts ------------------------------------------------------------------
def parse_sizes(specs) -> list[tuple[int, int, int]]:
    """"4096" -> 4096^3, "MxNxK", "squares", "odd", "all"; ints and 3-tuples pass through."""
    if specs is None:
        specs = ["all"]
    if isinstance(specs, (str, int)):
        specs = [specs]
    out: list[tuple[int, int, int]] = []
    for s in specs:
        if isinstance(s, int):
            out.append((s, s, s))
        elif isinstance(s, (tuple, list)):
            if len(s) != 3:
                raise ValueError(f"a size is (M, N, K), got {s!r}")
            out.append(tuple(int(x) for x in s))
        elif s in ("squares", "odd", "all"):
            if s in ("squares", "all"):
                out += [(x, x, x) for x in DEFAULT_SQUARES]
            if s in ("odd", "all"):
                out += list(ODD_SHAPES)
        else:
            parts = str(s).lower().replace("*", "x").split("x")
            try:
                dims = [int(p) for p in parts]
            except ValueError:
                raise ValueError(f"bad size {s!r}: use N, MxNxK, squares, odd or all") from None
            if len(dims) == 1:
                dims *= 3
            if len(dims) != 3:
                raise ValueError(f"bad size {s!r}: use N or MxNxK")
            out.append(tuple(dims))
    for d in out:
        if min(d) < 1:
            raise ValueError(f"sizes must be >= 1, got {d}")
    seen, uniq = set(), []
    for d in out:
        if d not in seen:
            seen.add(d)
            uniq.append(d)
    return uniq


def parse_layouts(spec) -> tuple[str, ...]:
    if spec is None:
        return ("nn",)
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    items = [x.strip().lower() for x in items if x.strip()]
    if items == ["all"]:
        return LAYOUTS
    for x in items:
        if x not in LAYOUTS:
            raise ValueError(f"layout {x!r}: use {', '.join(LAYOUTS)} or all")
    return tuple(dict.fromkeys(items))


def native_layout(kernel: registry.Kernel, m: int, n: int, k: int, layout: str) -> bool:
    """True when run() can hand operands in `layout` to the kernel without a relayout copy
    (pure CPU: asks api._choose with descriptors of freshly allocated buffers)."""
    from .api import _choose
    from .arrays import Operand

    def op(name, rows, cols, t):
        strides = (1, rows) if t else (cols, 1)
        return Operand(name, None, True, 1 << 20, (rows, cols), strides, "float32")
    _, copies = _choose(kernel, {"a": op("a", m, k, layout[0] == "t"),
                                 "b": op("b", k, n, layout[1] == "t"),
                                 "c": op("c", m, n, False)})
    return not copies


# ---- cuBLAS through CuPy / PyTorch --------------------------------------------------------
def _import(name: str):
    """Lazy import (tests simulate a missing library by putting None in sys.modules)."""
    return importlib.import_module(name)


class _CuPyBLAS:
    library = "cupy"

    def __init__(self):
        # TF32 off: CuPy reads CUPY_TF32 at its first float32 matmul; cuBLAS itself honours
        # NVIDIA_TF32_OVERRIDE=0 (effective if cuBLAS was not initialised before us).
        os.environ["CUPY_TF32"] = "0"
        os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
        cp = _import("cupy")
        cp.cuda.runtime.getDeviceCount()
        self.cp = cp
        self.version = cp.__version__
        self.tf32 = "off: CUPY_TF32=0, NVIDIA_TF32_OVERRIDE=0"
        try:
            L = _import("cupy._core._routines_linalg")
            L.set_compute_type(np.float32, L.COMPUTE_TYPE_DEFAULT)  # CUBLAS_COMPUTE_32F
            self.tf32 += ", compute type CUBLAS_COMPUTE_32F (COMPUTE_TYPE_DEFAULT)"
        except Exception:
            pass
        try:
            self.cublas_version = str(cp.cuda.cublas.getVersion(cp.cuda.device.get_cublas_handle()))
        except Exception:
            self.cublas_version = ""

    def wrap(self, dev_array):
        return self.cp.asarray(dev_array)      # zero-copy through __cuda_array_interface__

    def matmul(self, a, b, out):
        self.cp.matmul(a, b, out=out)


class _TorchBLAS:
    library = "torch"

    def __init__(self):
        os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
        torch = _import("torch")
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        mm = torch.backends.cuda.matmul
        if hasattr(mm, "fp32_precision"):     # torch >= 2.9: the new precision API
            mm.fp32_precision = "ieee"
            self.tf32 = "off: torch.backends.cuda.matmul.fp32_precision='ieee', NVIDIA_TF32_OVERRIDE=0"
        else:
            mm.allow_tf32 = False
            self.tf32 = "off: torch.backends.cuda.matmul.allow_tf32=False, NVIDIA_TF32_OVERRIDE=0"
        self.torch = torch
        self.version = torch.__version__
        self.cublas_version = ""

    def wrap(self, dev_array):
        return self.torch.as_tensor(dev_array, device="cuda")

    def matmul(self, a, b, out):
        self.torch.matmul(a, b, out=out)


_BACKENDS = {"cupy": _CuPyBLAS, "torch": _TorchBLAS}


def find_cublas(prefer: str = "auto"):
    """(backend or None, description). The description says which library and how TF32
    was switched off, or plainly why cuBLAS is not measured."""
    if prefer in (None, "none", "off"):
        return None, "cuBLAS NOT MEASURED: disabled (--cublas none)"
    order = list(_BACKENDS) if prefer == "auto" else [prefer]
    why = []
    for name in order:
        cls = _BACKENDS.get(name)
        if cls is None:
            raise ValueError(f"unknown cuBLAS route {name!r}: use auto, {', '.join(_BACKENDS)} or none")
        try:
            b = cls()
        except Exception as e:  # ImportError, or a library present but unusable
            why.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": "))
            continue
        return b, f"cuBLAS fp32 via {b.library} {b.version} (TF32 {b.tf32})"
    hint = "pip install cupy-cuda13x (or torch) to compare" if prefer == "auto" else ""
    if prefer == "auto":
        try:
            _import("nvmath")
            hint += "; nvmath-python is installed but needs CuPy or PyTorch arrays on the device"
        except Exception:
            pass
    return None, f"cuBLAS NOT MEASURED: {'; '.join(why)}" + (f" ({hint})" if hint else "")


# ---- versions and device ----------------------------------------------------------------
def _dist_version(dist: str) -> str | None:
    try:
        import importlib.metadata as md
        return md.version(dist)
    except Exception:
        return None


def versions(backend=None) -> dict:
    from . import __version__
    v = {"cute_gemm": __version__, "python": sys.version.split()[0], "numpy": np.__version__,
         "cuda-bindings": _dist_version("cuda-bindings"), "cuda-core": _dist_version("cuda-core"),
         "nvidia-cutlass": _dist_version("nvidia-cutlass"),
         "nvidia-cuda-nvrtc": _dist_version("nvidia-cuda-nvrtc")}
    try:
        from .compile import nvrtc_version
        v["nvrtc"] = ".".join(map(str, nvrtc_version()))
    except Exception:
        v["nvrtc"] = None
    if backend is not None:
        v[backend.library] = backend.version
        if backend.cublas_version:
            v["cublas"] = backend.cublas_version
    return v


def driver_text(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def device_meta(info) -> dict:
    peak = peak_tflops(info.sm_count, info.fp32_lanes_per_sm, info.clock_khz)
    return {"name": info.name, "arch": info.arch, "ordinal": info.ordinal, "sm_count": info.sm_count,
            "fp32_lanes_per_sm": info.fp32_lanes_per_sm, "clock_khz": info.clock_khz,
            "l2_bytes": info.l2_bytes, "fp32_peak_tflops": peak,
            "peak_formula": peak_formula(info.sm_count, info.fp32_lanes_per_sm, info.clock_khz)}


# ---- checking on the bench inputs -------------------------------------------------------
class Reference:
    """float64 reference for C = A @ B: whole (M*N*K <= full_max) or a rows x cols sample."""

    def __init__(self, a: np.ndarray, b: np.ndarray, rng, *, full_max: int | None = None,
                 sample: int = SAMPLE):
        from .check import reference
        m, k = a.shape
        n = b.shape[1]
        if full_max is None:
            full_max = FULL_CHECK_MAX
        if m * n * k <= full_max:
            self.rows = self.cols = None
            self.ref, self.gauge = reference(a, b, None, 1.0, 0.0)
            self.mode = "full"
        else:
            self.rows = sample_indices(m, sample, rng)
            self.cols = sample_indices(n, sample, rng)
            self.ref, self.gauge = reference(a[self.rows], b[:, self.cols], None, 1.0, 0.0)
            self.mode = f"sampled {len(self.rows)}x{len(self.cols)}"

    def judge(self, name: str, c: np.ndarray):
        from .check import judge
        if self.rows is None:
            return judge(name, c, self.ref, self.gauge, exact=False)
        r = judge(name, c[np.ix_(self.rows, self.cols)], self.ref, self.gauge, exact=False)
        if r.first_fail is not None:
            i, j = r.first_fail
            r.first_fail = (int(self.rows[i]), int(self.cols[j]))
        elif r.status == "pass":
            bad = int(c.size - np.count_nonzero(np.isfinite(c)))
            if bad:
                r.status = "FAIL"
                r.message = f"{bad} non-finite elements outside the checked sample (unwritten?)"
        return r


def measure_row(row: Row, check_fn, time_fn) -> Row:
    """Check first; only a passing kernel is timed. check_fn() -> check.KernelResult,
    time_fn() -> list of per-launch milliseconds. Exceptions become status 'error'."""
    try:
        verdict = check_fn()
    except Exception as e:
        row.status, row.message = "error", _first_line(e)
        return row
    row.gauge_ratio = _finite_or_none(verdict.gauge_ratio)
    if verdict.status != "pass":
        row.status = "FAIL"
        row.message = verdict.message or "check failed"
        if verdict.first_fail is not None:
            row.message = f"at {tuple(verdict.first_fail)}: {row.message}"
        return row
    try:
        times = time_fn()
    except Exception as e:
        row.status, row.message = "error", "timing: " + _first_line(e)
        return row
    s = summarize(times)
    row.repeats = s["n"]
    row.median_ms, row.min_ms, row.max_ms = s["median"], s["min"], s["max"]
    row.q1_ms, row.q3_ms, row.iqr_ms = s["q1"], s["q3"], s["iqr"]
    row.tflops = tflops(row.m, row.n, row.k, row.median_ms)
    return row


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def _finite_or_none(x):
    """JSON has no inf/NaN: a non-finite gauge ratio (NaN or Inf in the output) is None,
    and the row's status and message say what happened."""
    return float(x) if x is not None and math.isfinite(x) else None


# ---- the GPU part -------------------------------------------------------------------------
class _Inputs:
    """n_sets copies of A, B (in `layout`) and C on the device; set 0 is the checked one."""

    def __init__(self, a: np.ndarray, b: np.ndarray, layout: str, n_sets: int):
        from . import launch
        from .arrays import DeviceArray
        self.A, self.B, self.C, self._owned = [], [], [], []
        m, n = a.shape[0], b.shape[1]
        try:
            a0 = self._upload(a, layout[0] == "t")
            b0 = self._upload(b, layout[1] == "t")
            for i in range(n_sets):
                if i == 0:
                    ai, bi = a0, b0
                else:   # same values at new addresses: a dtod copy, no host traffic
                    ai, bi = self._clone(a0), self._clone(b0)
                    launch.memcpy_dtod(ai._buf.ptr, a0._buf.ptr, a0._buf.nbytes)
                    launch.memcpy_dtod(bi._buf.ptr, b0._buf.ptr, b0._buf.nbytes)
                c = DeviceArray((m, n))
                self._owned.append(c)
                self.A.append(ai)
                self.B.append(bi)
                self.C.append(c)
            launch.synchronize()
        except BaseException:
            self.close()
            raise

    def _upload(self, host: np.ndarray, transposed: bool):
        from .arrays import DeviceArray
        if transposed:   # storage is host.T row-major; pass its transposed view
            d = DeviceArray.from_host(np.ascontiguousarray(host.T))
            self._owned.append(d)
            return d.T
        d = DeviceArray.from_host(np.ascontiguousarray(host))
        self._owned.append(d)
        return d

    def _clone(self, view):
        from .arrays import DeviceArray
        transposed = view.strides[0] == 1 and view.shape[0] > 1 and view.strides[1] != 1
        base = DeviceArray(view.shape[::-1] if transposed else view.shape)
        self._owned.append(base)
        return base.T if transposed else base

    def __len__(self):
        return len(self.A)

    def close(self) -> None:
        for d in self._owned:
            try:
                d.close()
            except Exception:
                pass
        self._owned = []


def _gpu_check(name, fn, inputs: _Inputs, ref: Reference):
    """Poison C0 with NaN, run once on set 0, judge on the host."""
    from . import launch
    c0 = inputs.C[0]
    launch.memset_f32(c0.ptr, 0x7FC00000, c0.size)
    fn(0)
    launch.check_last(name)
    return ref.judge(name, c0.to_host())


def _gpu_time(fn, n_sets: int, flush, *, repeats: int, warmup: int, min_repeats: int,
              max_seconds: float) -> list[float]:
    """Per-launch milliseconds from CUDA events recorded right before and after each launch."""
    from . import launch
    e0, e1 = launch.Event(), launch.Event()
    flush()
    e0.record()
    fn(0)
    e1.record()
    est = max(e1.elapsed_ms(e0), 1e-3)           # sizes warm-up and repeats to the budget
    budget = max_seconds * 1e3
    for i in range(min(warmup, max(1, int(0.2 * budget / est)))):
        fn((i + 1) % n_sets)
    n = max(min_repeats, min(repeats, int(budget / est)))
    events = [(launch.Event(), launch.Event()) for _ in range(n)]
    for j, (s, e) in enumerate(events):
        flush()
        s.record()
        fn(j % n_sets)
        e.record()
    return [e.elapsed_ms(s) for s, e in events]


class _Flush:
    """cuMemsetD32 over a scratch buffer twice the L2: evicts A/B/C of the previous launch
    and keeps the GPU busy (~tens of µs) while Python enqueues the timed launch."""

    def __init__(self, l2_bytes: int):
        from . import launch
        self.nbytes = int(min(max(2 * l2_bytes, 8 << 20), 512 << 20))
        self.buf = launch.DeviceBuffer(self.nbytes)

    def __call__(self):
        from . import launch
        launch.memset_f32(self.buf.ptr, 0, self.nbytes // 4)

    def close(self):
        self.buf.close()


class Progress:
    """A one-line progress bar on stderr (a line per step when stderr is not a terminal)."""

    def __init__(self, total: int, enabled: bool = True, stream=None, width: int = 24):
        self.total, self.done, self.width = max(total, 1), 0, width
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.perf_counter()

    def step(self, label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        frac = self.done / self.total
        bar = "#" * int(round(frac * self.width))
        line = (f"[{bar:<{self.width}}] {self.done}/{self.total} {100 * frac:3.0f}% "
                f"{time.perf_counter() - self.t0:6.1f}s  {label}")
        if self.tty:
            self.stream.write("\r\033[K" + line)
            if self.done >= self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def bench(kernels: str | Sequence[str] | None = None,
          sizes: int | str | Sequence[int | str | tuple[int, int, int]] | None = None, *,
          layouts: str | Sequence[str] = ("nn",), repeats: int = 30, warmup: int = 3,
          min_repeats: int = 5, max_seconds: float = 2.0, cublas: str = "auto",
          overhead: bool = False, overhead_kernel: str | None = None, seed: int = 0,
          out_dir: str | os.PathLike | None = None, plots: bool = True,
          ladder_size: int | None = None, progress: bool = True) -> BenchResult:
    """Check, then time, every kernel (default: all the device supports) on every size
    (default: squares 256..8192 and odd shapes) and layout, next to cuBLAS fp32.

    sizes: N, "MxNxK", (M, N, K), "squares", "odd", "all". layouts: "nn", "tn" (A as a
    transposed view), "nt", "tt" — a kernel is timed on a transposed layout only when it
    takes it without a relayout copy. Writes bench.json, bench.csv, bench_readme.md and
    PNG plots to out_dir when given. Returns a BenchResult.
    """
    from . import cache, launch
    from .api import run

    info = launch.device_info()
    ordinal = info.ordinal
    launch._ensure_context(ordinal)
    names = _kernel_names(kernels)
    shapes = parse_sizes(sizes)
    lays = parse_layouts(layouts)
    backend, cublas_note = find_cublas(cublas)
    dev = device_meta(info)
    peak = dev["fp32_peak_tflops"]
    meta = {
        "tool": "cute-gemm bench",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "device": dev, "driver": driver_text(info.driver_version), "versions": versions(backend),
        "cublas": {"available": backend is not None, "note": cublas_note,
                   "library": backend.library if backend else None},
        "settings": {"repeats": repeats, "min_repeats": min_repeats, "warmup": warmup,
                     "max_seconds": max_seconds, "layouts": list(lays), "seed": seed,
                     "sizes": [list(s) for s in shapes]},
        "method": {
            "check": f"gauge ratio <= 16 against float64: whole product up to M*N*K = "
                     f"{FULL_CHECK_MAX} (2048^3), above that {SAMPLE} random rows x {SAMPLE} "
                     "random columns (+ first and last) and every element finite",
            "timing": "CUDA events around each launch; L2-sized memset before each launch; "
                      "input sets rotated to exceed 2x L2; median, min/max, IQR over repeats",
            "tflops": "2*M*N*K / median time",
        },
        "compile": {},
    }
    result = BenchResult(meta)

    # compile everything first: compile time is reported, never timed as run time
    compiled: dict[str, tuple[float | None, str, str]] = {}
    for name in names:
        k = registry.get(name)
        if k.min_arch > info.arch_int:
            compiled[name] = (None, "", f"needs sm_{k.min_arch}, device is {info.arch}")
            continue
        try:
            c = cache.get(k, info.arch)
            compiled[name] = (c.compile_seconds, c.origin, "")
        except Exception as e:
            compiled[name] = (None, "", "compile: " + _first_line(e))
        cs, origin, err = compiled[name]
        meta["compile"][name] = {"nvrtc_seconds": cs, "origin": origin, "error": err or None}

    bar = Progress(len(shapes) * len(lays) * (len(names) + (backend is not None)), progress)
    rng = np.random.default_rng(seed)
    flush = _Flush(info.l2_bytes)
    meta["settings"]["flush_bytes"] = flush.nbytes
    meta["settings"]["rotation"] = {}
    try:
        for (m, n, kk) in shapes:
            a = rng.standard_normal((m, kk), dtype=np.float32)
            b = rng.standard_normal((kk, n), dtype=np.float32)
            ref = Reference(a, b, rng)
            per_set = 4 * (m * kk + kk * n + m * n)
            free = launch.mem_get_info(ordinal)[0]
            n_sets = rotation_sets(per_set, info.l2_bytes, free)
            meta["settings"]["rotation"][f"{m}x{n}x{kk}"] = n_sets
            for lay in lays:
                _bench_shape(result, names, compiled, backend, run, a, b, ref, lay, n_sets, flush,
                             bar, dict(repeats=repeats, warmup=warmup, min_repeats=min_repeats,
                                       max_seconds=max_seconds), info)
            del a, b, ref
    finally:
        flush.close()
    fill_ratios(result.rows, peak)
    if overhead:
        try:
            result.overhead = measure_overhead(overhead_kernel or (names[0] if names else None),
                                               backend=backend)
        except Exception as e:
            result.overhead = {"error": _first_line(e)}
    if out_dir is not None:
        write_outputs(result, out_dir, plots=plots, ladder_size=ladder_size)
    return result


def _kernel_names(kernels) -> list[str]:
    if kernels is None or kernels == [] or kernels == ():
        return list(registry.names())
    if isinstance(kernels, str):
        kernels = [kernels]
    return [registry.get(x).name for x in kernels]


def _bench_shape(result, names, compiled, backend, run, a, b, ref, lay, n_sets, flush, bar,
                 tkw, info) -> None:
    m, kk = a.shape
    n = b.shape[1]
    label = f"{m}x{n}x{kk} {lay}"
    try:
        inputs = _Inputs(a, b, lay, n_sets)
    except Exception as e:   # out of memory, typically: every row of this shape says so
        msg = "inputs: " + _first_line(e)
        for name in ([CUBLAS] if backend else []) + names:
            fam = "reference" if name == CUBLAS else registry.get(name).family
            result.rows.append(Row(name, fam, m, n, kk, lay, "error", ref.mode, message=msg))
            bar.step(f"{name} {label}")
        return
    try:
        if backend is not None:
            row = Row(CUBLAS, "reference", m, n, kk, lay, check=ref.mode,
                      message=f"{backend.library} {backend.version}")
            try:
                wa = [backend.wrap(x) for x in inputs.A]
                wb = [backend.wrap(x) for x in inputs.B]
                wc = [backend.wrap(x) for x in inputs.C]

                def fn(i, wa=wa, wb=wb, wc=wc):
                    backend.matmul(wa[i], wb[i], wc[i])
                measure_row(row, lambda: _gpu_check(CUBLAS, fn, inputs, ref),
                            lambda: _gpu_time(fn, len(inputs), flush, **tkw))
            except Exception as e:
                row.status, row.message = "error", _first_line(e)
            result.rows.append(row)
            bar.step(f"{CUBLAS} {label}")
        for name in names:
            k = registry.get(name)
            cs, origin, err = compiled[name]
            row = Row(name, k.family, m, n, kk, lay, check=ref.mode, compile_s=cs,
                      compile_origin=origin)
            if err:
                row.status = "skip" if err.startswith("needs") else "error"
                row.message = err
            elif lay != "nn" and not native_layout(k, m, n, kk, lay):
                row.status = "skip"
                row.message = f"no variant takes layout {lay} as is (run() would copy)"
            elif k.smem_bytes(m, n, kk) > info.smem_optin:
                row.status = "skip"
                row.message = f"needs {k.smem_bytes(m, n, kk)} B of shared memory > {info.smem_optin}"
            else:
                def fn(i, name=name):
                    run(name, inputs.A[i], inputs.B[i], out=inputs.C[i])
                measure_row(row, lambda: _gpu_check(name, fn, inputs, ref),
                            lambda: _gpu_time(fn, len(inputs), flush, **tkw))
            result.rows.append(row)
            bar.step(f"{name} {label}")
    finally:
        inputs.close()


# ---- host overhead per call -------------------------------------------------------------
def _per_call_us(fn, calls: int) -> float:
    from . import launch
    launch.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    launch.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def measure_overhead(kernel: str | None = None, *, size: int = 16, calls: int = 20000,
                     rounds: int = 5, backend=None) -> dict:
    """Host µs per call for a tiny GEMM on device arrays: cute_gemm.run() against a raw
    driver launch of the same cubin with pre-packed arguments, and against cuBLAS.
    Rounds interleave the three; each figure is the median over rounds of (wall time of
    `calls` back-to-back calls + one final synchronize) / calls."""
    from . import api, launch
    from .arrays import DeviceArray, parse
    name = registry.get(kernel or registry.names()[0]).name
    k = registry.get(name)
    owned = []
    try:
        dA = DeviceArray.full((size, size), 1.0)
        owned.append(dA)
        dB = DeviceArray.full((size, size), 1.0)
        owned.append(dB)
        dC = DeviceArray((size, size))
        owned.append(dC)
        api.run(name, dA, dB, out=dC)
        launch.check_last(name)
        A, B, C = parse("a", dA), parse("b", dB), parse("out", dC)
        ordinal = launch.current_ordinal()
        variant, copies = api._choose(k, {"a": A, "b": B, "c": C})
        f = api._plan(k, ordinal).function(variant.entry)
        grid, smem = k.grid(size, size, size), k.smem_bytes(size, size, size)
        packed = launch.pack_gemm_args(size, size, size, 1.0, A.ptr, A.strides[0], A.strides[1],
                                       B.ptr, B.strides[0], B.strides[1], 0.0,
                                       C.ptr, C.strides[0], C.strides[1])
        block = k.block
        methods = {
            "raw_launch": lambda: launch.launch(f, grid, block, smem, 0, packed),
            "run": lambda: api.run(name, dA, dB, out=dC),
        }
        if backend is not None:
            wa, wb, wc = backend.wrap(dA), backend.wrap(dB), backend.wrap(dC)
            methods["cublas"] = lambda: backend.matmul(wa, wb, wc)
        for fn in methods.values():       # warm-up (cuBLAS handle, heuristics)
            _per_call_us(fn, 200)
        samples = {key: [] for key in methods}
        for _ in range(rounds):
            for key, fn in methods.items():
                samples[key].append(_per_call_us(fn, calls))
        launch.check_last(name)
        out = {"kernel": name, "shape": [size, size, size], "calls": calls, "rounds": rounds,
               "entry": variant.entry, "relayout_copies": list(copies)}
        for key, v in samples.items():
            out[f"{key}_us"] = float(np.median(v))
            out[f"{key}_us_min"] = float(np.min(v))
        out["cublas_library"] = backend.library if backend is not None else None
        out["run_minus_raw_us"] = out["run_us"] - out["raw_launch_us"]
        out["target_us"] = OVERHEAD_TARGET_US
        out["meets_target"] = out["run_minus_raw_us"] <= OVERHEAD_TARGET_US
        return out
    finally:
        launch.synchronize()
        for d in owned:
            d.close()


# ---- output: table, CSV, JSON, README ---------------------------------------------------------
def _f(x, fmt: str, empty: str = "-") -> str:
    return empty if x is None else format(x, fmt)


def format_header(result: BenchResult) -> str:
    md = result.meta
    dev = md.get("device", {})
    v = md.get("versions", {})
    lines = [f"cute-gemm bench — {dev.get('name', '?')} ({dev.get('arch', '?')}), driver "
             f"{md.get('driver', '?')}, {md.get('date', '?')}",
             f"versions: cute_gemm {v.get('cute_gemm')}, cuda-bindings {v.get('cuda-bindings')}, "
             f"NVRTC {v.get('nvrtc')}, nvidia-cutlass {v.get('nvidia-cutlass')}",
             dev.get("peak_formula", "FP32 peak: unknown"),
             md.get("cublas", {}).get("note", "cuBLAS: unknown")]
    meth = md.get("method", {})
    if meth:
        lines.append("check: " + meth.get("check", ""))
        lines.append("timing: " + meth.get("timing", ""))
    return "\n".join(lines)


def format_table(result: BenchResult) -> str:
    kw = max([len(r.kernel) for r in result.rows] + [6]) + 2
    hdr = (f"{'M x N x K':<18}{'lay':<4}{'kernel':<{kw}}{'status':<7}{'gauge':>7}  "
           f"{'median ms':>10}{'IQR ms':>9}{'min-max ms':>19}{'n':>4}{'TFLOP/s':>9}"
           f"{'vs cuBLAS':>10}{'% peak':>8}  note")
    lines = [format_header(result), "", hdr, "-" * len(hdr)]
    prev = None
    for r in result.rows:
        key = (r.shape, r.layout)
        if prev is not None and key != prev:
            lines.append("")
        prev = key
        shape = f"{r.m}x{r.n}x{r.k}"
        mm = f"{_f(r.min_ms, '.4g')}-{_f(r.max_ms, '.4g')}" if r.timed else "-"
        pct = None if r.frac_peak is None else 100 * r.frac_peak
        vs = None if r.vs_cublas is None else 100 * r.vs_cublas
        note = r.message if r.status != "pass" or r.kernel == CUBLAS else ""
        lines.append(f"{shape:<18}{r.layout:<4}{r.kernel:<{kw}}{r.status:<7}{_f(r.gauge_ratio, '7.3g'):>7}  "
                     f"{_f(r.median_ms, '.4f'):>10}{_f(r.iqr_ms, '.4f'):>9}{mm:>19}{r.repeats or '-':>4}"
                     f"{_f(r.tflops, '.2f'):>9}{(_f(vs, '.1f') + ' %') if vs is not None else '-':>10}"
                     f"{(_f(pct, '.1f') + ' %') if pct is not None else '-':>8}  {note}")
    comp = result.meta.get("compile", {})
    if comp:
        lines += ["", "compile (separate from run time; origin = where the cubin came from):"]
        for name, c in comp.items():
            cs = c.get("nvrtc_seconds")
            lines.append(f"  {name:<{kw}}{c.get('origin') or '-':<10}"
                         f"{'NVRTC ' + format(cs, '.2f') + ' s' if cs is not None else '-':<14}"
                         f"{c.get('error') or ''}")
    if result.overhead:
        lines += ["", format_overhead(result.overhead)]
    return "\n".join(lines)


def format_overhead(o: dict) -> str:
    if "error" in o:
        return f"host overhead: not measured ({o['error']})"
    m, n, k = o["shape"]
    w = 48
    lines = [f"host overhead per call, {m}x{n}x{k} GEMM on device arrays (µs/call, median of "
             f"{o['rounds']} rounds x {o['calls']} calls, incl. one final sync):",
             f"  {'raw driver launch (same cubin, pre-packed args)':<{w}}{o['raw_launch_us']:8.2f}",
             f"  {'cute_gemm.run(' + repr(o['kernel']) + ')':<{w}}{o['run_us']:8.2f}   "
             f"(+{o['run_minus_raw_us']:.2f} over raw; target <= {o['target_us']:g}: "
             f"{'met' if o['meets_target'] else 'MISSED'})"]
    if o.get("cublas_us") is not None:
        lines.append(f"  {'cuBLAS via ' + str(o.get('cublas_library')):<{w}}{o['cublas_us']:8.2f}")
    else:
        lines.append(f"  {'cuBLAS':<{w}}not measured (no CuPy/PyTorch)")
    return "\n".join(lines)


def _csv_value(v):
    return "" if v is None else v


def write_csv(result: BenchResult, path) -> Path:
    path = Path(path)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in result.rows:
            d = asdict(r)
            w.writerow([_csv_value(d[c]) for c in COLUMNS])
    return path


def read_csv(path) -> list[Row]:
    rows = []
    with open(path, newline="") as f:
        for d in csv.DictReader(f):
            kw = {}
            for c in COLUMNS:
                v = d.get(c, "")
                if c in _INT_FIELDS:
                    kw[c] = int(v) if v != "" else 0
                elif c in _FLOAT_FIELDS:
                    kw[c] = float(v) if v != "" else None
                else:
                    kw[c] = v
            rows.append(Row(**kw))
    return rows


def write_json(result: BenchResult, path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False, default=_json_default) + "\n")
    return path


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def load_json(path) -> BenchResult:
    d = json.loads(Path(path).read_text())
    if d.get("schema") != SCHEMA:
        raise ValueError(f"{path}: bench JSON schema {d.get('schema')!r}, expected {SCHEMA}")
    return BenchResult.from_dict(d)


def pick_ladder_size(result: BenchResult, prefer: int | None = None, layout: str = "nn") -> int | None:
    """The square size the ladder chart and README table show: `prefer` if benchmarked,
    else 4096, else the largest square with timed rows."""
    squares = sorted({r.m for r in result.rows if r.m == r.n == r.k and r.layout == layout
                      and r.timed})
    if not squares:
        return None
    for want in (prefer, 4096):
        if want in squares:
            return want
    return squares[-1]


def readme_markdown(result: BenchResult, *, size: int | None = None, layout: str = "nn",
                    plot: str | None = None, source: str = "bench.json") -> str:
    """The README's ladder table (markdown) for one square size, with date, device and
    versions — generated from a bench result, never typed."""
    size = pick_ladder_size(result, size, layout)
    md = result.meta
    dev = md.get("device", {})
    v = md.get("versions", {})
    date = str(md.get("date", "?"))[:10]
    out = ["<!-- generated by scripts/readme_bench.py from a `cute-gemm bench` JSON; do not edit by hand -->"]
    if size is None:
        out.append("_No timed square sizes in this bench result._")
        return "\n".join(out) + "\n"
    cub = result.cublas_row(size, size, size, layout)
    out.append(f"#### SGEMM ladder at {size}×{size}×{size} ({LAYOUT_TEXT.get(layout, layout)}) — "
               f"{dev.get('name', '?')}, {date}")
    out.append("")
    out.append("| kernel | family | TFLOP/s | vs cuBLAS fp32 | % of FP32 peak | median ms (IQR) | check |")
    out.append("|---|---|---:|---:|---:|---:|---|")
    for r in result.rows:
        if r.shape != (size, size, size) or r.layout != layout or r.kernel == CUBLAS:
            continue
        if r.timed:
            vs = f"{100 * r.vs_cublas:.1f} %" if r.vs_cublas is not None else "n/a"
            pk = f"{100 * r.frac_peak:.1f} %" if r.frac_peak is not None else "n/a"
            out.append(f"| `{r.kernel}` | {r.family} | {r.tflops:.2f} | {vs} | {pk} | "
                       f"{r.median_ms:.3f} ({r.iqr_ms:.3f}) | {r.status}, ratio {_f(r.gauge_ratio, '.2g')} |")
        else:
            out.append(f"| `{r.kernel}` | {r.family} | — | — | — | — | **{r.status}**: {r.message} |")
    if cub is not None and cub.timed:
        pk = f"{100 * cub.frac_peak:.1f} %" if cub.frac_peak is not None else "n/a"
        out.append(f"| cuBLAS fp32 ({cub.message}) | reference | {cub.tflops:.2f} | 100 % | {pk} | "
                   f"{cub.median_ms:.3f} ({cub.iqr_ms:.3f}) | {cub.status}, ratio {_f(cub.gauge_ratio, '.2g')} |")
    out.append("")
    out.extend(_all_shapes_markdown(result))
    if result.overhead and "error" not in result.overhead:
        out += ["```", format_overhead(result.overhead), "```", ""]
    note = md.get("cublas", {}).get("note")
    if not md.get("cublas", {}).get("available", False) and note:
        out.append(f"_{note}_")
        out.append("")
    if plot:
        out.append(f"![TFLOP/s per kernel at {size}³ on {dev.get('name', '?')}]({plot})")
        out.append("")
    out.append(f"{dev.get('peak_formula', '')}. Median of per-launch CUDA-event times, inputs rotated "
               f"beyond L2, each kernel checked against float64 first ({md.get('method', {}).get('check', '')}).")
    out.append("")
    out.append(f"Measured {md.get('date', '?')} on {dev.get('name', '?')} ({dev.get('arch', '?')}), driver "
               f"{md.get('driver', '?')}; cute_gemm {v.get('cute_gemm')}, cuda-bindings "
               f"{v.get('cuda-bindings')}, NVRTC {v.get('nvrtc')}, nvidia-cutlass {v.get('nvidia-cutlass')}"
               + (f", {md['cublas']['library']} {v.get(md['cublas']['library'])}"
                  if md.get("cublas", {}).get("library") else "")
               + f". Generated from {source if source.startswith('`') else '`' + source + '`'}.")
    return "\n".join(out) + "\n"


def _all_shapes_markdown(result: BenchResult) -> list[str]:
    """Every (shape, layout) of the run side by side: TFLOP/s and the ratio to cuBLAS
    measured on the same shape and layout. Empty when the run has a single column."""
    cols = []
    for r in result.rows:
        c = (r.shape, r.layout)
        if c not in cols:
            cols.append(c)
    if len(cols) < 2:
        return []
    names = []
    for r in result.rows:
        if r.kernel not in names:
            names.append(r.kernel)
    names = [n for n in names if n != CUBLAS] + [CUBLAS]
    cell = {(r.kernel, r.shape, r.layout): r for r in result.rows}
    head = ["kernel"] + [f"{'×'.join(map(str, sh))} {LAYOUT_TEXT.get(lay, lay)}" for sh, lay in cols]
    out = ["All shapes and layouts of this run (TFLOP/s, and × cuBLAS fp32 on the same shape and layout):",
           "", "| " + " | ".join(head) + " |", "|---" + "|---:" * len(cols) + "|"]
    for n in names:
        row = [f"`{n}`" if n != CUBLAS else "cuBLAS fp32"]
        for sh, lay in cols:
            r = cell.get((n, sh, lay))
            if r is None:
                row.append("")
            elif r.timed:
                ratio = f" ({r.vs_cublas:.2f}×)" if r.vs_cublas is not None and n != CUBLAS else ""
                row.append(f"{r.tflops:.1f}{ratio}")
            else:
                row.append(r.status)
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    return out


def write_outputs(result: BenchResult, out_dir, *, plots: bool = True,
                  ladder_size: int | None = None) -> dict:
    """bench.json, bench.csv, bench_readme.md and (matplotlib permitting) PNG plots."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    files = {"json": write_json(result, d / "bench.json"), "csv": write_csv(result, d / "bench.csv")}
    pngs = []
    if plots:
        from . import plots as P
        if P.available():
            pngs = P.write_all(result, d, ladder_size=ladder_size)
        else:
            files["plots_skipped"] = "matplotlib is not installed (pip install 'cute_gemm[plot]')"
    files["plots"] = pngs
    ladder_png = next((p for p in pngs if p.name.startswith("ladder")), None)
    md = readme_markdown(result, size=ladder_size, plot=ladder_png.name if ladder_png else None)
    files["readme"] = d / "bench_readme.md"
    files["readme"].write_text(md)
    return files


__all__ = ["bench", "BenchResult", "Row", "summarize", "tflops", "peak_tflops", "peak_formula",
           "fill_ratios", "rotation_sets", "parse_sizes", "parse_layouts", "find_cublas",
           "measure_overhead", "format_table", "write_csv", "read_csv", "write_json", "load_json",
           "readme_markdown", "write_outputs", "pick_ladder_size", "Reference", "measure_row", "native_layout"]
