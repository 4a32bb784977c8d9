"""run()'s signature hot path (hotpath.py) with a stub driver: which calls take it, what it
reads of each kind of array, and what still goes through validation — a changed signature,
an overlapping out, a CPU or grad-requiring tensor, a producer stream to wait for. GPU
(skipped without one): the hot path gives the same bits as the full path on PyTorch and CuPy
arrays: test_hotpath_gpu.py. The Launcher under racing threads: test_launcher.py."""
from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import cute_gemm
import stub_driver
from cute_gemm import api
from cute_gemm.plan import hotpath, resolve
from cute_gemm.driver.arrays import DeviceArray
from cute_gemm.base.errors import DTypeError, InputError, NotAnArrayError, ShapeError
from stub_driver import Dev, device_array, gemm_launches


def _count_validations(monkeypatch):
    seen = []
    real = api.validate
    monkeypatch.setattr(api, "validate", lambda *x: seen.append(1) or real(*x))
    return seen


# ---- a PyTorch stand-in: the attributes hotpath reads, and a CAI as PyTorch builds it --------
class _DType:
    def __init__(self, name, typestr):
        self.name, self.typestr = name, typestr


def _fake_torch(monkeypatch):
    """A module named torch whose Tensor has PyTorch's attributes and a version-2 CAI (no
    stream; strides None when contiguous; RuntimeError when it requires grad); counts CAI reads."""
    torch = types.ModuleType("torch")
    torch.float32, torch.float64 = _DType("float32", "<f4"), _DType("float64", "<f8")
    cai_reads = []

    class Tensor:
        def __init__(self, shape, ptr, strides=None, dtype=torch.float32, is_cuda=True,
                     requires_grad=False):
            self.shape, self._ptr, self.dtype = tuple(shape), ptr, dtype
            self._strides = strides or ((shape[1], 1) if len(shape) == 2 else (1,))
            self.is_cuda, self.requires_grad = is_cuda, requires_grad
            self.device = "cuda:0" if is_cuda else "cpu"

        def get_device(self):
            return 0 if self.is_cuda else -1

        def data_ptr(self):
            return self._ptr

        def stride(self):
            return self._strides

        def expand(self, shape):       # (strides 0: not dense)
            return Tensor(shape, self._ptr, (0, 0), self.dtype, self.is_cuda)

        def detach(self):
            return Tensor(self.shape, self._ptr, self._strides, self.dtype, self.is_cuda)

        @property
        def __cuda_array_interface__(self):
            if not self.is_cuda:
                raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor")
            if self.requires_grad:
                raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")
            cai_reads.append(self)
            e = 8 if self.dtype is torch.float64 else 4
            contiguous = self._strides == (self.shape[1], 1)
            return {"typestr": self.dtype.typestr, "shape": self.shape, "version": 2,
                    "strides": None if contiguous else tuple(e * s for s in self._strides),
                    "data": (self._ptr, False)}

    class Parameter(Tensor):
        pass

    addrs = iter(range(0x9000_0000, 0x10_0000_0000, 0x100_0000))

    def empty(shape, dtype, device):
        return Tensor(shape, next(addrs), dtype=dtype, is_cuda=device != "cpu")

    def empty_like(t):              # preserve_format: row-major where t is not dense
        dense = t._strides == (t.shape[1], 1)
        return Tensor(t.shape, next(addrs), t._strides if dense else None, t.dtype, t.is_cuda)

    Tensor.__module__ = Parameter.__module__ = "torch"    # (what run() tells libraries by)
    torch.Tensor, torch.empty, torch.empty_like = Tensor, empty, empty_like
    torch.nn = types.SimpleNamespace(Parameter=Parameter)
    # torch's current stream (a handle) and grad mode, as the tests set them
    torch.stream, torch.grad = [0], [True]
    torch.cuda = types.SimpleNamespace(
        current_stream=lambda d: types.SimpleNamespace(cuda_stream=torch.stream[0]))
    torch.is_grad_enabled = lambda: torch.grad[0]
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch, cai_reads


