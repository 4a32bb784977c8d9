#!/usr/bin/env python3
"""The path of one gemm() call through cute_gemm, counted as issue #57 counts it: the stops
(calls into a cute_gemm function; comprehensions and generator bodies are not stops), the
files they are in, and the climbs (a stop in a file the path had already left). On the stub
driver of the tests (tests/stub_driver.py: launches recorded, nothing run or compiled), so
no GPU is needed.

    python scripts/call_path.py [MxNxK] [--precision P] [--show]

Prints the first call's count (tables read, modules loaded), the path of a call with a new
signature (validate, pick, resolve, launch: what #57 measures) and of a repeat call (the
signature hot path); --show lists their stops. A cache folder of its own: no tuned table
of an earlier run (or of the user's) changes the pick, so every run counts the same path."""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import cute_gemm  # noqa: E402
import stub_driver  # noqa: E402
from cute_gemm.driver import launch  # noqa: E402

PKG = str(Path(cute_gemm.__file__).resolve().parent) + os.sep
INNER = ("<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>")


def trace(fn) -> list[tuple[str, str]]:
    """(file relative to the package, function) of every call into cute_gemm while fn runs."""
    stops: list[tuple[str, str]] = []

    def prof(frame, event, arg):
        if event == "call":
            f = frame.f_code.co_filename
            if f.startswith(PKG) and frame.f_code.co_name not in INNER:
                stops.append((f[len(PKG):], frame.f_code.co_name))
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return stops


def count(stops) -> tuple[int, int, int, collections.Counter]:
    """(stops, files, climbs back to a file already left, entries per file) of a path."""
    files, climbs, seen, last = collections.Counter(), 0, set(), None
    for f, _ in stops:
        if f != last:
            files[f] += 1
            climbs += f in seen
            seen.add(f)
            last = f
    return len(stops), len(seen), climbs, files


def report(what: str, stops, show: bool) -> None:
    n, nfiles, climbs, files = count(stops)
    print(f"{what}: {n} stops ({len(set(stops))} distinct functions) in {nfiles} "
          f"files, {climbs} climbs back to a file already left; entered most: "
          + ", ".join(f"{f} {n}×" for f, n in files.most_common(3)))
    if show:
        for f, name in stops:
            print(f"    {f}:{name}")


def paths(mp, m: int, n: int, k: int, precision: str = "fp32") -> dict[str, list]:
    """The stops of a first call, of a new signature (N + 8) and of a repeat call of an
    M x N x K gemm(out=) on the stub driver (installed through MonkeyPatch `mp`)."""
    stub_driver.install(mp)
    mp.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    mp.setenv("CUTE_GEMM_CACHE_DIR", tempfile.mkdtemp(prefix="cute_gemm_call_path_"))
    mp.setenv("CUTE_GEMM_FIRST_CALL", "wait")
    mp.setenv("CUTE_GEMM_TUNE", "off")     # the path once a problem is known (tuning: once)
    a, b, o = (stub_driver.Dev(s, p) for s, p in
               (((m, k), 0x1000_0000), ((k, n), 0x2000_0000), ((m, n), 0x3000_0000)))
    b2, o2 = (stub_driver.Dev(s, p) for s, p in (((k, n + 8), 0x4000_0000),
                                                   ((m, n + 8), 0x5000_0000)))

    def call():
        cute_gemm.gemm(a, b, out=o, precision=precision)
    return {"first": trace(call),
            "new": trace(lambda: cute_gemm.gemm(a, b2, out=o2, precision=precision)),
            "repeat": trace(call)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", nargs="?", default="1000x1300x700")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args()
    m, n, k = (int(x) for x in args.shape.split("x"))
    with pytest.MonkeyPatch.context() as mp:
        got = paths(mp, m, n, k, args.precision)
    report("first call (tables read, kernels loaded)", got["first"], False)
    report("a new signature (validate, pick, resolve, launch)", got["new"], args.show)
    report("a repeat call (the signature hot path)", got["repeat"], args.show)


if __name__ == "__main__":
    main()
