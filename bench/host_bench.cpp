// host_bench: throughput of the host backend's JIT kernels against the C++ reference, in one run.
//   quantize   GB/s (bytes read + written) per core, per preset and operand, BF16 input:
//              reference (project build) | reference with -O3 -march=native | JIT 1 thread |
//              JIT on every core. The reference is timed on a prepared float matrix (its input
//              conversion and output copy are not counted), the JIT end to end from BF16.
//   gemm       GFLOP/s of C = deq(X) deq(W)^T (nvfp4 fprop): reference (double) | native | JIT.
// Every JIT result is checked against the reference (quantize: same bytes; GEMM: rel. error).
// Usage: fp4jit_host_bench [--size N] [--gemm N] [--presets a,b] [--roles x,dyt] [--reps R]
//                          [--ref-reps R] [--json FILE]
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "bench/host_bench_native.hpp"
#include "core/sha256.hpp"
#include "numerics/common.cuh"
#include "reference/reference.hpp"
#include "runtime/host/host_backend.hpp"
#include "runtime/host_tensor.hpp"

namespace fp4jit::host {
namespace {

struct Options {
  std::int64_t size = 4096, gemm = 1024;
  std::vector<std::string> presets{"mxfp4", "nvfp4", "msfp4", "tetrajet", "ue5m3"};
  std::vector<std::string> roles{"x", "dyt"};
  int reps = 5, ref_reps = 1;
  std::string json;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t end = std::min(s.find(',', pos), s.size());
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--size")
      o.size = std::stoll(v);
    else if (k == "--gemm")
      o.gemm = std::stoll(v);
    else if (k == "--presets")
      o.presets = split(v);
    else if (k == "--roles")
      o.roles = split(v);
    else if (k == "--reps")
      o.reps = std::stoi(v);
    else if (k == "--ref-reps")
      o.ref_reps = std::stoi(v);
    else if (k == "--json")
      o.json = v;
    else
      fail(ErrorKind::invalid_argument, "unknown option {}", k);
  }
  return o;
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

std::vector<float> gaussian(std::int64_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = nx::bf16_to_float(nx::float_to_bf16(normal(gen)));  // exact in BF16
  return v;
}

std::unique_ptr<HostBackend> make_backend(int threads) {
  HostBackendOptions o;
  o.use_default_config = false;
  o.config = default_host_config(detect_host_target());
  o.config.threads = threads;
  return std::make_unique<HostBackend>(o);
}

struct Row {
  std::string what;
  double bytes_or_flops = 0, ref = 0, native = 0, jit1 = 0, jitn = 0;
  bool ok = false;
};

Row bench_quantize(const Options& o, const std::string& preset, const std::string& role_text,
                   HostBackend& one, HostBackend& all) {
  const Recipe recipe = parse_recipe(preset);
  const Role role = parse_named(role_names(), role_text, "role");
  const std::int64_t n = o.size;
  const std::vector<float> values = gaussian(n * n, 7);
  std::vector<std::uint16_t> bf16(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) bf16[i] = nx::float_to_bf16(values[i]);
  const TensorView in{bf16.data(), DType::bf16, n, n, 0};
  Matrix<float> m(n, n);
  std::copy(values.begin(), values.end(), m.data.begin());

  QuantizedTensor ref;
  Row row{preset + " " + role_text};
  row.ref = best_of(o.ref_reps, [&] { ref = reference::quantize(recipe, role, m, {.seed = 1}); });
  std::string native_digest;
  row.native = host_bench_native::quantize_seconds(preset, role_text, values.data(), n, n,
                                                   o.ref_reps, &native_digest);

  const QuantLayout l = ref.layout;
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(l.code_bytes()));
  std::vector<float> scales(static_cast<std::size_t>(l.scale_count()));
  std::vector<std::int64_t> r_index(static_cast<std::size_t>(n * n));
  std::vector<float> r_value(static_cast<std::size_t>(n * n));
  float tensor_scale = 0, amax = 0;
  std::int64_t r_count = 0;
  const QuantizedView out{codes.data(),   scales.data(),  &tensor_scale, &amax,
                          r_index.data(), r_value.data(), &r_count,      n * n};
  one.quantize(recipe, role, in, out, {.seed = 1},
               nullptr);  // compile (or load) outside the timing
  all.quantize(recipe, role, in, out, {.seed = 1}, nullptr);
  row.jit1 = best_of(o.reps, [&] { one.quantize(recipe, role, in, out, {.seed = 1}, nullptr); });
  row.jitn = best_of(o.reps, [&] { all.quantize(recipe, role, in, out, {.seed = 1}, nullptr); });

  const std::int64_t scale_bytes = l.scale_count() * (l.scale_is_code ? 1 : 4);
  row.bytes_or_flops = static_cast<double>(n * n * 2 + l.code_bytes() + scale_bytes) +
                       static_cast<double>(r_count) * 12.0;
  const bool same_codes = std::memcmp(ref.codes.data(), codes.data(), codes.size()) == 0;
  const bool same_scales =
      l.scale_is_code
          ? std::memcmp(ref.scale_codes.data(), scales.data(), ref.scale_codes.size()) == 0
          : std::memcmp(ref.scale_values.data(), scales.data(), scales.size() * 4) == 0;
  Sha256 h;
  h.update(std::span<const std::uint8_t>(ref.codes))
      .update(std::span<const std::uint8_t>(ref.scale_codes));
  h.update(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(ref.scale_values.data()),
                                    ref.scale_values.size() * sizeof(float)));
  row.ok = same_codes && same_scales &&
           static_cast<std::size_t>(r_count) == ref.residual_index.size() &&
           h.hex_digest() == native_digest;
  return row;
}

