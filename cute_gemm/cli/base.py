"""What every subcommand module shares (they import it, never the reverse): argument types (a bad
value is one argparse error line), one-line errors, JSON output, the GPU probe, warnings once."""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from .. import registry
from ..driver import launch
from ..build.cache import CacheWarning, cpu_count
from ..build.compile import normalize_arch
from ..base.errors import CudaError, UnknownKernelError

DEFAULT_ARCH = "sm_90"   # what `check`/`compile` build for without a GPU: the H100/H200 hosts'


# ---- argument types ---------------------------------------------------------------------------
def checked(parse: Callable[[str], Any], bad: str = "") -> Callable[[str], Any]:
    """An argparse type from parse(s): its ValueError or UnknownKernelError becomes the error line,
    `bad` (with {s}, the value) or else the error's own message."""
    def f(s: str):
        try:
            return parse(s)
        except (ValueError, UnknownKernelError) as e:
            raise argparse.ArgumentTypeError(bad.format(s=repr(s)) if bad else str(e)) from None
    return f


def _number(cast: type, ok: Callable[[Any], bool], need: str) -> Callable[[str], Any]:
    def f(s: str):
        v = checked(cast, f"expected {'an integer' if cast is int else 'a number'}, got {{s}}")(s)
        if not ok(v):
            raise argparse.ArgumentTypeError(f"must be {need}, got {s}")
        return v
    return f


def _shape(s: str) -> tuple[int, int, int]:
    if not (m := re.fullmatch(r"(\d+)x(\d+)x(\d+)", s.lower())):
        raise ValueError(s)
    return tuple(map(int, m.groups()))  # type: ignore[return-value]


def _precisions(s: str) -> tuple[str, ...]:
    if not set(got := tuple(dict.fromkeys(p.strip() for p in s.split(",")))) <= set(registry.PRECISIONS):
        raise ValueError(s)
    return got


positive_int = _number(int, lambda v: v >= 1, ">= 1")
nonneg_int = _number(int, lambda v: v >= 0, ">= 0")
positive_float = _number(float, lambda v: v > 0 and math.isfinite(v), "a positive number")
finite_float = _number(float, math.isfinite, "finite")
kernel_name = checked(lambda s: registry.get(s).name)
kernel_or_auto = checked(registry.check_name)        # a kernel, or "auto" (gemm()'s choice)
arch_name = checked(normalize_arch, "expected an arch like sm_80, sm_90 or 90, got {s}")
# 'MxNxK', each >= 0: gemm() takes an empty problem (M or N = 0, or K = 0: C = beta C)
shape_mnk = checked(_shape, "expected MxNxK (e.g. 257x383x129), got {s}")
precision_list = checked(_precisions, f"expected precisions from {', '.join(registry.PRECISIONS)}, got {{s}}")


# ---- errors, JSON, the GPU -----------------------------------------------------------------------
def one_line(e: BaseException | str) -> str:
    """The message of an error as one line (the first, whitespace collapsed)."""
    text = str(e).strip()
    return " ".join((text.splitlines()[0] if text else type(e).__name__).split())


def error(msg: str, prog: str = "cute-gemm") -> int:
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return 2


def gpu_unavailable() -> str | None:
    """None when a CUDA device can be used, else why not (CUTE_GEMM_FORCE_NO_GPU=1: as if none)."""
    if os.environ.get("CUTE_GEMM_FORCE_NO_GPU"):
        return "CUTE_GEMM_FORCE_NO_GPU is set"
    try:
        launch.device_info()
    except CudaError as e:
        return device_reason(e)
    return None


def no_gpu(cmd: str, what: str = "kernels", hint: bool = False) -> int | None:
    """`cute-gemm cmd`'s error (2) when no CUDA GPU can time `what`, else None."""
    if why := gpu_unavailable():
        return error(f"{cmd} times {what} on a CUDA GPU and none can be used here ({why})" + (
            "; `cute-gemm check` does what can be done without one" if hint else ""), f"cute-gemm {cmd}")
    return None


def device_reason(e: CudaError) -> str:
    """The first line of a device error, without launch.py's advice to library users."""
    return one_line(e).split("; compile-only use")[0]


def save_log(kernel: str, arch: str, log: str) -> Path | None:
    """Write an NVRTC log where a person can read it (its path goes into a one-line error)."""
    p = Path(tempfile.gettempdir()) / "cute_gemm-logs" / f"{kernel}-{arch}.log"
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(log)
        return p
    except OSError:
        return None


def json_safe(x: Any) -> Any:
    """NaN/inf become null (JSON has neither), tuples lists, numpy scalars numbers."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return json_safe(x.item()) if callable(getattr(x, "item", None)) else x


def print_json(obj: Any) -> None:
    print(json.dumps(json_safe(obj), indent=2))


def show(as_json: bool, obj: Any, text: Callable[[], str]) -> None:
    """`obj` as JSON on stdout (--json), else the table text() makes."""
    print_json(obj) if as_json else print(text())


def add_jobs_progress(s) -> None:
    s.add_argument("--jobs", "-j", type=positive_int, default=None, metavar="N",
                   help=f"NVRTC compiles in parallel processes (default: the CPU cores, {cpu_count()} here)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                   help="show progress on stderr even when it is not a terminal")
    g.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                   help="no progress on stderr (default: shown when stderr is a terminal)")


# ---- warnings ------------------------------------------------------------------------------------
_shown: set = set()


def show_warning(message, category, filename=None, lineno=None, file=None, line=None) -> None:
    """warnings.showwarning for the command line: `cute-gemm: warning: TEXT`, one line, each kind
    once per run (an unwritable cache warns in every worker and every compile)."""
    text = " ".join(str(message).split()).removeprefix("cute_gemm: ")
    key = category if issubclass(category, CacheWarning) else (category, text)
    if key not in _shown:
        _shown.add(key)
        print(f"cute-gemm: warning: {text}", file=file or sys.stderr, flush=True)


def reset_warnings() -> None:
    """Forget the warnings shown (a new run of main() shows them again)."""
    _shown.clear()
