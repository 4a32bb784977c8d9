"""Fused epilogues without a GPU: the spec and its C++, the kernels compiled with one, the
checks of a call's epilogue (before anything is allocated or launched), the launch it makes
on the stub driver (the kernel's fused compile, EpiArgs as the kernel reads them, the
transposed entry's, the epilogue of no products), and the float64 reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

import cute_gemm
import stub_driver
from cute_gemm import Epilogue, registry
from cute_gemm.base.errors import DTypeError, InputError, ShapeError, UnknownKernelError
from cute_gemm.build import compile as nvrtc
from cute_gemm.driver import kernel_args, launch
from cute_gemm.driver.kernel_args import EpiValues
from cute_gemm.driver.epilogue import prepare, reference, reference_scale
from cute_gemm.plan import resolve
from cute_gemm.plan.launcher import transposed_epilogue
from cute_gemm.select import auto
from cute_gemm.registry.epilogue import ACTIVATIONS, EPILOGUE_ONLY, EpilogueSpec
from stub_driver import Dev


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("spec", [
    EpilogueSpec(), EpilogueSpec(bias=True, activation="gelu_tanh", vector_dtype="bfloat16"),
    EpilogueSpec(scale=True, clamp=True), EpilogueSpec(True, True, "silu", True, "float16")])
def test_spec_tag_names_it_and_parses_back(spec):
    assert EpilogueSpec.parse(spec.tag) == spec
    cpp = spec.cpp()
    assert cpp.startswith("#define CG_EPILOGUE cg::Epilogue<")
    assert f"cg::Act::{spec.activation or 'none'}" in cpp


@pytest.mark.parametrize("tag", ["bias+gelu", "relu+silu+float32", "bias+float64", "scale+x+float32"])
def test_a_bad_tag_is_refused(tag):
    with pytest.raises(ValueError):
        EpilogueSpec.parse(tag)


def test_fused_kernels_compile_under_their_tagged_name():
    fused = [k for k in registry.kernels() if k.fused]
    assert {k.source for k in fused} >= {"cute/c3_pipelined.cu", "cute/c4_mma_sm80.cu",
                                         "handwritten/v9_warptile.cu", "cute/c8_tiny_k.cu"}
    assert registry.get(EPILOGUE_ONLY).fused
    k = registry.get("cute_mma_sm80:bias+relu+bfloat16")
    assert k is registry.get("cute_mma_sm80:bias+relu+bfloat16")      # one per name
    assert k.epilogue == EpilogueSpec(bias=True, activation="relu", vector_dtype="bfloat16")
    assert k.entries == registry.get("cute_mma_sm80").entries
    pre = nvrtc.prelude(k)
    assert "#define CG_EPILOGUE cg::Epilogue<true, false, cg::Act::relu, false, cute::bfloat16_t, false, false>" in pre
    assert "CG_EPILOGUE" not in nvrtc.prelude(registry.get("cute_mma_sm80"))
    with pytest.raises(UnknownKernelError, match="takes no epilogue"):
        registry.get("cute_multistage:bias+float32")
    with pytest.raises(UnknownKernelError, match="takes no epilogue"):
        registry.get("cute_tiny_k:bias+gelu+float32")
    # a promoted configuration's entries take EpiArgs (its source's), but no call's epilogue
    promoted = registry.get("cute_wgmma_ws_promote")
    assert promoted.fused and not promoted.takes_epilogue
    with pytest.raises(UnknownKernelError, match="takes no epilogue"):
        registry.get("cute_wgmma_ws_promote:bias+float32")


def test_every_fused_source_declares_the_parameter():
    """A fused kernel's entries take CG_EPI_PARAMS last, and no other source names it."""
    from cute_gemm.build import paths
    fused = {k.source for k in registry.kernels() if k.fused}
    for k in registry.kernels():
        src = (paths.kernels_dir() / k.source).read_text()
        assert ("CG_EPI_PARAMS" in src) == (k.source in fused), k.source


