"""`cute-gemm bench --size batched[:N]`: gemm() on N random batched products next to
torch.matmul, the peer with the same broadcasting, in the same run. Each problem draws a
batch B in [2, 1024] and M, N, K in [16, 4096] (log-uniform, 2·B·M·N·K at most 2^36) and one
pattern: both operands batched, A broadcast, B shared by the batch (gemm() folds it into one
problem), or A's batch strided (an (M, B, K) array seen as (B, M, K)). Every result is
checked against float64 (the gauge, the precision's unit roundoff) before it is timed; each
side is timed as one call on a flushed L2 (what a caller waits for, host time included) and
as 20 calls back to back. The seed is drawn at run time unless given, and printed."""
from __future__ import annotations

import contextlib
import math
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from functools import partial

from .. import api, driver
from ..check import THRESHOLD, unit
from ..driver import launch
from .clocks import ClockLog
from .schema import peer_record
from .shapes import count_of
from .timing import Flush, burst_times, call_times, warm_up

DEFAULT_COUNT = 24
BATCH, DIM, FLOP_MAX, BYTES_MAX = (2, 1024), (16, 4096), 2.0 ** 36, 2 << 30
PATTERNS = ("both", "a_broadcast", "b_shared", "a_strided")
PRECISIONS = {"fp32": ("float32", "float32"), "bf16": ("bfloat16", "bfloat16"),
              "fp16": ("float16", "float16"), "tf32": ("float32", "float32")}


@dataclass(frozen=True)
class Problem:
    batch: int
    m: int
    n: int
    k: int
    pattern: str

    @property
    def flop(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k


batched_count = partial(count_of, name="batched", default=DEFAULT_COUNT)   # "batched[:N]" -> N


def draw(count: int, seed: int) -> list[Problem]:
    """`count` problems from `seed` (random.Random: the same draw on every machine)."""
    rnd, out = random.Random(seed), []

    def log_uniform(lo, hi):
        return int(math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * rnd.random()))
    while len(out) < count:
        p = Problem(log_uniform(*BATCH), *(log_uniform(*DIM) for _ in range(3)),
                    PATTERNS[int(len(PATTERNS) * rnd.random())])
        if p.flop <= FLOP_MAX and 4 * p.batch * (p.m * p.k + p.k * p.n + p.m * p.n) <= BYTES_MAX:
            out.append(p)
    return out


def _operands(torch, p: Problem, dtype, gen):
    def rnd(*shape):
        return torch.randn(shape, generator=gen, device="cuda").to(dtype)
    if p.pattern == "a_broadcast":
        return rnd(1, p.m, p.k), rnd(p.batch, p.k, p.n)
    if p.pattern == "b_shared":
        return rnd(p.batch, p.m, p.k), rnd(p.k, p.n)
    if p.pattern == "a_strided":
        return rnd(p.m, p.batch, p.k).transpose(0, 1), rnd(p.batch, p.k, p.n)
    return rnd(p.batch, p.m, p.k), rnd(p.batch, p.k, p.n)


def _gauge_ratio(torch, got, a, b, precision: str, out_dtype: str) -> float:
    a64, b64 = a.double(), b.double()
    err = (got.double() - a64 @ b64).abs()
    gauge = a64.abs() @ b64.abs()
    r = torch.where(gauge > 0, err / (unit(precision, out_dtype) * gauge), err * math.inf)
    return float(r.nan_to_num(nan=math.inf).max())


def _geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def fresh_seed(seed: int | None) -> int:
    """`seed`, or one drawn from the system's entropy (printed with the results)."""
    return random.SystemRandom().randrange(2 ** 31) if seed is None else seed


@contextlib.contextmanager
def peer_session():
    """The set-up of a bench against PyTorch: device 0's context, gemm() waiting for its
    picks' compiles (a stand-in is never timed), the L2 flush warmed up, the clocks logged.
    Yields (device info, flush, window): window() is the clock log's summary since entry."""
    driver.ensure_context(0)
    info = launch.device_info(0)
    os.environ.setdefault("CUTE_GEMM_FIRST_CALL", "wait")
    with Flush(info.l2_bytes) as flush, ClockLog(launch.pci_bus_id(info.ordinal)) as clocks:
        warm_up(flush)
        t0 = time.monotonic()
        yield info, flush, lambda: clocks.summary([(t0, time.monotonic())])


