"""gemm_choice(device=NAME) without a GPU: the answer for a GPU a shipped tune table was
measured on, as gemm() gives it there (the shipped tables themselves, not private ones)."""
from __future__ import annotations

import dataclasses

import pytest

import cute_gemm
from cute_gemm.driver import launch
from cute_gemm.select import auto, autotable

H200 = "NVIDIA H200"


@pytest.fixture(autouse=True)
def no_gpu_and_no_tuned_tables(tmp_path, monkeypatch):
    """No device query may happen, and no tuned table of the user's cache counts."""
    def no_device(ordinal=None):
        raise cute_gemm.NoDeviceError("no GPU in this test")
    monkeypatch.setattr(launch, "device_info", no_device)
    monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(tmp_path / "cache"))
    autotable.reset()
    yield
    autotable.reset()


def test_the_shipped_tables_name_the_gpus_it_knows():
    names = autotable.shipped_gpus()
    assert names == ("NVIDIA H100 80GB HBM3", H200)
    for name in names:
        d = autotable.described_device(name)
        table = autotable.read(autotable.shipped_path(name))
        assert (d.name, d.arch, d.sm_count, d.ordinal) == (name, table.arch, table.sm_count, -1)
        assert d.smem_optin == launch.SMEM_OPTIN[d.cc] == 227 << 10


def test_a_described_gpu_answers_as_the_gpu_itself():
    choice = cute_gemm.gemm_choice(4096, 4096, 4096, precision="bf16", device=H200)
    assert isinstance(choice, cute_gemm.Choice) and cute_gemm.get_kernel(choice.kernel)
    present = dataclasses.replace(autotable.described_device(H200), ordinal=0, clock_khz=1_980_000)
    assert auto.choose(4096, 4096, 4096, device=present, precision="bf16") == choice
    # a shape the table measured: its row's fastest candidate, from the table
    table = autotable.read(autotable.shipped_path(H200))
    r = next(r for r in table.rows if r.aligned and r.precision == "fp32" and r.layout == "nn")
    got = cute_gemm.gemm_choice(*r.shape, device=H200)
    assert got.source == "table" and got.key == r.ranked()[0][0]
    # a DeviceInfo works the same way, also without a GPU
    assert cute_gemm.gemm_choice(*r.shape, device=present) == got


def test_unknown_names_and_mixed_arguments_are_named_errors():
    with pytest.raises(cute_gemm.InputError, match="'NVIDIA H100 80GB HBM3', 'NVIDIA H200'"):
        cute_gemm.gemm_choice(64, 64, 64, device="NVIDIA H300")
    with pytest.raises(cute_gemm.InputError, match="not both"):
        cute_gemm.gemm_choice(64, 64, 64, device=H200, ordinal=0)
    with pytest.raises(cute_gemm.DTypeError, match="out_dtype"):
        cute_gemm.gemm_choice(64, 64, 64, device=H200, out_dtype="float64")
    with pytest.raises(cute_gemm.InputError, match="layout"):
        cute_gemm.gemm_choice(64, 64, 64, device=H200, layout="xy")
    with pytest.raises(cute_gemm.NoDeviceError):          # no device named: this GPU's
        cute_gemm.gemm_choice(64, 64, 64)