# ---- the checks of a call's epilogue --------------------------------------------------------
def test_the_epilogue_is_checked_before_anything_runs():
    a, b = _f32(5, 3), _f32(3, 7)
    with pytest.raises(ShapeError, match="vector of 7 elements"):
        cute_gemm.gemm(a, b, epilogue=Epilogue(bias=np.ones(5, np.float32)))
    with pytest.raises(ShapeError, match="vector of 5 elements"):
        cute_gemm.gemm(a, b, epilogue=Epilogue(bias=np.ones(7, np.float32), bias_axis="row"))
    with pytest.raises(ShapeError, match="vector of 5 elements"):
        cute_gemm.gemm(a, b, epilogue=Epilogue(scale_rows=np.ones((2, 5), np.float32)))
    with pytest.raises(DTypeError, match="one type"):
        cute_gemm.gemm(a, b, epilogue=Epilogue(bias=np.ones(7, np.float32),
                                               scale_cols=np.ones(7, np.float16)))
    with pytest.raises(DTypeError, match="one type"):      # fp32 operands: float32 vectors
        cute_gemm.gemm(a, b, epilogue=Epilogue(bias=np.ones(7, np.float16)))
    with pytest.raises(DTypeError, match="float32, not float16"):
        cute_gemm.gemm(a, b, epilogue=Epilogue(out_dtype="float16"))
    with pytest.raises(InputError, match="has no fused epilogue"):
        cute_gemm.run("cute_multistage", a, b, epilogue=Epilogue(activation="relu"))
    with pytest.raises(InputError, match="must be a cute_gemm.Epilogue"):
        cute_gemm.gemm(a, b, epilogue="relu")


@pytest.mark.parametrize("kw, match", [
    (dict(activation="gelu"), "activation is one of"), (dict(bias_axis="column"), "bias_axis"),
    (dict(clamp=(1.0, 0.0)), "lo must be <= hi"), (dict(clamp=(math.nan, 1.0)), "neither NaN"),
    (dict(clamp=3.0), "two numbers")])
def test_a_bad_epilogue_is_named(kw, match):
    with pytest.raises(InputError, match=match):
        Epilogue(**kw)


def test_vectors_of_any_orientation_and_stride():
    v = _f32(20)
    for x in (v[::2], v[::2].reshape(1, 10), v[::2].reshape(10, 1)):
        p = prepare(Epilogue(bias=x, activation="silu"), 4, 10, 3, "float32", False, None)
        assert p.spec == EpilogueSpec(bias=True, activation="silu")
        assert p.vectors[0].shape == (1, 10)
    p = prepare(Epilogue(bias=v[:4], bias_axis="row", scale_cols=v[:10], clamp=(-1, 1)),
                4, 10, 3, "float32", False, None)
    assert (p.values.bias_sm, p.values.bias_sn, p.values.lo, p.values.hi) == (1, 0, -1.0, 1.0)
    assert p.spec == EpilogueSpec(bias=True, scale=True, clamp=True)
    # one element broadcasts: a per-tensor scale read by the kernel (stride 0), once a tile
    # where every scale is one (tensor_scale), with the vectors' per-element reads where not
    p = prepare(Epilogue(scale_rows=v[:1], scale_cols=v[3:4].reshape(())), 4, 10, 3, "float32",
                False, None)
    assert (p.values.srow_s, p.values.scol_s) == (0, 0)
    assert p.spec == EpilogueSpec(tensor_scale=True) and p.spec.tag == "tensor_scale+float32"
    p = prepare(Epilogue(scale_rows=v[:1], scale_cols=v[:10]), 4, 10, 3, "float32", False, None)
    assert (p.values.srow_s, p.values.scol_s) == (0, 1) and p.spec == EpilogueSpec(scale=True)
    assert EpilogueSpec.parse("bias+tensor_scale+relu+float32") == EpilogueSpec(
        bias=True, tensor_scale=True, activation="relu")
    with pytest.raises(ValueError, match="not both"):
        EpilogueSpec(scale=True, tensor_scale=True)
    with pytest.raises(ShapeError, match="of 10 elements"):
        prepare(Epilogue(scale_cols=v[:2]), 4, 10, 3, "float32", False, None)


def test_the_transposed_entry_reads_rows_as_columns():
    epi = EpiValues(100, 0, 3, 200, 300, 5, 7, -1.0, 2.0)     # a per-column bias, both scales
    assert transposed_epilogue(epi) == EpiValues(100, 3, 0, 300, 200, 7, 5, -1.0, 2.0)
    assert transposed_epilogue(transposed_epilogue(epi)) == epi
    with pytest.raises(cute_gemm.CuteGemmError, match="block scales"):
        transposed_epilogue(epi._replace(blk_a=400))


# ---- the launch, on the stub driver ---------------------------------------------------------
@pytest.fixture
def events(monkeypatch):
    ev = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    return ev


