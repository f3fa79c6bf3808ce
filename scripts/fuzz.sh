#!/usr/bin/env bash
# Coverage-guided fuzzing of fp4jit's file readers and host kernels with libFuzzer: builds the fuzz
# targets with clang into build-fuzz/ (AddressSanitizer and UBSan on the file readers), then runs
# each for SECONDS (default 60) from a corpus in build-fuzz/corpus/TARGET that starts from the
# target's own seeds and keeps what a run finds. A failing input is written to
# build-fuzz/artifacts/; replay it with `build-fuzz/fp4jit_fuzz_TARGET FILE`, or with the CI build's
# `build-test/fp4jit_fuzz_TARGET FILE`.
#   scripts/fuzz.sh [SECONDS] [TARGET ...]     targets: npy recipe layout cache quantize
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(npy recipe layout cache quantize)

./scripts/setup.sh
clang=$(command -v clang++-14 || command -v clang++ || true)
[[ -n "$clang" ]] || { echo "fuzz: clang++ not found (apt-get install clang-14)" >&2; exit 1; }
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="${clang%++*}" \
  -DCMAKE_CXX_COMPILER="$clang" -DFP4JIT_BUILD_TESTS=ON -DFP4JIT_LIBFUZZER=ON -DFP4JIT_WITH_CUDA=OFF
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fp4jit_fuzz_}"

mkdir -p build-fuzz/artifacts
status=0
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  echo "fuzz: $t for ${seconds}s"
  FP4JIT_FUZZ_SEED_DIR=$corpus ASAN_OPTIONS=abort_on_error=1 \
    "build-fuzz/fp4jit_fuzz_$t" -max_total_time="$seconds" -artifact_prefix=build-fuzz/artifacts/"$t"- \
    -print_final_stats=1 "$corpus" || status=1
done
exit $status
