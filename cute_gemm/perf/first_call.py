"""The first gemm() call of a fresh process (`bench --first-call`), each case a new interpreter
on caches of its own: quick (empty, the default stand-in), wait (empty, CUTE_GEMM_FIRST_CALL=wait),
warm (wait's caches). docs/design/first_call.md#quick-first-call."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

from .schema import FIRST_CALL_MODES as MODES

FIRST_CALL_SHAPE = (4096, 4096, 4096)

# the child: one case, one JSON line on stdout
_CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
sys.path[:0] = json.loads(os.environ["CUTE_GEMM_FC_PATH"])
import numpy as np
import cute_gemm
from cute_gemm import registry
from cute_gemm.driver import launch
from cute_gemm.plan import resolve
from cute_gemm.driver.arrays import DeviceArray
import_s = time.perf_counter() - t0
m, n, k = (int(x) for x in sys.argv[1].split("x"))
rng = np.random.default_rng(0)
a = DeviceArray.from_host(rng.standard_normal((m, k), dtype=np.float32))
b = DeviceArray.from_host(rng.standard_normal((k, n), dtype=np.float32))
out = DeviceArray((m, n))
launch.synchronize()
pick = cute_gemm.gemm_choice(m, n, k)
t1 = time.perf_counter()
cute_gemm.gemm(a, b, out=out)
launch.synchronize()
first_s = time.perf_counter() - t1
first = sorted({p.kernel for p in resolve.resolved_launches()})
hot = lambda: any(s[0] == registry.AUTO for s in resolve.CACHE.hot)
calls, pick_s = 1, (0.0 if hot() else None)
while pick_s is None and time.perf_counter() - t1 < float(sys.argv[2]):
    cute_gemm.gemm(a, b, out=out)
    launch.synchronize()
    calls += 1
    if hot():
        pick_s = time.perf_counter() - t1
cute_gemm.wait_for_compiles(1.0)
print(json.dumps(dict(import_s=import_s, first_s=first_s, first_kernels=first,
                      pick=pick.key, pick_s=pick_s, calls=calls)))
"""


def _child(shape: tuple[int, int, int], mode: str, cache_dir: str, timeout: float) -> dict:
    env = dict(os.environ, CUTE_GEMM_CACHE_DIR=cache_dir,
               CUDA_CACHE_PATH=os.path.join(cache_dir, "nv"),
               CUTE_GEMM_FC_PATH=json.dumps([p for p in sys.path if p]))
    env.pop("CUTE_GEMM_DISABLE_CACHE", None)
    env.pop("CUTE_GEMM_FIRST_CALL", None)       # quick: the default
    if mode != "quick":
        env["CUTE_GEMM_FIRST_CALL"] = "wait"
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD, "x".join(map(str, shape)),
                            str(timeout)], env=env, capture_output=True, text=True,
                           timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {timeout + 60:.0f} s"}
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"error": tail}
    return json.loads(lines[-1])


def measure_first_call(shape: tuple[int, int, int] = FIRST_CALL_SHAPE,
                       timeout: float = 300.0) -> dict:
    """{"shape": [M, N, K], mode: the child's JSON or {"error": its last line}} for each of
    MODES, an fp32 gemm() on caches of its own (removed after; the machine's not touched)."""
    result: dict = {"shape": list(shape)}
    cold = tempfile.mkdtemp(prefix="cute_gemm_first_call_")
    try:
        for mode in MODES:
            d = os.path.join(cold, "quick" if mode == "quick" else "wait")
            result[mode] = _child(shape, mode, d, timeout)
    finally:
        shutil.rmtree(cold, ignore_errors=True)
    return result