def _epi_launches(events):
    """(entry, argument block) of each launch of a fused kernel."""
    return [(e[1], stub_driver.BLOCKS[e[1]][0].from_buffer_copy(e[4]))
            for e in stub_driver.launches(events) if e[1] in stub_driver.FUSED_ENTRIES]


@pytest.mark.parametrize("precision, typestr", [("fp32", "<f4"), ("fp16", "<f2")])
def test_a_fused_call_launches_its_compile_with_the_vectors(events, precision, typestr):
    m, n, k = 100, 300, 64
    e = int(typestr[-1])
    a = Dev((m, k), 0x1000_0000, strides=(e * k, e), typestr=typestr)
    b = Dev((k, n), 0x2000_0000, strides=(e * n, e), typestr=typestr)
    o = Dev((m, n), 0x3000_0000, strides=(4 * n, 4))
    bias = Dev((1, n), 0x4000_0000, strides=(8 * n, 8))          # every other float
    srow = Dev((m, 1), 0x5000_0000, strides=(8, 4))
    cute_gemm.gemm(a, b, out=o, precision=precision,
                   epilogue=Epilogue(bias=bias, activation="gelu_tanh", scale_rows=srow))
    ((entry, g),) = _epi_launches(events)
    assert (g.M, g.N, g.K, getattr(g, "Lin", 1)) == (m, n, k, 1)     # (a batch of one, if any)
    assert (g.epi.bias, g.epi.bias_sm, g.epi.bias_sn) == (0x4000_0000, 0, 2)
    assert (g.epi.srow, g.epi.srow_s, g.epi.scol) == (0x5000_0000, 2, None)
    (plan,) = resolve.resolved_launches()
    assert plan.kernel.endswith(":bias+scale+gelu_tanh+float32") and plan.fused


def test_a_large_16_bit_layer_runs_the_warp_specialized_kernel_fused(events):
    """gemm()'s own pick where it takes an epilogue: cute_wgmma_ws's TMA launch, EpiArgs
    after the tensor maps."""
    m, n, k = 4096, 4096, 2048
    a = Dev((m, k), 0x1000_0000, strides=(2 * k, 2), typestr="<f2")
    b = Dev((k, n), 0x2000_0000, strides=(2, 2 * k), typestr="<f2")      # W^T of an (N, K) weight
    o = Dev((m, n), 0x3000_0000, strides=(2 * n, 2), typestr="<f2")
    bias = Dev((1, n), 0x4000_0000, strides=(2 * n, 2), typestr="<f2")
    cute_gemm.gemm(a, b, out=o, epilogue=Epilogue(bias=bias, activation="gelu_tanh"))
    launched = _epi_launches(events)
    assert launched and all(e.startswith("cute_wgmma_ws") for e, _ in launched), launched
    for _, g in launched:
        assert (g.epi.bias, g.epi.bias_sm, g.epi.bias_sn) == (0x4000_0000, 0, 1)
    (plan,) = resolve.resolved_launches()
    assert plan.kernel.endswith(":bias+gelu_tanh+float16") and plan.tma and plan.fused


def test_a_walk_cut_along_k_carries_the_epilogue(events, monkeypatch):
    """A launch with a workspace (a persistent walk whose last wave is cut along K: few
    rows, long K) writes the epilogue's vectors too: without them the kernel read
    a bias at address 0 (an illegal address on the H200)."""
    monkeypatch.setenv("CUTE_GEMM_STREAM_K", "1")
    m, n, k = 27, 4096, 11008
    a = Dev((m, k), 0x1000_0000, strides=(2 * k, 2), typestr="<f2")
    b = Dev((k, n), 0x2000_0000, strides=(2, 2 * k), typestr="<f2")      # W^T of an (N, K) weight
    o = Dev((m, n), 0x3000_0000, strides=(2 * n, 2), typestr="<f2")
    bias = Dev((1, n), 0x4000_0000, strides=(2 * n, 2), typestr="<f2")
    cute_gemm.run("cute_wgmma_ws_128x64", a, b, out=o, epilogue=Epilogue(bias=bias, activation="gelu_tanh"))
    launched = _epi_launches(events)
    assert any(e.endswith("_cut") for e, _ in launched), launched
    for _, g in launched:
        assert (g.epi.bias, g.epi.bias_sm, g.epi.bias_sn) == (0x4000_0000, 0, 1)


