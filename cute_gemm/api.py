"""run(): alpha * A @ B + beta * C with any registered kernel.

numpy in -> numpy out (upload, launch, download). Device arrays in -> result on the
device, no host round trip. Operands whose layout a kernel cannot take as they are
(say, a transposed B for a row-major-only stage) are copied on the device into a
layout it can take — only those operands, and only for kernels that need it.
"""
from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass

import numpy as np

from . import cache, launch, registry
from .arrays import Operand, parse
from .errors import AliasError, CaptureError, CuteGemmError, InputError, ShapeError

_UTIL = registry.Kernel(
    name="scale2d", family="util", source="util/scale2d.cu",
    variants=(registry.Variant("scale2d"),), block=(256, 1, 1), grid=registry.FlatGrid(256),
    summary="dst = s * src, any strides (relayout and K = 0)", seed="-")
_F32_NAN = 0x7FC00000


def compile_kernel(name: str, arch: str | int | None = None):
    """Compile (or fetch from cache) a registered kernel; no GPU needed when arch is given."""
    k = name if isinstance(name, registry.Kernel) else registry.get(name)
    if arch is None:
        arch = launch.device_info().arch
    return cache.get(k, arch)


# ---- per (kernel, device) state, resolved once -----------------------------------------
@dataclass
class _Plan:
    kernel: registry.Kernel
    ordinal: int
    compiled: object
    functions: dict
    smem_limit: int

    def function(self, entry: str) -> launch.Function:
        f = self.functions.get(entry)
        if f is None:
            f = launch.get_function(self.ordinal, self.kernel.name, self.compiled.key,
                                    self.compiled.cubin, entry)
            self.functions[entry] = f
        return f


_plans: dict[tuple[str, int], _Plan] = {}


def _plan(k: registry.Kernel, ordinal: int) -> _Plan:
    p = _plans.get((k.name, ordinal))
    if p is None:
        info = launch.device_info(ordinal)
        if info.arch_int < k.min_arch:
            raise CuteGemmError(f"kernel {k.name!r} needs sm_{k.min_arch} or newer; "
                                f"device {ordinal} ({info.name}) is {info.arch}")
        p = _Plan(k, ordinal, cache.get(k, info.arch), {}, info.smem_optin)
        _plans[(k.name, ordinal)] = p
    return p


