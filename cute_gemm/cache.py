"""Two-level cubin cache: in memory (per process) and on disk (per user).

Disk key = sha256 over everything that changes the binary: the kernel source, the
contents of every file under include/ (ours), the exact versions of the header wheels
(or a fingerprint of an overriding folder), the NVRTC options (include paths replaced
by those fingerprints), the arch and the NVRTC version.

Entries are written to a temporary file and renamed into place (atomic on POSIX);
each carries a sha256 of its payload that is checked on every read, so a truncated or
corrupt entry is recompiled, never loaded. Concurrent processes take a per-key
advisory lock (fcntl) while compiling, so a key is compiled once and readers never see
half a file.

Environment: CUTE_GEMM_CACHE_DIR moves the disk cache; CUTE_GEMM_DISABLE_CACHE=1
turns the disk level off (the in-memory level stays).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import struct
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from . import compile as _compile
from . import paths

FORMAT = 1
MAGIC = b"CGCUBIN\x01"
_HEADER = len(MAGIC) + 32


def cache_dir() -> Path:
    env = os.environ.get("CUTE_GEMM_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cute_gemm"


def disk_enabled() -> bool:
    return os.environ.get("CUTE_GEMM_DISABLE_CACHE", "").strip().lower() not in ("1", "true", "yes", "on")


@functools.lru_cache(maxsize=None)
def _include_digest() -> str:
    h = hashlib.sha256()
    root = paths.project_include_dir()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def cache_key(kernel, arch: str, source: str, opts: list[str]) -> str:
    keyed_opts = [o for o in opts if not o.startswith("-I")]
    material = {
        "format": FORMAT,
        "source": source,
        "include": _include_digest(),
        "headers": [h.fingerprint for h in paths.header_dirs()],
        "options": keyed_opts,
        "arch": arch,
        "nvrtc": list(_compile.nvrtc_version()),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Compiled:
    kernel: str
    arch: str
    key: str
    cubin: bytes
    log: str
    compile_seconds: float   # of the NVRTC run that produced it
    origin: str              # "memory" | "disk" | "compiled"

    @property
    def resources(self) -> dict[str, _compile.Resources]:
        """ptxas's report from the NVRTC log; the CUBIN's own ELF records where it is absent."""
        res = _compile.parse_resources(self.log)
        return res or _compile.resources_from_cubin(self.cubin)


def _pack(meta: dict, cubin: bytes) -> bytes:
    m = json.dumps(meta).encode()
    payload = struct.pack("<I", len(m)) + m + cubin
    return MAGIC + hashlib.sha256(payload).digest() + payload


def _unpack(blob: bytes) -> tuple[dict, bytes] | None:
    """None for anything that is not a complete, intact entry."""
    if len(blob) < _HEADER + 4 or not blob.startswith(MAGIC):
        return None
    digest, payload = blob[len(MAGIC):_HEADER], blob[_HEADER:]
    if hashlib.sha256(payload).digest() != digest:
        return None
    (n,) = struct.unpack_from("<I", payload)
    try:
        meta = json.loads(payload[4:4 + n])
    except ValueError:
        return None
    cubin = payload[4 + n:]
    return (meta, cubin) if cubin else None


def entry_path(key: str) -> Path:
    return cache_dir() / f"{key}.cubin"


def _read(key: str) -> tuple[dict, bytes] | None:
    try:
        blob = entry_path(key).read_bytes()
    except OSError:
        return None
    return _unpack(blob)


def _write(key: str, meta: dict, cubin: bytes) -> None:
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{key[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_pack(meta, cubin))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, entry_path(key))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _key_lock(key: str):
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX: atomic rename still protects readers
        yield
        return
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    with open(d / f"{key}.lock", "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


_memory: dict[str, Compiled] = {}
_mem_lock = threading.Lock()


def get(kernel, arch: str | int, extra_options: tuple[str, ...] = ()) -> Compiled:
    """The cubin of `kernel` for `arch`, from memory, disk, or a fresh NVRTC compile."""
    arch = _compile.normalize_arch(arch)
    source = _compile.read_source(kernel)
    opts = _compile.options(kernel, arch, extra_options)
    key = cache_key(kernel, arch, source, opts)
    hit = _memory.get(key)
    if hit is not None:
        return Compiled(hit.kernel, hit.arch, key, hit.cubin, hit.log, hit.compile_seconds, "memory")

    with _mem_lock:  # one compile per key per process
        hit = _memory.get(key)
        if hit is not None:
            return Compiled(hit.kernel, hit.arch, key, hit.cubin, hit.log, hit.compile_seconds, "memory")
        result = _get_uncached(kernel, arch, source, opts, key)
        _memory[key] = result
        return result


def _get_uncached(kernel, arch, source, opts, key) -> Compiled:
    if not disk_enabled():
        cubin, log, secs = _compile.compile_source(kernel, arch, source, opts)
        return Compiled(kernel.name, arch, key, cubin, log, secs, "compiled")
    found = _read(key)
    if found is None:
        with _key_lock(key):
            found = _read(key)              # another process may have finished meanwhile
            if found is None:
                cubin, log, secs = _compile.compile_source(kernel, arch, source, opts)
                meta = {"kernel": kernel.name, "arch": arch, "log": log, "seconds": secs,
                        "options": opts}
                try:
                    _write(key, meta, cubin)
                except OSError:
                    pass                     # a read-only cache dir must not break compiling
                return Compiled(kernel.name, arch, key, cubin, log, secs, "compiled")
    meta, cubin = found
    return Compiled(kernel.name, arch, key, cubin, meta.get("log", ""), meta.get("seconds", 0.0), "disk")


def clear_memory() -> None:
    with _mem_lock:
        _memory.clear()


def info() -> dict:
    d = cache_dir()
    entries = sorted(d.glob("*.cubin")) if d.is_dir() else []
    return {
        "dir": str(d),
        "disk_enabled": disk_enabled(),
        "entries": len(entries),
        "bytes": sum(p.stat().st_size for p in entries),
        "memory_entries": len(_memory),
    }


def clear() -> int:
    """Delete every disk entry (and the in-memory level); return how many files went."""
    clear_memory()
    d = cache_dir()
    n = 0
    if d.is_dir():
        for p in list(d.glob("*.cubin")) + list(d.glob("*.lock")) + list(d.glob(".*.tmp")):
            with contextlib.suppress(OSError):
                p.unlink()
                n += p.suffix == ".cubin"
    return n
