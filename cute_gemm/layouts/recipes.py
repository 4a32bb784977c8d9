"""The layouts of each CuTe kernel, described once from its registry entry (its typed `config`,
the source's prelude) and its `CG_*_ENTRY(entry, ARG, ...)` lines. Every layout is a `Def`: the
kernel's own C++ name for it and its value computed here, so that CuTe can print the same names."""
from __future__ import annotations

import re
from typing import Callable

from ..base.precisions import DTYPE, PRECISION
from ..build import paths
from ..registry.ladder_cute import SMEM_PAD, WARP_M, kquad_stage
from .algebra import (SM80_16x8x16, UNIVERSAL_FMA, Layout, TiledCopy, TiledMMA, fmt,
                      gmma_ss, ldsm_x4_a, make_layout, product_each, swizzle_atom, tile_to_shape)
from .model import PROBLEM, THREAD, Def, Global, Part, Recipe, Smem

RECIPES: dict[str, Callable] = {}         # kernel source (registry `source`) -> recipe


def recipe(source: str):
    """Registers a function filling a Recipe as the recipe of the kernels compiled from `source`."""
    return lambda fn: RECIPES.setdefault(source, fn)


def has_recipe(kernel) -> bool:
    return kernel.source in RECIPES


def build(kernel, problem=PROBLEM, thread: int = THREAD) -> Recipe:
    """The recipe of one registered CuTe kernel (KeyError naming it if there is none)."""
    if not has_recipe(kernel):
        raise KeyError(f"no layout recipe for kernel {kernel.name!r} ({kernel.source}); "
                       f"add one to cute_gemm/layouts/recipes.py")
    RECIPES[kernel.source](rec := Recipe(kernel, problem, thread))
    return rec


def entries(kernel, macro: str) -> dict[str, tuple[str, ...]]:
    """The arguments of each `MACRO(entry, ARG, ...)` line of the kernel source, lines written
    by a macro of such lines (c4's CG_MMA_16BIT) included."""
    text = _expanded((paths.kernels_dir() / kernel.source).read_text(), macro)
    out = {m.group(1): tuple(a.strip() for a in m.group(2).split(","))
           for m in re.finditer(rf"^{macro}\((\w+),\s*([^)]*)\)", text, re.M)}
    missing = [v.entry for v in kernel.variants if v.entry not in out]
    if missing:
        raise ValueError(f"{kernel.source}: no {macro}(...) line for entries {missing}; "
                         f"the layout recipe reads each entry's configuration from those lines")
    return {v.entry: out[v.entry] for v in kernel.variants}


def _expanded(text: str, macro: str) -> str:
    """text with each line calling a #define whose body is `macro(...)` lines replaced by
    them, its parameters substituted and ## pasted, one line each."""
    for d in re.finditer(r"^#define (\w+)\(([^)]*)\)((?:.*\\\n)*.*)$", text, re.M):
        name, params, body = d.group(1), [x.strip() for x in d.group(2).split(",")], d.group(3)
        if name == macro or f"{macro}(" not in body:
            continue

        def expand(call, params=params, body=body):
            out = body
            for x, arg in zip(params, (a.strip() for a in call.group(1).split(","))):
                out = re.sub(rf"\b{x}\b", arg, out)
            return re.sub(r"\s*\\\n\s*", "\n", out.replace("##", "")).strip()
        text = re.sub(rf"^{name}\((.*)\)\s*$", expand, text, flags=re.M)
    return text


def _lookup(defs: dict[str, Def], name: str, kernel) -> Def:
    if name not in defs:
        raise ValueError(f"{kernel.source} uses {name!r}, which its layout recipe does not know (recipes.py)")
    return defs[name]


def _by(users: dict, key) -> list[tuple]:
    """(key, [user, ...]) per distinct key(value) of `users` (entry -> its arguments or variant), keys
    sorted; a key of None leaves the user out."""
    out: dict = {}
    for e, a in users.items():
        if (k := key(a)) is not None:
            out.setdefault(k, []).append(e)
    return sorted(out.items())


_EXT = {"A": "M", "B": "N"}
THR_C = Def("thr_layout_c()", make_layout((16, 16), "row"))     # c0, c8: (THR_M,THR_N), n fastest


# ---- c0_gmem: local_tile / local_partition straight from global memory ----------------------
@recipe("cute/c0_gmem.cu")
def _c0(b: Recipe) -> None:
    ents, tC, gC, t = entries(b.kernel, "CG_GMEM_ENTRY"), THR_C, Global("C"), b.thread
    b.section("C and the thread layout (every entry)")
    b.layout("tC", "tC: (THR_M,THR_N) -> thread index", tC, "thread")
    b.tile("gC", gC)
    b.partition("tCgC", f"tCgC = local_partition(gC, tC, {t}, Step<_1, _1>): the outputs "
                f"thread {t} computes", gC, Part(tC, step=(1, 1)))
    for op, i, step, cpp, rows in (("A", 0, (1, None), "Step<_1, X>", "rows of A"),
                                   ("B", 1, (None, 1), "Step<X, _1>", "columns of B")):
        for macro, users in _by(ents, lambda a: a[i]):
            g = Global(op, macro)
            b.section(f"{op} strides {macro} = {fmt(g.strides(b.problem))} ({', '.join(users)})")
            b.tile(f"{macro}/g{op}", g)
            b.partition(f"{macro}/tCg{op}", f"tCg{op} = local_partition(g{op}, tC, {t}, "
                        f"{cpp}): the {rows} thread {t} reads", g, Part(tC, step=step), exact=False)