def test_torch_tensors_take_the_path_by_their_attributes(monkeypatch):
    """A repeat call on CUDA tensors reads data_ptr/shape/stride/dtype, never the CAI PyTorch
    builds in Python, and launches what the first call resolved with its own pointers."""
    events = stub_driver.install(monkeypatch)
    torch, cai_reads = _fake_torch(monkeypatch)
    T = torch.Tensor
    a, b, out = T((40, 16), 0x10000), T((16, 24), 0x20000), T((40, 24), 0x30000)
    assert api.run("cute_smem", a, b, out=out) is out
    assert len(resolve.CACHE.hot) == 1 and len(cai_reads) == 3
    validated = _count_validations(monkeypatch)
    a2, out2 = T((40, 16), 0x50000), T((40, 24), 0x60000)        # same alignment class
    for _ in range(3):
        api.run("cute_smem", a2, b, out=out2, alpha=2)
    assert not validated and len(cai_reads) == 3
    first, *rest = gemm_launches(events)
    assert [(g.A, g.B, g.C, g.alpha) for g in rest] == [(0x50000, 0x20000, 0x60000, 2.0)] * 3
    assert (first.A, first.C, first.alpha) == (0x10000, 0x30000, 1.0)
    # a grad-requiring a or b outside grad mode is read as its data: the same launch
    torch.grad[0] = False
    api.run("cute_smem", T((40, 16), 0x50000, requires_grad=True), b, out=out2)
    assert len(gemm_launches(events)) == 5 and not validated


def test_a_call_autograd_records_goes_to_the_autograd_route_and_refuses_out(monkeypatch):
    """In grad mode an operand that requires grad sends the call to the route cute_gemm.torch
    sets (its custom op, whose result carries the graph), never to a remembered launch; with
    out= or stream= it is an InputError before any launch; outside grad mode it launches."""
    events = stub_driver.install(monkeypatch)
    torch, _ = _fake_torch(monkeypatch)
    routed = []
    monkeypatch.setattr(api, "_autograd", [lambda *call: routed.append(call) or "graph"])
    T = torch.Tensor
    a, b, out = T((40, 16), 0x10000), T((16, 24), 0x20000), T((40, 24), 0x30000)
    for _ in range(2):
        api.run("cute_smem", a, b, out=out)                     # remembered
    ga = T((40, 16), 0x10000, requires_grad=True)
    n = len(gemm_launches(events))
    assert api.run("auto", ga, b) == "graph" and api.run("cute_smem", ga, b, alpha=2.0) == "graph"
    assert [(r[0], r[4]) for r in routed] == [("auto", 1.0), ("cute_smem", 2.0)]
    with pytest.raises(InputError, match="out= does not support automatic differentiation"):
        api.run("cute_smem", ga, b, out=out)
    with pytest.raises(InputError, match="stream="):
        api.run("cute_smem", a, T((16, 24), 0x20000, requires_grad=True), stream=7)
    assert len(gemm_launches(events)) == n and len(routed) == 2
    torch.grad[0] = False
    api.run("cute_smem", ga, b, out=out)
    assert len(gemm_launches(events)) == n + 1


def test_a_call_without_stream_runs_on_torchs_current_stream(monkeypatch):
    """stream=None is torch's current stream for torch tensors, read on every call (the hot
    path's too); an explicit stream= wins."""
    events = stub_driver.install(monkeypatch)
    torch, _ = _fake_torch(monkeypatch)
    T = torch.Tensor
    a, b, out = T((40, 16), 0x10000), T((16, 24), 0x20000), T((40, 24), 0x30000)
    seen = []
    for s in (0x5000, 0x5000, 0x6000, 0):
        torch.stream[0] = s
        api.run("cute_smem", a, b, out=out)
        api.run("cute_smem", a, b)
        seen += [e[3] for e in stub_driver.launches(events, "gemm")[-2:]]
    api.run("cute_smem", a, b, out=out, stream=0x7000)
    assert seen == [0x5000] * 4 + [0x6000] * 2 + [0] * 2
    assert stub_driver.launches(events, "gemm")[-1][3] == 0x7000


