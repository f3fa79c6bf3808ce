#!/usr/bin/env bash
# On the device machine: the Python package over the carried .carry/lib/libfp4jit.so (made by
# scripts/python_device_prepare.sh):
#   1. every kernel the tests use compiled ahead of time, in parallel, with the carried CLI
#   2. tests/python/test_cuda.py: the CUDA backend through DLPack / __cuda_array_interface__
#      (CuPy, PyTorch), bit-exact against the reference backend
#   3. tests/python/test_torch.py: fp4jit.torch.Linear forward and gradients against a
#      fake-quantized PyTorch reference, every preset, CPU and CUDA; its row locality
#      tests/python/test_train_gpt.py: the training example's data, goals, DDP and causality
#   4. bench/torch_linear_bench.py: forward + backward of one Linear per recipe at LLaMA-7B
#      shapes (8192 tokens) against torch.nn.Linear in BF16, CUDA-event medians; and
#      bench/torch_python_overhead.py: the layer's own Python host time per step with the library
#      stubbed, CUDA tensors (BENCH=0 leaves both out)
# About 5 minutes. Results in $OUT (default /tmp/fp4jit_device): summary.txt and one log a step.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/fp4jit_device}
mkdir -p "$OUT"
export FP4JIT_LIBRARY=$PWD/.carry/lib/libfp4jit.so PYTHONPATH=$PWD/python
export FP4JIT_CACHE=/tmp/fp4jit_python.db PYTHONUNBUFFERED=1
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
summary "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
summary "$(python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)')"

t0=$SECONDS
for recipe in mxfp4 nvfp4 msfp4 tetrajet ue5m3; do
  .carry/lib/fp4jit compile --arch sm_90a --recipe "$recipe" --dtype float32 --dtype bfloat16 \
    --gemm 128x128x256 --gemm 256x256x512 --gemm 128x64x128 --gemm 64x64x128 \
    --gemm 32x256x128 --gemm 32x128x256 --gemm 512x256x256 --gemm 8192x4096x4096 \
    --gemm 8192x1536x512 --gemm 8192x512x1408 -q \
    >>"$OUT/compile.log" 2>&1
  summary "compile $recipe rc=$? $((SECONDS - t0))s"
done

rc=0
for test in test_cuda test_torch test_train_gpt; do
  t0=$SECONDS
  timeout 300 python3 "tests/python/$test.py" -v >"$OUT/$test.log" 2>&1
  r=$?
  summary "$test rc=$r $((SECONDS - t0))s: $(tail -1 "$OUT/$test.log")"
  [[ $r -eq 0 ]] || rc=1
done
if [[ ${BENCH:-1} != 0 ]]; then
  timeout 200 python3 bench/torch_linear_bench.py --shapes "${LINEAR_SHAPES:-8192x4096x4096,8192x11008x4096,8192x4096x11008}" \
    --out "$OUT/linear_bench.json" >"$OUT/bench.log" 2>&1
  summary "bench rc=$?:"
  summary "$(cat "$OUT/bench.log")"
  timeout 120 python3 bench/torch_python_overhead.py --device cuda --recipes mxfp4,nvfp4,msfp4 \
    >"$OUT/python_overhead.log" 2>&1
  summary "python overhead rc=$?:"
  summary "$(cat "$OUT/python_overhead.log")"
fi
exit $rc