# ---- layout matching -------------------------------------------------------------------
def _pow2_align(ptr: int, ld: int) -> int:
    """Largest power of two (elements, <= 16) dividing the pointer (in floats) and ld."""
    if ptr % 4:
        return 0
    v = (ptr // 4) | (ld if ld > 0 else 0) | 16
    return v & -v


def _fit(op: Operand, role: str) -> tuple[str, int]:
    row, col = {"a": ("k", "m"), "b": ("n", "k"), "c": ("n", "m")}[role]
    major = op.major(row, col)
    if major is None:   # no unit stride (e.g. every other column): only "any" entries take it
        return "strided", _pow2_align(op.ptr, abs(op.strides[0]) | abs(op.strides[1]))
    ld = op.strides[0] if major == row else op.strides[1]
    if (op.shape[0] if major == row else op.shape[1]) <= 1:
        ld = 0  # a single row/column: the leading stride is never used
    return major, _pow2_align(op.ptr, ld)


def _accepts(want: str, align_req: int, have: tuple[str | None, int]) -> bool:
    major, align = have
    return align > 0 and (want == "any" or want == major) and align % align_req == 0


def _choose(k: registry.Kernel, ops: dict[str, Operand]):
    """Pick the variant needing the fewest relayout copies; returns (variant, roles to copy)."""
    fits = {r: _fit(op, r) for r, op in ops.items()}
    (m, kk), n = ops["a"].shape, ops["b"].shape[1]
    best = None
    for v in k.variants:
        if not v.fits_extents(m, n, kk):   # a vector would straddle a row/column end
            continue
        want = {"a": v.a_major, "b": v.b_major, "c": v.c_major}
        copies, feasible = [], True
        for r, op in ops.items():
            if _accepts(want[r], v.align_for(r), fits[r]):
                continue
            row = {"a": "k", "b": "n", "c": "n"}[r]
            # after a copy: row-major, ld = number of columns, fresh 256-byte aligned pointer
            if _accepts(want[r], v.align_for(r), (row, _pow2_align(256, op.shape[1] if op.shape[0] > 1 else 0))):
                copies.append(r)
            else:
                feasible = False
                break
        if feasible and (best is None or len(copies) < len(best[1])):
            best = (v, copies)
            if not copies:
                break
    if best is None:  # the registry test guarantees a row-major, align-1 variant
        raise CuteGemmError(f"kernel {k.name!r} has no variant for these operand layouts")
    return best


# ---- device helpers ----------------------------------------------------------------------
def _util_fn(ordinal: int) -> launch.Function:
    return _plan(_UTIL, ordinal).function("scale2d")


def _sub(op: Operand | None, i0: int, j0: int, rows: int, cols: int) -> Operand | None:
    """The (rows, cols) block of a device operand starting at element (i0, j0)."""
    if op is None:
        return None
    return Operand(op.name, op.obj, True, op.ptr + 4 * (i0 * op.strides[0] + j0 * op.strides[1]),
                   (rows, cols), op.strides, op.dtype, op.readonly)


def _pieces(extent: int, step: int):
    """(start, size) of the launches that cover `extent` in pieces of at most `step`."""
    return [(i, min(step, extent - i)) for i in range(0, extent, step)]


def _scale2d(ordinal: int, stream: int, s: float, src: Operand | None, dst: Operand) -> None:
    m, n = dst.shape
    if m * n == 0:
        return
    f = _util_fn(ordinal)
    mc, nc, _ = _UTIL.launch_extents(m, n, 1)
    for i0, r in _pieces(m, mc):
        for j0, c in _pieces(n, nc):
            launch.launch(f, (registry.cdiv(r * c, 256), 1, 1), (256, 1, 1), 0, stream,
                          _pack_scale(r, c, s, _sub(src, i0, j0, r, c), _sub(dst, i0, j0, r, c)))


class _ScaleArgs(ctypes.Structure):
    """kernels/util/scale2d.cu's parameters, in order."""
    _fields_ = [("M", ctypes.c_int), ("N", ctypes.c_int), ("s", ctypes.c_float),
                ("src", ctypes.c_void_p), ("ss0", ctypes.c_longlong), ("ss1", ctypes.c_longlong),
                ("dst", ctypes.c_void_p), ("ds0", ctypes.c_longlong), ("ds1", ctypes.c_longlong)]


_SCALE_OFFSETS = tuple(getattr(_ScaleArgs, f).offset for f, _ in _ScaleArgs._fields_)


def _pack_scale(m, n, s, src, dst):
    a = _ScaleArgs(m, n, s, src.ptr if src else None, *(src.strides if src else (0, 0)),
                   dst.ptr, *dst.strides)
    base = ctypes.addressof(a)
    ptrs = (ctypes.c_void_p * len(_SCALE_OFFSETS))(*[base + o for o in _SCALE_OFFSETS])
    return (a, ptrs), ctypes.addressof(ptrs)


def _temp(shape, ordinal: int, stream: int, owned: list) -> Operand:
    """A row-major scratch matrix in stream order (freed by _release on the same stream)."""
    ptr = launch.alloc_async(4 * max(shape[0] * shape[1], 1), ordinal, stream)
    owned.append(ptr)
    return Operand("tmp", None, True, ptr, tuple(shape), (shape[1], 1), "float32")


def _release(owned: list, stream: int) -> None:
    """Free scratch in stream order: after the work queued so far, no host wait."""
    for ptr in owned:
        launch.free_async(ptr, stream)
    owned.clear()


class _Resolved:
    """One resolved launch (function, grid, block, smem) with its argument block packed
    once: per call only the pointers and alpha/beta change. The driver copies the
    arguments inside cuLaunchKernel, so the block is reused once the call returns; the
    lock keeps two threads from interleaving their field writes."""
    __slots__ = ("f", "grid", "block", "smem", "args", "packed", "lock", "ws_bytes", "ordinal",
                 "swap", "head", "pdl")

    def __init__(self, f, grid, block, smem, m, n, kk, sa, sb, sc, ws_bytes=0, ordinal=0,
                 swap=False, tile0=0, head=None, pdl=False):
        import threading
        self.f, self.grid, self.block, self.smem = f, grid, block, smem
        self.head = head     # a split stream-K launch: the data-parallel launch that goes first
        self.pdl = pdl       # ... and this one may start while the head's last CTAs still run
        self.ws_bytes, self.ordinal = ws_bytes, ordinal   # stream-K: workspace per launch
        self.swap = swap     # the kernel computes C^T = B^T A^T: it takes B first, then A
        if swap:
            m, n, sa, sb, sc = n, m, sb[::-1], sa[::-1], sc[::-1]
        pack = launch.pack_gemm_args_ws if ws_bytes else launch.pack_gemm_args
        self.packed = pack(m, n, kk, 0.0, 0, sa[0], sa[1], 0, sb[0], sb[1], 0.0, 0, sc[0], sc[1],
                           *((0, tile0) if ws_bytes else ()))
        self.args = self.packed[0][0]      # the argument struct the pointer array points into
        self.lock = threading.Lock()

    def __call__(self, a, b, c, alpha, beta, stream):
        ws = 0
        if self.ws_bytes:
            # the workspace is this launch's own, in stream order; its counters are zeroed
            # before the head goes, so that nothing stands between the head and the twin
            # that starts by programmatic dependent launch
            ws = launch.alloc_async(self.ws_bytes, self.ordinal, stream)
        try:
            if ws:
                launch.memset_f32(ws, 0, registry.STREAM_K_COUNTERS, stream)
            if self.head is not None:
                self.head(a, b, c, alpha, beta, stream)
            s = self.args
            with self.lock:
                if self.swap:
                    a, b = b, a
                s.A, s.B, s.C, s.alpha, s.beta = a, b, c, alpha, beta
                if ws:
                    s.ws = ws
                launch.launch(self.f, self.grid, self.block, self.smem, stream, self.packed,
                              pdl=self.pdl)
        finally:
            if ws:
                launch.free_async(ws, stream)


def _stream_k(k: registry.Kernel, plan: "_Plan", variant: registry.Variant, m: int, n: int,
              kk: int, smem: int, sk_smem: int):
    """(function, grid, workspace bytes, tile0, data-parallel head or None, pdl) of the
    stream-K launch of `variant` when the shape leaves a partial last wave
    (registry.stream_k_plan), else None. The head, (function, grid), runs tiles [0, tile0)
    first on the same stream: the twin's data-parallel sibling (on the transposed problem
    too where the twin is). pdl: the twin of a split launch starts by programmatic
    dependent launch (Kernel.pdl, sm_90+; CUTE_GEMM_PDL=0 turns it off). smem / sk_smem:
    dynamic smem of the data-parallel entry and of the twin (Kernel.stream_k_smem)."""
    if not variant.stream_k or k.tile is None or os.environ.get("CUTE_GEMM_STREAM_K") == "0":
        return None
    if variant.stream_k_swap:     # the twin sees the transposed problem: N x M
        m, n = n, m
    bm, bn, bk = k.tile
    tiles, k_tiles = registry.cdiv(m, bm) * registry.cdiv(n, bn), registry.cdiv(kk, bk)
    if tiles * k_tiles >= 2**31:        # the kernel counts iterations in 32 bits
        return None
    info = launch.device_info(plan.ordinal)
    sm = info.sm_count
    f = plan.function(variant.stream_k)
    f_dp = plan.function(registry.stream_k_dp_entry(variant))
    tile0, ctas = registry.stream_k_plan(tiles, k_tiles, sm * launch.occupancy(f_dp, k.threads, smem),
                                         sm * launch.occupancy(f, k.threads, sk_smem),
                                         max_fill=variant.stream_k_fill)
    if not ctas:
        return None
    head = (f_dp, (tile0, 1, 1)) if tile0 else None
    pdl = (head is not None and k.pdl and info.arch_int >= 90
           and os.environ.get("CUTE_GEMM_PDL") != "0")
    return f, (ctas, 1, 1), registry.stream_k_workspace_bytes(ctas, bm, bn), tile0, head, pdl


_fast: dict[tuple, _Resolved] = {}


def _stream_k_used(name: str, m: int, n: int, k: int, split: bool = False,
                   pdl: bool = False) -> bool:
    """Whether a resolved launch of kernel `name` at M x N x K went through its stream-K
    twin (split: as a split launch, a data-parallel head first; pdl: with the twin by
    programmatic dependent launch) — for tests and checks, which read it from the launch
    cache (keys: _gemm_device)."""
    return any(key[0] == name and key[2:5] == (m, n, k) and r.ws_bytes > 0
               and (not split or r.head is not None) and (not pdl or r.pdl)
               for key, r in _fast.items())


def _gemm_device(k, A: Operand, B: Operand, C: Operand | None, T: Operand,
                 alpha: float, beta: float, stream: int, ordinal: int):
    """T = alpha * A @ B + beta * C on the device (C may be T itself, or None). Returns
    (key, resolved) of the _fast entry the call went through, or None."""
    m, kk = A.shape
    n = B.shape[1]
    if C is None or beta == 0.0:
        C, beta = None, 0.0     # BLAS: with beta == 0, C is not read
    if m == 0 or n == 0:
        return None
    products = kk > 0 and alpha != 0.0     # BLAS: with alpha == 0, A and B are not read
    read = ((A, B) if products else ()) + ((C,) if C is not None else ())
    if any(T.overlaps(x) and not (x is C and C.same_view(T)) for x in read):
        # T aliases an input other than as C in place: compute apart, then copy into T
        owned: list = []
        try:
            W = _temp(T.shape, ordinal, stream, owned)
            _gemm_device(k, A, B, C, W, alpha, beta, stream, ordinal)
            _scale2d(ordinal, stream, 1.0, W, T)
        finally:
            _release(owned, stream)
        return None
    if not products:
        _scale2d(ordinal, stream, beta, C, T)
        return None
    mc, nc, kc = k.launch_extents(m, n, kk)
    if (mc, nc, kc) != (m, n, kk):
        # beyond one launch (grid limits, 32-bit indices): launches on blocks of C, and
        # along K each piece adds to what the one before left in T
        for i0, r in _pieces(m, mc):
            for j0, c in _pieces(n, nc):
                Tb = _sub(T, i0, j0, r, c)
                for p0, q in _pieces(kk, kc):
                    _gemm_device(k, _sub(A, i0, p0, r, q), _sub(B, p0, j0, q, c),
                                 _sub(C, i0, j0, r, c) if p0 == 0 else Tb, Tb, alpha,
                                 beta if p0 == 0 else 1.0, stream, ordinal)
        return None
    # the hot path: a launch already resolved for this kernel, shape, strides and pointer
    # alignment class (everything _choose and the grid depend on) skips straight to the driver
    key = (k.name, ordinal, m, n, kk, A.strides, B.strides, T.strides,
           A.ptr & 255, B.ptr & 255, T.ptr & 255)
    fast = _fast.get(key)
    if fast is not None and (C is None or C.same_view(T)):
        fast(A.ptr, B.ptr, T.ptr, alpha, beta, stream)
        return key, fast
    plan = _plan(k, ordinal)
    smem = k.smem_bytes(m, n, kk)
    if smem:
        k.check_limits(m, n, kk, plan.smem_limit)
    variant, copies = _choose(k, {"a": A, "b": B, "c": T})
    owned: list = []
    try:
        if "a" in copies:
            A2 = _temp(A.shape, ordinal, stream, owned)
            _scale2d(ordinal, stream, 1.0, A, A2)
            A = A2
        if "b" in copies:
            B2 = _temp(B.shape, ordinal, stream, owned)
            _scale2d(ordinal, stream, 1.0, B, B2)
            B = B2
        W = _temp(T.shape, ordinal, stream, owned) if "c" in copies else T
        if C is not None and not C.same_view(W):
            _scale2d(ordinal, stream, 1.0, C, W)   # the kernel updates W in place
        sk_smem = k.stream_k_smem_bytes(m, n, kk)
        sk = _stream_k(k, plan, variant, m, n, kk, smem, sk_smem)
        if sk is not None:
            f, grid, ws_bytes, tile0, head, pdl = sk
            swap = variant.stream_k_swap
            resolved = _Resolved(f, grid, k.block, sk_smem, m, n, kk, A.strides, B.strides,
                                 W.strides, ws_bytes, ordinal, swap, tile0,
                                 head and _Resolved(head[0], head[1], k.block, smem, m, n, kk,
                                                    A.strides, B.strides, W.strides, swap=swap),
                                 pdl=pdl)
        else:
            resolved = _Resolved(plan.function(variant.entry), k.grid(m, n, kk), k.block, smem,
                                 m, n, kk, A.strides, B.strides, W.strides)
        resolved(A.ptr, B.ptr, W.ptr, alpha, beta, stream)
        if not copies:   # no temporaries: the next call with this key can go straight to it
            if len(_fast) >= 4096:
                _fast.clear()
            _fast[key] = resolved
        if W is not T:
            _scale2d(ordinal, stream, 1.0, W, T)
        return (key, resolved) if not copies else None
    finally:
        _release(owned, stream)


# ---- validation --------------------------------------------------------------------------
def _validate(a, b, c, out, alpha, beta, stream: int | None = None):
    A, B = parse("a", a, stream), parse("b", b, stream)
    (m, k1), (k2, n) = A.shape, B.shape
    if k1 != k2:
        raise ShapeError(f"inner dimensions differ: a is {A.shape}, b is {B.shape} ({k1} != {k2})")
    C = parse("c", c, stream) if c is not None else None
    O = parse("out", out, stream) if out is not None else None
    for op in (C, O):
        if op is not None and op.shape != (m, n):
            raise ShapeError(f"{op.name} must have shape {(m, n)} (a @ b), got {op.shape}")
    if O is not None and O.readonly:
        raise InputError("out is read-only")
    if O is not None and O.self_overlapping():
        raise AliasError(f"out has strides {O.strides} (elements) for shape {O.shape}: several "
                         "of its elements share one address, so it cannot hold a result")
    for nm, v in (("alpha", alpha), ("beta", beta)):
        if type(v) is not float and (not isinstance(v, (int, float, np.floating, np.integer))
                                     or isinstance(v, bool)):
            raise InputError(f"{nm} must be a real number, got {type(v).__name__}")
    if (B.device != A.device or (C is not None and C.device != A.device)
            or (O is not None and O.device != A.device)):
        ops = [x for x in (A, B, C, O) if x is not None]
        where = ", ".join(f"{x.name}={'device' if x.device else 'host'}" for x in ops)
        raise InputError(f"mixing host and device arrays is not supported ({where})")
    return A, B, C, O, m, n, k1


def _empty_like_lib(proto, shape, ordinal):
    """A row-major float32 result allocated by the library of `proto` (CuPy, PyTorch), else
    a cute_gemm DeviceArray."""
    mod = type(proto).__module__.split(".")[0]
    if mod == "cupy" and "cupy" in sys.modules:
        cp = sys.modules["cupy"]
        with cp.cuda.Device(ordinal):
            return cp.empty(shape, dtype=cp.float32)
    if mod == "torch" and "torch" in sys.modules:
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=torch.float32, device=proto.device)
    from .arrays import DeviceArray
    return DeviceArray(shape, ordinal=ordinal)


