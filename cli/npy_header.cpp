// The .npy header dictionary: a small parser for the Python literal NumPy writes, the dtype
// descriptors fp4jit accepts, and the header text it writes.
#include <cctype>
#include <charconv>

#include "cli/npy.hpp"
#include "core/error.hpp"

namespace fp4jit::npy {

namespace {

// A Python literal value of the kinds a header can hold.
struct Value {
  enum class Kind { string, boolean, none, integer, sequence, dict };
  Kind kind = Kind::none;
  std::string text;   // string
  bool flag = false;  // boolean
  std::int64_t integer = 0;
  std::vector<Value> items;  // sequence (tuple or list)
};

std::string_view kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::string:
      return "a string";
    case Value::Kind::boolean:
      return "a boolean";
    case Value::Kind::none:
      return "None";
    case Value::Kind::integer:
      return "an integer";
    case Value::Kind::sequence:
      return "a tuple or list";
    case Value::Kind::dict:
      return "a dict";
  }
  return "?";
}

// Text from a file, safe to print: printable ASCII as is, other bytes as \xNN.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out += u >= 0x20 && u < 0x7F ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  Header parse() {
    skip_space();
    expect('{');
    Header h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const Value key = value();
      if (key.kind != Value::Kind::string) error("a dict key must be a string");
      skip_space();
      expect(':');
      const Value v = value();
      if (key.text == "descr") {
        seen_descr = set_descr(h, v, seen_descr);
      } else if (key.text == "fortran_order") {
        seen_fortran = set_fortran(h, v, seen_fortran);
      } else if (key.text == "shape") {
        seen_shape = set_shape(h, v, seen_shape);
      } else {
        error(fmt::format("unexpected key '{}' (an .npy header holds descr, fortran_order, shape)",
                          key.text));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') error("expected ',' or '}'");
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the header dictionary");
    if (!seen_descr || !seen_fortran || !seen_shape)
      error(fmt::format("missing key{}{}{}", seen_descr ? "" : " 'descr'",
                        seen_fortran ? "" : " 'fortran_order'", seen_shape ? "" : " 'shape'"));
    return h;
  }

 private:
  [[noreturn]] void error(std::string_view what) const {
    fail(ErrorKind::corrupt, "{}: malformed .npy header at character {}: {} (header: {})", file_,
         pos_, printable(what), printable(text_.substr(0, 200)));
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) error(fmt::format("expected '{}'", c));
    ++pos_;
  }

  Value value() {
    if (++depth_ > 16) error("nesting too deep");
    skip_space();
    Value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = Value::Kind::string;
      v.text = string_literal();
    } else if (c == '(' || c == '[') {
      v.kind = Value::Kind::sequence;
      v.items = sequence(c == '(' ? ')' : ']');
    } else if (c == '{') {
      skip_dict();
      v.kind = Value::Kind::dict;
    } else if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) {
      v.kind = Value::Kind::integer;
      v.integer = integer();
    } else {
      v = word();
    }
    --depth_;
    return v;
  }

  std::string string_literal() {
    const char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') error("escape sequences are not supported in header strings");
      out += text_[pos_++];
    }
    if (pos_ >= text_.size()) error("unterminated string");
    ++pos_;
    return out;
  }

  std::vector<Value> sequence(char close) {
    ++pos_;
    std::vector<Value> items;
    while (true) {
      skip_space();
      if (peek() == close) break;
      items.push_back(value());
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != close) error(fmt::format("expected ',' or '{}'", close));
    }
    ++pos_;
    return items;
  }

  void skip_dict() {  // nested dicts only appear in dtype metadata, which fp4jit rejects anyway
    int level = 0;
    do {
      const char c = peek();
      if (c == '\0') error("unterminated dict");
      if (c == '{') ++level;
      if (c == '}') --level;
      ++pos_;
    } while (level > 0);
  }

  std::int64_t integer() {
    const std::size_t start = pos_;
    if (peek() == '+' || peek() == '-') ++pos_;
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    std::string_view digits = text_.substr(start, pos_ - start);
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    std::int64_t n = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) error("bad integer");
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long literal, in old files
    return n;
  }

  Value word() {
    std::size_t end = pos_;
    while (end < text_.size() && std::isalpha(static_cast<unsigned char>(text_[end]))) ++end;
    const std::string_view w = text_.substr(pos_, end - pos_);
    Value v;
    if (w == "True" || w == "False") {
      v.kind = Value::Kind::boolean;
      v.flag = w == "True";
    } else if (w == "None") {
      v.kind = Value::Kind::none;
    } else {
      error("expected a string, number, tuple, True, False or None");
    }
    pos_ = end;
    return v;
  }

  bool set_descr(Header& h, const Value& v, bool seen) {
    if (seen) error("duplicate key 'descr'");
    if (v.kind == Value::Kind::sequence)
      fail(ErrorKind::invalid_argument,
           "{}: structured dtypes are not supported (fp4jit reads float32, float16 and bfloat16 "
           "arrays)",
           file_);
    if (v.kind != Value::Kind::string)
      error(fmt::format("'descr' must be a string, not {}", kind_name(v.kind)));
    h.descr = v.text;
    return true;
  }

  bool set_fortran(Header& h, const Value& v, bool seen) {
    if (seen) error("duplicate key 'fortran_order'");
    if (v.kind != Value::Kind::boolean)
      error(fmt::format("'fortran_order' must be True or False, not {}", kind_name(v.kind)));
    h.fortran_order = v.flag;
    return true;
  }

  bool set_shape(Header& h, const Value& v, bool seen) {
    if (seen) error("duplicate key 'shape'");
    if (v.kind != Value::Kind::sequence)
      error(fmt::format("'shape' must be a tuple, not {}", kind_name(v.kind)));
    h.shape.clear();
    for (const Value& d : v.items) {
      if (d.kind != Value::Kind::integer || d.integer < 0)
        error("'shape' must hold non-negative integers");
      h.shape.push_back(d.integer);
    }
    return true;
  }

  std::string_view text_;
  const std::string& file_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

