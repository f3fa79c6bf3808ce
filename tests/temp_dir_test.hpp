// Test fixtures shared by the test binaries: a fresh folder per test (removed after it), and one
// that also collects the warnings fp4jit logs during the test; `sql` runs a statement on a SQLite
// file (to tamper with a cache behind its back); `in_processes` runs a function in several
// processes at once.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
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
  // The folder is <temp>/<prefix>-<pid>-<test name> (a parameterized test's '/' as '_': one
  // folder, removed whole).
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name)
      if (c == '/') c = '_';
    dir_ =
        std::filesystem::temp_directory_path() / fmt::format("{}-{}-{}", prefix_, getpid(), name);
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

// Runs child(p) in `processes` forked processes at once (p = 0, 1, ...); each must return 0, the
// number of its operations that failed. In the children fp4jit's log goes to stderr (a child may
// set its own sink).
template <class Child>
void in_processes(int processes, Child child) {
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      set_log_sink([](LogLevel, std::string_view m) { fmt::print(stderr, "child: {}\n", m); });
      const int failures = child(p);
      if (failures != 0) fmt::print(stderr, "child {}: {} failed operations\n", p, failures);
      _exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child process failed";
  }
}

}  // namespace fp4jit::test_util
