#!/usr/bin/env python3
"""Accuracy of cute_3xtf32 against float64, beside cuBLAS SGEMM (TF32 off), the SIMT fp32
kernel (cute_pipelined) and 1xTF32 (cute_wgmma_ws, precision="tf32"), on an sm_90 GPU.

    python scripts/accuracy_3xtf32.py [--out docs/design] [--m 256] [--seeds 2]

M = N = 256 (the float64 reference stays cheap: 2 * 256^2 * 65,536 multiply-adds at the
largest K) and K = 64, 256, ..., 65,536 (powers of 4); per input family and K, the largest
gauge ratio (check.judge: |C - C_ref| / (2^-23 G), G = |A||B|, the pass mark 16) and the
relative Frobenius error ||C - C_ref|| / ||C_ref||, each the worst over --seeds draws.
Families: normal N(0,1); uniform U[-1,1]; wide |x| = 2^U(-60,60), random signs;
cancel (pairs of columns of A nearly equal, the matching rows of B opposite: every product
cancels its neighbour to ~2^-12, so C is ~2^-12 of its gauge); tiny (A scaled by 2^-110:
the small parts are subnormal, so the range check sends every row of cute_3xtf32 to its
float64 refine pass — shown beside what the split and GEMM would give without the range
check, "3xtf32 unchecked").
Writes accuracy_3xtf32.json and accuracy_3xtf32.png into --out and prints a table.
About a minute on an H100 once the kernels are compiled.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cute_gemm  # noqa: E402
from cute_gemm import driver, registry  # noqa: E402
from cute_gemm.driver import launch, pool
from cute_gemm.plan import composed
from cute_gemm.driver.arrays import DeviceArray, parse
from cute_gemm.check import EPS, THRESHOLD, judge, reference  # noqa: E402
from cute_gemm.perf.cublas import find_cublas  # noqa: E402
from cute_gemm.perf.runner import device_meta  # noqa: E402

KS = (64, 256, 1024, 4096, 16384, 65536)
FAMILIES = ("normal", "uniform", "wide", "cancel", "tiny")
# (label, kernel, precision); cuBLAS and the unchecked split are added by name below
KERNELS = (("3xtf32", "cute_3xtf32", "fp32_3xtf32"), ("SIMT fp32", "cute_pipelined", "fp32"),
           ("1xtf32", "cute_wgmma_ws", "tf32"))
CUBLAS, UNCHECKED = "cuBLAS SGEMM", "3xtf32 unchecked"


def inputs(family: str, m: int, n: int, k: int, rng) -> tuple[np.ndarray, np.ndarray]:
    if family == "uniform":
        a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    elif family == "wide":
        def w(shape):
            return rng.choice([-1.0, 1.0], shape) * 2.0 ** rng.uniform(-60, 60, shape)
        a, b = w((m, k)), w((k, n))
    else:
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if family == "cancel":      # a[:, 2t+1] = a[:, 2t] (1 + ~2^-12), b[2t+1] = -b[2t]
        a[:, 1::2] = a[:, 0::2] * (1 + 2.0**-12 * rng.standard_normal((m, k // 2)))
        b[1::2] = -b[0::2]
    if family == "tiny":
        a = a * 2.0**-110
    return a.astype(np.float32), b.astype(np.float32)


def _stages(dA, dB, dO, run) -> None:
    """cute_3xtf32's stages (composed.Composed) on a scratch of their own: run(c, s)."""
    c = composed.Composed(registry.get("cute_3xtf32"), 0, parse("a", dA), parse("b", dB),
                          parse("out", dO))
    s = pool.alloc_async(c.nbytes, 0, 0)
    try:
        run(c, s)
    finally:
        pool.free_async(s, 0)


def unchecked_3xtf32(dA, dB, dO) -> None:
    """cute_3xtf32's split and GEMM without the range check (what refining every row avoids)."""
    def run(c, s):
        c.prepass(dA.ptr, dB.ptr, s, 0)
        c.product(s, 0)
        launch.memset_f32(s + c.at["flags"], 0, 1, 0)     # the passes that write out: as if unflagged
        c.finish(dA.ptr, dB.ptr, dO.ptr, 1.0, 0.0, s, 0)
    _stages(dA, dB, dO, run)


def range_flags(dA, dB, dO) -> int:
    """The flags word cute_3xtf32's pre-pass sets for these inputs (0: the split carries them)."""
    word = np.zeros(1, np.uint32)

    def run(c, s):
        c.prepass(dA.ptr, dB.ptr, s, 0)
        launch.memcpy_dtoh(word.ctypes.data, s + c.at["flags"], 4, 0)
        launch.synchronize(0)
    _stages(dA, dB, dO, run)
    return int(word[0])


