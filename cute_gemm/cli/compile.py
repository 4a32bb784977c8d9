"""`cute-gemm compile` (and `check`'s compiles): kernels x archs in worker processes, at most --jobs at
once, each reporting what this run did: compiled (NVRTC's seconds) or found in the cache (the lookup's
seconds, not those recorded at the build). Progress on stderr; stdout a table (or JSON)."""
from __future__ import annotations

import itertools
import multiprocessing
import shutil
import sys
import threading
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from tqdm import tqdm

from .. import registry
from ..build import cache, compile as comp
from ..driver import launch
from . import base
from .base import (DEFAULT_ARCH, add_jobs_progress, arch_name, error,
                   kernel_name, one_line, precision_list, save_log, show)
from ..base.errors import CompileError, CuteGemmError
from ..plan.resolve import UTIL, layout_launches


@dataclass
class Outcome:
    """One (kernel, arch) of a compile run."""
    kernel: str
    arch: str
    origin: str                       # "compiled" | "disk" | "memory" | "failed" | "skipped"
    seconds: float = 0.0              # spent in this run
    resources: dict = field(default_factory=dict)   # entry -> compile.Resources
    error: str = ""
    log: str = ""                     # the whole NVRTC error, for a log file
    entries: tuple[str, ...] = ()     # the entry points compiled (--layout), () for all of them
    warned: tuple[tuple[str, str], ...] = ()   # (category, text) of the warnings the compile gave


def kernel_of(name: str) -> registry.Kernel:
    """A compiled kernel (registry.compiled), or the copy kernel --layout may add."""
    return UTIL if name == UTIL.name else registry.find(name)


Job = tuple[str, str, "tuple[str, ...] | None"]        # kernel name, arch, entry points (None: all)


def compile_one(job: Job) -> Outcome:
    """In a worker: an outcome that pickles (the cache holds the cubin), with the warnings given."""
    name, arch, entries = job
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            c = cache.get(kernel_of(name), arch, entries=entries)
            o = Outcome(name, arch, c.origin, time.perf_counter() - t0, c.resources,
                        entries=() if c.whole else c.entries)
        except CuteGemmError as e:
            o = Outcome(name, arch, "failed", time.perf_counter() - t0, error=one_line(e),
                        log=str(e) if isinstance(e, CompileError) else "", entries=tuple(entries or ()))
    o.warned = tuple((w.category.__name__, str(w.message)) for w in caught)
    return o