def run(count: int = DEFAULT_COUNT, seed: int | None = None, precisions=("fp32", "bf16"), *,
        repeats: int = 10, out_dir: str | None = None, log=print) -> dict:
    """Draw, check and time; the result as a dict (written to out_dir/batched.json)."""
    import torch         # the peer: torch.matmul (an optional dependency of the package)
    seed = fresh_seed(seed)
    problems = draw(count, seed)
    log(f"cute-gemm bench: {count} random batched problems, seed {seed} (--seed {seed} draws "
        f"them again); gemm() / torch.matmul {torch.__version__}, same run")
    rows, gen = [], torch.Generator(device="cuda").manual_seed(seed)
    with peer_session() as (info, flush, window):
        for p in problems:
            for prec in precisions:
                dt, odt = PRECISIONS[prec]
                tdt = getattr(torch, dt)
                a, b = _operands(torch, p, tdt, gen)
                shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (p.m, p.n)
                ours, theirs = torch.empty(shape, dtype=tdt, device="cuda"), \
                    torch.empty(shape, dtype=tdt, device="cuda")
                torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
                api.gemm(a, b, out=ours, precision=prec)
                ratio = _gauge_ratio(torch, ours, a, b, prec, odt)
                row = {**asdict(p), "precision": prec, "gauge_ratio": ratio,
                       "ok": ratio <= THRESHOLD}
                if row["ok"]:
                    def mine(_):
                        api.gemm(a, b, out=ours, precision=prec)

                    def peer(_):
                        torch.matmul(a, b, out=theirs)
                    for name, fn in (("ours", mine), ("torch", peer)):
                        fn(0)
                        row[f"{name}_call_ms"] = sorted(call_times(fn, 1, flush, repeats=repeats))[repeats // 2]
                        row[f"{name}_burst_ms"] = sorted(burst_times(fn, 1, flush, repeats=3))[1]
                    row["call"] = row["torch_call_ms"] / row["ours_call_ms"]
                    row["burst"] = row["torch_burst_ms"] / row["ours_burst_ms"]
                torch.backends.cuda.matmul.allow_tf32 = False
                rows.append(row)
                log(f"  {prec:5s} B={p.batch:5d} M={p.m:5d} N={p.n:5d} K={p.k:5d} {p.pattern:11s} "
                    + (f"call {row['call']:5.2f}x  burst {row['burst']:5.2f}x" if row["ok"]
                       else f"FAIL gauge ratio {ratio:.3g}"))
                del a, b, ours, theirs
        summary = {}
        summary = summarize(rows, precisions, ("call", "burst"))
        clocks = window()
    for prec, s in summary.items():
        log(f"{prec}: call {s['call']['geomean']:.3f}x geomean (min {s['call']['min']:.2f}), "
            f"burst {s['burst']['geomean']:.3f}x (min {s['burst']['min']:.2f}); "
            f"{s['failed']} failed")
    return peer_record("cute-gemm bench --size batched", seed, count, info, torch, clocks, __doc__,
                       rows, summary, out_dir, "batched.json")


def summarize(rows, precisions, ratios) -> dict:
    """Per precision, each of `ratios` (row keys: peer time / ours) over the rows that passed
    their check: geometric mean, minimum, share below 0.9; and how many failed it."""
    summary = {}
    for prec in precisions:
        done = [r for r in rows if r["precision"] == prec and r["ok"]]
        summary[prec] = {t: {"geomean": _geo([r[t] for r in done]),
                             "min": min((r[t] for r in done), default=float("nan")),
                             "below_0.9": sum(r[t] < 0.9 for r in done) / max(len(done), 1)}
                         for t in ratios}
        summary[prec]["failed"] = sum(1 for r in rows if r["precision"] == prec and not r["ok"])
    return summary


def main(count: int, seed: int | None, precisions, out_dir: str | None, run=run) -> int:
    """The command: `run` printing as it goes; 0 unless a result failed its check."""
    res = run(count, seed, precisions, out_dir=out_dir, log=lambda s: print(s, file=sys.stdout))
    return 0 if all(s["failed"] == 0 for s in res["summary"].values()) else 1
