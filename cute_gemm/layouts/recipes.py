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
from .model import PROBLEM, STEPS, THREAD, Def, Global, Recipe, Smem

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
    text = (paths.kernels_dir() / kernel.source).read_text()
    for d in re.finditer(r"^#define (\w+)\(([^)]*)\)((?:.*\\\n)*.*)$", text, re.M):
        name, params, body = d.group(1), [x.strip() for x in d.group(2).split(",")], d.group(3)
        if name != macro and f"{macro}(" in body:     # a macro of MACRO lines: its calls expanded

            def expand(call, params=params, body=body):
                for x, arg in zip(params, (a.strip() for a in call.group(1).split(","))):
                    body = re.sub(rf"\b{x}\b", arg, body)
                return re.sub(r"\s*\\\n\s*", "\n", body.replace("##", "")).strip()
            text = re.sub(rf"^{name}\((.*)\)\s*$", expand, text, flags=re.M)
    out = {m.group(1): tuple(a.strip() for a in m.group(2).split(","))
           for m in re.finditer(rf"^{macro}\((\w+),\s*([^)]*)\)", text, re.M)}
    missing = [v.entry for v in kernel.variants if v.entry not in out]
    if missing:
        raise ValueError(f"{kernel.source}: no {macro}(...) line for entries {missing}; "
                         f"the layout recipe reads each entry's configuration from those lines")
    return {v.entry: out[v.entry] for v in kernel.variants}


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
_MODES = {"A": "M,K", "B": "N,K", "C": "M,N"}
THR_C = Def("thr_layout_c()", make_layout((16, 16), "row"))     # c0, c8: (THR_M,THR_N), n fastest


def _thread_c(b: Recipe, tC: Def, sm: dict[str, Def] | None = None, note: str = "",
              reads=("rows of sA", "columns of B (rows of sB)"), how=("", ""), order=(None, None)) -> None:
    """The thread layout tC and C's tile, then what tC gives thread t of the smem tiles sm (op -> layout):
    `reads` (A's, B's), and the outputs; `how` ends those titles, `order` composes sm's, C's tiles first."""
    b.layout("tC", f"tC: (THR_M,THR_N) -> thread index{note}", tC, "thread")
    b.tile("gC", Global("C"))
    for op, d in (sm or {}).items():
        b.partition(f"tCs{op}", Smem(op, d), tC, "tC", f"{reads[op == 'B']} thread {b.thread} reads{how[0]}",
                    step=STEPS[op][:2], order=order[0], exact=False)
    b.partition("tCgC", Global("C"), tC, "tC", f"the outputs thread {b.thread} computes{how[1]}", step=(1, 1),
                order=order[1])


# ---- c0_gmem: local_tile / local_partition straight from global memory ----------------------
@recipe("cute/c0_gmem.cu")
def _c0(b: Recipe) -> None:
    b.section("C and the thread layout (every entry)")
    _thread_c(b, THR_C)
    for op, i, rows in (("A", 0, "rows of A"), ("B", 1, "columns of B")):
        for macro, users in _by(entries(b.kernel, "CG_GMEM_ENTRY"), lambda a: a[i]):
            g = Global(op, macro)
            b.section(f"{op} strides {macro} = {fmt(g.strides(b.problem))} ({', '.join(users)})")
            b.tile(f"{macro}/g{op}", g)
            b.partition(f"{macro}/tCg{op}", g, THR_C, "tC", f"the {rows} thread {b.thread} reads",
                        step=STEPS[op][:2], exact=False)


