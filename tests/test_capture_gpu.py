"""The caller's stream and CUDA graphs, as PyTorch and CuPy users meet them: a call without
`stream=` runs on the current stream of its operands' library (a producer on that stream is
waited for, a capture on it records the call), and every launch path of gemm() (plain,
stream-K, split with a reduction launch, relayout copies, the tensor-core kernels, 3xTF32)
is captured in each of torch's three capture modes, several calls to a graph, and gives the
float64 answer on every replay of fresh inputs. Skipped without a GPU (torch or CuPy parts
without those)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import cute_gemm
from cute_gemm.check import THRESHOLD, unit
from cute_gemm.driver import launch, pool

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

MODES = ("global", "thread_local", "relaxed")
PRECISIONS = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
              "fp16": torch.float16, "fp32_3xtf32": torch.float32}
# cute_3xtf32 by name: gemm()'s fp32_3xtf32 is SIMT fp32 below 2^34 flop, every shape here
PRECISIONS["cute_3xtf32"] = torch.float32
# (m, n, k): what each exercises on the H200's fp32 table (the 16-bit and tf32 kernels take
# their own launches of the same shapes: TMA on aligned rows, copies on unaligned ones, the
# walk cut along K on long K)
SHAPES = {
    "plain": (2048, 2048, 1024),          # cute_pipelined
    "stream-K": (128, 128, 1024),         # cute_pipelined_32x64x16_sk, its own stream-K plan
    "split+reduce": (256, 256, 256),      # a split entry and the reduction launch
    "issue": (384, 512, 1024),            # the stream-K pick that failed in a global capture
    "relayout": (333, 517, 1001),         # 16-bit rows not 16-byte aligned: TMA needs copies
    "small": (16, 16, 16),
    "long-K": (128, 256, 16384),
}
SEED = int.from_bytes(os.urandom(4), "little")


def _judge(what, got, ref, gauge, precision, out_dtype):
    """Gauge ratio |got - ref| / (u |alpha||A||B| + |beta||C|) <= THRESHOLD everywhere (on the
    GPU, in float64), NaN only where the reference has one."""
    od = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}[out_dtype]
    u = unit("fp32_3xtf32" if precision == "cute_3xtf32" else precision, od)
    g = gauge + (2.0 ** -24 / u if od == "float16" else 0.0)
    got = got.double()
    ratio = (got - ref).abs() / (u * g)
    ratio = torch.where(torch.isnan(ref), torch.zeros_like(ratio), ratio)
    worst = float(torch.nan_to_num(ratio, nan=float("inf")).max())
    assert worst <= THRESHOLD, f"{what}: gauge ratio {worst:.3g} (seed {SEED})"


def _gemm(case, *args, **kw):
    """gemm() in the precision `case` names, or cute_3xtf32 by name in fp32_3xtf32."""
    if case == "cute_3xtf32":
        return cute_gemm.run(case, *args, precision="fp32_3xtf32", **kw)
    return cute_gemm.gemm(*args, precision=case, **kw)


def _fresh(*tensors):
    for t in tensors:
        t.copy_(torch.randn(t.shape, device=t.device, dtype=torch.float32).to(t.dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("path", list(SHAPES))
def test_several_calls_captured_replay_fresh_inputs(mode, precision, path):
    """Four calls in one graph — alpha·AB + beta·C into out, AB into a 16-bit (or float32)
    out, AB into a result allocated inside the capture, and AB from operands stored
    transposed — captured without warm-up in `mode` with no stream= (the capture's stream
    is torch's current one), then ten replays, each on new values of A, B and C written in
    place and NaN-poisoned outputs, each judged against float64."""
    torch.manual_seed(SEED)
    m, n, k = SHAPES[path]
    dt = PRECISIONS[precision]
    a = torch.empty(m, k, device="cuda", dtype=dt)
    b = torch.empty(k, n, device="cuda", dtype=dt)
    c = torch.empty(m, n, device="cuda")
    at = torch.empty(k, m, device="cuda", dtype=dt)     # A stored transposed: at.T is A
    bt = torch.empty(n, k, device="cuda", dtype=dt)
    o1 = torch.empty(m, n, device="cuda")
    o2 = torch.empty(m, n, device="cuda", dtype=dt)
    o4 = torch.empty(m, n, device="cuda")
    _fresh(a, b, c)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode=mode):
        _gemm(precision, a, b, c, alpha=0.75, beta=-0.5, out=o1)
        _gemm(precision, a, b, out=o2)
        o3 = _gemm(precision, a, b)
        _gemm(precision, at.T, bt.T, out=o4)
    for replay in range(10):
        _fresh(a, b, c)
        at.copy_(a.T)
        bt.copy_(b.T)
        for o in (o1, o2, o3, o4):
            o.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        A, B, C = a.double(), b.double(), c.double()
        ab, gab = A @ B, A.abs() @ B.abs()
        what = f"{path} {precision} {mode} replay {replay}"
        _judge(what + " alpha AB + beta C", o1, 0.75 * ab - 0.5 * C, 0.75 * gab + 0.5 * C.abs(),
               precision, torch.float32)
        _judge(what + " AB into out", o2, ab, gab, precision, dt)
        _judge(what + " AB, result allocated in the capture", o3, ab, gab, precision,
               torch.float32)
        _judge(what + " AB from transposed storage", o4, ab, gab, precision, torch.float32)
    del g


@pytest.mark.parametrize("key,shape,precision", [
    ("cute_mma_sm80_64x64/splitk4", (38, 42, 926), "bf16"),
    ("cute_mma_sm80_64x64/splitk8", (64, 64, 4096), "bf16"),
    ("cute_pipelined/splitk4", (500, 600, 700), "fp32")])
def test_a_split_pick_captured_replays_the_calls_bits(key, shape, precision):
    """A split pick captured in a CUDA graph (on sm_90 its shares meet in clusters, with no
    workspace; before it, through one the graph owns) replays the bits of the same call
    made eagerly, on fresh inputs each replay."""
    from cute_gemm import api
    from cute_gemm.select.choice import Choice
    torch.manual_seed(SEED)
    m, n, k = shape
    dt = PRECISIONS[precision]
    a, b = torch.empty(m, k, device="cuda", dtype=dt), torch.empty(k, n, device="cuda", dtype=dt)
    got, want = (torch.empty(m, n, device="cuda", dtype=dt) for _ in range(2))
    choice = Choice.of_key(key, source="test")
    _fresh(a, b)
    api.run_choice(choice, a, b, out=want, precision=precision)     # resolved before the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        api.run_choice(choice, a, b, out=got, precision=precision)
    for replay in range(3):
        _fresh(a, b)
        got.fill_(float("nan"))
        g.replay()
        api.run_choice(choice, a, b, out=want, precision=precision)
        torch.cuda.synchronize()
        assert torch.equal(got.view(torch.int16 if dt != torch.float32 else torch.int32),
                           want.view(torch.int16 if dt != torch.float32 else torch.int32)), \
            f"{key} {shape} replay {replay} (seed {SEED})"
        A, B = a.double(), b.double()
        _judge(f"{key} replay {replay}", got, A @ B, A.abs() @ B.abs(), precision, dt)
    del g


def test_first_calls_inside_a_global_capture_in_a_fresh_process():
    """No warm-up at all: a fresh process whose first calls (modules loaded, the scratch
    pool created, launches resolved) come inside a global-mode capture; the replays are
    right. The kernels come from the disk cache the tests above filled."""
    code = f"""
import torch, cute_gemm
torch.manual_seed({SEED})
ok = True
for dt, prec, (m, n, k) in ((torch.float32, "fp32", (384, 512, 1024)),
                            (torch.float32, "fp32", (256, 256, 256)),
                            (torch.bfloat16, "bf16", (128, 256, 16384))):
    a = torch.randn(m, k, device="cuda").to(dt); b = torch.randn(k, n, device="cuda").to(dt)
    o = torch.empty(m, n, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cute_gemm.gemm(a, b, out=o, precision=prec)
    for _ in range(3):
        a.copy_(torch.randn(m, k, device="cuda").to(dt))
        o.fill_(float("nan"))
        g.replay(); torch.cuda.synchronize()
        ref = a.double() @ b.double()
        err = ((o.double() - ref).abs() / (a.double().abs() @ b.double().abs())).max().item()
        ok &= err < 1e-2
print("OK" if ok else "WRONG")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "CUTE_GEMM_FIRST_CALL": "wait"})
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_large_relayout_copies_inside_and_beside_a_global_capture():
    """Scratch copies over a quarter of POOL_KEEP_BYTES (where the pool reads its high-water
    mark, a call a capture refuses): a batched bf16 call on rows not 16-byte aligned, run by a
    TMA kernel, captured in global mode and replayed on fresh values; and the same call made
    uncaptured on another thread's stream while this thread's global capture is open, which
    must neither fail nor end that capture."""
    if launch.device_info().arch_int < 90:
        pytest.skip("the TMA kernels need sm_90")
    name = "cute_wgmma_ws_128x64"
    bsz, m, n, k = 80, 512, 520, 1001
    assert bsz * m * k * 2 > pool.POOL_KEEP_BYTES // 4          # A's copy alone
    torch.manual_seed(SEED)
    a = torch.randn(bsz, m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(bsz, k, n, device="cuda").to(torch.bfloat16)
    o, o_side = (torch.empty(bsz, m, n, device="cuda") for _ in range(2))
    cute_gemm.run(name, a, b, out=o)                # compiled and loaded before the capture
    torch.cuda.synchronize()
    side, errors = torch.cuda.Stream(), []

    def beside():
        try:
            with torch.cuda.stream(side):   # (no synchronize: the caller's own would end the capture)
                cute_gemm.run(name, a, b, out=o_side)
        except Exception as e:      # noqa: BLE001  (reported below)
            errors.append(e)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g, capture_error_mode="global"):
            cute_gemm.run(name, a, b, out=o)
            t = threading.Thread(target=beside)
            t.start()
            t.join()
    finally:
        assert not errors, errors       # (the thread's error first, where it ended the capture)
    side.synchronize()
    A, B = a.double(), b.double()
    _judge("beside the capture", o_side, A @ B, A.abs() @ B.abs(), "bf16", torch.float32)
    for replay in range(3):
        _fresh(a)
        o.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        A = a.double()
        _judge(f"captured, replay {replay}", o, A @ B, A.abs() @ B.abs(), "bf16", torch.float32)


