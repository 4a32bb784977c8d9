"""NVRTC through cuda-python: kernel source -> CUBIN for one exact arch.

cuda.bindings.nvrtc (the 1:1 C API), not cuda.core's Program: the exact option list in the cache
key and in errors, the log on success (ptxas -v), no current device needed when the arch is given.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import struct
import sys
import threading
import time
from dataclasses import dataclass

from ..base.errors import CompileError, CuteGemmError, InputError, NvrtcNotFound, UnknownEntryError
from ..base.setting import Setting
from . import paths

STD = "--std=c++17"
# CUTE_GEMM_LINEINFO=1: source lines in the cubin, for ncu and compute-sanitizer; off, a
# CuTe kernel's cubin is 2.4-4x smaller (its PTX text and line tables), which every
# process reads, checks and loads at its first launch of it
lineinfo = Setting("CUTE_GEMM_LINEINFO", ("0", "1"))


@functools.lru_cache(maxsize=None)
def _nvrtc():
    try:        # here: `import cute_gemm` does not load NVRTC
        from cuda.bindings import nvrtc
    except ImportError as e:    # a broken install: named, with the fix
        raise NvrtcNotFound("cuda-python (cuda.bindings) cannot be imported: pip install "
                            f"cuda-python ({e})") from e
    try:    # the bindings load libnvrtc at their first call: a library that is not there is
        nvrtc.nvrtcVersion()   # the user's set-up, named here (not an error of ours)
    except RuntimeError as e:   # (the advice first: the CLI prints a message's first line)
        raise NvrtcNotFound(f"NVRTC cannot be loaded: install the wheel 'nvidia-cuda-nvrtc' "
                            f"(pip install cute_gemm pulls it in); {e}") from e
    return nvrtc


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> tuple[int, int]:
    nvrtc = _nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, err, "nvrtcVersion")
    return (major, minor)


@functools.lru_cache(maxsize=None)
def nvrtc_key_version() -> tuple[int, int]:
    """The NVRTC version a cache key names: read from pip's NVRTC wheel where that is certain
    (paths.nvrtc_wheel_version), so that a cache hit does not load NVRTC; else nvrtc_version().
    Fixed at its first answer: a process's keys never change under it."""
    if "cuda.bindings.nvrtc" not in sys.modules:
        v = paths.nvrtc_wheel_version()
        if v is not None:
            return v
    return nvrtc_version()


def _check(nvrtc, err, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise CuteGemmError(f"{what} failed: {err.name} ({msg.decode(errors='replace')})")


_ARCH_FORMS = "'sm_90', 'sm_90a', 'compute_90', '90', 90 or (9, 0)"


def normalize_arch(arch: str | int | tuple[int, int]) -> str:
    """Any of _ARCH_FORMS -> 'sm_90' ('sm_90a' is arch-specific: wgmma). Anything else raises
    InputError (a ValueError) naming the accepted forms."""
    if isinstance(arch, tuple) and len(arch) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in arch):
        return f"sm_{arch[0]}{arch[1]}"
    m = (re.fullmatch(r"(sm_|compute_|sm-?|compute-?)?(\d{2,3}[a-z]?)", str(arch).strip().lower())
         if isinstance(arch, (str, int)) and not isinstance(arch, bool) else None)
    if m and m.group(1) in (None, "sm_", "compute_"):
        return f"sm_{m.group(2)}"
    hint = f" (did you mean 'sm_{m.group(2)}'?)" if m else ""    # sm90, sm-90, compute90
    raise InputError(f"unknown arch {arch!r}{hint}: use one of the forms {_ARCH_FORMS}")


def select_entries(kernel, entries) -> tuple[str, ...] | None:
    """The entry points a compile of `kernel` is limited to, in the kernel's order; None for the
    whole kernel (no selection, or all of them). UnknownEntryError for a foreign name or none."""
    if entries is None:
        return None
    entries = (entries,) if isinstance(entries, str) else entries
    own = kernel.entries
    bad = [e for e in entries if e not in own]
    if bad or not entries:
        what = (f"has no entry point {', '.join(map(repr, bad))}" if bad else
                "cannot be compiled with no entry point")
        raise UnknownEntryError(f"kernel {kernel.name!r} {what}; its entry points: {', '.join(own)}")
    chosen = tuple(e for e in own if e in entries)
    return None if len(chosen) == len(own) else chosen


