"""The layouts of each CuTe kernel, described once, from the registry entry it is built from.

A recipe takes the kernel's `defines` (the -D values NVRTC compiles it with) and reads which
copy and stride each entry point uses from the kernel's own instantiation lines
(`CG_TILED_ENTRY(cute_tiled_ak_bn, CG_DA_k, CG_DB_n, VecK, VecMN<BLK_N>)`). Every layout it
shows is a `Def`: the name the kernel source gives it at namespace scope, and its value
computed here. tests/test_layouts.py compiles the kernel source with nvcc and the same
defines and checks that CuTe prints, for those very names, what the dump says
(cppcheck.py); rename or change one in the kernel and the test says which.
"""
from __future__ import annotations

import re
from typing import Callable

from .. import paths
from .algebra import UNIVERSAL_FMA, CopyAtom, Layout, TiledCopy, TiledMMA, fmt, make_layout
from .model import PROBLEM, THREAD, Builder, Def, Global, Part, Recipe, Smem

RECIPES: dict[str, Callable] = {}         # kernel source (registry `source`) -> recipe


def recipe(source: str):
    def deco(fn):
        RECIPES[source] = fn
        return fn
    return deco


def has_recipe(kernel) -> bool:
    return kernel.source in RECIPES


def build(kernel, problem=PROBLEM, thread: int = THREAD) -> Recipe:
    """The recipe of one registered CuTe kernel (KeyError naming it if there is none)."""
    try:
        fn = RECIPES[kernel.source]
    except KeyError:
        raise KeyError(f"no layout recipe for kernel {kernel.name!r} ({kernel.source}); "
                       f"add one to cute_gemm/layouts/recipes.py") from None
    b = Builder(kernel, problem, thread)
    fn(b, b.d)
    return b.recipe()


def entries(kernel, macro: str) -> dict[str, tuple[str, ...]]:
    """The arguments of each `MACRO(entry, ARG, ...)` instantiation line of the kernel source
    (stream-K twins, other macros, share their plain entry point's layouts)."""
    text = (paths.kernels_dir() / kernel.source).read_text()
    out = {m.group(1): tuple(a.strip() for a in m.group(2).split(","))
           for m in re.finditer(rf"^{macro}\((\w+),\s*([^)]*)\)", text, re.M)}
    missing = [v.entry for v in kernel.variants if v.entry not in out]
    if missing:
        raise ValueError(f"{kernel.source}: no {macro}(...) line for entries {missing}; "
                         f"the layout recipe reads each entry's configuration from those lines")
    return out


def _lookup(defs: dict[str, Def], name: str, kernel) -> Def:
    try:
        return defs[name]
    except KeyError:
        raise ValueError(f"{kernel.source} uses {name!r}, which its layout recipe does not "
                         f"know (cute_gemm/layouts/recipes.py)") from None


def _users(ents: dict, pick) -> str:
    return ", ".join(e for e, a in ents.items() if pick(a))


_EXT = {"A": ("M", "BLK_M"), "B": ("N", "BLK_N")}


# ---- c0_gmem: local_tile / local_partition straight from global memory ----------------------

@recipe("cute/c0_gmem.cu")
def _c0(b: Builder, d: dict) -> None:
    ents = entries(b.kernel, "CG_GMEM_ENTRY")
    tC = Def("thr_layout_c()", make_layout((16, 16), "row"))   # (THR_M,THR_N), n fastest
    gC, t = Global("C"), b.thread
    sec = b.section("C and the thread layout (every entry)")
    sec.items += [
        b.layout("tC", "tC: (THR_M,THR_N) -> thread index", tC, "thread"),
        b.tile("gC", gC, "the CTA's (BLK_M,BLK_N) tile of C"),
        b.partition("tCgC", f"tCgC = local_partition(gC, tC, {t}, Step<_1, _1>): the outputs "
                    f"thread {t} computes", gC, Part(tC, step=(1, 1))),
    ]
    for op, i, step, rows in (("A", 0, (1, None), "rows of A"), ("B", 1, (None, 1), "columns of B")):
        for macro in sorted({a[i] for a in ents.values()}):
            g = Global(op, macro)
            sec = b.section(f"{op} strides {macro} = {fmt(g.strides(b.problem))} "
                            f"({_users(ents, lambda a: a[i] == macro)})")
            ext = _EXT[op][0]
            sec.items += [
                b.tile(f"{macro}/g{op}", g, f"the CTA's (BLK_{ext},BLK_K,k) strip of {op}"),
                b.partition(f"{macro}/tCg{op}", f"tCg{op} = local_partition(g{op}, tC, {t}, "
                            f"{_step(step)}): the {rows} thread {t} reads", g,
                            Part(tC, step=step), exact=False),
            ]


