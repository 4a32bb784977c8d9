"""A split's shares meeting in a thread-block cluster (sm_90, cluster_fixup.cuh) against the
same split through the stream-K workspace: the same bits, the gauge, C unread at beta 0."""
from __future__ import annotations

import numpy as np
import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.check import judge, reference
from test_gpu import SPLIT_K_CASES

pytestmark = pytest.mark.gpu

# cute_pipelined's first split cases (fp32) and the small tensor-core kernel (bf16)
CASES = SPLIT_K_CASES[:3] + [("cute_mma_sm80_64x64", (130, 70, 1030))]


@pytest.mark.parametrize("name,shape", CASES)
def test_a_split_meeting_in_a_cluster_adds_up_as_the_workspace_does(name, shape, monkeypatch):
    """sm_90: a split of 2 to 8 shares launched in clusters (cluster_fixup.cuh, the shares
    added in shared memory) gives the bits of the same split through the workspace
    (CUTE_GEMM_CLUSTER_SPLIT=0), as given and on C^T, within the gauge, and leaves a
    NaN-poisoned C unread at beta 0."""
    from cute_gemm import api
    from cute_gemm.check import unit
    from cute_gemm.driver import launch
    from cute_gemm.driver.arrays import DeviceArray, narrow, widen
    from cute_gemm.select import auto
    if launch.device_info().arch_int < 90:
        pytest.skip("clusters need sm_90+; this GPU's splits meet in the workspace")
    if not registry.get(name).runs_on(launch.device_info().arch_int):
        pytest.skip(f"{name} does not run on this GPU")
    m, n, k = shape
    precision, dt = (("fp32", "float32") if registry.get(name).computes("fp32", "float32")
                     else ("bf16", "bfloat16"))
    rng = np.random.default_rng()
    a, b, c = (widen(narrow(rng.standard_normal(s, dtype=np.float32), dt), dt)
               for s in ((m, k), (k, n), (m, n)))
    ref, gauge = reference(a, b, c, 0.5, 1.5)
    dA, dB, dC = (DeviceArray.from_host(x, dtype=dt) for x in (a, b, c))
    split = 0
    try:
        for transposed in (False, True):
            for s in (2, 4, 8):
                choice = auto.Choice(name, transposed, split_k=s)
                got = {}
                for env in ("1", "0"):
                    monkeypatch.setenv("CUTE_GEMM_CLUSTER_SPLIT", env)
                    cute_gemm.clear_caches()     # resolved launches keep what the variable said
                    o = DeviceArray.full((m, n), np.nan, dtype=dt)
                    api.run_choice(choice, dA, dB, dC, alpha=0.5, beta=1.5, out=o, precision=precision)
                    got[env] = o.to_host()
                    plans = [p for p in cute_gemm.resolved_launches() if p.kernel == name]
                    if not any(p.split_k for p in plans):
                        break                    # more CTAs than fit at once: not split at all
                    split += 1
                    assert plans and all(p.split_k == s and p.cluster == (s if env == "1" else 1)
                                         and (p.workspace_bytes == 0) == (env == "1")
                                         for p in plans), (env, plans)
                    if env == "1":
                        api.run_choice(choice, dA, dB, dC, alpha=1.0, beta=0.0, out=o,
                                       precision=precision)
                        assert np.all(np.isfinite(o.to_host())), (transposed, s, "beta 0 read C")
                    o.close()
                why = (name, shape, transposed, s)
                if len(got) < 2:
                    continue
                assert np.array_equal(got["1"].view(np.uint32), got["0"].view(np.uint32)), why
                r = judge(name, got["1"], ref, gauge, False, unit(precision, dt), dt)
                assert r.status == "pass", (why, r)
    finally:
        cute_gemm.clear_caches()     # no launch resolved here outlives the test
        for d in (dA, dB, dC):
            d.close()
    assert split, "no split count was taken: this test checks nothing"