# ---- the caller's stream ---------------------------------------------------------------------
@pytest.mark.parametrize("with_out", [True, False])
def test_torch_current_stream_is_the_calls_stream(with_out):
    """A producer on a side stream (a sleep, then new values written into A) followed by a
    call without stream= inside `with torch.cuda.stream(side)`: the call sees the new values.
    Twice: the second call goes through the signature hot path."""
    m, n, k = 384, 512, 1024
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    out = torch.empty(m, n, device="cuda")
    side = torch.cuda.Stream()
    for _ in range(2):
        new = torch.randn(m, k, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)          # ~0.1 s: the default stream would win
            a.copy_(new)
            got = cute_gemm.gemm(a, b, out=out) if with_out else cute_gemm.gemm(a, b)
        side.synchronize()
        ref = new.double() @ b.double()
        _judge("side stream", got, ref, new.double().abs() @ b.double().abs(), "fp32",
               torch.float32)


def test_cupy_current_stream_is_the_calls_stream():
    cp = pytest.importorskip("cupy")
    spin = cp.RawKernel(r"""extern "C" __global__ void spin(long long c) {
        long long t = clock64(); while (clock64() - t < c) {} }""", "spin")
    m, n, k = 384, 512, 1024
    a = cp.random.standard_normal((m, k), dtype=cp.float32)
    b = cp.random.standard_normal((k, n), dtype=cp.float32)
    out = cp.empty((m, n), dtype=cp.float32)
    side = cp.cuda.Stream(non_blocking=True)
    for _ in range(2):
        new = cp.random.standard_normal((m, k), dtype=cp.float32)
        cp.cuda.runtime.deviceSynchronize()
        with side:
            spin((1,), (1,), (np.int64(200_000_000),))
            a[...] = new
            cute_gemm.gemm(a, b, out=out)
        side.synchronize()
        ref = cp.asnumpy(new).astype(np.float64) @ cp.asnumpy(b).astype(np.float64)
        gauge = np.abs(cp.asnumpy(new)).astype(np.float64) @ np.abs(cp.asnumpy(b)).astype(np.float64)
        ratio = np.abs(cp.asnumpy(out) - ref) / (unit("fp32") * gauge)
        assert ratio.max() <= THRESHOLD, ratio.max()


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp32_3xtf32", "cute_3xtf32"])
def test_cupy_stream_capture_several_calls(precision):
    """CuPy's stream capture (cupy.cuda.Stream.begin_capture) of two calls without stream=
    on the capturing stream, which is CuPy's current one; replays on fresh values."""
    cp = pytest.importorskip("cupy")
    dt = {"fp32": cp.float32, "bf16": None, "fp32_3xtf32": cp.float32,
          "cute_3xtf32": cp.float32}[precision]
    if dt is None:
        pytest.importorskip("ml_dtypes")
        import ml_dtypes
        dt = ml_dtypes.bfloat16
    m, n, k = 384, 512, 1024
    a = cp.random.standard_normal((m, k), dtype=cp.float32).astype(dt)
    b = cp.random.standard_normal((k, n), dtype=cp.float32).astype(dt)
    o1, o2 = cp.empty((m, n), dtype=cp.float32), cp.empty((m, n), dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        try:
            _gemm(precision, a, b, out=o1)
            _gemm(precision, a, b, o1, beta=1.0, out=o2)
        finally:
            g = s.end_capture()
    for _ in range(3):
        with s:     # fresh values on the replay's stream: on CuPy's default one they race it
            a[...] = cp.random.standard_normal((m, k), dtype=cp.float32).astype(dt)
            o1[...] = cp.nan
            o2[...] = cp.nan
        g.launch(s)
        s.synchronize()
        A, B = cp.asnumpy(a).astype(np.float64), cp.asnumpy(b).astype(np.float64)
        ref, gauge = A @ B, np.abs(A) @ np.abs(B)
        u = unit("fp32_3xtf32" if precision == "cute_3xtf32" else precision)
        assert (np.abs(cp.asnumpy(o1) - ref) / (u * gauge)).max() <= THRESHOLD
        assert (np.abs(cp.asnumpy(o2) - 2 * ref) / (u * 2 * gauge)).max() <= THRESHOLD
