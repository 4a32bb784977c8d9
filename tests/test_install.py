"""The installed package carries its kernels and headers (CI installs it non-editable)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import cute_gemm
from cute_gemm.build import paths


def test_tests_import_the_installed_wheel_in_ci():
    if not os.environ.get("CUTE_GEMM_EXPECT_INSTALLED"):
        pytest.skip("CUTE_GEMM_EXPECT_INSTALLED not set (set by .ci/run, which installs the wheel)")
    pkg = Path(cute_gemm.__file__).resolve().parent
    assert "site-packages" in str(pkg), f"tests imported {pkg}, not the installed wheel"
    assert paths.kernels_dir() == pkg / "kernels"
    assert paths.project_include_dir() == pkg / "include"


def test_every_registered_source_is_shipped():
    for k in cute_gemm.kernels():
        assert (paths.kernels_dir() / k.source).is_file(), k.source
    assert (paths.kernels_dir() / "util" / "scale2d.cu").is_file()
    assert (paths.project_include_dir() / "cute_gemm" / "common.cuh").is_file()