def test_torch_tensors_that_are_not_what_the_path_assumes_are_validated(monkeypatch):
    """After a remembered signature, tensors with the same shapes but another device, dtype,
    grad-requiring out, strides or alignment never reach the remembered launch."""
    events = stub_driver.install(monkeypatch)
    torch, _ = _fake_torch(monkeypatch)
    T = torch.Tensor
    a, b, out = T((40, 16), 0x10000), T((16, 24), 0x20000), T((40, 24), 0x30000)
    for _ in range(2):
        api.run("cute_smem", a, b, out=out)
    n = len(gemm_launches(events))
    with pytest.raises(NotAnArrayError):                        # a CPU tensor (no CAI, no DLPack)
        api.run("cute_smem", T((40, 16), 0x10000, is_cuda=False), b, out=out)
    with pytest.raises(DTypeError):
        api.run("cute_smem", T((40, 16), 0x10000, dtype=torch.float64), b, out=out)
    with pytest.raises(InputError, match="requires grad"):
        api.run("cute_smem", a, b, out=T((40, 24), 0x30000, requires_grad=True))
    assert len(gemm_launches(events)) == n and len(resolve.CACHE.hot) == 1
    validated = _count_validations(monkeypatch)
    api.run("cute_smem", a, b, out=T((40, 24), 0x30000, strides=(32, 1)))   # another ld
    api.run("cute_smem", T((40, 16), 0x10004), b, out=out)                   # another class
    g = gemm_launches(events)[-2:]
    assert len(validated) == 2 and (g[0].sCm, g[1].A) == (32, 0x10004)


def test_a_tensor_subclass_is_read_through_its_cai_and_a_parameter_by_its_attributes(monkeypatch):
    stub_driver.install(monkeypatch)
    torch, cai_reads = _fake_torch(monkeypatch)

    class Sub(torch.Tensor):      # subclasses may override what their CAI reports
        pass
    a, b, out = Sub((40, 16), 0x10000), Sub((16, 24), 0x20000), Sub((40, 24), 0x30000)
    for _ in range(3):
        api.run("cute_smem", a, b, out=out)
    assert len(cai_reads) == 3 + 3 * 3          # the full path's reads, then the signature's
    P = torch.nn.Parameter
    pa, pb = P((40, 16), 0x10000, requires_grad=True), P((16, 24), 0x20000, requires_grad=True)
    validated = _count_validations(monkeypatch)
    torch.grad[0] = False            # (inference: parameters that require grad, no graph)
    for _ in range(3):
        api.run("cute_smem", pa, pb, out=torch.Tensor((40, 24), 0x30000))
    assert len(validated) == 1


def test_a_cai_that_names_a_stream_is_never_remembered_for_torch_tensors(monkeypatch):
    """A PyTorch whose CAI reported its current stream (v3) would make the attribute reader
    blind to a producer stream: such a call is not remembered, with out or without, so each
    one waits."""
    events = stub_driver.install(monkeypatch)
    torch, _ = _fake_torch(monkeypatch)
    T = torch.Tensor
    cai = T.__cuda_array_interface__.fget
    monkeypatch.setattr(T, "__cuda_array_interface__", property(lambda t: dict(cai(t), stream=0xAAAA)))
    a, b, out = T((40, 16), 0x10000), T((16, 24), 0x20000), T((40, 24), 0x30000)
    for _ in range(3):
        api.run("cute_smem", a, b, out=out)
    assert not resolve.CACHE.hot
    assert len([e for e in events if e[0] == "wait"]) == 3      # (one per producer stream)
    for _ in range(3):                                          # nor one without out
        api.run("cute_smem", a, b)
    assert not resolve.CACHE.results and len([e for e in events if e[0] == "wait"]) == 6


