#!/usr/bin/env python3
"""The workload that scripts/sanitize.sh runs under compute-sanitizer, in sections (--only):

layouts: cross_check of the chosen kernels (default: every registered one) on odd and
tile-sized shapes in all four operand layouts, with beta != 0, plus the stream-K launches
of every stream-K kernel chosen (grids smaller than a wave, one tile cut 16 ways) and a
split launch of each (whole waves data-parallel, then the stream-K twin), the walks cut
along K, and for a composed kernel rows whose sum cancels (its refine pass), so every entry
point and both halves of the residue handling run;
runtime: run()'s own device paths; stand-in: gemm()'s stand-in for a pick not yet compiled;
batched: every kernel that batches, each precision, on (B, M, K) @ (B, K, N) with odd M, N,
K: broadcast operands (batch 1, stride-0 batches), non-contiguous batches, two batch modes
that do not merge, a batch of one, 16-bit results (batched_paths);
epilogue: every kernel with a fused epilogue, each precision and result type, the fullest
epilogue (bias per column and per row, row and column scales, gelu_tanh, clamp), on walks
cut along K too, 16-bit vectors, and gemm()'s fused pick (epilogue_paths);
fp8: each 8-bit kernel in every 8-bit precision with per-tensor, per-row/column and
1x128 / 128x128 block scales, every result type, K not a multiple of 128, a walk cut along
K, beta != 0 with C (fp8_paths).
Every result is checked against float64 (check.reference and the gauge); the batched,
epilogue and fp8 sections use cute_gemm.DeviceArray operands only (no CuPy or torch).

Exit status 0 only when every check passed and every stream-K, cut and batched path named
above ran; the sanitizer's own verdict comes from its exit code (--error-exitcode in
sanitize.sh).

    python3 scripts/sanitize_run.py [--quick] [--kernels a,b,...]
                                    [--only layouts,runtime,stand-in,batched,epilogue,fp8]
                                    [--stand-in] [--compile-list]
"""
from __future__ import annotations

import argparse
import sys
import time

from cute_gemm import api, check, driver, registry
from cute_gemm.driver import launch
from cute_gemm.plan import resolve, streamk

from sanitize_fused import (CUT_SHAPES, batched_paths, compile_list, epilogue_paths, fp8_paths,
                            section_kernels)

# odd extents (every residue path, the 4-byte fallbacks), one exact tile, tall/thin ones
# (132, 260, 72): leading dimensions that TMA takes as they are, so cute_wgmma_ws's tf32
# register-operand entries run in nn and tt (not copied into its k-major one), residues in all;
# (256, 256, 36): whole tiles only, K residue 4 (cute_pipelined's shifted walk, A and B's
# pointers moved back before their first element)
SHAPES = [(1, 1, 1), (37, 45, 29), (128, 128, 64), (130, 259, 70), (1, 300, 17), (300, 1, 33),
          (132, 260, 72), (256, 256, 36)]
QUICK = [(37, 45, 29), (130, 259, 70), (132, 260, 72)]
# stream-K (multiples of 4: the vector entries, which have the twins): less than a wave,
# and one tile whose 128 k-tiles are cut between 16 CTAs
SK_SHAPES = [(200, 4, 300), (4, 4, 2048)]


def cut_gemm(name: str) -> str | None:
    """The kernel whose walk cuts its last wave along K when `name` runs: itself, or the GEMM
    of a composed kernel; None for every other kernel."""
    k = registry.get(name)
    g = k.gemm_of.kernel if k.gemm_of else k
    return g.name if getattr(g.grid, "tail_split", 0) else None


def split_shape(name: str) -> tuple[int, int, int]:
    """A shape whose tile count passes one wave of kernel `name` on this GPU (a split
    launch: tile0 > 0), small in K to keep the sanitizer's run short. A wave is what resolve
    weighs: the CTAs of the data-parallel entries resident at once (their real occupancy,
    which can exceed __launch_bounds__'s minimum), the most of any layout's."""
    k = registry.get(name)
    bm, bn, _ = k.tile
    lk = resolve.loaded(k, driver.current_ordinal())
    per_sm = max(launch.occupancy(lk.function(e, (e,)), k.threads, k.dyn_smem(1, 1, 1))
                 for e in {streamk.stream_k_dp_entry(v) for v in k.variants if v.stream_k})
    slots = launch.device_info().sm_count * per_sm
    tiles_n = 16
    tiles_m = slots // tiles_n + 2
    return tiles_m * bm - 4, tiles_n * bn - 4, 256


