// QuantizeTuning (plan.hpp): a tuned quantize config as stored text, and back.
#include <cstdio>
#include <string_view>

#include "core/error.hpp"
#include "runtime/cuda/plan.hpp"

namespace fp4jit::cuda {

std::string QuantizeTuning::text() const {
  if (rows) return "rows:" + rows->text();
  if (tile) return "tile:" + tile->text();
  return "";
}

QuantizeTuning parse_quantize_tuning(const std::string& text) {
  const auto bad = [&](std::string_view why) {
    fail(ErrorKind::invalid_argument, "quantize config '{}': {}", text, why);
  };
  const auto colon = text.find(':');
  if (colon == std::string::npos) bad("expected rows:... or tile:...");
  const std::string kind = text.substr(0, colon);
  int threads = 0, a = 0, b = 0;
  char tail = 0;
  QuantizeTuning t;
  const std::string rest = text.substr(colon + 1);
  if (kind == "rows") {
    int minb = 0;
    const int n =
        std::sscanf(rest.c_str(), "threads=%d,unroll=%d,minb=%d%c", &threads, &a, &minb, &tail);
    if (n != 2 && n != 3) bad("expected rows:threads=N,unroll=N[,minb=N]");
    t.rows = codegen::RowsConfig{threads, a, minb};
    t.rows->validate();
  } else if (kind == "tile") {
    int minb = 0;
    const int n = std::sscanf(rest.c_str(), "threads=%d,tile=%dx%d,minb=%d%c", &threads, &a, &b,
                              &minb, &tail);
    if (n != 3 && n != 4) bad("expected tile:threads=N,tile=RxC[,minb=N]");
    t.tile = codegen::TileConfig{threads, a, b, minb};
  } else {
    bad("the kernel must be rows or tile");
  }
  if (t.text() != text) bad("not in canonical form");
  return t;
}

}  // namespace fp4jit::cuda
