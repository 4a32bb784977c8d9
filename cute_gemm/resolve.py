"""The resolver: for one kernel, device, shape, stride pattern and pointer-alignment class,
which entry point runs, which operands are copied first, with which grid, shared memory
and stream-K split. It is decided once (resolve), kept as a frozen LaunchPlan beside the
Launcher that carries it out, in one cache (CACHE); a repeat call only writes its pointers
and scalars into the Launcher's packed arguments.

The cache has one owner and one public reset, cute_gemm.clear_caches(); what it holds is
readable through resolved_launches().
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from . import cache, launch, registry, streamk, workspace
from .arrays import Operand
from .errors import CuteGemmError

# the utility kernel of the runtime itself: copies into another layout, and beta * C
UTIL = registry.Kernel(
    name="scale2d", family="util", source="util/scale2d.cu",
    variants=(registry.Variant("scale2d"),), block=(256, 1, 1), grid=registry.FlatGrid(256),
    summary="dst = s * src, any strides (relayout and K = 0)", seed="-")


@dataclass(frozen=True)
class LaunchPlan:
    """What run() launches for one kernel, device, shape, stride pattern and pointer
    alignment class."""
    kernel: str
    ordinal: int
    shape: tuple[int, int, int]          # (M, N, K)
    entry: str                           # the entry point launched last
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    copies: tuple[str, ...] = ()         # operands copied first into a layout the entry takes
    workspace_bytes: int = 0             # > 0: a persistent stream-K launch
    head_entry: str = ""                 # a split launch: the data-parallel launch before it
    head_grid: tuple[int, int, int] = (0, 0, 0)
    pdl: bool = False                    # ... whose successor starts by programmatic launch
    swap: bool = False                   # the entry computes C^T = B^T A^T

    @property
    def stream_k(self) -> bool:
        return self.workspace_bytes > 0

    @property
    def split(self) -> bool:
        return bool(self.head_entry)


@dataclass
class _Cache:
    loaded: dict = field(default_factory=dict)     # (kernel, device) -> Loaded
    launches: dict = field(default_factory=dict)   # run()'s launch key -> Launcher
    hot: dict = field(default_factory=dict)        # run()'s call signature -> hot entry

    def clear(self) -> None:
        self.loaded.clear()
        self.launches.clear()
        self.hot.clear()


CACHE = _Cache()


def resolved_launches() -> tuple[LaunchPlan, ...]:
    """The plans of the launches resolved so far (and not cleared)."""
    return tuple(x.plan for x in list(CACHE.launches.values()))


# ---- per (kernel, device): the cubin and its functions ------------------------------------
@dataclass
class Loaded:
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


def loaded(k: registry.Kernel, ordinal: int) -> Loaded:
    """The kernel compiled for the device's arch (compiled on first use) and its functions."""
    p = CACHE.loaded.get((k.name, ordinal))
    if p is None:
        info = launch.device_info(ordinal)
        if info.arch_int < k.min_arch:
            raise CuteGemmError(f"kernel {k.name!r} needs sm_{k.min_arch} or newer; "
                                f"device {ordinal} ({info.name}) is {info.arch}")
        p = Loaded(k, ordinal, cache.get(k, info.arch), {}, info.smem_optin)
        CACHE.loaded[(k.name, ordinal)] = p
    return p


