// Test fixtures shared by the test binaries: a fresh folder per test (removed after it), and one
// that also collects the warnings fp4jit logs during the test; `sql` runs a statement on a SQLite
// file (to tamper with a cache behind its back).
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/log.hpp"

namespace fp4jit::test_util {

class TempDirTest : public ::testing::Test {
 protected:
  // The folder is <temp>/<prefix>-<pid>-<test name>.
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("{}-{}-{}", prefix_, getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

// TempDirTest with the warnings logged during the test in warnings_.
class WarningsTest : public TempDirTest {
 protected:
  using TempDirTest::TempDirTest;
  void SetUp() override {
    TempDirTest::SetUp();
    previous_ = set_log_sink([this](LogLevel level, std::string_view m) {
      if (level == LogLevel::warning) warnings_.emplace_back(m);
    });
  }
  void TearDown() override {
    set_log_sink(previous_);
    TempDirTest::TearDown();
  }

  std::vector<std::string> warnings_;

 private:
  LogSink previous_;
};

inline void sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err);
  const std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

}  // namespace fp4jit::test_util