# ---- CuPy stand-in: its current stream is what its CAI reports ---------------------------------
def _fake_cupy(monkeypatch):
    cupy = types.ModuleType("cupy")
    current = types.SimpleNamespace(ptr=0)
    cai_reads = []

    class ndarray:
        def __init__(self, shape, ptr, itemsize=4):
            self.shape, self.data = tuple(shape), types.SimpleNamespace(ptr=ptr)
            self.strides, self.dtype = (itemsize * shape[1], itemsize), np.dtype(f"<f{itemsize}")

        @property
        def __cuda_array_interface__(self):
            cai_reads.append(self)
            return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.data.ptr, False),
                    "strides": None, "version": 3, "stream": current.ptr or 1}

    cupy.ndarray = ndarray
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda: current)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return cupy, current, cai_reads


def test_cupy_arrays_on_the_calls_stream_take_the_path_and_others_wait(monkeypatch):
    events = stub_driver.install(monkeypatch)
    cupy, current, cai_reads = _fake_cupy(monkeypatch)
    A = cupy.ndarray
    a, b, out = A((40, 16), 0x10000), A((16, 24), 0x20000), A((40, 24), 0x30000)
    for _ in range(3):          # CuPy's default stream is the legacy stream: so is stream=None
        api.run("cute_smem", a, b, out=out)
    assert len(cai_reads) == 3 and len(resolve.CACHE.hot) == 1
    assert not [e for e in events if e[0] in ("record", "wait")]
    current.ptr = 0xAAAA        # CuPy now works on another stream: its arrays' producer
    for _ in range(2):
        api.run("cute_smem", a, b, out=out)
    waits = [e for e in events if e[0] == "wait"]
    assert len(waits) == 2 and {w[1] for w in waits} == {0}       # waited for, on our stream
    assert len(resolve.CACHE.hot) == 1
    for _ in range(2):          # the call on CuPy's stream: remembered, no waits
        api.run("cute_smem", a, b, out=out, stream=0xAAAA)
    assert len(resolve.CACHE.hot) == 2 and len([e for e in events if e[0] == "wait"]) == 2
    assert [e[3] for e in stub_driver.launches(events)][-2:] == [0xAAAA, 0xAAAA]


def test_operands_of_different_kinds_are_read_one_by_one(monkeypatch):
    """A CuPy a, a PyTorch b and a CAI out: each read by its own reader; CuPy's current
    stream still decides (a change is waited for, then remembered on its own)."""
    events = stub_driver.install(monkeypatch)
    torch, _ = _fake_torch(monkeypatch)
    cupy, current, cai_reads = _fake_cupy(monkeypatch)
    a, b, out = cupy.ndarray((40, 16), 0x10000), torch.Tensor((16, 24), 0x20000), Dev((40, 24), 0x30000)
    for _ in range(3):
        api.run("cute_smem", a, b, out=out)
    assert len(resolve.CACHE.hot) == 1 and len(cai_reads) == 1
    assert not [e for e in events if e[0] == "wait"]
    current.ptr = 0xAAAA
    api.run("cute_smem", a, b, out=out)
    assert len([e for e in events if e[0] == "wait"]) == 1 and len(resolve.CACHE.hot) == 1
    validated = _count_validations(monkeypatch)
    with pytest.raises(NotAnArrayError):           # b on the CPU: never the remembered launch
        api.run("cute_smem", cupy.ndarray((40, 16), 0x10000), torch.Tensor((16, 24), 0x20000, is_cuda=False),
                out=out)
    assert len(validated) == 1 and len(stub_driver.launches(events)) == 4