def _device_ordinal(A: Operand) -> int:
    launch._init()
    if _device_count() == 1:
        return 0
    return launch.pointer_device(A.ptr) if A.ptr else launch.current_ordinal()


_count: list[int] = []


def _device_count() -> int:
    if not _count:
        _count.append(int(launch._check(launch._drv().cuDeviceGetCount(), "cuDeviceGetCount")))
    return _count[0]


# run()'s hottest path: `out` given, no C, __cuda_array_interface__ operands, one device.
# Everything validation, the entry choice and the launch depend on — the kernel name and,
# per operand, shape, strides, dtype, read-only flag and pointer alignment class (the
# _fast key's ptr & 255) — forms a signature; a call whose signature was seen before
# with a resolved launch skips parse() and _validate() and goes straight to that launch,
# with the call's own pointers and alpha. The entry is good only while _fast still holds
# the same launch (clearing _fast clears this path too).
_hot: dict[tuple, tuple[tuple, "_Resolved"]] = {}
_SCALAR = (float, int)    # not bool: type(True) is bool


def _hot_sig(name, a, b, out):
    """(signature, pointers, CAI streams) of a call on __cuda_array_interface__ operands,
    else None."""
    try:   # (PyTorch raises RuntimeError for tensors that require grad: the full path says so)
        ca, cb, co = a.__cuda_array_interface__, b.__cuda_array_interface__, out.__cuda_array_interface__
        da, db, do = ca["data"], cb["data"], co["data"]
        sig = (name, ca["shape"], ca.get("strides"), ca["typestr"], da[0] & 255, ca.get("mask"),
               cb["shape"], cb.get("strides"), cb["typestr"], db[0] & 255, cb.get("mask"),
               co["shape"], co.get("strides"), co["typestr"], do[0] & 255, co.get("mask"), do[1])
        hash(sig)      # a list shape, say: not hashable, so no hot path
        return sig, da[0], db[0], do[0], ca.get("stream"), cb.get("stream"), co.get("stream")
    except Exception:
        return None