// A readable name for a NumPy type code such as "i4" or "f8".
std::string numpy_type_name(std::string_view code) {
  if (code.size() < 2) return std::string(code);
  int size = 0;
  const auto [ptr, ec] = std::from_chars(code.data() + 1, code.data() + code.size(), size);
  if (ec != std::errc() || ptr != code.data() + code.size()) return std::string(code);
  const std::int64_t bits = static_cast<std::int64_t>(size) * 8;  // '<f2147483647' is a descr too
  switch (code[0]) {
    case 'f':
      return fmt::format("float{}", bits);
    case 'i':
      return fmt::format("int{}", bits);
    case 'u':
      return fmt::format("uint{}", bits);
    case 'c':
      return fmt::format("complex{}", bits);
    case 'b':
      return "bool";
    case 'V':
      return fmt::format("raw {}-byte void", size);
    case 'S':
      return "bytes";
    case 'U':
      return "unicode string";
    case 'O':
      return "Python object";
    case 'M':
      return "datetime64";
    case 'm':
      return "timedelta64";
  }
  return std::string(code);
}

}  // namespace

std::string_view type_name(Type t) {
  switch (t) {
    case Type::f32:
      return "float32";
    case Type::f16:
      return "float16";
    case Type::bf16:
      return "bfloat16";
    case Type::u8:
      return "uint8";
    case Type::i64:
      return "int64";
  }
  return "?";
}

int type_size(Type t) {
  switch (t) {
    case Type::f32:
      return 4;
    case Type::f16:
    case Type::bf16:
      return 2;
    case Type::u8:
      return 1;
    case Type::i64:
      return 8;
  }
  return 0;
}

std::string_view type_descr(Type t) {
  switch (t) {
    case Type::f32:
      return "<f4";
    case Type::f16:
      return "<f2";
    case Type::bf16:
      return "<V2";
    case Type::u8:
      return "|u1";
    case Type::i64:
      return "<i8";
  }
  return "?";
}

Header parse_header(std::string_view text, const std::string& file) {
  return Parser(text, file).parse();
}

std::optional<Type> descr_type(std::string_view descr) {
  if (descr == "bfloat16") return Type::bf16;  // ml_dtypes' name, as some writers record it
  if (descr.size() < 2 ||
      (descr[0] != '<' && descr[0] != '>' && descr[0] != '|' && descr[0] != '='))
    return std::nullopt;
  const char order = descr[0];
  const std::string_view code = descr.substr(1);
  if (code == "u1") return Type::u8;  // a single byte has no byte order
  const bool little = order == '<' || order == '=';
  if (little && code == "f4") return Type::f32;
  if (little && code == "f2") return Type::f16;
  if (little && code == "i8") return Type::i64;
  if ((little || order == '|') && code == "V2") return Type::bf16;
  return std::nullopt;
}

Type parse_descr(std::string_view descr, const std::string& file) {
  if (const std::optional<Type> t = descr_type(descr)) return *t;
  const std::string shown = printable(descr);
  if (descr.size() >= 2 &&
      (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '=')) {
    const char order = descr[0];
    const std::string_view code = descr.substr(1);
    if (order == '>')
      fail(ErrorKind::invalid_argument,
           "{}: big-endian dtype '{}' ({}) is not supported; save it little-endian, e.g. "
           "a.astype(a.dtype.newbyteorder('<'))",
           file, shown, printable(numpy_type_name(code)));
    fail(ErrorKind::invalid_argument,
         "{}: unsupported dtype '{}' ({}); fp4jit reads float32 '<f4', float16 '<f2' and "
         "bfloat16 ('<V2' as np.save writes ml_dtypes.bfloat16)",
         file, shown, printable(numpy_type_name(code)));
  }
  fail(ErrorKind::invalid_argument,
       "{}: unsupported dtype '{}'; fp4jit reads float32 '<f4', float16 '<f2' and bfloat16", file,
       shown);
}

std::string header_text(Type type, const std::vector<std::int64_t>& shape) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += fmt::format("{}, ", shape[i]);
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (2, 3); a 1-tuple keeps its comma: (5,)
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  return fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", type_descr(type),
                     dims);
}

}  // namespace fp4jit::npy
