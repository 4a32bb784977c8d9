#!/usr/bin/env bash
# One call on the lent H100/H200 machine (no package index there): install the carried
# wheels, report versions, measure compile times, run the whole test suite (GPU tests
# included), `cute-gemm check`, and a short benchmark against cuBLAS.
#
#   device run:  bash scripts/gpu_check.sh            (carry: .whl, and .cgpack if present)
#   env: STAGE=test | tensor | gpu | batched | fp8 | bench | all | sanitize (default all. A device call is limited
#        to 10 minutes: test, tensor and bench go in three back-to-back calls, test in two
#        (PART=1, 2) on a freshly started machine. test: compile,
#        the suite but the tensor-core GPU files, `cute-gemm check`; tensor: those files
#        (TENSOR_TESTS); sanitize: only scripts/sanitize.sh, compute-sanitizer over every
#        kernel); BENCH_ARGS overrides the benchmark arguments; PYTEST_ARGS adds pytest
#        arguments.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh

echo "== device"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv,noheader
python3 - <<'PY'
import importlib.metadata as md
for d in ("cuda-bindings", "cuda-core", "nvidia-cuda-nvrtc", "nvidia-cutlass", "nvidia-cuda-cccl",
          "nvidia-cuda-runtime", "cupy-cuda13x", "torch", "numpy"):
    try: print(f"{d:22}{md.version(d)}")
    except Exception: print(f"{d:22}-")
from cute_gemm.driver import launch
from cute_gemm.build import compile as c
i = launch.device_info(); print(i, "nvrtc", c.nvrtc_version(), f"fp32 peak {i.fp32_peak_tflops:.1f} TFLOP/s")
PY

