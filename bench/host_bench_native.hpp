// The reference quantizer and GEMM compiled a second time with -O3 -march=native (their namespace
// renamed so both copies link into one binary), for host_bench's comparison. Plain types only.
#pragma once
#include <cstdint>
#include <string>

namespace host_bench_native {

// Best-of-`reps` seconds of reference::quantize(recipe, role, [rows, cols] floats); `digest` gets
// the SHA-256 of the codes and scales of the last run.
double quantize_seconds(const std::string& recipe, const std::string& role, const float* data,
                        std::int64_t rows, std::int64_t cols, int reps, std::string* digest);
// Best-of-`reps` seconds of reference::gemm for operands x [m, k] and w [n, k] of `recipe`
// quantized as x and w (the quantization is not timed).
double gemm_seconds(const std::string& recipe, const float* x, const float* w, std::int64_t m,
                    std::int64_t n, std::int64_t k, int reps);

}  // namespace host_bench_native
