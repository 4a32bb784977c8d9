"""Two-level cubin cache: in memory (per process) and on disk (per user).

The disk key is a sha256 over everything that changes the binary (cache_key). An entry (CUBIN,
NVRTC log, optionally zlib'd PTX) is renamed into place whole and its sha256 checked on every
read: a damaged entry is recompiled, never loaded. A per-key file lock makes a key compile once
across processes; an unwritable cache dir warns once and keeps results in memory.
CUTE_GEMM_CACHE_DIR moves the disk level, CUTE_GEMM_DISABLE_CACHE=1 turns it off,
CUTE_GEMM_CACHE_MAX_MB bounds it (evict).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import secrets
import struct
import sys
import threading
import zlib
import warnings
from pathlib import Path

import platformdirs

from . import compile as _compile
from . import paths
from .. import registry
from ..base.errors import InputError

FORMAT = 2          # 2: the payload has a length-prefixed CUBIN and an optional PTX
MAX_MB = 4096       # the disk level's default bound: some 4x the GPU suite's entries for one arch
KEEP_SHARE = 0.9    # an eviction leaves the disk level at this share of its bound
MAGIC = b"CGCUBIN\x01"
_HEADER = len(MAGIC) + 32


def cache_dir() -> Path:
    return Path(os.environ.get("CUTE_GEMM_CACHE_DIR")
                or platformdirs.user_cache_dir("cute_gemm", appauthor=False))


def disk_enabled() -> bool:
    return os.environ.get("CUTE_GEMM_DISABLE_CACHE", "").strip().lower() not in ("1", "true", "yes", "on")


def _include_digest(source: str) -> str:
    # not memoised: the headers are a few KB, and an edit during a long session must change the key
    return paths.include_digest(source, paths.project_include_dir())


def cache_key(kernel, arch: str, source: str, opts: list[str]) -> str:
    """sha256 of the text NVRTC compiles, the files under include/ it includes, the header
    wheels' versions (or an override folder's fingerprint), the options but -I, the arch and
    the NVRTC version."""
    material = {"format": FORMAT, "source": source, "include": _include_digest(source),
                "headers": [h.fingerprint for h in paths.header_dirs()],
                "options": [o for o in opts if not o.startswith("-I")], "arch": arch,
                "nvrtc": list(_compile.nvrtc_key_version())}
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class Compiled:
    kernel: str
    arch: str
    key: str
    cubin: bytes
    log: str
    compile_seconds: float   # of the NVRTC run that produced it
    origin: str              # "memory" | "disk" | "compiled"
    ptx: str | None = None   # the PTX of the same NVRTC run, if asked for (get(..., ptx=True))
    entries: tuple[str, ...] = ()   # the entry points it holds (all the kernel's, or a selection)
    whole: bool = True       # it holds every entry point of the kernel (no selection)

    @functools.cached_property      # (read once: the resolver asks on every first-call check)
    def calls(self) -> tuple[str, ...]:
        """Device functions its code calls, not inlined (compile.called_functions). A whole
        kernel's module may keep calls that one entry's own compile inlines
        (docs/guide/cache.md)."""
        return _compile.called_functions(self.log)

    @property
    def resources(self) -> dict[str, _compile.Resources]:
        """ptxas's report from the NVRTC log; the CUBIN's own ELF records where it is absent."""
        return _compile.parse_resources(self.log) or _compile.resources_from_cubin(self.cubin)


def _pack(meta: dict, cubin: bytes, ptx: str | None) -> bytes:
    m = json.dumps(meta).encode()
    # PTX is text 5-10x larger than it compresses to; level 1 is the fast one
    z = zlib.compress(ptx.encode(), 1) if ptx is not None else b""
    payload = struct.pack("<II", len(m), len(cubin)) + m + cubin + z
    return MAGIC + hashlib.sha256(payload).digest() + payload


def _unpack(blob: bytes) -> tuple[dict, bytes, str | None] | None:
    """(meta, cubin, ptx or None); None for anything that is not a complete, intact entry."""
    if len(blob) < _HEADER + 8 or not blob.startswith(MAGIC):
        return None
    # a view, not slices: a whole kernel's entry is several MB, and each slice is a copy
    digest, payload = blob[len(MAGIC):_HEADER], memoryview(blob)[_HEADER:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    n, nc = struct.unpack_from("<II", payload)
    try:
        meta = json.loads(bytes(payload[8:8 + n]))
        z = payload[8 + n + nc:]
        ptx = zlib.decompress(z).decode() if len(z) else None
    except (ValueError, zlib.error):
        return None
    cubin = bytes(payload[8 + n:8 + n + nc])
    return (meta, cubin, ptx) if len(cubin) == nc > 0 else None


def entry_path(key: str) -> Path:
    return cache_dir() / f"{key}.cubin"


def _read(key: str, ptx: bool = False) -> tuple[dict, bytes, str | None] | None:
    """The intact entry for `key`, marked used (its mtime: what eviction keeps longest); None
    also where `ptx` is asked for and it has none."""
    path = entry_path(key)
    try:
        found = _unpack(path.read_bytes())
    except OSError:
        return None
    if found is None or (ptx and found[2] is None):
        return None
    with contextlib.suppress(OSError):      # (a read-only cache dir: no mark, no harm)
        os.utime(path)
    return found


def max_bytes() -> int:
    """The disk level's bound in bytes (CUTE_GEMM_CACHE_MAX_MB; 0: none)."""
    v = os.environ.get("CUTE_GEMM_CACHE_MAX_MB", "").strip()
    try:
        mb = float(v) if v else MAX_MB
    except ValueError:
        raise InputError(f"CUTE_GEMM_CACHE_MAX_MB must be a number of megabytes, got {v!r}") from None
    return max(0, int(mb * (1 << 20)))


