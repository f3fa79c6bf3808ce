// fp4jit C++ quick start: quantize a tensor with a named recipe, read it back, and multiply two
// quantized operands. Runs on the best backend available (CUDA where a GPU is present, else the
// host JIT, else the reference); on CUDA the buffers must be device memory, so this example asks
// for a host-memory backend explicitly.
//
//   build/examples/fp4jit_quickstart [recipe]      (default recipe: nvfp4)
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "fp4jit/engine.hpp"

int main(int argc, char** argv) {
  using namespace fp4jit;
  try {
    const Recipe recipe = parse_recipe(argc > 1 ? argv[1] : "nvfp4");
    EngineOptions options;
    options.backend = BackendKind::host;  // host memory below; falls back to the reference
    Engine engine = [&] {
      try {
        return Engine(options);
      } catch (const Error&) {
        options.backend = BackendKind::reference;
        return Engine(options);
      }
    }();
    std::printf("backend: %s\n", engine.description().c_str());

    // An activation X [tokens, in] in float32.
    const std::int64_t tokens = 256, in = 1024;
    std::vector<float> x(tokens * in);
    std::mt19937 gen(1);
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(gen);
    const TensorView xv{x.data(), DType::f32, tokens, in};

    // Allocate the quantized operand as its layout says, then quantize.
    const QuantLayout l = engine.layout(recipe, Role::x, tokens, in);
    std::vector<std::uint8_t> codes(l.code_bytes());
    std::vector<float> scales_f(l.scale_is_code ? 0 : l.scale_count());
    std::vector<std::uint8_t> scales_u8(l.scale_is_code ? l.scale_count() : 0);
    float tensor_scale = 1.0f;
    std::int64_t residual_count = 0;
    std::vector<std::int64_t> residual_index(recipe[Role::x].occ ? tokens * in : 0);
    std::vector<float> residual_value(residual_index.size());
    QuantizedView q;
    q.codes = codes.data();
    q.scales = l.scale_is_code ? static_cast<void*>(scales_u8.data()) : scales_f.data();
    q.tensor_scale = &tensor_scale;
    q.residual_index = residual_index.data();
    q.residual_value = residual_value.data();
    q.residual_count = &residual_count;
    q.residual_capacity = static_cast<std::int64_t>(residual_index.size());
    engine.quantize(recipe, Role::x, xv, q, {.seed = 42});

    // Read it back and measure the quantization error.
    std::vector<float> back(tokens * in);
    engine.dequantize(recipe, Role::x, q, tokens, in, {back.data(), DType::f32, l.rows, l.cols});
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      num += (back[i] - x[i]) * double(back[i] - x[i]);
      den += double(x[i]) * x[i];
    }
    std::printf(
        "recipe %s, operand x [%lld, %lld]: %lld code bytes + %lld scales, relative error %.4f\n",
        recipe.preset.c_str(), static_cast<long long>(tokens), static_cast<long long>(in),
        static_cast<long long>(l.code_bytes()), static_cast<long long>(l.scale_count()),
        std::sqrt(num / den));
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "fp4jit_quickstart: %s\n", e.what());
    return 1;
  }
}