# ---- c8_tiny_k: strips of A and B in shared memory, c0's partition of C (16-bit: mma.sync) ------
@recipe("cute/c8_tiny_k.cu")
def _c8(b: Recipe) -> None:
    """All strides dynamic: padded smem strips, c0's thread layout of C over tiles whose rows and
    columns are reordered so that a thread's 4 lie side by side; 16-bit entries' MMA after."""
    bM, bN, bK = b.tiler
    order = Layout((16, 4), (4, 1))
    by_k, by_c = Def("by_thread_k<true>()", (order, Layout(bK, 1))), Def("by_thread_c<true>()", (order, order))
    sm = {"A": Def("smem_layout<BLK_M>()", Layout((bM, bK), (1, bM + 4))),
          "B": Def("smem_layout<BLK_N>()", Layout((bN, bK), (1, bN + 4)))}
    b.section("shared memory, C and the thread layout (every entry)")
    b.layout("sA", "sA: (BLK_M,BLK_K) strip of A as float, rows of BLK_M + 4: each k's 16-byte aligned", sm["A"])
    b.layout("sB", "sB: (BLK_N,BLK_K) strip of B as float, rows of BLK_N + 4", sm["B"])
    b.layout("order", "order<true>: (thread coordinate, value) -> row or column: 4 neighbours a thread "
             "(where C's rows are no runs of aligned vectors, c0's partition as it is)", Def("order<true>()", order))
    _thread_c(b, THR_C, sm, reads=("the rows of sA", "the columns of B"), order=(by_k, by_c),
              how=(", 4 side by side (one float4 a k)", ": a vector of 4 a row"))
    # bf16/fp16: strips in their own type, k-major, multiplied by mma.sync; C staged as float
    smk = {op: Def(f"smem_layout_mma<BLK_{_EXT[op]}>()", Layout((x, bK), (bK + 8, 1)))
           for op, x in (("A", bM), ("B", bN))}
    mma = Def("tiny_mma<bfloat16_t>()", TiledMMA(SM80_16x8x16, make_layout((4, 2, 1)), (
        make_layout(64), make_layout(32), make_layout(SM80_16x8x16.shape_mnk[2]))))
    sc = Def("smem_layout_c()", Layout((bM, bN), (bN + 8, 1)))
    b.section("16-bit entries: k-major strips, the SM80_16x8x16 TiledMMA (4x2 warps), C staged in smem")
    for op in "AB":
        b.layout(f"mma/s{op}", f"s{op}: (BLK_{_EXT[op]},BLK_K) strip of {op} in its own type, k-major, rows of "
                 "BLK_K + 8 (80 bytes: ldmatrix's 8 rows on distinct banks)", smk[op])
    for op in "ABC":
        b.tv(f"mma/mma_{op}_TV", f"TiledMMA {op}: (thread, value) -> ({_MODES[op]}) coordinate "
             f"(get_layout{op}_TV)", mma, op)
    b.layout("mma/sC", "sC: (BLK_M,BLK_N) the accumulators as float, rows of BLK_N + 8: read back "
             "through tCgC's partition above", sc)
    for op in "AB":
        b.partition(f"mma/tCs{op}", Smem(op, smk[op]), mma, "mma", f"(MMA,MMA_{_EXT[op]},MMA_K), what "
                    f"thread {b.thread} reads of s{op} (ldmatrix.x4)", op, exact=False)
    b.partition("mma/tCsC", Smem("C", sc), mma, "mma", f"(MMA,MMA_M,MMA_N), where thread {b.thread} "
                "stages its accumulators", "C")


# ---- c1_smem: k-tiles staged through shared memory -------------------------------------------
@recipe("cute/c1_smem.cu")
def _c1(b: Recipe) -> None:
    bM, bN, bK = b.tiler
    ents, t = entries(b.kernel, "CG_SMEM_ENTRY"), b.thread
    defs = {"ThrMajor0": Def("ThrMajor0{}", make_layout((32, 8))),        # m/n contiguous
            "ThrMajor1": Def("ThrMajor1{}", Layout((32, 8), (8, 1)))}     # k contiguous
    sm = {"A": Def("smem_layout_a()", make_layout((bM, bK))), "B": Def("smem_layout_b()", make_layout((bN, bK)))}
    for op, i, attr in (("A", 0, "a_major"), ("B", 1, "b_major")):
        for major, users in _by({v.entry: v for v in b.kernel.variants}, lambda v: getattr(v, attr)):
            names = {ents[e][i] for e in users}
            if len(names) != 1:
                raise ValueError(f"{b.kernel.source}: entries {users} use copy thread layouts "
                                 f"{sorted(names)}; the recipe shows one per operand major")
            thr = _lookup(defs, names.pop(), b.kernel)
            g, pre = Global(op, major=major), f"{op}{major}/"      # c1: make_stride(sAm, sAk), run-time strides
            b.section(f"{op} {major}-major: copy thread layout {thr.name} ({', '.join(users)})")
            b.tile(f"{pre}g{op}", g, f", {major}-major")
            b.layout(f"{pre}t{op}", f"t{op} ({thr.name}): (THR_{_EXT[op]},THR_K) -> thread index, "
                     "copy global -> shared", thr, "thread")
            b.partition(f"{pre}t{op}g{op}", g, thr, f"t{op}", f"what thread {t} loads from global")
            b.partition(f"{pre}t{op}s{op}", Smem(op, sm[op]), thr, f"t{op}",
                        f"where thread {t} stores it in shared memory")
    b.section("shared memory and the compute partitions (every entry)")
    for op in "AB":
        b.layout(f"s{op}", f"s{op}: (BLK_{_EXT[op]},BLK_K) shared-memory tile of {op}, "
                 f"{_EXT[op].lower()}-major", sm[op])
    _thread_c(b, Def("thr_layout_c()", make_layout((16, 16))), sm, ", compute")        # m fastest


