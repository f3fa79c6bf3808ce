#include "tests/host/host_test_util.hpp"

#include <map>
#include <memory>

namespace fp4jit::host::test {

HostBackend& backend(const std::string& config) {
  static std::map<std::string, std::unique_ptr<HostBackend>> backends;
  auto& slot = backends[config];
  if (!slot) {
    HostBackendOptions o;
    if (!config.empty()) {
      o.use_default_config = false;
      o.config = parse_host_config(config, default_host_config(detect_host_target()));
    }
    slot = std::make_unique<HostBackend>(o);
  }
  return *slot;
}

}  // namespace fp4jit::host::test
