"""`cute-gemm tune`: check, then time, gemm()'s candidates per problem on this GPU within
--max-seconds, writing the table its selector reads after every problem (merged into this GPU
and version's table, so a run cut short keeps what it measured). docs/design/auto.md."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .. import api, driver, registry
from ..driver import launch
from ..select import auto, autotable
from ..select.autotable import Measured, Table
from ..select.choice import split_key
from ..base.errors import CuteGemmError
from ..base.precisions import PRECISION
from .runner import Inputs, compile_all, gpu_check, operands, parse_precisions
from .schema import first_line, utc_now
from .shapes import parse_layouts, parse_sizes
from .timing import Flush, event_times, warm_up

MAX_TIMING_S = 0.25     # GPU time to time one candidate on one problem, at most
SHARE = 0.5             # of the time left per candidate still to time: the rest is checks,
                        # inputs and host work
REPEATS, WARMUP, MIN_REPEATS = 20, 2, 3
CHECK_FULL_MAX = 512 ** 3   # above this M*N*K the check is a row x column sample


@dataclass(frozen=True)
class Problem:
    m: int
    n: int
    k: int
    layout: str
    precision: str
    candidates: tuple[str, ...]      # autotable keys: kernel [+ ".T"] [+ "/splitkS" | "/splitrS"]

    @property
    def label(self) -> str:
        return f"{self.m}x{self.n}x{self.k} {self.layout} {self.precision}"

    @property
    def aligned(self) -> bool:
        return auto.contiguous_aligned(self.m, self.n, self.k, self.layout, self.precision,
                                       PRECISION[self.precision].timed_out)


def plan(shapes, layouts, precisions, arch_int: int, smem_optin: int,
         sm_count: int = 0) -> list[Problem]:
    """The problems to measure, each with its candidates on such a device (auto.keys; sm_count 0:
    no split_k ones); precisions without a candidate there are left out."""
    out = []
    for prec in precisions:
        for (m, n, k) in shapes:
            keys = auto.keys(m, n, k, prec, PRECISION[prec].timed_out, arch_int, smem_optin,
                             sm_count)
            if keys:
                out += [Problem(m, n, k, lay, prec, keys) for lay in layouts]
    return out


# measure(problem, seconds per candidate) -> ({key: median ms or None}, {key: note}); a
# candidate in neither (a split_k one this GPU does not split) is left out of the row
Measure = Callable[[Problem, float], tuple[dict, dict]]


def run_plan(problems: list[Problem], measure: Measure, table: Table, *, budget_s: float,
             clock: Callable[[], float] = time.monotonic, t0: float | None = None,
             on_row: Callable[[int, Problem, Measured, float], None] | None = None) -> list[Problem]:
    """Measure `problems` in order into `table` (a row per problem, replacing a row of the
    same problem) within `budget_s` seconds of `clock` from `t0` (default: now). on_row is
    called after each. Returns the problems left unmeasured when the budget ran out."""
    t0 = clock() if t0 is None else t0
    for i, p in enumerate(problems):
        left = budget_s - (clock() - t0)
        if left <= 0:
            return problems[i:]
        per = min(MAX_TIMING_S, SHARE * left / sum(len(q.candidates) for q in problems[i:]))
        times, notes = measure(p, per)
        row = Measured(p.m, p.n, p.k, p.layout, p.aligned, p.precision,
                       {c: times.get(c) for c in p.candidates if c in times or c in notes},
                       {c: notes[c] for c in p.candidates if notes.get(c)})
        table.put(row)
        if on_row is not None:
            on_row(i, p, row, clock() - t0)
    return []


# ---- on the GPU ------------------------------------------------------------------------------
def gpu_measure(info, flush: Flush, seed: int = 0) -> Measure:
    """measure() on the current device: each candidate checked, then timed as gemm() runs it."""
    rng = np.random.default_rng(seed)

    def measure(p: Problem, seconds: float) -> tuple[dict, dict]:
        a, b = (rng.standard_normal(s, dtype=np.float32) for s in ((p.m, p.k), (p.k, p.n)))
        a, b, ref, n_sets = operands(a, b, p.precision, rng, info, CHECK_FULL_MAX)
        times, notes = {}, {}
        try:
            inputs = Inputs(a, b, p.layout, n_sets, p.precision)
        except Exception as e:          # out of memory, typically
            return times, {c: "inputs: " + first_line(e) for c in p.candidates}
        with inputs:
            for key in p.candidates:
                choice = auto.Choice.of_key(key)

                def fn(i, choice=choice):
                    api.run_choice(choice, inputs.A[i], inputs.B[i], out=inputs.C[i],
                                   precision=p.precision)
                try:
                    before = set(api.resolved_launches()) if choice.split_k else set()
                    verdict = gpu_check(key, fn, inputs, ref)
                    if verdict.status != "pass":
                        notes[key] = f"{verdict.status}: {verdict.message}"
                    elif not choice.split_k or _split(choice, p, before):   # else not a candidate here
                        times[key] = float(np.median(event_times(
                            fn, len(inputs), flush, repeats=REPEATS, warmup=WARMUP,
                            min_repeats=MIN_REPEATS, max_seconds=seconds)))
                except (CuteGemmError, RuntimeError, ValueError) as e:
                    notes[key] = first_line(e)
        return times, notes
    return measure


def _split(choice: auto.Choice, p: Problem, before: set) -> bool:
    """Whether the launch a split_k candidate resolved (new since `before`, else any of its
    kernel and shape) is split as asked: resolve falls back to the kernel's own plan where
    tiles x split_k CTAs are not resident at once."""
    plans = [x for x in api.resolved_launches() if x.kernel == choice.kernel and x.shape == (p.m, p.n, p.k)]
    new = [x for x in plans if x not in before] or plans
    return any(x.split_k == choice.split_k and x.reduced == choice.reduce for x in new)


def tune(sizes="sweep", *, precisions="fp32", layouts="nn", max_seconds: float = 480.0,
         out=None, fresh: bool = False, seed: int = 0, progress: bool = True,
         stream=None) -> tuple[Table, Path, list[Problem]]:
    """Measure gemm()'s candidates on the current GPU and write the table (default: the
    tuned table of this GPU and version, autotable.tuned_path; `out`: a file, or a folder
    for <gpu>.json, the shipped tables' name). Returns (table, path, problems not measured)."""
    t0 = time.monotonic()
    stream = stream if stream is not None else sys.stderr
    info = launch.device_info()
    driver.ensure_context(info.ordinal)
    precs = parse_precisions(precisions)
    lays = parse_layouts(layouts)
    shapes = parse_sizes(sizes)
    problems = plan(shapes, lays, precs, info.arch_int, info.smem_optin, info.sm_count)
    if not problems:
        raise ValueError(f"gemm() has no candidate for {', '.join(precs)} on {info.name} ({info.arch})")
    path, table = _start(out, info, fresh, {
        "sizes": [list(x) for x in shapes], "layouts": list(lays), "precisions": list(precs),
        "max_seconds": max_seconds, "repeats": REPEATS, "min_repeats": MIN_REPEATS,
        "max_timing_s": MAX_TIMING_S, "check": f"float64, whole up to M*N*K = {CHECK_FULL_MAX}, else sampled"})
    kernels = {split_key(c)[0] for p in problems for c in p.candidates}
    say = (lambda s: print(s, file=stream, flush=True)) if progress else (lambda s: None)
    say(f"tune: {len(problems)} problems on {info.name} ({info.arch}); compiling "
        f"{', '.join(sorted(kernels)) or 'nothing'} ...")
    compile_all([registry.get(x) for x in sorted(kernels)], info, catch=())    # none timed
    say(f"tune: compiled in {time.monotonic() - t0:.1f} s; measuring (budget {max_seconds:g} s "
        f"in all), writing {path}")

    def on_row(i, p, row, elapsed):
        table.date = utc_now()
        autotable.write(table, path)
        ranked = row.ranked()
        shown = ", ".join(f"{c} {ms:.4g} ms" for c, ms in ranked[:4]) or "nothing passed"
        bad = "; ".join(f"{c}: {x}" for c, x in row.notes.items())
        say(f"[{i + 1}/{len(problems)} {elapsed:6.1f}s] {p.label}: "
            f"{'-> ' + ranked[0][0] if ranked else ''}  ({shown})" + (f"  [{bad}]" if bad else ""))
    with Flush(info.l2_bytes) as flush:
        warm_up(flush)
        table.settings["flush_hold_us"] = flush.hold_us
        left = run_plan(problems, gpu_measure(info, flush, seed), table, budget_s=max_seconds,
                        t0=t0, on_row=on_row)
    table.settings["not_measured"] = [p.label for p in left]
    table.date = utc_now()
    autotable.write(table, path)
    api.clear_caches()          # this process's gemm() reads the new table
    return table, path, left