def test_an_epilogue_never_runs_on_an_entry_with_a_in_registers():
    """tf32 with A m-major runs cute_wgmma_ws's RS entry (A from registers) without an
    epilogue; with one, on A copied k-major."""
    from cute_gemm.driver.arrays import Operand
    k = registry.get("cute_wgmma_ws")
    ops = {"a": Operand("a", None, True, 1 << 20, (512, 256), (1, 512), "float32"),
           "b": Operand("b", None, True, 2 << 20, (256, 384), (1, 256), "float32"),
           "c": Operand("c", None, True, 3 << 20, (512, 384), (384, 1), "float32")}
    plain, _ = resolve.choose_exactly(k, ops, "tf32", "float32")
    assert plain.register_a
    fused, copies = resolve.choose_exactly(k.with_epilogue(EpilogueSpec(bias=True)), ops, "tf32", "float32")
    assert not fused.register_a and copies


def test_no_products_run_the_epilogue_alone_on_k_0(events):
    m, n = 33, 65
    a, b = Dev((m, 0), 0x1000_0000, strides=(4, 4)), Dev((0, n), 0x2000_0000, strides=(4 * n, 4))
    o, bias = Dev((m, n), 0x3000_0000), Dev((1, n), 0x4000_0000)
    cute_gemm.gemm(a, b, out=o, epilogue=Epilogue(bias=bias, activation="relu", clamp=(0, 6)))
    ((entry, g),) = _epi_launches(events)
    assert entry.startswith("cute_tiny_k_") and (g.M, g.N, g.K) == (m, n, 0)
    assert (g.epi.bias, g.epi.lo, g.epi.hi) == (0x4000_0000, 0.0, 6.0)


def test_a_vector_inside_out_is_computed_apart(events):
    m, n, k = 64, 64, 16
    a, b = Dev((m, k), 0x1000_0000), Dev((k, n), 0x2000_0000)
    o = Dev((m, n), 0x3000_0000)
    bias = Dev((1, n), 0x3000_0000 + 4 * n)      # row 1 of out
    cute_gemm.gemm(a, b, out=o, epilogue=Epilogue(bias=bias))
    ((entry, g),) = _epi_launches(events)
    assert g.C != 0x3000_0000                    # into scratch, then copied into out
    assert len(stub_driver.launches(events)) == 2 and stub_driver.launches(events, "scale2d")


def test_a_batch_with_a_row_vector_is_not_folded(events):
    m, n, k, L = 8, 16, 8, 3
    a = Dev((L, m, k), 0x1000_0000, strides=(4 * m * k, 4 * k, 4))
    b, o = Dev((k, n), 0x2000_0000), Dev((L, m, n), 0x3000_0000, strides=(4 * m * n, 4 * n, 4))
    cute_gemm.gemm(a, b, out=o, epilogue=Epilogue(bias=Dev((1, n), 0x4000_0000)))
    ((_, g),) = _epi_launches(events)
    assert g.M == L * m                          # a shared B: one taller problem
    events.clear()
    cute_gemm.gemm(a, b, out=o, epilogue=Epilogue(scale_rows=Dev((m, 1), 0x4000_0000, strides=(4, 4))))
    (e,) = stub_driver.launches(events)
    g = kernel_args.GemmArgsBatchEpi.from_buffer_copy(e[4])
    assert g.M == m and e[2][2] * g.Lin >= L    # each problem its own, along the grid's z


# ---- the reference --------------------------------------------------------------------------
def test_the_reference_is_pytorchs():
    torch = pytest.importorskip("torch")
    t = np.concatenate([np.linspace(-9, 9, 101), [0.0, -0.0, np.inf, -np.inf, np.nan]])
    tt = torch.tensor(t, dtype=torch.float64)
    want = {"relu": torch.relu(tt), "gelu_erf": torch.nn.functional.gelu(tt),
            "gelu_tanh": torch.nn.functional.gelu(tt, approximate="tanh"),
            "silu": torch.nn.functional.silu(tt)}
    for act in ACTIVATIONS:
        got = reference(Epilogue(activation=act), t)
        np.testing.assert_allclose(got, want[act].numpy(), rtol=1e-12, atol=1e-15,   # (gelu_tanh: cancellation below -5)
                                   equal_nan=True, err_msg=act)