def _hot_entry(fast, A: Operand, B: Operand, O: Operand):
    """What the hot path keeps of a resolved call: the _fast entry and each operand's
    byte span relative to its pointer (fixed by the signature), for the overlap test."""
    rel = tuple(x - op.ptr for op in (A, B, O) for x in op.span())
    return fast + (rel,)


def run(name, a, b, c=None, *, alpha=1.0, beta=0.0, out=None, stream=None):
    """alpha * a @ b + beta * c in float32 with kernel `name`.

    numpy in -> numpy out; device arrays (CuPy, PyTorch, JAX, __cuda_array_interface__,
    DLPack) in -> result on the device. `out` receives the result (it may be `c`, for an
    in-place update; an `out` that overlaps a, b or c otherwise is computed apart and
    copied). Asynchronous on `stream` for device arrays, like any CUDA library; operands
    that name their producer's stream (CAI v3 `stream`, DLPack) are waited for on it.
    """
    hot = None   # (one device known, from an earlier call: no signature work for multi-GPU hosts)
    if (c is None and out is not None and _count == [1] and type(alpha) in _SCALAR
            and type(beta) in _SCALAR and alpha != 0):
        hot = _hot_sig(name, a, b, out)
        if hot is not None:
            entry = _hot.get(hot[0])
            if entry is not None and _fast.get(entry[0]) is entry[1]:
                _, pa, pb, po, sa, sb, so = hot
                s = launch.stream_handle(stream)
                cs = launch.canonical_stream(s)
                alo, ahi, blo, bhi, olo, ohi = entry[2]
                if (pa and pb and po and (sa is None or sa == cs) and (sb is None or sb == cs)
                        and (so is None or so == cs)
                        and not (pa + alo < po + ohi and po + olo < pa + ahi)
                        and not (pb + blo < po + ohi and po + olo < pb + bhi)):
                    launch._ensure_context(0)
                    entry[1](pa, pb, po, float(alpha), 0.0, s)
                    return out
    k = registry.get(name)
    s = launch.stream_handle(stream)
    A, B, C, O, m, n, kk = _validate(a, b, c, out, alpha, beta, s)
    alpha, beta = float(alpha), float(beta)
    if C is None:
        beta = 0.0
    if A.device:
        return _run_device(k, A, B, C, O, m, n, alpha, beta, s, hot)
    return _run_host(k, A, B, C, O, m, n, kk, alpha, beta, s)


