// Quantized-operand directories as `fp4jit dequantize` reads them: a layout.json of any text, and
// optionally one of its .npy files replaced by any bytes, is loaded or refused with Error(corrupt)
// or Error(io); a loaded operand is consistent enough for the reference to dequantize it (every
// array the size its layout says), into the source shape it names.
//
// Input: byte 0 picks one of the seed operands (every preset's x, w and dyt: per-block, 2D,
// two-level, OCC and transposed layouts), byte 1 % 8 picks a file to replace (0: none), then the
// layout.json text, then, after a NUL, the replacement file's bytes.
#include <cstring>
#include <random>

#include "cli/stored.hpp"
#include "reference/reference.hpp"
#include "tests/fuzz/fuzz.hpp"

namespace fs = std::filesystem;
using fp4jit::ErrorKind;

namespace {

struct Seed {
  fs::path dir;   // the operand as saved, never changed
  fs::path work;  // the copy each input is loaded from
  std::vector<std::uint8_t> layout;
};

const char* const kFiles[] = {fp4jit::cli::file::codes,          fp4jit::cli::file::scales,
                              fp4jit::cli::file::tensor_scale,   fp4jit::cli::file::residual_index,
                              fp4jit::cli::file::residual_value, fp4jit::cli::file::layout,
                              fp4jit::cli::file::codes};

const std::vector<Seed>& seeds() {
  static const std::vector<Seed> all = [] {
    std::vector<Seed> out;
    std::mt19937 gen(7);
    std::normal_distribution<float> normal;
    int i = 0;
    for (const fp4jit::Preset& p : fp4jit::presets()) {
      const fp4jit::Recipe recipe = p.make();
      for (fp4jit::Role role : {fp4jit::Role::x, fp4jit::Role::w, fp4jit::Role::dyt}) {
        fp4jit::Matrix<float> m(32, 256);  // OCC at 0.99 keeps 2 values a row aside
        for (float& v : m.data) v = normal(gen);
        m(3, 5) = 40.0f;  // an outlier: OCC operands get residual entries
        fp4jit::cli::StoredOperand st;
        st.recipe = recipe;
        st.q = fp4jit::reference::quantize(recipe, role, m);
        st.source = {"x.npy", {m.rows, m.cols}, fp4jit::DType::f32, m.rows, m.cols};
        Seed s;
        s.dir = fp4jit::fuzz::scratch_dir() / ("seed-" + std::to_string(i));
        s.work = fp4jit::fuzz::scratch_dir() / ("work-" + std::to_string(i++));
        fp4jit::cli::save_quantized(s.dir, st);
        fs::copy(s.dir, s.work);
        s.layout = fp4jit::fuzz::read_file(s.dir / fp4jit::cli::file::layout);
        out.push_back(std::move(s));
      }
    }
    return out;
  }();
  return all;
}

// The work copy of seed s as saved (a file an earlier input added is removed: every input runs
// as it would alone).
void restore(const Seed& s) {
  std::vector<fs::path> added;
  for (const auto& e : fs::directory_iterator(s.work))
    if (!fs::exists(s.dir / e.path().filename())) added.push_back(e.path());
  for (const fs::path& p : added) fs::remove(p);
  for (const auto& e : fs::directory_iterator(s.dir))
    fs::copy_file(e.path(), s.work / e.path().filename(), fs::copy_options::overwrite_existing);
}

}  // namespace

std::vector<std::vector<std::uint8_t>> fp4jit_fuzz_seeds() {
  std::vector<std::vector<std::uint8_t>> out;
  const std::vector<Seed>& all = seeds();
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::vector<std::uint8_t> in = {static_cast<std::uint8_t>(i), 0};
    in.insert(in.end(), all[i].layout.begin(), all[i].layout.end());
    out.push_back(in);
    // the same layout with the scales replaced by the codes' file (a valid .npy, wrong shape)
    in[1] = 2;
    in.push_back(0);
    const auto codes = fp4jit::fuzz::read_file(all[i].dir / fp4jit::cli::file::codes);
    in.insert(in.end(), codes.begin(), codes.end());
    out.push_back(in);
  }
  return out;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<Seed>& all = seeds();
  fp4jit::fuzz::Input in(data, size);
  const Seed& s = all[in.below(all.size())];
  const int replace = in.byte() % 8;
  const std::string_view rest = in.rest_text();
  const std::size_t nul = replace != 0 ? rest.find('\0') : std::string_view::npos;
  const std::string_view layout = rest.substr(0, nul);
  restore(s);
  fp4jit::fuzz::write_file(s.work / fp4jit::cli::file::layout,
                           reinterpret_cast<const std::uint8_t*>(layout.data()), layout.size());
  if (nul != std::string_view::npos) {
    const std::string_view file = rest.substr(nul + 1);
    fp4jit::fuzz::write_file(s.work / kFiles[replace - 1],
                             reinterpret_cast<const std::uint8_t*>(file.data()), file.size());
  }
  fp4jit::cli::StoredOperand st;
  if (!fp4jit::fuzz::accepts([&] { st = fp4jit::cli::load_quantized(s.work); },
                             {ErrorKind::corrupt, ErrorKind::io}, "load_quantized"))
    return 0;
  const fp4jit::QuantLayout& l = st.q.layout;
  FUZZ_CHECK(static_cast<std::int64_t>(st.q.codes.size()) == l.code_bytes(),
             "loaded codes do not fill the layout");
  FUZZ_CHECK(
      static_cast<std::int64_t>(l.scale_is_code ? st.q.scale_codes.size()
                                                : st.q.scale_values.size()) == l.scale_count(),
      "loaded scales do not fill the layout");
  FUZZ_CHECK(st.q.residual_index.size() == st.q.residual_value.size(),
             "residual positions and values differ in number");
  fp4jit::Matrix<double> y;
  if (!fp4jit::fuzz::accepts(
          [&] { y = fp4jit::reference::dequantize_source(st.recipe, st.q, true); }, {},
          "dequantizing a loaded operand"))
    return 0;
  FUZZ_CHECK(y.rows == st.source.rows && y.cols == st.source.cols,
             "the dequantized tensor is not the source's shape");
  return 0;
}
