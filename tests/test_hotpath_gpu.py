"""run()'s signature hot path on a GPU (skipped without one): its calls give the full path's
bits on PyTorch, CuPy and DeviceArray operands, on relayout copies, in place and with a C
beside out. Which calls take it: test_hotpath.py."""
from __future__ import annotations

import numpy as np
import pytest

import cute_gemm
from cute_gemm import api
from cute_gemm.check import supported_kernels
from cute_gemm.driver import launch
from cute_gemm.driver.arrays import DeviceArray
from cute_gemm.plan import resolve


# ---- GPU: the hot path gives the bits of the full path ----------------------------------------------
def _hot_equals_full(name, make, to_numpy, sync, precision=None, unit=2.0 ** -24):
    """The signature hot path's calls (an update in place, a C beside out, calls without out
    with and without C) give the full path's bits, within the gauge of the precision's unit roundoff; returns the
    launches the full path resolved."""
    m, n, k = 37, 45, 29
    a, b = make((m, k)), make((k, n))
    outs = [make((m, n), nan=True) for _ in range(6)]
    cute_gemm.run(name, a, b, out=outs[0], precision=precision)   # (compiled, loaded, device counted)
    cute_gemm.clear_caches()
    cute_gemm.run(name, a, b, out=outs[0], precision=precision)   # the full path (resolves)
    plans = resolve.resolved_launches()
    cute_gemm.run(name, a, b, precision=precision)    # without out: its allocation remembered
    before = len(resolve.CACHE.hot), len(resolve.CACHE.results)
    real = api.validate
    seen = []
    api.validate = lambda *x: seen.append(1) or real(*x)
    try:
        cute_gemm.run(name, a, b, out=outs[1], precision=precision)   # the signature hot path
        cute_gemm.run(name, a, b, out=outs[2], alpha=-0.5, precision=precision)
        cute_gemm.run(name, a, b, out=outs[3], precision=precision)
        # in place: alpha * acc + beta * C with alpha = beta = 1 and C = acc is 2 acc exactly
        cute_gemm.run(name, a, b, c=outs[3], out=outs[3], beta=1.0, precision=precision)
        # C beside out: the full path, then the hot one (C copied into out, then in place)
        for o in outs[4:]:
            cute_gemm.run(name, a, b, c=outs[0], out=o, beta=1.0, precision=precision)
        fresh = cute_gemm.run(name, a, b, precision=precision)
    finally:
        api.validate = real
    # C and no out (torch.addmm's call): the full path, then the hot one
    added = [cute_gemm.run(name, a, b, outs[0], beta=1.0, precision=precision) for _ in range(2)]
    sync()
    # (a DeviceArray result is never remembered: cuMemAlloc, which a graph capture refuses)
    kept = type(a).__module__.split(".")[0] in ("cupy", "torch")
    assert before == (1, int(kept)) and len(seen) == 2 - kept
    r = [to_numpy(o) for o in outs + [fresh]]
    assert np.array_equal(r[0], r[1]) and np.array_equal(r[0], r[6]) and not np.isnan(r[0]).any()
    assert np.array_equal(-0.5 * r[0], r[2]) and np.array_equal(2 * r[0], r[3])
    assert np.array_equal(r[3], r[4]) and np.array_equal(r[3], r[5])
    assert all(np.array_equal(r[3], to_numpy(x)) for x in added)
    ref = to_numpy(a).astype(np.float64) @ to_numpy(b).astype(np.float64)
    gauge = np.abs(to_numpy(a)).astype(np.float64) @ np.abs(to_numpy(b)).astype(np.float64)
    assert (np.abs(r[0] - ref) <= 16 * k * unit * gauge).all()
    return plans


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["naive", "cute_pipelined"])
def test_gpu_hot_path_same_bits_as_full_path_torch(name):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    _hot_equals_full(name, lambda s, nan=False: torch.full(s, float("nan"), device="cuda") if nan
                     else torch.randn(s, device="cuda"),
                     lambda t: t.cpu().numpy(), torch.cuda.synchronize)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["naive", "cute_pipelined"])
def test_gpu_hot_path_same_bits_as_full_path_cupy_and_device_arrays(name):
    cp = pytest.importorskip("cupy")
    _hot_equals_full(name, lambda s, nan=False: cp.full(s, cp.nan, dtype=cp.float32) if nan
                     else cp.random.standard_normal(s, dtype=cp.float32),
                     cp.asnumpy, cp.cuda.runtime.deviceSynchronize)
    rng = np.random.default_rng()
    _hot_equals_full(name, lambda s, nan=False: DeviceArray.full(s, float("nan")) if nan
                     else DeviceArray.from_host(rng.standard_normal(s, dtype=np.float32)),
                     lambda d: d.to_host(), launch.synchronize)


@pytest.mark.gpu
def test_gpu_hot_path_on_relayout_copies_same_bits_as_full_path():
    """cute_wgmma_ws in tf32 at 37x45x29: rows of 29 and 45 floats are not 16-byte aligned
    for TMA, so the launch runs on copies (relayout.Relaid); its hot calls, each on fresh
    temporaries, give the full path's bits."""
    cp = pytest.importorskip("cupy")
    if "cute_wgmma_ws" not in [k.name for k in supported_kernels()]:
        pytest.skip(f"cute_wgmma_ws needs sm_90a; this GPU is {launch.device_info().arch}")
    plans = _hot_equals_full("cute_wgmma_ws", lambda s, nan=False: cp.full(s, cp.nan, dtype=cp.float32)
                             if nan else cp.random.standard_normal(s, dtype=cp.float32),
                             cp.asnumpy, cp.cuda.runtime.deviceSynchronize, "tf32", 2.0 ** -11)
    assert plans and all(p.copies for p in plans), plans        # a launch on copies