def runtime_paths() -> bool:
    """run()'s own device work, each checked against float64: an out that aliases A (a
    temporary, then a copy), K = 0 into the transposed view of C, a producer stream
    waited for by event, stream-K on the per-thread default stream, a launch cut at the
    grid limit, and a stream-K launch replayed from a captured CUDA graph."""
    import cupy as cp
    import numpy as np
    from cute_gemm import run
    rng = np.random.default_rng(9)
    ok = True

    def same(tag, got, want, tol=1e-4):
        nonlocal ok
        err = float(np.abs(cp.asnumpy(got) - want).max() / max(np.abs(want).max(), 1e-30))
        good = err <= tol
        ok = ok and good
        print(f"runtime {tag}: {'pass' if good else 'FAIL'} (rel err {err:.2e})", flush=True)

    def rand(*shape):
        return cp.asarray(rng.standard_normal(shape, dtype=np.float32))

    a, b = rand(96, 96), rand(96, 96)
    want = cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b)
    run("cute_pipelined", a, b, out=a)
    same("out aliases a", a, want)
    c = rand(64, 64)
    c0 = cp.asnumpy(c)
    run("cute_tiled", rand(64, 0), rand(0, 64), c, out=c.T, beta=2.0)
    same("K=0 into c.T", c.T, 2.0 * c0, 0.0)
    x, y = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    m, n, k = SK_SHAPES[0]
    with x:
        a, b = rand(m, k), rand(k, n)
        out = cp.empty((m, n), dtype=cp.float32)
        run("cute_pipelined", a, b, out=out, stream=y)
    y.synchronize()
    same("producer stream", out, cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b))
    out2 = cp.empty((m, n), dtype=cp.float32)
    run("cute_pipelined", a, b, out=out2, stream=2)
    launch.synchronize(2)
    same("per-thread stream, stream-K", out2, cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b))
    big = 65535 * 16 + 3
    a, b = rand(big, 2), rand(2, 2)
    got = run("naive", a, b)
    cp.cuda.runtime.deviceSynchronize()
    same("cut at the grid limit", got, cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b))
    s = cp.cuda.Stream(non_blocking=True)
    a, b = rand(m, k), rand(k, n)
    out = cp.empty((m, n), dtype=cp.float32)
    run("cute_pipelined", a, b, out=out, stream=s)
    s.synchronize()
    s.begin_capture()
    try:
        run("cute_pipelined", a, b, out=out, stream=s)
    finally:
        g = s.end_capture()
    a[...] = rand(m, k)
    g.launch(s)
    s.synchronize()
    same("graph replay, stream-K", out, cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b))
    return ok


def stand_in_paths() -> bool:
    """gemm()'s first calls with nothing cached (standin.stand_in): the quick kernel in fp32 on
    the operands as given or widened into float32 scratch (scale2d's converting entries),
    into a 16-bit result through a float32 copy of C, for every precision (the composed
    fp32_3xtf32 too), odd shapes in all four operand layouts, beta != 0; each answered
    before its pick has run, and within the gauge of the precision asked for."""
    import os
    import tempfile
    import numpy as np
    import cute_gemm
    from cute_gemm.driver.arrays import DeviceArray, narrow, widen
    rng = np.random.default_rng(13)
    ordinal = driver.current_ordinal()
    cases = [("fp32", "float32", "float32"), ("tf32", "float32", "float32"),
             ("fp32_3xtf32", "float32", "float32"), ("bf16", "bfloat16", "float32"),
             ("bf16", "bfloat16", "bfloat16"), ("fp16", "float16", "float16"),
             ("fp16", "float16", "float32")]
    shapes = [((37, 45, 29), "nn"), ((130, 259, 70), "tn"), ((1, 300, 17), "nt"),
              ((300, 1, 33), "tt")]
    saved = {v: os.environ.get(v) for v in ("CUTE_GEMM_CACHE_DIR", "CUTE_GEMM_FIRST_CALL")}
    os.environ.pop("CUTE_GEMM_FIRST_CALL", None)
    ok, arrays = True, []

    def dev(x: np.ndarray, dtype: str, t: bool) -> DeviceArray:
        d = DeviceArray.from_host(np.ascontiguousarray(x.T if t else x), dtype=dtype)
        arrays.append(d)
        return d.T if t else d
    try:
        for precision, dtype, out in cases:
            for i, ((m, n, k), lay) in enumerate(shapes):
                a, b = (widen(narrow(rng.standard_normal(s, dtype=np.float32), dtype), dtype)
                        for s in ((m, k), (k, n)))
                c = widen(narrow(rng.standard_normal((m, n), dtype=np.float32), out), out)
                # an empty cache each time: the pick compiled by an earlier case's
                # background compile would run instead of the stand-in
                os.environ["CUTE_GEMM_CACHE_DIR"] = tempfile.mkdtemp(prefix="cute_gemm_stand_in_")
                cute_gemm.clear_caches()
                dc = dev(c, out, False)       # updated in place, or into a NaN-filled out
                do = dc if i % 2 == 0 else dev(np.full((m, n), np.nan, np.float32), out, False)
                pick = registry.get(cute_gemm.gemm_choice(
                    m, n, k, layout=lay, precision=precision, out_dtype=out).kernel)
                cute_gemm.gemm(dev(a, dtype, lay[0] == "t"), dev(b, dtype, lay[1] == "t"), dc,
                               beta=-0.5, out=do, precision=precision)
                got = do.to_host().astype(np.float64)
                ran = bool(resolve.loaded(pick, ordinal).functions)
                r = check.judge("auto", got, *check.reference(a, b, c, 1.0, -0.5), False,
                                check.unit(precision, out), out)
                good = r.status == "pass" and not ran
                ok = ok and good
                print(f"stand-in {precision} {dtype}->{out} {m}x{n}x{k} {lay}: "
                      f"{'pass' if good else 'FAIL'} (gauge ratio {r.gauge_ratio:.2f}"
                      f"{', the pick ran' if ran else ''})", flush=True)
    finally:
        for d in arrays:
            d.close()
        for v, x in saved.items():
            if x is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = x
        cute_gemm.clear_caches()
    return ok


