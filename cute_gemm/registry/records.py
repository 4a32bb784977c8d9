"""The records a kernel is described by (data only; the ladders build their tables from them):
entry points (Variant), grid and shared-memory policies with the launch limits, Kernel, and
the operand-layout vocabulary. Majors (common.cuh) name the unit stride's mode: A (M,K) "k"-major
is row-major, B (K,N) "n"-major and C (M,N) "n"-major too; "any" takes every stride pattern."""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, replace
from typing import Callable, ClassVar, Literal, Protocol, get_args, runtime_checkable

from ..base import precisions
from ..base.errors import InputError, ShapeLimitError
from .epilogue import FUSED_SOURCES, EpilogueSpec

# the precision table's views, where the kernels' records import them
PrecisionName = precisions.PrecisionName
PRECISIONS, PRECISION_DTYPE, UNIT = precisions.PRECISIONS, precisions.PRECISION_DTYPE, precisions.UNIT
ITEMSIZE, FP32_ACCURATE = precisions.ITEMSIZE, precisions.FP32_ACCURATE

ARCHS = ("sm_80", "sm_90")          # every kernel is compiled for these in CI

# int32 arrival counters at the start of every stream-K and cut-walk workspace, a fixed count so
# launches of any size share one (>= 2 per CTA: streamk.stream_k_ctas keeps to it); device code
# reads it as CUTE_GEMM_STREAM_K_COUNTERS
STREAM_K_COUNTERS = 8192


def device_constants(**values: int) -> str:
    """Constants host and device code share, as `#define CUTE_GEMM_<NAME> <value>` for a cpp()."""
    return "".join(f"#define CUTE_GEMM_{name} {int(v)}\n" for name, v in values.items())


@runtime_checkable
class KernelConfig(Protocol):
    """What every registered kernel is configured by (Kernel.config): a frozen dataclass of its
    family whose values reach the compiler only through cpp(), the C++ prelude compile.read_source
    puts in front of kernel `name`'s source (no -D options, no defaults in the sources). tile:
    (BM, BN, BK) or None; smem: the data-parallel entries' dynamic smem at M x N x K."""

    @property
    def tile(self) -> tuple[int, int, int] | None: ...

    @property
    def threads(self) -> int: ...

    def smem(self, m: int, n: int, k: int) -> int: ...

    def cpp(self, name: str) -> str: ...


class FixedTile:
    """KernelConfig's tile and smem for a configuration of blk_m, blk_n, blk_k and a fixed dyn_smem."""

    @property
    def tile(self) -> tuple[int, int, int]:
        return self.blk_m, self.blk_n, self.blk_k

    def smem(self, m: int, n: int, k: int) -> int:
        return self.dyn_smem


def constexprs(owner: str, **values: int | None) -> str:
    """`constexpr int NAME = value;` per value that is not None, after a comment naming `owner`."""
    body = "".join(f"constexpr int {n} = {int(v)};\n" for n, v in values.items() if v is not None)
    return f"// {owner}\n{body}"


def config_struct(config, name: str, owner: str, derived: tuple[str, ...] = (), skip: str = "") -> str:
    """`struct Config` of a configuration's fields but `skip`, then its `derived` values, each a
    `static constexpr` member (bool; cg::Epi for epi_*; else int)."""
    def member(f: str) -> str:
        v = getattr(config, f)
        t, v = (("cg::Epi", f"cg::Epi::{v}") if f.startswith("epi_") else
                ("bool", str(v).lower()) if isinstance(v, bool) else ("int", v))
        return f"  static constexpr {t} {f} = {v};\n"
    fields = [f.name for f in dataclasses.fields(config) if f.name != skip] + list(derived)
    return f"struct Config {{   // {name or 'a configuration'}: {owner}\n{''.join(map(member, fields))}}};\n"


# Operand layouts as users name them, op(A) op(B) as BLAS's transa/transb: "n" the array as it
# is (row-major), "t" its transposed view. Kernels say majors; layout_majors translates.
LayoutName = Literal["nn", "tn", "nt", "tt"]
LAYOUTS: tuple[str, ...] = get_args(LayoutName)