def _step(step) -> str:
    return "Step<" + ", ".join("_1" if s else "X" for s in step) + ">"


# ---- c1_smem: k-tiles staged through shared memory -------------------------------------------

@recipe("cute/c1_smem.cu")
def _c1(b: Builder, d: dict) -> None:
    bM, bN, bK = b.tiler
    ents = entries(b.kernel, "CG_SMEM_ENTRY")
    defs = {"ThrMajor0": Def("ThrMajor0{}", make_layout((32, 8))),        # m/n contiguous
            "ThrMajor1": Def("ThrMajor1{}", Layout((32, 8), (8, 1)))}     # k contiguous
    tC = Def("thr_layout_c()", make_layout((16, 16)))                       # m fastest
    sm = {"A": Def("smem_layout_a()", make_layout((bM, bK))),
          "B": Def("smem_layout_b()", make_layout((bN, bK)))}
    t = b.thread
    for op, i, attr in (("A", 0, "a_major"), ("B", 1, "b_major")):
        ext = _EXT[op][0]
        for major in sorted({getattr(v, attr) for v in b.kernel.variants}):
            users = [v.entry for v in b.kernel.variants if getattr(v, attr) == major]
            names = {ents[e][i] for e in users}
            if len(names) != 1:
                raise ValueError(f"{b.kernel.source}: entries {users} use copy thread layouts "
                                 f"{sorted(names)}; the recipe shows one per operand major")
            thr = _lookup(defs, names.pop(), b.kernel)
            g = Global(op, major=major)          # c1: make_stride(sAm, sAk), run-time strides
            sec = b.section(f"{op} {major}-major: copy thread layout {thr.name} ({', '.join(users)})")
            pre = f"{op}{major}/"
            sec.items += [
                b.tile(f"{pre}g{op}", g, f"the CTA's (BLK_{ext},BLK_K,k) strip of {op}, {major}-major"),
                b.layout(f"{pre}t{op}", f"t{op} ({thr.name}): (THR_{ext},THR_K) -> thread index, "
                         "copy global -> shared", thr, "thread"),
                b.partition(f"{pre}t{op}g{op}", f"t{op}g{op} = local_partition(g{op}, t{op}, {t}): "
                            f"what thread {t} loads from global", g, Part(thr)),
                b.partition(f"{pre}t{op}s{op}", f"t{op}s{op} = local_partition(s{op}, t{op}, {t}): "
                            f"where thread {t} stores it in shared memory", Smem(op, sm[op]), Part(thr)),
            ]
    sA, sB, gC = Smem("A", sm["A"]), Smem("B", sm["B"]), Global("C")
    sec = b.section("shared memory and the compute partitions (every entry)")
    sec.items += [
        b.layout("sA", "sA: (BLK_M,BLK_K) shared-memory tile of A, m-major", sm["A"]),
        b.layout("sB", "sB: (BLK_N,BLK_K) shared-memory tile of B, n-major", sm["B"]),
        b.layout("tC", "tC: (THR_M,THR_N) -> thread index, compute", tC, "thread"),
        b.tile("gC", gC, "the CTA's (BLK_M,BLK_N) tile of C"),
        b.partition("tCsA", f"tCsA = local_partition(sA, tC, {t}, Step<_1, X>): rows of sA "
                    f"thread {t} reads", sA, Part(tC, step=(1, None)), exact=False),
        b.partition("tCsB", f"tCsB = local_partition(sB, tC, {t}, Step<X, _1>): columns of B "
                    f"(rows of sB) thread {t} reads", sB, Part(tC, step=(None, 1)), exact=False),
        b.partition("tCgC", f"tCgC = local_partition(gC, tC, {t}, Step<_1, _1>): the outputs "
                    f"thread {t} computes", gC, Part(tC, step=(1, 1))),
    ]


# ---- c2_tiled and c3_pipelined: TiledCopy + TiledMMA ----------------------------------------