def evict(limit: int | None = None) -> int:
    """Delete the entries used longest ago (a read marks an entry used) until the disk level
    holds at most KEEP_SHARE of `limit` bytes (default max_bytes()), where it holds more; return
    how many went. Another process reading one meanwhile compiles it again (a deleted file
    cannot be read half)."""
    limit = max_bytes() if limit is None else limit
    d = cache_dir()
    found = []
    for p in d.glob("*.cubin"):
        with contextlib.suppress(OSError):
            st = p.stat()
            found.append((st.st_mtime, st.st_size, p))
    total, n = sum(size for _, size, _ in found), 0
    if limit and total > limit:
        for _, size, p in sorted(found, key=lambda x: x[0]):
            if total <= KEEP_SHARE * limit:
                break
            with contextlib.suppress(OSError):
                p.unlink()
                total -= size
                n += 1
    return n


class CacheWarning(UserWarning):
    """The disk cache cannot be written: compiles still work, results stay in memory."""


def _unwritable(d: Path, e: OSError) -> None:
    """Warn once per cache dir per process; compiling goes on without the disk level."""
    with _mem_lock:
        if str(d) in _warned_dirs:
            return
        _warned_dirs.add(str(d))
    warnings.warn(f"cute_gemm: cannot write the cubin cache {d} ({type(e).__name__}: {e}); "
                  "compiling anyway and keeping cubins in memory for this process only. Point "
                  "CUTE_GEMM_CACHE_DIR at a writable folder (or set CUTE_GEMM_DISABLE_CACHE=1).",
                  CacheWarning, stacklevel=4)


def _write(key: str, meta: dict, cubin: bytes, ptx: str | None) -> None:
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    # os.open with 0o666 lets the kernel apply the umask (and a default ACL), as for any
    # file the user creates; mkstemp's 0600 would hide a shared cache dir's entries
    blob = _pack(meta, cubin, ptx)
    tmp = d / f".{key[:16]}.{os.getpid()}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, entry_path(key))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    limit = max_bytes()
    if limit:               # a stat per entry: little beside the compile that came before
        evict(limit)


def _key_lock(key: str):
    """A lock across processes while `key` compiles, held by a `with`; none (and a warning) where
    the dir cannot hold one: two processes may then both compile the key, safely (atomic rename)."""
    import filelock     # here: a process reading only cached cubins need not import it
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        return filelock.FileLock(d / f"{key}.lock").acquire()   # waits for the other compile
    except OSError as e:                    # read-only, foreign or misplaced cache dir
        _unwritable(d, e)
        return contextlib.nullcontext()


