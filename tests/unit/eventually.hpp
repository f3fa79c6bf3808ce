// For tests of concurrent code: waiting for a condition another thread makes true.
#pragma once
#include <chrono>
#include <thread>

namespace fp4jit::test_util {

// Polls pred() every millisecond until it holds (true) or 20 s have passed (false).
template <class Pred>
bool eventually(Pred pred) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace fp4jit::test_util
