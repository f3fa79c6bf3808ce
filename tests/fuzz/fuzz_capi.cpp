// Tensor descriptors through the C API (fp4jit_quantize on the reference backend): dtypes,
// dimensions, shapes and strides from the input, and buffer sizes around what
// fp4jit_layout_query asks for. A call either returns a status other than FP4JIT_OK or reads only
// the elements its descriptor names and writes only within the sizes it was given: every buffer
// ends at an inaccessible page. A descriptor whose size overflows 64-bit arithmetic, or whose
// buffer sizes are smaller than the layout's, must be refused.
#include <cstring>
#include <limits>

#include "fp4jit/fp4jit.h"
#include "tests/fuzz/fuzz.hpp"

namespace {

const std::int64_t kDims[] = {0,  1,  2,   3,  16,  17,        31,        32,        33,
                              64, 96, 128, -1, -64, 1ll << 31, 1ll << 32, 1ll << 62, 3037000500ll};
const std::int64_t kStrides[] = {0, 1, 2, 16, 32, 33, 64, 128, 4096, -1, -32, 1ll << 33, 1ll << 62};
const char* const kRecipes[] = {"mxfp4", "nvfp4", "msfp4", "tetrajet", "ue5m3"};
constexpr std::size_t kMaxBytes = 1 << 22;  // the largest input buffer a descriptor may name

fp4jit_engine* engine() {
  static fp4jit_engine* e = [] {
    fp4jit_engine_options o;
    fp4jit_engine_options_init(&o);
    o.backend = FP4JIT_BACKEND_REFERENCE;
    o.use_cache = 0;
    fp4jit_engine* out = nullptr;
    FUZZ_CHECK(fp4jit_engine_create(&o, &out) == FP4JIT_OK, "no reference engine");
    return out;
  }();
  return e;
}

fp4jit_recipe* recipe(std::size_t i) {
  static fp4jit_recipe* all[5] = {};
  if (all[i] == nullptr)
    FUZZ_CHECK(fp4jit_recipe_parse(kRecipes[i], &all[i]) == FP4JIT_OK, "a preset did not parse");
  return all[i];
}

// The elements a descriptor spans (1 + the largest offset), or -1 when that overflows or a
// stride is negative where it matters.
std::int64_t extent(int nd, const std::int64_t* shape, const std::int64_t* strides) {
  std::int64_t count = 1;
  for (int i = 0; i < nd; ++i) {
    if (shape[i] < 0) return -1;
    if (__builtin_mul_overflow(count, shape[i], &count)) return -1;
  }
  if (count == 0) return 0;
  std::int64_t last = 0;
  for (int i = 0; i < nd; ++i) {
    const std::int64_t stride = strides != nullptr ? strides[i] : [&] {
      std::int64_t s = 1;
      for (int j = i + 1; j < nd; ++j)
        if (__builtin_mul_overflow(s, shape[j], &s)) return std::int64_t{-1};
      return s;
    }();
    if (shape[i] == 1) continue;
    if (stride < 0) return -1;
    std::int64_t step = 0;
    if (__builtin_mul_overflow(stride, shape[i] - 1, &step) ||
        __builtin_add_overflow(last, step, &last))
      return -1;
  }
  return last + 1;
}

}  // namespace