_mem_lock = threading.Lock()    # guards the process-wide state below
_memory: dict[str, Compiled] = {}
_key_locks: dict[str, threading.Lock] = {}
_apart_locks: dict[tuple, threading.Lock] = {}
_warned_dirs: set[str] = set()


def _lock_of(locks: dict, key) -> threading.Lock:
    with _mem_lock:
        return locks.setdefault(key, threading.Lock())


def _memory_hit(key: str, ptx: bool) -> Compiled | None:
    hit = _memory.get(key)
    if hit is None or (ptx and hit.ptx is None):
        return None
    return dataclasses.replace(hit, origin="memory")


@dataclasses.dataclass(frozen=True)
class _Job:
    """What one get() or lookup() asks for: the text, options and key of one compile."""
    kernel: object
    arch: str
    source: str
    opts: list
    key: str
    entries: tuple[str, ...] | None      # compile.select_entries: None is the whole kernel

    @classmethod
    def of(cls, kernel, arch, extra_options, entries) -> "_Job":
        arch = _compile.normalize_arch(arch)
        entries = _compile.select_entries(kernel, entries)
        source = _compile.read_source(kernel, entries)
        opts = _compile.options(kernel, arch, extra_options)
        return cls(kernel, arch, source, opts, cache_key(kernel, arch, source, opts), entries)

    def compiled(self, cubin: bytes, log: str, seconds: float, origin: str,
                 ptx: str | None) -> Compiled:
        return Compiled(self.kernel.name, self.arch, self.key, cubin, log, seconds, origin, ptx,
                        self.entries or self.kernel.entries, self.entries is None)

    def from_disk(self, found: tuple[dict, bytes, str | None]) -> Compiled:
        meta, cubin, ptx = found
        return self.compiled(cubin, meta.get("log", ""), meta.get("seconds", 0.0), "disk", ptx)

    def compile(self, ptx: bool) -> Compiled:
        cubin, text, log, secs = _compile.run_nvrtc(self.kernel, self.source, self.opts, want_ptx=ptx)
        text = text.rstrip(b"\0").decode(errors="replace") if text is not None else None
        return self.compiled(cubin, log, secs, "compiled", text)


def get(kernel, arch: str | int, extra_options: tuple[str, ...] = (), *, ptx: bool = False,
        entries: tuple[str, ...] | None = None) -> Compiled:
    """The cubin of `kernel` for `arch`, from memory, disk, or a fresh NVRTC compile; with
    ptx=True also its PTX (an entry cached without it is compiled again). `entries`: only these
    entry points (compile.select_entries), a cubin and a cache entry of their own.
    Thread-safe: one compile per key per process, different keys compile concurrently."""
    job = _Job.of(kernel, arch, extra_options, entries)
    hit = _memory_hit(job.key, ptx)
    if hit is None:
        with _lock_of(_key_locks, job.key):
            hit = _memory_hit(job.key, ptx)     # another thread's compile of it may have ended
            if hit is None:
                hit = _from_disk_or_compiled(job, ptx)
                with _mem_lock:
                    _memory[job.key] = hit
    return hit


def lookup(kernel, arch: str | int, extra_options: tuple[str, ...] = (), *,
           entries: tuple[str, ...] | None = None) -> Compiled | None:
    """What get() would return from memory or disk, or None where it would have to compile:
    never runs NVRTC (e.g. to prefer a whole-kernel cubin that `cute-gemm compile` left on
    disk over compiling one entry point). A disk hit is kept in memory."""
    job = _Job.of(kernel, arch, extra_options, entries)
    hit = _memory_hit(job.key, False)
    if hit is not None or not disk_enabled():
        return hit
    found = _read(job.key)
    if found is None:
        return None
    result = job.from_disk(found)
    with _mem_lock:
        _memory.setdefault(job.key, result)
    return result


