#!/usr/bin/env bash
# compute-sanitizer over every kernel on the lent GPU (one device call): memcheck (no read
# or write outside the matrices, the smem, the epilogue's vectors and scales or the stream-K
# workspace), racecheck (shared-memory hazards: a missing barrier in a pipeline shows here),
# synccheck (barriers in divergent code) and initcheck (reads of device memory never
# written), each over scripts/sanitize_run.py: odd shapes, 4 operand layouts, stream-K,
# split and cut launches, run()'s device paths, gemm()'s stand-in; batched launches
# (broadcast, stride-0, strided, two-mode batches, a batch of one) on every kernel that
# batches; fused epilogues (bias, scales, gelu_tanh, clamp, every result type, walks cut
# along K) on every kernel that takes one; cute_wgmma_ws_fp8 in e4m3 and e5m2 with per-
# tensor, per-row/column and block scales. The kernels it launches (--compile-list: fused
# compiles too) are compiled first, outside the sanitizer.
#
#   device run:  bash scripts/sanitize.sh              (carry: .whl)
#   env: TOOLS (default "memcheck racecheck synccheck initcheck"), KERNELS (comma list),
#        SANITIZE_ARGS (more sanitize_run.py arguments: --only batched,epilogue,fp8 for the
#        batched, fused and 8-bit sections alone (issues #59, #60); --stand-in for gemm()'s
#        stand-in alone; --only takes layouts, runtime, stand-in, batched, epilogue, fp8)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
export CUTE_GEMM_LINEINFO=1     # source lines in the reports (build/compile.py)
compute-sanitizer --version | tail -1
common=()
[ -n "${KERNELS:-}" ] && common+=(--kernels "$KERNELS")
common+=(${SANITIZE_ARGS:-})
# for this GPU's arch, what the chosen sections launch: the kernels asked for (else all of
# them), then the fused compiles (<kernel>:<epilogue tag>) and picks of the epilogue and fp8
# sections; a fused compile that fails here is compiled again, and reported, by its launch
list=$(python3 scripts/sanitize_run.py "${common[@]}" --compile-list 2> "$OUT/compile_list.txt") \
    || { tail -20 "$OUT/compile_list.txt"; exit 1; }
base=(); fused=()
for x in $list; do case "$x" in *:*) fused+=("$x") ;; *) base+=("$x") ;; esac; done
: > "$OUT/compile.txt"
if [ ${#base[@]} -gt 0 ]; then
  python3 -m cute_gemm.cli compile "${base[@]}" --jobs 16 >> "$OUT/compile.txt" 2>&1 \
      || { tail -20 "$OUT/compile.txt"; exit 1; }
fi
if [ ${#fused[@]} -gt 0 ]; then
  python3 -m cute_gemm.cli compile "${fused[@]}" --jobs 16 >> "$OUT/compile.txt" 2>&1 \
      || echo "fused compiles: some failed (compile.txt); their launches compile them again"
fi
echo "compiled: ${#base[@]} kernels, ${#fused[@]} fused compiles"
status=0
for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
  args=()
  [ "$tool" = racecheck ] && args=(--quick)        # shared-memory tracking is slow
  args+=("${common[@]}")
  echo "== $tool"
  start=$(date +%s)
  compute-sanitizer --tool "$tool" --error-exitcode 3 --print-limit 20 \
      python3 scripts/sanitize_run.py "${args[@]}" > "$OUT/$tool.txt" 2>&1
  rc=$?
  grep -E "^layouts|^runtime|^stand-in|^batched|^epilogue|^fp8|FAIL|not taken|ERROR SUMMARY|RACECHECK SUMMARY|sanitize workload|^Traceback|^[A-Za-z_.]*(Error|Exception):|^=========.*(Invalid|Race|Barrier|Uninitialized)" "$OUT/$tool.txt" | head -120
  echo "$tool: exit $rc ($(( $(date +%s) - start )) s)"
  [ $rc -ne 0 ] && status=1
done
exit $status
