"""One decision whether a launch computes C^T = B^T A^T (resolve.swapped, LaunchPlan.swap),
on the CPU: gemm()'s table pick of the transposed problem and a kernel's own rule
(Kernel.transposes, transpose_skinny) are its two inputs, and whatever reaches the kernel
has been turned exactly once where the plan says swap, never where it does not. The
launches are carried out on host memory behind a stub driver (tests/stub_driver.py), so a
turn applied twice, or half of one, shows as a wrong product, not only as wrong fields."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import cute_gemm
import stub_driver
from cute_gemm import api, driver, registry
from cute_gemm.driver import launch
from cute_gemm.plan import composed, resolve
from cute_gemm.select import autotable
from cute_gemm.select.autotable import Measured, Table
from stub_driver import Dev, gemm_args, split_args

H100 = stub_driver.H100
PLAIN = "cute_pipelined"                      # no rule of its own
SKINNY = "cute_pipelined_64x128x16_sk"        # transpose_skinny: C^T where N is skinny
TALL, WIDE = (2000, 40), (40, 2000)           # skinny N, skinny M
K = 96


pytestmark = pytest.mark.usefixtures("private_tables")   # tests/conftest.py


def test_the_kernels_are_what_these_tests_assume():
    assert not registry.get(PLAIN).transpose_skinny and registry.get(SKINNY).transpose_skinny
    assert registry.get(SKINNY).transposes(*TALL) and not registry.get(SKINNY).transposes(*WIDE)


# (kernel, (M, N), the table picked the transposed problem) -> the launch computes C^T
DECISIONS = {
    (PLAIN, TALL, False): False, (PLAIN, TALL, True): True,
    (PLAIN, WIDE, False): False, (PLAIN, WIDE, True): True,
    (SKINNY, TALL, False): True,     # the kernel's rule alone
    (SKINNY, TALL, True): True,      # the pick; its 40 x 2000 problem is not skinny in N
    (SKINNY, WIDE, False): False,
    (SKINNY, WIDE, True): False,     # the pick turns it to 2000 x 40, the kernel's rule back
    (SKINNY, (4096, 4096), False): False, (SKINNY, (4096, 4096), True): True,
}


def _id(case) -> str:
    name, (m, n), transposed = case
    return f"{name}-{m}x{n}-{'T' if transposed else 'N'}"


@pytest.mark.parametrize("case", list(DECISIONS), ids=_id)
def test_swapped_decides_from_the_pick_and_the_kernels_rule(case):
    name, (m, n), transposed = case
    assert resolve.swapped(registry.get(name), m, n, transposed) is DECISIONS[case]


# ---- the launches, carried out on host memory --------------------------------------------
class _HostBuffer:
    """DeviceBuffer stand-in: 256-byte aligned host memory whose address is the pointer."""

    def __init__(self, nbytes, ordinal=0):
        self._mem = np.zeros(int(nbytes) + 256, np.uint8)
        self.ptr = -self._mem.ctypes.data % 256 + self._mem.ctypes.data

    def close(self):
        pass


def _host_matrix(buf: _HostBuffer, shape) -> np.ndarray:
    return np.frombuffer((ctypes.c_float * (shape[0] * shape[1])).from_address(buf.ptr),
                         np.float32).reshape(shape)


def _strided(ptr: int, rows: int, cols: int, s0: int, s1: int) -> np.ndarray:
    """The float32 matrix at device pointer `ptr` (host memory here), strides in elements."""
    span = 1 + (rows - 1) * s0 + (cols - 1) * s1
    base = np.frombuffer((ctypes.c_float * span).from_address(ptr), np.float32)
    return np.lib.stride_tricks.as_strided(base, (rows, cols), (4 * s0, 4 * s1))


def _carry_out_launches(monkeypatch, events):
    """Each GEMM launch computes C = alpha A B + beta C from its own argument block, as the
    kernel would read it: M, N, K, pointers and strides."""
    drv = driver.bindings()
    record = drv.cuLaunchKernel

    def run(*args):
        r = record(*args)
        e = events[-1]
        assert not e[1].startswith("scale2d"), "no copies expected here"
        g = gemm_args(e[4])
        a = _strided(g.A, g.M, g.K, g.sAm, g.sAk).astype(np.float64)
        b = _strided(g.B, g.K, g.N, g.sBk, g.sBn).astype(np.float64)
        c = _strided(g.C, g.M, g.N, g.sCm, g.sCn)
        c[...] = g.alpha * (a @ b) + (g.beta * c if g.beta else 0.0)
        return r
    monkeypatch.setattr(drv, "cuLaunchKernel", run, raising=False)


def _install(monkeypatch):
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: H100)
    monkeypatch.setattr(launch, "DeviceBuffer", _HostBuffer)
    monkeypatch.setattr(driver, "current_ordinal", lambda: 0)
    monkeypatch.setattr(launch, "check_last", lambda *a: None)
    copy = lambda dst, src, nbytes, stream=0: ctypes.memmove(dst, src, nbytes)  # noqa: E731
    for fn in ("memcpy_htod", "memcpy_dtoh"):
        monkeypatch.setattr(launch, fn, copy)
    _carry_out_launches(monkeypatch, events)
    return events


def _pick(name: str, transposed: bool, m: int, n: int, precision: str = "fp32") -> None:
    """A tune table whose row of this problem has `name` (on the transposed problem where
    `transposed`) fastest."""
    key = name + (autotable.TRANSPOSED if transposed else "")
    rows = [Measured(m, n, K, "nn", True, precision, {PLAIN: 0.3, name: 0.2} | {key: 0.1})]
    if precision != "fp32":     # a contract: its fp32 answer slower here (auto._kept)
        rows.append(Measured(m, n, K, "nn", True, "fp32", {PLAIN: 1.0}))
    autotable.write(Table(H100.name, "sm_90", autotable.tune_version(), "", 132, {}, rows),
                    autotable.tuned_path(H100.name))
    c = cute_gemm.gemm_choice(m, n, K, precision=precision)
    assert (c.kernel, c.transposed, c.source) == (name, transposed, "table")


def _inputs(m, n):
    rng = np.random.default_rng(7)
    return (rng.integers(-4, 5, (m, K)).astype(np.float32),
            rng.integers(-4, 5, (K, n)).astype(np.float32))


def _launched_once_turned_or_not(events, swap, m, n, a_ptr, b_ptr):
    """Every GEMM launch saw the operands turned exactly once (swap) or not at all."""
    gemms = stub_driver.launches(events, "gemm")
    assert gemms
    for e in gemms:
        g = gemm_args(e[4])
        want = (n, m, b_ptr, a_ptr) if swap else (m, n, a_ptr, b_ptr)
        assert (g.M, g.N, g.A, g.B) == want
    (plan,) = resolve.resolved_launches()
    assert plan.swap is swap and plan.shape == (m, n, K)
    return gemms


@pytest.mark.parametrize("case", [c for c in DECISIONS if c[1] != (4096, 4096)], ids=_id)
def test_device_arrays_launch_the_plan_and_the_hot_path_launches_it_again(monkeypatch, case):
    events = _install(monkeypatch)
    name, (m, n), transposed = case
    _pick(name, transposed, m, n)
    a, b = _inputs(m, n)
    bufs = [_HostBuffer(4 * x.size) for x in (a, b)] + [_HostBuffer(4 * m * n)]
    _host_matrix(bufs[0], a.shape)[...] = a
    _host_matrix(bufs[1], b.shape)[...] = b
    c = _host_matrix(bufs[2], (m, n))
    da, db, dc = (Dev(x.shape, buf.ptr) for x, buf in zip((a, b, c), bufs))
    cute_gemm.gemm(da, db, out=dc)
    np.testing.assert_array_equal(c, a.astype(np.float64) @ b)
    c[...] = np.nan
    validated = []
    real = api.validate
    monkeypatch.setattr(api, "validate", lambda *x: validated.append(1) or real(*x))
    cute_gemm.gemm(da, db, out=dc, alpha=2.0)        # the hot path: the same Launcher
    assert not validated and any(sig[0] == "auto" for sig in resolve.CACHE.hot)
    np.testing.assert_array_equal(c, 2.0 * (a.astype(np.float64) @ b))
    first, second = _launched_once_turned_or_not(events, DECISIONS[case], m, n, da.ptr, db.ptr)
    assert first[:4] == second[:4]


@pytest.mark.parametrize("case", [(SKINNY, TALL, True), (SKINNY, WIDE, True), (PLAIN, WIDE, True)], ids=_id)
def test_numpy_operands_launch_the_same_plan(monkeypatch, case):
    """The host path uploads, then hands the pick to the same decision: one turn, or none."""
    events = _install(monkeypatch)
    name, (m, n), transposed = case
    _pick(name, transposed, m, n)
    a, b = _inputs(m, n)
    c = np.full((m, n), 5.0, np.float32)
    out = cute_gemm.gemm(a, b, c, beta=-1.0)
    np.testing.assert_array_equal(out, a.astype(np.float64) @ b - 5.0)
    (e,) = stub_driver.launches(events, "gemm")
    g = gemm_args(e[4])
    assert (g.M, g.N) == ((n, m) if DECISIONS[case] else (m, n)) and g.beta == -1.0
    (plan,) = resolve.resolved_launches()
    assert plan.swap is DECISIONS[case] and plan.shape == (m, n, K)


def test_a_composed_kernel_splits_a_and_b_as_they_are_and_its_gemm_takes_the_pick(monkeypatch):
    """cute_3xtf32 picked on the transposed problem: the pre-pass splits A (its A entry) and
    B (its B entry); the fp16 GEMM on A' and B' is the launch turned once, into W in the
    caller's orientation."""
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: H100)
    m, n = 64, 48
    _pick("cute_3xtf32", True, m, n, "fp32_3xtf32")
    a, b, out = Dev((m, K), 0x1000_0000), Dev((K, n), 0x2000_0000), Dev((m, n), 0x3000_0000)
    cute_gemm.gemm(a, b, out=out, precision="fp32_3xtf32")
    splits = stub_driver.launches(events, "split")
    assert [(e[1], split_args(e[4]).src) for e in splits] == [
        ("cute_3xtf32_split_b", b.ptr), ("cute_3xtf32_split_a", a.ptr)]
    (base,) = (e[1] for e in events if e[0] == "alloc")            # all scratch, carved
    (c,) = [x for x in resolve.CACHE.launches.values() if isinstance(x, composed.Composed)]
    a2, b2, w = (base + c.at[x] for x in ("a2", "b2", "w"))
    ((entry, g),) = [(e[1], gemm_args(e[4])) for e in stub_driver.launches(events, "gemm")]
    kp = registry.get("cute_3xtf32").gemm_of.k_prime(K)
    assert (g.M, g.N) == (n, m) and entry.startswith("cute_wgmma_ws_")
    assert (g.A, g.B, g.K, g.C) == (b2, a2, kp, w)
    (f,) = [stub_driver.pass_args(e) for e in stub_driver.launches(events, "finish")]
    assert (f.W, f.T, f.M, f.N) == (w, out.ptr, m, n)       # W in the caller's orientation
    (plan,) = resolve.resolved_launches()
    assert plan.swap and plan.shape == (m, n, kp)
