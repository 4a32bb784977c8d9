"""gemm()'s selector: which kernel tagged "auto" runs a call, and whether on C^T = B^T A^T.
The row of the shape in the GPU's tune tables (autotable.py), else the nearest rows scaled to
it (nearest.py), else the rules below (docs/design/auto.md); an accuracy contract takes the
fastest precision that keeps it (_kept). The pick is a function of the call's class, shape and
the tables (read once per process), so run()'s hot path may key on it."""
from __future__ import annotations

import math
from dataclasses import replace

from . import autotable
from .. import registry
from ..base import memo
from ..driver import launch
from ..plan import modes, resolve
from ..plan.streamk import split_k_ctas
from .choice import Choice
from .contract import answering, runs_at
from .nearest import from_tables, searched_rows
from ..base.errors import CuteGemmError, DTypeError, ShapeLimitError
from ..base.precisions import PRECISION
from ..registry.records import (ITEMSIZE, LAYOUTS, PRECISION_DTYPE, PRECISIONS, cdiv,
                                layout_majors)

TAG = "auto"                       # Kernel.tags: a candidate of the selector
TINY_TILES = 4      # heuristic, SIMT: C in at most this many of the largest tiles is "tiny"
# heuristic, tensor cores: the kernel tagged SMALL reads unaligned operands of a problem of at
# most SMALL_K_TILES k-tiles and C within SMALL_WAVES waves of tiles, or of at most
# SPLIT_K_TILES where each tile's SPLIT_MOST shares fit one wave; from SPLIT_MIN_K_TILES of its
# own k-tiles it splits K, the most shares up to SPLIT_MOST in one wave (_small_problem)
SMALL, SMALL_K_TILES, SMALL_WAVES = "small", 12, 2
SPLIT_K_TILES, SPLIT_MIN_K_TILES, SPLIT_MOST = 40, 8, 8
# tiny_k: the kernel tagged TINY answers SIMT fp32 K <= TINY_K_SIMT; tensor cores K <= TINY_K
# where the TMA kernels would copy the operands, C of at most TINY_TC_MN elements
TINY, TINY_K, TINY_K_SIMT, TINY_TC_MN = "tiny_k", 32, 24, 1 << 24


def candidates(precision: str, out_dtype: str | None = None, arch_int: int | None = None,
               exactly: bool = False) -> tuple[registry.Kernel, ...]:
    """The kernels tagged "auto" that answer `precision` (`exactly`: compute it themselves)
    into `out_dtype` and run on `arch_int` (each where given), in registry order."""
    ks = registry.KERNELS
    key = (precision, out_dtype, arch_int, exactly)
    hit = _candidates.get(key)
    if hit is not None and hit[0] is ks:        # (the same registry: tests may swap it)
        return hit[1]
    found = tuple(k for k in ks
                  if TAG in k.tags and (arch_int is None or k.runs_on(arch_int))
                  and (runs_at(k, precision, out_dtype) == precision if exactly
                       else runs_at(k, precision, out_dtype) is not None))
    _candidates[key] = (ks, found)
    return found


_candidates: dict = {}  # (precision, out_dtype, arch_int, exactly) -> (registry.KERNELS, found)


def offers(precision: str, out_dtype: str | None = None, arch_int: int | None = None) -> bool:
    """True if gemm() has a candidate for `precision` (on that compute capability)."""
    return bool(candidates(precision, out_dtype, arch_int))


def _named(precision: str, out_dtype: str, exactly: bool = False) -> tuple[registry.Kernel, ...]:
    named = candidates(precision, out_dtype, exactly=exactly)
    if not named:
        raise DTypeError(f"gemm() has no kernel that computes {precision} into {out_dtype}; "
                         f"it computes: {', '.join(p for p in PRECISIONS if offers(p)) or 'nothing'}")
    return named


def on_device(precision: str, out_dtype: str, device, exactly: bool = False) -> tuple:
    """(candidate, the largest K its shared memory fits) of each that runs on `device` (a
    launch.DeviceInfo); a named error, before any launch, where none does."""
    named, arch = _named(precision, out_dtype, exactly), device.arch_int
    here = candidates(precision, out_dtype, arch, exactly)
    if not here:
        need = ", ".join(f"{x.name} needs sm_{x.min_arch}" + ("" if x.arch_specific else "+")
                         for x in named)
        raise CuteGemmError(f"gemm(): no kernel computes {precision} on {device.name} "
                            f"(sm_{device.arch_int}): {need}")
    return tuple((x, x.fits_k(device.smem_optin)) for x in here)