def layout_majors(layout: str) -> tuple[str, str]:
    """(A major, B major) of an operand layout ("n": k-major A, n-major B; "t" the others)."""
    if layout not in LAYOUTS:
        raise InputError(f"operand layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    return ("k" if layout[0] == "n" else "m"), ("n" if layout[1] == "n" else "k")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Pick:
    """How a call asks for its kernel's launch beyond the kernel's own plan (auto.Choice).
    transposed: on C^T = B^T A^T. split_k > 0: that many CTAs per tile on even runs of K, reduced
    by the stream-K twin, or with `reduce` by a reduction launch (plan/modes.py)."""
    transposed: bool = False
    split_k: int = 0
    reduce: bool = False


AS_PLANNED = Pick()


@dataclass(frozen=True)
class TmaBoxes:
    """The boxes of the TMA maps of A and B an entry takes (CG_TMA_PARAMS): one load's extents,
    in elements, (contiguous, other)."""
    a: tuple[int, int]
    b: tuple[int, int]
    swizzle: int = 128     # bytes: 0 (none), 32, 64 or 128


@dataclass(frozen=True)
class Variant:
    """One extern "C" entry point of a kernel source and the operands it accepts."""
    entry: str
    a_major: str = "k"          # "k" | "m" | "any"
    b_major: str = "n"          # "n" | "k" | "any"
    c_major: str = "n"          # "n" | "m" | "any"
    align: int = 1              # elements: leading strides and base pointers are multiples of this
    align_roles: str = "abc"    # the operands align and extent_align apply to: those moved in vectors
    extent_align: int = 1       # ... their contiguous extent's multiple (no vector straddles a row's end)
    # the twins of the launch modes (plan/modes.py), entry points of the same operands, or "":
    stream_k: str = ""          # NAME_sk: persistent stream-K after NAME (+ float* ws, int tile0; streamk.cuh)
    stream_k_fill: float = 1.0  # ... taken below this fill of the last wave (< 1: slower per tile
                                # than NAME; 0: for split picks only)
    stream_k_swap: bool = False  # ... computing C^T = B^T A^T (A m-major / B k-major turned)
    split: str = ""             # NAME_part: an even share of K per CTA into a workspace (+ float* ws, int split)
    cut: str = ""               # NAME_cut: a persistent walk, last wave cut along K (+ float* ws, int dp, pieces)
    batch: str = ""             # NAME_b: the entry on a batch (+ CG_BATCH_PARAMS) where it takes none itself
    precision: str = "fp32"     # PRECISIONS: the arithmetic, and so the type of A and B
    out_dtype: str = "float32"  # the type of C and the result: one of the precision's outs
    tma: TmaBoxes | None = None  # the entry also takes TMA tensor maps of A and B
    walks_transposed: bool = False  # the entry computes C^T = B^T A^T itself: its walk's tiles are C^T's
    register_a: bool = False    # the (walked) A reaches the tensor cores from registers (RS wgmma)

    @property
    def dtype(self) -> str:
        """The element type of A and B."""
        return PRECISION_DTYPE[self.precision]

    def __repr__(self) -> str:   # one line: kernels() lists dozens
        twin = (f", stream-K twin {self.stream_k}" if self.stream_k else
                f", cut twin {self.cut}" if self.cut else "")
        prec = "" if self.precision == "fp32" else f" {self.precision}->{self.out_dtype}"
        return (f"<Variant {self.entry}{prec}: A {self.a_major}-major, B {self.b_major}-major, "
                f"C {self.c_major}-major, align {self.align}{twin}>")

    def takes(self, role: str, major: str | None, align: int) -> bool:
        """takes_all of one operand."""
        return self.takes_all({role: (major, align)})

    def takes_all(self, fits: dict, extents: tuple[int, int, int] | None = None) -> bool:
        """The one acceptance rule: this entry takes every operand of `fits` (role -> (major,
        align in elements; 0: not even one)) as it is, and at `extents` (M, N, K), where given,
        each vector operand's contiguous extent is a multiple of extent_align."""
        if extents is not None:
            extent = dict(zip("mnk", extents))
            if any(extent.get(getattr(self, f"{r}_major"), 0) % self.extent_align for r in self.align_roles):
                return False
        return all(align > 0 and getattr(self, f"{role}_major") in ("any", major)
                   and (role not in self.align_roles or align % self.align == 0)
                   for role, (major, align) in fits.items())


# ---- grid policies: (M, N, K) -> grid (x, y, z) -------------------------------------
# `span`: the rows and columns of C one launch covers, by CUDA's grid limits and EXTENT_MAX (32-bit
# indices plus a tile never wrap below it); run() cuts larger problems (Kernel.launch_extents).
GRID_X_MAX, GRID_YZ_MAX = 2**31 - 1, 65535
EXTENT_MAX = 2**30
ONE_LAUNCH = 65535      # every extent up to it: one launch of any kernel (tests/test_registry.py)


@dataclass(frozen=True)
class TileGrid:
    """One block per (BM, BN) tile of C: x walks N, y walks M."""
    bm: int
    bn: int
    x_walks_m: ClassVar[bool] = False

    def __call__(self, m: int, n: int, k: int, sm_count: int = 0) -> tuple[int, int, int]:
        rows, cols = -(-m // self.bm), -(-n // self.bn)
        return (rows, cols, 1) if self.x_walks_m else (cols, rows, 1)

    def span(self, n: int) -> tuple[int, int]:
        rows, cols = (GRID_X_MAX, GRID_YZ_MAX) if self.x_walks_m else (GRID_YZ_MAX, GRID_X_MAX)
        return rows * self.bm, cols * self.bn


@dataclass(frozen=True)
class TileGridMN(TileGrid):
    """One block per (BM, BN) tile of C: x walks M, y walks N (CuTe's (m,n) order)."""
    x_walks_m: ClassVar[bool] = True


@dataclass(frozen=True)
class TileWalkN(TileGridMN):
    """x walks M's tiles; along y, as many CTAs as fill the GPU `waves` times over
    (ctas_per_sm an SM), each walking its row's tiles of C gridDim.y apart (cute_tiny_k)."""
    ctas_per_sm: int = 1
    waves: int = 2

    def __call__(self, m: int, n: int, k: int, sm_count: int = 0) -> tuple[int, int, int]:
        rows, cols = cdiv(m, self.bm), cdiv(n, self.bn)
        if sm_count:
            cols = min(cols, max(1, cdiv(self.waves * sm_count * self.ctas_per_sm, rows)))
        return rows, cols, 1


@dataclass(frozen=True)
class FlatGrid:
    """A 1D grid of `threads`-thread blocks covering M*N elements."""
    threads: int

    def __call__(self, m: int, n: int, k: int, sm_count: int = 0) -> tuple[int, int, int]:
        return (cdiv(m * n, self.threads), 1, 1)

    def span(self, n: int) -> tuple[int, int]:
        cols = min(n, EXTENT_MAX)
        return max(1, GRID_X_MAX * self.threads // cols), cols


@dataclass(frozen=True)
class RowGrid:
    """One block per row of C."""

    def __call__(self, m: int, n: int, k: int, sm_count: int = 0) -> tuple[int, int, int]:
        return (m, 1, 1)

    def span(self, n: int) -> tuple[int, int]:
        return GRID_X_MAX, EXTENT_MAX


@dataclass(frozen=True)
class CutModel:
    """How tail_split_plan prices the cut of a unit along K, in windows: each piece runs at least
    `min_windows` and costs `overhead` more, the last reads each other piece's partial at
    `fixup`, a cluster holds at most `rounds` items of the cut round (docs/design/cute_wgmma_ws.md)."""
    min_windows: int = 8
    overhead: float = 2
    fixup: float = 0
    rounds: int = 2


def tail_split_plan(units: int, clusters: int, windows: int, max_pieces: int,
                    model: CutModel = CutModel()) -> tuple[int, int]:
    """(dp, pieces): units [dp, units) of a persistent walk (its last round's) cut along K into
    `pieces` runs of whole windows, the count up to max_pieces that finishes soonest by the
    model; (units, 1) where no cut gains."""
    tail = units % clusters if units >= clusters else units
    if tail == 0 or max_pieces < 2:
        return units, 1
    most = min(max_pieces, windows // model.min_windows, model.rounds * clusters // tail)
    best, least = 1, windows        # (s pieces: rounds of them, each its windows and more)
    for s in range(2, most + 1):
        cost = (-(-tail * s // clusters) * (-(-windows // s) + model.overhead)
                + model.fixup * (s - 1))
        if cost < least:
            best, least = s, cost
    return (units, 1) if best == 1 else (units - tail, best)


@dataclass(frozen=True)
class PersistentGrid:
    """A persistent kernel: min(tiles, SMs x ctas_per_sm) CTAs along x walking (BM, BN) tiles
    of C. With clusters of `cluster` CTAs along m the grid is whole clusters, each walking units
    of `cluster` tiles (assuming every SM holds a cluster's CTA: true for 2 on the H100)."""
    bm: int
    bn: int
    ctas_per_sm: int = 1
    cluster: int = 1
    tail_split: int = 0     # > 0: the last wave's units cut along K into up to this many pieces
    window_bytes: int = 4   # ... a window, the k a piece is counted in: bytes of A's rows
    partials: int = 2       # ... the fp32 tiles a piece stores (promoted: sum and error; else 1)
    cut: CutModel = CutModel()   # ... how tail_split_plan prices a cut

    def units(self, m: int, n: int) -> int:
        return cdiv(cdiv(m, self.bm), self.cluster) * cdiv(n, self.bn)

    def clusters(self, sm_count: int) -> int:
        return max(1, (sm_count or 1) * self.ctas_per_sm // self.cluster)

    def split(self, m: int, n: int, k: int, sm_count: int = 0, cut: bool = True,
              itemsize: int = 4) -> tuple[int, int]:
        """(dp, pieces) of the walk at M x N x K (tail_split_plan); (units, 1) where none is
        cut (or not `cut`: stream-K turned off)."""
        units = self.units(m, n)
        if not (self.tail_split and cut):
            return units, 1
        return tail_split_plan(units, self.clusters(sm_count),
                               cdiv(k * itemsize, self.window_bytes), self.tail_split, self.cut)

    def walk(self, m: int, n: int, k: int, sm_count: int = 0, cut: bool = True,
             itemsize: int = 4) -> tuple[tuple[int, int], tuple[int, int, int]]:
        """((dp, pieces), grid): the split, and a cluster per item (at most `clusters`)."""
        dp, pieces = self.split(m, n, k, sm_count, cut, itemsize)
        items = dp + (self.units(m, n) - dp) * pieces
        return (dp, pieces), (min(items, self.clusters(sm_count)) * self.cluster, 1, 1)

    def __call__(self, m: int, n: int, k: int, sm_count: int = 0, cut: bool = True,
                 itemsize: int = 4) -> tuple[int, int, int]:
        return self.walk(m, n, k, sm_count, cut, itemsize)[1]

    def batch_walk(self, m: int, n: int, problems: int, sm_count: int = 0) -> tuple[int, int, int]:
        """The grid of a batched twin (Variant.batch): its walk is never cut."""
        return min(self.units(m, n) * problems, self.clusters(sm_count)) * self.cluster, 1, 1

    def span(self, n: int) -> tuple[int, int]:
        cols = min(n, EXTENT_MAX)
        return max(self.bm, GRID_X_MAX // cdiv(cols, self.bn) * self.bm), cols


@dataclass(frozen=True)
class SplitGrid:
    """A composed kernel's pre-pass, a launch per operand as a (rows, K) matrix: a block per
    (tile x tile) tile, x over rows, y over K, capped at the grid limits (the kernel loops past
    them). (M, N, K) -> A's grid."""
    tile: int = 32

    def of(self, rows: int, k: int) -> tuple[int, int, int]:
        t = self.tile
        return (max(1, min(cdiv(rows, t), GRID_X_MAX)), max(1, min(cdiv(k, t), GRID_YZ_MAX)), 1)

    def __call__(self, m: int, n: int, k: int, sm_count: int = 0) -> tuple[int, int, int]:
        return self.of(m, k)

    def span(self, n: int) -> tuple[int, int]:
        return EXTENT_MAX, EXTENT_MAX


# ---- dynamic shared memory policies: (M, N, K) -> bytes ----------------------------
@dataclass(frozen=True)
class StripSmem:
    """Whole-K strips: rows_a rows of A and cols_b columns of B, K floats each, rounded up to
    16 bytes: ptxas widens a strip's last reads to LDS.128 of the aligned 16 bytes around them."""
    rows_a: int
    cols_b: int

    def __call__(self, m: int, n: int, k: int) -> int:
        return cdiv(4 * k * (self.rows_a + self.cols_b), 16) * 16

    def max_k(self, limit_bytes: int) -> int:
        return (limit_bytes // 16 * 16) // (4 * (self.rows_a + self.cols_b))


@dataclass(frozen=True)
class FixedSmem:
    nbytes: int

    def __call__(self, m: int, n: int, k: int) -> int:
        return self.nbytes


@dataclass(frozen=True)
class GemmOf:
    """A composed kernel (Kernel.gemm_of): its variants are a pre-pass writing k-major A' and B'
    (k_parts parts of each chunk of k_chunk columns side by side), then `kernel` runs in
    `precision` on them through run()'s own path (unregistered where it reads them as more than
    a plain GEMM; registry.compiled() lists it)."""
    kernel: "Kernel"            # the GEMM that runs on A', B'
    precision: str              # ... in this precision (PRECISIONS)
    k_parts: int                # parts stored per element: K' = k_parts * K rounded up to chunks
    k_chunk: int = 1            # columns of k per chunk (the GEMM's k-tile: it promotes per chunk)
    k_reads: int = 0            # k-tiles the GEMM reads per chunk (0: k_parts): bounds a launch's K

    def k_prime(self, k: int) -> int:
        """K' of A' and B': k_parts columns per column of K, K rounded up to whole chunks."""
        return self.k_parts * cdiv(k, self.k_chunk) * self.k_chunk


# the sources whose plain entry points take CG_BATCH_PARAMS; cute_pipelined's have batched
# twins instead (Variant.batch), the step costing its entries registers (docs/design/batched.md)
BATCHED_SOURCES = frozenset({"cute/c4_mma_sm80.cu", "cute/c8_tiny_k.cu",
                             "handwritten/v9_warptile.cu", "util/scale2d.cu"})


def fused_name(name: str, spec: EpilogueSpec) -> str:
    """The name of kernel `name` compiled with the fused epilogue `spec`: <name>:<spec.tag>."""
    return f"{name}:{spec.tag}"


@dataclass(frozen=True)
class Kernel:
    """One registered kernel: its source, entry points (variants), launch policies and config."""
    name: str
    family: str                          # "handwritten" | "cute"
    source: str                          # path under kernels/
    variants: tuple[Variant, ...]        # tried in order (tests/test_registry.py: the fallbacks)
    block: tuple[int, int, int]          # threads per block
    grid: Callable[..., tuple[int, int, int]]   # (M, N, K, SM count) -> grid
    summary: str
    seed: str                            # seed stage it reproduces
    config: KernelConfig | None = None   # the one way values reach the source; None: helper kernels
    options: tuple[str, ...] = ()        # extra NVRTC options (e.g. --ptxas-options=...)
    tile: tuple[int, int, int] | None = None    # (BM, BN, BK) for docs and tests
    # (M, N, K) -> dynamic smem bytes, a policy called as `grid` is (FixedSmem(0): none)
    dyn_smem: Callable[[int, int, int], int] = FixedSmem(0)
    stream_k_smem: Callable[[int, int, int], int] | None = None    # the twins', where less
    min_arch: int = 80                   # compute capability * 10
    arch_specific: bool = False          # compiled for sm_90a (wgmma, setmaxnreg): runs there only
    constraints: str = "any M, N, K >= 1"
    tags: tuple[str, ...] = ()
    gemm_of: GemmOf | None = None        # a composed kernel: its variants are the pre-pass's
    transpose_skinny: bool = False       # run() may compute C^T = B^T A^T (transposes)
    epilogue: EpilogueSpec | None = None     # the fused epilogue of this compile (with_epilogue)

    def __repr__(self) -> str:   # (the generated one prints every variant and policy: pages)
        tile = "x".join(map(str, self.tile)) if self.tile else "-"
        return (f"<Kernel {self.name} ({self.family}, {self.source}): tile {tile}, "
                f"{self.threads} threads, {len(self.entries)} entr{'y' if len(self.entries) == 1 else 'ies'}>")

    @property
    def batched(self) -> bool:
        """Whether it runs a batch of problems in one launch: its entries take CG_BATCH_PARAMS
        (plain_takes_batch), or each has a twin that does (Variant.batch)."""
        return self.plain_takes_batch or all(v.batch for v in self.variants)

    @functools.cached_property
    def plain_takes_batch(self) -> bool:
        """Whether its entries on its own grid take CG_BATCH_PARAMS (a 2-D call: a batch of one)."""
        return self.source in BATCHED_SOURCES

    @functools.cached_property
    def fused(self) -> bool:
        """Whether its entry points take a fused epilogue (CG_EPI_PARAMS, epilogue.cuh)."""
        return self.source in FUSED_SOURCES

    @property
    def takes_epilogue(self) -> bool:
        """Whether a call with a fused epilogue may run on it (fused, its config permitting)."""
        return self.fused and getattr(self.config, "takes_epilogue", True)

    @property
    def takes_block_scales(self) -> bool:
        """Whether a call with 8-bit operands' block scales may run on it."""
        return self.takes_epilogue and getattr(self.config, "block_scales", False)

    def with_epilogue(self, spec: EpilogueSpec) -> "Kernel":
        """This kernel compiled with a fused epilogue: a kernel of its own, named
        fused_name(name, spec) (registry.get takes such names), whose prelude defines it."""
        return replace(self, name=fused_name(self.name.split(":")[0], spec), epilogue=spec)

    @property
    def batch_modes(self) -> int:
        """The batch modes its launches walk: 2 (CG_BATCH_STEP, or a persistent kernel's twins'
        4-D tensor maps), 1 (cute_pipelined's twins step by the inner mode alone), 0."""
        if self.plain_takes_batch or (self.batched and hasattr(self.grid, "batch_walk")):
            return 2
        return 1 if self.batched else 0

    def batch_entry(self, v: Variant) -> str:
        """The entry point that runs variant v's launch on a batch ("" where none does)."""
        return v.batch or (v.entry if self.plain_takes_batch else "")

    @property
    def pdl(self) -> bool:
        """Split stream-K launches start the twin by programmatic dependent launch on sm_90+."""
        return bool(getattr(self.config, "pdl", False))

    @property
    def min_blocks(self) -> int:
        """CTAs per SM every entry point keeps resident (__launch_bounds__: the config's, else 1)."""
        return getattr(self.config, "min_blocks", None) or 1

    @property
    def precisions(self) -> tuple[str, ...]:
        """The arithmetic this kernel offers (records.PRECISIONS), in registry order."""
        return tuple(dict.fromkeys(v.precision for v in self.variants))

    def computes(self, precision: str, out_dtype: str) -> bool:
        """True if some entry point computes `precision` into a result of `out_dtype`."""
        return any(v.precision == precision and v.out_dtype == out_dtype for v in self.variants)

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The element types of A and B it reads."""
        return tuple(dict.fromkeys(PRECISION_DTYPE[p] for p in self.precisions))

    @property
    def archs(self) -> tuple[str, ...]:
        """The targets CI compiles it for."""
        if self.arch_specific:
            return (f"sm_{self.min_arch}a",)
        return tuple(a for a in ARCHS if int(a[3:]) >= self.min_arch)

    def runs_on(self, arch_int: int) -> bool:
        """True if it runs on compute capability `arch_int` (x10)."""
        return arch_int == self.min_arch if self.arch_specific else arch_int >= self.min_arch

    def target(self, arch_int: int) -> str:
        """The NVRTC target for a device of compute capability `arch_int` (x10)."""
        return f"sm_{arch_int}a" if self.arch_specific else f"sm_{arch_int}"

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def entries(self) -> tuple[str, ...]:
        """Every entry point of the source: the variants', then their twins' (stream-K, split, cut, batch)."""
        return tuple(dict.fromkeys(e for f in ("entry", "stream_k", "split", "cut", "batch")
                                   for v in self.variants if (e := getattr(v, f))))

    def fits_k(self, smem_limit: int) -> float | None:
        """The largest K at which its dynamic smem fits `smem_limit` bytes at any M and N (inf:
        every K; -1: none); None where it depends on M or N."""
        s = self.dyn_smem
        if isinstance(s, FixedSmem):
            return float("inf") if s.nbytes <= smem_limit else -1
        return s.max_k(smem_limit) if isinstance(s, StripSmem) else None

    def stream_k_smem_bytes(self, m: int, n: int, k: int) -> int:
        sk = self.stream_k_smem
        return sk(m, n, k) if sk is not None else self.dyn_smem(m, n, k)

    def transposes(self, m: int, n: int) -> bool:
        """True if its M x N product runs as C^T = B^T A^T (transpose_skinny): where that covers
        C with at most 7/8 of the tile area (not for a sliver less: it runs another entry)."""
        if not self.transpose_skinny or self.tile is None:
            return False
        bm, bn, _ = self.tile
        return 8 * cdiv(n, bm) * bm * cdiv(m, bn) * bn <= 7 * cdiv(m, bm) * bm * cdiv(n, bn) * bn

    def launch_extents(self, m: int, n: int, k: int,
                       transposed: bool = False) -> tuple[int, int, int]:
        """The largest (M, N, K) one launch takes, at most (m, n, k), by the grid's span (both
        grids' where it may run C^T) and EXTENT_MAX, cut to multiples of 256 (pieces keep their
        pointers' alignment). transposed: of the transposed problem."""
        if transposed:
            nc, mc, kc = self.launch_extents(n, m, k)
            return mc, nc, kc
        rows, cols = self.grid.span(n)
        if self.transpose_skinny:
            cols_t, rows_t = self.grid.span(m)
            rows, cols = min(rows, rows_t), min(cols, cols_t)
        # a composed kernel's GEMM runs over K' = k_prime(K): what it reads must fit one launch
        g = self.gemm_of
        reads = 0 if g is None else max(g.k_parts, g.k_reads)
        kmax = EXTENT_MAX if g is None else EXTENT_MAX // (reads * g.k_chunk) * g.k_chunk
        return tuple(x if x <= limit else max(limit // 256 * 256, 1)   # (cut to a multiple)
                     for x, limit in ((m, min(rows, EXTENT_MAX)), (n, min(cols, EXTENT_MAX)),
                                      (k, min(kmax, EXTENT_MAX))))

    def check_limits(self, m: int, n: int, k: int, smem_limit: int) -> None:
        """Raise ShapeLimitError if this shape needs more dynamic smem than the device has."""
        need = self.dyn_smem(m, n, k)
        if need > smem_limit:
            max_k = getattr(self.dyn_smem, "max_k", None)
            hint = f"; this kernel handles K <= {max_k(smem_limit)}" if max_k else ""
            raise ShapeLimitError(
                f"kernel {self.name!r} needs {need} bytes of shared memory for "
                f"M={m}, N={n}, K={k}, but the device allows {smem_limit} bytes per block"
                f"{hint} ({self.constraints})")
