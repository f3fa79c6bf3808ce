#!/usr/bin/env bash
# On a machine with two or more GPUs: `fp4jit tune --devices 0,1` over LLaMA-7B's layers at 8192
# tokens into a fresh cache (wall time, every problem tuned once, the tunings present), then the
# Python package's CUDA tests (test_cuda, test_torch, test_train_gpt) over the carried library.
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

export FP4JIT_LIBRARY=$PWD/.carry/lib/libfp4jit.so PYTHONPATH=$PWD/python FP4JIT_CACHE=/tmp/fp4jit_multi_py.db
for recipe in mxfp4 nvfp4 msfp4 tetrajet ue5m3; do
  .carry/lib/fp4jit compile --arch sm_90a --recipe "$recipe" --dtype float32 --dtype bfloat16 \
    --gemm 128x128x256 --gemm 256x256x512 --gemm 128x64x128 --gemm 64x64x128 --gemm 32x256x128 \
    --gemm 32x128x256 --gemm 512x256x256 --gemm 8192x1536x512 --gemm 8192x512x1408 -q >>"$OUT/compile.log" 2>&1
done
for test in test_cuda test_torch test_train_gpt; do
  t0=$SECONDS
  timeout 300 python3 "tests/python/$test.py" -v >"$OUT/$test.log" 2>&1
  summary "$test rc=$? $((SECONDS - t0))s: $(tail -1 "$OUT/$test.log")"
done
