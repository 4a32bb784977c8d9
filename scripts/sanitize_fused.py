"""The batched, fused-epilogue and 8-bit sections of scripts/sanitize_run.py (--only
batched,epilogue,fp8): run() calls on DeviceArray operands, each result judged against
check.reference's float64 value with its gauge, results NaN-poisoned first."""
from __future__ import annotations

import sys

import numpy as np

from cute_gemm import api, check, registry
from cute_gemm.base.errors import CuteGemmError
from cute_gemm.base.precisions import DTYPE, PRECISION, PRECISION_DTYPE
from cute_gemm.driver import launch
from cute_gemm.driver.arrays import DeviceArray
from cute_gemm.driver.epilogue import Epilogue
from cute_gemm.registry.epilogue import EpilogueSpec

# walks cut along K (PersistentGrid.tail_split: cute_wgmma_ws, cute_wgmma_ws_promote, and
# cute_3xtf32 through its own GEMM), fewer units than clusters. K = 1200: cute_3xtf32's GEMM
# (19 windows of 2 x 64 fp16 k) and cute_wgmma_ws's tf32 (38 k-tiles) cut in 2; K = 2100:
# cute_wgmma_ws_promote (22 windows of 3 tf32 k-tiles; 13 at 1200 are too few) and
# cute_wgmma_ws's 16-bit entries (33 k-tiles; 19 at 1200 are too few) cut in 2 or more
CUT_SHAPES = [(130, 200, 1200), (70, 300, 2100)]




BATCH_MNK = (37, 45, 29)
BATCH_TILES = (130, 259, 70)
EPI_MNK = (77, 45, 129)
EPI_TINY_MNK = (77, 45, 45)          # cute_tiny_k: its K is short (two k-tiles of 32, a residue)
# a 16-bit result with rows of a multiple of 8 elements (the sm90 kernels' 16-byte stores) and
# edge tiles along M and N: the vectors must be read within M and N there
EPI_16B_MNK = (77, 264, 129)
# a bias alone into a 16-bit result, which the sm90 16-byte stores stage per tile in shared
# memory (sm90_epilogue.cuh's stage_bias): more 128 x 256 tiles than the H100's or H200's
# SMs, so some CTAs stage one tile after another in the same buffer
STAGED_MNK = (1300, 3300, 64)
# the walk of the 8-bit kernel cut along K (tests/test_fp8_gpu.py's shape: 8 units, 65 k-tiles)
FP8_CUT = (27, 1000, 8200)
FP8 = tuple(p.name for p in PRECISION.values() if p.itemsize == 1)    # one type, or one of each
# the fullest epilogue: a bias (per column, then per row), row and column scales, GELU's tanh
# form and the clamp; one compile per kernel and vector type (Kernel.with_epilogue)
ACT, CLAMP = "gelu_tanh", (-1.5, 2.5)
# gemm() with that epilogue: its pick (cute_tiny_k in fp32; a cut walk of cute_wgmma_ws_128x64
# in bf16 on an H200), whatever it is, judged like the rest
GEMM_EPI = [((64, 96, 3000), "fp32", "float32"), ((27, 300, 4100), "bf16", "bfloat16")]
# 8-bit cases, each in both formats: (label, (M, N, K), scale_a's kind, scale_b's, result type,
# alpha, beta, B's major). Kinds: None, "tensor" (one element), "row" (M, 1), "col" (1, N),
# "blocks" (A: (M, ceil(K/128)), column-major; B: (ceil(K/128), ceil(N/128))). K = 300 and 129
# are not multiples of 128; B is the transpose of an (N, K) weight (k-major, as wgmma reads it)
# but in the last case, where it is row-major and copied k-major first
FP8_CASES = [
    ("per tensor", (1, 1, 1), "tensor", "tensor", "float32", 1.0, 0.0, "k"),
    ("no scales", (7, 13, 5), None, None, "bfloat16", 1.0, 0.0, "k"),
    ("per tensor", (131, 257, 300), "tensor", "tensor", "float16", 1.0, 0.0, "k"),
    ("per row x per column, beta C", (77, 300, 129), "row", "col", "float32", 1.0, -1.0, "k"),
    ("1x128 x 128x128 blocks", (131, 257, 300), "blocks", "blocks", "bfloat16", 1.0, 0.0, "k"),
    ("1x128 blocks x per column", (77, 300, 129), "blocks", "col", "float16", 1.0, 0.0, "k"),
    ("per row x 128x128 blocks", (64, 256, 300), "row", "blocks", "float32", 1.0, 0.0, "k"),
    ("blocks, the walk cut along K", FP8_CUT, "blocks", "blocks", "bfloat16", 1.0, 0.0, "k"),
    ("per tensor, alpha, beta C, B n-major", (130, 200, 520), "tensor", "tensor", "bfloat16",
     -0.75, 0.5, "n"),
]