def fitting(bounds: tuple, precision: str, device, m: int, n: int, k: int) -> tuple:
    """The kernels of on_device's `bounds` that fit M x N x K; a named error where none does."""
    fits = tuple(x for x, kmax in bounds if (k <= kmax if kmax is not None
                                            else x.dyn_smem(m, n, k) <= device.smem_optin))
    if not fits:
        raise ShapeLimitError(f"gemm(): every {precision} kernel needs more shared memory for "
                              f"M={m}, N={n}, K={k} than {device.name} allows ({device.smem_optin} B)")
    return fits


SPLIT_KS = (2, 3, 4, 6, 8, 12, 16, 24, 32)     # split_k counts (CTAs per tile) to weigh


def split_ks(x: registry.Kernel, m: int, n: int, k: int, sm_count: int) -> list[int]:
    """The SPLIT_KS worth timing for kernel x (with stream-K twins) on M x N x K: those
    split_k_ctas takes with twice its resident CTAs (resolve reads the real occupancy)."""
    if not sm_count or not modes.offers(x, modes.STREAM_K):
        return []
    bm, bn, bk = x.tile
    tiles = min(cdiv(m, bm) * cdiv(n, bn), cdiv(n, bm) * cdiv(m, bn))   # either way round
    return [s for s in SPLIT_KS
            if split_k_ctas(tiles, cdiv(k, bk), s, 2 * sm_count * x.min_blocks)]


def keys(m: int, n: int, k: int, precision: str, out_dtype: str, arch_int: int,
         smem_optin: int, sm_count: int = 0) -> tuple[str, ...]:
    """Every way gemm() may run the problem in `precision` itself, as tune table keys: each
    candidate that fits, as given and (M != N) transposed, plain and with each split_ks count
    (sm_count 0: none), reduced by its stream-K twin and, where offered, a reduction launch."""
    ks = [x for x in candidates(precision, out_dtype, arch_int, exactly=True)
          if x.dyn_smem(m, n, k) <= smem_optin]
    return tuple(Choice(x.name, turned, split_k=s, reduce=r).key
                 for turned in (False, True)[:1 + (m != n)] for x in ks
                 for s, r in [(0, False)] + [(s, r) for s in split_ks(x, m, n, k, sm_count)
                                             for r in (False, True)[:1 + modes.offers(x, modes.SPLIT_REDUCE)]])


def contiguous_aligned(m: int, n: int, k: int, layout: str = "nn", precision: str = "fp32",
                       out_dtype: str = "float32") -> bool:
    """Signature.aligned of fresh contiguous operands in `layout` (what tune measures)."""
    a_major, b_major = layout_majors(layout)
    e, eo = ITEMSIZE[PRECISION_DTYPE[precision]], ITEMSIZE[out_dtype]
    lda = k if a_major == "k" else m
    ldb = n if b_major == "n" else k
    return all(x % 16 == 0 for x in (lda * e, ldb * e, n * eo))


_memo: dict = {}        # choose()'s answers, keyed on the tables' generation too
_classes: dict = {}     # its _Class per (class of calls, device, generation, exactly)


class _Class:
    """What choose() knows of a class of calls before their shape: whether a contract answers
    them, else the candidates on the device (`k_fits`: the K every one fits), the tables,
    their searched rows and from_tables' memo."""

    def __init__(self, device, layout, precision, out_dtype, aligned, exactly, tables):
        self.ks, self.contract = registry.KERNELS, not exactly and len(answering(precision)) > 1
        if self.contract:
            return
        self.bounds = on_device(precision, out_dtype, device, exactly)
        self.allowed = frozenset(x.name for x, _ in self.bounds)
        self.all = tuple(x for x, _ in self.bounds)
        self.k_fits = min((-1 if kmax is None else kmax for _, kmax in self.bounds), default=-1)
        kept = tables is None      # (the rows searched: kept for this generation)
        self.tables = autotable.tables_for(device.name) if kept else tables
        self.rows = searched_rows(self.tables, layout, precision, aligned)
        self.scaled = {} if kept else None


