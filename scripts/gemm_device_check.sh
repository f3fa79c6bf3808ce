#!/usr/bin/env bash
# The sm90 GEMMs on the device machine in one run: the GPU GEMM tests (both kernels, every preset,
# aligned, ragged, split-K and window-stress shapes, against the double-precision reference),
# then `fp4jit bench gemm` per recipe with the heuristic (staged at these sizes) and with the
# fused kernel forced (FP4JIT_SM90_GEMM=fused), then the peers of peers.py in the same run.
# Expects, carried with the run (scripts/device_prepare.sh builds them; no kernel cache needed,
# NVRTC compiles on the device's cores):
#   .carry/bin/{fp4jit_gpu_gemm_tests,fp4jit}   static builds
#   .carry/peers.py                             copied from the shared bench folder
# Results go to $OUT: summary.txt (with every bench table), gemm_tests.txt (errors and failures)
# and the peers' JSON. Never changes GPU settings.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fp4jit_gemm}
mkdir -p "$OUT"
BIN=.carry/bin
export FP4JIT_CACHE=/tmp/fp4jit_gemm_cache.db
LOGS=/tmp/fp4jit_gemm_logs
mkdir -p "$LOGS"
say() { echo "== $(date +%T) $*" | tee -a "$OUT/summary.txt"; }

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee -a "$OUT/summary.txt"

if [ "${TESTS:-1}" = 1 ]; then
  say "gemm tests (${SHARDS:=16} shards)"
  t0=$SECONDS
  for i in $(seq 0 $((SHARDS - 1))); do
    GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i timeout "${TEST_LIMIT:-300}" \
      "$BIN/fp4jit_gpu_gemm_tests" ${FILTER:+--gtest_filter="$FILTER"} >"$LOGS/gemm_tests_$i.log" 2>&1 &
  done
  wait
  cat "$LOGS"/gemm_tests_*.log >"$LOGS/gemm_tests.log"
  echo "gemm_tests $((SECONDS - t0))s: $(grep -c '^\[       OK' "$LOGS/gemm_tests.log") passed," \
    "$(grep -c '^\[  FAILED  \].*(' "$LOGS/gemm_tests.log") failed, $(grep -c '^\[  SKIPPED' "$LOGS/gemm_tests.log") skipped" |
    tee -a "$OUT/summary.txt"
  {
    grep -h 'GEMM_ERROR\|GEMM_EPILOGUE' "$LOGS/gemm_tests.log" | sort
    echo "--- failures"
    grep -B3 -A12 'Failure\|Timeout\|terminate' "$LOGS/gemm_tests.log" | head -150
  } >"$OUT/gemm_tests.txt"
  grep -h GEMM_ERROR "$LOGS/gemm_tests.log" | sed 's/.*rel_frobenius=\([^ ]*\).*/\1 &/' | sort -g | cut -d" " -f2- | tail -3 | tee -a "$OUT/summary.txt"
fi

GEMMS=${GEMMS:-"8192x4096x4096 8192x11008x4096 8192x4096x11008"}
args=()
for g in $GEMMS; do args+=(--gemm "$g"); done
[ "${BENCH:-1}" = 1 ] || GEMM_RECIPES=" "
for r in ${GEMM_RECIPES:-nvfp4 mxfp4 msfp4}; do
  for kernel in ${KERNELS:-heuristic fused}; do
    say "bench gemm $r $kernel"
    if [ "$kernel" = heuristic ]; then
      timeout 150 "$BIN/fp4jit" bench gemm --recipe "$r" "${args[@]}" --json "$LOGS/bench_${r}_$kernel.json" \
        >"$LOGS/bench_${r}_$kernel.log" 2>&1
    else
      FP4JIT_SM90_GEMM=$kernel timeout 150 "$BIN/fp4jit" bench gemm --recipe "$r" "${args[@]}" \
        --json "$LOGS/bench_${r}_$kernel.json" >"$LOGS/bench_${r}_$kernel.log" 2>&1
    fi
    tee -a "$OUT/summary.txt" <"$LOGS/bench_${r}_$kernel.log"
  done
done
if [ "${PEERS:-1}" = 1 ]; then
  say "peers"
  timeout 150 python3 .carry/peers.py --shapes "$(echo $GEMMS | tr ' ' ',')" --quant 8192x8192 \
    --out "$OUT/peers_gemm.json" >"$LOGS/peers.log" 2>&1
  tail -12 "$LOGS/peers.log" | tee -a "$OUT/summary.txt"
fi
say "done"