def options(kernel, arch: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The NVRTC options for one kernel and arch (in the cache key): the common flags, then the
    kernel's own. No -D: what configures a kernel is in its prelude (read_source)."""
    opts = [STD, f"-arch={arch}", "-default-device", *(["-lineinfo"] if lineinfo() == "1" else []),
            "--ptxas-options=-v", f"-I{paths.project_include_dir()}",
            *(f"-I{h.path}" for h in paths.header_dirs())]
    return opts + list(kernel.options) + list(extra)


def prelude(kernel, entries: tuple[str, ...] | None = None) -> str:
    """What NVRTC compiles in front of the kernel's source: its config's C++ (KernelConfig.cpp)
    and epilogue's, the entry selection (entries.cuh's CG_ENTRIES, a CG_WANT_<entry> each:
    `entries`, or the whole kernel's, for a source defines other configurations' entry points
    too: cute_mma_sm80's is 17 of c4's 100), then a #line, so that compiler messages name the
    source's own lines."""
    cfg = kernel.config.cpp(kernel.name) if kernel.config is not None else ""
    if kernel.epilogue is not None:
        cfg += kernel.epilogue.cpp()
    sel = "#define CG_ENTRIES\n" + "".join(f"#define CG_WANT_{e} 1\n" for e in entries or kernel.entries)
    return f'{cfg}{sel}#line 1 "{kernel.source}"\n'


def read_source(kernel, entries: tuple[str, ...] | None = None) -> str:
    """The text NVRTC compiles (and the cache key hashes): the prelude, then the kernel's source."""
    path = paths.kernels_dir() / kernel.source
    try:
        return prelude(kernel, entries) + path.read_text()
    except OSError as e:
        raise CuteGemmError(f"kernel {kernel.name!r}: cannot read source {path}: {e}") from e


@dataclass(frozen=True)
class Resources:
    """What ptxas reported for one entry point."""
    registers: int
    smem_bytes: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int
    # ptxas made the entry's wgmmas wait for each other (C7511 / C7514: register pressure,
    # or wgmmas where it cannot keep a batch in flight), a silent loss of a fifth or more
    wgmma_serialized: bool = False


# an entry's report: its name, what precedes its "Used" line (the stack frame), that line's tail
_RE_ENTRY = re.compile(r"Compiling entry function '(\w+)'((?:(?!Compiling entry)[\s\S])*?)"
                       r"Used (\d+) registers(.*)")
_RE_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_SERIAL = re.compile(r"wgmma\.mma_async instructions are serialized.*function '(\w+)'")
# a function ptxas compiled (an entry point, or a call NVVM did not inline), and the entries
_RE_FUNCTION = re.compile(r"Function properties for (\S+)")
_RE_ENTRY_NAME = re.compile(r"Compiling entry function '(\w+)'")


def called_functions(log: str) -> tuple[str, ...]:
    """The device functions ptxas compiled apart from the entry points (ptxas -v's "Function
    properties" of a name that is no entry): calls NVVM left in the code, not inlined."""
    entries = set(_RE_ENTRY_NAME.findall(log))
    return tuple(dict.fromkeys(f for f in _RE_FUNCTION.findall(log) if f not in entries))


def parse_resources(log: str) -> dict[str, Resources]:
    """Parse ptxas -v output (in the NVRTC log) into per-entry resources."""
    serialized = set(_RE_SERIAL.findall(log))
    out = {}
    for name, before, regs, tail in _RE_ENTRY.findall(log):
        stack = _RE_STACK.search(before)
        smem = re.search(r"(\d+) bytes smem", tail)
        out[name] = Resources(int(regs), int(smem.group(1)) if smem else 0,
                              *(map(int, stack.groups()) if stack else (0, 0, 0)), name in serialized)
    return out


def _elf(cubin: bytes):
    """({section name: (offset, size)}, a function giving the symbol names by index) of a
    CUBIN's ELF64; None for anything else."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:     # ELF64 only
        return None
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]

    def cstr(start: int) -> str:
        return cubin[start:cubin.index(b"\0", start)].decode()

    def syms() -> dict[int, str]:
        symtab = next((s for s in secs if s[1] == 2), None)       # SHT_SYMTAB
        return {} if symtab is None else {
            i: cstr(secs[symtab[6]][4] + struct.unpack_from("<I", cubin, symtab[4] + 24 * i)[0])
            for i in range(symtab[5] // 24)}
    return {cstr(secs[shstrndx][4] + sec[0]): (sec[4], sec[5]) for sec in secs}, syms


def _info(cubin: bytes, sec: tuple[int, int]):
    """The (attribute, offset of its value, size) of each EIFMT_SVAL record of a .nv.info
    section (the other formats carry no value that is read here)."""
    off, end = sec[0], sec[0] + sec[1]
    while off + 4 <= end:
        fmt, attr, size = struct.unpack_from("<BBH", cubin, off)
        off += 4
        if fmt == 0x04:                                            # EIFMT_SVAL: size bytes follow
            yield attr, off, size
            off += size


def resources_from_cubin(cubin: bytes) -> dict[str, Resources]:
    """Registers, static smem and stack frame per entry from the CUBIN's ELF (.nv.info's REGCOUNT and
    FRAME_SIZE; .nv.shared.<f> less sm_80+'s 1 KB system reserve where .nv.shared.reserved exists),
    for an NVRTC log without a ptxas report (the GPU host's); spills are not in the ELF: -1."""
    elf = _elf(cubin)
    if elf is None:
        return {}
    sections, symbols = elf
    syms, regs, frame = symbols(), {}, {}
    reserved = 1024 if any(n.startswith(".nv.shared.reserved") for n in sections) else 0
    smem = {n[11:]: max(size - reserved, 0) for n, (_, size) in sections.items()
            if n.startswith(".nv.shared.") and not n.startswith(".nv.shared.reserved")}
    for attr, off, size in _info(cubin, sections.get(".nv.info", (0, 0))):
        if attr in (0x11, 0x2F) and size >= 8:                     # EIATTR_FRAME_SIZE, _REGCOUNT
            idx, val = struct.unpack_from("<II", cubin, off)
            (frame if attr == 0x11 else regs)[syms.get(idx, "")] = val
    return {f: Resources(regs.get(f, 0), smem.get(f, 0), frame.get(f, 0), -1, -1)
            for f in (n[6:] for n in sections if n.startswith(".text."))}


def param_sizes_from_cubin(cubin: bytes, entry: str) -> tuple[int, ...] | None:
    """The sizes in bytes of `entry`'s kernel parameters, in order (its .nv.info.<entry>
    section's EIATTR_KPARAM_INFO records: ordinal, offset, size in bits 18-31 of the flags);
    None where the ELF has no such section."""
    elf = _elf(cubin)
    sec = elf[0].get(".nv.info." + entry) if elf is not None else None
    if sec is None:
        return None
    params = {}
    for attr, off, size in _info(cubin, sec):
        if attr == 0x17 and size >= 12:                            # EIATTR_KPARAM_INFO
            _, ordinal, _, flags = struct.unpack_from("<IHHI", cubin, off)
            params[ordinal] = flags >> 18
    return tuple(params[i] for i in range(len(params))) if sorted(params) == list(range(len(params))) else None


class _InFlight:
    """NVRTC compiles in threads other than the main one, which interpreter exit waits for: exit
    runs NVRTC's static destructors, which crash a daemon thread still inside NVRTC (glibc's
    "free(): invalid size", or SIGSEGV). Once exit has begun such a thread starts none."""

    def __init__(self):
        self.count = 0
        self.exiting = False
        self.cond = threading.Condition()

    @contextlib.contextmanager
    def compiling(self):
        if threading.current_thread() is threading.main_thread():
            yield
            return
        with self.cond:
            if self.exiting:
                raise CuteGemmError("the interpreter is exiting: no new NVRTC compile starts")
            self.count += 1
        try:
            yield
        finally:
            with self.cond:
                self.count -= 1
                self.cond.notify_all()

    def drain(self) -> None:
        with self.cond:
            self.exiting = True
            self.cond.wait_for(lambda: self.count == 0)


IN_FLIGHT = _InFlight()
atexit.register(IN_FLIGHT.drain)
# a forked child has none of its parent's threads, so none of their compiles to wait for
os.register_at_fork(after_in_child=IN_FLIGHT.__init__)


def _output(nvrtc, prog, what: str) -> bytes:
    """nvrtcGet<what> of a compiled program (ProgramLog, CUBIN, PTX)."""
    err, size = getattr(nvrtc, f"nvrtcGet{what}Size")(prog)
    _check(nvrtc, err, f"nvrtcGet{what}Size")
    buf = bytearray(size)   # never an immutable bytes object: NVRTC writes into it
    (err,) = getattr(nvrtc, f"nvrtcGet{what}")(prog, buf)
    _check(nvrtc, err, f"nvrtcGet{what}")
    return bytes(buf)


def run_nvrtc(kernel, source: str, opts: list[str], want_ptx: bool):
    """One NVRTC compile: (cubin, ptx or None, log, seconds). Raises CompileError with the
    whole log."""
    with IN_FLIGHT.compiling():
        nvrtc = _nvrtc()
        t0 = time.perf_counter()
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), kernel.source.encode(), 0, [], [])
        _check(nvrtc, err, f"nvrtcCreateProgram({kernel.name})")
        try:
            enc = [o.encode() for o in opts]
            (result,) = nvrtc.nvrtcCompileProgram(prog, len(enc), enc)
            log = _output(nvrtc, prog, "ProgramLog").rstrip(b"\0").decode(errors="replace")
            if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
                raise CompileError(kernel.name, opts, log, result.name)
            cubin = _output(nvrtc, prog, "CUBIN")
            ptx = _output(nvrtc, prog, "PTX") if want_ptx else None
        finally:
            nvrtc.nvrtcDestroyProgram(prog)
    return cubin, ptx, log, time.perf_counter() - t0
