#!/usr/bin/env bash
# compute-sanitizer over every kernel on the lent GPU (one device call): memcheck (no read
# or write outside the matrices, the smem or the stream-K workspace), racecheck (shared-
# memory hazards: a missing barrier in a pipeline shows here), synccheck (barriers in
# divergent code) and initcheck (reads of device memory never written), each over
# scripts/sanitize_run.py (odd shapes, 4 operand layouts, stream-K and split launches).
# The cubins are compiled first, outside the sanitizer.
#
#   device run:  bash scripts/sanitize.sh              (carry: .whl)
#   env: TOOLS (default "memcheck racecheck synccheck initcheck"), KERNELS (comma list),
#        SANITIZE_ARGS (more sanitize_run.py arguments: --stand-in for gemm()'s stand-in alone)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
compute-sanitizer --version | tail -1
# for this GPU's arch: the kernels asked for, else all of them
if [ -n "${KERNELS:-}" ]; then which=(${KERNELS//,/ }); else which=(--all); fi
python3 -m cute_gemm.cli compile "${which[@]}" --jobs 16 > "$OUT/compile.txt" 2>&1 \
    || { tail -20 "$OUT/compile.txt"; exit 1; }
status=0
for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
  args=()
  [ "$tool" = racecheck ] && args=(--quick)        # shared-memory tracking is slow
  [ -n "${KERNELS:-}" ] && args+=(--kernels "$KERNELS")
  args+=(${SANITIZE_ARGS:-})
  echo "== $tool"
  start=$(date +%s)
  compute-sanitizer --tool "$tool" --error-exitcode 3 --print-limit 20 \
      python3 scripts/sanitize_run.py "${args[@]}" > "$OUT/$tool.txt" 2>&1
  rc=$?
  grep -E "^layouts|^runtime|^stand-in|FAIL|not taken|ERROR SUMMARY|RACECHECK SUMMARY|sanitize workload|^=========.*(Invalid|Race|Barrier|Uninitialized)" "$OUT/$tool.txt" | head -40
  echo "$tool: exit $rc ($(( $(date +%s) - start )) s)"
  [ $rc -ne 0 ] && status=1
done
exit $status