def _wait_producers(s: int, producers: set, ordinal: int) -> None:
    """Order the call after the work its operands' producer streams have queued (CAI v3).
    Inside a graph capture only a producer captured with it can be waited for; work
    outside the graph must be done before the graph is launched, as for any graph (a
    wait on it would invalidate the capture)."""
    cs = launch.canonical_stream(s)
    others = [p for p in producers if launch.canonical_stream(p) != cs]
    if not others:
        return
    in_capture = launch.capturing(s)
    for p in others:
        if not in_capture:
            launch.wait_stream(s, p, ordinal)
        elif p not in (0, 1) and launch.capturing(p):   # the legacy stream is never captured
            launch.wait_stream(s, p, ordinal)


def _run_device(k, A, B, C, O, m, n, alpha, beta, s, hot=None):
    ordinal = _device_ordinal(A)
    launch._ensure_context(ordinal)
    ops = (A, B, C, O)
    if any(op is not None and op.stream is not None for op in ops):
        _wait_producers(s, {op.stream for op in ops if op is not None and op.stream is not None},
                        ordinal)
    if O is None:
        if type(A.obj).__module__.split(".")[0] not in ("cupy", "torch") and launch.capturing(s):
            raise CaptureError("a new result array cannot be allocated while the stream "
                               "captures a CUDA graph: pass out=")
        result = _empty_like_lib(A.obj, (m, n), ordinal)
        O = parse("out", result)
    else:
        result = O.obj
    if m and n:
        fast = _gemm_device(k, A, B, C, O, alpha, beta, s, ordinal)
        if fast is not None and hot is not None:     # hot: one device, so ordinal 0
            if len(_hot) >= 4096:
                _hot.clear()
            _hot[hot[0]] = _hot_entry(fast, A, B, O)
    return result