def test_the_reference_adds_the_bias_on_its_axis_and_clamps():
    t = np.arange(6.0).reshape(2, 3)
    got = reference(Epilogue(bias=np.array([10.0, 20.0, 30.0], np.float32), clamp=(0, 25)), t)
    assert got.tolist() == [[10, 21, 25], [13, 24, 25]]
    got = reference(Epilogue(bias=np.array([-1.0, 1.0], np.float32), bias_axis="row"), t)
    assert got.tolist() == [[-1, 0, 1], [4, 5, 6]]
    s = reference_scale(Epilogue(scale_rows=np.array([2.0, 3.0]), scale_cols=np.ones(3)), 2, 3)
    assert s.tolist() == [[2, 2, 2], [3, 3, 3]]
    assert np.isnan(reference(Epilogue(activation="relu", clamp=(0, 1)), np.array([np.nan])))[0]


def test_the_linear_bench_draws_token_counts_from_its_seed():
    from cute_gemm.perf.linear import TOKENS, draw, linear_count
    a, b = draw(12, 5), draw(12, 5)
    assert a == b == sorted(a) and all(TOKENS[0] <= m <= TOKENS[1] for m in a)
    assert draw(12, 6) != a
    assert (linear_count("linear"), linear_count("linear:3"), linear_count("batched")) == (8, 3, None)


@pytest.mark.parametrize("argv,want", [([], ["bf16"]), (["--precision", "fp32,tf32"], ["fp32", "tf32"]),
                                       (["--precision", "fp32_3xtf32"], ["bf16"])])
def test_the_linear_bench_runs_bf16_unless_told(monkeypatch, argv, want):
    """--size linear's precisions: bf16 where none is named (the bench's own default, not the
    ladder's fp32), else those named that it times."""
    from cute_gemm.cli import bench as cli_bench, main
    seen = []
    monkeypatch.setattr(cli_bench, "linear_main", lambda n, seed, precisions, out: seen.append(precisions) or 0)
    monkeypatch.setattr(cli_bench.base, "no_gpu", lambda *a, **k: None)
    assert main(["bench", "--size", "linear:2", *argv]) == 0
    assert seen == [want]


# ---- the fused compiles: registers and spills (NVRTC, no GPU) ---------------------------------
import matrix  # noqa: E402

FULLEST = "bias+scale+gelu_erf+clamp"
COMPILES = [("cute_mma_sm80", "cute_mma_sm80_bf16_bf16_ak_bk", f"{FULLEST}+bfloat16"),
            ("cute_mma_sm80", "cute_mma_sm80_tf32_f32_ak_bk", f"{FULLEST}+float32"),
            ("cute_mma_sm80_64x64", "cute_mma_sm80_fp16_f32_am_bn_al1", f"{FULLEST}+float16"),
            ("cute_tiny_k", "cute_tiny_k_bf16_bf16", "bias+gelu_erf+clamp+bfloat16"),
            ("cute_tiny_k", "cute_tiny_k_fp32_f32", "bias+gelu_erf+clamp+float32"),
            ("v9_warptile", "v9_warptile", "bias+gelu_erf+float32"),
            ("v9_warptile", "v9_warptile_a1", "bias+relu+float32"),
            ("cute_wgmma_ws", "cute_wgmma_ws_bf16_bf16_ak_bk", f"{FULLEST}+bfloat16"),
            ("cute_wgmma_ws_128x64", "cute_wgmma_ws_fp16_fp16_am_bn_cut", "bias+gelu_tanh+float16"),
            ("cute_wgmma_ws", "cute_wgmma_ws_bf16_bf16_ak_bn_b", f"{FULLEST}+bfloat16"),
            ("cute_wgmma_ws_fp8", "cute_wgmma_ws_fp8_e4m3_f32_ak_bk_cut", f"{FULLEST}+blocks+float32"),
            ("cute_wgmma_ws_fp8", "cute_wgmma_ws_fp8_e4m3_bf16_ak_bk", "tensor_scale+float32"),
            ("cute_wgmma_ws_fp8_128x160", "cute_wgmma_ws_fp8_e4m3_f32_ak_bk_cut", f"{FULLEST}+float32"),
            ("cute_wgmma_ws_pp64x256", "cute_wgmma_ws_bf16_bf16_ak_bn_b", f"{FULLEST}+bfloat16")]
ARCH = {"cute_wgmma_ws": "sm_90a", "cute_wgmma_ws_128x64": "sm_90a", "cute_wgmma_ws_fp8": "sm_90a",
        "cute_wgmma_ws_fp8_128x160": "sm_90a", "cute_wgmma_ws_pp64x256": "sm_90a"}