# ---- c2_tiled, c3_multistage, c3_pipelined: TiledCopy + TiledMMA ---------------------------
def _copy_in(b: Recipe, op: str, macro: str, cp: Def, name: str, label: str, users, pre: str, how: str):
    """A section for the entries `users` loading operand op with strides `macro` by TiledCopy cp
    (`name`, `label` in the kernel): the CTA tile, the copy's TV layout and what thread t loads."""
    g = Global(op, macro)
    b.section(f"{op}: strides {macro} = {fmt(g.strides(b.problem))}, {how} {name} ({', '.join(users)})")
    b.tile(f"{pre}g{op}", g)
    b.tv(f"{pre}copy_TV", f"{name}: TiledCopy (thread, value) -> ({_EXT[op]},K) coordinate "
         f"in its {fmt(cp.value.tiler)} tile (get_layoutS_TV; D is the same)", cp, "S")
    b.partition(f"{pre}t{op}g{op}", g, cp, label,
                f"(CPY,CPY_{_EXT[op]},CPY_K,k), what thread {b.thread} loads", "S")


def _mma_c(b: Recipe, mma: Def, ops: str = "ABC", a_note: str = "", c_note: str = "", nthreads: int = 0) -> None:
    """The TiledMMA's thread-value layouts of `ops`, C's tile, and the accumulators thread t holds
    (nthreads: of the TiledMMA's threads, the consumers, when not the kernel's)."""
    notes = {"A": a_note, "C": c_note}
    for op in ops:
        b.tv(f"mma_{op}_TV", f"TiledMMA {op}: (thread, value) -> ({_MODES[op]}) coordinate (get_layout{op}_TV)"
             + notes.get(op, ""), mma, op)
    b.tile("gC", Global("C"))
    b.partition("tCgC", Global("C"), mma, "mma", f"(MMA,MMA_M,MMA_N), the accumulators thread {b.thread} "
                f"holds{' (consumer thread index)' if nthreads else ''}", "C", nthreads=nthreads)


def _copy_mma(b: Recipe, macro: str, copies: dict[str, Def], smem: dict[str, Def], mma: Def,
              smem_note: str, stage_of: Callable[[str, str], tuple[Def, str]] | None = None) -> None:
    """A section per (operand, stride macro, copy): tile, copy TV layout, both sides; then smem, the
    TiledMMA and its partitions. stage_of(op, copy): (smem layout, what) if not smem[op]."""
    t = b.thread
    for op, di, ci in (("A", 0, 2), ("B", 1, 3)):
        for (smacro, cname), users in _by(entries(b.kernel, macro), lambda a: (a[di], a[ci])):
            cp, label, pre = _lookup(copies, cname, b.kernel), f"copy_{op.lower()}", f"{op}_{smacro}_{cname}/"
            own, note = stage_of(op, cname) if stage_of else (smem[op], "")
            _copy_in(b, op, smacro, cp, cname, label, users, pre, "copy")
            b.partition(f"{pre}t{op}s{op}", Smem(op, own), cp, label,
                        f"where thread {t} stores it in shared memory", "D")
            if own != smem[op]:
                b.layout(f"{pre}s{op}", f"s{op}: shared tile of {op} for these entries ({own.name}), {note}", own)
                b.partition(f"{pre}tCs{op}", Smem(op, own), mma, "mma",
                            f"(MMA,MMA_{_EXT[op]},MMA_K,BUF), what thread {t} reads of it", op, exact=False)
    b.section("shared memory, TiledMMA and the compute partitions (every entry)")
    for op in "AB":
        b.layout(f"s{op}", f"s{op}: shared tile of {op}, {_EXT[op].lower()}-major, {smem_note}", smem[op])
    _mma_c(b, mma)
    for op in "AB":
        b.partition(f"tCs{op}", Smem(op, smem[op]), mma, "mma", f"(MMA,MMA_{_EXT[op]},MMA_K[,PIPE]), what "
                    f"thread {t} reads of s{op}", op, exact=False)