# ---- c8_tiny_k: strips of A and B staged as float, c0's partition of C from shared memory -------
@recipe("cute/c8_tiny_k.cu")
def _c8(b: Recipe) -> None:
    """Every entry alike (all strides dynamic): padded smem strips, c0's thread layout of C, partitions."""
    (bM, bN, bK), tC = b.tiler, THR_C
    sm = {op: Def(f"smem_layout<{x}>()", Layout((ext, bK), (1, ext + 1)))
          for op, x, ext in (("A", "BLK_M", bM), ("B", "BLK_N", bN))}
    _compute_partitions(b, "shared memory, C and the thread layout (every entry)", sm, tC, "", (
        "sA: (BLK_M,BLK_K) strip of A as float, rows of BLK_M + 1: stores along m or k hit 32 banks",
        "sB: (BLK_N,BLK_K) strip of B as float, rows of BLK_N + 1"))


def _mma_tvs(b: Recipe, mma: Def, a_note: str = "") -> None:
    """The TiledMMA's thread-value layouts of A, B and C."""
    for op, mode in (("A", "M,K"), ("B", "N,K"), ("C", "M,N")):
        b.tv(f"mma_{op}_TV", f"TiledMMA {op}: (thread, value) -> ({mode}) coordinate (get_layout{op}_TV)"
             + (a_note if op == "A" else ""), mma, op)


# ---- c1_smem: k-tiles staged through shared memory -------------------------------------------
@recipe("cute/c1_smem.cu")
def _c1(b: Recipe) -> None:
    bM, bN, bK = b.tiler
    ents = entries(b.kernel, "CG_SMEM_ENTRY")
    defs = {"ThrMajor0": Def("ThrMajor0{}", make_layout((32, 8))),        # m/n contiguous
            "ThrMajor1": Def("ThrMajor1{}", Layout((32, 8), (8, 1)))}     # k contiguous
    tC = Def("thr_layout_c()", make_layout((16, 16)))                       # m fastest
    sm = {"A": Def("smem_layout_a()", make_layout((bM, bK))), "B": Def("smem_layout_b()", make_layout((bN, bK)))}
    t = b.thread
    for op, i, attr in (("A", 0, "a_major"), ("B", 1, "b_major")):
        ext = _EXT[op]
        for major, users in _by({v.entry: v for v in b.kernel.variants}, lambda v: getattr(v, attr)):
            names = {ents[e][i] for e in users}
            if len(names) != 1:
                raise ValueError(f"{b.kernel.source}: entries {users} use copy thread layouts "
                                 f"{sorted(names)}; the recipe shows one per operand major")
            thr = _lookup(defs, names.pop(), b.kernel)
            g = Global(op, major=major)          # c1: make_stride(sAm, sAk), run-time strides
            b.section(f"{op} {major}-major: copy thread layout {thr.name} ({', '.join(users)})")
            pre = f"{op}{major}/"
            b.tile(f"{pre}g{op}", g, f", {major}-major")
            b.layout(f"{pre}t{op}", f"t{op} ({thr.name}): (THR_{ext},THR_K) -> thread index, "
                     "copy global -> shared", thr, "thread")
            b.partition(f"{pre}t{op}g{op}", f"t{op}g{op} = local_partition(g{op}, t{op}, {t}): "
                        f"what thread {t} loads from global", g, Part(thr))
            b.partition(f"{pre}t{op}s{op}", f"t{op}s{op} = local_partition(s{op}, t{op}, {t}): "
                        f"where thread {t} stores it in shared memory", Smem(op, sm[op]), Part(thr))
    _compute_partitions(b, "shared memory and the compute partitions (every entry)", sm, tC, ", compute", (
        "sA: (BLK_M,BLK_K) shared-memory tile of A, m-major", "sB: (BLK_N,BLK_K) shared-memory tile of B, n-major"))