@pytest.mark.skipif(not matrix.FULL, reason=matrix.WHY)
@pytest.mark.parametrize("name, entry, tag", [
    pytest.param(*c, marks=pytest.mark.compiles(f"{c[0]}:{c[2]}", ARCH.get(c[0], "sm_90"), entries=(c[1],)))
    for c in COMPILES], ids=lambda x: str(x))
def test_fused_compiles_keep_their_registers(name, entry, tag):
    """The fused epilogue fits beside the accumulators: no spills, no stack (the accumulators
    stay in registers), the entry's own launch bounds (v9_warptile: 128 registers, 2 CTAs an
    SM) hold, and a Hopper entry's wgmmas stay pipelined. v9_warptile's heavier
    combinations (a bias with both scales and a clamp) spill in its epilogue
    (docs/guide/epilogues.md)."""
    from cute_gemm.build import cache
    k = registry.get(f"{name}:{tag}")
    r = cache.get(k, ARCH.get(name, "sm_90"), entries=(entry,)).resources[entry]
    assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), r
    assert r.registers <= 65536 // (k.threads * k.min_blocks)
    assert not r.wgmma_serialized, f"{entry}: ptxas serialized its wgmmas"


@pytest.mark.compiles("cute_wgmma", "sm_90a", entries=("cute_wgmma_bf16_bf16_ak_bk",), ptx=True)
def test_a_column_major_16bit_c_goes_through_stmatrix():
    """The Hopper register epilogue's column path is compiled in (sm90_store_cols.cuh, behind
    CUTE_ARCH_STSM_SM90_ENABLED): stmatrix .trans for the stores, ldmatrix .trans for C's
    blocks read back where beta != 0; the GPU test of it: test_16bit_c_column_by_column."""
    from cute_gemm.build import cache
    e = "cute_wgmma_bf16_bf16_ak_bk"
    ptx = cache.get(registry.get("cute_wgmma"), "sm_90a", entries=(e,), ptx=True).ptx
    assert "stmatrix.sync.aligned.x4.trans" in ptx and "ldmatrix.sync.aligned.x4.trans" in ptx


@pytest.mark.skipif(not matrix.FULL, reason=matrix.WHY)
@pytest.mark.compiles("cute_tiny_k:bias+gelu_tanh+bfloat16", "sm_90", entries=("cute_tiny_k_bf16_bf16",))
@pytest.mark.compiles("cute_tiny_k:bias+gelu_tanh+float32", "sm_90", entries=("cute_tiny_k_fp32_f32",))
def test_gelu_tanh_takes_the_fast_tanh_into_16_bits_only():
    """A 16-bit result's GELU(tanh) takes tanh.approx, an error under the result's rounding;
    a float32 result keeps libdevice's tanhf (docs/design/epilogue.md#the-activations-cost)."""
    from cute_gemm.build import cache
    ptx = {e: cache.get(registry.get(f"cute_tiny_k:{tag}"), "sm_90", entries=(e,), ptx=True).ptx
           for tag, e in (("bias+gelu_tanh+bfloat16", "cute_tiny_k_bf16_bf16"),
                          ("bias+gelu_tanh+float32", "cute_tiny_k_fp32_f32"))}
    assert "tanh.approx.f32" in ptx["cute_tiny_k_bf16_bf16"]
    assert "tanh.approx.f32" not in ptx["cute_tiny_k_fp32_f32"]


