"""Where the kernel sources and the headers they include live. Headers come from installed wheels
(nvidia-cutlass, -cuda-cccl, -cuda-runtime), found without importing them, each overridable by an
environment variable (the cache key then fingerprints the folder)."""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import HeadersNotFound

_PKG = Path(__file__).resolve().parent.parent       # the cute_gemm package


def _data_dir(name: str) -> Path:
    installed = _PKG / name          # inside a wheel: cute_gemm/kernels, cute_gemm/include
    return installed if installed.is_dir() else _PKG.parent / name   # a checkout: ./kernels


def kernels_dir() -> Path:
    return _data_dir("kernels")


def project_include_dir() -> Path:
    return _data_dir("include")


@dataclass(frozen=True)
class HeaderDir:
    role: str          # "cutlass", "cccl", "cuda"
    path: Path
    fingerprint: str   # "pkg:<dist>==<version>" or "dir:<sha256 of names, sizes, mtimes>"


_SPECS = {
    # role: (env var, distribution)
    "cutlass": ("CUTE_GEMM_CUTLASS_INCLUDE", "nvidia-cutlass"),
    "cccl": ("CUTE_GEMM_CCCL_INCLUDE", "nvidia-cuda-cccl"),
    "cuda": ("CUTE_GEMM_CUDA_INCLUDE", "nvidia-cuda-runtime"),
}


def _discover(role: str) -> Path | None:
    """The include folder of `role`'s wheel: cutlass_library's source/include, else the first
    nvidia/cu13/include (or cu12) that holds it (the 'nvidia' namespace spans site folders)."""
    if role == "cutlass":
        spec = importlib.util.find_spec("cutlass_library")
        if spec is None or spec.origin is None:
            return None
        p = Path(spec.origin).parent / "source" / "include"
        return p if (p / "cute").is_dir() else None
    spec = importlib.util.find_spec("nvidia")
    for loc in (spec.submodule_search_locations or []) if spec is not None else []:
        for sub in ("cu13", "cu12"):
            base = Path(loc) / sub / "include"
            if role == "cccl" and (base / "cccl" / "cuda").is_dir():
                return base / "cccl"
            if role == "cuda" and (base / "cuda_runtime_api.h").is_file():
                return base
    return None


def walk_files(top: Path):
    """(relative path, full path) of every file under `top`, in a fixed order, through symlinked
    folders (as -I lookups go). A folder met again (a link loop, a second name) is not descended:
    it comes back once, a folder as its full path, for the caller to record by name."""
    seen: set[str] = set()
    for root, dirs, files in os.walk(top, followlinks=True):
        seen.add(os.path.realpath(root))
        dirs.sort()
        for d in list(dirs):
            full = os.path.join(root, d)
            if os.path.realpath(full) in seen:
                dirs.remove(d)
                yield os.path.relpath(full, top), full
            else:
                seen.add(os.path.realpath(full))
        for f in sorted(files):
            full = os.path.join(root, f)
            if os.path.exists(full):         # a dangling link is no header (until it is)
                yield os.path.relpath(full, top), full


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def include_digest(source: str, top: Path) -> str:
    """sha256 over the path and content of every file under `top` that `source` includes,
    directly or through another. Every #include line counts, inside an #if or not: never
    fewer files than a compile reads, so an edit of a header changes the keys of the sources
    that may include it, and no other. A quoted name is looked up beside its includer first."""
    found: dict[str, bytes] = {}
    todo = [("", m) for m in _INCLUDE.findall(source.encode())]
    while todo:
        here, (quote, name) = todo.pop()
        names = [os.path.normpath(os.path.join(here, name.decode()))] if quote == b'"' else []
        for rel in names + [os.path.normpath(name.decode())]:
            if rel in found:
                break
            if (top / rel).is_file():
                found[rel] = (top / rel).read_bytes()
                todo += [(os.path.dirname(rel), m) for m in _INCLUDE.findall(found[rel])]
                break
    h = hashlib.sha256()
    for rel in sorted(found):
        h.update(rel.encode() + b"\0" + found[rel] + b"\0")
    return h.hexdigest()


