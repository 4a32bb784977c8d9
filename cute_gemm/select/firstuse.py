"""gemm()'s tuning on first use, as Triton's autotuner does: a problem no table row measured
has its compiled candidates ("wait": all) timed once on the call's operands, the model's pick
first, within BUDGET_S; the fastest runs, and its row is kept in the GPU's tuned table. Off
with CUTE_GEMM_TUNE=off, in a graph capture, on host arrays (docs/design/tables.md#first-use)."""
from __future__ import annotations

import functools
import threading
from typing import NamedTuple
from dataclasses import replace

from . import auto, autotable, batched, standin
from .. import driver, registry
from ..base.setting import Setting
from ..base.precisions import PRECISION
from ..driver import launch
from ..plan import resolve, trial
from .autotable import Batched, Measured, Table
from .choice import split_key
from .contract import answering

BUDGET_S = 1.0      # host time to time one problem's candidates, at most
mode = Setting("CUTE_GEMM_TUNE", ("first_use", "off"))     # mode(): this context's


def off():
    """No tuning on first use for gemm() calls in this block (this thread)."""
    return mode.within("off")


def tuned(choice: auto.Choice, sig, precision: str, out_dtype: str, ordinal: int,
          stream: int, epi=None) -> auto.Choice:
    """The choice for a device call (signature.Signature) after tuning on first use, which
    run() asks only where tuning is on and no table row made `choice`; while `stream`
    captures, what was tuned. epi: the call's fused epilogue (driver.epilogue.Prepared), which
    `choice` runs: the candidates that fuse it are timed with it, and their row stays in the
    process (the tables hold plain products' times)."""
    device = launch.device_info(ordinal)
    mine = [p for p in answering(precision)
            if auto.candidates(p, out_dtype, device.arch_int, exactly=True)]
    if epi is not None and len(mine) > 1:
        return choice       # (a contract's several arithmetics: their rows are plain ones)
    keys = {p: (device.name, sig.m, sig.n, sig.k, sig.layout, sig.aligned, p, out_dtype)
            + (() if epi is None else (epi.spec.tag,)) for p in mine}
    if launch.capturing(stream):
        if not any(isinstance(_done.get(key), _Tuned) for key in keys.values()):
            return choice
    else:
        for p, key in keys.items():
            first = choice if (choice.precision or precision) == p else None
            _once(key, lambda key=key, first=first: _tune(key, first, sig.A, sig.B, out_dtype,
                                                          device, stream, epi))
    done = _done.get(keys[mine[0]]) if len(mine) == 1 else None
    if isinstance(done, _Tuned) and not done.kept:
        c = done.choice                 # (in another arithmetic that keeps the contract: say so)
        return c if mine[0] == precision else replace(c, precision=mine[0])
    if epi is not None:
        return choice       # nothing timed (yet): the pick that fuses
    # rows kept on disk (or a contract's several): the selector reads them as a table's
    return auto.choose(sig.m, sig.n, sig.k, device=device, layout=sig.layout,
                       precision=precision, out_dtype=out_dtype, aligned=sig.aligned)


def tuned_batch(choice: auto.Choice, sig, precision: str, out_dtype: str, ordinal: int,
                stream: int) -> auto.Choice:
    """tuned() for a batched call: the batched candidates (batched.ranked, `choice` first)
    timed once, the fastest kept as the tuned table's batch row where all were at hand;
    while `stream` captures, what was tuned (this process, or a kept row), else `choice`.
    Asked by run() only where tuning is on."""
    device = launch.device_info(ordinal)
    problem = (sig.m, sig.n, sig.k, sig.layout, sig.aligned, precision, out_dtype)
    key = (device.name, sig.batch, sig.modes, *problem)
    bkey = autotable.batch_key(sig.batch, sig.modes, *problem)

    @functools.cache
    def candidates() -> list[auto.Choice]:
        return [choice] + [c for c in batched.ranked(
            sig.batch[0] * sig.batch[1], sig.m, sig.n, sig.k, device=device, precision=precision,
            out_dtype=out_dtype, modes=sig.modes) if c.kernel != choice.kernel]

    def kept():
        c = batched.kept(device, bkey, candidates())
        return None if c is None else _Tuned(c, True)

    def tune():
        if (done := kept()) is not None:
            return done
        cands = candidates()
        runs = [(registry.get(c.kernel), c.precision or precision, c.pick) for c in cands]
        timed = _timed(runs, True, sig.A, sig.B, out_dtype, device, stream, sig.batch)
        if not isinstance(timed, tuple):
            return timed
        times, _, at_hand = timed
        best = min(times, key=lambda i: (times[i], i))
        why = (f"timed on first use: {cands[best].kernel} {times[best]:.4g} ms of "
               f"{len(times)} batched candidates")
        row = Batched(bkey, cands[0].precision or "", {cands[i].kernel: ms for i, ms in times.items()})
        return _Tuned(replace(cands[best], source="tuned", why=why, ms=times[best]),
                      at_hand and _keep(row, device))
    if launch.capturing(stream):        # nothing timed: this process's answer, else a kept row
        done = _done.get(key)
        done = done if isinstance(done, _Tuned) else kept()
    else:
        done = _once(key, tune)
    return done.choice if isinstance(done, _Tuned) else choice