Row bench_gemm(const Options& o, HostBackend& one, HostBackend& all) {
  const Recipe recipe = parse_recipe("nvfp4");
  const std::int64_t n = o.gemm;
  const std::vector<float> x = gaussian(n * n, 1), w = gaussian(n * n, 2);
  Matrix<float> mx(n, n), mw(n, n);
  std::copy(x.begin(), x.end(), mx.data.begin());
  std::copy(w.begin(), w.end(), mw.data.begin());
  const QuantizedTensor qa = reference::quantize(recipe, Role::x, mx),
                        qb = reference::quantize(recipe, Role::w, mw);
  Row row{fmt::format("gemm nvfp4 {0}x{0}x{0}", n)};
  row.bytes_or_flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  Matrix<double> ref;
  row.ref = best_of(1, [&] { ref = reference::gemm(recipe, qa, qb); });
  row.native = host_bench_native::gemm_seconds("nvfp4", x.data(), w.data(), n, n, n, 1);
  auto a_codes = qa.codes, b_codes = qb.codes;
  auto a_scales = qa.scale_codes, b_scales = qb.scale_codes;
  float sa = qa.tensor_scale, sb = qb.tensor_scale;
  QuantizedView va, vb;
  va.codes = a_codes.data(), va.scales = a_scales.data(), va.tensor_scale = &sa;
  vb.codes = b_codes.data(), vb.scales = b_scales.data(), vb.tensor_scale = &sb;
  std::vector<float> c(static_cast<std::size_t>(n * n));
  const GemmOperand ga{Role::x, qa.layout, va}, gb{Role::w, qb.layout, vb};
  one.gemm(recipe, ga, gb, c.data(), n);
  all.gemm(recipe, ga, gb, c.data(), n);
  row.jit1 = best_of(std::max(1, o.reps / 2), [&] { one.gemm(recipe, ga, gb, c.data(), n); });
  row.jitn = best_of(std::max(1, o.reps / 2), [&] { all.gemm(recipe, ga, gb, c.data(), n); });
  double err = 0, norm = 0;
  for (std::int64_t i = 0; i < n * n; ++i) {
    const double d = c[static_cast<std::size_t>(i)] - ref.data[static_cast<std::size_t>(i)];
    err += d * d;
    norm += ref.data[static_cast<std::size_t>(i)] * ref.data[static_cast<std::size_t>(i)];
  }
  row.ok = std::sqrt(err / norm) < 1e-5;
  return row;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto one = make_backend(1);
  auto all = make_backend(0);
  const int cores = all->threads();
  fmt::print(
      "{}\nquantize: {}x{} BF16 input; GB/s = (bytes read + written) / s; 'per core' = total / "
      "threads\n",
      all->description(), o.size, o.size);
  fmt::print("{:<18} {:>10} {:>10} {:>10} {:>12} {:>9} {:>9} {:>6}\n", "operand", "ref GB/s",
             "-O3 nat.", "JIT 1T", fmt::format("JIT {}T/core", cores), "x ref", "x native", "same");
  std::vector<Row> rows;
  for (const std::string& p : o.presets)
    for (const std::string& r : o.roles) {
      Row row = bench_quantize(o, p, r, *one, *all);
      const double gb = row.bytes_or_flops / 1e9;
      fmt::print("{:<18} {:>10.3f} {:>10.3f} {:>10.3f} {:>12.3f} {:>8.1f}x {:>8.1f}x {:>6}\n",
                 row.what, gb / row.ref, gb / row.native, gb / row.jit1, gb / row.jitn / cores,
                 row.ref / row.jit1, row.native / row.jit1, row.ok ? "yes" : "NO");
      std::fflush(stdout);
      rows.push_back(row);
    }
  if (o.gemm > 0) {
    Row g = bench_gemm(o, *one, *all);
    const double gf = g.bytes_or_flops / 1e9;
    fmt::print("{:<18} {:>10} {:>10} {:>10} {:>12} {:>9} {:>9}\n", "gemm", "ref GF/s", "-O3 nat.",
               "JIT 1T", fmt::format("JIT {}T", cores), "x ref", "x native");
    fmt::print("{:<18} {:>10.2f} {:>10.2f} {:>10.2f} {:>12.2f} {:>8.1f}x {:>8.1f}x {:>6}\n", g.what,
               gf / g.ref, gf / g.native, gf / g.jit1, gf / g.jitn, g.ref / g.jit1,
               g.native / g.jit1, g.ok ? "yes" : "NO");
    rows.push_back(g);
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << "[\n";
    for (std::size_t i = 0; i < rows.size(); ++i)
      out << fmt::format(
          "  {{\"what\": \"{}\", \"work\": {}, \"ref_s\": {}, \"native_s\": {}, \"jit_1t_s\": {}, "
          "\"jit_all_s\": {}, \"threads\": {}, \"verified\": {}}}{}\n",
          rows[i].what, rows[i].bytes_or_flops, rows[i].ref, rows[i].native, rows[i].jit1,
          rows[i].jitn, cores, rows[i].ok ? "true" : "false", i + 1 < rows.size() ? "," : "");
    out << "]\n";
  }
  for (const Row& r : rows)
    if (!r.ok) return 1;
  return 0;
}

}  // namespace
}  // namespace fp4jit::host

int main(int argc, char** argv) {
  try {
    return fp4jit::host::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp4jit_host_bench: %s\n", e.what());
    return 2;
  }
}
