#!/usr/bin/env bash
# Performance probe on the lent GPU (one device call): install the carried wheels, sweep
# cute_pipelined configurations against cuBLAS (scripts/sweep_pipelined.py, arguments
# passed through) while nvidia-smi logs SM clock and power, then (PROFILE=1) profile
# cute_pipelined and cuBLAS with ncu at 4096^3 (clocks left to the GPU).
#
#   device run:  PROFILE=1 bash scripts/perf_probe.sh cute_pipelined 'p256=256x128x8/4,min_blocks=1'
#   env: PROFILE_LAYOUTS (default "nn nt"), PROFILE_KERNEL (default cute_pipelined)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/device_env.sh
export CUTE_GEMM_LINEINFO=1     # source lines in the reports (build/compile.py)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader

if [ $# -gt 0 ]; then
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 250 \
      > "$OUT/smi.txt" 2>&1 &
  SMI=$!
  python3 scripts/sweep_pipelined.py "$@" 2>&1 | tee "$OUT/sweep.txt" | grep -v "^    cute_pipelined_a.*_s "
  kill $SMI 2>/dev/null
  python3 - "$OUT/smi.txt" <<'PY'
import sys, statistics
rows = []
for line in open(sys.argv[1]):
    p = [x.strip().split()[0] for x in line.split(",")]
    try: rows.append((float(p[0]), float(p[1])))
    except (ValueError, IndexError): pass
busy = [r for r in rows if r[1] > 200]
if busy:
    print(f"nvidia-smi while busy (> 200 W, {len(busy)} samples): SM clock median "
          f"{statistics.median(r[0] for r in busy):.0f} MHz (min {min(r[0] for r in busy):.0f}), "
          f"power median {statistics.median(r[1] for r in busy):.0f} W (max {max(r[1] for r in busy):.0f})")
PY
fi

if [ "${PROFILE:-0}" = 1 ]; then
  SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats --section InstructionStats"
  METRICS="--metrics sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_ldgsts.sum,smsp__inst_executed_op_global_ld.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
  for lay in ${PROFILE_LAYOUTS:-nn nt}; do
    for k in ${PROFILE_KERNEL:-cute_pipelined} cublas; do
      filt="regex:^(?!.*(memset|elementwise|vectorized|scale2d)).*"
      [ "$k" != cublas ] && filt="regex:cute_pipelined"
      echo "== ncu $k $lay"; tag=$(echo "${k%%=*}" | tr -c 'a-zA-Z0-9_\n' _)
      ncu --clock-control none -k "$filt" --launch-skip 2 --launch-count 1 $SECTIONS $METRICS \
          python3 scripts/profile_gemm.py "$k" --size 4096 --layout "$lay" --iters 4 \
          > "$OUT/ncu_${tag}_${lay}.txt" 2>&1
      grep -E "^  [a-zA-Z_].*\(|Duration|SM Frequency|Registers Per|Grid Size|Block Size|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Ipc A|Dynamic Shared|sm__cycles_elapsed|smsp__inst|smsp__sass|smsp__issue|bank_conflicts|Waves Per SM|issue_stalled" \
          "$OUT/ncu_${tag}_${lay}.txt" | awk '$NF+0 >= 0.05 || !/issue_stalled/' | head -60
    done
  done
fi

# SASS=SPEC_OR_NAME:ENTRY — the SASS of one entry point (cuobjdump from the host's toolkit)
if [ -n "${SASS:-}" ]; then
  python3 - "${SASS%:*}" <<'PY'
import os, sys
sys.path.insert(0, "scripts")
from cute_gemm import registry
from cute_gemm.build import cache
import sweep_pipelined
spec = sys.argv[1]
k = sweep_pipelined.parse_spec(spec) if "=" in spec else registry.get(spec)
open("/tmp/sass.cubin", "wb").write(cache.get(k, "sm_90").cubin)
PY
  cuobjdump -sass -fun "${SASS##*:}" /tmp/sass.cubin > "$OUT/sass.txt" 2>&1
  echo "SASS: $(grep -c '^ */\*[0-9a-f]*\*/' "$OUT/sass.txt") instructions in $OUT/sass.txt"
fi