def _copy_mma(b: Builder, macro: str, copies: dict[str, Def], smem: dict[str, Def], mma: Def,
              smem_note: str, stage_of: Callable[[str, str], tuple[Def, str]] | None = None) -> None:
    """Per (operand, stride macro, copy) a section: the global tile, the copy's TV layout and
    both sides of the copy; then shared memory, the TiledMMA and its partitions.
    stage_of(op, copy name): (the shared layout those entries store the operand into, what
    it is), where it is not smem[op] (shown, with what the TiledMMA reads of it, in the
    operand's section)."""
    ents, t = entries(b.kernel, macro), b.thread
    for op, di, ci in (("A", 0, 2), ("B", 1, 3)):
        ext = _EXT[op][0]
        for smacro, cname in sorted({(a[di], a[ci]) for a in ents.values()}):
            cp = _lookup(copies, cname, b.kernel)
            g = Global(op, smacro)
            own, note = stage_of(op, cname) if stage_of else (smem[op], "")
            s = Smem(op, own)
            users = _users(ents, lambda a: (a[di], a[ci]) == (smacro, cname))
            sec = b.section(f"{op}: strides {smacro} = {fmt(g.strides(b.problem))}, copy {cname} "
                            f"({users})")
            pre, lo = f"{op}_{smacro}_{cname}/", op.lower()
            sec.items.append(b.tile(f"{pre}g{op}", g, f"the CTA's (BLK_{ext},BLK_K,k) strip of {op}"))
            if own != smem[op]:
                sec.items.append(b.layout(f"{pre}s{op}", f"s{op}: shared tile of {op} for these "
                                          f"entries ({own.name}), {note}", own))
            sec.items += [
                b.tv(f"{pre}copy_TV", f"{cname}: TiledCopy (thread, value) -> ({ext},K) coordinate "
                     f"in its {fmt(cp.value.tiler)} tile (get_layoutS_TV; D is the same)", cp, "S"),
                b.partition(f"{pre}t{op}g{op}", f"t{op}g{op} = copy_{lo}.get_slice({t}).partition_S"
                            f"(g{op}): (CPY,CPY_{ext},CPY_K,k), what thread {t} loads", g, Part(cp, "S")),
                b.partition(f"{pre}t{op}s{op}", f"t{op}s{op} = copy_{lo}.get_slice({t}).partition_D"
                            f"(s{op}): where thread {t} stores it in shared memory", s, Part(cp, "D")),
            ]
            if own != smem[op]:
                sec.items.append(b.partition(
                    f"{pre}tCs{op}", f"tCs{op} = mma.get_slice({t}).partition_{op}(s{op}): "
                    f"(MMA,MMA_{ext},MMA_K,BUF), what thread {t} reads of it", s, Part(mma, op),
                    exact=False))
    sA, sB, gC = Smem("A", smem["A"]), Smem("B", smem["B"]), Global("C")
    sec = b.section("shared memory, TiledMMA and the compute partitions (every entry)")
    sec.items += [
        b.layout("sA", f"sA: shared tile of A, m-major, {smem_note}", smem["A"]),
        b.layout("sB", f"sB: shared tile of B, n-major, {smem_note}", smem["B"]),
        b.tv("mma_A_TV", "TiledMMA A: (thread, value) -> (M,K) coordinate (get_layoutA_TV)", mma, "A"),
        b.tv("mma_B_TV", "TiledMMA B: (thread, value) -> (N,K) coordinate (get_layoutB_TV)", mma, "B"),
        b.tv("mma_C_TV", "TiledMMA C: (thread, value) -> (M,N) coordinate (get_layoutC_TV)", mma, "C"),
        b.tile("gC", gC, "the CTA's (BLK_M,BLK_N) tile of C"),
        b.partition("tCsA", f"tCsA = mma.get_slice({t}).partition_A(sA): (MMA,MMA_M,MMA_K[,PIPE]), "
                    f"what thread {t} reads of sA", sA, Part(mma, "A"), exact=False),
        b.partition("tCsB", f"tCsB = mma.get_slice({t}).partition_B(sB): (MMA,MMA_N,MMA_K[,PIPE]), "
                    f"what thread {t} reads of sB", sB, Part(mma, "B"), exact=False),
        b.partition("tCgC", f"tCgC = mma.get_slice({t}).partition_C(gC): (MMA,MMA_M,MMA_N), the "
                    f"outputs thread {t} computes", gC, Part(mma, "C")),
    ]


VEC, SCALAR = CopyAtom(4), CopyAtom(1)     # 16-byte (uint128_t) and 4-byte copies of float