def _start(out, info, fresh: bool, settings: dict) -> tuple[Path, Table]:
    """Where to write, and the table to add rows to with this run's settings: the one there when
    it is of this GPU and version, its earlier runs listed (its rows are not all of this run's)."""
    path = autotable.tuned_path(info.name) if out is None else Path(out)
    path = path / f"{autotable.slug(info.name)}.json" if path.is_dir() else path
    v = autotable.tune_version()
    t = None if fresh or not path.exists() else autotable.load(path, info.name, v)
    s = t.settings if t is not None and t.rows else {}
    if s:
        last = {"date": t.date, **{x: s[x] for x in ("sizes", "layouts", "precisions") if x in s}}
        settings["earlier_runs"] = [*s.get("earlier_runs", []), last]
    t = t or Table(info.name, info.arch, v)
    t.arch, t.sm_count, t.settings = info.arch, info.sm_count, settings
    return path, t


# ---- reading a table back ------------------------------------------------------------------------
def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def format_table(table: Table, path=None) -> str:
    """A tune table for people: one short line per problem (the fastest candidate, its time,
    how far ahead of the runner-up, how many candidates ran, which failed); every
    candidate's time is in the JSON (`cute-gemm tune --show --json`, or the file)."""
    lines = [f"tune table {path or table.source}: {table.gpu} ({table.arch}, {table.sm_count} SMs), "
             f"cute_gemm {table.cute_gemm}, {table.date}, {len(table.rows)} problems"
             + (f", {len(table.batches)} batches timed on first use" if table.batches else "")]
    for r in sorted(table.rows, key=lambda r: (r.precision, r.layout, r.m * r.n * r.k)):
        ranked = r.ranked()
        shape = f"{r.m}x{r.n}x{r.k}" + ("" if r.aligned else "~")
        if ranked:
            (best, ms), rest = ranked[0], ranked[1:]
            cell = f"{best} {ms:.4g} ms" + (
                f", {rest[0][1] / ms:.2f}x ahead of {rest[0][0]}" if rest and ms > 0 else "")
        else:
            cell = "nothing passed"
        cell += f" ({len(ranked)} of {len(r.times)} candidates ran)"
        if failed := list(r.notes.items()):
            cell += "; failed: " + ", ".join(f"{c} ({_cut(x, 40)})" for c, x in failed[:3]) + (
                f" and {len(failed) - 3} more" if len(failed) > 3 else "")
        lines.append(f"  {r.precision:<12}{r.layout:<3} {shape:<20}{cell}")
    for b in sorted(table.batches, key=lambda b: b.key):
        ms = b.times[b.winner]
        lines.append(f"  batch {_cut(b.key, 44):<45}{b.winner} {ms:.4g} ms ({len(b.times)} timed"
                     + (f", in {b.runs}" if b.runs else "") + ")")
    if missing := table.settings.get("not_measured"):
        lines.append(f"  not measured (budget): {len(missing)} problems: "
                     + _cut(", ".join(missing), 120))
    lines.append("  (~: operands not all 16-byte aligned; KERNEL.T: on the transposed problem,\n"
                 "  C^T = B^T A^T; /splitkS: S CTAs per tile, split along K, reduced by the last\n"
                 "  of them; /splitrS: ... by a second launch; --json: every candidate's time)")
    return "\n".join(lines)