def _compute_partitions(b: Recipe, section: str, sm: dict[str, Def], tC: Def, tc_note: str, titles) -> None:
    """c1's and c8's last section: smem tiles A and B (titles), the thread layout of C, and the
    partitions of smem A and B and of C by it."""
    sA, sB, gC, t = Smem("A", sm["A"]), Smem("B", sm["B"]), Global("C"), b.thread
    b.section(section)
    b.layout("sA", titles[0], sm["A"])
    b.layout("sB", titles[1], sm["B"])
    b.layout("tC", f"tC: (THR_M,THR_N) -> thread index{tc_note}", tC, "thread")
    b.tile("gC", gC)
    b.partition("tCsA", f"tCsA = local_partition(sA, tC, {t}, Step<_1, X>): rows of sA "
                f"thread {t} reads", sA, Part(tC, step=(1, None)), exact=False)
    b.partition("tCsB", f"tCsB = local_partition(sB, tC, {t}, Step<X, _1>): columns of B "
                f"(rows of sB) thread {t} reads", sB, Part(tC, step=(None, 1)), exact=False)
    b.partition("tCgC", f"tCgC = local_partition(gC, tC, {t}, Step<_1, _1>): the outputs "
                f"thread {t} computes", gC, Part(tC, step=(1, 1)))


# ---- c2_tiled, c3_multistage, c3_pipelined: TiledCopy + TiledMMA ---------------------------
def _copy_mma(b: Recipe, macro: str, copies: dict[str, Def], smem: dict[str, Def], mma: Def,
              smem_note: str, stage_of: Callable[[str, str], tuple[Def, str]] | None = None) -> None:
    """A section per (operand, stride macro, copy): tile, copy TV layout, both sides; then smem, the
    TiledMMA and its partitions. stage_of(op, copy): (smem layout, what) if not smem[op]."""
    ents, t = entries(b.kernel, macro), b.thread
    for op, di, ci in (("A", 0, 2), ("B", 1, 3)):
        ext = _EXT[op]
        for (smacro, cname), users in _by(ents, lambda a: (a[di], a[ci])):
            cp = _lookup(copies, cname, b.kernel)
            g = Global(op, smacro)
            own, note = stage_of(op, cname) if stage_of else (smem[op], "")
            s = Smem(op, own)
            b.section(f"{op}: strides {smacro} = {fmt(g.strides(b.problem))}, copy {cname} "
                      f"({', '.join(users)})")
            pre, lo = f"{op}_{smacro}_{cname}/", op.lower()
            b.tile(f"{pre}g{op}", g)
            if own != smem[op]:
                b.layout(f"{pre}s{op}", f"s{op}: shared tile of {op} for these entries ({own.name}), {note}", own)
            b.tv(f"{pre}copy_TV", f"{cname}: TiledCopy (thread, value) -> ({ext},K) coordinate "
                 f"in its {fmt(cp.value.tiler)} tile (get_layoutS_TV; D is the same)", cp, "S")
            b.partition(f"{pre}t{op}g{op}", f"t{op}g{op} = copy_{lo}.get_slice({t}).partition_S"
                        f"(g{op}): (CPY,CPY_{ext},CPY_K,k), what thread {t} loads", g, Part(cp, "S"))
            b.partition(f"{pre}t{op}s{op}", f"t{op}s{op} = copy_{lo}.get_slice({t}).partition_D"
                        f"(s{op}): where thread {t} stores it in shared memory", s, Part(cp, "D"))
            if own != smem[op]:
                b.partition(f"{pre}tCs{op}", f"tCs{op} = mma.get_slice({t}).partition_{op}(s{op}): "
                            f"(MMA,MMA_{ext},MMA_K,BUF), what thread {t} reads of it", s, Part(mma, op),
                            exact=False)
    sA, sB, gC = Smem("A", smem["A"]), Smem("B", smem["B"]), Global("C")
    b.section("shared memory, TiledMMA and the compute partitions (every entry)")
    b.layout("sA", f"sA: shared tile of A, m-major, {smem_note}", smem["A"])
    b.layout("sB", f"sB: shared tile of B, n-major, {smem_note}", smem["B"])
    _mma_tvs(b, mma)
    b.tile("gC", gC)
    b.partition("tCsA", f"tCsA = mma.get_slice({t}).partition_A(sA): (MMA,MMA_M,MMA_K[,PIPE]), "
                f"what thread {t} reads of sA", sA, Part(mma, "A"), exact=False)
    b.partition("tCsB", f"tCsB = mma.get_slice({t}).partition_B(sB): (MMA,MMA_N,MMA_K[,PIPE]), "
                f"what thread {t} reads of sB", sB, Part(mma, "B"), exact=False)
    b.partition("tCgC", f"tCgC = mma.get_slice({t}).partition_C(gC): (MMA,MMA_M,MMA_N), the "
                f"outputs thread {t} computes", gC, Part(mma, "C"))


