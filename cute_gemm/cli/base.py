"""The floor under the command line: argument types, one-line errors, JSON output, the GPU
probe and the progress display that every subcommand module (compile_cli, check_cli,
layouts_cli, bench_cli, tune_cli) shares. cli.py, the top, imports those modules; they import
this one, and nothing here imports them back.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from tqdm import tqdm

from .. import registry
from ..driver import launch
from ..build.compile import normalize_arch
from ..build.cache import CacheWarning
from ..base.errors import CudaError, UnknownKernelError

DEFAULT_ARCH = "sm_90"   # what `check`/`compile` build for without a GPU: the H100/H200 hosts'

# ---- argument types: every bad value becomes one argparse error line -------------------------


def _int_at_least(lo: int) -> Callable[[str], int]:
    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
        if v < lo:
            raise argparse.ArgumentTypeError(f"must be >= {lo}, got {v}")
        return v
    parse.__name__ = f"integer >= {lo}"
    return parse


positive_int = _int_at_least(1)
nonneg_int = _int_at_least(0)


def positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {s}")
    return v


def finite_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be finite, got {s}")
    return v


def kernel_name(s: str) -> str:
    try:
        return registry.get(s).name
    except UnknownKernelError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def kernel_or_auto(s: str) -> str:
    """A registered kernel, or "auto" (gemm()'s choice) where a command runs kernels."""
    try:
        return registry.check_name(s)
    except UnknownKernelError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def shape_mnk(s: str) -> tuple[int, int, int]:
    """'MxNxK' -> (M, N, K), each >= 0: gemm() takes an empty problem (M or N = 0: nothing
    to write; K = 0: C = beta C), so the command line does too."""
    parts = s.lower().split("x")
    if len(parts) != 3 or not all(re.fullmatch(r"\d+", p) for p in parts):
        raise argparse.ArgumentTypeError(f"expected MxNxK (e.g. 257x383x129), got {s!r}")
    return tuple(int(p) for p in parts)  # type: ignore[return-value]


def precision_list(s: str) -> tuple[str, ...]:
    """'bf16,tf32' -> ("bf16", "tf32"), each one of registry.PRECISIONS."""
    got = tuple(dict.fromkeys(p.strip() for p in s.split(",")))
    bad = [p for p in got if p not in registry.PRECISIONS]
    if bad or not got:
        raise argparse.ArgumentTypeError(f"expected precisions from {', '.join(registry.PRECISIONS)}"
                                         f", got {s!r}")
    return got


def arch_name(s: str) -> str:
    try:
        return normalize_arch(s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an arch like sm_80, sm_90 or 90, got {s!r}") from None


# ---- helpers shared by the commands ------------------------------------------------------------


def one_line(e: BaseException | str) -> str:
    """The message of an error as one line (the first, whitespace collapsed)."""
    text = str(e).strip()
    first = text.splitlines()[0] if text else type(e).__name__
    return " ".join(first.split())


def error(msg: str, prog: str = "cute-gemm") -> int:
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return 2


def gpu_unavailable() -> str | None:
    """None when a CUDA device can be used, else one line saying why not.
    CUTE_GEMM_FORCE_NO_GPU=1 takes the no-GPU paths on a GPU host (as tests/conftest.py does)."""
    if os.environ.get("CUTE_GEMM_FORCE_NO_GPU"):
        return "CUTE_GEMM_FORCE_NO_GPU is set"
    try:
        launch.device_info()
    except CudaError as e:
        return device_reason(e)
    return None


def device_reason(e: CudaError) -> str:
    """The first line of a device error without launch.py's advice for library users
    (compile_kernel(..., arch=...)): the CLI gives its own."""
    return one_line(e).split("; compile-only use")[0]


def save_log(kernel: str, arch: str, log: str) -> Path | None:
    """Write an NVRTC log where a person can read it; its path goes into a one-line error."""
    d = Path(tempfile.gettempdir()) / "cute_gemm-logs"
    try:
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{kernel}-{arch}.log"
        p.write_text(log)
        return p
    except OSError:
        return None


def json_safe(x: Any) -> Any:
    """NaN/inf become null (JSON has neither); tuples become lists."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if hasattr(x, "item") and callable(x.item):          # numpy scalars
        return json_safe(x.item())
    return x


def print_json(obj: Any) -> None:
    print(json.dumps(json_safe(obj), indent=2))


def cpu_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def add_jobs_progress(s) -> None:
    s.add_argument("--jobs", "-j", type=positive_int, default=None, metavar="N",
                   help="NVRTC compiles in parallel processes (default: the CPU cores, "
                        f"{cpu_cores()} here)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                   help="show progress on stderr even when it is not a terminal")
    g.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="no progress on stderr (default: shown when stderr is a terminal)")


# ---- warnings ------------------------------------------------------------------------------------

_shown: set = set()


def show_warning(message, category, filename=None, lineno=None, file=None, line=None) -> None:
    """warnings.showwarning for the command line: `cute-gemm: warning: TEXT`, one line, no
    source line; each kind of warning once per run (an unwritable cache warns in every
    worker process and for every compile that misses it)."""
    text = " ".join(str(message).split())
    if text.startswith("cute_gemm: "):
        text = text[len("cute_gemm: "):]
    key = category if issubclass(category, CacheWarning) else (category, text)
    if key in _shown:
        return
    _shown.add(key)
    print(f"cute-gemm: warning: {text}", file=file or sys.stderr, flush=True)


def reset_warnings() -> None:
    """Forget the warnings shown (a new run of main() shows them again)."""
    _shown.clear()


# ---- progress ------------------------------------------------------------------------------------


class Progress:
    """Progress of a batch of jobs on stderr. On a terminal, a tqdm bar (n/N, elapsed, an
    estimate of what is left, what is running) that refreshes twice a second, so a 30 s
    compile still shows time passing; elsewhere (when asked for) a line per finished job,
    `[n/N] seconds  label: note`, which reads well in a log."""

    def __init__(self, total: int, enabled: bool | None, verb: str = "compiling", stream=None):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = self.tty if enabled is None else enabled
        self.total, self.done, self.verb = total, 0, verb
        self.running: list[str] = []
        self.t0 = time.perf_counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._bar = None
        if self.enabled and self.tty:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self._bar = tqdm(total=total, file=self.stream, ncols=width, leave=False,
                             bar_format="[{n_fmt}/{total_fmt}] {bar:20} {elapsed}<{remaining}"
                                        "{postfix}", dynamic_ncols=False)
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                self._bar.refresh()

    def _describe(self) -> None:          # (the lock held)
        self._bar.set_postfix_str(f"{self.verb} " + ", ".join(self.running) if self.running
                                  else "", refresh=True)

    def start(self, label: str) -> None:
        with self._lock:
            self.running.append(label)
            if self._bar is not None:
                self._describe()

    def finish(self, label: str, note: str) -> None:
        with self._lock:
            self.running.remove(label)
            self.done += 1
            if self._bar is not None:
                self._bar.update(1)
                self._describe()
        if self.enabled and self._bar is None:
            print(f"[{self.done}/{self.total}] {time.perf_counter() - self.t0:6.1f} s  {label}: {note}",
                  file=self.stream, flush=True)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()