@recipe("cute/c2_tiled.cu")
def _c2(b: Builder, d: dict) -> None:
    bM, bN, bK = b.tiler
    nt, pad = b.nthreads, 4                                # c2_tiled.cu: SMEM_PAD 4
    copies = {f"VecMN<{m}>": TiledCopy(VEC, make_layout((e // 4, nt // (e // 4))), make_layout((4, 1)))
              for m, e in (("BLK_M", bM), ("BLK_N", bN))}
    copies["VecK"] = TiledCopy(VEC, Layout((nt // (bK // 4), bK // 4), (bK // 4, 1)), make_layout((1, 4)))
    copies["SclMN"] = TiledCopy(SCALAR, make_layout((32, nt // 32)))
    copies["SclK"] = TiledCopy(SCALAR, Layout((nt // 8, 8), (8, 1)))
    smem = {"A": Def("smem_layout_a()", Layout((bM, bK), (1, bM + pad))),
            "B": Def("smem_layout_b()", Layout((bN, bK), (1, bN + pad)))}
    mma = Def("tiled_mma()", TiledMMA(UNIVERSAL_FMA, make_layout((16, 16, 1))))
    _copy_mma(b, "CG_TILED_ENTRY", {k: Def(k + "{}", v) for k, v in copies.items()}, smem, mma,
              f"(BLK,BLK_K):(1,BLK+{pad}), k columns padded by {pad} words")


@recipe("cute/c3_pipelined.cu")
def _c3(b: Builder, d: dict) -> None:
    bM, bN, bK = b.tiler
    P, tm, tn, wm, pad = d["STAGES"], d["THR_M"], d["THR_N"], d["WARP_M"], d["SMEM_PAD"]
    nt, q, wn, kq = b.nthreads, bK // 4, 32 // wm, d.get("KQ_LAYOUT", 0)
    atom = Layout(((wm, tm // wm), (wn, tn // wn), 1), ((1, 32), (wm, 32 * (tm // wm)), 0))
    perm = [Layout((th, 4, e // (4 * th)), (4, 1, 4 * th)) for th, e in ((tm, bM), (tn, bN))]
    mma = Def("TiledMmaT{}", TiledMMA(UNIVERSAL_FMA, atom, (*perm, None)))
    copies = {f"CpVecMN<{m}>": TiledCopy(VEC, make_layout((min(e // 4, nt), nt // min(e // 4, nt))),
                                         make_layout((4, 1)))
              for m, e in (("BLK_M", bM), ("BLK_N", bN))}
    copies["CpSclMN"] = TiledCopy(SCALAR, make_layout((32, nt // 32)))
    copies["CpSclK"] = TiledCopy(SCALAR, Layout((nt // 8, 8), (8, 1)))
    for name in ("LdVecK", "CpVecK"):     # registers, or cp.async into k-major raw stages
        copies[name] = TiledCopy(VEC, Layout((nt // q, q), (q, 1)), make_layout((1, 4)))

    def stage(op: str, buf: str, quad: bool) -> Def:
        """StageLayout<EXT, BUF, kQuad>: padded (EXT,BLK_K,BUF):(1,EXT+PAD,BLK_K*(EXT+PAD)), or
        k-quads (EXT,(4,BLK_K/4),BUF):(1,(EXT,4*EXT+32/(BLK_K/4)),BLK_K*EXT+32)."""
        ext, n = (bM, bN)[op == "B"], (2 if buf == "2" else P)
        lay = (Layout((ext, (4, q), n), (1, (ext, 4 * ext + 32 // q), bK * ext + 32)) if quad else
               Layout((ext, bK, n), (1, ext + pad, bK * (ext + pad))))
        return Def(f"StageLayout<{_EXT[op][1]}, {buf}, {str(quad).lower()}>{{}}", lay)

    def stage_of(op: str, cname: str) -> tuple[Def, str]:
        # gemm_pipelined: CpVecK operands get 2 compute buffers, k-quad with KQ_LAYOUT bit 0;
        # register-staged (LdVecK) ones STAGES, k-quad with bit 1 (data-parallel entries)
        raw = cname == "CpVecK"
        quad = bool(kq & 1) if raw else cname == "LdVecK" and bool(kq & 2)
        d = stage(op, "2" if raw else "STAGES", quad)
        what = (f"2 buffers fed from k-major raw stages (BLK,BLK_K,{P}):(BLK_K,1,BLK*BLK_K)" if raw
                else f"{P} stages")
        if quad:
            return d, (f"k-quads (KQ_LAYOUT): (BLK,(4,BLK_K/4),BUF):(1,(BLK,4*BLK+{32 // q}),"
                       f"BLK_K*BLK+32), {what} (grid: the first); a warp's transposed k-major "
                       "stores land in 32 banks")
        return d, f"padded like sA/sB, {what} (grid: the first)"

    _copy_mma(b, "CG_PIPE_ENTRY", {k: Def(k + "{}", v) for k, v in copies.items()},
              {"A": stage("A", "STAGES", False), "B": stage("B", "STAGES", False)}, mma,
              f"(BLK,BLK_K,STAGES):(1,BLK+{pad},(BLK+{pad})*BLK_K), {P} pipeline stages (grid: "
              "stage 0); k-major operands' own stages in their copy sections", stage_of)
