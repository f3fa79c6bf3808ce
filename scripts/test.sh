#!/usr/bin/env bash
# Sets up, configures (the default RelWithDebInfo build, warnings are errors), builds everything
# into build-test/ and runs every test. The quick start's Release build stays in build/.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFP4JIT_WERROR=ON -DFP4JIT_BUILD_TESTS=ON
cmake --build build-test -j"$(nproc)"
cd build-test
ctest --output-on-failure -j2