# ---- DeviceArray (bfloat16 included: it has no CAI) ------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_device_arrays_take_the_path_and_overlap_is_still_tested(monkeypatch, dtype):
    events = stub_driver.install(monkeypatch)
    name = "naive" if dtype == "float32" else "cute_mma_sm80"
    a, b, out = device_array((64, 64), 0x100000, dtype), device_array((64, 64), 0x200000, dtype), device_array((64, 64), 0x300000)
    api.run(name, a, b, out=out)
    validated = _count_validations(monkeypatch)
    api.run(name, a, b, out=out)
    assert not validated and len(resolve.CACHE.hot) == 1
    assert not [e for e in events if e[0] == "alloc"]
    # out moved onto a's memory (a float32 view of it): computed apart, then copied
    api.run(name, a, b, out=device_array((64, 64), 0x100000))
    assert len(validated) == 1 and [e for e in events if e[0] == "alloc"]
    with pytest.raises(InputError, match="null"):                # a closed array as out
        api.run(name, a, b, out=device_array((64, 64), 0))
    with pytest.raises(ShapeError):                              # another shape: validated
        api.run(name, a, device_array((64, 63), 0x200000, dtype), out=out)


def test_a_call_on_copies_takes_the_path_with_fresh_temporaries_each_time(monkeypatch):
    """A launch whose operand is copied first (A's rows 13 halves apart: not 16-byte
    aligned for the mma entry) is remembered like any other: the repeat call skips
    validation, copies A (with its pad) into a new stream-ordered temporary, launches on it
    with B and out as they are, and frees it; an overlapping out still goes the full path."""
    events = stub_driver.install(monkeypatch)
    a = device_array((37, 13), 0x100000, "bfloat16", strides=(13, 1))
    b, out = device_array((13, 24), 0x200000, "bfloat16"), device_array((37, 24), 0x300000)
    api.run("cute_mma_sm80", a, b, out=out)
    validated = _count_validations(monkeypatch)
    temps = []
    for pa in (0x100000, 0x180000):
        del events[:]
        a = device_array((37, 13), pa, "bfloat16", strides=(13, 1))
        api.run("cute_mma_sm80", a, b, out=out, alpha=0.5)
        (alloc,) = [e for e in events if e[0] == "alloc"]
        (cp,) = [stub_driver.scale_args(e[4]) for e in stub_driver.launches(events, "scale2d")]
        (g,) = gemm_launches(events)
        assert (cp.src, cp.dst, cp.s) == (pa, alloc[1], 1.0) and cp.ds0 % 8 == 0
        assert (g.A, g.B, g.C, g.alpha) == (alloc[1], 0x200000, 0x300000, 0.5)
        assert [e[1] for e in events if e[0] == "free"] == [alloc[1]]
        temps.append(alloc[1])
    assert not validated and len(resolve.CACHE.hot) == 1 and temps[0] != temps[1]
    api.run("cute_mma_sm80", a, b, out=device_array((37, 24), 0x180000 + 64))  # out over a: apart
    assert len(validated) == 1


def test_an_update_in_place_takes_the_path_with_its_beta(monkeypatch):
    """c given as out itself (C = alpha A B + beta C in place) has the signature of the call
    without c: the repeat call skips validation and launches with its alpha and beta, C being
    out; without c beta is 0 there too; a c that is another object (even a view of the same
    memory) goes the full path."""
    events = stub_driver.install(monkeypatch)
    a, b, out = device_array((37, 29), 0x10000), device_array((29, 45), 0x20000), device_array((37, 45), 0x30000)
    api.run("cute_smem", a, b, c=out, out=out, beta=2.0)
    validated = _count_validations(monkeypatch)
    api.run("cute_smem", a, b, c=out, out=out, alpha=3.0, beta=-0.5)
    api.run("cute_smem", a, b, out=out)
    api.run("cute_smem", a, b, out=out, beta=2.0)                # beta without c: as beta = 0
    api.run("cute_smem", a, b, c=out, out=out, beta=0)
    assert not validated
    got = [(g.alpha, g.beta, g.C) for g in gemm_launches(events)[-4:]]
    assert got == [(3.0, -0.5, 0x30000), (1.0, 0.0, 0x30000), (1.0, 0.0, 0x30000),
                   (1.0, 0.0, 0x30000)]
    api.run("cute_smem", a, b, c=device_array((37, 45), 0x30000), out=out, beta=2.0)
    assert len(validated) == 1 and gemm_launches(events)[-1].beta == 2.0
    with pytest.raises(InputError):                              # beta's type is still checked
        api.run("cute_smem", a, b, c=out, out=out, beta="2")


