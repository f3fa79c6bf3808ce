// Saving and loading a quantized operand directory (layout.json + .npy files).
#include "cli/stored.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/npy.hpp"
#include "core/error.hpp"

namespace fp4jit::cli {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

void prepare_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    fail(ErrorKind::io, "{}: exists and is not a directory", dir.string());
  fs::create_directories(dir, ec);
  if (ec) fail(ErrorKind::io, "{}: cannot create the directory: {}", dir.string(), ec.message());
}

void remove_own(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) fail(ErrorKind::io, "{}: cannot remove the stale file: {}", path.string(), ec.message());
}

Json shape_json(std::int64_t a, std::int64_t b) {
  return Json::array({a, b});
}

Json layout_json(const StoredOperand& st, const std::vector<std::string>& files) {
  const Recipe& recipe = st.recipe;
  const QuantizedTensor& q = st.q;
  const OperandSpec& s = recipe[q.role];
  const QuantLayout& l = q.layout;
  Json j;
  j["format"] = kLayoutFormat;
  j["version"] = kLayoutVersion;
  j["recipe"] = q.recipe;
  j["recipe_sha256"] = recipe_hash(recipe);
  j["role"] = std::string(name(q.role));
  j["gemm"] = std::string(role_info(q.role).gemm);
  j["description"] = std::string(role_info(q.role).description);
  j["source"] = {{"file", st.source.file},
                 {"shape", st.source.shape},
                 {"dtype", std::string(name(st.source.dtype))},
                 {"rows", st.source.rows},
                 {"cols", st.source.cols}};
  j["operand"] = {{"rows", l.rows},
                  {"cols", l.cols},
                  {"transposed", role_info(q.role).transposed},
                  {"values", std::string(name_of(source_names(), s.src))}};
  j["elements"] = {
      {"format", std::string(name(s.elem))},
      {"bits", bits(s.elem)},
      {"packing",
       s.elem == ElemFormat::e2m1 ? "two per byte, element 2i in the low nibble" : "one per byte"},
      {"file", file::codes},
      {"dtype", "uint8"},
      {"shape", shape_json(l.rows, l.row_bytes)}};
  j["scales"] = {{"format", std::string(name(s.scale))},
                 {"rule", std::string(name(s.rule))},
                 {"block", block_text(s.block)},
                 {"file", file::scales},
                 {"dtype", l.scale_is_code ? "uint8" : "float32"},
                 {"shape", shape_json(l.scale_rows, l.scale_cols)}};
  if (s.scale == ScaleFormat::ue5m3)
    j["scales"]["ue5m3_max"] = std::string(name_of(ue5m3_variant_names(), recipe.ue5m3));
  j["tensor_scale"] =
      l.two_level ? Json{{"file", file::tensor_scale}, {"value", q.tensor_scale}} : Json(nullptr);
  j["amax"] = q.amax;
  j["rounding"] = {{"mode", std::string(name(s.round))},
                   {"sr_bits", s.sr_bits},
                   {"seed", q.seed},
                   {"offset", q.offset}};
  j["hadamard"] =
      s.had.size == 0
          ? Json(nullptr)
          : Json{{"size", s.had.size}, {"signs", hadamard_signs_text(s.had)}, {"seed", s.had.seed}};
  j["occ"] = !s.occ ? Json(nullptr)
                    : Json{{"alpha", recipe.occ_alpha},
                           {"count", q.residual_index.size()},
                           {"index_file", file::residual_index},
                           {"value_file", file::residual_value}};
  j["files"] = files;
  return j;
}

}  // namespace

std::vector<fs::path> save_quantized(const fs::path& dir, const StoredOperand& st) {
  prepare_dir(dir);
  remove_own(dir / file::layout);  // a directory with a layout.json is complete
  const QuantizedTensor& q = st.q;
  const QuantLayout& l = q.layout;
  const OperandSpec& s = st.recipe[q.role];
  std::vector<std::string> names{file::codes, file::scales};
  npy::write_u8(dir / file::codes, {l.rows, l.row_bytes}, q.codes);
  if (l.scale_is_code)
    npy::write_u8(dir / file::scales, {l.scale_rows, l.scale_cols}, q.scale_codes);
  else
    npy::write_f32(dir / file::scales, {l.scale_rows, l.scale_cols}, q.scale_values);
  if (l.two_level) {
    npy::write_f32(dir / file::tensor_scale, {1}, {q.tensor_scale});
    names.push_back(file::tensor_scale);
  } else {
    remove_own(dir / file::tensor_scale);
  }
  if (s.occ) {
    const auto n = static_cast<std::int64_t>(q.residual_index.size());
    npy::write_i64(dir / file::residual_index, {n}, q.residual_index);
    npy::write_f32(dir / file::residual_value, {n}, q.residual_value);
    names.insert(names.end(), {file::residual_index, file::residual_value});
  } else {
    remove_own(dir / file::residual_index);
    remove_own(dir / file::residual_value);
  }
  const fs::path layout = dir / file::layout;
  std::ofstream out(layout);
  out << layout_json(st, names).dump(2) << '\n';
  out.close();
  if (!out) fail(ErrorKind::io, "{}: write failed", layout.string());
  names.push_back(file::layout);
  std::vector<fs::path> written;
  for (const auto& n : names) written.push_back(dir / n);
  return written;
}

}  // namespace fp4jit::cli