def _upload(op: Operand, ordinal: int, stream: int, owned: list) -> Operand:
    """Copy a host operand to the device keeping its order when it is C- or F-contiguous."""
    h = op.host
    if h.flags.c_contiguous:
        src, strides = h, (h.shape[1], 1)
    elif h.flags.f_contiguous:
        src, strides = h, (1, h.shape[0])
    else:
        src = np.ascontiguousarray(h)
        strides = (h.shape[1], 1)
    buf = launch.DeviceBuffer(max(src.nbytes, 4), ordinal)
    owned.append(buf)
    if src.nbytes:
        launch.memcpy_htod(buf.ptr, src.ctypes.data, src.nbytes, stream)
    return Operand(op.name, buf, True, buf.ptr, op.shape, strides, "float32")


def _run_host(k, A, B, C, O, m, n, kk, alpha, beta, s):
    result = O.host if O is not None else np.empty((m, n), dtype=np.float32)
    if m == 0 or n == 0:
        return result
    if kk == 0 or alpha == 0.0:
        # no products, nothing to launch: result = beta * C (BLAS: A and B are not read,
        # and C is not read when beta == 0)
        if beta == 0.0:
            result[...] = 0.0
        else:
            np.multiply(C.host, np.float32(beta), out=result)
        return result
    ordinal = launch.current_ordinal()
    launch._ensure_context(ordinal)
    if launch.capturing(s):
        raise CaptureError("numpy operands need copies to and from the host and a wait for "
                           "them, which a CUDA graph capture cannot hold: pass device arrays")
    owned: list = []
    try:
        dA = _upload(A, ordinal, s, owned)
        dB = _upload(B, ordinal, s, owned)
        buf = launch.DeviceBuffer(4 * m * n, ordinal)
        owned.append(buf)
        dT = Operand("tmp", buf, True, buf.ptr, (m, n), (n, 1), "float32")
        if beta != 0.0:   # C goes straight into the result buffer, updated in place
            hc = np.ascontiguousarray(C.host)
            launch.memcpy_htod(dT.ptr, hc.ctypes.data, hc.nbytes, s)
        _gemm_device(k, dA, dB, dT if beta != 0.0 else None, dT, alpha, beta, s, ordinal)
        host = result if result.flags.c_contiguous else np.empty((m, n), dtype=np.float32)
        launch.memcpy_dtoh(host.ctypes.data, dT.ptr, host.nbytes, s)
        launch.check_last(k.name, s)
        if host is not result:
            result[...] = host
    finally:
        for b in owned:
            b.close()
    return result


def flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


__all__ = ["run", "compile_kernel", "flops"]