def tree_digest(top: Path, contents: bool = True) -> str:
    """sha256 over the relative path and the content (else size and mtime) of every file
    under `top`, symlinked folders included (an #include resolves through them)."""
    h = hashlib.sha256()
    for rel, full in walk_files(top):
        if os.path.isdir(full):               # a second name for a folder met already
            h.update(f"{rel}\0->{os.readlink(full) if os.path.islink(full) else ''}\n".encode())
        elif contents:
            with open(full, "rb") as f:
                h.update(rel.encode() + b"\0" + f.read() + b"\0")
        else:
            st = os.stat(full)
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _dist_versions(stem: str) -> list[tuple[Path, str]]:
    """(real folder, version) of each STEM-VERSION.dist-info on sys.path, each folder once."""
    out, seen = [], set()
    for entry in sys.path:
        d = Path(os.path.realpath(entry or "."))
        if d.is_dir() and d not in seen:
            seen.add(d)
            out += [(d, info.name[len(stem) + 1:-len(".dist-info")])
                    for info in d.glob(f"{stem}-*.dist-info")]
    return out


def _wheel_version(dist: str, found: Path) -> str:
    """The version of wheel `dist`, which installed `found`: from its dist-info folder above
    `found` (a glob: importlib.metadata costs ~25 ms), else importlib.metadata's answer."""
    above = {os.path.realpath(p) for p in found.parents}
    mine = [v for d, v in _dist_versions(re.sub(r"[-_.]+", "_", dist).lower()) if str(d) in above]
    if len(mine) == 1:
        return mine[0]
    import importlib.metadata
    return importlib.metadata.version(dist)


@functools.lru_cache(maxsize=None)
def header_dirs() -> tuple[HeaderDir, ...]:
    """The external include folders, in -I order, each with its cache fingerprint."""
    out = []
    for role, (env, dist) in _SPECS.items():
        override = os.environ.get(env)
        if override:
            p = Path(override)
            if not p.is_dir():
                raise HeadersNotFound(f"{env}={override!r} is not a directory")
            out.append(HeaderDir(role, p, "dir:" + tree_digest(p, contents=False)))
            continue
        p = _discover(role)
        if p is None:
            raise HeadersNotFound(
                f"headers for {role!r} not found: install the wheel {dist!r} "
                f"(pip install cute_gemm pulls it in) or set {env} to an include folder")
        out.append(HeaderDir(role, p, f"pkg:{dist}=={_wheel_version(dist, p)}"))
    return tuple(out)


# pip's NVRTC: the wheel of each CUDA major version, and where it puts libnvrtc
_NVRTC_WHEELS = {13: ("nvidia_cuda_nvrtc", "nvidia/cu13/lib/libnvrtc.so.13"),
                 12: ("nvidia_cuda_nvrtc_cu12", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12")}


def _maps_libnvrtc() -> bool | None:
    """Whether a libnvrtc is mapped into this process (None: cannot tell)."""
    try:
        with open("/proc/self/maps") as f:
            return "libnvrtc" in f.read()
    except OSError:
        return None


def nvrtc_wheel_version() -> tuple[int, int] | None:
    """(major, minor) of the NVRTC cuda.bindings will load, from pip's wheel, without loading it
    (~80 ms). Only where certain: no libnvrtc mapped yet, and exactly one nvidia-cuda-nvrtc wheel
    of cuda-bindings' major version with its libnvrtc beside it on sys.path. Else None."""
    bindings = _dist_versions("cuda_bindings") if _maps_libnvrtc() is False else []
    if not bindings:
        return None
    major = int(bindings[0][1].split(".")[0])
    stem, lib = _NVRTC_WHEELS.get(major, (None, None))
    found = _dist_versions(stem) if stem else []
    version = found[0][1].split(".") if len(found) == 1 and (found[0][0] / lib).is_file() else []
    return (major, int(version[1])) if version and int(version[0]) == major else None