class Progress:
    """Compile progress on stderr: on a terminal a tqdm bar redrawn twice a second (a 30 s compile still
    shows time passing); elsewhere, when asked for, a line per finished job, `[n/N] seconds  label: note`."""

    def __init__(self, total: int, enabled: bool | None):
        tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.enabled, self.total, self.done, self.running = tty if enabled is None else enabled, total, 0, []
        self.t0, self._lock, self._stop, self._bar = time.perf_counter(), threading.Lock(), threading.Event(), None
        if self.enabled and tty:
            self._bar = tqdm(total=total, leave=False, ncols=shutil.get_terminal_size((100, 20)).columns - 1,
                             bar_format="[{n_fmt}/{total_fmt}] {bar:20} {elapsed}<{remaining}{postfix}")
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                self._bar.refresh()

    def _update(self, label: str, start: bool) -> None:
        with self._lock:
            (self.running.append if start else self.running.remove)(label)
            self.done += 0 if start else 1
            if self._bar is not None:
                self._bar.update(0 if start else 1)
                self._bar.set_postfix_str("compiling " + ", ".join(self.running) if self.running else "")

    def start(self, label: str) -> None:
        self._update(label, True)

    def finish(self, label: str, note: str) -> None:
        self._update(label, False)
        if self.enabled and self._bar is None:
            print(f"[{self.done}/{self.total}] {time.perf_counter() - self.t0:6.1f} s  {label}: {note}",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        self._stop.set()
        if self._bar is not None:
            with self._lock:
                self._bar.close()


def run_jobs(jobs: list[Job], workers: int, progress: Progress) -> list[Outcome]:
    """Compile every job, at most `workers` at once in spawned processes (one: in this process, where
    NVRTC drops the GIL); outcomes in the order of `jobs`. The last jobs (later ladder stages, the CuTe
    family) take longest: they start first, so that no 30 s compile begins when the rest is done."""
    multi_arch = len({j[1] for j in jobs}) > 1
    # a selection by its entry points (named after their kernel), a whole kernel by name
    labels = [(",".join(j[2]) if j[2] else j[0]) + (f" {j[1]}" if multi_arch else "") for j in jobs]
    todo, out, pending = iter(reversed(range(len(jobs)))), {}, {}
    n = 1 if workers <= 1 or len(jobs) <= 1 else min(workers, len(jobs))
    # spawn, not fork: the parent may hold a CUDA context and runs the progress thread
    pool = ThreadPoolExecutor(1) if n == 1 else ProcessPoolExecutor(
        n, mp_context=multiprocessing.get_context("spawn"))

    def submit() -> None:       # never more submitted than workers: pending is what compiles
        i = next(todo, None)
        if i is not None:
            progress.start(labels[i])
            pending[pool.submit(compile_one, jobs[i])] = i
    try:
        for _ in range(n):
            submit()
        while pending:
            for f in wait(pending, return_when=FIRST_COMPLETED)[0]:
                i = pending.pop(f)
                out[i] = o = f.result()
                for category, text in o.warned:      # shown once, by this process
                    warnings.warn(text, cache.CacheWarning if category == "CacheWarning" else UserWarning)
                progress.finish(labels[i], f"compiled in {o.seconds:.1f} s" if o.origin == "compiled"
                                else "FAILED" if o.origin == "failed" else "cached")
                submit()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        progress.close()
    pool.shutdown()
    return [out[i] for i in range(len(jobs))]


def arch_number(arch: str) -> int:
    return int("".join(filter(str.isdigit, arch)))          # sm_90a -> 90


def unsupported_arch(arch: str) -> str | None:
    """None if this NVRTC compiles for `arch` (an empty program, ~0.1 s), else its complaint."""
    try:
        comp.run_nvrtc(registry.kernels()[0], "", [f"-arch={arch}"], want_ptx=False)
    except CompileError as e:
        return one_line(e.log) if e.log.strip() else e.result
    return None


def layout_plan(kernels: list[str], layouts: list[str], precisions: tuple[str, ...] | None
                ) -> dict[str, list[tuple[str, ...] | None]]:
    """kernel name -> the entry-point sets (None: the whole kernel) that calls in `layouts` launch, as
    run() compiles them, the kernels they run besides included; [] if it computes none of `precisions`."""
    plan: dict[str, dict] = {n: {} for n in kernels}
    for n, lay in ((n, lay) for n in kernels for lay in layouts):
        for name, sets in layout_launches(kernel_of(n), lay, precisions).items():
            plan.setdefault(name, {}).update(dict.fromkeys(comp.select_entries(kernel_of(name), s) for s in sets))
    return {n: list(sets) for n, sets in plan.items()}


def spread(jobs: list[Job], workers: int) -> dict[Job, list[Job]]:
    """Each job -> the jobs it runs as: an uncached whole kernel with more entry points than a
    worker's share as one job per entry point (NVRTC's time is per entry: the longest job
    bounds the run; a launch finds one-entry cubins as it finds its own)."""
    size = {j: len(j[2]) if j[2] else len(kernel_of(j[0]).entries) for j in jobs}
    share = sum(size.values()) / max(1, workers)
    return {j: [(j[0], j[1], (e,)) for e in kernel_of(j[0]).entries]
            if j[2] is None and workers > 1 and size[j] > max(share, 1)
            and cache.lookup(kernel_of(j[0]), j[1]) is None else [j] for j in jobs}


def compile_table(plan: dict[str, list[tuple[str, ...] | None]], archs: list[str], workers: int | None,
                  progress: bool | None, precisions: tuple[str, ...] | None = None) -> list[Outcome]:
    """Compile the plan (layout_plan's form) for each arch: kernels above it skipped, an arch-specific
    one compiled for its target (sm_90 -> sm_90a)."""
    slots: list[Outcome | list[Job]] = []       # per (arch, kernel): skipped, or its jobs
    for a, n in itertools.product(archs, plan):
        k, num = kernel_of(n), arch_number(a)
        if not plan[n]:
            slots.append(Outcome(n, a, "skipped", error=f"computes {', '.join(k.precisions)}, "
                                 f"none of {', '.join(precisions or ())}"))
        elif not k.runs_on(num):
            need = f"sm_{k.min_arch}" + ("a" if k.arch_specific else " or newer")
            slots.append(Outcome(n, a, "skipped", error=f"needs {need}"))
        else:
            slots.append([(n, k.target(num) if k.arch_specific else a, s) for s in plan[n]])
    workers = workers or cache.cpu_count()
    cut = spread(list(dict.fromkeys(j for s in slots if isinstance(s, list) for j in s)), workers)
    jobs = list(dict.fromkeys(j for got in cut.values() for j in got))
    done = dict(zip(jobs, run_jobs(jobs, workers, Progress(len(jobs), progress))))
    out: dict[int, Outcome] = {}       # (an arch-specific target may stand for several archs)
    for s in slots:
        for o in [s] if isinstance(s, Outcome) else [done[j] for w in s for j in cut[w]]:
            out.setdefault(id(o), o)
    return list(out.values())


def resource_problems(k: registry.Kernel, res: dict, entries: tuple[str, ...] = ()) -> dict[str, str]:
    """entry -> what is wrong with its registers or local memory; `entries`: those compiled, () all."""
    cap = min(255, 65536 // (k.threads * k.min_blocks))   # MIN_BLOCKS CTAs must stay resident
    out = {}
    for entry in entries or k.entries:
        r = res.get(entry)
        if r is None:
            out[entry] = "ptxas reported nothing"
        elif r.registers > cap:
            out[entry] = f"{r.registers} registers > {cap}"
        elif r.spill_stores > 0 or r.spill_loads > 0:
            out[entry] = f"spills {r.spill_stores}/{r.spill_loads} bytes"
        elif r.spill_stores < 0 and r.stack_bytes > 0:   # ELF report: no spill figures
            out[entry] = f"{r.stack_bytes} bytes of local memory"
        elif r.wgmma_serialized:
            out[entry] = "wgmmas serialized by ptxas"
    return out


def rows(outcomes: list[Outcome], verdicts: bool = False) -> list[dict]:
    """One record per entry point (per job where there is none): the JSON form of the table."""
    recs = []
    for o in outcomes:
        base = {"kernel": o.kernel, "arch": o.arch, "origin": o.origin, "seconds": round(o.seconds, 3)}
        if o.origin in ("failed", "skipped"):
            recs.append({**base, "error": o.error})
            continue
        k = kernel_of(o.kernel)
        probs = resource_problems(k, o.resources, o.entries) if verdicts else {}
        for entry in o.entries or k.entries:
            recs.append(rec := {**base, "entry": entry})
            if (r := o.resources.get(entry)) is not None:
                rec.update(registers=r.registers, smem_bytes=r.smem_bytes, stack_bytes=r.stack_bytes,
                           spill_stores=r.spill_stores if r.spill_stores >= 0 else None,
                           spill_loads=r.spill_loads if r.spill_loads >= 0 else None)
            if verdicts:
                rec["problem"] = probs.get(entry)
    return recs


def format_table(outcomes: list[Outcome], verdicts: bool = False) -> str:
    # the compile each record comes from: seconds are per compile, shown on its first entry
    recs = [dict(r, job=i) for i, o in enumerate(outcomes) for r in rows([o], verdicts)]
    kw = max([8] + [len(r["kernel"]) for r in recs]) + 2
    ew = max([7] + [len(r.get("entry", "")) for r in recs]) + 2
    lines = [f"{'kernel':<{kw}}{'arch':<8}{'origin':<10}{'secs':>6}  {'entry':<{ew}}{'regs':>5}{'smem':>7}"
             f"{'stack':>6}{'spill st/ld':>12}" + ("  check" if verdicts else "")]
    for prev, r in zip([None] + recs, recs):
        origin = "cached" if r["origin"] in ("disk", "memory") else r["origin"]
        secs = "-" if origin == "skipped" else "" if prev and prev["job"] == r["job"] else f"{r['seconds']:.1f}"
        line = f"{r['kernel']:<{kw}}{r['arch']:<8}{origin:<10}{secs:>6}  "
        if "error" in r:
            line += r["error"]
        elif "registers" not in r:
            line += f"{r['entry']:<{ew}}{'?':>5}"
        else:
            spill = (f"{r['spill_stores']:>6}/{r['spill_loads']:<5}" if r["spill_stores"] is not None
                     else f"{'n/a (ELF)':>12}")
            line += (f"{r['entry']:<{ew}}{r['registers']:>5}{r['smem_bytes']:>7}{r['stack_bytes']:>6}{spill}"
                     + (f"  {r['problem'] or 'ok'}" if verdicts else ""))
        lines.append(line.rstrip())
    return "\n".join(lines)


def report_failures(outcomes: list[Outcome], prog: str) -> None:
    for o in (o for o in outcomes if o.origin == "failed"):
        path = save_log(o.kernel, o.arch, o.log) if o.log else None
        print(f"{prog}: {o.kernel} ({o.arch}): {o.error}" + (f"; full log: {path}" if path else ""), file=sys.stderr)


def cmd_compile(args) -> int:
    names = [k.name for k in registry.compiled()] if args.all or not args.kernels else args.kernels
    layouts = None if args.layout is None else list(registry.LAYOUTS) if args.layout == "all" else [args.layout]
    if layouts is None:   # a composed kernel whole: its GEMM too (--layout: what its calls launch)
        gemm = {k.name: (k.gemm_of.kernel.name,) for k in registry.kernels() if k.gemm_of is not None}
        names = [x for n in names for x in (n, *gemm.get(n, ()))]
    names = list(dict.fromkeys(names))
    if args.precision and not layouts:
        return error("--precision chooses among the entry points of --layout: give --layout too",
                     "cute-gemm compile")
    archs = list(dict.fromkeys(args.arch or []))
    if not archs and base.gpu_unavailable() is None:
        archs = [launch.device_info().arch]
    elif not archs:
        archs = [DEFAULT_ARCH]
        print(f"cute-gemm compile: no GPU here, compiling for {DEFAULT_ARCH} (--arch to choose)", file=sys.stderr)
    for a in archs:
        if why := unsupported_arch(a):
            return error(f"NVRTC cannot compile for {a}: {why}", "cute-gemm compile")
    plan = layout_plan(names, layouts, args.precision or None) if layouts else {n: [None] for n in names}
    outcomes = compile_table(plan, archs, args.jobs, args.progress, args.precision or None)
    show(args.json, rows(outcomes), lambda: format_table(outcomes))
    report_failures(outcomes, "cute-gemm compile")
    if outcomes and all(o.origin == "skipped" for o in outcomes):
        why = "; ".join(dict.fromkeys(f"{o.kernel} {o.error}" for o in outcomes))
        return error(f"nothing was compiled: every kernel asked for was skipped for "
                     f"{', '.join(archs)} ({why})", "cute-gemm compile")
    return 1 if any(o.origin == "failed" for o in outcomes) else 0


def register(sub) -> None:
    s = sub.add_parser("compile", help="compile kernels with NVRTC and show registers, smem and spills (no GPU "
                                       "needed)")
    s.add_argument("kernels", nargs="*", type=kernel_name, metavar="KERNEL", help="kernels to compile (default: all)")
    s.add_argument("--all", action="store_true", help="every registered kernel (the default)")
    s.add_argument("--arch", action="append", type=arch_name,
                   help=f"sm_80, sm_90 ..., repeatable (default: the GPU's, or {DEFAULT_ARCH} without one)")
    s.add_argument("--layout", choices=registry.LAYOUTS + ("all",),
                   help="only the entry points a call with A and B in this operand layout (contiguous, aligned) "
                        "needs, with their stream-K twins and the kernels the call runs besides (default: every "
                        "entry point)")
    s.add_argument("--precision", type=precision_list, metavar="P[,P...]", help="with --layout: only these "
                   f"precisions ({', '.join(registry.PRECISIONS)}; default: all the kernel computes)")
    add_jobs_progress(s)
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")
    s.set_defaults(fn=cmd_compile)
