#!/usr/bin/env bash
# Quick start: set up, build fp4jit (Release, into build/), then quantize a 1024x4096 bfloat16
# tensor with the nvfp4 recipe on the CPU, dequantize it back, and print what happened.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "setup (Debian packages, Python modules)"
./scripts/setup.sh
step "configure and build (Release, build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build --target fp4jit_cli -j"$(nproc)"
fp4jit=build/fp4jit
work=build/quickstart
mkdir -p "$work"

step "the recipes: $fp4jit recipe list"
"$fp4jit" recipe list
step "a test tensor: $fp4jit sample"
"$fp4jit" sample --shape 1024x4096 --dtype bfloat16 --seed 1 --out "$work/x.npy"
step "quantize it to NVFP4 (host CPU kernels where there is no GPU): $fp4jit quantize --recipe nvfp4"
"$fp4jit" quantize --recipe nvfp4 --in "$work/x.npy" --out "$work/x.nvfp4"
step "dequantize it back: $fp4jit dequantize"
"$fp4jit" dequantize --in "$work/x.nvfp4" --out "$work/y.npy" --compare "$work/x.npy"
step "done: the quantized operand is in $work/x.nvfp4/ (layout.json describes it)"
