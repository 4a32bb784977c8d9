"""How much of the compile matrix the CPU tests cover.

Default: each kernel compiled for its newest target (sm_90, or sm_90a for the arch-specific
ones: what an H100 or H200 runs), so a cold run stays under 3 minutes on 2 CPUs.
CUTE_GEMM_TEST_FULL=1 (.ci/run sets it): every target of every kernel (sm_80 too), and every
CuTe kernel's layouts printed by the kernel source compiled with nvcc (test_layouts).
"""
from __future__ import annotations

import os

FULL = os.environ.get("CUTE_GEMM_TEST_FULL") == "1"
WHY = "CUTE_GEMM_TEST_FULL=1 (as CI runs) covers it"


def targets(k) -> tuple[str, ...]:
    """The targets the compile test builds kernel `k` for."""
    return k.archs if FULL else k.archs[-1:]