def _vectors(nt: int, v: int, kmajor: bool, ext: int, cap: int = 1 << 30) -> TiledCopy:
    """nt threads copying vectors of v values along k (kmajor: ext is BLK_K) or along m or n,
    ext // v threads along it (at most cap)."""
    n = min(ext // v, cap)
    if kmajor:
        return TiledCopy(v, Layout((nt // n, n), (n, 1)), make_layout((1, v)))
    return TiledCopy(v, make_layout((n, nt // n)), make_layout((v, 1)))


def _copies(b: Recipe, mn: dict[str, int], k: tuple[str, ...], scl: str, cap: int = 1 << 30,
            cpp: str = "{}") -> dict[str, Def]:
    """The float TiledCopies of c2 / c3, as Defs named NAME + cpp: 16-byte vectors along m or n (mn:
    name -> extent, at most `cap` threads along it) and along k (names k), 4-byte ones ({scl}MN, {scl}K)."""
    nt = b.nthreads
    out = {n: _vectors(nt, 4, False, e, cap) for n, e in mn.items()}
    out.update(dict.fromkeys(k, _vectors(nt, 4, True, b.tiler[2])))
    out[f"{scl}MN"] = TiledCopy(1, make_layout((32, nt // 32)))
    out[f"{scl}K"] = TiledCopy(1, Layout((nt // 8, 8), (8, 1)))
    return {n: Def(n + cpp, v) for n, v in out.items()}


def _padded(ext: int, bk: int, bufs: int, pad: int = SMEM_PAD) -> Layout:
    """(EXT,BLK_K,BUF):(1,EXT+PAD,BLK_K*(EXT+PAD))."""
    return Layout((ext, bk, bufs), (1, ext + pad, bk * (ext + pad)))


FMA_16x16 = TiledMMA(UNIVERSAL_FMA, make_layout((16, 16, 1)))        # c2, c3_multistage
PAD = 4                                                               # their SMEM_PAD


@recipe("cute/c2_tiled.cu")
def _c2(b: Recipe) -> None:
    bM, bN, bK = b.tiler
    smem = {"A": Def("smem_layout_a()", Layout((bM, bK), (1, bM + PAD))),
            "B": Def("smem_layout_b()", Layout((bN, bK), (1, bN + PAD)))}
    copies = _copies(b, {"VecMN<BLK_M>": bM, "VecMN<BLK_N>": bN}, ("VecK",), "Scl")
    _copy_mma(b, "CG_TILED_ENTRY", copies, smem, Def("tiled_mma()", FMA_16x16),
              f"(BLK,BLK_K):(1,BLK+{PAD}), k columns padded by {PAD} words")


@recipe("cute/c3_multistage.cu")
def _c3_multistage(b: Recipe) -> None:
    (bM, bN, bK), P = b.tiler, b.config.stages
    # gemm_multistage builds its smem ring and TiledMMA in its body: those expressions, verbatim
    b.locals += ["auto bM = Int<BLK_M>{};", "auto bN = Int<BLK_N>{};", "auto bK = Int<BLK_K>{};",
                 "auto bP = Int<STAGES>{};"]
    smem = {op: Def(f"make_layout(make_shape({v}, bK, bP), make_stride(_1{{}}, {v} + Int<SMEM_PAD>{{}}, "
                    f"({v} + Int<SMEM_PAD>{{}}) * bK))", _padded(e, bK, P, PAD), local=True)
            for op, v, e in (("A", "bM", bM), ("B", "bN", bN))}
    mma = Def("make_tiled_mma(UniversalFMA<float, float, float, float>{}, Layout<Shape<_16, _16, _1>>{})",
              FMA_16x16, local=True)
    copies = _copies(b, {"CpVecMN<BLK_M>": bM, "CpVecMN<BLK_N>": bN}, (), "CpScl")
    _copy_mma(b, "CG_MULTISTAGE_ENTRY", copies, smem, mma, f"(BLK,BLK_K,STAGES):(1,BLK+{PAD},"
              f"(BLK+{PAD})*BLK_K), {P} stages of a ring (grid: stage 0)")


@recipe("cute/c3_pipelined.cu")
def _c3(b: Recipe) -> None:
    """From its Config; the names: its copy aliases, PipeGeometry, StageLayout, the k-quads."""
    cfg, (bM, bN, bK) = b.config, b.tiler
    P, tm, tn, wm, kq = cfg.stages, cfg.thr_m, cfg.thr_n, WARP_M, cfg.kq_layout
    q, wn = bK // 4, 32 // wm
    atom = Layout(((wm, tm // wm), (wn, tn // wn), 1), ((1, 32), (wm, 32 * (tm // wm)), 0))
    perm = [Layout((th, 4, e // (4 * th)), (4, 1, 4 * th)) for th, e in ((tm, bM), (tn, bN))]
    mma = Def("cg::PipeGeometry<Config>::TiledMma{}", TiledMMA(UNIVERSAL_FMA, atom, (*perm, None)))
    # k-major: LdVecK into registers, CpVecK (cp.async) into raw stages; VecK1, a single
    # k-major operand's copy: CpVecK with Config::raw_k, else LdVecK
    copies = _copies(b, {"CpVecM": bM, "CpVecN": bN}, ("LdVecK", "CpVecK", "VecK1"), "CpScl", b.nthreads,
                     "::Tiled{}")

    def stage(op: str, buf: str, quad: str = "false", is_quad: bool = False) -> Def:
        """cg::StageLayout<Config, EXT, BUF, kQuad>: padded (EXT,BLK_K,BUF), or k-quads."""
        ext, n = (bM, bN)[op == "B"], (2 if buf == "2" else P)
        gap, st = kquad_stage(ext, bK)
        lay = Layout((ext, (4, q), n), (1, (ext, gap), st)) if is_quad else _padded(ext, bK, n)
        return Def(f"cg::StageLayout<Config, Config::blk_{'mn'[op == 'B']}, {buf}, {quad}>{{}}", lay)

    def stage_of(op: str, cname: str) -> tuple[Def, str]:
        # gemm_pipelined (pipelined_mainloop.cuh): CpVecK operands get 2 compute buffers,
        # k-quad with kq_layout bit 0 (kQuadRaw); register-staged (LdVecK) ones STAGES, k-quad
        # with bit 1 (kQuadStaged in the data-parallel entries)
        cname = ("CpVecK" if cfg.raw_k else "LdVecK") if cname == "VecK1" else cname
        if cname == "CpVecK":
            buf, quad, bit, what = "2", "cg::kQuadRaw<Config>", 1, ("2 buffers fed from k-major raw stages "
                                                                   f"(BLK,BLK_K,{P}):(BLK_K,1,BLK*BLK_K)")
        elif cname == "LdVecK" and kq & 2:
            buf, quad, bit, what = "Config::stages", "cg::kQuadStaged<Config, false>", 2, f"{P} stages"
        else:
            return shared[op], ""
        if kq & bit:
            return stage(op, buf, quad, True), (f"k-quads (kq_layout): (BLK,(4,BLK_K/4),BUF):(1,(BLK,4*BLK+"
                                                f"{32 // q}),BLK_K*BLK+32), {what} (grid: the first); a warp's "
                                                "transposed k-major stores land in 32 banks")
        return stage(op, buf, quad), f"padded like sA/sB, {what} (grid: the first)"

    shared = {op: stage(op, "Config::stages") for op in "AB"}
    _copy_mma(b, "CG_PIPE_ENTRY", copies, shared, mma,
              f"(BLK,BLK_K,STAGES):(1,BLK+{SMEM_PAD},(BLK+{SMEM_PAD})*BLK_K), {P} pipeline stages "
              "(grid: stage 0); k-major operands' own stages in their copy sections", stage_of)


# ---- c4_mma_sm80: tensor-core TiledMMA (mma.sync), 16- and 4-byte cp.async copies --------------
def _banks(b: Recipe, pre: str, atom: Def, nb: int, row: int = 128) -> None:
    b.table(f"{pre}atom_banks", f"bank of each element of that atom: a {row}-byte line covers all 32 banks, "
            "and the same chunk of 8 lines (an ldmatrix phase, a wgmma core matrix) 8 bank groups", atom, nb)


@recipe("cute/c4_mma_sm80.cu")
def _c4(b: Recipe) -> None:
    """The bf16 entries (fp16: the same): 16-byte cp.async copies (4-byte ones for _al2), swizzled
    smem atoms with banks and stages, the SM80_16x8x16 TiledMMA, and ldmatrix.x4's address side
    for one A atom (not B's)."""
    bM, bN, bK = b.tiler
    nt, v = b.nthreads, 8                     # 16-byte vectors of 16-bit values
    ents = entries(b.kernel, "CG_MMA_ENTRY")
    for op, di, ext in (("A", 2, bM), ("B", 3, bN)):
        # G (the last argument): 16-byte vectors (G 16; 2: filled by loads), 4-byte granules (_al2)
        for (macro, g), users in _by(ents, lambda a: (a[di], a[-1] == "4") if a[0] == "bfloat16_t" else None):
            kmajor = macro.endswith("_k")
            # 4-byte granules (2 values): 8 threads on a 32-byte sector, then the other mode
            cp = Def(f"g2s_copy<bfloat16_t, BLK_{_EXT[op]}, {'true' if kmajor else 'false'}, {4 if g else 16}>()",
                     _vectors(nt, 2, kmajor, 16) if g else _vectors(nt, v, kmajor, bK if kmajor else ext))
            _copy_in(b, op, macro, cp, cp.name, f"g2s_{op.lower()}", users,
                     f"{op}_{macro}{'_al2' if g else ''}/", "4-byte cp.async" if g else "16-byte cp.async")
    # smem: 128-byte rows swizzled (Swizzle<3,log2 V,3> on element offsets), tiled to the ring
    stages = b.config.stages
    b.locals += ["using T = bfloat16_t;", "auto bM = Int<BLK_M>{};", "auto bN = Int<BLK_N>{};",
                 "auto bK = Int<kBlkK<T>>{};", "auto bP = Int<STAGES>{};"]
    for major, fn in (("k", "smem_atom_k"), ("mn", "smem_atom_mn")):
        atom = Def(f"{fn}<bfloat16_t>()", swizzle_atom(2, major == "k", ptr=False))
        b.section(f"shared memory, {major}-major operands (16-bit entries): {fn}, {stages}-stage ring")
        b.layout(f"{major}/atom", f"{fn}<bfloat16_t>(): 8 lines of 128 bytes, the 16-byte chunk "
                 "index XORed with the line index", atom)
        _banks(b, f"{major}/", atom, 2)
        for op, v, ext in (("A", "bM", bM), ("B", "bN", bN)):
            st = Def(f"tile_to_shape({fn}<T>(), make_shape({v}, bK, bP))",
                     tile_to_shape(atom.value, (ext, bK, stages)), local=True)
            b.layout(f"{major}/s{op}", f"s{op} ({major}-major {op}): (BLK_{_EXT[op]},BLK_K,STAGES), stage 0", st)
    wm, wn = b.config.warps_m, b.config.warps_n
    mma = Def("tiled_mma<bfloat16_t>()", TiledMMA(SM80_16x8x16, make_layout((wm, wn, 1)), (
        make_layout(16 * wm), make_layout(16 * wn), make_layout(SM80_16x8x16.shape_mnk[2]))))
    b.section(f"TiledMMA (SM80_16x8x16 atoms, {wm}x{wn} warps) and C (every entry)")
    _mma_c(b, mma, a_note=": what ldmatrix fills")
    # ldmatrix's shared-memory side: which lane addresses each row (its register side is the
    # TiledMMA's A layout above); from PTX's definition, so not part of the nvcc check
    b.section("ldmatrix.x4 into one 16x16 A atom: the lane that supplies each element's "
              "16-byte row address (PTX: lanes 8j..8j+7 address matrix j = A's register j)")
    for major, atom in (("k", "SM75_U32x4_LDSM_N"), ("m", "SM75_U16x8_LDSM_T")):
        d = Def(atom, ldsm_x4_a(major == "k"), local=True)     # the copy atom the mainloop names
        b.layout(f"ldsm_A_{major}", f"{atom}, {major}-major A: (lane, value) -> (M,K) of the atom; "
                 "the 8 values of a lane are the row it addresses", d, "ldsm", (16, 16))


# ---- c5_wgmma, c6_wgmma_ws: SM90 GMMA, swizzled smem filled by TMA -------------------------------
def _register_a(v) -> bool:
    """A tf32 entry with an m-major A or n-major B: RS wgmma, that operand from registers."""
    return v.precision == "tf32" and (v.a_major, v.b_major) != ("k", "k")


def _stage(b: Recipe, section: str, pre: str, leaf: str, users, op_of, cpp: str, nb: int, major: str,
           ext: tuple[str, int], who: str, note: str = "") -> Def:
    """A section of one swizzled GMMA stage `leaf` of the entries `users` (op_of(v): the operand whose TMA
    box fills it; cpp: its C++ type, {bk} its k-tile; ext: (M or N, extent)): its atom and bank map,
    (EXT,BLK_K,STAGES) tiled from it (a k-tile: one swizzle row), the boxes filling it."""
    got = {(v.tma.a if op_of(v) == "A" else v.tma.b, v.tma.swizzle) for v in users}
    if len(got) != 1:
        raise ValueError(f"{b.kernel.name}: entries {[v.entry for v in users]} disagree on their TMA "
                         f"boxes / swizzle rows {sorted(got)}")
    (box, row), kmajor, (x, n), stages = got.pop(), major == "k", ext, b.config.stages
    atom, bk = swizzle_atom(nb, kmajor, row), row // nb
    cpp = cpp.format(bk=bk)                  # sm90_operand.cuh: mn-major slabs k first
    sdef = Def(f"{cpp}::Layout{{}}", tile_to_shape(atom, (n, bk, stages), (1, 2, 3) if kmajor else (2, 1, 3)))
    b.section(section.format(box=box))
    b.layout(f"{pre}atom", f"{who} smem atom (GMMA::Layout_{'K' if kmajor else 'MN'}_SW{row}_Atom): " + (
             f"8 rows ({x}) x {row} bytes of k" if kmajor else f"{row} bytes of {x} x 8 columns of k"),
             adef := Def(f"{cpp}::Atom{{}}", atom))
    _banks(b, pre, adef, nb, row)
    b.layout(f"{pre}{leaf}", f"{leaf}: (BLK_{x},BLK_K,STAGES) = tile_to_shape(atom, ({n},{bk},{stages})"
             + ("" if kmajor else ", Step<_2,_1,_3>: k first") + "), stage 0", sdef)
    b.table(f"{pre}tma_box", f"TMA boxes {box} of one stage of {leaf} (records.TmaBoxes, contiguous "
            f"extent first){note}", sdef, box=box, kmajor=kmajor)
    return sdef


def _gmma(b: Recipe, consumers: int, parts: int, stage_cpp: str, mma_cpp: str) -> None:
    """The kernel's C++ names: stage_cpp, its OperandTile type (over {T}, {major}, {X} or {x} the extent's
    letter, {bk}, {cluster}); mma_cpp, its TiledMMA (no nvcc program evaluates these yet: test_layouts)."""
    (bm, bn, _), nthr = b.tiler, 128 * consumers          # the TiledMMA's threads: the consumers
    mma_stage: dict[str, tuple] = {}            # op -> (stage, element bytes, precisions)
    widths: dict[int, list] = {}                # bf16 and fp16 share every layout
    for p in b.kernel.precisions:
        widths.setdefault(PRECISION[p].itemsize, []).append(p)
    for nb, precs in widths.items():
        label, suffix, T = "/".join(precs), "" if nb == 2 else f"_{precs[0]}", DTYPE[PRECISION[precs[0]].dtype].cpp
        vs = [v for v in b.kernel.variants if v.precision in precs and not _register_a(v)]
        for op, ext in (("A", ("M", bm)), ("B", ("N", bn))):
            for major, users in _by({v: v for v in vs}, lambda v: v.a_major if op == "A" else v.b_major):
                n, X = len(users), ext[0]
                cpp = stage_cpp.format(T=T, major="K" if major == "k" else "MN", X=X, x=X.lower(), bk="{bk}",
                                       cluster="1" if op == "A" else "Config::cluster_m")
                sdef = _stage(b, f"{op} {major}-major, {label} ({n} entr{'y' if n == 1 else 'ies'}): swizzled "
                              "smem, TMA box {box}", f"{op}{major}{suffix}/", f"s{op}{suffix}", users,
                              lambda v: op, cpp, nb, major, ext, f"{op} {major}-major {label}",
                              f"; cluster of {parts}: each CTA loads 1/{parts} of them and multicasts"
                              if parts > 1 and op == "B" else "")
                if major == "k" and (nb == 2 or op not in mma_stage):
                    mma_stage[op] = (sdef, nb, label)   # the 16-bit k-major entries', else the first width's
    # the TiledMMA of those stages (every entry's C fragment is the same): a GMMA atom's K is 32 bytes
    (sA, nb, label), sB, kt = mma_stage["A"], mma_stage["B"][0], product_each(mma_stage["A"][0].value.shape)[1]
    mma = Def(mma_cpp, TiledMMA(gmma_ss(bn, 32 // nb), make_layout((consumers, 1, 1))), local=True)
    b.section(f"TiledMMA and C: 64x{bn}x{32 // nb} GMMA SS atom, "           # ss_op_selector: N = BLK_N
              + ("a warpgroup" if consumers == 1 else f"each of {consumers} consumer warpgroups")
              + f" (every {label} k-major entry; the accumulators of every entry)")
    _mma_c(b, mma, "C", c_note=f": the accumulator fragment, {bm} x {bn} over {nthr} threads",
           nthreads=nthr)
    for op, s, tile in (("A", sA, (bm, kt)), ("B", sB, (bn, kt))):
        b.partition(f"tCs{op}", Smem(op, s), mma, "mma", f"(MMA,MMA_{_EXT[op]},MMA_K,PIPE), what a warpgroup's "
                    f"wgmma reads of s{op} through descriptors ({'all of it; ' if op == 'B' else ''}owners: "
                    "warpgroups, as thread 128 w)", op, exact=op == "A" or consumers == 1, tile=tile,
                    owner_step=128, nthreads=nthr)
    if nb == 1 and bn > 128:       # 8-bit tiles wider than 128: computed in two parts
        part = Def("make_tiled_mma(GMMA::ss_op_selector<T, TB, float, Shape<_64, Int<kBlkN / 2>, "
                   "Int<kBlkK>>, MajA, MajB>(), Layout<Shape<Int<Config::consumers>, _1, _1>>{})",
                   TiledMMA(gmma_ss(bn // 2, 32), make_layout((consumers, 1, 1))), local=True)
        b.partition("tPsB", Smem("B", sB), part, "part", f"(MMA,PARTS,MMA_K,PIPE), sB in parts of {bn // 2} "
                    "columns, part p what the kernel's tPrB<p> reads (sm90_consumer_scaled.cuh: part 0's "
                    "wgmmas, then part 1's)", "B", exact=consumers == 1, tile=(bn, kt), owner_step=128,
                    nthreads=nthr)


@recipe("cute/c5_wgmma.cu")
def _c5(b: Recipe) -> None:
    """c5_wgmma.cu's names: BLK_M, BLK_N, BLK_K, STAGES (its prelude); kBlkK = BLK_K * 2 / sizeof(T)."""
    _gmma(b, b.nthreads // 128, 1, "cg::sm90::OperandTile<{T}, GMMA::Major::{major}, BLK_{X}, {bk}, STAGES>",
          "make_tiled_mma(GMMA::ss_op_selector<T, T, float, Shape<_64, Int<BLK_N>, Int<kBlkK>>, MajA, MajB>())")


BATCH = (2, 3)          # the batch the dumps show: two modes, A broadcast over the first


@recipe("cute/c6_wgmma_ws.cu")
def _c6(b: Recipe) -> None:
    """c6_wgmma_ws.cu's names: its struct Config (ladder_hopper.WgmmaWsConfig). Its RS entries (tf32,
    an m-major A or n-major B) read that operand's stage, GMMA's m-major swizzle, into registers; the
    `_b` twins add the batch's L modes after each operand's matrix."""
    cfg = b.config
    # (ping-pong: a warpgroup computes a whole tile, BLK_M / 64 atoms along m)
    _gmma(b, 1 if cfg.pingpong else cfg.consumers, cfg.cluster_m, "cg::sm90::OperandTile<{T}, GMMA::Major::{major}, "
          "Config::blk_{x}, {bk}, Config::stages, {cluster}, Config::k_bytes>", "make_tiled_mma(GMMA::ss_op_selector<"
          "T, TB, float, Shape<_64, Int<kBlkN>, Int<kBlkK>>, MajA, MajB>(), Layout<Shape<Int<kMmaGroups>, _1, _1>>{})")
    if users := [v for v in b.kernel.variants if _register_a(v)]:          # from sm90_register_operand.cuh
        _stage(b, f"register operand, tf32 ({', '.join(f'`{v.entry}`' for v in users)}): m-major swizzled smem "
               "read into RS wgmma's A fragments, TMA box {box}", "Areg/", "sA_tf32", users,
               lambda v: "A" if v.a_major == "m" else "B",
               "cg::sm90::RegisterOperand<Config::blk_m, kBlkK, Config::stages>", 4, "m", ("M", cfg.blk_m),
               "register-operand tf32")
    if cfg.batched:        # CTA (0,0)'s tile of every problem (the 4-D tensor maps hold the same modes)
        b.section(f"a batch of {BATCH[0]}x{BATCH[1]} problems (the _b twins: "
                  f"{next(v.batch for v in b.kernel.variants if v.batch)}, ...): the L modes after each "
                  "operand's matrix, A broadcast over L0 (stride 0)")
        b.tile("batch/gA_batch", Global("A", batch=BATCH, broadcast=(0,)), " (one A for every L0: stride 0)")
        b.tile("batch/gB_batch", Global("B", batch=BATCH))
        b.tile("batch/gC_batch", Global("C", batch=BATCH))
