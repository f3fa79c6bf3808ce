#!/usr/bin/env bash
# Everything about the CUDA quantize kernels that needs a GPU, in one run on the device machine:
#   1. device and tool versions
#   2. the GPU tests (bit-exact against the reference), sharded over the CPU cores
#   3. the benchmark (BF16 -> FP4, every preset, 8192^2 and 16384^2, row-wise and pairs) and,
#      in the same run, the peers' figures (torch.compile's MXFP4 quantizer, copy bandwidth)
#   4. kernel from the SQLite cache in a fresh process; cold NVRTC compile per kernel
#   5. compute-sanitizer memcheck and racecheck of a representative subset of the GPU tests
# Logs and JSON go to $OUT (default /tmp/fp4jit_device). Expects, carried with the run:
#   .carry/bin/{fp4jit_gpu_tests,fp4jit_quantize_bench}  static builds (FP4JIT_STATIC_RUNTIME=ON)
#   .carry/cache.db                                      kernels compiled ahead of time (sm_90a)
#   .carry/peers.py                                      copied from the shared bench folder
# Prepare them with scripts/device_prepare.sh. Never changes GPU settings.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fp4jit_device}
mkdir -p "$OUT"
BIN=.carry/bin
export FP4JIT_CACHE=/tmp/fp4jit_cache.db
cp .carry/cache.db "$FP4JIT_CACHE"
say() { echo "== $(date +%T) $*"; }
step() {  # step NAME TIMEOUT COMMAND...: runs with a time limit, log in $OUT/NAME.log
  local name=$1 limit=$2
  shift 2
  say "$name: $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$OUT/summary.txt"
  return $rc
}

say "device"
{
  nvidia-smi --query-gpu=name,compute_cap,memory.total,clocks.max.sm,clocks.sm,clocks.max.mem,driver_version,power.limit --format=csv
  nvcc --version | tail -2
  compute-sanitizer --version | head -2
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} >"$OUT/device.txt" 2>&1
cat "$OUT/device.txt"

# 2. GPU tests, 12 shards at once (the reference on the CPU dominates).
say "gpu tests"
t0=$SECONDS
for i in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout 120 "$BIN/fp4jit_gpu_tests" \
    --gtest_output="xml:$OUT/gpu_tests_$i.xml" >"$OUT/gpu_tests_$i.log" 2>&1 &
done
wait
cat "$OUT"/gpu_tests_*.log >"$OUT/gpu_tests.log"
rm -f "$OUT"/gpu_tests_*.log
echo "gpu_tests $((SECONDS - t0))s: $(grep -c '^\[       OK' "$OUT/gpu_tests.log") passed," \
  "$(grep -c '^\[  FAILED  \].*(' "$OUT/gpu_tests.log") failed, $(grep -c '^\[  SKIPPED' "$OUT/gpu_tests.log") skipped" |
  tee -a "$OUT/summary.txt"
grep -B3 -A12 'Failure' "$OUT/gpu_tests.log" | head -60

# 3. Benchmark, then the peers in the same run.
step bench 90 "$BIN/fp4jit_quantize_bench" bench --json "$OUT/bench.json"
cat "$OUT/bench.log"
step peers 120 python3 .carry/peers.py --shapes 2048x2048x2048 --quant 8192x8192,16384x16384 --out "$OUT/peers.json"
tail -30 "$OUT/peers.log"

# 4. Cache load in a fresh process (every kernel already cached), then cold compiles.
FP4JIT_NO_COMPILE=1 step cache_load 30 "$BIN/fp4jit_quantize_bench" cache-load --cache "$FP4JIT_CACHE" \
  --json "$OUT/cache_load.json"
cat "$OUT/cache_load.log"

# 5. Sanitizers in the background while the compile timing (CPU only) runs.
SUBSET='Recipes/GpuQuantize.MatchesReference/nvfp4_x_pair:Recipes/GpuQuantize.MatchesReference/nvfp4_dy_pair'
SUBSET+=':Recipes/GpuQuantize.MatchesReference/nvfp4_w:Recipes/GpuQuantize.MatchesReference/msfp4_x_pair'
SUBSET+=':Recipes/GpuQuantize.MatchesReference/tetrajet_w_pair:Recipes/GpuQuantize.MatchesReference/tetrajet_xt'
SUBSET+=':Recipes/GpuQuantize.MatchesReference/msfp4_dy_pair:Recipes/GpuDequantize.*/msfp4'
(step memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/fp4jit_gpu_tests" \
  --gtest_filter="$SUBSET") &
(step racecheck 150 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 \
  "$BIN/fp4jit_gpu_tests" --gtest_filter="$SUBSET") &
step compile_times 60 "$BIN/fp4jit_quantize_bench" compile-times --json "$OUT/compile_times.json"
cat "$OUT/compile_times.log"
wait
for t in memcheck racecheck; do
  echo "--- $t"
  grep -E 'ERROR SUMMARY|PASSED|FAILED|Hazard|hazard' "$OUT/$t.log" | head -12
done
say "summary"
cat "$OUT/summary.txt"