# ---- layout matching -------------------------------------------------------------------
def pow2_align(ptr: int, ld: int) -> int:
    """Largest power of two (elements, <= 16) dividing the pointer (in floats) and ld."""
    if ptr % 4:
        return 0
    v = (ptr // 4) | (ld if ld > 0 else 0) | 16
    return v & -v


_ROW = {"a": "k", "b": "n", "c": "n"}       # the major of a row-major operand of each role


def fit(op: Operand, role: str) -> tuple[str, int]:
    """(major, alignment in elements) of an operand in the role it plays."""
    row, col = {"a": ("k", "m"), "b": ("n", "k"), "c": ("n", "m")}[role]
    major = op.major(row, col)
    if major is None:   # no unit stride (e.g. every other column): only "any" entries take it
        return "strided", pow2_align(op.ptr, abs(op.strides[0]) | abs(op.strides[1]))
    ld = op.strides[0] if major == row else op.strides[1]
    if (op.shape[0] if major == row else op.shape[1]) <= 1:
        ld = 0  # a single row/column: the leading stride is never used
    return major, pow2_align(op.ptr, ld)


def choose(k: registry.Kernel, ops: dict[str, Operand]) -> tuple[registry.Variant, list[str]]:
    """The variant needing the fewest relayout copies, and the roles to copy."""
    fits = {r: fit(op, r) for r, op in ops.items()}
    (m, kk), n = ops["a"].shape, ops["b"].shape[1]
    best = None
    for v in k.variants:
        if not v.fits_extents(m, n, kk):   # a vector would straddle a row/column end
            continue
        copies, feasible = [], True
        for r, op in ops.items():
            if v.takes(r, *fits[r]):
                continue
            # after a copy: row-major, ld = number of columns, fresh 256-byte aligned pointer
            if v.takes(r, _ROW[r], pow2_align(256, op.shape[1] if op.shape[0] > 1 else 0)):
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


# ---- the launcher --------------------------------------------------------------------------
class Launcher:
    """One resolved launch with its argument block packed once: per call only the pointers
    and alpha/beta change. The driver copies the arguments inside cuLaunchKernel, so the
    block is reused once the call returns; the lock keeps two threads from interleaving
    their field writes."""
    __slots__ = ("plan", "f", "args", "packed", "lock", "head")

    def __init__(self, plan: LaunchPlan, f: launch.Function, strides, tile0: int = 0,
                 head: "Launcher | None" = None):
        self.plan, self.f, self.head = plan, f, head
        m, n, kk = plan.shape
        sa, sb, sc = strides
        if plan.swap:
            m, n, sa, sb, sc = n, m, sb[::-1], sa[::-1], sc[::-1]
        ws = plan.workspace_bytes
        pack = launch.pack_gemm_args_ws if ws else launch.pack_gemm_args
        self.packed = pack(m, n, kk, 0.0, 0, sa[0], sa[1], 0, sb[0], sb[1], 0.0, 0, sc[0], sc[1],
                           *((0, tile0) if ws else ()))
        self.args = self.packed[0][0]      # the argument struct the pointer array points into
        self.lock = threading.Lock()

    def __call__(self, a, b, c, alpha, beta, stream):
        p = self.plan
        if not p.workspace_bytes:
            self._launch(a, b, c, alpha, beta, stream, 0)
        elif launch.capturing(stream):
            # a graph owns its workspace: stream-ordered scratch, zeroed inside the graph,
            # before the head, so that nothing stands between the head and the twin that
            # starts by programmatic dependent launch
            ws = launch.alloc_async(p.workspace_bytes, p.ordinal, stream)
            try:
                launch.memset_f32(ws, 0, streamk.STREAM_K_COUNTERS, stream)
                self._launch(a, b, c, alpha, beta, stream, ws)
            finally:
                launch.free_async(ws, stream)
        else:
            w = workspace.take(p.ordinal, p.workspace_bytes, stream, streamk.STREAM_K_COUNTERS)
            try:
                self._launch(a, b, c, alpha, beta, stream, w.ptr)
            finally:
                workspace.give(w, stream)

    def _launch(self, a, b, c, alpha, beta, stream, ws):
        p = self.plan
        if self.head is not None:
            self.head(a, b, c, alpha, beta, stream)
        s = self.args
        with self.lock:
            if p.swap:
                a, b = b, a
            s.A, s.B, s.C, s.alpha, s.beta = a, b, c, alpha, beta
            if ws:
                s.ws = ws
            launch.launch(self.f, p.grid, p.block, p.smem, stream, self.packed, pdl=p.pdl)


def resolve(k: registry.Kernel, ordinal: int, variant: registry.Variant, copies, m: int, n: int,
            kk: int, strides) -> Launcher:
    """The Launcher of `variant` at M x N x K with operands of these strides (after copies):
    its stream-K twin where the shape leaves a partial last wave, else the plain grid."""
    lk = loaded(k, ordinal)
    smem = k.smem_bytes(m, n, kk)
    base = dict(kernel=k.name, ordinal=ordinal, shape=(m, n, kk), block=k.block,
                copies=tuple(copies))
    sk = _stream_k(k, lk, variant, m, n, kk, smem, k.stream_k_smem_bytes(m, n, kk))
    if sk is None:
        plan = LaunchPlan(entry=variant.entry, grid=k.grid(m, n, kk), smem=smem, **base)
        return Launcher(plan, lk.function(variant.entry), strides)
    grid, ws_bytes, tile0, pdl = sk
    swap = variant.stream_k_swap
    head = None
    if tile0:
        dp = streamk.stream_k_dp_entry(variant)
        head = Launcher(LaunchPlan(entry=dp, grid=(tile0, 1, 1), smem=smem, swap=swap, **base),
                        lk.function(dp), strides)
    plan = LaunchPlan(entry=variant.stream_k, grid=grid, smem=k.stream_k_smem_bytes(m, n, kk),
                      workspace_bytes=ws_bytes, head_entry=head.plan.entry if head else "",
                      head_grid=head.plan.grid if head else (0, 0, 0), pdl=pdl, swap=swap, **base)
    return Launcher(plan, lk.function(variant.stream_k), strides, tile0, head)


def _stream_k(k: registry.Kernel, lk: Loaded, variant: registry.Variant, m: int, n: int,
              kk: int, smem: int, sk_smem: int):
    """(grid, workspace bytes, tile0, pdl) of the stream-K launch of `variant` where the
    shape leaves a partial last wave (streamk.plan), else None. pdl: the twin of a split
    launch starts by programmatic dependent launch (Kernel.pdl, sm_90+; CUTE_GEMM_PDL=0
    turns it off). smem / sk_smem: dynamic smem of the data-parallel entry and the twin."""
    if not variant.stream_k or k.tile is None or os.environ.get("CUTE_GEMM_STREAM_K") == "0":
        return None
    info = launch.device_info(lk.ordinal)
    f_dp = lk.function(streamk.stream_k_dp_entry(variant))
    f = lk.function(variant.stream_k)
    sk = streamk.plan(k, variant, m, n, kk, info.sm_count * launch.occupancy(f_dp, k.threads, smem),
                      info.sm_count * launch.occupancy(f, k.threads, sk_smem))
    if sk is None:
        return None
    grid, ws_bytes, tile0 = sk
    pdl = (tile0 > 0 and k.pdl and info.arch_int >= 90 and os.environ.get("CUTE_GEMM_PDL") != "0")
    return grid, ws_bytes, tile0, pdl