def _once(key, tune):
    """_done[key]: tune() run once (threads of one problem wait for the first), and again
    where it was put off (_Later) and the model's pick is now at hand."""
    with _lock:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        if key not in _done or isinstance(_done[key], _Later) and _done[key].ready():
            _done[key] = tune()
        return _done[key]


class _Tuned(NamedTuple):
    choice: auto.Choice
    kept: bool              # its row is in the tuned table on disk


class _Later:
    """Tuning put off: the model's pick was not compiled ("quick" mode), and a candidate timed
    without it might be 10x slower; a later call of the problem tunes once ready()."""
    def __init__(self, lead, A, B, T, ordinal: int):
        # the operands' shapes and strides only: no reference to the caller's arrays
        self.args = (lead[0], *(replace(op, obj=None, host=None) for op in (A, B, T)),
                     lead[1], lead[2], ordinal)

    def ready(self) -> bool:
        return trial.ready(*self.args, start=False)


_lock = threading.Lock()
_locks: dict = {}
_done: dict = {}    # (gpu, problem; a batch's with batch and modes) -> _Tuned, _Later or None


def _timed(runs, lead: bool, A, B, out_dtype: str, device, stream: int, batch=(1, 1), epi=None):
    """`runs` ((kernel, precision, pick); lead: the first is the model's pick) timed on A and B
    (with fused epilogue `epi`) as (times {i: ms}, notes {i: why it did not run}, whether all
    were at hand); _Later where the model's pick is not at hand in "quick" mode; None where
    nothing ran."""
    wait = standin.first_call() == "wait"
    T = trial.result_operand(A, B, out_dtype, batch)
    with driver.relaxed():      # (event waits: legal while another thread captures)
        # "wait" compiles every candidate first; "quick" times those at hand and compiles
        # none (a cold first call must not set every core compiling dozens of kernels)
        ready = [trial.ready(x, A, B, T, p, pick, device.ordinal, start=wait) for x, p, pick in runs]
        if wait and not all(ready):
            resolve.wait_for_compiles()
            ready = [trial.ready(x, A, B, T, p, pick, device.ordinal, start=False)
                     for x, p, pick in runs]
        if lead and not ready[0] and not wait:
            return _Later(runs[0], A, B, T, device.ordinal)
        order = [i for i, r in enumerate(ready) if r]
        if not order:
            return None
        times, failed = trial.time_launches([runs[i] for i in order], A, B, out_dtype,
                                            device.ordinal, stream, BUDGET_S, batch=batch,
                                            epi=epi)
    if not times:
        return None
    return ({order[j]: ms for j, ms in times.items()},
            {order[j]: why for j, why in failed.items()}, all(ready))


def _tune(key, first: auto.Choice | None, A, B, out_dtype: str, device, stream: int, epi=None):
    """Time the problem's candidates (auto.keys, `first` leading) and keep the row; with a
    fused epilogue `epi`, those that fuse it, each with it, the row kept in this process."""
    _, m, n, k, layout, aligned, precision, _ = key[:8]
    keys = auto.keys(m, n, k, precision, out_dtype, device.arch_int, device.smem_optin,
                     device.sm_count)
    if epi is not None:
        keys = tuple(c for c in keys if auto.Choice.of_key(c).fuses(bool(epi.spec.blocks)))
    # the model's pick first (it wins a tie), then each kernel's own plan, then the splits:
    # where the budget cuts the list short, what is left out is the least likely to win
    lead = first.key if first is not None and first.key in keys else None
    keys = sorted(keys, key=lambda c: (c != lead, split_key(c)[2] > 0))
    runs = [(registry.get_fused(c.kernel, epi and epi.spec), precision, c.pick)
            for c in map(auto.Choice.of_key, keys)]
    timed = _timed(runs, lead is not None, A, B, out_dtype, device, stream, epi=epi)
    if not isinstance(timed, tuple):
        return timed
    times, notes, at_hand = timed
    row = Measured(m, n, k, layout, aligned, precision,
                   {c: times.get(i) for i, c in enumerate(keys) if i in times or i in notes},
                   {keys[i]: why for i, why in notes.items()})
    # kept where every candidate was at hand (they may win once compiled); a row cut by the
    # budget is kept: the best of the likeliest, not timed again in every process
    kept = (epi is None and at_hand and out_dtype == PRECISION[precision].timed_out
            and _keep(row, device))
    (best, ms), rest = row.ranked()[0], row.ranked()[1:2]
    why = (f"timed on first use: {best} {ms:.4g} ms of {len(times)} candidates"
           + (" with the epilogue" if epi is not None else "")
           + (f", then {rest[0][0]} {rest[0][1]:.4g} ms" if rest else ""))
    return _Tuned(auto.Choice.of_key(best, source="tuned", why=why, ms=ms), kept)


def _keep(row: Measured | Batched, device) -> bool:
    """Put `row` into the GPU's tuned table on disk (under a file lock: processes tune alike)
    and forget the tables read; False where the cache cannot be written."""
    import filelock         # (not at import: `import cute_gemm` stays lean, test_imports)
    path = autotable.tuned_path(device.name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(str(path) + ".lock"):
            v = autotable.tune_version()
            t = autotable.load(path, device.name, v) or Table(device.name, device.arch, v,
                                                              sm_count=device.sm_count)
            t.put(row)
            autotable.write(t, path)
    except OSError:
        return False
    autotable.reset()
    return True