class Held:
    """The device arrays a section makes, closed at its end."""

    def __init__(self):
        self.arrays: list[DeviceArray] = []

    def put(self, x, dtype: str, view=None):
        """(host values, device array): float32 `x` stored whole as `dtype` on the device, and
        the values it holds there (check.as_given); with `view` (a function of an array: a
        slice with a step, a transpose, numpy.broadcast_to), that view of both, taken alike:
        the host view's element strides are the device view's."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        d = DeviceArray.from_host(x, dtype=dtype)
        self.arrays.append(d)
        vals = check.as_given(x, dtype)
        if view is None:
            return vals, d
        v = view(vals)
        if v.__array_interface__["data"][0] != vals.__array_interface__["data"][0]:
            raise ValueError("a view must start at its array's first element")
        return v, DeviceArray(v.shape, strides=tuple(s // vals.itemsize for s in v.strides),
                              ordinal=d.ordinal, dtype=dtype, _buffer=d._buf)

    def nan(self, shape, dtype: str, view=None):
        """A NaN-filled result (an element left unwritten fails its check)."""
        return self.put(np.full(shape, np.nan, np.float32), dtype, view)

    def close(self) -> None:
        for d in self.arrays:
            d.close()
        self.arrays.clear()


class Group:
    """The cases of one line of the report (a kernel, or an 8-bit case in both formats)."""

    def __init__(self, section: str, label: str):
        self.section, self.label = section, label
        self.cases, self.worst, self.fails, self.notes = 0, 0.0, [], []

    def judge(self, case: str, got, ref, gauge, precision: str, out_dtype: str) -> None:
        """got (host, any batch) against the reference as check.judge judges a kernel."""
        self.cases += 1
        if got.shape != ref.shape:
            self.fails.append(f"{case}: shape {got.shape}, want {ref.shape}")
            return
        n = got.shape[-1]
        r = check.judge(case, got.reshape(-1, n), ref.reshape(-1, n),
                        np.broadcast_to(gauge, ref.shape).reshape(-1, n), False,
                        check.unit(precision, out_dtype), out_dtype)
        self.worst = max(self.worst, r.gauge_ratio)
        if r.status != "pass":
            self.fails.append(f"{case}: gauge ratio {r.gauge_ratio:.3g}, first at "
                              f"{r.first_fail} (rows of the batch stacked): {r.message}")

    def error(self, case: str, e: BaseException) -> None:
        """A case that raised: its error (and where, for one not cute_gemm's own)."""
        import traceback
        self.cases += 1
        where = "" if isinstance(e, CuteGemmError) else " at " + ", ".join(
            f"{f.name}:{f.lineno}" for f in traceback.extract_tb(e.__traceback__)[-3:])
        self.fails.append(f"{case}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                          f"{where}")

    def note(self, text: str) -> None:
        """A path the group should have taken and did not (a failure too)."""
        self.notes.append(text)

    def report(self) -> bool:
        bad = len(self.fails)
        ok = not bad and not self.notes
        print(f"{self.section} {self.label}: {self.cases - bad}/{self.cases} "
              f"{'pass' if ok else 'FAIL'} (worst gauge ratio {self.worst:.2f})", flush=True)
        for f in self.fails:
            print(f"   FAIL {self.section} {self.label} {f}")
        for t in self.notes:
            print(f"   {self.section} {self.label}: {t} not taken")
        return ok


def _plans(name: str, shape=None, precision: str | None = None) -> list:
    """The resolved launches of kernel `name` (its fused compiles too), at `shape` (M, N, K)
    and in `precision` where given."""
    return [p for p in api.resolved_launches() if p.kernel.split(":")[0] == name
            and (shape is None or p.shape == tuple(shape))
            and (precision is None or p.precision == precision)]


def _cut(p) -> bool:
    """A launch whose walk cut units along K (PersistentGrid.tail_split), through a workspace."""
    return bool(p.tail_split and p.tail_split[1] > 1)


def _launch(group: Group, case: str, fn, read):
    """Run fn() (a run() or gemm() call), wait for it (an asynchronous fault named), and
    read the result back with read(result); None where it raised (recorded in group)."""
    try:
        got = fn()
        launch.check_last(case)
        return read(got)
    except Exception as e:        # (reported per case: the rest of the workload still runs)
        group.error(case, e)
        return None


def batched_paths(names: list[str], quick: bool) -> list[bool]:
    """Every batched kernel (Kernel.batched) in each precision it computes, on (B, M, K) @
    (B, K, N) with odd M, N, K: a batch on both sides (and, larger, more than one tile each
    way); A of batch 1 against B's batch (a batch stride of 0); a B of batch 1 (folded into
    one taller problem); A and C expanded to the batch with stride 0; non-contiguous batches
    (A a slice with step 2, B each matrix transposed, the result's rows padded, C of batch 1,
    alpha and beta); two batch modes that do not merge (kernels with batch_modes 2); a batch
    of one updated in place; a 16-bit result in place. Each result against float64; the
    batched launches (LaunchPlan.batch) and the fold checked taken."""
    rng = np.random.default_rng(21)
    oks = []
    for name in names:
        k = registry.get(name)
        group = Group("batched", f"{name} {','.join(k.precisions)}")
        held = Held()
        try:
            for prec in k.precisions:
                _batched_kernel(group, held, k, prec, rng, quick)
        finally:
            held.close()
        oks.append(group.report())
    return oks


def _batched_kernel(group: Group, held: Held, k, prec: str, rng, quick: bool) -> None:
    dt = PRECISION_DTYPE[prec]
    m, n, kk = BATCH_MNK

    def rnd(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    def case(label, A, B, C=None, O=None, alpha=1.0, beta=0.0, od="float32", walks=None,
             shape=(m, n, kk)):
        """run() of kernel k on A, B (and C), into O: (values, device array) pairs."""
        tag = f"{label} {prec}"
        got = _launch(group, tag, lambda: api.run(
            k.name, A[1], B[1], None if C is None else C[1], alpha=alpha, beta=beta, out=O[1],
            precision=prec), lambda r: O[1].to_host())
        if got is None:
            return
        ref, gauge = check.reference(A[0], B[0], None if C is None else C[0], alpha, beta)
        group.judge(tag, got, ref, gauge, prec, od)
        if walks == "fold":         # one taller problem: (L * M, N, K)
            rows = int(np.prod(A[0].shape[:-2])) * shape[0]
            if not _plans(k.name, (rows, shape[1], shape[2]), prec):
                group.note(f"{tag}: the fold into a {rows}-row problem")
        elif walks is not None and not any(p.batch == walks for p in _plans(k.name, shape, prec)):
            seen = sorted({p.batch for p in _plans(k.name, shape, prec)}, key=str)
            group.note(f"{tag}: a batched launch of {walks} problems (planned: {seen})")

    mt, nt, kt = BATCH_TILES
    case("batch of 3", held.put(rnd(3, mt, kt), dt), held.put(rnd(3, kt, nt), dt),
         O=held.nan((3, mt, nt), "float32"), walks=(1, 3), shape=BATCH_TILES)
    case("A of batch 1", held.put(rnd(1, m, kk), dt), held.put(rnd(4, kk, n), dt),
         O=held.nan((4, m, n), "float32"), walks=(1, 4))
    if not quick:
        case("B of batch 1 (folded)", held.put(rnd(4, m, kk), dt), held.put(rnd(1, kk, n), dt),
             O=held.nan((4, m, n), "float32"), walks="fold")
        case("A and C stride-0", held.put(rnd(m, kk), dt, lambda v: np.broadcast_to(v, (4, m, kk))),
             held.put(rnd(4, kk, n), dt),
             held.put(rnd(m, n), "float32", lambda v: np.broadcast_to(v, (4, m, n))),
             held.nan((4, m, n), "float32"), alpha=-1.25, beta=0.75, walks=(1, 4))
    case("strided (A[::2], B^T, padded rows)", held.put(rnd(8, m, kk), dt, lambda v: v[::2]),
         held.put(rnd(4, n, kk), dt, lambda v: v.transpose(0, 2, 1)),
         held.put(rnd(1, m, n), "float32"),
         held.nan((4, m, n + 3), "float32", lambda v: v[..., :n]), alpha=1.5, beta=-0.5,
         walks=(1, 4))
    if k.batch_modes >= 2:
        case("two modes (2,1)x(1,3)", held.put(rnd(2, 1, m, kk), dt),
             held.put(rnd(1, 3, kk, n), dt), O=held.nan((2, 3, m, n), "float32"), walks=(2, 3))
    if not quick:
        c1 = held.put(rnd(1, m, n), "float32")
        case("batch of one, in place", held.put(rnd(1, m, kk), dt), held.put(rnd(1, kk, n), dt),
             c1, c1, beta=-0.5)
    if DTYPE[dt].itemsize == 2 and k.computes(prec, dt):
        c16 = held.put(rnd(4, m, n), dt)
        case(f"{dt} result, in place", held.put(rnd(4, m, kk), dt), held.put(rnd(4, kk, n), dt),
             c16, c16, beta=2.0, od=dt, walks=(1, 4))


def full_spec(vdtype: str = "float32") -> EpilogueSpec:
    """The compile of the fullest epilogue (bias, scales, ACT, clamp) with vectors of vdtype."""
    return EpilogueSpec(bias=True, scale=True, activation=ACT, clamp=True, vector_dtype=vdtype)


def _full_epilogue(held: Held, rng, m: int, n: int, vdtype: str, axis: str, out_dtype=None):
    """(host, device) twins of the fullest epilogue on an M x N result: a bias along `axis`,
    row scales, column scales read with a stride of 2, ACT and the clamp; vectors (1, L)."""
    L = m if axis == "row" else n
    bias = held.put(rng.standard_normal((1, L), dtype=np.float32), vdtype)
    rows = held.put(rng.standard_normal((1, m), dtype=np.float32), vdtype)
    cols = held.put(rng.standard_normal((1, 2 * n), dtype=np.float32), vdtype, lambda v: v[:, ::2])
    host, dev = ({f: x[i] for f, x in (("bias", bias), ("scale_rows", rows), ("scale_cols", cols))}
                 for i in (0, 1))
    kw = dict(bias_axis=axis, activation=ACT, clamp=CLAMP)
    return Epilogue(**host, **kw), Epilogue(**dev, **kw, out_dtype=out_dtype)


def _sixteen_bit_vectors(kernels) -> dict[str, str]:
    """kernel -> precision of the extra case with 16-bit vectors and an allocated 16-bit
    result: the first kernel of each fused source that computes a 16-bit precision."""
    out, seen = {}, set()
    for k in kernels:
        p = next((p for p in k.precisions if DTYPE[PRECISION_DTYPE[p]].itemsize == 2), None)
        if p is not None and k.source not in seen:
            seen.add(k.source)
            out[k.name] = p
    return out


def cut_shapes(k) -> list[tuple[int, int, int]]:
    """Shapes where kernel k's walk cuts its last wave along K ([] where it never does)."""
    if not getattr(k.grid, "tail_split", 0):
        return []
    return [FP8_CUT] if any(p in FP8 for p in k.precisions) else CUT_SHAPES


def epilogue_paths(names: list[str], with_gemm: bool, quick: bool) -> list[bool]:
    """Every kernel that takes a fused epilogue (Kernel.takes_epilogue), each precision and
    each result type it computes: the fullest epilogue (column bias, row and column scales,
    gelu_tanh, clamp) into a NaN-poisoned result; with a row bias, B k-major, alpha, beta
    and C updated in place; on the kernels whose walk cuts along K, at shapes where it does (the cut
    checked taken: its pieces summed in a workspace before the epilogue runs once); 16-bit
    vectors into a 16-bit result the call allocates (one kernel per fused source); and
    gemm() with the epilogue, on its pick. Each against check.reference with the epilogue."""
    rng = np.random.default_rng(22)
    ks = [registry.get(x) for x in names]
    sixteen = _sixteen_bit_vectors(ks)
    oks = []
    for k in ks:
        group, held = Group("epilogue", f"{k.name} {','.join(k.precisions)}"), Held()
        try:
            for prec in k.precisions:
                _epilogue_kernel(group, held, k, prec, rng, quick)
            cuts = cut_shapes(k)        # (as the layouts section checks: in some precision)
            if cuts and not any(_cut(p) and ":" in p.kernel
                                for s in cuts for p in _plans(k.name, s)):
                group.note(f"the walk cut along K with an epilogue at {cuts}")
            if k.name in sixteen:
                prec = sixteen[k.name]
                dt = PRECISION_DTYPE[prec]
                shapes = [EPI_TINY_MNK] if k.name == "cute_tiny_k" else [EPI_MNK, EPI_16B_MNK]
                for m, n, kk in shapes:
                    a, b = held.put(rng.standard_normal((m, kk), dtype=np.float32), dt), \
                        held.put(rng.standard_normal((kk, n), dtype=np.float32), dt)
                    host, dev = _full_epilogue(held, rng, m, n, dt, "col", out_dtype=dt)
                    tag = f"{dt} vectors, {dt} result allocated {prec}, {m}x{n}x{kk}"

                    def read(r):
                        held.arrays.append(r)
                        return r.to_host()
                    got = _launch(group, tag, lambda: api.run(k.name, a[1], b[1], precision=prec,
                                                              epilogue=dev), read)
                    if got is not None:
                        group.judge(tag, got, *check.reference(a[0], b[0], None, 1.0, 0.0, host),
                                    prec, dt)
                if k.name != "cute_tiny_k":
                    _staged_bias(group, held, k, prec, rng)
        finally:
            held.close()
        oks.append(group.report())
    if with_gemm:
        oks.append(_gemm_epilogue(rng))
    return oks


def _staged_bias(group: Group, held: Held, k, prec: str, rng) -> None:
    """STAGED_MNK with a bias alone (per column, then per row) of the result's 16-bit type."""
    dt = PRECISION_DTYPE[prec]
    m, n, kk = STAGED_MNK
    a = held.put(rng.standard_normal((m, kk), dtype=np.float32), dt)
    b = held.put(rng.standard_normal((kk, n), dtype=np.float32), dt)
    for axis in ("col", "row"):
        bias = held.put(rng.standard_normal((1, m if axis == "row" else n), dtype=np.float32), dt)
        host = Epilogue(bias=bias[0], bias_axis=axis)
        dev = Epilogue(bias=bias[1], bias_axis=axis, out_dtype=dt)
        out = held.nan((m, n), dt)
        tag = f"{axis} bias alone (staged), {dt} result {prec}, {m}x{n}x{kk}"
        got = _launch(group, tag, lambda: api.run(k.name, a[1], b[1], out=out[1], precision=prec,
                                                  epilogue=dev), lambda r: out[1].to_host())
        if got is not None:
            group.judge(tag, got, *check.reference(a[0], b[0], None, 1.0, 0.0, host), prec, dt)


def _epilogue_kernel(group: Group, held: Held, k, prec: str, rng, quick: bool) -> None:
    dt, dt_b = PRECISION[prec].dtype, PRECISION[prec].b_dtype

    def rnd(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    def case(label, shape, od, axis, alpha=1.0, beta=0.0):
        m, n, kk = shape
        tag = f"{label} {m}x{n}x{kk} {prec}->{od}"
        a = held.put(rnd(m, kk), dt)
        # B row-major (n-major) with the column bias, k-major (an (N, K) weight's
        # transpose) with the row bias: both of B's majors under an epilogue
        b = held.put(rnd(n, kk), dt_b, lambda v: v.T) if axis == "row" else held.put(rnd(kk, n), dt_b)
        host, dev = _full_epilogue(held, rng, m, n, "float32", axis)
        c = held.put(rnd(m, n), od) if beta else None
        out = c if c is not None else held.nan((m, n), od)
        got = _launch(group, tag, lambda: api.run(
            k.name, a[1], b[1], None if c is None else c[1], alpha=alpha, beta=beta,
            out=out[1], precision=prec, epilogue=dev), lambda r: out[1].to_host())
        if got is not None:
            group.judge(tag, got, *check.reference(a[0], b[0], None if c is None else c[0],
                                                   alpha, beta, host), prec, od)

    shape = EPI_TINY_MNK if k.name == "cute_tiny_k" else EPI_MNK
    for od in PRECISION[prec].outs:
        if k.computes(prec, od):
            case("column bias", shape, od, "col")
            if not quick:
                case("row bias, B k-major, beta C in place", shape, od, "row", alpha=-0.5,
                     beta=2.0)
    outs = [od for od in PRECISION[prec].outs if k.computes(prec, od)][:1 if quick else None]
    for i, s in enumerate(cut_shapes(k)):      # (each result type: a cut twin of its own)
        for j, od in enumerate(outs):
            if (i + j) % 2 == 0:
                case("cut along K, column bias", s, od, "col")
            else:
                case("cut along K, row bias, B k-major, beta C", s, od, "row", alpha=0.5,
                     beta=-1.0)


def _gemm_epilogue(rng) -> bool:
    """gemm() with the fullest epilogue on its pick (GEMM_EPI), the launch it made reported."""
    group, held = Group("epilogue", "gemm() pick"), Held()
    ran = []
    try:
        for (m, n, kk), prec, od in GEMM_EPI:
            dt = PRECISION_DTYPE[prec]
            tag = f"{m}x{n}x{kk} {prec}->{od}"
            a = held.put(rng.standard_normal((m, kk), dtype=np.float32), dt)
            b = held.put(rng.standard_normal((kk, n), dtype=np.float32), dt)
            host, dev = _full_epilogue(held, rng, m, n, "float32", "col")
            out = held.nan((m, n), od)
            got = _launch(group, tag, lambda: api.gemm(a[1], b[1], out=out[1], precision=prec,
                                                       epilogue=dev), lambda r: out[1].to_host())
            if got is None:
                continue
            group.judge(tag, got, *check.reference(a[0], b[0], None, 1.0, 0.0, host), prec, od)
            for p in api.resolved_launches():
                if p.shape == (m, n, kk) and ":" in p.kernel and p.precision == prec:
                    how = (f"cut in {p.tail_split[1]}" if _cut(p) else
                           f"split {p.split_k}" if p.split_k else
                           "stream-K" if p.stream_k else "one pass")
                    ran.append(f"{prec}: {p.kernel.split(':')[0]} {how}")
                    break
    finally:
        held.close()
    group.label += f" [{'; '.join(ran)}]"
    return group.report()


def _scale(held: Held, rng, kind, side: str, m: int, n: int, kk: int):
    """(host values, device array) of one side's scale (FP8_CASES' kinds), exact powers of two;
    None for none."""
    if kind is None:
        return None
    kw, nw = -(-kk // 128), -(-n // 128)
    shape = {"tensor": (1, 1), "row": (m, 1), "col": (1, n)}.get(kind)
    if kind == "blocks":
        shape = (kw, m) if side == "a" else (kw, nw)
    x = 2.0 ** rng.integers(-3, 4, size=shape).astype(np.float32)
    if kind == "blocks" and side == "a":       # (M, ceil(K/128)), column-major, as cuBLASLt's
        return held.put(x, "float32", lambda v: v.T)
    return held.put(x, "float32")


def fp8_paths(names: list[str], quick: bool) -> list[bool]:
    """Each 8-bit kernel of `names` in every 8-bit precision (FP8) through run()'s scale_a /
    scale_b (FP8_CASES: per tensor, per row and column, 1 x 128 and 128 x 128 block scales and mixes, float32,
    bfloat16 and float16 results, odd shapes with K not a multiple of 128, a walk cut along K
    (checked taken), alpha and beta with C, a B copied k-major), each against check.reference
    of the 8-bit values with the scales as the Epilogue's scale_rows / scale_cols / blocks."""
    rng = np.random.default_rng(23)
    oks = []
    for name, (label, (m, n, kk), ka, kb, od, alpha, beta, major) in (
            (x, case) for x in names for case in FP8_CASES):
        group, held = Group("fp8", f"{name} {label} {m}x{n}x{kk} ->{od}"), Held()
        try:
            for prec in FP8:
                dt, dt_b = PRECISION[prec].dtype, PRECISION[prec].b_dtype
                a = held.put(rng.standard_normal((m, kk), dtype=np.float32), dt)
                if major == "k":            # the transpose of an (N, K) weight
                    b = held.put(rng.standard_normal((n, kk), dtype=np.float32), dt_b, lambda v: v.T)
                else:
                    b = held.put(rng.standard_normal((kk, n), dtype=np.float32), dt_b)
                sa, sb = _scale(held, rng, ka, "a", m, n, kk), _scale(held, rng, kb, "b", m, n, kk)
                c = held.put(rng.standard_normal((m, n), dtype=np.float32), od) if beta else None
                out = c if c is not None else held.nan((m, n), od)
                got = _launch(group, prec, lambda: api.run(
                    name, a[1], b[1], None if c is None else c[1], alpha=alpha, beta=beta,
                    out=out[1], precision=prec, scale_a=None if sa is None else sa[1],
                    scale_b=None if sb is None else sb[1]), lambda r: out[1].to_host())
                if got is None:
                    continue
                host = None if sa is None and sb is None else Epilogue(
                    scale_rows=sa[0] if ka in ("tensor", "row") else None,
                    blocks_a=sa[0] if ka == "blocks" else None,
                    scale_cols=sb[0] if kb in ("tensor", "col") else None,
                    blocks_b=sb[0] if kb == "blocks" else None)
                group.judge(prec, got, *check.reference(a[0], b[0], None if c is None else c[0],
                                                        alpha, beta, host), prec, od)
                if (m, n, kk) == FP8_CUT and not any(_cut(p) or p.workspace_bytes
                                                     for p in _plans(name, FP8_CUT, prec)):
                    group.note(f"{prec}: the walk cut along K")
        finally:
            held.close()
        oks.append(group.report())
    return oks


def section_kernels(section: str, kernels: list[str]) -> list[str]:
    """The kernels of `kernels` a new section runs on this GPU (batched, epilogue, fp8)."""
    arch = _arch()
    ks = [registry.get(x) for x in kernels]
    if section == "batched":
        return [k.name for k in ks if k.batched and k.family != "util" and k.runs_on(arch)]
    if section == "epilogue":
        return [k.name for k in ks if k.takes_epilogue and k.runs_on(arch)]
    return [k.name for k in ks if set(FP8) & set(k.precisions) and k.runs_on(arch)]


_DEVICE: list = []


def _device():
    """This GPU's DeviceInfo, else (no GPU: --compile-list on the CPU machine) the H200's."""
    if not _DEVICE:
        try:
            _DEVICE.append(launch.device_info())
        except CuteGemmError:
            from cute_gemm.select import autotable
            print("sanitize_run: no GPU, planning for the NVIDIA H200", file=sys.stderr)
            _DEVICE.append(autotable.described_device("NVIDIA H200"))
    return _DEVICE[0]


def _arch() -> int:
    return _device().arch_int


def compile_list(sections: list[str], kernels: list[str], all_kernels: bool) -> list[str]:
    """The kernels the chosen sections launch, registered names and fused compiles
    (<kernel>:<epilogue tag>), for sanitize.sh to compile before the sanitizer runs."""
    arch = _arch()
    names = []
    if {"layouts", "runtime"} & set(sections):
        names += [x for x in kernels if registry.get(x).runs_on(arch)]
    if "batched" in sections:
        names += section_kernels("batched", kernels)
    if "epilogue" in sections:
        ks = [registry.get(x) for x in section_kernels("epilogue", kernels)]
        names += [k.with_epilogue(full_spec()).name for k in ks]
        names += [registry.get(x).with_epilogue(spec(PRECISION_DTYPE[p])).name
                  for x, p in _sixteen_bit_vectors(ks).items()
                  for spec in (full_spec, lambda v: EpilogueSpec(bias=True, vector_dtype=v))]
        if all_kernels:
            for (m, n, kk), prec, od in GEMM_EPI:
                c = api.gemm_choice(m, n, kk, precision=prec, out_dtype=od, device=_device(),
                                    epilogue=True)
                names.append(registry.get(c.kernel).with_epilogue(full_spec()).name)
    for k in map(registry.get, section_kernels("fp8", kernels) if "fp8" in sections else ()):
        names += [k.name] + [k.with_epilogue(EpilogueSpec(scale=s, blocks=bl)).name
                             for s, bl in ((True, False), (False, True), (True, True))]
    return list(dict.fromkeys(names))
