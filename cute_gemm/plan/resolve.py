"""The resolver: for one kernel, device, shape, stride pattern and pointer-alignment class,
which entry point runs, which operands are copied first, in which launch mode (modes.py).
Decided once and kept (a LaunchPlan beside its Launcher) in CACHE, whose one public reset
is cute_gemm.clear_caches() and whose plans resolved_launches() lists."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from . import modes
from .. import registry
from ..base import memo
from ..build import cache
from ..driver import launch
from ..driver.arrays import MAJORS, Operand, fits as fits_of
from ..base.errors import CuteGemmError, DTypeError
from .launcher import Launcher, LaunchPlan
from ..base.precisions import ACCUMULATOR, DTYPE, PRECISION_DTYPE_B
from ..registry.records import AS_PLANNED, ITEMSIZE, PRECISION_DTYPE, Pick

# the runtime's copy kernel (kernels/util/scale2d.cu), (source type, destination type) -> its
# entry: relayout copies and beta * C within a type, a stand-in's widening and rounding across
UTIL_ENTRY = {(s, d): "scale2d" if s == d == ACCUMULATOR else
              f"scale2d_{DTYPE[s].suffix}" if s == d else
              f"scale2d_{DTYPE[s].suffix}_{DTYPE[d].suffix}"
              for s in DTYPE for d in DTYPE if s == d or ACCUMULATOR in (s, d)}
UTIL = registry.Kernel(
    name="scale2d", family="util", source="util/scale2d.cu",
    variants=tuple(registry.Variant(e) for e in UTIL_ENTRY.values()), block=(32, 8, 1),
    grid=registry.TileGridMN(32, 32), summary="dst = s * src, any strides, through 32x32 smem "
    "tiles, up to 4 copies a launch (relayout, K = 0, the stand-in's widening)", seed="-")

@dataclass
class _Cache:
    loaded: dict = field(default_factory=dict)     # (kernel, device) -> Loaded
    # gemm_device's launch key -> Launcher, or relayout.Relaid for a launch on copies
    launches: dict = field(default_factory=dict)
    hot: dict = field(default_factory=dict)        # run()'s call signature -> hot entry
    # run()'s key of a call without out (hotpath.launch_new) -> (launch, allocator, pointer of)
    results: dict = field(default_factory=dict)
    # relayout.Copies of one (source, destination) geometry, its pointers per call
    copies: dict = field(default_factory=dict)

    def clear(self) -> None:
        for part in (self.loaded, self.launches, self.hot, self.results, self.copies, _chosen,
                     _chosen_contiguous):
            part.clear()
        with _behind_lock:          # ended background compiles, failed ones too
            for key in [x for x, t in _behind.items() if not t.is_alive()]:
                del _behind[key]


CACHE = _Cache()


def resolved_launches() -> tuple[LaunchPlan, ...]:
    """The plans of the launches resolved so far (and not cleared)."""
    return tuple(x.plan for x in list(CACHE.launches.values()))


# ---- per (kernel, device): the cubins and their functions ---------------------------------
def launch_entries(k: registry.Kernel, variant: registry.Variant, stream_k: bool | None = None,
                   reduce: bool = False, split: bool = True) -> tuple[str, ...]:
    """The entry points one launch of `variant` may need, compiled at once: those of the first
    mode of MODES that has any (the plain grid's alone where stream_k is off; None: read
    CUTE_GEMM_STREAM_K). reduce, split: what the pick asks for."""
    if stream_k is None:
        stream_k = modes.stream_k_on()
    for mode in modes.MODES if stream_k else (modes.PLAIN,):
        found = mode.entries(k, variant, reduce, split)
        if found:
            return found


def launch_group(k: registry.Kernel, variant: registry.Variant, pick: Pick,
                 batched: bool = False) -> tuple[str, ...]:
    """The entry points a call of `variant` as `pick` compiles at once: a batch's entry alone
    (only the plain mode launches a batch), else launch_entries'."""
    if batched:
        return (k.batch_entry(variant),)
    return launch_entries(k, variant, reduce=pick.reduce and pick.split_k > 0,
                          split=pick.split_k > 0)


