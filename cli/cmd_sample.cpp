// fp4jit sample --shape RxC [--dist D] [--dtype T] [--seed N] --out X.npy
// Deterministic test tensors: the same arguments give the same file on every machine.
#include <cfloat>
#include <charconv>
#include <cmath>
#include <memory>
#include <numbers>
#include <random>

#include "cli/commands.hpp"
#include "cli/npy.hpp"

namespace fp4jit::cli {

namespace {

struct SampleOptions {
  std::string shape, dist = "normal", dtype = "float32", out;
  std::uint64_t seed = 0;
};

std::vector<std::int64_t> parse_shape(const std::string& text) {
  std::vector<std::int64_t> dims;
  std::string_view rest = text;
  while (true) {
    const auto x = rest.find('x');
    const std::string_view part = rest.substr(0, x);
    std::int64_t d = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || d <= 0 ||
        d > (std::int64_t{1} << 31))
      fail(ErrorKind::invalid_argument, "--shape '{}': expected positive sizes like 1024x4096",
           text);
    dims.push_back(d);
    if (x == std::string_view::npos) break;
    rest = rest.substr(x + 1);
  }
  std::int64_t count = 1;
  for (std::int64_t d : dims) count *= d;
  if (dims.size() > 8 || count > (std::int64_t{1} << 31))
    fail(ErrorKind::invalid_argument, "--shape '{}': at most 8 dimensions and 2^31 elements", text);
  return dims;
}

class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {  // Box-Muller: the same sequence wherever mt19937_64 and libm agree
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  int integer(int lo, int hi) { return lo + static_cast<int>(engine_() % (hi - lo + 1)); }

 private:
  std::mt19937_64 engine_;
};

// The largest finite value and the smallest subnormal step of each dtype.
double dtype_max(DType d) {
  return d == DType::f16 ? 65504.0 : (d == DType::bf16 ? 0x1.FEp127 : double(FLT_MAX));
}
double dtype_tiny(DType d) {
  return d == DType::f16 ? 0x1p-24 : (d == DType::bf16 ? 0x1p-133 : 0x1p-149);
}

constexpr double kTies[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0};  // midpoints of the E2M1 grid
constexpr double kGrid[] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

// One 32-element chunk of the adversarial tensor: ties, zeros, subnormals, huge values, NaN/Inf,
// one outlier, a wide dynamic range, exact grid values (each chunk one kind, in turn).
void adversarial_chunk(Random& rng, DType dtype, int kind, double* v, int n) {
  const double pow2 = std::ldexp(1.0, rng.integer(-3, 3));
  for (int i = 0; i < n; ++i) {
    const double sign = (i % 2) ? -1.0 : 1.0;
    switch (kind) {
      case 0:
        v[i] = sign * kTies[rng.integer(0, 6)] * pow2;
        break;
      case 1:
        v[i] = i == 1 ? -0.0 : 0.0;
        break;
      case 2:
        v[i] = sign * dtype_tiny(dtype) * rng.integer(1, 200);
        break;
      case 3:
        v[i] = sign * dtype_max(dtype) * (0.5 + 0.5 * rng.uniform());
        break;
      case 4:
        v[i] = i == 0 ? NAN : (i == 1 ? INFINITY : (i == 2 ? -INFINITY : rng.normal()));
        break;
      case 5:
        v[i] = rng.normal();
        break;
      case 6:
        v[i] = sign * std::ldexp(1.0 + rng.uniform(), rng.integer(-40, 40));
        break;
      case 7:
        v[i] = sign * kGrid[rng.integer(0, 7)] * pow2;
        break;
    }
  }
  if (kind == 0 || kind == 7) v[n - 1] = 6.0 * pow2;  // the block amax puts the rest on the grid
  if (kind == 5) v[rng.integer(0, n - 1)] *= 1000.0;
}

std::vector<double> generate(const SampleOptions& o, DType dtype, std::int64_t rows,
                             std::int64_t cols) {
  Random rng(o.seed);
  std::vector<double> v(rows * cols);
  if (o.dist == "adversarial") {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c0 = 0; c0 < cols; c0 += 32) {
        const int n = static_cast<int>(std::min<std::int64_t>(32, cols - c0));
        adversarial_chunk(rng, dtype, static_cast<int>((r + c0 / 32) % 8), &v[r * cols + c0], n);
      }
    }
    return v;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      double x = o.dist == "uniform" ? 2.0 * rng.uniform() - 1.0 : rng.normal();
      if (o.dist == "outliers") {
        if (c % 64 == 7) x *= 20.0;             // outlier channels
        if (rng.uniform() < 0.001) x *= 100.0;  // rare outlier values
      }
      v[r * cols + c] = x;
    }
  }
  return v;
}

void run_sample(const SampleOptions& o) {
  const DType dtype = parse_dtype(o.dtype);
  const std::vector<std::int64_t> shape = parse_shape(o.shape);
  const std::int64_t cols = shape.back();
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  const std::vector<double> v = generate(o, dtype, rows, cols);
  npy::write_values(o.out, shape, v, dtype);
  fmt::print("fp4jit sample: wrote {}: {} {} ({}), {} distribution, seed {}\n", o.out, o.dtype,
             shape_text(shape), bytes_text(rows * cols * dtype_size(dtype)), o.dist, o.seed);
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto o = std::make_shared<SampleOptions>();
  CLI::App* cmd = app.add_subcommand("sample", "Write a deterministic test tensor as .npy");
  cmd->add_option("--shape", o->shape, "Shape, e.g. 1024x4096 (or 4x256x1024, or 4096)")
      ->required();
  cmd->add_option("--dist", o->dist,
                  "normal: N(0, 1); uniform: U(-1, 1); outliers: N(0, 1) with x20 channels and "
                  "rare x100 values; adversarial: 32-element runs of E2M1 ties, zeros, "
                  "subnormals, huge values, NaN/Inf, one outlier, wide range, exact grid values")
      ->check(one_of("distribution", {"normal", "uniform", "outliers", "adversarial"}))
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "Element type (values are rounded to it)")
      ->check(one_of("dtype", dtype_option_names()))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  cmd->add_option("--out", o->out, "Output .npy file")->required();
  cmd->callback([o] { run_sample(*o); });
}

}  // namespace fp4jit::cli