def _from_disk_or_compiled(job: _Job, ptx: bool) -> Compiled:
    if not disk_enabled():
        return job.compile(ptx)
    found = _read(job.key, ptx)
    if found is None:
        with _key_lock(job.key):
            found = _read(job.key, ptx)     # another process may have finished meanwhile
            if found is None:
                c = job.compile(ptx)
                meta = {"kernel": job.kernel.name, "arch": job.arch, "log": c.log,
                        "seconds": c.compile_seconds, "options": job.opts}
                try:
                    _write(job.key, meta, c.cubin, c.ptx)
                except OSError as e:         # read-only, foreign or misplaced cache dir
                    _unwritable(cache_dir(), e)
                return c
    return job.from_disk(found)


def _prefetch_one(name: str, arch: str, ptx: bool, directory: str,
                  entries: tuple[str, ...] | None = None) -> tuple[str, float]:
    # runs in a spawned worker: pin the dir the parent chose, whatever its env does later
    os.environ["CUTE_GEMM_CACHE_DIR"] = directory
    c = get(registry.find(name), arch, ptx=ptx, entries=entries)
    clear_memory()                          # the parent reads the entry from disk
    return c.origin, c.compile_seconds


def cpu_count() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_workers() -> int:
    """One worker per usable CPU, at most one per 3 GiB free: NVRTC peaks at ~2.7 GB (cute_pipelined)."""
    cpus = cpu_count()
    with contextlib.suppress(OSError, StopIteration, ValueError), open("/proc/meminfo") as f:
        avail_kb = next(int(ln.split()[1]) for ln in f if ln.startswith("MemAvailable:"))
        cpus = min(cpus, max(1, avail_kb // (3 << 20)))
    return max(1, cpus)


# compile_apart's child: entry points of one kernel (comma-separated; none: the whole kernel)
# into the disk cache, nothing printed
_APART = ("import json, os, sys\n"
          "sys.path[:0] = json.loads(os.environ['CUTE_GEMM_APART_PATH'])\n"
          "from cute_gemm.build import cache\n"
          "cache._prefetch_one(sys.argv[1], sys.argv[2], False, sys.argv[3],\n"
          "                    tuple(sys.argv[4].split(',')) if sys.argv[4] else None)\n")


def compile_apart(kernel, arch: str, entries: tuple[str, ...], least: int = 2) -> None:
    """Compile each of `entries` alone into the disk cache, in fresh interpreters side by side
    (docs/design/first_call.md); the caller reads them with lookup(..., entries=(e,)), and a
    failed child's CompileError comes from the caller's own get(). Starts nothing with fewer
    than `least` missing or, unless least is 1 (rounds), more than default_workers().
    Not multiprocessing: a spawned worker would run the caller's unguarded __main__ again."""
    with _lock_of(_apart_locks, (kernel.name, _compile.normalize_arch(arch), tuple(entries))):
        todo = _missing_apart(kernel, arch, entries)
        workers = default_workers()
        if len(todo) < least or (least > 1 and len(todo) > workers):
            return
        for i in range(0, len(todo), workers):
            batch = todo[i:i + workers]
            running = _spawn(kernel, arch, [(e,) for e in batch])
            for p in running:
                p.wait()
            if len(running) < len(batch):       # no interpreter to start: the caller
                return                          # compiles in-process


def spawn_apart(kernel, arch: str, entries: tuple[str, ...]) -> list:
    """compile_apart's first round started, not waited for (its subprocess.Popen children): started
    from the calling thread, they finish even if this process exits first (resolve.Loaded.ready)."""
    return _spawn(kernel, arch, [(e,) for e in _missing_apart(kernel, arch, entries)[:default_workers()]])


def spawn_whole(kernel, arch: str) -> list:
    """The whole kernel compiled as one program by a child, started, not waited for (as
    spawn_apart's); none where it is cached or no child can hand it back."""
    if not _children_can() or lookup(kernel, arch) is not None:
        return []
    return _spawn(kernel, arch, [()])


def _children_can() -> bool:
    """Whether a child can compile for this process: the disk level is how it hands its cubin
    back, and an embedding host's binary (uwsgi, or none) is no interpreter to start."""
    return disk_enabled() and os.path.basename(sys.executable).startswith("python")


def _missing_apart(kernel, arch: str, entries) -> list[str]:
    """Those of `entries` not cached each alone, for children to compile; none where no child
    can (_children_can)."""
    if not _children_can():
        return []
    return [e for e in entries if lookup(kernel, arch, entries=(e,)) is None]


def _spawn(kernel, arch: str, selections) -> list:
    """One compile_apart child per selection of entry points (empty: the whole kernel),
    started; those that could be."""
    import subprocess               # here: `import cute_gemm` stays without it
    env = dict(os.environ, CUTE_GEMM_APART_PATH=json.dumps([p for p in sys.path if p]))
    argv = [sys.executable, "-c", _APART, kernel.name, _compile.normalize_arch(arch), str(cache_dir())]
    running: list = []
    with contextlib.suppress(OSError):
        for sel in selections:
            running.append(subprocess.Popen([*argv, ",".join(sel)], env=env, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return running


class Prefetch:
    """Registered kernels compiled into the disk cache by a pool of spawned processes, so that a
    later get() here is a disk read. Costliest first (CuTe kernels, then more entry points), which
    keeps the pool's tail short; nothing already on disk, nothing without the disk level."""

    def __init__(self, jobs, workers: int | None = None):
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing
        # a job: (name, arch, ptx) or (name, arch, ptx, entries): a selection of entry points
        want: dict[tuple, bool] = {}
        for name, arch, ptx, *sel in jobs:
            k = (name, _compile.normalize_arch(arch), sel[0] if sel else None)
            want[k] = want.get(k, False) or ptx
        self.futures: dict[tuple, object] = {}
        self._pool = None
        if not disk_enabled():
            return
        todo = []
        for (name, arch, sel), ptx in want.items():
            job = _Job.of(registry.find(name), arch, (), sel)
            if _read(job.key, ptx) is None:
                sel, k = job.entries, job.kernel
                todo.append((k.family != "cute", -len(sel or k.entries), name, arch, ptx, sel or ()))
        if not todo:
            return
        # spawn, not fork: the parent may hold threads and CUDA state
        self._pool = ProcessPoolExecutor(min(workers or default_workers(), len(todo)),
                                         mp_context=multiprocessing.get_context("spawn"))
        directory = str(cache_dir())
        for *_, name, arch, ptx, sel in sorted(todo):
            self.futures[(name, arch, sel or None)] = self._pool.submit(
                _prefetch_one, name, arch, ptx, directory, sel or None)

    def wait(self, name: str, arch: str, entries: tuple[str, ...] | None = None) -> None:
        """Block until (name, arch, entries) is done; a failure raises in the caller's own get()."""
        sel = _compile.select_entries(registry.find(name), entries)
        f = self.futures.get((name, _compile.normalize_arch(arch), sel))
        if f is not None:
            f.exception()

    def close(self) -> None:
        """Stop the pool; a compile still running (nobody waits for it) is killed, not waited on."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if all(f.done() for f in self.futures.values()):
            pool.shutdown(wait=True)
            return
        # ProcessPoolExecutor has no public terminate before Python 3.14 (and forgets its
        # workers at shutdown); one that outlives SIGTERM is killed: a wait on it once never ended
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)


def clear_memory() -> None:
    with _mem_lock:
        _memory.clear()


def info() -> dict:
    d = cache_dir()
    entries = list(d.glob("*.cubin"))
    return {"dir": str(d), "disk_enabled": disk_enabled(), "entries": len(entries),
            "bytes": sum(p.stat().st_size for p in entries), "max_bytes": max_bytes(),
            "memory_entries": len(_memory)}


def clear() -> int:
    """Delete every disk entry (and the in-memory level); return how many files went."""
    clear_memory()
    d, n = cache_dir(), 0
    for p in [*d.glob("*.cubin"), *d.glob("*.lock"), *d.glob(".*.tmp")]:
        with contextlib.suppress(OSError):
            p.unlink()
            n += p.suffix == ".cubin"
    return n
