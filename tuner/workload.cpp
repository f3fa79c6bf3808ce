#include "tuner/workload.hpp"

#include <algorithm>
#include <fstream>

#include "core/error.hpp"

namespace fp4jit::tuner {

namespace {

struct Model {
  const char* name;
  std::int64_t hidden, intermediate, kv;  // kv: features of the k and v projections
};

constexpr Model kModels[] = {
    {"llama-7b", 4096, 11008, 4096},
    {"llama-13b", 5120, 13824, 5120},
    {"llama-70b", 8192, 28672, 1024},
    {"tiny-llama", 128, 352, 128},  // for tests: the structure of LLaMA at a tiny size
};

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const Model& m : kModels) out.emplace_back(m.name);
  return out;
}

std::vector<LinearLayer> model_layers(const std::string& model) {
  for (const Model& m : kModels) {
    if (model != m.name) continue;
    std::vector<LinearLayer> out;
    if (m.kv == m.hidden) {
      out.push_back({"q_proj, k_proj, v_proj, o_proj", m.hidden, m.hidden});
    } else {
      out.push_back({"q_proj, o_proj", m.hidden, m.hidden});
      out.push_back({"k_proj, v_proj", m.hidden, m.kv});
    }
    out.push_back({"gate_proj, up_proj", m.hidden, m.intermediate});
    out.push_back({"down_proj", m.intermediate, m.hidden});
    return out;
  }
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  fail(ErrorKind::invalid_argument, "unknown model '{}' (known: {})", model, known);
}

void Workload::add(const GemmRequest& request) {
  if (request.layer) {
    add_layer(request.shape.m, request.shape.k, request.shape.n);
    return;
  }
  const GemmProblem p{request.op, request.shape};
  if (std::none_of(gemms.begin(), gemms.end(),
                   [&](const GemmProblem& g) { return g.op == p.op && g.shape == p.shape; }))
    gemms.push_back(p);
}

void Workload::add_layer(std::int64_t tokens, std::int64_t in, std::int64_t out) {
  for (const auto& [op, shape] : gemm_list(GemmRequest{true, GemmOp::fprop, {tokens, out, in}}))
    add(GemmRequest{false, op, shape});
  // The pairs a training step runs (each tensor and its transposed copy from one read), then each
  // operand alone (the per-operand API).
  const QuantizeProblem qs[] = {
      {Role::x, tokens, in, true}, {Role::w, out, in, true}, {Role::dy, tokens, out, true},
      {Role::x, tokens, in},       {Role::xt, tokens, in},   {Role::w, out, in},
      {Role::wt, out, in},         {Role::dy, tokens, out},  {Role::dyt, tokens, out}};
  for (const QuantizeProblem& q : qs)
    if (std::none_of(quantizes.begin(), quantizes.end(), [&](const QuantizeProblem& o) {
          return o.role == q.role && o.rows == q.rows && o.cols == q.cols && o.pair == q.pair;
        }))
      quantizes.push_back(q);
}

std::vector<GemmRequest> read_shapes_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail(ErrorKind::io, "shapes file {}: cannot be read", path);
  std::vector<GemmRequest> out;
  std::string line;
  for (int number = 1; std::getline(f, line); ++number) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto last = line.find_last_not_of(" \t\r");
    const std::string text = line.substr(first, last - first + 1);
    try {
      out.push_back(parse_gemm_request(text));
    } catch (const Error& e) {
      fail(ErrorKind::invalid_argument, "shapes file {} line {}: '{}': {}", path, number, text,
           e.what());
    }
  }
  if (out.empty()) fail(ErrorKind::invalid_argument, "shapes file {}: no shapes in it", path);
  return out;
}

}  // namespace fp4jit::tuner
