// What the emulator's quantize tests share: a device description with few SMs (grid-stride loops
// run several rounds) and the execution of a plan on the emulator with poisoned scratch.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/cuda/plan.hpp"
#include "tests/emu/emulator.hpp"
#include "tests/gpu/quant_check.hpp"

namespace fp4jit::test {

inline const cuda::DeviceInfo kDevice{"sm_90a", 3};

// Plans once to count the scratch, then runs the plan with scratch filled with kPoison.
inline void run(const std::function<cuda::Plan(cuda::Arena&)>& make) {
  cuda::Arena counting;
  make(counting);
  std::vector<std::uint8_t> scratch(static_cast<std::size_t>(counting.used()) + 256, kPoison);
  const auto base = (reinterpret_cast<std::uintptr_t>(scratch.data()) + 255) & ~std::uintptr_t{255};
  cuda::Arena arena(base);
  emu::execute(make(arena));
}

inline std::int64_t round_up(std::int64_t v, std::int64_t m) {
  return (v + m - 1) / m * m;
}

}  // namespace fp4jit::test