@dataclass
class Loaded:
    """A kernel on one device: its target, the device's limits, and the functions loaded so
    far. Nothing is compiled until a function is asked for (cubin_of says from what)."""
    kernel: registry.Kernel
    ordinal: int
    arch: str                   # the NVRTC target (sm_90a for an arch-specific kernel)
    smem_limit: int
    sm_count: int = 0
    functions: dict = field(default_factory=dict)   # entry -> launch.Function
    # (entry, what a pick asks) -> (the launch's entry points, the modes that may launch it)
    modes: dict = field(default_factory=dict)
    cubins: dict = field(default_factory=dict)      # entry -> the cache.Compiled holding it
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def function(self, entry: str, group: tuple[str, ...] = ()) -> launch.Function:
        """The loaded function of `entry`, compiled where need be with the other entry points
        of its launch (`group`). Thread-safe: each key compiles once, each function loads once."""
        f = self.functions.get(entry)
        if f is None:
            c = self.cubin_of(entry, group)
            f = launch.get_function(self.ordinal, self.kernel.name, c.key, c.cubin, entry)
            with self.lock:
                f = self.functions.setdefault(entry, f)
        return f

    def cubin_of(self, entry: str, group: tuple[str, ...] = ()):
        """The cache.Compiled of `entry`, the first of: one held; the whole kernel's, cached;
        that of `entry` and `group`, cached; each alone, cached; else those missing compiled
        each alone in processes side by side (NVRTC is single-threaded per entry point:
        docs/design/first_call.md), or where that cannot run, as one program."""
        held = self.cubins.get(entry)
        if held is not None:
            return held
        k, arch = self.kernel, self.arch
        wanted = tuple(dict.fromkeys((entry, *group)))
        c = self._whole(len(wanted)) or cache.lookup(k, arch, entries=wanted)
        if c is not None:
            return self._hold(c, entry)
        with self.lock:
            missing = tuple(e for e in wanted if e == entry or e not in self.cubins)
        missing = self._hold_alone(missing)
        if len(missing) > 1 and not self._every(missing):
            cache.compile_apart(k, arch, missing)
            missing = self._hold_alone(missing)
        if not missing:
            return self.cubins[entry]
        return self._hold(cache.get(k, arch, entries=missing), entry)

    def _every(self, entries: tuple[str, ...]) -> bool:
        """Whether `entries` are all the kernel's: compiled as one program, the whole kernel (a
        launch of fewer compiles them apart, each alone)."""
        return set(entries) == set(self.kernel.entries)

    def _whole(self, wanted: int):
        """The whole kernel's cubin where cached (`cute-gemm compile`), unless NVVM left calls in
        it (Compiled.calls) and a launch wants fewer entry points: its own compile inlines them."""
        c = cache.lookup(self.kernel, self.arch)
        return None if c is None or (c.calls and wanted < len(self.kernel.entries)) else c

    def _hold_alone(self, entries: tuple[str, ...]) -> tuple[str, ...]:
        """Hold those of `entries` cached each alone; the rest, still missing."""
        for e in entries:
            one = cache.lookup(self.kernel, self.arch, entries=(e,))
            if one is not None:
                self._hold(one, e)
        with self.lock:
            return tuple(e for e in entries if e not in self.cubins)

    def ready(self, group: tuple[str, ...], start: bool = True) -> bool:
        """True when `group`'s entry points can be had without compiling (held, or cached), or
        their background compile failed (function() then raises its error in the call). Else
        False, and with `start` that compile begins in the background, once per kernel,
        target and group (gemm()'s stand-in runs meanwhile)."""
        if all(e in self.cubins for e in group):
            return True
        key = (self.kernel.name, self.arch, group)
        with _behind_lock:
            t = _behind.get(key)
            if t is not None and not t.is_alive() and not t.failed:
                del _behind[key]        # (its cubins may have been cleared since: look)
        if t is not None and (t.is_alive() or t.failed):
            return not t.is_alive()
        k, arch = self.kernel, self.arch
        if (self._whole(len(group)) or cache.lookup(k, arch, entries=group)
                or all(e in self.cubins or cache.lookup(k, arch, entries=(e,)) for e in group)):
            return True
        if start:
            # every entry point: one program, as cubin_of compiles it (the whole kernel's cubin,
            # which `cute-gemm compile` and the compile check build: ptxas may allocate an
            # entry compiled alone differently, and serialize its wgmmas)
            whole = len(group) > 1 and self._every(group)
            with _behind_lock:
                if key not in _behind:
                    children = cache.spawn_whole(k, arch) if whole else cache.spawn_apart(k, arch, group)
                    t = _behind[key] = _Behind(
                        target=self._compile_behind, args=(group, children, whole),
                        name=f"cute_gemm compile {k.name} {' '.join(group)}")
                    t.start()
        return False

    def _compile_behind(self, group: tuple[str, ...], children: list, whole: bool) -> None:
        # in child processes (this process's NVRTC stays free for the stand-in): ready()'s
        # children, then any entry point left; in-process where none can run
        try:
            for p in children:
                p.wait()
            if not whole:
                cache.compile_apart(self.kernel, self.arch, group, least=1)
            for e in group:
                self.cubin_of(e, group)
        except Exception:       # noqa: BLE001 -- the foreground compiles it again and raises
            threading.current_thread().failed = True

    def _hold(self, c, entry: str):
        """Keep `c` for its entry points (not replacing one already held); `entry`'s."""
        with self.lock:
            for e in c.entries:
                self.cubins.setdefault(e, c)
            return self.cubins[entry]