STAGE="${STAGE:-all}"
[ "$STAGE" = sanitize ] && exec bash scripts/sanitize.sh
# STAGE=gpu: every GPU test file at once over JOBS pytest workers (pytest-xdist: carry its
# wheel and execnet's in .whl), the compiles spread with them, then the cache packed for the
# next call (device_env.sh). From a cold cache the ~2,900 tests outrun one call: PART=1 to 5
# runs a fifth of them (carry the previous part's cgpack; PYTEST_SECONDS, and part 5's
# compile-ahead before it, must fit the call, or nothing is packed); a failure is named as it happens (-v into $OUT/pytest_gpu.txt),
# so a run cut short still says what failed; --timeout-method=thread names a test whose
# kernel hangs (a signal waits behind the synchronize it hangs in). Then the whole-device
# tests, which skip under the workers, in one process (WHOLE_SECONDS, default 120).
GPU_PARTS=("tests/test_tensor_cores_gpu.py tests/test_3xtf32_gpu.py"
"tests/test_fp8_gpu.py"
"tests/test_epilogue_gpu.py"
"tests/test_capture_gpu.py tests/test_streamk.py tests/test_batched_gpu.py"
"tests/test_gpu.py tests/test_skinny_gpu.py tests/test_reliability_gpu.py tests/test_auto_gpu.py
tests/test_hotpath_gpu.py tests/test_swap.py tests/test_torch_gpu.py tests/test_firstuse_gpu.py
tests/test_copies_gpu.py tests/test_cluster_split_gpu.py")
if [ "$STAGE" = gpu ]; then
  files=${GPU_PARTS[*]}
  [ -n "${PART:-}" ] && files=${GPU_PARTS[$((PART - 1))]}
  if [ "${PART:-5}" = 5 ]; then
    # the cross-checks of every kernel (test_gpu.py) compile what they launch one after another
    # (~130 entry points a layout, cold): side by side first, as `cute-gemm check` does
    python3 scripts/compile_ahead.py
  fi
  echo "== pytest, the GPU test files${PART:+ (part $PART)} over ${JOBS:-14} workers"
  # shellcheck disable=SC2086
  timeout "${PYTEST_SECONDS:-480}" python3 -m pytest $files -n "${JOBS:-14}" -v --tb=short -ra \
      -p no:cacheprovider --timeout 300 --timeout-method=thread ${PYTEST_ARGS:-} 2>&1 \
      | grep -v "PytestBenchmarkWarning\|warner(" > "$OUT/pytest_gpu.txt"
  grep -E "FAILED|ERROR|^[0-9]+ (passed|failed)|=====.*(passed|failed)" "$OUT/pytest_gpu.txt" \
      | grep -v "^tests/" | sort -u | tail -60
  # the whole-device tests (free memory of the whole GPU) skip under the workers: alone, after
  echo "== pytest, the whole-device tests of those files, one process"
  # shellcheck disable=SC2086
  timeout "${WHOLE_SECONDS:-120}" python3 -m pytest $files -m whole_device -q -ra -p no:cacheprovider \
      --timeout 120 ${PYTEST_ARGS:-} 2>&1 | grep -v "PytestBenchmarkWarning\|warner(" | tail -8
  pack_cache
  exit 0
fi
# STAGE=batched: the batched GPU tests (the wgmma candidates' twins among them), then the
# twins against torch.matmul and gemm()'s pick on one draw (BATCHED_COUNT problems, a seed
# drawn here and printed), bf16 and fp16; JSON into $OUT/batched_{twin,gemm}
if [ "$STAGE" = batched ]; then
  echo "== pytest, the batched GPU tests"
  python3 -m pytest tests/test_batched_gpu.py -n "${JOBS:-14}" -v --tb=short -p no:cacheprovider \
      --timeout 300 ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest_batched.txt" \
      | grep -E "FAILED|ERROR|[0-9]+ (passed|failed)" | tail -40
  seed=$(python3 -c "import secrets; print(secrets.randbelow(2**31))")
  for who in twin gemm; do
    echo "== bench --size batched ($who), seed $seed"
    python3 -m cute_gemm.cli bench --size "batched:${BATCHED_COUNT:-16}" --seed "$seed" \
        --precision bf16,fp16 --out "$OUT/batched_$who" \
        $([ "$who" = twin ] && echo cute_wgmma_ws) 2>&1 | tail -8
  done
  exit 0
fi
# STAGE=fp8: the 8-bit kernels alone — their GPU tests (ids streamed: -v), gemm()'s scaled
# cost (scripts/fp8_tiles.py host), the fp8 bench (JSON and the accuracy plot into $OUT;
# FP8_SEED draws a recorded seed's shapes again)
if [ "$STAGE" = fp8 ]; then
  echo "== pytest, the 8-bit GPU tests"
  # (scales_of_one: per-tensor scales' tensor_scale compiles on the other fused kernels)
  timeout "${PYTEST_SECONDS:-300}" python3 -m pytest tests/test_fp8_gpu.py tests/test_epilogue_gpu.py -k "fp8 or Fp8 or scales_of_one" \
      -n "${JOBS:-14}" -v -p no:cacheprovider --timeout 300 ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest_fp8.txt" \
      | grep -E "PASSED|FAILED|ERROR|passed|failed" | grep -v "PASSED" | tail -40
  echo "== gemm() with and without per-tensor scales against _scaled_mm: host and GPU time"
  python3 scripts/fp8_tiles.py host 2>&1 | grep -v Warning | cut -c1-200
  echo "== bench --size fp8"
  python3 -m cute_gemm.cli bench --size "fp8:${FP8_COUNT:-6}" ${FP8_SEED:+--seed "$FP8_SEED"} --out "$OUT" 2>&1 \
      | tee "$OUT/bench_fp8.txt" | tail -25
  pack_cache
  exit 0
fi
# the tensor-core GPU tests, a call of their own: with them the suite ran past ten minutes on the H200
TENSOR_TESTS=(tests/test_tensor_cores_gpu.py tests/test_3xtf32_gpu.py)
if [ "$STAGE" = tensor ]; then
  echo "== pytest (the tensor-core GPU tests)"
  python3 -m pytest "${TENSOR_TESTS[@]}" -q -ra -p no:cacheprovider --timeout 300 ${PYTEST_ARGS:-} \
      2>&1 | tee "$OUT/pytest_tensor.txt" | tail -30
  exit 0
fi
SKIP_TENSOR=()
[ "$STAGE" = test ] && for f in "${TENSOR_TESTS[@]}"; do SKIP_TENSOR+=(--ignore="$f"); done
# STAGE=test PART=1 | 2: half of it each (on a machine in its first minutes the whole ran
# past ten minutes): 1 the compile, run() timings and PART1_TESTS; 2 the rest and the check
PART1_TESTS=(tests/test_gpu.py tests/test_skinny_gpu.py tests/test_reliability_gpu.py
             tests/test_dtypes.py tests/test_hotpath.py tests/test_hotpath_gpu.py tests/test_swap.py
             tests/test_streamk.py tests/test_stand_in.py tests/test_validation.py)
PART="${PART:-}"
TESTS=(tests)
if [ "$STAGE" = test ] && [ "$PART" = 1 ]; then
  TESTS=("${PART1_TESTS[@]}")
elif [ "$STAGE" = test ] && [ "$PART" = 2 ]; then
  for f in "${PART1_TESTS[@]}"; do SKIP_TENSOR+=(--ignore="$f"); done
fi
if [ "$STAGE" != bench ]; then
if [ "$PART" != 2 ]; then
echo "== compile (cold compile of cute_smem, caches off; then every kernel for sm_90)"
# (CUDA_CACHE_DISABLE: NVRTC 13 would reuse its optimizer's and ptxas's output from the
# driver's compute cache, docs/design/first_call.md#compute-cache)
CUTE_GEMM_DISABLE_CACHE=1 CUDA_CACHE_DISABLE=1 python3 - <<'PY'
import time
t = time.perf_counter()
import cute_gemm
c = cute_gemm.compile_kernel("cute_smem", arch="sm_90")
print(f"cold compile cute_smem: NVRTC {c.compile_seconds:.2f} s, wall incl. import {time.perf_counter()-t:.2f} s")
PY
python3 -m cute_gemm.cli compile --all --arch sm_90 --jobs 16 2>&1 | tee "$OUT/compile.txt" | tail -4

echo "== warm-cache run() timings"
python3 scripts/run_timings.py 2>&1 | tee "$OUT/run_timings.txt"

fi

echo "== pytest (GPU tests included, the tensor-core files in STAGE=tensor; sm_80 compiles are left to CI, sm_90 ones run here)"
python3 -m pytest "${TESTS[@]}" -q -ra -p no:cacheprovider --timeout 300 "${SKIP_TENSOR[@]}" \
    -k "not (test_every_kernel_compiles and sm_80)" ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest.txt" | tail -60

if [ "$PART" != 1 ]; then
echo "== cute-gemm check"
python3 -m cute_gemm.cli check 2>&1 | tee "$OUT/check.txt" | tail -15
fi
fi
[ "$STAGE" = test ] && exit 0

echo "== benchmark: every kernel, A and B row-major, at 4096^3, 8192^3, 4096x4096x1024 and"
echo "   1024x1024x8192 (64 tiles of 128x128: a quarter of one wave, where stream-K pays)"
echo "   (where the whole-K strip stage fits in shared memory), plus the per-call overhead"
mkdir -p "$OUT/nn" "$OUT/layouts"
python3 -m cute_gemm.cli bench ${BENCH_ARGS:---size 4096 --size 8192 --size 4096x4096x1024 --size 1024x1024x8192 --overhead} \
    --no-progress --out "$OUT/nn" 2>&1 | tee "$OUT/nn/bench.txt" | tail -45
echo "== benchmark: operand layouts (CuTe NT = A transposed view, TN = B transposed view) at 4096^3 and 8192^3"
LAYOUT_KERNELS=$(python3 -c "import cute_gemm; print(' '.join(k.name for k in cute_gemm.kernels('cute') if k.name != 'cute_gmem'))")
python3 -m cute_gemm.cli bench $LAYOUT_KERNELS v9_warptile_256x128 --size 4096 --size 8192 --layouts tn,nt,tt \
    --no-progress --no-plots --out "$OUT/layouts" 2>&1 | tee "$OUT/layouts/bench.txt" | tail -32
# the device tool returns at most 8 files: keep the JSONs, the logs and the two plots
rm -f "$OUT"/nn/bench.csv "$OUT"/nn/bench_readme.md "$OUT"/layouts/bench.csv "$OUT"/layouts/bench_readme.md
