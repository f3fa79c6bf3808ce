#!/usr/bin/env bash
# Nsight Compute profiles of the quantize kernels and per-kernel times of the GEMMs, on the device
# machine (one call, about 3 minutes). Expects the static binaries and the ahead-of-time kernel
# cache that scripts/device_prepare.sh leaves in .carry/. Results under $OUT:
#   ncu_<preset>_<mode>.txt   the profiled kernel launches of one benchmark case (n = 8192):
#                             speed of light, launch statistics, occupancy, scheduler and warp
#                             states, instruction and memory counters
#   gemm_kernels.txt          every kernel's duration in one msfp4 fprop/dgrad (OCC compensation
#                             kernels apart from the GEMM) and one nvfp4 fprop
# Env: CASES="preset:mode ..." (mode rows|pair), N (default 8192).
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fp4jit_profile}
mkdir -p "$OUT"
BIN=.carry/bin
export FP4JIT_CACHE=/tmp/fp4jit_cache.db
if [[ -f .carry/cache.db.xz ]]; then xz -dc .carry/cache.db.xz >"$FP4JIT_CACHE"; else cp .carry/cache.db "$FP4JIT_CACHE"; fi
N=${N:-8192}
CASES=${CASES:-"mxfp4:rows mxfp4:pair nvfp4:pair tetrajet:pair ue5m3:rows"}
METRICS=smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_fp32_pred_on.sum
METRICS+=,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum
METRICS+=,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum
METRICS+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
METRICS+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
METRICS+=,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
METRICS+=,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum
for c in $CASES; do
  preset=${c%%:*}
  mode=${c##*:}
  echo "== $preset $mode"
  # Three warm-up launches, then one profiled run of every kernel of the case.
  timeout 120 ncu --launch-count 8 -k regex:quantize --section SpeedOfLight \
    --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats \
    --metrics "$METRICS" --print-units base \
    "$BIN/fp4jit_quantize_bench" bench --sizes "$N" --presets "$preset" --modes "$mode" --reps 1 \
    >"$OUT/ncu_${preset}_${mode}.txt" 2>&1
  echo "rc=$?"
  grep -E "quantize_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|Compute \(SM\)|inst_executed.sum|bank_conflicts|global_op_st.sum|dram__bytes" \
    "$OUT/ncu_${preset}_${mode}.txt" | head -60
done
echo "== gemm kernel times"
{
  for spec in "msfp4 fprop" "msfp4 dgrad" "nvfp4 fprop"; do
    set -- $spec
    echo "-- $1 $2 8192x4096x4096"
    timeout 120 ncu --metrics gpu__time_duration.sum --print-units base "$BIN/fp4jit" bench gemm \
      --recipe "$1" --gemm 8192x4096x4096 --op "$2" --iters 2 2>&1 | grep -E "^  [a-z_:<>0-9]+|gpu__time_duration|TFLOP" | tail -40
  done
} >"$OUT/gemm_kernels.txt" 2>&1
cat "$OUT/gemm_kernels.txt" | head -80