def choose(m: int, n: int, k: int, *, device, layout: str = "nn", precision: str = "fp32",
           out_dtype: str = "float32", aligned: bool = True, tables=None,
           exactly: bool = False) -> Choice:
    """What gemm() runs for this problem on `device`, from `tables` (None: the GPU's);
    `exactly`: among the kernels that compute `precision` itself."""
    key = cls = None
    if tables is None:
        gen = autotable.GENERATION
        key = (m, n, k, layout, precision, out_dtype, aligned, device.name, device.arch_int,
               device.smem_optin, gen, exactly)
        hit = _memo.get(key)
        if hit is not None:
            return hit
        ckey = key[3:10] + (device.sm_count, gen, exactly)
        cls = _classes.get(ckey)
        if cls is not None and cls.ks is not registry.KERNELS:     # (tests may swap it)
            cls = None
    if layout not in LAYOUTS:
        layout_majors(layout)                                   # its named error
    if cls is None:
        cls = _Class(device, layout, precision, out_dtype, aligned, exactly, tables)
        if key is not None:
            if len(_classes) >= memo.ENTRIES:       # (bounded: base/memo.py)
                _classes.clear()
            _classes[ckey] = cls
    if cls.contract:
        choice = _kept(m, n, k, device, layout, precision, out_dtype, aligned, tables)
    else:
        ks = cls.all if k <= cls.k_fits else fitting(cls.bounds, precision, device, m, n, k)
        choice = from_tables(cls.tables, m, n, k, layout, precision, aligned,
                             cls.allowed if len(ks) == len(cls.bounds) else {x.name for x in ks},
                             cls.rows, device.sm_count, cls.scaled)
        if k <= max(TINY_K, TINY_K_SIMT) and (choice is None or choice.source != "table"):
            choice = tiny_k(ks, m, n, k, precision, layout, out_dtype) or choice  # (a row wins)
        if choice is None:
            ks = [x for x in ks if TINY not in x.tags] or ks     # (it runs any K: a last resort)
            choice = heuristic(ks, m, n, k, precision, layout, device.sm_count, out_dtype)
    if key is not None:
        if len(_memo) >= memo.ENTRIES:
            _memo.clear()
        _memo[key] = choice
    return choice


def tiny_k(ks, m: int, n: int, k: int, precision: str, layout: str = "nn",
           out_dtype: str = "float32") -> Choice | None:
    """The candidate tagged TINY (C in one pass, operands read as they are) for a small K
    where it measured faster; None where the rule does not apply (auto.md#tiny-k)."""
    x = next((x for x in ks if TINY in x.tags), None)
    tc = PRECISION[precision].tensor_cores
    limit = TINY_K if tc else TINY_K_SIMT
    if x is None or k > limit or tc and (m * n > TINY_TC_MN or not _tma_copies(
            ks, m, n, k, precision, layout, out_dtype)):
        return None
    return Choice(x.name, why=f"K = {k} <= {limit}" + (
        " with operands the TMA kernels would copy: one pass over a k-tile, operands read as "
        "they are" if tc else ": one pass over a k-tile"))


def _tma_copies(ks, m: int, n: int, k: int, precision: str, layout: str, out_dtype: str) -> bool:
    """Whether every TMA (arch-specific) candidate would copy an operand first; False
    without one."""
    tma = [x for x in ks if x.arch_specific]
    classes = resolve.shape_class(m, n, k)
    return bool(tma) and all(resolve.choose_contiguous(x, m, n, k, layout, precision, out_dtype,
                                                       classes)[1] for x in tma)


def tile_area(x: registry.Kernel) -> int:
    return x.tile[0] * x.tile[1] if x.tile else 0


def transposed_layout(layout: str) -> str:
    """The operand layout of C^T = B^T A^T (A' = B^T, B' = A^T)."""
    flip = {"n": "t", "t": "n"}
    return flip[layout[1]] + flip[layout[0]]


