"""What the benches against PyTorch (batched, linear, fp8) share: the session (seed, device,
flushed L2, clocks), checking then timing each side of a problem, the summary and the record."""
from __future__ import annotations

import contextlib
import json
import math
import os
import random
import sys
import time
from pathlib import Path

from .. import driver
from ..check import THRESHOLD, unit
from ..driver import launch
from .clocks import ClockLog
from .schema import utc_now
from .stats import ratio_stats
from .timing import Flush, burst_times, call_times, interruptible, warm_up


def log_uniform(rnd: random.Random, lo: float, hi: float) -> float:
    return math.exp(rnd.uniform(math.log(lo), math.log(hi)))


@contextlib.contextmanager
def case(rows: list, row: dict, log):
    """One problem, its `row` in `rows`: what it raises is the row's failure (recorded, logged)
    and the bench goes on; the command fails at the end (main: a row not ok)."""
    try:
        yield row
    except Exception as e:       # (a bug in one problem: the others are still measured)
        row.update(ok=False, error=f"{type(e).__name__}: {e}")
        row.setdefault("gauge_ratio", math.inf)
        if not any(r is row for r in rows):
            rows.append(row)
        log(f"  ERROR {' '.join(f'{k}={v}' for k, v in row.items() if k not in ('ok', 'error'))}: "
            f"{row['error']}")


class Session(contextlib.ExitStack):
    """One bench against PyTorch on device 0: a seed (drawn unless given), gemm() waiting for its
    picks' compiles, a warm L2 flush, clocks logged. `ratios`: row key suffix -> (side, side)."""

    def __init__(self, tool: str, count: int, seed: int | None, ratios: dict, repeats: int, log):
        super().__init__()
        import torch         # the peer (an optional dependency of the package)
        self.torch, self.tool, self.count, self.ratios = torch, tool, count, ratios
        self.seed = random.SystemRandom().randrange(2 ** 31) if seed is None else seed
        self.repeats, self.log, self.rows, self.interrupted = repeats, log, [], ""
        self.gen = torch.Generator(device="cuda").manual_seed(self.seed)

    def __enter__(self) -> "Session":
        driver.ensure_context(0)
        self.info = launch.device_info(0)
        os.environ.setdefault("CUTE_GEMM_FIRST_CALL", "wait")
        self.flush = self.enter_context(Flush(self.info.l2_bytes))
        clocks = self.enter_context(ClockLog(launch.pci_bus_id(self.info.ordinal)))
        warm_up(self.flush)
        self.enter_context(interruptible())
        self.callback(self.tf32, "fp32")
        t0 = time.monotonic()
        self.callback(lambda: setattr(self, "clocks", clocks.summary([(t0, time.monotonic())])))
        return self

    def __exit__(self, kind, value, tb):
        # Ctrl-C or SIGTERM: the rows measured are kept, summed up and written by finish()
        done = super().__exit__(kind, value, tb)
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            self.interrupted = f"after {len(self.rows)} rows"
            return True
        return done

    def start(self, what: str, versus: str) -> None:
        """Log the run's first line: what is drawn, from which seed, against what."""
        self.log(f"cute-gemm bench: {what}, seed {self.seed} (--seed {self.seed} draws them "
                 f"again); {versus}, same run")

    def tf32(self, precision: str) -> None:
        """PyTorch's float32 matmuls in TF32 for a tf32 problem only (off again on exit)."""
        self.torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"

    def randn(self, *shape, dtype=None):
        t = self.torch.randn(shape, generator=self.gen, device="cuda")
        return t if dtype is None else t.to(dtype)

    def worst(self, got, ref, gauge, precision: str, out_dtype: str) -> float:
        """The largest gauge ratio (check.gauge_ratio) of got against float64 ref, on the device."""
        err = (got.double() - ref).abs()
        inf = err.masked_fill(err != 0, math.inf)        # where the gauge is 0: 0 only if exact
        r = self.torch.where(gauge > 0, err / (unit(precision, out_dtype) * gauge), inf)
        return float(r.nan_to_num(nan=math.inf).max())

    def case(self, row: dict):
        return case(self.rows, row, self.log)

    def add(self, row: dict, ratio: float, sides: dict) -> dict:
        """Record `row` checked (its gauge ratio); if it passed, time each side (name -> fn) as one
        call on a flushed L2 and as a burst, and the ratios of their times."""
        row.update(gauge_ratio=ratio, ok=ratio <= THRESHOLD)
        if row["ok"]:
            for name, fn in sides.items():
                fn(0)
                calls = call_times(fn, 1, self.flush, repeats=self.repeats)
                row[f"{name}_call_ms"] = sorted(calls)[self.repeats // 2]
                row[f"{name}_burst_ms"] = sorted(burst_times(fn, 1, self.flush, repeats=3))[1]
            for suffix, (num, den) in self.ratios.items():
                for t in ("call", "burst"):
                    row[t + suffix] = row[f"{num}_{t}_ms"] / row[f"{den}_{t}_ms"]
        self.rows.append(row)
        return row

    def said(self, row: dict, label: str, passed) -> None:
        """Log a problem's line: `label`, then passed(row) or the gauge ratio it failed with."""
        self.log(f"  {label} " + (passed(row) if row["ok"] else f"FAIL gauge ratio {row['gauge_ratio']:.3g}"))

    def summary(self, precisions) -> dict:
        """Per precision, each ratio over the rows that passed their check: geometric mean,
        minimum, share below 0.9 (NaN where none passed); and how many failed it."""
        out = {}
        for prec in precisions:
            done = [r for r in self.rows if r["precision"] == prec and r["ok"]]
            out[prec] = {}
            for key in (t + s for s in self.ratios for t in ("call", "burst")):
                s = ratio_stats(r[key] for r in done)
                out[prec][key] = {"geomean": s["geomean"] or math.nan, "min": s["min"] or math.nan,
                                  "below_0.9": s["below_0_9"] or 0.0}
            out[prec]["failed"] = sum(r["precision"] == prec and not r["ok"] for r in self.rows)
        return out

    def finish(self, precisions, line, doc: str, out_dir: str | None, name: str, **extra) -> dict:
        """The summary (`extra` added to each precision's), logged a line per precision (line(its
        summary)); the record of what ran, where, with which clocks, written to out_dir/name."""
        summary = self.summary(precisions)
        for prec, x in summary.items():
            x.update(extra)
            self.log(f"{prec}: {line(x)}")
        res = {"tool": self.tool, "seed": self.seed, "count": self.count, "date": utc_now(),
               "device": self.info.name, "torch": self.torch.__version__, "clocks": self.clocks,
               "method": doc.split("\n\n")[0].replace("\n", " "), "rows": self.rows,
               "summary": summary}
        if self.interrupted:
            res["interrupted"] = self.interrupted
            self.log(f"interrupted {self.interrupted}: the rows so far")
        if out_dir:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            (Path(out_dir) / name).write_text(json.dumps(res, indent=1, default=str))
        return res


def main(run, count: int, seed: int | None, precisions, out_dir: str | None) -> int:
    """The command: `run` printing as it goes; 0 unless a result failed its check."""
    res = run(count, seed, precisions, out_dir=out_dir, log=lambda s: print(s, file=sys.stdout))
    if "interrupted" in res:
        return 130
    return 0 if all(s["failed"] == 0 for s in res["summary"].values()) else 1
