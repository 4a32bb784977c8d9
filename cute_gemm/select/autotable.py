"""The tables gemm()'s selector reads: candidates' median times per shape on one GPU, from
`cute-gemm tune` or tuning on first use, as JSON. Tuned: cache_dir()/tune/<gpu>-<tune_version>
.json; shipped: cute_gemm/tables/<gpu>.json. Each is read once per process (reset() forgets);
one unreadable, or another GPU's or version's, is ignored with an AutoTableWarning."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import re
import tempfile
import threading
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import registry
from ..build import cache, paths
from ..driver import launch
from ..base.errors import AutoTableWarning, InputError
from ..registry.records import LAYOUTS, PRECISIONS
from ..base.version import __version__

SCHEMA = 1
TRANSPOSED = ".T"     # a candidate key's suffix: the kernel computes C^T = B^T A^T
SPLIT_K = "/splitk"   # ... then + S: a stream-K launch of S CTAs per tile (records.Pick)
SPLIT_R = "/splitr"   # ... or + S: S shares per tile summed by a reduction launch (Pick.reduce)


@dataclass
class Measured:
    """One measured problem: each candidate's median ms (None: it failed its check or could
    not run; `notes` says why)."""
    m: int
    n: int
    k: int
    layout: str                     # records.LAYOUTS
    aligned: bool                   # every operand's pointer and leading dimension 16-byte aligned
    precision: str                  # records.PRECISIONS
    times: dict[str, float | None]  # candidate key (kernel [+ TRANSPOSED] [+ SPLIT_K S]) -> ms
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)

    @property
    def key(self) -> tuple:
        return (self.shape, self.layout, self.aligned, self.precision)

    def ranked(self) -> list[tuple[str, float]]:
        """(candidate, ms) of the candidates that ran, fastest first (ties: as listed)."""
        return sorted(((c, t) for c, t in self.times.items() if t is not None), key=lambda ct: ct[1])

    @property
    def winner(self) -> str | None:
        r = self.ranked()
        return r[0][0] if r else None


@dataclass
class Batched:
    """One batch timed on first use (firstuse.tuned_batch): its batch_key and each batched
    candidate's median ms by kernel name, run in `runs` (empty: the precision asked for)."""
    key: str
    runs: str
    times: dict[str, float]

    @property
    def winner(self) -> str:
        return min(self.times, key=lambda c: self.times[c])


def batch_key(batch: tuple[int, int], modes: int, m: int, n: int, k: int, layout: str,
              aligned: bool, precision: str, out_dtype: str) -> str:
    """A batched problem as a table keys it: "B0xB1/modes/MxNxK/layout/aligned/precision/out"."""
    return (f"{batch[0]}x{batch[1]}/{modes}/{m}x{n}x{k}/{layout}/{int(aligned)}/{precision}/"
            f"{out_dtype}")


@dataclass
class Table:
    gpu: str
    arch: str
    cute_gemm: str
    date: str = ""
    sm_count: int = 0
    settings: dict = field(default_factory=dict)
    rows: list[Measured] = field(default_factory=list)
    source: str = ""                # where it was read from (not stored)
    batches: list[Batched] = field(default_factory=list)

    def put(self, row: Measured | Batched) -> None:
        """Add a measured row (or batch), in place of one of the same problem."""
        rows = self.batches if isinstance(row, Batched) else self.rows
        rows[:] = [r for r in rows if r.key != row.key] + [row]

    def to_dict(self) -> dict:
        # each row's winner is for people reading the file; recomputed on load
        return {"schema": SCHEMA, "tool": "cute-gemm tune", "gpu": self.gpu, "arch": self.arch,
                "sm_count": self.sm_count, "cute_gemm": self.cute_gemm, "date": self.date,
                "settings": self.settings,
                "rows": [dict(asdict(r), winner=r.winner) for r in self.rows],
                **({"batches": [asdict(b) for b in self.batches]} if self.batches else {})}


def slug(gpu: str) -> str:
    """A file name for a GPU's name: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"."""
    return re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-") or "gpu"


@functools.cache
def tune_version() -> str:
    """The package version and a digest of the kernels' sources, headers and candidates'
    configurations: a kernel changed under its name makes a tuned table's times another's."""
    h = hashlib.sha256()
    for top in (paths.kernels_dir(), paths.project_include_dir()):
        h.update(paths.tree_digest(top).encode())
    for k in registry.KERNELS:
        if "auto" in k.tags:
            h.update(repr((k.name, k.config, k.tile)).encode())
    return f"{__version__}+{h.hexdigest()[:12]}"


def tuned_path(gpu: str, version: str | None = None) -> Path:
    return cache.cache_dir() / "tune" / f"{slug(gpu)}-{version or tune_version()}.json"


SHIPPED_DIR = Path(__file__).parent.parent / "tables"