def test_a_repeat_call_takes_the_hot_path_with_its_own_vectors(events, monkeypatch):
    """The second call of a signature skips validation and launches with this call's vector
    pointers; a vector that overlaps out sends the call back to the full path."""
    from cute_gemm import api
    validated = []
    real = api.validate
    monkeypatch.setattr(api, "validate", lambda *a, **k: validated.append(1) or real(*a, **k))
    monkeypatch.setattr(api, "_count", [1])            # one GPU: the hot path's condition
    m, n, k = 64, 96, 48
    a, b, o = Dev((m, k), 0x1000_0000), Dev((k, n), 0x2000_0000), Dev((m, n), 0x3000_0000)
    # (the block keeps its epilogue while it stays: each launch still holds its own bias)
    for bias_at in (0x4000_0000, 0x5000_0000, 0x5000_0000, 0x4000_0000, 0x4000_0000, 0x5000_0000):
        cute_gemm.gemm(a, b, out=o, epilogue=Epilogue(bias=Dev((1, n), bias_at), activation="relu"))
        ((_, g),) = _epi_launches(events)[-1:]
        assert g.epi.bias == bias_at and len(validated) == 1       # validated once only
    inside = Dev((1, n), 0x3000_0000 + 4 * n)            # row 1 of out: the full path
    cute_gemm.gemm(a, b, out=o, epilogue=Epilogue(bias=inside, activation="relu"))
    assert len(validated) == 2
    # each vector of several is checked at its own place: the third inside out, then the first
    def three(bias_at, cols_at):
        cute_gemm.gemm(a, b, out=o, epilogue=Epilogue(bias=Dev((1, n), bias_at), scale_rows=Dev(
            (1, m), 0x6000_0000), scale_cols=Dev((1, n), cols_at)))
    three(0x4000_0000, 0x7000_0000)
    three(0x5000_0000, 0x7100_0000)
    assert len(validated) == 3
    three(0x5000_0000, 0x3000_0000 + 4 * n)
    three(0x3000_0000 + 8 * n, 0x7100_0000)
    assert len(validated) == 5


def test_a_repeat_call_of_a_transposed_pick_swaps_its_vectors_on_the_hot_path(events, monkeypatch):
    """A pick that runs C^T = B^T A^T swaps the row and column vectors; the hot path's
    repeat call (its epilogue values a positional tuple) swaps them the same way."""
    from cute_gemm import api
    from cute_gemm.select import auto
    from cute_gemm.select.choice import Choice
    monkeypatch.setattr(api, "_count", [1])            # one GPU: the hot path's condition
    monkeypatch.setattr(auto, "choose", lambda *a, **k: Choice("cute_wgmma_ws", True, why="test"))
    m, n, k = 64, 96, 48
    a = Dev((m, k), 0x1000_0000, strides=(2 * k, 2), typestr="<f2")
    b = Dev((k, n), 0x2000_0000, strides=(2, 2 * k), typestr="<f2")
    o = Dev((m, n), 0x3000_0000)
    for rows_at in (0x4000_0000, 0x5000_0000):
        ep = Epilogue(scale_rows=Dev((1, m), rows_at), scale_cols=Dev((1, n), 0x6000_0000))
        cute_gemm.gemm(a, b, out=o, epilogue=ep)
        ((_, g),) = _epi_launches(events)[-1:]
        assert (g.epi.srow, g.epi.scol) == (0x6000_0000, rows_at)   # C^T's rows: C's columns


def test_gemm_choice_says_what_a_fused_call_runs():
    """Without a GPU (a described device): a large 16-bit layer keeps gemm()'s own pick,
    which takes an epilogue; so do fp32's (cute_pipelined's configurations, their stream-K
    twins too), but for a split whose reduction launch stores the result."""
    bf16 = cute_gemm.gemm_choice(4096, 11008, 4096, precision="bf16", device="NVIDIA H200",
                                 epilogue=True)
    assert registry.get(bf16.kernel).takes_epilogue
    splits = 0
    for m, n, k in ((2000, 3000, 1000), (138, 4096, 11008), (302, 11008, 4096), (1817, 4096, 11008),
                    (1024, 1024, 1024), (64, 64, 8192)):
        plain, fused = (cute_gemm.gemm_choice(m, n, k, precision="fp32", device="NVIDIA H200",
                                              layout="nt", epilogue=e) for e in (False, True))
        assert registry.get(fused.kernel).takes_epilogue and not (fused.split_k and fused.reduce)
        if not (plain.split_k and plain.reduce):
            assert (fused.kernel, fused.split_k) == (plain.kernel, plain.split_k), (m, n, k)
            splits += plain.split_k > 1
    assert splits, "no split pick fused: this test checks nothing of the stream-K twins"
    # the kernel tagged tiny_k takes an epilogue in fp32 too, but answers a small K only: past
    # it, a tiled kernel that takes one, in a batch as well
    for batch in (1, 8):
        for k, tiny in ((1000, False), (4096, False), (auto.TINY_K_SIMT, True), (8, True)):
            for precision in ("fp32", "fp32_3xtf32"):
                c = cute_gemm.gemm_choice(2000, 3000, k, precision=precision, device="NVIDIA H200",
                                          epilogue=True, batch=batch)
                x = registry.get(c.kernel)
                assert x.takes_epilogue and (auto.TINY in x.tags) == tiny, (batch, k, precision, c)
