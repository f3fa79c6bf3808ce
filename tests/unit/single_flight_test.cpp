// SingleFlight (runtime/single_flight.hpp): callers of one key at once share one computation and
// its exception; other keys are not held up; a later call computes again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/single_flight.hpp"
#include "tests/unit/eventually.hpp"

namespace fp4jit {
namespace {

using fp4jit::test_util::eventually;

TEST(SingleFlight, CallersOfOneKeyAtOnceShareOneComputation) {
  SingleFlight<std::string, int> flights;
  constexpr int kCallers = 4;
  std::atomic<int> computed{0}, leaders{0};
  std::vector<int> values(kCallers, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kCallers; ++t)
    threads.emplace_back([&, t] {
      const auto r = flights.run("k", [&] {
        ++computed;
        // Every caller joins this computation before it ends.
        EXPECT_TRUE(eventually([&] { return flights.callers("k") == kCallers; }));
        return 42;
      });
      values[static_cast<std::size_t>(t)] = r.value;
      if (!r.shared) ++leaders;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(computed.load(), 1);
  EXPECT_EQ(leaders.load(), 1);
  for (int v : values) EXPECT_EQ(v, 42);
  EXPECT_EQ(flights.callers("k"), 0);
  // Finished: the next call computes again.
  EXPECT_FALSE(flights.run("k", [] { return 7; }).shared);
  EXPECT_EQ(flights.run("k", [] { return 7; }).value, 7);
}

TEST(SingleFlight, EveryCallerGetsTheException) {
  SingleFlight<std::string, int> flights;
  std::atomic<int> thrown{0};
  std::thread follower;
  EXPECT_THROW(flights.run("k",
                           [&]() -> int {
                             follower = std::thread([&] {
                               try {
                                 flights.run("k", [] { return 1; });
                               } catch (const std::runtime_error&) {
                                 ++thrown;
                               }
                             });
                             EXPECT_TRUE(eventually([&] { return flights.callers("k") == 2; }));
                             throw std::runtime_error("compile failed");
                           }),
               std::runtime_error);
  follower.join();
  EXPECT_EQ(thrown.load(), 1);
  EXPECT_EQ(flights.run("k", [] { return 3; }).value, 3);  // a failure is not remembered
}

TEST(SingleFlight, OtherKeysAreNotHeldUp) {
  SingleFlight<std::string, int> flights;
  std::thread b([&] {
    flights.run("b", [&] {
      EXPECT_TRUE(eventually([&] { return flights.callers("a") == 1; }));
      return 2;
    });
  });
  // "a" runs while "b" is in flight, and "b" waits to see "a" in flight.
  EXPECT_TRUE(eventually([&] { return flights.callers("b") == 1; }));
  const auto r = flights.run("a", [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return 1;
  });
  b.join();
  EXPECT_EQ(r.value, 1);
  EXPECT_FALSE(r.shared);
}

}  // namespace
}  // namespace fp4jit
