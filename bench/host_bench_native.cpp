// Compiled with -O3 -march=native and -Dfp4jit=fp4jit_native (see bench/host_bench.cmake).
#include "bench/host_bench_native.hpp"

#include <chrono>

#include "core/sha256.hpp"
#include "reference/reference.hpp"

namespace host_bench_native {

namespace {
fp4jit::Role role_of(const std::string& text) {
  return fp4jit::parse_named(fp4jit::role_names(), text, "role");
}
fp4jit::Matrix<float> matrix(const float* data, std::int64_t rows, std::int64_t cols) {
  fp4jit::Matrix<float> m(rows, cols);
  std::copy(data, data + rows * cols, m.data.begin());
  return m;
}
template <typename F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}
}  // namespace

double quantize_seconds(const std::string& recipe_text, const std::string& role_text,
                        const float* data, std::int64_t rows, std::int64_t cols, int reps,
                        std::string* digest) {
  const fp4jit::Recipe recipe = fp4jit::parse_recipe(recipe_text);
  const fp4jit::Matrix<float> m = matrix(data, rows, cols);
  fp4jit::QuantizedTensor q;
  const double s = best_of(
      reps, [&] { q = fp4jit::reference::quantize(recipe, role_of(role_text), m, {.seed = 1}); });
  fp4jit::Sha256 h;
  h.update(std::span<const std::uint8_t>(q.codes))
      .update(std::span<const std::uint8_t>(q.scale_codes));
  h.update(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(q.scale_values.data()),
                                    q.scale_values.size() * sizeof(float)));
  *digest = h.hex_digest();
  return s;
}

double gemm_seconds(const std::string& recipe_text, const float* x, const float* w, std::int64_t m,
                    std::int64_t n, std::int64_t k, int reps) {
  const fp4jit::Recipe recipe = fp4jit::parse_recipe(recipe_text);
  const auto qa = fp4jit::reference::quantize(recipe, fp4jit::Role::x, matrix(x, m, k));
  const auto qb = fp4jit::reference::quantize(recipe, fp4jit::Role::w, matrix(w, n, k));
  return best_of(reps, [&] { (void)fp4jit::reference::gemm(recipe, qa, qb); });
}

}  // namespace host_bench_native
