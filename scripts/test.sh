#!/usr/bin/env bash
# Sets up, configures (warnings are errors), builds everything into build/ and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFP4JIT_WERROR=ON -DFP4JIT_BUILD_TESTS=ON
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure -j2
