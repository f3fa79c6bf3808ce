#!/usr/bin/env bash
# Builds, here (no GPU needed), what scripts/python_device_check.sh runs on the device machine,
# into the ignored folder .carry/lib/: libfp4jit.so and the fp4jit CLI with libstdc++, libgcc
# and SQLite linked in and no LLVM (the device's CPU cases then use the reference backend),
# stripped. The Python package and its tests travel with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B .carry/build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DFP4JIT_STATIC_RUNTIME=ON \
  -DFP4JIT_WITH_LLVM=OFF -DFP4JIT_BUILD_TESTS=OFF >/dev/null
cmake --build .carry/build-py --target fp4jit_lib fp4jit_cli
mkdir -p .carry/lib
cp -L .carry/build-py/libfp4jit.so .carry/lib/libfp4jit.so
cp .carry/build-py/fp4jit .carry/lib/fp4jit
strip --strip-unneeded .carry/lib/libfp4jit.so .carry/lib/fp4jit
du -sh .carry/lib/*