std::vector<std::vector<std::uint8_t>> fp4jit_fuzz_seeds() {
  // recipe, role, dtype, ndim 2, dims 64 x 64 (index 9), no strides, sizes as queried
  std::vector<std::vector<std::uint8_t>> seeds;
  for (std::uint8_t r = 0; r < 5; ++r)
    for (std::uint8_t role = 0; role < 6; ++role)
      seeds.push_back({r, role, 2, 2, 9, 9, 0, 0, 0, 0});
  seeds.push_back({0, 0, 0, 3, 2, 9, 9, 1, 7, 6, 1, 0, 0, 0});  // [2, 64, 64], strided
  return seeds;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fp4jit::fuzz::Input in(data, size);
  const std::size_t ri = in.below(5);
  const auto role = static_cast<fp4jit_role>(in.below(7) % 6);
  const auto dtype = static_cast<fp4jit_dtype>(in.below(4));  // 3: an unknown dtype
  const int nd = static_cast<int>(in.below(10));
  std::int64_t shape[9] = {}, strides[9] = {};
  for (int i = 0; i < nd; ++i)
    shape[i] = in.flag() ? in.pick(kDims) : static_cast<std::int64_t>(in.below(200));
  const bool strided = in.flag();
  for (int i = 0; i < nd && strided; ++i)
    strides[i] = in.flag() ? in.pick(kStrides) : static_cast<std::int64_t>(in.below(300));

  const int elem = dtype == FP4JIT_FLOAT32 ? 4 : 2;
  const std::int64_t span = nd < 1 ? 1 : extent(nd, shape, strided ? strides : nullptr);
  const bool representable = span >= 0 && span <= std::numeric_limits<std::int64_t>::max() / elem;
  if (representable && static_cast<std::size_t>(span) * elem > kMaxBytes)
    return 0;  // a valid descriptor of a buffer too large to allocate here
  fp4jit::fuzz::GuardedBytes input(representable ? static_cast<std::size_t>(span) * elem : 64, 0);
  for (std::size_t i = 0; i < input.size(); ++i)
    input.data()[i] = static_cast<std::uint8_t>(i * 29);

  fp4jit_tensor t{
      input.data(),      dtype, nd, nd > 0 ? shape : nullptr, strided ? strides : nullptr,
      FP4JIT_DEVICE_CPU, 0};
  // The matrix the API reads: rows = product of the leading dimensions, cols = the last.
  std::int64_t rows = 1;
  bool rows_overflow = false;
  for (int i = 0; i + 1 < nd; ++i) rows_overflow |= __builtin_mul_overflow(rows, shape[i], &rows);
  const std::int64_t cols = nd > 0 ? shape[nd - 1] : 0;
  fp4jit_layout layout{};
  const bool laid_out =
      !rows_overflow && fp4jit_layout_query(recipe(ri), role, rows, cols, &layout) == FP4JIT_OK;
  // Output sizes: as queried, one short, or arbitrary; each buffer exactly the size given.
  auto size_of = [&](std::int64_t want) -> std::int64_t {
    switch (in.below(4)) {
      case 0:
        return want > 0 ? want - 1 : 0;
      case 1:
        return static_cast<std::int64_t>(in.below(4096));
      default:
        return want;
    }
  };
  const std::int64_t codes_bytes = size_of(laid_out ? layout.code_bytes : 0);
  const std::int64_t scales_bytes = size_of(laid_out ? layout.scale_bytes : 0);
  const std::int64_t capacity = size_of(laid_out ? layout.residual_capacity : 0);
  if (codes_bytes + scales_bytes + 12 * capacity > static_cast<std::int64_t>(1 << 24)) return 0;
  fp4jit::fuzz::GuardedBytes codes(static_cast<std::size_t>(codes_bytes)),
      scales(static_cast<std::size_t>(scales_bytes) / 4 * 4),
      index(static_cast<std::size_t>(capacity) * 8), value(static_cast<std::size_t>(capacity) * 4);
  float tensor_scale = 0.0f, amax = 0.0f;
  std::int64_t count = 0;
  fp4jit_quantized q{codes.data(),
                     codes_bytes,
                     scales.data(),
                     static_cast<std::int64_t>(scales.size()),
                     &tensor_scale,
                     &amax,
                     reinterpret_cast<std::int64_t*>(index.data()),
                     reinterpret_cast<float*>(value.data()),
                     &count,
                     capacity};
  const fp4jit_status s = fp4jit_quantize(engine(), recipe(ri), role, &t, &q, nullptr, nullptr);
  if (s != FP4JIT_OK) {
    FUZZ_CHECK(s == FP4JIT_ERROR_INVALID_ARGUMENT || s == FP4JIT_ERROR_UNSUPPORTED,
               std::string("unexpected status: ") + fp4jit_last_error());
    return 0;
  }
  FUZZ_CHECK(representable && !rows_overflow, "a descriptor whose size overflows was accepted");
  FUZZ_CHECK(laid_out && codes_bytes >= layout.code_bytes &&
                 static_cast<std::int64_t>(scales.size()) >= layout.scale_bytes,
             "buffers smaller than the layout were accepted");
  return 0;
}
