#include "codegen/host/host_config.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/text.hpp"

namespace fp4jit::host {

std::string HostConfig::text() const {
  return fmt::format("vw={},band={},unroll={}", vector_width, band_rows, unroll);
}

std::string HostConfig::gemm_text() const {
  return fmt::format("vw={},mr={},nr={},kc={},mc={}", vector_width, gemm_mr, gemm_nr, gemm_kc,
                     gemm_mc);
}

std::string HostConfig::gemm_tuned_text() const {
  return gemm_np == 0 ? gemm_text() : fmt::format("{},np={}", gemm_text(), gemm_np);
}

void HostConfig::validate() const {
  const auto bad = [&](const char* what) {
    fail(ErrorKind::invalid_argument, "host config {} ({}): {}", text() + "," + gemm_text(),
         threads, what);
  };
  if (vector_width != 4 && vector_width != 8 && vector_width != 16 && vector_width != 32)
    bad("vw must be 4, 8, 16 or 32");
  if (band_rows < 1 || band_rows > 256) bad("band must lie in 1..256");
  if (unroll < 1 || unroll > 16) bad("unroll must lie in 1..16");
  if (gemm_mr < 1 || gemm_mr > 16) bad("mr must lie in 1..16");
  if (gemm_nr < vector_width || gemm_nr % vector_width != 0 || gemm_nr / vector_width > 8)
    bad("nr must be 1..8 vectors of vw lanes");
  if (gemm_kc < 1 || gemm_kc > 4096) bad("kc must lie in 1..4096");
  if (gemm_mc < gemm_mr || gemm_mc % gemm_mr != 0) bad("mc must be a multiple of mr");
  if (gemm_np < 0 || gemm_np > 64) bad("np must lie in 0..64");
  if (threads < 0) bad("threads must be >= 0");
}

HostConfig parse_host_config(const std::string& text, HostConfig c) {
  for (const std::string_view item : split(text)) {
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      fail(ErrorKind::invalid_argument, "host config '{}': '{}' is not key=value", text, item);
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    int v = 0;
    if (!parse_number(value, &v))
      fail(ErrorKind::invalid_argument, "host config '{}': '{}' is not an integer", text, value);
    if (key == "vw")
      c.vector_width = v;
    else if (key == "band")
      c.band_rows = v;
    else if (key == "unroll")
      c.unroll = v;
    else if (key == "mr")
      c.gemm_mr = v;
    else if (key == "nr")
      c.gemm_nr = v;
    else if (key == "kc")
      c.gemm_kc = v;
    else if (key == "mc")
      c.gemm_mc = v;
    else if (key == "np")
      c.gemm_np = v;
    else if (key == "threads")
      c.threads = v;
    else
      fail(ErrorKind::invalid_argument,
           "host config '{}': unknown key '{}' (valid: vw, band, unroll, mr, nr, kc, mc, np, "
           "threads)",
           text, key);
  }
  c.validate();
  return c;
}

}  // namespace fp4jit::host
