// test_util::sass_family against the kernels of the GEMM compile spread (sources only, no
// compile): the families the SASS checks sample stand for what they claim to.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/nvrtc/gemm_spread.hpp"
#include "tests/nvrtc/sass.hpp"

namespace fp4jit::test_util {
namespace {

// The GEMM compile tests (gemm_compile_test.cpp) read one kernel's SASS per family: mxfp4's sm_90a
// spread has a family for each of its four GEMM kernels and its expansions, and two kernels share a
// family only when their keys differ in nothing but the config's constants.
TEST(SassFamilies, EachKernelOfTheSpreadHasItsOwn) {
  const PresetKernels mine = preset_kernels("mxfp4", "sm_90a");
  std::map<std::string, std::string> first;  // family -> its first key, config removed
  // A key without what the config leaves free in one template: the config fields (config,
  // config_a, ...), N and K, the output type.
  const auto without_config = [](const std::string& key) {
    std::string out;
    for (const auto& [name, value] : key_fields(key))
      if (name.rfind("config", 0) != 0 && name != "n" && name != "k" && name != "out")
        out += name + "=" + value + ";";
    return out;
  };
  for (const auto& k : mine.kernels) {
    const std::string family = test_util::sass_family(k.key_text);
    const auto [it, added] = first.emplace(family, without_config(k.key_text));
    if (!added) {
      EXPECT_EQ(it->second, without_config(k.key_text)) << family;
    }
  }
  for (const char* kernel : {"staged", "swapped", "direct", "fused"})
    EXPECT_TRUE(first.contains(fmt::format("gemm_sm90|mx|{}|sm_90a", kernel))) << kernel;
  EXPECT_GE(first.size(), 6u);  // and the expansions
}

}  // namespace
}  // namespace fp4jit::test_util
