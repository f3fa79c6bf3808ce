// The GPU tests' engine: CUDA on device 0, made once per process; REQUIRE_GPU() skips a test
// where there is no GPU and names the engine `engine`.
#pragma once
#include <gtest/gtest.h>

#include <memory>

#include "runtime/backend.hpp"
#include "runtime/cuda/device_memory.hpp"

namespace fp4jit::test {

class Gpu {
 public:
  static Gpu* get() {
    static std::unique_ptr<Gpu> gpu = [] {
      return cuda_available() ? std::make_unique<Gpu>() : std::unique_ptr<Gpu>();
    }();
    return gpu.get();
  }
  Gpu()
      : scope(0), engine([] {
          EngineOptions o;
          o.backend = BackendKind::cuda;
          return o;
        }()) {}
  cuda::DeviceScope scope;
  Engine engine;
};

#define REQUIRE_GPU()                                       \
  if (Gpu::get() == nullptr) GTEST_SKIP() << "no GPU here"; \
  Engine& engine = Gpu::get()->engine

}  // namespace fp4jit::test