def _copies(b: Recipe, mn: dict[str, int], k: tuple[str, ...], scl: str, cap: int = 1 << 30,
            cpp: str = "{}") -> dict[str, Def]:
    """The float TiledCopies of c2 / c3, as Defs named NAME + cpp: 16-byte vectors along m or n (mn:
    name -> extent, at most `cap` threads along it) and along k (names k), 4-byte ones ({scl}MN, {scl}K)."""
    nt, q = b.nthreads, b.tiler[2] // 4
    out = {n: TiledCopy(4, make_layout((min(e // 4, cap), nt // min(e // 4, cap))), make_layout((4, 1)))
           for n, e in mn.items()}
    out.update(dict.fromkeys(k, TiledCopy(4, Layout((nt // q, q), (q, 1)), make_layout((1, 4)))))
    out[f"{scl}MN"] = TiledCopy(1, make_layout((32, nt // 32)))
    out[f"{scl}K"] = TiledCopy(1, Layout((nt // 8, 8), (8, 1)))
    return {n: Def(n + cpp, v) for n, v in out.items()}


@recipe("cute/c2_tiled.cu")
def _c2(b: Recipe) -> None:
    bM, bN, bK = b.tiler
    pad = 4                                                # c2_tiled.cu: SMEM_PAD 4
    smem = {"A": Def("smem_layout_a()", Layout((bM, bK), (1, bM + pad))),
            "B": Def("smem_layout_b()", Layout((bN, bK), (1, bN + pad)))}
    mma = Def("tiled_mma()", TiledMMA(UNIVERSAL_FMA, make_layout((16, 16, 1))))
    copies = _copies(b, {"VecMN<BLK_M>": bM, "VecMN<BLK_N>": bN}, ("VecK",), "Scl")
    _copy_mma(b, "CG_TILED_ENTRY", copies, smem, mma,
              f"(BLK,BLK_K):(1,BLK+{pad}), k columns padded by {pad} words")


def _padded(ext: int, bk: int, bufs: int, pad: int) -> Layout:
    """(EXT,BLK_K,BUF):(1,EXT+PAD,BLK_K*(EXT+PAD))."""
    return Layout((ext, bk, bufs), (1, ext + pad, bk * (ext + pad)))


@recipe("cute/c3_multistage.cu")
def _c3_multistage(b: Recipe) -> None:
    bM, bN, bK = b.tiler
    P, pad = b.config.stages, 4                                 # c3_multistage.cu: SMEM_PAD 4
    # gemm_multistage builds its smem ring and TiledMMA in its body: those expressions, verbatim
    b.locals += ["auto bM = Int<BLK_M>{};", "auto bN = Int<BLK_N>{};", "auto bK = Int<BLK_K>{};",
                 "auto bP = Int<STAGES>{};"]
    smem = {op: Def(f"make_layout(make_shape({v}, bK, bP), make_stride(_1{{}}, {v} + Int<SMEM_PAD>{{}}, "
                    f"({v} + Int<SMEM_PAD>{{}}) * bK))", _padded(e, bK, P, pad), local=True)
            for op, v, e in (("A", "bM", bM), ("B", "bN", bN))}
    mma = Def("make_tiled_mma(UniversalFMA<float, float, float, float>{}, Layout<Shape<_16, _16, _1>>{})",
              TiledMMA(UNIVERSAL_FMA, make_layout((16, 16, 1))), local=True)
    copies = _copies(b, {"CpVecMN<BLK_M>": bM, "CpVecMN<BLK_N>": bN}, (), "CpScl")
    _copy_mma(b, "CG_MULTISTAGE_ENTRY", copies, smem, mma,
              f"(BLK,BLK_K,STAGES):(1,BLK+{pad},(BLK+{pad})*BLK_K), {P} stages of a ring (grid: stage 0)")


@recipe("cute/c3_pipelined.cu")
def _c3(b: Recipe) -> None:
    """From its Config; the names: its copy aliases, PipeGeometry, StageLayout, the k-quads."""
    cfg = b.config
    bM, bN, bK = b.tiler
    P, tm, tn, wm = cfg.stages, cfg.thr_m, cfg.thr_n, WARP_M
    q, wn, kq = bK // 4, 32 // wm, cfg.kq_layout
    atom = Layout(((wm, tm // wm), (wn, tn // wn), 1), ((1, 32), (wm, 32 * (tm // wm)), 0))
    perm = [Layout((th, 4, e // (4 * th)), (4, 1, 4 * th)) for th, e in ((tm, bM), (tn, bN))]
    mma = Def("cg::PipeGeometry<Config>::TiledMma{}", TiledMMA(UNIVERSAL_FMA, atom, (*perm, None)))
    # k-major: LdVecK into registers, CpVecK (cp.async) into raw stages; VecK1, a single
    # k-major operand's copy: CpVecK with Config::raw_k, else LdVecK
    k1 = "CpVecK" if cfg.raw_k else "LdVecK"
    copies = _copies(b, {"CpVecM": bM, "CpVecN": bN}, ("LdVecK", "CpVecK", "VecK1"), "CpScl", b.nthreads,
                     "::Tiled{}")

    def stage(op: str, buf: str, quad: str) -> Def:
        """cg::StageLayout<Config, EXT, BUF, kQuad>: padded (EXT,BLK_K,BUF), or k-quads."""
        ext, n = (bM, bN)[op == "B"], (2 if buf == "2" else P)
        is_quad = {"false": False, "cg::kQuadRaw<Config>": bool(kq & 1),
                   "cg::kQuadStaged<Config, false>": bool(kq & 2)}[quad]
        gap, st = kquad_stage(ext, bK)
        lay = Layout((ext, (4, q), n), (1, (ext, gap), st)) if is_quad else _padded(ext, bK, n, SMEM_PAD)
        return Def(f"cg::StageLayout<Config, Config::blk_{'mn'[op == 'B']}, {buf}, {quad}>{{}}", lay)

    def stage_of(op: str, cname: str) -> tuple[Def, str]:
        # gemm_pipelined (pipelined_mainloop.cuh): CpVecK operands get 2 compute buffers,
        # k-quad with kq_layout bit 0 (kQuadRaw); register-staged (LdVecK) ones STAGES, k-quad
        # with bit 1 (kQuadStaged in the data-parallel entries)
        cname = k1 if cname == "VecK1" else cname
        raw = cname == "CpVecK"
        if not raw and not (cname == "LdVecK" and kq & 2):
            return shared[op], ""
        d = stage(op, "2" if raw else "Config::stages",
                  "cg::kQuadRaw<Config>" if raw else "cg::kQuadStaged<Config, false>")
        what = (f"2 buffers fed from k-major raw stages (BLK,BLK_K,{P}):(BLK_K,1,BLK*BLK_K)" if raw
                else f"{P} stages")
        if kq & (1 if raw else 2):
            return d, (f"k-quads (kq_layout): (BLK,(4,BLK_K/4),BUF):(1,(BLK,4*BLK+{32 // q}),BLK_K*BLK+32), "
                       f"{what} (grid: the first); a warp's transposed k-major stores land in 32 banks")
        return d, f"padded like sA/sB, {what} (grid: the first)"

    shared = {op: stage(op, "Config::stages", "false") for op in "AB"}
    _copy_mma(b, "CG_PIPE_ENTRY", copies, shared, mma,
              f"(BLK,BLK_K,STAGES):(1,BLK+{SMEM_PAD},(BLK+{SMEM_PAD})*BLK_K), {P} pipeline stages "
              "(grid: stage 0); k-major operands' own stages in their copy sections", stage_of)


# ---- c4_mma_sm80: tensor-core TiledMMA (mma.sync), 16-byte cp.async copies --------------------
@recipe("cute/c4_mma_sm80.cu")
def _c4(b: Recipe) -> None:
    """The bf16 entries (fp16: the same): 16-byte cp.async copies, swizzled smem atoms with banks and
    stages, the SM80_16x8x16 TiledMMA, and ldmatrix.x4's address side for one A atom (not B's)."""
    bM, bN, bK = b.tiler
    nt, v, t = b.nthreads, 8, b.thread                     # 16-byte vectors of 16-bit values
    ents = entries(b.kernel, "CG_MMA_ENTRY")
    for op, di, ext_name, ext in (("A", 2, "BLK_M", bM), ("B", 3, "BLK_N", bN)):
        for macro, users in _by(ents, lambda a: a[di] if a[0] == "bfloat16_t" else None):
            kmajor = macro.endswith("_k")
            cp = Def(f"g2s_copy<bfloat16_t, {ext_name}, {'true' if kmajor else 'false'}>()", TiledCopy(
                v, *((Layout((nt // (bK // v), bK // v), (bK // v, 1)), make_layout((1, v))) if kmajor
                               else (make_layout((ext // v, nt // (ext // v))), make_layout((v, 1))))))
            g = Global(op, macro)
            b.section(f"{op}: strides {macro} = {fmt(g.strides(b.problem))}, 16-byte cp.async {cp.name} "
                      f"({', '.join(users)})")
            pre, x = f"{op}_{macro}/", _EXT[op]
            b.tile(f"{pre}g{op}", g)
            b.tv(f"{pre}copy_TV", f"{cp.name}: TiledCopy (thread, value) -> ({x},K) coordinate "
                 f"in its {fmt(cp.value.tiler)} tile (get_layoutS_TV)", cp, "S")
            b.partition(f"{pre}t{op}g{op}", f"t{op}g{op} = g2s_{op.lower()}.get_slice({t}).partition_S(g{op}): "
                        f"(CPY,CPY_{x},CPY_K,k), the vectors thread {t} copies", g, Part(cp, "S"))
    # smem: 128-byte rows swizzled (Swizzle<3,log2 V,3> on element offsets), tiled to the ring
    nb, stages = 2, b.config.stages
    b.locals += ["using T = bfloat16_t;", "auto bM = Int<BLK_M>{};", "auto bN = Int<BLK_N>{};",
                 "auto bK = Int<kBlkK<T>>{};", "auto bP = Int<STAGES>{};"]
    for major, fn in (("k", "smem_atom_k"), ("mn", "smem_atom_mn")):
        kmajor = major == "k"
        atom = Def(f"{fn}<bfloat16_t>()", swizzle_atom(nb, kmajor, ptr=False))
        b.section(f"shared memory, {major}-major operands (16-bit entries): {fn}, {stages}-stage ring")
        b.layout(f"{major}/atom", f"{fn}<bfloat16_t>(): 8 lines of 128 bytes, the 16-byte chunk "
                 "index XORed with the line index", atom)
        b.table(f"{major}/atom_banks", "bank of each element of that atom: a line covers all 32 "
                "banks; the same chunk of 8 lines (an ldmatrix phase) 8 bank groups", atom, nb)
        for op, v, ext in (("A", "bM", bM), ("B", "bN", bN)):
            st = Def(f"tile_to_shape({fn}<T>(), make_shape({v}, bK, bP))",
                     tile_to_shape(atom.value, (ext, bK, stages)), local=True)
            b.layout(f"{major}/s{op}", f"s{op} ({major}-major {op}): (BLK_{_EXT[op]},BLK_K,STAGES), stage 0", st)
    wm, wn = b.config.warps_m, b.config.warps_n
    mma = Def("tiled_mma<bfloat16_t>()", TiledMMA(SM80_16x8x16, make_layout((wm, wn, 1)), (
        make_layout(16 * wm), make_layout(16 * wn), make_layout(SM80_16x8x16.shape_mnk[2]))))
    gC = Global("C")
    b.section(f"TiledMMA (SM80_16x8x16 atoms, {wm}x{wn} warps) and C (every entry)")
    _mma_tvs(b, mma, ": what ldmatrix fills")
    b.tile("gC", gC)
    b.partition("tCgC", f"tCgC = mma.get_slice({t}).partition_C(gC): (MMA,MMA_M,MMA_N), the "
                f"accumulators thread {t} holds", gC, Part(mma, "C"))
    # ldmatrix's shared-memory side: which lane addresses each row (its register side is the
    # TiledMMA's A layout above); from PTX's definition, so not part of the nvcc check
    b.section("ldmatrix.x4 into one 16x16 A atom: the lane that supplies each element's "
              "16-byte row address (PTX: lanes 8j..8j+7 address matrix j = A's register j)")
    for kmajor, atom in ((True, "SM75_U32x4_LDSM_N"), (False, "SM75_U16x8_LDSM_T")):
        d = Def(atom, ldsm_x4_a(kmajor), local=True)     # the copy atom the mainloop names
        b.layout(f"ldsm_A_{'k' if kmajor else 'm'}", f"{atom}, {'k' if kmajor else 'm'}-major A: (lane, value) -> "
                 "(M,K) of the atom; the 8 values of a lane are the row it addresses", d, "ldsm", (16, 16))


# ---- c5_wgmma, c6_wgmma_ws: SM90 GMMA, swizzled smem filled by TMA -------------------------------
def _cpp(prec: str) -> str:
    """The C++ type of A and B in `prec`'s entries (tf32: float)."""
    return DTYPE[PRECISION[prec].dtype].cpp


def _groups(kernel) -> list[tuple[str, list]]:
    """The kernel's precisions by element width (bf16 and fp16 share every layout)."""
    out: dict[int, list] = {}
    for p in kernel.precisions:
        out.setdefault(PRECISION[p].itemsize, []).append(p)
    return [("/".join(ps), ps) for ps in out.values()]


def _register_a(v) -> bool:
    """A tf32 entry with an m-major A or n-major B: RS wgmma, that operand from registers."""
    return v.precision == "tf32" and (v.a_major, v.b_major) != ("k", "k")


def _register_operand(b: Recipe) -> None:
    """c6's RS entries: the register operand's stage in GMMA's m-major 128-byte swizzle,
    filled by (32, BLK_K) TMA boxes (their k-major operand is the SS one above)."""
    users = [v for v in b.kernel.variants if _register_a(v)]
    if not users:
        return
    boxes = {v.tma.a if v.a_major == "m" else v.tma.b for v in users}
    if len(boxes) != 1:
        raise ValueError(f"{b.kernel.name}: register-operand entries disagree on their TMA boxes {sorted(boxes)}")
    box, atom = boxes.pop(), swizzle_atom(4, False)
    bm, bk, stages = b.config.blk_m, box[1], b.config.stages
    tile = "cg::sm90::RegisterOperand<Config::blk_m, kBlkK, Config::stages>"
    sdef = Def(f"{tile}::Layout{{}}", tile_to_shape(atom, (bm, bk, stages), (2, 1, 3)))
    adef = Def(f"{tile}::Atom{{}}", atom)
    b.section(f"register operand, tf32 ({', '.join(f'`{v.entry}`' for v in users)}): m-major swizzled smem read "
              f"into RS wgmma's A fragments, TMA box {box}")
    b.layout("Areg/atom", "register-operand smem atom (GMMA::Layout_MN_SW128_Atom<tfloat32_t>): "
             "128 bytes of rows x 8 k-lines", adef)
    b.table("Areg/atom_banks", "bank of each element of that atom: a 128-byte k-line covers "
            "all 32 banks, and the same chunk of 8 k-lines 8 bank groups", adef, 4)
    b.layout("Areg/sA_tf32", f"sA_tf32: (BLK_M,BLK_K,STAGES) = tile_to_shape(atom, ({bm},{bk},{stages}), "
             "Step<_2,_1,_3>: k first), stage 0", sdef)
    b.table("Areg/tma_box", f"TMA boxes {box} of one stage (records.TmaBoxes, contiguous "
            "extent first)", sdef, box=box)


def _gmma(b: Recipe, consumers: int, parts: int, stage_cpp: Callable[..., str], mma_cpp: str) -> None:
    """The kernel's C++ names: stage_cpp(prec, op, major, bk), its OperandTile type; mma_cpp, its
    TiledMMA expression (no nvcc program evaluates these yet: tests/test_layouts.py)."""
    (bm, bn, _), t, nthr = b.tiler, b.thread, 128 * consumers     # the TiledMMA's threads: the consumers
    stages = b.config.stages
    mma_stage: dict[str, Def] = {}
    mma_k: dict[str, int] = {}
    for label, precs in _groups(b.kernel):
        prec, nb = precs[0], PRECISION[precs[0]].itemsize
        suffix = "" if nb == 2 else f"_{prec}"
        vs = [v for v in b.kernel.variants if v.precision in precs and not _register_a(v)]
        for op, ext, ext_name in (("A", bm, "M"), ("B", bn, "N")):
            for major, users in _by({v: v for v in vs}, lambda v: v.a_major if op == "A" else v.b_major):
                kmajor = major == "k"
                boxes = {v.tma.a if op == "A" else v.tma.b for v in users}
                rows = {v.tma.swizzle for v in users}
                if len(boxes) != 1 or len(rows) != 1:
                    raise ValueError(f"{b.kernel.name}: {op} {major}-major entries disagree on "
                                     f"their TMA boxes {sorted(boxes)} / swizzle rows {sorted(rows)}")
                box, row = boxes.pop(), rows.pop()
                bk = row // nb                          # a k-tile: one swizzle row of k
                tile, atom = stage_cpp(prec, op, "K" if kmajor else "MN", bk), swizzle_atom(nb, kmajor, row)
                order = (1, 2, 3) if kmajor else (2, 1, 3)   # sm90_operand.cuh: mn-major slabs k first
                sdef = Def(f"{tile}::Layout{{}}", tile_to_shape(atom, (ext, bk, stages), order))
                adef = Def(f"{tile}::Atom{{}}", atom)
                what = (f"8 rows ({ext_name}) x {row} bytes of k" if kmajor else
                        f"{row} bytes of {ext_name} x 8 columns of k")
                n, pre, s_leaf = len(users), f"{op}{major}{suffix}/", f"s{op}{suffix}"
                b.section(f"{op} {major}-major, {label} ({n} entr{'y' if n == 1 else 'ies'}): swizzled smem, "
                          f"TMA box {box}")
                b.layout(f"{pre}atom", f"{op} {major}-major smem atom (GMMA::Layout_"
                         f"{'K' if kmajor else 'MN'}_SW{row}_Atom, {label}): {what}", adef)
                b.table(f"{pre}atom_banks", f"bank of each element of that atom: a {row}-byte "
                        "line covers all 32 banks, and the same chunk of 8 lines 8 bank groups", adef, nb)
                b.layout(f"{pre}{s_leaf}", f"{s_leaf}: (BLK_{ext_name},BLK_K,STAGES) = "
                         f"tile_to_shape(atom, ({ext},{bk},{stages})"
                         + ("" if kmajor else ", Step<_2,_1,_3>: k first") + "), stage 0", sdef)
                b.table(f"{pre}tma_box", f"TMA boxes {box} of one stage of {s_leaf} "
                        f"(records.TmaBoxes, contiguous extent first)"
                        + (f"; cluster of {parts}: each CTA loads 1/{parts} of them and "
                           "multicasts" if parts > 1 and op == "B" else ""), sdef, box=box, kmajor=kmajor)
                if kmajor and (nb == 2 or op not in mma_stage):
                    mma_stage[op] = sdef
                    mma_k[op] = 32 // nb               # a GMMA atom's K: 16 (16-bit), 8 (tf32)
    # the TiledMMA of the 16-bit k-major entries, else the tf32 one (every entry's C fragment is the same)
    atom_n = bn                                       # ss_op_selector: one wgmma of N = BLK_N
    mma = Def(mma_cpp, TiledMMA(gmma_ss(atom_n, mma_k["A"]), make_layout((consumers, 1, 1))), local=True)
    gC, sA, sB = Global("C"), Smem("A", mma_stage["A"]), Smem("B", mma_stage["B"])
    wg = "a warpgroup" if consumers == 1 else f"each of {consumers} consumer warpgroups"
    which = "every 16-bit k-major entry" if mma_k["A"] == 16 else "the tf32 entry"
    b.section(f"TiledMMA and C: 64x{atom_n}x{mma_k['A']} GMMA SS atom, {wg} ({which}; "
              "the accumulators of every entry)")
    kt = product_each(mma_stage["A"].value.shape)[1]     # BLK_K
    b.tv("mma_C_TV", f"TiledMMA C: (thread, value) -> (M,N) coordinate (get_layoutC_TV): "
         f"the accumulator fragment, {consumers}x64 x {atom_n} over {nthr} threads", mma, "C")
    b.tile("gC", gC)
    b.partition("tCgC", f"tCgC = mma.get_slice({t}).partition_C(gC): (MMA,MMA_M,MMA_N), the "
                f"accumulators thread {t} holds (consumer thread index)", gC, Part(mma, "C"), nthreads=nthr)
    b.partition("tCsA", f"tCsA = mma.get_slice({t}).partition_A(sA): (MMA,MMA_M,MMA_K,PIPE), "
                f"the smem a warpgroup's wgmma reads through descriptors (owners: warpgroups, "
                f"as thread 128 w)", sA, Part(mma, "A"), tile=(bm, kt), owner_step=128, nthreads=nthr)
    b.partition("tCsB", f"tCsB = mma.get_slice({t}).partition_B(sB): (MMA,MMA_N,MMA_K,PIPE), "
                "what each warpgroup reads of sB (all of it)", sB, Part(mma, "B"),
                exact=consumers == 1, tile=(bn, kt), owner_step=128, nthreads=nthr)
    if mma_k["A"] == 32 and bn > 128:       # 8-bit tiles wider than 128: computed in two parts
        part = Def("make_tiled_mma(GMMA::ss_op_selector<T, TB, float, Shape<_64, Int<kBlkN / 2>, "
                   "Int<kBlkK>>, MajA, MajB>(), Layout<Shape<Int<Config::consumers>, _1, _1>>{})",
                   TiledMMA(gmma_ss(bn // 2, 32), make_layout((consumers, 1, 1))), local=True)
        b.partition("tPsB", f"part.get_slice({t}).partition_B(sB): (MMA,PARTS,MMA_K,PIPE), sB in "
                    f"parts of {bn // 2} columns, part p what the kernel's tPrB<p> reads "
                    "(sm90_consumer_scaled.cuh: part 0's wgmmas, then part 1's)", sB,
                    Part(part, "B"), exact=consumers == 1, tile=(bn, kt), owner_step=128,
                    nthreads=nthr)


@recipe("cute/c5_wgmma.cu")
def _c5(b: Recipe) -> None:
    """c5_wgmma.cu's names: BLK_M, BLK_N, BLK_K, STAGES (its prelude); kBlkK = BLK_K * 2 / sizeof(T)."""
    _gmma(b, b.nthreads // 128, 1, lambda prec, op, major, bk: f"cg::sm90::OperandTile<{_cpp(prec)}, "
          f"GMMA::Major::{major}, BLK_{'M' if op == 'A' else 'N'}, {bk}, STAGES>",
          "make_tiled_mma(GMMA::ss_op_selector<T, T, float, Shape<_64, Int<BLK_N>, Int<kBlkK>>, MajA, MajB>())")


@recipe("cute/c6_wgmma_ws.cu")
def _c6(b: Recipe) -> None:
    """c6_wgmma_ws.cu's names: its struct Config (ladder_hopper.WgmmaWsConfig)."""
    _gmma(b, b.config.consumers, b.config.cluster_m, lambda prec, op, major, bk: (
          f"cg::sm90::OperandTile<{_cpp(prec)}, GMMA::Major::{major}, "
          + ("Config::blk_m, " if op == "A" else "Config::blk_n, ") + f"{bk}, Config::stages, "
          + ("1" if op == "A" else "Config::cluster_m") + ", Config::k_bytes>"),
          "make_tiled_mma(GMMA::ss_op_selector<T, TB, float, Shape<_64, Int<kBlkN>, Int<kBlkK>>, "
          "MajA, MajB>(), Layout<Shape<Int<Config::consumers>, _1, _1>>{})")
    _register_operand(b)
    if b.config.batched:
        _batch(b)


BATCH = (2, 3)          # the batch the dumps show: two modes, A broadcast over the first


def _batch(b: Recipe) -> None:
    """The `_b` twins' operands with their batch modes after the matrix (CuTe's L modes; the
    4-D tensor maps hold the same extents and strides): CTA (0,0)'s tile of every problem."""
    twins = [v.batch for v in b.kernel.variants if v.batch]
    b.section(f"a batch of {BATCH[0]}x{BATCH[1]} problems (the _b twins: {twins[0]}, ...): "
              "the L modes after each operand's matrix, A broadcast over L0 (stride 0)")
    for op, g in (("A", Global("A", batch=BATCH, broadcast=(0,))), ("B", Global("B", batch=BATCH)),
                  ("C", Global("C", batch=BATCH))):
        b.tile(f"batch/g{op}_batch", g, " (one A for every L0: stride 0)" if op == "A" else "")
