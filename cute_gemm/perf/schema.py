"""What a bench run produces: Row (one kernel on one shape, layout and precision), BenchResult
(rows, meta, overhead, first call) and their JSON and CSV. The JSON is the record
(docs/bench/*.json): changing a field's meaning means raising SCHEMA."""
from __future__ import annotations

import csv
import datetime
import json
from dataclasses import asdict, astuple, dataclass, field, fields
from pathlib import Path

import numpy as np

from ..base.precisions import PRECISION

SCHEMA = 1
CUBLAS = "cuBLAS"               # the kernel name of the cuBLAS rows
# the cuBLAS GEMM a precision's rows are compared with (the precision table's `peer`): its
# own, but cuBLAS fp32 (SGEMM, TF32 off) for fp32_3xtf32, an fp32 answer by other means
CUBLAS_PEER = {name: p.peer for name, p in PRECISION.items()}
BURST = 20      # calls per timing.burst_times sample: its start and end weigh 1/20 of it
# the timings a random run compares with cuBLAS: name -> (Row field, what it is)
TIMINGS = {"kernel": ("median_ms", "one launch, L2 flushed, the GPU held while the host "
                                   "enqueues it: GPU time alone"),
           "call": ("call_ms", "one call on an idle GPU, L2 flushed: what a caller waits "
                               "for, host time included"),
           "burst": ("burst_ms", f"per call of {BURST} queued back to back: a loop's "
                                 "throughput")}
LAYOUTS = ("nn", "tn", "nt", "tt")
LAYOUT_TEXT = {"nn": "A, B row-major", "tn": "A transposed view (CuTe NT: A M-major, B N-major)",
               "nt": "B transposed view (CuTe TN: A, B K-major)",
               "tt": "A, B transposed views (A M-major, B K-major)"}
FIRST_CALL_MODES = ("quick", "wait", "warm")    # perf.first_call's cases, in order


def cublas_label(precision: str) -> str:       # "cuBLAS bf16", "cuBLAS fp32 (peer of fp32_3xtf32)"
    peer = CUBLAS_PEER.get(precision, precision)
    return f"{CUBLAS} {peer}" + ("" if peer == precision else f" (peer of {precision})")


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def first_line(e: BaseException) -> str:
    """An exception as a row's message or a record's error: its type and first line."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


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
    frac_peak: float | None = None   # this TFLOP/s / the dense peak of its precision
    message: str = ""
    precision: str = "fp32"          # records.PRECISIONS; the result is float32 for fp32
                                     # and tf32, the input type for bf16 and fp16
    clock_mhz: float | None = None   # median SM clock while this row was checked and timed
    power_w: float | None = None     # ... and median power draw (perf/clocks.py; NVML)
    call_ms: float | None = None     # median of timing.call_times (random runs): host included
    burst_ms: float | None = None    # median per call of timing.burst_times (random runs)
    first_ms: float | None = None    # the check's call, the problem's first (gemm(): its tuning
                                     # on first use in it), host time until the GPU is done

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)

    @property
    def timed(self) -> bool:
        return self.status == "pass" and self.median_ms is not None


COLUMNS = tuple(f.name for f in fields(Row))


@dataclass
class BenchResult:
    meta: dict
    rows: list[Row] = field(default_factory=list)
    overhead: dict | None = None
    first_call: dict | None = None       # perf.first_call.measure_first_call's

    @property
    def ok(self) -> bool:       # no kernel failed its check or errored (skips are fine)
        return all(r.status in ("pass", "skip") for r in self.rows)

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "meta": self.meta, "rows": [asdict(r) for r in self.rows],
                "overhead": self.overhead, "first_call": self.first_call}

    @classmethod
    def from_dict(cls, d: dict) -> "BenchResult":
        rows = [Row(**{k: v for k, v in r.items() if k in COLUMNS}) for r in d.get("rows", [])]
        return cls(dict(d.get("meta", {})), rows, d.get("overhead"), d.get("first_call"))

    def random_rows(self) -> list[Row]:
        """The rows of a random run's drawn (shape, layout)s, whatever fixed sizes ran beside."""
        drawn = {tuple(s) for s in self.meta.get("random", {}).get("shapes", [])}
        return [r for r in self.rows if (r.m, r.n, r.k, r.layout) in drawn]

    def cublas_row(self, m, n, k, layout, precision: str = "fp32") -> Row | None:
        return next((r for r in self.rows if r.kernel == CUBLAS and r.shape == (m, n, k)
                     and (r.layout, r.precision) == (layout, precision)), None)


def pick_ladder_size(result: BenchResult, prefer: int | None = None, layout: str = "nn") -> int | None:
    """The square size the ladder chart and README table show: `prefer` if benchmarked,
    else 4096, else the largest square with timed fp32 rows."""
    squares = sorted({r.m for r in result.rows if r.m == r.n == r.k and r.layout == layout
                      and r.timed and r.precision == "fp32"})
    return next((s for s in (prefer, 4096) if s in squares), squares[-1] if squares else None)


def write_csv(result: BenchResult, path) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(["" if v is None else v for v in astuple(r)] for r in result.rows)
    return Path(path)


def _plain(o):
    if isinstance(o, np.generic):       # numpy scalars from the statistics
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def write_json(result: BenchResult, path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False, default=_plain) + "\n")
    return path


def load_json(path) -> BenchResult:
    d = json.loads(Path(path).read_text())
    if d.get("schema") != SCHEMA:
        raise ValueError(f"{path}: bench JSON schema {d.get('schema')!r}, expected {SCHEMA}")
    return BenchResult.from_dict(d)
