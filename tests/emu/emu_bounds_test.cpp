// Small operands on the emulator with poisoned bytes after every output: the kernels write only
// within the sizes of the layout (and the bytes the reference writes). The cases are those the
// CUDA quantize fuzz target found writing past an output (tests/emu/emu_recipes.hpp).
#include <gtest/gtest.h>

#include <vector>

#include "reference/reference.hpp"
#include "runtime/cuda/plan.hpp"
#include "tests/emu/emu_recipes.hpp"
#include "tests/emu/emu_run.hpp"
#include "tests/gpu/quant_check.hpp"

namespace fp4jit::test {
namespace {

constexpr std::size_t kTail = 64;  // poisoned bytes after each output

// `n` bytes of output and kTail poisoned bytes after them.
struct Tailed {
  std::vector<std::uint8_t> bytes;
  explicit Tailed(std::int64_t n) : bytes(static_cast<std::size_t>(n) + kTail, kPoison) {}
  std::uint8_t* data() { return bytes.data(); }
  std::string tail(const char* what) const {
    for (std::size_t i = bytes.size() - kTail; i < bytes.size(); ++i)
      if (bytes[i] != kPoison)
        return std::string(what) + ": byte " + std::to_string(i - (bytes.size() - kTail)) +
               " past the end was written";
    return {};
  }
};

TEST(EmuBounds, SmallOperandsWriteOnlyTheirOutputs) {
  for (const emu::SmallOperand& c : emu::emu_small_operands()) {
    SCOPED_TRACE(::testing::Message()
                 << c.recipe << " " << name(c.role) << " [" << c.rows << ", " << c.cols << "]");
    const Recipe recipe = parse_recipe(c.recipe);
    HostInput in = make_input(InputKind::random, DType::bf16, c.rows, c.cols, 5, true);
    const QuantizedTensor ref = reference::quantize(recipe, c.role, in.values);
    const QuantLayout& l = ref.layout;
    Tailed codes(l.code_bytes()), scales(l.scale_count() * (l.scale_is_code ? 1 : 4)), ts(4),
        amax(4);
    QuantizedView q;
    q.codes = codes.data();
    q.scales = scales.data();
    q.tensor_scale = reinterpret_cast<float*>(ts.data());
    q.amax = reinterpret_cast<float*>(amax.data());
    run([&](cuda::Arena& a) {
      return cuda::plan_quantize(recipe, c.role, in.view(), q, nullptr, QuantizeArgs{}, kDevice, a);
    });
    EXPECT_EQ(codes.tail("codes"), "");
    EXPECT_EQ(scales.tail("scales"), "");
    EXPECT_EQ(ts.tail("tensor scale"), "");
    EXPECT_EQ(amax.tail("amax"), "");
    EXPECT_TRUE(std::equal(ref.codes.begin(), ref.codes.end(), codes.bytes.begin())) << "codes";
    EXPECT_TRUE(std::equal(ref.scale_codes.begin(), ref.scale_codes.end(), scales.bytes.begin()))
        << "scales";
  }
}

}  // namespace
}  // namespace fp4jit::test