def refine_paths(name: str, lay: str) -> bool:
    """A composed kernel (cute_3xtf32) on products that cancel in pairs, so every row is left
    to its refine pass (float64 sums), in layout `lay`, with beta * C as small as the sums,
    checked against float64 (the refined rows: half an ulp)."""
    import numpy as np
    from accuracy_3xtf32 import inputs     # the accuracy study's family, beside this script
    rng = np.random.default_rng(12)
    m, n, k = 130, 70, 200
    a, b = inputs("cancel", m, n, k, rng)
    c = (rng.standard_normal((m, n)) * 2.0**-12).astype(np.float32)
    want = a.astype(np.float64) @ b - 0.5 * c.astype(np.float64)
    lay_a, lay_b = (np.asfortranarray if t == "t" else np.ascontiguousarray for t in lay)
    got = api.run(name, lay_a(a), lay_b(b), c, beta=-0.5)
    err = float((np.abs(got - want) / np.abs(want)).max())
    good = err <= 2.0**-24 * (1 + 2.0**-10)
    print(f"   {name} {lay}: rows that cancel, refined: {'pass' if good else 'FAIL'} "
          f"(largest relative error {err:.2e})", flush=True)
    return good


# ---- batched launches, fused epilogues and 8-bit floats (issues #59, #60) -------------------
# Each on cute_gemm.DeviceArray operands (float32, 16-bit and 8-bit alike; no CuPy or torch),
# drawn standard normal, whole buffers written (initcheck: no element left unwritten), and
# each result judged as cross_check judges: check.reference's float64 value and gauge (the
# epilogue's and the scales' with it), check.unit's unit roundoff, check.judge's threshold.

# odd M, N, K (every residue path, the 4-byte fallbacks); then more than one tile each way
SECTIONS = ("layouts", "runtime", "stand-in", "batched", "epilogue", "fp8")