def shipped_path(gpu: str) -> Path:
    return SHIPPED_DIR / f"{slug(gpu)}.json"


def write(table: Table, path) -> Path:
    """Write atomically: a reader sees the old table or the new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(table.to_dict(), f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def read(path) -> Table:
    """The table at `path`; OSError or ValueError where it is not a table of this schema."""
    with open(path) as f:
        d = json.load(f)
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise ValueError(f"not a cute-gemm tune table of schema {SCHEMA}")
    try:
        rows = []
        for r in d.get("rows", []):
            times = {str(c): (None if t is None else float(t)) for c, t in dict(r["times"]).items()}
            row = Measured(int(r["m"]), int(r["n"]), int(r["k"]), str(r["layout"]),
                           bool(r["aligned"]), str(r["precision"]), times,
                           {str(c): str(x) for c, x in dict(r.get("notes", {})).items()})
            if (min(row.shape) < 1 or row.layout not in LAYOUTS or row.precision not in PRECISIONS
                    or any(t is not None and not (math.isfinite(t) and t > 0) for t in times.values())):
                raise ValueError(f"a row is not a measurement: {r!r}"[:200])
            rows.append(row)
        batches = [Batched(str(b["key"]), str(b["runs"]),
                           {str(c): float(t) for c, t in dict(b["times"]).items()})
                   for b in d.get("batches", [])]
        if any(not b.times or not all(math.isfinite(t) and t > 0 for t in b.times.values())
               for b in batches):
            raise ValueError("a batch row is not a measurement")
        return Table(str(d["gpu"]), str(d["arch"]), str(d["cute_gemm"]), str(d.get("date", "")),
                     int(d.get("sm_count", 0)), dict(d.get("settings", {})), rows, str(path),
                     batches)
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"a field is missing or of the wrong type ({type(e).__name__}: {e})") from None


def load(path, gpu: str, version: str | None = None) -> Table | None:
    """The table at `path` for GPU `gpu` (and `version`, where given); None without one, with
    an AutoTableWarning where the file is not one of those."""
    path = Path(path)
    try:
        t = read(path)
        if t.gpu != gpu:
            raise ValueError(f"measured on {t.gpu!r}, this is {gpu!r}")
        if version is not None and t.cute_gemm != version:
            raise ValueError(f"made by cute_gemm {t.cute_gemm}, this is {version} "
                             "(run `cute-gemm tune` again)")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        warnings.warn(f"ignoring tune table {path}: {e}", AutoTableWarning, stacklevel=2)
        return None
    return t


_lock = threading.Lock()
_loaded: dict[str, tuple[Table, ...]] = {}     # each GPU's tables read, in the order consulted
GENERATION = 0      # bumped by reset(): what auto's memos derived from the tables is stale


def tables_for(gpu: str) -> tuple[Table, ...]:
    """The GPU's tuned table, then its shipped one, those that exist; read once."""
    with _lock:
        if gpu not in _loaded:
            v = tune_version()
            _loaded[gpu] = tuple(x for x in (load(tuned_path(gpu, v), gpu, v),
                                             load(shipped_path(gpu), gpu)) if x is not None)
        return _loaded[gpu]


def reset() -> None:
    """Forget the tables read: the next lookup reads them again."""
    global GENERATION
    with _lock:
        _loaded.clear()
        GENERATION += 1


def described_device(name: str) -> launch.DeviceInfo:
    """The GPU of a shipped table by its exact name ("NVIDIA H200"), for gemm_choice() without
    it: arch and SMs from the table, shared memory from the arch, ordinal -1 and clock, L2 and
    driver 0. InputError (listing those known) where no shipped table knows it."""
    known = shipped_gpus()
    table = load(shipped_path(name), name) if name in known else None
    cc = (divmod(int(table.arch[3:]), 10) if table is not None and table.arch.startswith("sm_")
          and table.arch[3:].isdigit() else None)
    if table is None or cc not in launch.SMEM_OPTIN or table.sm_count < 1:
        raise InputError(f"device={name!r}: gemm_choice() knows the GPUs of the shipped tune "
                         f"tables by name: {', '.join(map(repr, known)) or 'none'}; on another "
                         "GPU, run it there (device=None)")
    return launch.DeviceInfo(ordinal=-1, name=table.gpu, cc=cc, sm_count=table.sm_count,
                             clock_khz=0, smem_optin=launch.SMEM_OPTIN[cc], smem_per_sm=0,
                             l2_bytes=0, driver_version=0)


def shipped_gpus() -> tuple[str, ...]:
    """The names of the GPUs the shipped tune tables were measured on, sorted."""
    names = set()
    for path in sorted(SHIPPED_DIR.glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            names.add(read(path).gpu)
    return tuple(sorted(names))
