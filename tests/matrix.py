"""How much of the compile matrix the CPU tests cover.

Default: each kernel source compiled once, in the configuration registered first (the
ladder's own stage; the other tile configurations of a source differ only in their typed
config), for its newest target (sm_90, or sm_90a for the arch-specific ones: what an H100 or
H200 runs), and of it only the entry points a call with row-major operands launches in its
first precision (`entries`), so that a cold run stays under 3 minutes on 2 CPUs.
CUTE_GEMM_TEST_FULL=1 (.ci/run sets it): every registered kernel for every target (sm_80
too); every entry point of the first configuration of each source and precision set for its
newest target, and elsewhere those of an nn call in each precision and each result type,
each at least once (`covering`: the other entry points are the same templates at the same
typed constants and arch branches: `cute-gemm compile` on the GPU host builds and
resource-checks all of them); and the CuTe kernels' layouts printed by their sources
compiled with nvcc (test_layouts).
"""
from __future__ import annotations

import os

FULL = os.environ.get("CUTE_GEMM_TEST_FULL") == "1"
WHY = "CUTE_GEMM_TEST_FULL=1 (as CI runs) covers it"


def first_of_source(k, same_precisions: bool = False) -> bool:
    """True if `k` is the first registered configuration of its source (with
    same_precisions: of those computing its precisions — c6's 8-bit configurations have
    entry points the 16-bit ones lack); a kernel none precedes (unregistered) is first."""
    from cute_gemm import registry
    return next((x for x in registry.kernels() if x.source == k.source
                 and (not same_precisions or x.precisions == k.precisions)), k).name == k.name


def targets(k) -> tuple[str, ...]:
    """The targets the compile test builds kernel `k` for."""
    if FULL:
        return k.archs
    return k.archs[-1:] if first_of_source(k) else ()


def per_configuration(kernels) -> list:
    """Parameters of a costly per-kernel test: every kernel with FULL, else the first
    configuration of each source, the others skipped with the reason."""
    import pytest
    return [pytest.param(k, id=k.name, marks=() if FULL or first_of_source(k) else
                         pytest.mark.skip(reason=f"one configuration per source: {WHY}"))
            for k in kernels]


def entries(k, arch: str | None = None) -> tuple[str, ...] | None:
    """The entry points the compile test builds of kernel `k` for `arch` (None: all of them).
    FULL: all for the first configuration of a source and precision set on its newest
    target; for its older targets and the other configurations those of the launches an nn
    call makes in the `covering` pairs of precision and result type (an older target differs
    in its arch branches, which every entry point shares; another configuration in its typed
    constants). By default those of an nn
    call in its first precision (resolve.layout_launches, as `cute-gemm compile NAME --layout
    nn --precision P`), as one program: NVRTC's time is per entry point, and the other
    precisions, operand majors, alignments and split entries are instances of the same
    templates (FULL builds them)."""
    if FULL and first_of_source(k, same_precisions=True) and arch in (None, k.archs[-1]):
        return None
    from cute_gemm.plan import resolve
    sets = (resolve.layout_launches(k, "nn", pairs=covering(k)) if FULL
            else resolve.layout_launches(k, "nn", k.precisions[:1])).get(k.name, ())
    chosen = {e for s in sets for e in s}
    return tuple(e for e in k.entries if e in chosen) or None


def covering(k) -> tuple[tuple[str, str], ...]:
    """(precision, result type) pairs of `k` in which each precision and each result type
    appear at least once: a configuration's operand types pick its MMA atoms, its result type
    its stores, independently of each other."""
    offered = list(dict.fromkeys((v.precision, v.out_dtype) for v in k.variants))
    pairs, seen = [], set()
    for p in dict.fromkeys(p for p, _ in offered):
        outs = [o for q, o in offered if q == p]
        o = next((o for o in outs if o not in seen), outs[0])
        pairs.append((p, o))
        seen.add(o)
    pairs += [next(x for x in offered if x[1] == o) for o in dict.fromkeys(o for _, o in offered)
              if o not in seen]
    return tuple(pairs)


def ptx_params(kernel: str, archs) -> list:
    """Parameters of a test that reads `kernel`'s PTX, whole, for each of `archs`: compiled
    with FULL (every entry point's PTX, 80 CPU-seconds for cute_pipelined), else skipped."""
    import pytest
    return [pytest.param(a, marks=pytest.mark.compiles(kernel, a, ptx=True) if FULL else
                         pytest.mark.skip(reason=f"the whole kernel's PTX: {WHY}"))
            for a in archs]