def section_list(text: str) -> list[str]:
    """--only's argument: a comma list of SECTIONS."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in SECTIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"sections are {', '.join(SECTIONS)}; got {text!r}")
    return list(dict.fromkeys(names))


def layouts_paths(kernels: list[str], quick: bool) -> bool:
    """cross_check of `kernels` in the four operand layouts, with the stream-K, split and cut
    launches and the refine pass of a composed kernel (the module's first paragraph)."""
    shapes = QUICK if quick else SHAPES
    # each stream-K kernel's own stream-K shapes: its split shape depends on its tile
    sk_shapes = {n: SK_SHAPES + ([] if quick else [split_shape(n)]) for n in kernels
                 if getattr(registry.get(n).config, "stream_k", False)}
    cuts = {n: g for n in kernels if (g := cut_gemm(n))}   # name -> the GEMM that cuts
    ok = True
    for lay in registry.LAYOUTS:
        rep = check.cross_check(kernels=kernels, shapes=shapes, layout=lay, beta=-0.5, seed=7)
        # tensor-core kernels also write their 16-bit results (the other epilogue)
        half = [k for k in kernels if {"bf16", "fp16"} & set(registry.get(k).precisions)]
        rep_h = check.cross_check(kernels=half, shapes=shapes, layout=lay, beta=-0.5, seed=9,
                                  out_dtype="same") if half else check.CheckReport()
        fails = rep.failures + rep_h.failures
        for name, sks in sk_shapes.items():
            fails += check.cross_check(kernels=[name], shapes=sks, layout=lay,
                                       beta=-0.5, seed=8).failures
        for name in cuts:
            fails += check.cross_check(kernels=[name], shapes=CUT_SHAPES, layout=lay,
                                       beta=-0.5, seed=10).failures
            if not any(p.kernel == cuts[name] and p.tail_split and p.tail_split[1] > 1
                       for p in api.resolved_launches()):
                print(f"   {name}: the cut last wave not taken at {CUT_SHAPES}")
                ok = False
        plans = api.resolved_launches()
        ran = {(name, s): any(p.kernel == name and p.shape == s and p.stream_k
                              and (p.split or s in SK_SHAPES) for p in plans)
               for name, sks in sk_shapes.items() for s in sks}
        print(f"layouts {lay}: {len(kernels)} kernels x {len(shapes)} shapes, "
              f"stream-K {sum(ran.values())}/{len(ran)} taken, {len(fails)} failures", flush=True)
        for shape, r in fails:
            print(f"   FAIL {shape} {r}")
        for (name, s), took in ran.items():
            if not took:
                print(f"   {name}: stream-K path not taken at {s}")
        ok = ok and not fails and all(ran.values())
        for name in kernels:
            if registry.get(name).gemm_of is not None:
                ok = refine_paths(name, lay) and ok
    return ok


def new_section(section: str, names: list[str], run) -> bool:
    """One of the batched, epilogue and fp8 sections: its lines, then its summary line."""
    t0 = time.perf_counter()
    oks = run() if names or section == "epilogue" else []
    bad = oks.count(False)
    print(f"{section}: {len(oks)} groups on {len(names)} kernels, "
          f"{'PASS' if not bad else f'FAIL ({bad} failing)'} ({time.perf_counter() - t0:.0f} s)",
          flush=True)
    return not bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="fewer shapes and batched/epilogue cases (racecheck is slow)")
    p.add_argument("--kernels", help="comma-separated kernel names (default: all); every section "
                   "runs on those of them it covers")
    p.add_argument("--only", type=section_list, metavar="SECTION[,SECTION...]",
                   help=f"run only these sections, of {', '.join(SECTIONS)} (default: all of them; "
                        "runtime only with cute_pipelined among the kernels, stand-in and gemm()'s "
                        "fused pick only without --kernels)")
    p.add_argument("--stand-in", action="store_true", help="gemm()'s stand-in paths alone "
                   "(--only stand-in)")
    p.add_argument("--compile-list", action="store_true",
                   help="print the kernels the chosen sections launch, one a line (registered "
                        "names and fused compiles, <kernel>:<epilogue tag>), and exit: what "
                        "sanitize.sh compiles before the sanitizer runs")
    a = p.parse_args(argv)
    if a.stand_in and a.only and a.only != ["stand-in"]:
        p.error("--stand-in is --only stand-in: give one of them")
    kernels = ([registry.get(x.strip()).name for x in a.kernels.split(",") if x.strip()]
               if a.kernels else [k.name for k in registry.kernels()])
    if a.stand_in or a.only:
        sections = ["stand-in"] if a.stand_in else a.only
    else:
        sections = (["layouts"] + (["runtime"] if "cute_pipelined" in kernels else [])
                    + ([] if a.kernels else ["stand-in"]) + ["batched", "epilogue", "fp8"])
    if a.compile_list:
        for name in compile_list(sections, kernels, not a.kernels):
            print(name)
        return 0
    ok = True
    if "layouts" in sections:
        ok = layouts_paths(kernels, a.quick) and ok
    if "runtime" in sections:
        ok = runtime_paths() and ok
    if "stand-in" in sections:     # gemm() and its stand-in with every kernel on the table
        ok = stand_in_paths() and ok
    # (after the sections above: a fault here cannot hide their verdicts)
    if "batched" in sections:
        names = section_kernels("batched", kernels)
        ok = new_section("batched", names, lambda: batched_paths(names, a.quick)) and ok
    if "epilogue" in sections:
        names = section_kernels("epilogue", kernels)
        ok = new_section("epilogue", names,
                         lambda: epilogue_paths(names, not a.kernels, a.quick)) and ok
    if "fp8" in sections:
        names = section_kernels("fp8", kernels)
        ok = new_section("fp8", names, lambda: fp8_paths(names, a.quick)) and ok
    print("sanitize workload:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