def heuristic(ks, m: int, n: int, k: int, precision: str, layout: str = "nn",
              sm_count: int = 0, out_dtype: str = "float32") -> Choice:
    """The rules for a problem no table covers (docs/design/auto.md#the-heuristic). Tensor
    cores: the kernels built for the newest instructions here, the walk of least cost, as
    given or transposed. SIMT: a C of TINY_TILES at most on the smallest tiles, else the
    largest, a stream-K one first."""
    ks = list(ks)       # (a list: _simt compares it with the kept one)
    if len(ks) == 1:
        return Choice(ks[0].name, why="the only candidate")
    if PRECISION[precision].tensor_cores:
        small = _small_problem(ks, m, n, k, precision, layout, sm_count, out_dtype)
        if small:
            return small
        newest = max((x.arch_specific, x.min_arch) for x in ks)
        ks = [x for x in ks if (x.arch_specific, x.min_arch) == newest]
        built = (f"tensor cores: built for sm_{newest[1]}" + ("a" if newest[0] else "+")
                 + ", the newest instructions here")
        walks, given = [], []
        cm, cn, ck = resolve.shape_class(m, n, k)
        ways = ((False, layout, m, n, (cm, cn, ck)),
                (True, transposed_layout(layout), n, m, (cn, cm, ck)))
        for x in ks:
            if not isinstance(x.grid, registry.PersistentGrid) or not sm_count:
                continue
            for turned, lay, pm, pn, classes in ways:
                v, copies = resolve.choose_contiguous(x, pm, pn, k, lay, precision, out_dtype,
                                                      classes)
                if not turned:
                    given.append((x, v))
                if not copies and (not turned or m != n):
                    walks.append((modes.WALK.cost(x, pm, pn, k, precision, sm_count, variant=v),
                                  -tile_area(x), turned, x.name))
        # no entry takes the operands either way: the problem as given, after a relayout
        walks = walks or [(modes.WALK.cost(x, m, n, k, precision, sm_count, variant=v),
                           -tile_area(x), False, x.name) for x, v in given]
        if not walks:
            return Choice(ks[0].name, why=built)
        cost, _, turned, name = min(walks)
        return Choice(name, turned, why=f"{built}; the walk of least cost on {sm_count} SMs "
                      f"(cost {cost / 2 ** 20:.3g} M)")
    hit = _simt.get(tuple(x.name for x in ks))
    if hit is None or hit[0] != ks:     # (the same kernels: tests may register others)
        big = max(ks, key=lambda x: (tile_area(x), modes.offers(x, modes.STREAM_K)))
        tiled = [x for x in ks if tile_area(x)]
        small = min(tiled, key=tile_area) if tiled else big
        if len(_simt) >= memo.ENTRIES:      # (bounded: base/memo.py)
            _simt.clear()
        hit = _simt[tuple(x.name for x in ks)] = (
            ks, big, small, tile_area(small) < tile_area(big), "the largest tiles" + (
                ", stream-K for a partial last wave" if modes.offers(big, modes.STREAM_K) else ""))
    _, big, small, smaller, why = hit
    tiles = -(-m // big.tile[0]) * -(-n // big.tile[1]) if big.tile else 0
    if big.tile and tiles <= TINY_TILES and smaller:
        return Choice(small.name, why=f"C is {tiles} tile{'s' if tiles != 1 else ''} of "
                      f"{big.name}: smaller tiles put it on more SMs")
    return Choice(big.name, why=why)


_simt: dict = {}    # heuristic's SIMT candidates -> (them, the largest, the smallest tiles, ...)


def _small_problem(ks, m: int, n: int, k: int, precision: str, layout: str, sm_count: int,
                   out_dtype: str) -> Choice | None:
    """The kernel tagged SMALL (one launch, split along K where K is long enough) for a small
    problem whose operands every TMA kernel would copy first (three); None where the rule does
    not apply (auto.md#small-unaligned)."""
    smalls = [x for x in ks if SMALL in x.tags and x.tile]
    if not smalls or not sm_count or not _tma_copies(ks, m, n, k, precision, layout, out_dtype):
        return None
    classes = resolve.shape_class(m, n, k)
    for x in smalls:
        kt = cdiv(k, x.tile[2] * 2 // PRECISION[precision].itemsize)   # 128-byte k-tiles
        tiles = cdiv(m, x.tile[0]) * cdiv(n, x.tile[1])
        if (not (kt <= SMALL_K_TILES and tiles <= SMALL_WAVES * sm_count
                 or kt <= SPLIT_K_TILES and tiles * SPLIT_MOST <= sm_count)
                or resolve.choose_contiguous(x, m, n, k, layout, precision, out_dtype, classes)[1]):
            continue
        split = _small_split(x, m, n, k, tiles, sm_count)
        return Choice(x.name, split_k=split, why=(
            f"a small problem ({kt} k-tile{'s' if kt != 1 else ''}, {tiles} tile"
            f"{'s' if tiles != 1 else ''}) with operands "
            "the TMA kernels would copy: read as they are, one launch"
            + (f", K split in {split} (the most shares in one wave)" if split else "")))
    return None


def _small_split(x: registry.Kernel, m: int, n: int, k: int, tiles: int, sm_count: int) -> int:
    """Shares of K a tile of the small kernel's problem takes: from SPLIT_MIN_K_TILES of its
    k-tiles, the most of split_ks up to SPLIT_MOST (a cluster's on sm_90) with every share
    in one wave; 0: none (docs/design/auto.md#small-splits)."""
    if cdiv(k, x.tile[2]) < SPLIT_MIN_K_TILES:
        return 0
    return max((s for s in split_ks(x, m, n, k, sm_count)
                if s <= SPLIT_MOST and tiles * s <= sm_count), default=0)


def pick(sig, precision: str, out_dtype: str, ordinal: int | None) -> Choice:
    """The choice for a validated call (signature.Signature) on device `ordinal`; None: no
    products to compute, which any candidate answers without a launch."""
    if ordinal is None:
        x = _named(precision, out_dtype)[0]
        p = runs_at(x, precision, out_dtype)      # (a contract's first answer may be another's)
        return Choice(x.name, why="no products to compute", precision=None if p == precision else p)
    return choose(sig.m, sig.n, sig.k, device=launch.device_info(ordinal), layout=sig.layout,
                  precision=precision, out_dtype=out_dtype, aligned=sig.aligned)


# accuracy contracts: a call's host ms per driver call (docs/design/host_overhead.md)
HOST_CALL_MS = 0.006
# unpriced: the contract's own kernels from 2^this flop up, where their passes pay for
# themselves (docs/design/auto.md#accuracy-contracts)
CONTRACT_LOG2_FLOP = 34


def host_floor(x: registry.Kernel | None, c: Choice) -> float:
    """The host ms a call of choice c takes at least: HOST_CALL_MS per driver call (a composed
    kernel's passes, GEMM and scratch's alloc, zeroing and free; a reduction launch)."""
    calls = (len(x.variants) + 4 if x is not None and x.gemm_of is not None
             else 2 if c.reduce and c.split_k else 1)
    return HOST_CALL_MS * calls


def _kept(m: int, n: int, k: int, device, layout: str, precision: str, out_dtype: str,
          aligned: bool, tables) -> Choice:
    """choose() for an accuracy contract: the least time (at least its host_floor) of each
    answering precision's choice where the tables price all; else its own kernels from
    CONTRACT_LOG2_FLOP up."""
    options, failed = [], None
    for p in answering(precision):
        if not candidates(p, out_dtype, device.arch_int, exactly=True):
            continue
        try:
            c = choose(m, n, k, device=device, layout=layout, precision=p,
                       out_dtype=out_dtype, aligned=aligned, tables=tables, exactly=True)
        except CuteGemmError as e:      # (no room for this one's tiles: the others may fit)
            failed = failed or e
            continue
        options.append(c if p == precision else replace(c, precision=p))
    if not options:
        if failed is not None:
            raise failed
        fitting(on_device(precision, out_dtype, device), precision, device, m, n, k)  # its error
    priced = [(max(c.ms, host_floor(registry.lookup(c.kernel), c)), c) for c in options
              if c.ms is not None]
    if len(priced) == len(options):
        t, best = min(priced, key=lambda tc: tc[0])
        rest = "; ".join(f"{c.kernel}{f' in {c.precision}' if c.precision else ''} {u:.4g} ms"
                         for u, c in priced if c is not best)
        why = f"{best.why}; {t:.4g} ms with its host time" + (f", against {rest}" if rest else "")
    else:
        own = [c for c in options if c.precision is None]
        flop = math.log2(max(2 * m * n * k, 1))
        best = own[0] if own and (flop >= CONTRACT_LOG2_FLOP or len(own) == len(options)) else (
            next(c for c in options if c.precision is not None))
        why = (f"{best.why}; {precision} by its own kernels from 2^{CONTRACT_LOG2_FLOP} flop, "
               f"here 2^{flop:.1f}")
    return replace(best, why=why)