class _Behind(threading.Thread):
    """A background compile (Loaded.ready); `failed`: it raised, so later calls compile in
    the foreground and raise that error, as they would have without it."""
    failed = False

    def __init__(self, **kw):
        super().__init__(daemon=True, **kw)


# background compiles: (kernel, target, entry points) -> the thread
_behind: dict[tuple[str, str, tuple[str, ...]], _Behind] = {}
_behind_lock = threading.Lock()


def wait_for_compiles(timeout: float | None = None) -> bool:
    """Block until gemm()'s background compiles have ended (at most `timeout` seconds; None:
    no limit); True when none is left running. Then gemm() runs its picks, bit for bit as
    with CUTE_GEMM_FIRST_CALL=wait."""
    end = None if timeout is None else time.monotonic() + timeout
    with _behind_lock:
        threads = list(_behind.values())
    for t in threads:
        t.join(None if end is None else max(0.0, end - time.monotonic()))
    return not any(t.is_alive() for t in threads)


def loaded(k: registry.Kernel, ordinal: int) -> Loaded:
    """The kernel on a device (checked to run there); nothing is compiled here."""
    p = CACHE.loaded.get((k.name, ordinal))
    if p is None:
        info = launch.device_info(ordinal)
        if not k.runs_on(info.arch_int):
            need = f"sm_{k.min_arch}" + ("" if k.arch_specific else " or newer")
            raise CuteGemmError(f"kernel {k.name!r} needs {need}; "
                                f"device {ordinal} ({info.name}) is {info.arch}")
        p = CACHE.loaded.setdefault((k.name, ordinal), Loaded(
            k, ordinal, k.target(info.arch_int), info.smem_optin, info.sm_count))
    return p


# ---- layout matching -------------------------------------------------------------------
_ROW = {"a": "k", "b": "n", "c": "n"}       # the major of a row-major operand of each role
PAD = 16    # no entry point asks for more alignment (elements) than this
LINE = 128   # bytes: an L2 line, what a TMA box row or a warp's vector load fetches whole


