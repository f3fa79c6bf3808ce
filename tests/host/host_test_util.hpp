// What the host backend tests share: the inputs and comparisons of host_test_data.hpp, and one
// HostBackend per config.
#pragma once
#include <string>

#include "runtime/host/host_backend.hpp"
#include "tests/host/host_test_data.hpp"

namespace fp4jit::host::test {

// One HostBackend per process and config text, without a persistent cache.
HostBackend& backend(const std::string& config = "");

}  // namespace fp4jit::host::test