def test_a_c_beside_out_takes_the_path_copied_into_out_first(monkeypatch):
    """c another array than out (D = alpha A B + beta C, C kept): a repeat call skips
    validation, copies its own C into its own out, then launches in place with its beta; with
    beta = 0 C is not read (no copy); C's strides are in the signature (others: validated); a C that overlaps out, or a null one, goes the full path."""
    events = stub_driver.install(monkeypatch)
    a, b = device_array((37, 29), 0x10000), device_array((29, 45), 0x20000)
    c, out = device_array((37, 45), 0x40000), device_array((37, 45), 0x30000)
    api.run("cute_smem", a, b, c=c, out=out, beta=2.0)
    validated = _count_validations(monkeypatch)
    for pc, po, beta in ((0x50000, 0x60000, -0.5), (0x40000, 0x30000, 0.0)):
        del events[:]
        api.run("cute_smem", a, b, c=device_array((37, 45), pc), out=device_array((37, 45), po),
                alpha=3.0, beta=beta)
        copies = [stub_driver.scale_args(e[4]) for e in stub_driver.launches(events, "scale2d")]
        assert [(x.src, x.dst, x.s, x.M, x.N) for x in copies] == (
            [(pc, po, 1.0, 37, 45)] if beta else [])
        (g,) = gemm_launches(events)
        assert (g.A, g.B, g.C, g.alpha, g.beta) == (0x10000, 0x20000, po, 3.0, beta)
        assert [e[0] for e in events if e[0] == "launch"][:len(copies)] == ["launch"] * len(copies)
    assert not validated
    api.run("cute_smem", a, b, c=device_array((37, 45), 0x30000 + 4 * 45), out=out, beta=1.0)
    assert len(validated) == 1                              # C over out's rows: the full path
    with pytest.raises(InputError, match="null"):
        api.run("cute_smem", a, b, c=device_array((37, 45), 0), out=out, beta=1.0)
    api.run("cute_smem", a, b, c=device_array((37, 45), 0x40000, strides=(1, 37)), out=out,
            beta=1.0)
    assert len(validated) == 3                              # other strides: another signature


def test_a_call_without_out_allocates_its_result_as_the_full_path_did(monkeypatch):
    """Without out, a repeat call allocates the result the full path allocated for these a
    and b (shape, device, type, library) and launches into it: from the second call on no
    validation, each call a new tensor that the launch writes; another a or b, or another
    precision, is validated again. A DeviceArray result (cuMemAlloc, which a graph capture
    refuses) and host arrays are never remembered."""
    events = stub_driver.install(monkeypatch)
    torch, _ = _fake_torch(monkeypatch)
    a, b = torch.Tensor((37, 29), 0x10000), torch.Tensor((29, 45), 0x20000)
    first = api.run("cute_smem", a, b)
    validated = _count_validations(monkeypatch)
    results = [api.run("cute_smem", a, b, alpha=0.5) for _ in range(3)]
    assert not validated and len(resolve.CACHE.results) == 1
    assert all(type(r) is torch.Tensor and (r.shape, r.stride(), r.dtype)
               == ((37, 45), (45, 1), torch.float32) for r in [first] + results)
    assert len({r.data_ptr() for r in results}) == 3
    gs = gemm_launches(events)[-3:]
    assert [(g.C, g.alpha) for g in gs] == [(r.data_ptr(), 0.5) for r in results]
    api.run("cute_smem", a, torch.Tensor((29, 46), 0x20000))
    api.run("cute_smem", a, b, precision="fp32")
    assert len(validated) == 2
    resolve.CACHE.results.clear()
    da, db = device_array((37, 29), 0x10000), device_array((29, 45), 0x20000)
    for _ in range(3):
        assert type(api.run("cute_smem", da, db)) is DeviceArray
    assert len(validated) == 5 and not resolve.CACHE.results
    x = np.random.default_rng().standard_normal((4, 4), dtype=np.float32)
    assert hotpath.launch_new("naive", None, x, x, 1.0, None) == (None, None)


