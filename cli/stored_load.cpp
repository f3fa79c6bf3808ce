// Loading a quantized operand directory: layout.json is checked against the recipe it names and
// against every file it lists, so a hand-edited or mixed-up directory fails with a clear error.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/npy.hpp"
#include "cli/stored.hpp"
#include "core/error.hpp"

namespace fp4jit::cli {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

// Typed access to layout.json fields by dotted path, with errors naming the file and the key.
class LayoutReader {
 public:
  LayoutReader(const fs::path& path, Json json) : file_(path.string()), json_(std::move(json)) {}

  const std::string& file() const { return file_; }

  const Json& at(std::string_view key) const {
    const Json* node = &json_;
    std::string_view rest = key;
    while (true) {
      const auto dot = rest.find('.');
      const std::string part(rest.substr(0, dot));
      if (!node->is_object() || !node->contains(part))
        fail(ErrorKind::corrupt, "{}: missing key '{}'", file_, key);
      node = &(*node)[part];
      if (dot == std::string_view::npos) return *node;
      rest = rest.substr(dot + 1);
    }
  }
  bool is_null(std::string_view key) const { return at(key).is_null(); }

  std::string str(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_string()) bad_type(key, "a string");
    return v.get<std::string>();
  }
  std::int64_t integer(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_number_integer()) bad_type(key, "an integer");
    return v.get<std::int64_t>();
  }
  std::uint64_t unsigned_integer(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_number_unsigned()) bad_type(key, "a non-negative integer");
    return v.get<std::uint64_t>();
  }
  double number(std::string_view key) const {
    const Json& v = at(key);
    if (!v.is_number()) bad_type(key, "a number");
    return v.get<double>();
  }
  std::vector<std::int64_t> shape(std::string_view key) const {
    const Json& v = at(key);
    std::vector<std::int64_t> out;
    if (!v.is_array()) bad_type(key, "an array of integers");
    for (const Json& d : v) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
        bad_type(key, "an array of integers");
      out.push_back(d.get<std::int64_t>());
    }
    return out;
  }
  // The field must read `want` (what the recipe implies).
  void expect(std::string_view key, std::string_view want) const {
    const std::string got = str(key);
    if (got != want)
      fail(ErrorKind::corrupt, "{}: '{}' is '{}' but the recipe implies '{}'", file_, key, got,
           want);
  }
  void expect(std::string_view key, std::int64_t want) const {
    const std::int64_t got = integer(key);
    if (got != want)
      fail(ErrorKind::corrupt, "{}: '{}' is {} but the recipe and source shape imply {}", file_,
           key, got, want);
  }

 private:
  [[noreturn]] void bad_type(std::string_view key, std::string_view what) const {
    fail(ErrorKind::corrupt, "{}: key '{}' must be {}", file_, key, what);
  }
  std::string file_;
  Json json_;
};

LayoutReader open_layout(const fs::path& dir) {
  const fs::path path = dir / file::layout;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail(ErrorKind::io, "{}: not a directory (expected the output directory of fp4jit quantize)",
         dir.string());
  std::ifstream in(path);
  if (!in)
    fail(ErrorKind::io, "{}: cannot open (not a directory written by fp4jit quantize?)",
         path.string());
  Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(ErrorKind::corrupt, "{}: not valid JSON", path.string());
  if (!j.is_object()) fail(ErrorKind::corrupt, "{}: not a JSON object", path.string());
  LayoutReader r(path, std::move(j));
  if (r.str("format") != kLayoutFormat)
    fail(ErrorKind::corrupt, "{}: 'format' is '{}', expected '{}'", r.file(), r.str("format"),
         kLayoutFormat);
  if (r.integer("version") != kLayoutVersion)
    fail(ErrorKind::corrupt, "{}: unknown layout format version {} (this fp4jit reads version {})",
         r.file(), r.integer("version"), kLayoutVersion);
  return r;
}

// Rethrows an error about the recipe or shapes as a problem of the layout file.
template <typename F>
auto in_layout(const LayoutReader& r, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    fail(ErrorKind::corrupt, "{}: {}", r.file(), e.what());
  }
}

SourceInfo read_source(const LayoutReader& r) {
  SourceInfo s;
  s.file = r.str("source.file");
  s.shape = r.shape("source.shape");
  s.dtype =
      in_layout(r, [&] { return parse_named(dtype_names(), r.str("source.dtype"), "dtype"); });
  s.rows = r.integer("source.rows");
  s.cols = r.integer("source.cols");
  std::int64_t count = 1;
  for (std::int64_t d : s.shape) {
    if (d > 0 && count > std::numeric_limits<std::int64_t>::max() / d) count = -1;
    if (count >= 0) count *= d;
  }
  std::int64_t elements = 0;
  if (s.rows <= 0 || s.cols <= 0 || __builtin_mul_overflow(s.rows, s.cols, &elements) ||
      count != elements)
    fail(ErrorKind::corrupt, "{}: source rows x cols = {} x {} does not match source shape {}",
         r.file(), s.rows, s.cols, shape_text(s.shape));
  return s;
}

