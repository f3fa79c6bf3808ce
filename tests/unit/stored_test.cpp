// Quantized-operand directories (cli/stored.hpp): what the layout fuzz target found, kept as
// cases of their own.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/npy.hpp"
#include "cli/stored.hpp"
#include "core/error.hpp"
#include "reference/reference.hpp"

namespace fp4jit::cli {
namespace {

namespace fs = std::filesystem;

class StoredTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("fp4jit_stored_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // msfp4's x of a [rows, cols] normal tensor, saved to dir_.
  StoredOperand save(std::int64_t rows, std::int64_t cols) {
    std::mt19937 gen(3);
    std::normal_distribution<float> normal;
    Matrix<float> m(rows, cols);
    for (float& v : m.data) v = normal(gen);
    StoredOperand st;
    st.recipe = parse_recipe("msfp4");
    st.q = reference::quantize(st.recipe, Role::x, m);
    st.source = {"x.npy", {rows, cols}, DType::f32, rows, cols};
    save_quantized(dir_, st);
    return st;
  }
  nlohmann::ordered_json layout() const {
    std::ifstream in(dir_ / file::layout);
    return nlohmann::ordered_json::parse(in);
  }
  void set_layout(const nlohmann::ordered_json& j) const {
    std::ofstream(dir_ / file::layout) << j.dump(2);
  }
  template <class F>
  static std::string error_of(F&& f, ErrorKind kind) {
    try {
      f();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
  }
  fs::path dir_;
};

// OCC at 0.99 over 64 columns clamps nothing: an empty residual list loads (and copies nothing).
TEST_F(StoredTest, EmptyResidualListLoads) {
  const StoredOperand st = save(8, 64);
  ASSERT_TRUE(st.q.residual_index.empty());
  const StoredOperand back = load_quantized(dir_);
  EXPECT_TRUE(back.q.residual_index.empty());
  EXPECT_EQ(back.q.codes, st.q.codes);
}

// Source rows x cols whose product overflows 64 bits is corrupt, not a wrapped product.
TEST_F(StoredTest, SourceSizesThatOverflowAreCorrupt) {
  save(8, 256);
  nlohmann::ordered_json j = layout();
  j["source"]["rows"] = std::int64_t{1} << 62;
  j["source"]["cols"] = 4;
  j["source"]["shape"] = {0};
  set_layout(j);
  const std::string what = error_of([&] { load_quantized(dir_); }, ErrorKind::corrupt);
  EXPECT_NE(what.find("source rows x cols"), std::string::npos) << what;
}

// A scales file of a dtype fp4jit never reads is a corrupt directory, naming what was expected.
TEST_F(StoredTest, ScalesOfAnotherDtypeAreCorrupt) {
  const StoredOperand st = save(8, 256);
  const std::vector<std::uint32_t> wide(st.q.scale_values.size(), 7u);
  std::vector<std::uint8_t> bytes = npy::encode(npy::Type::f32, {8, 1}, wide.data());
  const std::string f4 = "'<f4'", u4 = "'<u4'";
  const auto at = std::search(bytes.begin(), bytes.end(), f4.begin(), f4.end());
  ASSERT_NE(at, bytes.end());
  std::copy(u4.begin(), u4.end(), at);
  std::ofstream(dir_ / file::scales, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  const std::string what = error_of([&] { load_quantized(dir_); }, ErrorKind::corrupt);
  EXPECT_NE(what.find("expected a float32 array"), std::string::npos) << what;
}

}  // namespace
}  // namespace fp4jit::cli