def test_a_call_with_c_and_without_out_copies_c_into_its_new_result(monkeypatch):
    """torch.addmm's call (c, no out): a repeat call allocates the result as the full path
    did, copies its own C into it, then launches in place with its beta; beta = 0 reads no
    C; another C (strides) is validated again."""
    events = stub_driver.install(monkeypatch)
    torch, _ = _fake_torch(monkeypatch)
    a, b = torch.Tensor((37, 29), 0x10000), torch.Tensor((29, 45), 0x20000)
    api.run("cute_smem", a, b, torch.Tensor((37, 45), 0x30000), beta=2.0)
    validated = _count_validations(monkeypatch)
    for pc, beta in ((0x40000, -0.5), (0x50000, 0.0)):
        del events[:]
        r = api.run("cute_smem", a, b, torch.Tensor((37, 45), pc), alpha=3.0, beta=beta)
        copies = [stub_driver.scale_args(e[4]) for e in stub_driver.launches(events, "scale2d")]
        assert [(x.src, x.dst, x.s) for x in copies] == ([(pc, r.data_ptr(), 1.0)] if beta else [])
        (g,) = gemm_launches(events)
        assert (g.C, g.alpha, g.beta) == (r.data_ptr(), 3.0, beta)
        assert (r.shape, r.dtype) == ((37, 45), torch.float32)
    assert not validated and len(resolve.CACHE.results) == 1
    api.run("cute_smem", a, b, torch.Tensor((37, 45), 0x30000, strides=(1, 37)), beta=1.0)
    assert len(validated) == 1


def test_a_call_without_out_allocates_by_its_own_arrays_library(monkeypatch):
    """The result of a call without out comes from a's library, as the full path's does,
    even where a's signature does not name it: a tensor subclass (read through its CAI)
    and another array with the same CAI are kept apart; a Parameter's result is a plain
    tensor."""
    stub_driver.install(monkeypatch)
    torch, _ = _fake_torch(monkeypatch)

    class Sub(torch.Tensor):
        pass
    Sub.__module__ = "torch"

    class Plain:                    # a CAI exactly as the fake tensor reports it
        def __init__(self, t):
            self.__cuda_array_interface__ = t.__cuda_array_interface__
    a, b = Sub((37, 29), 0x10000), Sub((29, 45), 0x20000)
    for _ in range(2):
        assert type(api.run("cute_smem", a, b)) is torch.Tensor
    for _ in range(2):
        assert type(api.run("cute_smem", Plain(a), Plain(b))) is DeviceArray
    P = torch.nn.Parameter
    pa, pb = P((37, 29), 0x10000, requires_grad=True), P((29, 45), 0x20000, requires_grad=True)
    validated = _count_validations(monkeypatch)
    torch.grad[0] = False
    got = [api.run("cute_smem", pa, pb) for _ in range(3)]
    assert len(validated) == 1 and all(type(r) is torch.Tensor and not r.requires_grad
                                       for r in got)