void check_description(const LayoutReader& r, const Recipe& recipe, Role role,
                       const QuantLayout& l) {
  const OperandSpec& s = recipe[role];
  r.expect("operand.rows", l.rows);
  r.expect("operand.cols", l.cols);
  r.expect("elements.format", name(s.elem));
  r.expect("scales.format", name(s.scale));
  r.expect("scales.rule", name(s.rule));
  r.expect("scales.block", block_text(s.block));
  r.expect("elements.file", file::codes);
  r.expect("scales.file", file::scales);
  if (r.shape("elements.shape") != std::vector<std::int64_t>{l.rows, l.row_bytes})
    fail(ErrorKind::corrupt, "{}: 'elements.shape' is {} but the operand needs [{}, {}]", r.file(),
         shape_text(r.shape("elements.shape")), l.rows, l.row_bytes);
  if (r.shape("scales.shape") != std::vector<std::int64_t>{l.scale_rows, l.scale_cols})
    fail(ErrorKind::corrupt, "{}: 'scales.shape' is {} but the operand needs [{}, {}]", r.file(),
         shape_text(r.shape("scales.shape")), l.scale_rows, l.scale_cols);
  if (l.two_level == r.is_null("tensor_scale"))
    fail(ErrorKind::corrupt, "{}: 'tensor_scale' must be {} for scale rule {}", r.file(),
         l.two_level ? "present" : "null", name(s.rule));
  if (s.occ == r.is_null("occ"))
    fail(ErrorKind::corrupt, "{}: 'occ' must be {} for this recipe's operand {}", r.file(),
         s.occ ? "present" : "null", name(role));
}

void read_tensor_scale(const fs::path& dir, QuantizedTensor& q) {
  const npy::Array a = npy::read_expect(dir / file::tensor_scale, npy::Type::f32, {1});
  std::memcpy(&q.tensor_scale, a.bytes.data(), sizeof(float));
  if (!(q.tensor_scale > 0.0f) || !std::isfinite(q.tensor_scale))
    fail(ErrorKind::corrupt, "{}: the tensor scale {} is not a positive finite number",
         (dir / file::tensor_scale).string(), q.tensor_scale);
}

void read_residual(const LayoutReader& r, const fs::path& dir, QuantizedTensor& q) {
  const std::int64_t n = r.integer("occ.count");
  const npy::Array index = npy::read_expect(dir / file::residual_index, npy::Type::i64, {n});
  const npy::Array value = npy::read_expect(dir / file::residual_value, npy::Type::f32, {n});
  q.residual_index.resize(n);
  q.residual_value.resize(n);
  if (n > 0) {  // an empty list has no storage to copy from
    std::memcpy(q.residual_index.data(), index.bytes.data(), n * sizeof(std::int64_t));
    std::memcpy(q.residual_value.data(), value.bytes.data(), n * sizeof(float));
  }
  const std::int64_t size = q.layout.rows * q.layout.cols;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t at = q.residual_index[i];
    if (at < 0 || at >= size || (i > 0 && at <= q.residual_index[i - 1]))
      fail(ErrorKind::corrupt,
           "{}: entry {} is {}: positions must increase strictly and lie in [0, {})",
           (dir / file::residual_index).string(), i, at, size);
  }
}

void read_arrays(const LayoutReader& r, const fs::path& dir, const OperandSpec& s,
                 QuantizedTensor& q) {
  const QuantLayout& l = q.layout;
  q.codes = npy::read_expect(dir / file::codes, npy::Type::u8, {l.rows, l.row_bytes}).bytes;
  const npy::Type scale_type = l.scale_is_code ? npy::Type::u8 : npy::Type::f32;
  npy::Array scales =
      npy::read_expect(dir / file::scales, scale_type, {l.scale_rows, l.scale_cols});
  if (l.scale_is_code) {
    q.scale_codes = std::move(scales.bytes);
  } else {
    q.scale_values.resize(l.scale_count());
    std::memcpy(q.scale_values.data(), scales.bytes.data(), l.scale_count() * sizeof(float));
  }
  if (l.two_level) read_tensor_scale(dir, q);
  if (s.occ) read_residual(r, dir, q);
}

}  // namespace

StoredOperand load_quantized(const fs::path& dir) {
  const LayoutReader r = open_layout(dir);
  StoredOperand st;
  st.recipe = in_layout(r, [&] { return parse_recipe(r.str("recipe")); });
  QuantizedTensor& q = st.q;
  q.recipe = canonical(st.recipe);
  q.role = in_layout(r, [&] { return parse_named(role_names(), r.str("role"), "role"); });
  st.source = read_source(r);
  q.layout =
      in_layout(r, [&] { return quant_layout(st.recipe, q.role, st.source.rows, st.source.cols); });
  check_description(r, st.recipe, q.role, q.layout);
  q.amax = static_cast<float>(r.number("amax"));
  q.seed = r.unsigned_integer("rounding.seed");
  q.offset = r.unsigned_integer("rounding.offset");
  read_arrays(r, dir, st.recipe[q.role], q);
  return st;
}

}  // namespace fp4jit::cli