def copy_strides(role: str, major: str, shape: tuple[int, int], align: int = 1,
                 itemsize: int = 4) -> tuple[int, int]:
    """The strides of run()'s copy of an operand of `shape` for an entry wanting `major` and
    `align`: the leading dimension rounded up to `align`, and for rows of 8 LINEs or more
    (padding adds at most an eighth) to whole LINEs, since a row straddling lines costs the
    tensor cores' loads up to half again (docs/design/cute_wgmma_ws.md#row-pitch)."""
    rows, cols = shape
    turned = major == MAJORS[role][1]
    extent = max(rows if turned else cols, 1)
    ld = -(-extent // align) * align
    if extent * itemsize >= 8 * LINE:
        per_line = LINE // itemsize
        ld = -(-ld // per_line) * per_line
    return (1, ld) if turned else (ld, 1)


def copy_target(v: registry.Variant, role: str, shape: tuple[int, int]) -> tuple[str, tuple[int, int]]:
    """(major, strides) of run()'s copy of an operand of `shape` for entry point `v` (row-major
    where it takes any major)."""
    want = getattr(v, f"{role}_major")
    want = _ROW[role] if want == "any" else want
    dtype = (v.out_dtype if role == "c" else PRECISION_DTYPE_B[v.precision] if role == "b"
             else PRECISION_DTYPE[v.precision])
    return want, copy_strides(role, want, shape, v.align if role in v.align_roles else 1,
                              ITEMSIZE[dtype])


def offers(k: registry.Kernel) -> str:
    """What a kernel computes, for messages: "bf16 (bfloat16 in, float32|bfloat16 out), ..."."""
    outs: dict[str, dict] = {}
    for v in k.variants:
        outs.setdefault(v.precision, {})[v.out_dtype] = None
    return ", ".join(f"{p} ({PRECISION_DTYPE[p]}"
                     + (f" x {PRECISION_DTYPE_B[p]}" if PRECISION_DTYPE_B[p] != PRECISION_DTYPE[p] else "")
                     + f" in, {'|'.join(o)} out)" for p, o in outs.items())


def check_precision(k: registry.Kernel, precision: str, out_dtype: str) -> None:
    """DTypeError unless some entry point of `k` computes `precision` into `out_dtype`."""
    if k.computes(precision, out_dtype):
        return
    others = [x.name for x in registry.kernels() if x.computes(precision, out_dtype)]
    hint = f"; kernels that do: {', '.join(others)}" if others else ""
    raise DTypeError(f"kernel {k.name!r} computes {offers(k)}; not {precision} into "
                     f"{out_dtype}{hint}")


def choose(k: registry.Kernel, ops: dict[str, Operand], precision: str = "fp32",
           out_dtype: str = "float32", fits: dict | None = None
           ) -> tuple[registry.Variant, list[str]]:
    """The variant of this precision and output type needing the fewest relayout copies, and
    the roles to copy; kept per class of calls that choose alike (shape_class)."""
    fits = fits or fits_of(ops)
    (m, kk), n = ops["a"].shape, ops["b"].shape[1]
    key = (k.name, tuple(fits.items()), shape_class(m, n, kk), precision, out_dtype)
    hit = _chosen.get(key)
    if hit is None or hit[0] is not k:      # (or kept for another kernel of that name: tests
        if len(_chosen) >= memo.ENTRIES:    # may register one)
            _chosen.clear()
        hit = _chosen[key] = (k, *choose_exactly(k, ops, precision, out_dtype, fits))
    return hit[1], list(hit[2])


def shape_class(*extents: int) -> tuple[int, ...]:
    """Each extent's class: those choose_exactly cannot tell apart, since it reads only
    whether an extent is <= 1, its residue modulo alignments (which divide PAD), and whether
    a row of it reaches 8 LINEs (copy_strides; 1024 / itemsize elements, itemsizes 1 to 8)."""
    return tuple(x if x <= 1 else (8 * LINE if x >= 8 * LINE else 4 * LINE if x >= 4 * LINE
                                   else 2 * LINE if x >= 2 * LINE else LINE if x >= LINE
                                   else PAD) + x % PAD for x in extents)


_chosen: dict = {}     # choose's answers: key -> (kernel, variant, copies)


def choose_exactly(k: registry.Kernel, ops: dict[str, Operand], precision: str = "fp32",
                   out_dtype: str = "float32", fits: dict | None = None
                   ) -> tuple[registry.Variant, list[str]]:
    """choose() computed for these operands."""
    fits = fits or fits_of(ops)
    (m, kk), n = ops["a"].shape, ops["b"].shape[1]
    # with a fused epilogue, no entry with A in registers (beside A's fragments the epilogue
    # spills): A is copied instead
    ours = [v for v in k.variants if v.precision == precision and v.out_dtype == out_dtype
            and not (k.epilogue is not None and v.register_a)]
    # the first entry taking every operand as it is wins: looked for first among those whose
    # majors could (no other can), then the fewest copies among all
    majors = [(f"{r}_major", fits[r][0]) for r in ops]
    for v in [v for v in ours if all(getattr(v, a) in ("any", f) for a, f in majors)]:
        if v.takes_all(fits, (m, n, kk)):
            return v, []
    best = None
    for v in ours:
        # (extent_align asked first: most entries have none)
        if not v.takes_all({}, (m, n, kk)):     # a vector would straddle a row/column end
            continue
        copies, feasible = [], True
        for r, op in ops.items():
            if v.takes(r, *fits[r]):
                continue
            want, st = copy_target(v, r, op.shape)
            ld = st[0] if st[1] == 1 else st[1]      # (the copy's at a 256-byte pointer)
            align = (256 // ITEMSIZE[op.dtype]) | (ld if ld > 0 else 0) | 16
            if v.takes(r, want, align & -align):
                copies.append(r)
            else:
                feasible = False
                break
        if feasible and (best is None or len(copies) < len(best[1])):
            best = (v, copies)
            if not copies:
                break
    if best is None:  # the registry test guarantees a variant that takes any copy
        check_precision(k, precision, out_dtype)
        raise CuteGemmError(f"kernel {k.name!r} has no variant for these operand layouts")
    return best


def choose_contiguous(k: registry.Kernel, m: int, n: int, kk: int, layout: str,
                      precision: str = "fp32", out_dtype: str = "float32", classes=None
                      ) -> tuple[registry.Variant, list[str]]:
    """choose(k, contiguous(m, n, kk, layout, ...)), memoized by the extents' shape_class
    (`classes`, where known): fresh contiguous operands' majors and alignments follow from it."""
    key = (k.name, classes or shape_class(m, n, kk), layout, precision, out_dtype)
    hit = _chosen_contiguous.get(key)
    if hit is None or hit[0] is not k:
        if len(_chosen_contiguous) >= memo.ENTRIES:
            _chosen_contiguous.clear()
        hit = _chosen_contiguous[key] = (k, *choose_exactly(
            k, contiguous(m, n, kk, layout, precision, out_dtype), precision, out_dtype))
    return hit[1], list(hit[2])


_chosen_contiguous: dict = {}   # choose_contiguous's answers: key -> (kernel, variant, copies)


def contiguous(m: int, n: int, kk: int, layout: str, precision: str = "fp32",
               out_dtype: str = "float32") -> dict[str, Operand]:
    """Descriptors (no data; a 1 MiB-aligned pointer) of fresh contiguous operands a, b, c of
    an M x N x K problem, A and B in operand layout `layout` ("nt": A row-major, B
    column-major), C row-major: for pure-CPU questions to choose()."""
    return {r: Operand(r, None, True, 1 << 20, (rows, cols), (1, rows) if turned else (cols, 1), dt)
            for r, rows, cols, turned, dt in (
                ("a", m, kk, layout[0] == "t", PRECISION_DTYPE[precision]),
                ("b", kk, n, layout[1] == "t", PRECISION_DTYPE_B[precision]),
                ("c", m, n, False, out_dtype))}


def swapped(k: registry.Kernel, m: int, n: int, transposed: bool = False) -> bool:
    """Whether a launch of `k` on an M x N product computes C^T = B^T A^T (the one place that
    decides it). `transposed`: the pick asks for the transposed problem; the kernel's own
    rule (Kernel.transposes) then applies to that problem and may turn it back, as
    `cute-gemm tune` timed run(k, B^T, A^T, out=C^T)."""
    if not k.transpose_skinny:
        return transposed
    if transposed:
        return not k.transposes(n, m)
    return k.transposes(m, n)


def oriented(swap: bool, ops: dict[str, Operand]) -> dict[str, Operand]:
    """The operands in the roles the entry sees (swapped: B^T is its A, A^T its B, C^T its C).
    Its own inverse."""
    if not swap:
        return ops
    turned = {"a": ops["b"], "b": ops["a"]}
    return {r: turned.get(r, op).T for r, op in ops.items()}


def layout_launches(k: registry.Kernel, layout: str, precisions: tuple[str, ...] | None = None,
                    pairs: tuple[tuple[str, str], ...] | None = None
                    ) -> dict[str, tuple[tuple[str, ...], ...]]:
    """kernel name -> the entry-point sets (launch_entries, in the kernel's order) of the
    launches run() makes on `k` with A and B contiguous and aligned in operand layout
    `layout` and a row-major result, per precision (of `precisions`, where given) and result
    type (only the (precision, result type) `pairs`, where given): choose()'s variant, and
    UTIL where operands are copied. A composed kernel: its whole pre-pass, and its GEMM on A'
    and B' (layout "nt"). What `cute-gemm compile --layout` compiles."""
    registry.layout_majors(layout)          # InputError for anything but nn, tn, nt, tt
    if k.gemm_of is not None:
        g = k.gemm_of
        if precisions is not None and not set(precisions) & set(k.precisions):
            return {}
        return {k.name: (k.entries,), **layout_launches(g.kernel, "nt", (g.precision,))}
    out: dict[str, dict] = {}
    for p, o in dict.fromkeys((v.precision, v.out_dtype) for v in k.variants):
        if (precisions is None or p in precisions) and (pairs is None or (p, o) in pairs):
            ops = contiguous(1024, 1024, 1024, layout, p, o)
            variant, copies = choose(k, ops, p, o)
            group = launch_entries(k, variant, stream_k=True)
            out.setdefault(k.name, {})[tuple(e for e in k.entries if e in group)] = 1
            for r in copies:
                out.setdefault(UTIL.name, {})[(UTIL_ENTRY[ops[r].dtype, ops[r].dtype],)] = 1
    return {name: tuple(sets) for name, sets in out.items()}


def entry_for(k: registry.Kernel, lk, A: Operand, B: Operand, T: Operand, precision: str,
              pick, fits: dict | None = None, smem: int | None = None) -> tuple:
    """(swap, variant, copies) of a launch of `k` (Loaded `lk`) on A, B into T as `pick` asks,
    its shared memory checked against the device's; copies in the roles the entry sees.
    fits (arrays.fits of A, B and T as "c") and smem (k.dyn_smem here): where known."""
    (m, kk), n = A.shape, B.shape[1]
    if (k.dyn_smem(m, n, kk) if smem is None else smem) > lk.smem_limit:
        k.check_limits(m, n, kk, lk.smem_limit)     # its error
    swap = swapped(k, m, n, pick.transposed)
    ops = {"a": A, "b": B, "c": T}
    if swap:        # (the fits known are of the operands as given)
        ops, fits = oriented(swap, ops), None
    variant, copies = choose(k, ops, precision, T.dtype, fits)
    return swap, variant, copies


def resolve(k: registry.Kernel, ordinal: int, variant: registry.Variant, copies, m: int, n: int,
            kk: int, strides, swap: bool = False, pick: Pick = AS_PLANNED,
            smem: int | None = None, batch=None) -> Launcher:
    """The Launcher of `variant` at M x N x K on operands of these strides (after copies), by
    the first mode of MODES that may launch the variant and takes it. swap: the launch
    computes C^T = B^T A^T (the Launcher still takes the caller's A, B, C). batch: ((outer,
    inner) problems, batch strides of A, B and C): more than one, the plain mode alone."""
    if batch is not None and batch[0] == (1, 1):
        batch = None
    km, kn = (n, m) if swap else (m, n)          # the problem the entry sees
    lk, stream_k, split = loaded(k, ordinal), modes.stream_k_on(), pick.split_k > 0
    # what the variant's launch asks of the modes, per request: registry data, read once
    key = (variant.entry, pick.reduce and split, split, stream_k, batch is not None)
    asked = lk.modes.get(key)
    if asked is None:
        asked = lk.modes[key] = (
            ((k.batch_entry(variant),), (modes.PLAIN,)) if batch else
            (launch_entries(k, variant, stream_k, split=split),
             tuple(x for x in modes.MODES if x.may_launch(k, variant, key[1], stream_k))))
    at = modes.At(k=k, lk=lk, load=loaded, variant=variant, m=m, n=n, kk=kk,
                  km=km, kn=kn, swap=swap, split_k=pick.split_k, reduce=pick.reduce,
                  strides=strides, smem=k.dyn_smem(m, n, kk) if smem is None else smem,
                  group=asked[0], stream_k=stream_k,
                  batched=batch is not None, bstrides=batch[1] if batch else ((0, 0),) * 3,
                  base=dict(kernel=k.name, ordinal=ordinal, shape=(m, n, kk), block=k.block,
                            copies=tuple(copies), precision=variant.precision,
                            out_dtype=variant.out_dtype,
                            batch=batch[0] if batch else (1, 1) if k.plain_takes_batch else None,
                            fused=k.fused))
    for mode in asked[1]:
        found = mode.launcher(at)
        if found is not None:
            return found