def test_changed_signature_validates_again_and_clear_caches_ends_the_path(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a, b, out = device_array((37, 29), 0x10000), device_array((29, 45), 0x20000), device_array((37, 45), 0x30000)
    api.run("cute_smem", a, b, out=out)
    validated = _count_validations(monkeypatch)
    api.run("cute_smem", a, b, out=out)
    api.run("cute_smem", a, b, out=out, precision="fp32")      # another precision asked for
    api.run("cute_smem", a.T.T, b, out=out, stream=7)           # another stream
    api.run("cute_smem", a, device_array((29, 45), 0x20000, strides=(64, 1)), out=out)
    api.run("cute_smem", a, b, out=out, alpha=0.5, beta=2.0)     # beta without c: as beta = 0
    assert len(validated) == 3
    g = gemm_launches(events)[-1]
    assert (g.alpha, g.beta) == (0.5, 0.0)
    with pytest.raises(InputError):                              # beta's type is still checked
        api.run("cute_smem", a, b, out=out, beta="2")
    cute_gemm.clear_caches()
    api.run("cute_smem", a, b, out=out)
    assert len(validated) == 5


def test_an_unhashable_or_raising_operand_goes_the_full_path(monkeypatch):
    stub_driver.install(monkeypatch)

    class Raises:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("no")
    with pytest.raises(NotAnArrayError):
        api.run("naive", Raises(), Dev((3, 4), 0x2000), out=Dev((4, 4), 0x3000))
    with pytest.raises(NotAnArrayError):
        api.run("naive", object(), Dev((3, 4), 0x2000), out=Dev((4, 4), 0x3000))
    a = Dev((4, 3), 0x1000)
    a.mask = [1]           # (Dev's CAI has no mask: add one, unhashable)
    cai = type(a).__cuda_array_interface__.fget
    monkeypatch.setattr(type(a), "__cuda_array_interface__", property(
        lambda x: dict(cai(x), mask=getattr(x, "mask", None))))
    with pytest.raises(InputError, match="mask"):
        api.run("naive", a, Dev((3, 4), 0x2000), out=Dev((4, 4), 0x3000))


def test_a_choices_repeat_call_takes_the_path_keyed_by_the_choice(monkeypatch):
    """run_choice (how `cute-gemm tune` times a candidate) remembers its launch under the
    choice: a repeat call is not validated and launches what the first did (a split pick's
    stream-K twin on tiles x S CTAs); another choice, or run() of the same kernel, on the same
    operands has a signature of its own."""
    from cute_gemm.driver import launch
    from cute_gemm.select.choice import Choice
    events = stub_driver.install(monkeypatch)
    monkeypatch.delenv("CUTE_GEMM_STREAM_K")
    monkeypatch.setenv("CUTE_GEMM_PDL", "0")
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    monkeypatch.setattr(launch, "occupancy", lambda f, threads, smem: 2)
    a, b, o = (device_array(s, p, "bfloat16") for s, p in
               (((64, 4096), 0x1000_0000), ((4096, 64), 0x2000_0000), ((64, 64), 0x3000_0000)))
    split = Choice("cute_mma_sm80_64x64", split_k=4)
    api.run_choice(split, a, b, out=o)
    first = stub_driver.launches(events, "gemm")[-1][1:3]
    assert first == ("cute_mma_sm80_bf16_bf16_ak_bn_sk", (4, 1, 1))
    validated = _count_validations(monkeypatch)
    for _ in range(3):
        api.run_choice(split, a, b, out=o)
        assert stub_driver.launches(events, "gemm")[-1][1:3] == first
    assert not validated
    api.run_choice(Choice("cute_mma_sm80_64x64"), a, b, out=o)
    assert len(validated) == 1
    assert stub_driver.launches(events, "gemm")[-1][1:3] == ("cute_mma_sm80_bf16_bf16_ak_bn", (1, 1, 1))
    api.run("cute_mma_sm80_64x64", a, b, out=o)
    assert len(validated) == 2


def test_the_path_of_a_call_stays_short(monkeypatch):
    """#57's count (scripts/call_path.py, the stub driver): a repeat call's hot path is 6
    stops in 4 files, none a climb back to a file already left; a new signature (validate,
    pick, resolve, launch) at most 41 stops and 7 climbs. A step added to either path shows
    here first."""
    spec = importlib.util.spec_from_file_location(
        "call_path", Path(__file__).resolve().parents[1] / "scripts" / "call_path.py")
    call_path = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(call_path)
    got = call_path.paths(monkeypatch, 1000, 1300, 700)
    stops, files, climbs, _ = call_path.count(got["repeat"])
    assert (stops, files, climbs) == (6, 4, 0), got["repeat"]
    stops, files, climbs, _ = call_path.count(got["new"])
    assert stops <= 41 and climbs <= 7, got["new"]