def measure(family: str, m: int, k: int, seed: int, blas) -> dict:
    rng = np.random.default_rng(seed)
    a, b = inputs(family, m, m, k, rng)
    ref, gauge = reference(a, b, None, 1.0, 0.0)
    dA, dB, dO = DeviceArray.from_host(a), DeviceArray.from_host(b), DeviceArray((m, m))
    out, notes = {}, {}
    try:
        runs = [(label, lambda name=name, p=p: cute_gemm.run(name, dA, dB, out=dO, precision=p))
                for label, name, p in KERNELS]
        if blas is not None:
            runs.append((CUBLAS, lambda: blas.matmul(blas.wrap(dA), blas.wrap(dB), blas.wrap(dO))))
        if family == "tiny":
            runs.append((UNCHECKED, lambda: unchecked_3xtf32(dA, dB, dO)))
        if range_flags(dA, dB, dO):
            notes[KERNELS[0][0]] = "every row in float64 (range check)"
        for label, fn in runs:
            fn()
            launch.check_last(label)
            r = judge(label, dO.to_host(), ref, gauge, False, EPS)
            out[label] = {"gauge_ratio": r.gauge_ratio, "rel_frobenius": r.rel_frobenius}
    finally:
        for d in (dA, dB, dO):
            d.close()
    return {"results": out, "notes": notes}


def worst(a: dict | None, b: dict) -> dict:
    if a is None:
        return dict(b)
    return {key: max(a[key], b[key]) for key in b}


def plot(data: dict, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fams = data["families"]
    fig = Figure(figsize=(3.4 * len(fams), 6.2), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, len(fams), sharex=True)
    style = {"3xtf32": ("#C44E52", "o"), "SIMT fp32": ("#4C72B0", "s"), CUBLAS: ("#55A868", "^"),
             "1xtf32": ("#8172B2", "v"), UNCHECKED: ("#CCB974", "x")}
    for j, fam in enumerate(fams):
        rows = [r for r in data["rows"] if r["family"] == fam]
        for i, metric in enumerate(("gauge_ratio", "rel_frobenius")):
            ax = axes[i][j]
            for label, (color, marker) in style.items():
                pts = [(r["k"], r["results"][label][metric]) for r in rows if label in r["results"]]
                if pts:
                    ax.plot(*zip(*pts), color=color, marker=marker, ms=4, lw=1.2, label=label)
            if metric == "gauge_ratio":
                ax.axhline(THRESHOLD, color="0.4", ls="--", lw=0.8)
                ax.set_title(fam)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("K" if i == 1 else "")
            if j == 0:
                ax.set_ylabel("max gauge ratio (fp32 ε, pass ≤ 16)" if i == 0
                              else "relative Frobenius error")
    axes[0][0].legend(fontsize=7)
    dev = data["device"]
    fig.suptitle(f"cute_3xtf32 accuracy vs float64, M = N = {data['m']} — {dev.get('name', '?')} "
                 f"({dev.get('arch', '?')}), {data['date']}", fontsize=10)
    fig.savefig(path)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "design"), help="directory for the JSON and PNG")
    p.add_argument("--m", type=int, default=256, help="M = N (default 256)")
    p.add_argument("--seeds", type=int, default=2, help="draws per family and K (the worst is kept)")
    p.add_argument("--ks", default=",".join(map(str, KS)), help="comma list of K")
    args = p.parse_args()
    info = launch.device_info()
    if not registry.get("cute_3xtf32").runs_on(info.arch_int):
        print(f"cute_3xtf32 needs sm_90a; this GPU is {info.arch}", file=sys.stderr)
        return 2
    driver.ensure_context(info.ordinal)
    blas, note = find_cublas("auto")
    print(note)
    ks = [int(x) for x in args.ks.split(",")]
    t0 = time.perf_counter()
    rows = []
    for fam in FAMILIES:
        for k in ks:
            res, notes = {}, {}
            for s in range(args.seeds):
                r = measure(fam, args.m, k, 1000 * s + k, blas)
                for label, v in r["results"].items():
                    res[label] = worst(res.get(label), v)
                notes.update(r["notes"])
            rows.append({"family": fam, "k": k, "results": res, "notes": notes})
            print(f"{fam:<8} K={k:<6} " + "  ".join(
                f"{lab}: {v['gauge_ratio']:.3g} / {v['rel_frobenius']:.2e}" for lab, v in res.items())
                + (f"  [{'; '.join(f'{a}: {b}' for a, b in notes.items())}]" if notes else ""),
                flush=True)
    data = {"tool": "scripts/accuracy_3xtf32.py", "date": time.strftime("%Y-%m-%d"),
            "device": device_meta(info), "cublas": note, "m": args.m, "n": args.m, "ks": ks,
            "seeds": args.seeds, "families": list(FAMILIES), "eps": EPS, "threshold": THRESHOLD,
            "metrics": "worst over seeds of max gauge ratio and relative Frobenius error vs float64",
            "rows": rows, "seconds": time.perf_counter() - t0}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "accuracy_3xtf32.json").write_text(json.dumps(data, indent=1, default=float) + "\n")
    try:
        plot(data, out / "accuracy_3xtf32.png")
        print(f"wrote {out / 'accuracy_3xtf32.json'} and {out / 'accuracy_3xtf32.png'}")
    except ImportError:
        print(f"wrote {out / 'accuracy_3xtf32.json'} (no matplotlib: no plot)")
    labels = [lab for lab, _, _ in KERNELS] + ([CUBLAS] if blas is not None else [])
    print("\nrelative Frobenius error, K = " + ", ".join(map(str, ks)))
    for fam in FAMILIES:
        for lab in labels + ([UNCHECKED] if fam == "tiny" else []):
            vals = [r["results"].get(lab, {}).get("rel_frobenius") for r in rows if r["family"] == fam]
            print(f"  {fam:<8}{lab:<18}" + " ".join(f"{v:9.2e}" if v is not None else "        -" for v in vals))
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
