#!/usr/bin/env bash
# On a machine with two or more GPUs: `fp4jit tune --devices 0,1` over LLaMA-7B's layers at 8192
# tokens into a fresh cache (wall time, every problem tuned once, the tunings present), then the
# Python package's tests over the carried library (scripts/python_device_check.sh, no benchmark).
# Built here by scripts/device_prepare.sh (.carry/bin/fp4jit) and scripts/python_device_prepare.sh
# (.carry/lib). Results in $OUT (default /tmp/fp4jit_multi): summary.txt and one log a step.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fp4jit_multi}
RECIPE=${RECIPE:-nvfp4}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
gpus=$(nvidia-smi -L | wc -l)
summary "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x $gpus"
devices=$(seq -s, 0 $((gpus - 1)))
db=/tmp/fp4jit_multi_tune.db
rm -f "$db" "$db-wal" "$db-shm"
t0=$(date +%s%N)
FP4JIT_CACHE=$db .carry/bin/fp4jit tune --backend cuda --recipe "$RECIPE" --model llama-7b --tokens 8192 \
  --devices "$devices" >"$OUT/tune.log" 2>&1
rc=$?
summary "tune $RECIPE --devices $devices: rc=$rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ': tuned (' "$OUT/tune.log") problems tuned; $(grep '^wall time' "$OUT/tune.log")"
summary "tunings in the cache: $(FP4JIT_CACHE=$db .carry/bin/fp4jit cache tunings | grep -c "$RECIPE")"

OUT="$OUT" BENCH=0 bash scripts/python_device_check.sh
