#!/usr/bin/env bash
# Builds what scripts/device_check.sh runs on the device machine, here (no GPU needed), into the
# ignored folder .carry/: static binaries (stripped), every kernel they use compiled ahead of
# time for sm_90a into .carry/cache.db (from the same build, so the template hash matches), that
# cache compressed as .carry/cache.db.xz (what travels: the database is larger than a call may
# carry), and a copy of the shared peers.py. Carry .carry/bin, .carry/cache.db.xz, .carry/peers.py.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B .carry/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFP4JIT_STATIC_RUNTIME=ON -DFP4JIT_WITH_LLVM=OFF \
  -DFP4JIT_BUILD_TESTS=ON >/dev/null
cmake --build .carry/build --target fp4jit_gpu_tests fp4jit_gpu_gemm_tests fp4jit_quantize_bench fp4jit_cli
mkdir -p .carry/bin
cp .carry/build/tests/gpu/fp4jit_gpu_tests .carry/build/tests/gpu/fp4jit_gpu_gemm_tests \
  .carry/build/fp4jit_quantize_bench .carry/bin/
cp .carry/build/fp4jit .carry/bin/fp4jit
strip .carry/bin/*
rm -f .carry/cache.db .carry/cache.db-wal .carry/cache.db-shm
# The GPU tests use the emulator's recipes (tests/emu/emu_recipes.hpp), the benchmark the presets.
RECIPES=$(sed -n 's/^ *\(return {\)\?"\([^"]*\)",\?\(};\)\?$/\2/p' tests/emu/emu_recipes.hpp | paste -sd';')
.carry/bin/fp4jit_quantize_bench precompile --cache .carry/cache.db --recipes "$RECIPES"
sqlite3 .carry/cache.db 'PRAGMA wal_checkpoint(TRUNCATE);' 2>/dev/null || true
xz -T0 -6 -c .carry/cache.db >.carry/cache.db.xz
cp "${PEERS:-/work/shared/bench/peers.py}" .carry/peers.py
du -sh .carry/bin .carry/cache.db .carry/cache.db.xz
