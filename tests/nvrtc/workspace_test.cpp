// The workspace pool's release threshold from FP4JIT_WORKSPACE_KEEP_MB (no GPU needed).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/error.hpp"
#include "runtime/cuda/workspace.hpp"

namespace fp4jit::cuda {
namespace {

constexpr std::uint64_t kAll = std::numeric_limits<std::uint64_t>::max();

TEST(WorkspaceKeep, UnsetOrEmptyKeepsEverything) {
  EXPECT_EQ(workspace_keep_bytes(nullptr), kAll);
  EXPECT_EQ(workspace_keep_bytes(""), kAll);
}

TEST(WorkspaceKeep, MebibytesToBytes) {
  EXPECT_EQ(workspace_keep_bytes("0"), 0u);
  EXPECT_EQ(workspace_keep_bytes("1"), std::uint64_t{1} << 20);
  EXPECT_EQ(workspace_keep_bytes("4096"), std::uint64_t{4096} << 20);
  EXPECT_EQ(workspace_keep_bytes("99999999999999999"), kAll);  // saturates, never wraps
}

TEST(WorkspaceKeep, BadValuesNameTheVariable) {
  for (const char* bad : {"-1", "12x", "1.5", " 3", "lots", "18446744073709551616"}) {
    try {
      workspace_keep_bytes(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << bad;
      EXPECT_NE(std::string(e.what()).find("FP4JIT_WORKSPACE_KEEP_MB"), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace fp4jit::cuda
