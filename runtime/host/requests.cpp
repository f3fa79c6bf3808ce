#include "runtime/host/requests.hpp"

#include <fmt/format.h>

#include "codegen/host/dequantize_ir.hpp"
#include "codegen/host/gemm_ir.hpp"
#include "codegen/host/occ_ir.hpp"
#include "codegen/host/quantize_ir.hpp"

namespace fp4jit::host {

KernelRequest quantize_request(const Recipe& recipe, Role role, DType input,
                               const HostConfig& config) {
  QuantizeKernelSpec spec;
  spec.op = recipe[role];
  spec.role = role;
  spec.input = input;
  spec.ue5m3 = recipe.ue5m3;
  spec.config = config;
  KernelRequest r;
  r.op = "quantize";
  r.key_text = fmt::format("op=quantize;operand={};role={};input={};mode=rowwise;config={}",
                           canonical(recipe, role), name(role), name(input), config.text());
  r.entries = {"stats", "scales", "encode", "fused"};
  r.emit = [spec](llvm::Module& m, const std::string& prefix) { emit_quantize(m, spec, prefix); };
  return r;
}

KernelRequest dequantize_request(const Recipe& recipe, Role role, DType output,
                                 const HostConfig& config) {
  DequantizeKernelSpec spec;
  spec.op = recipe[role];
  spec.output = output;
  spec.ue5m3 = recipe.ue5m3;
  spec.config = config;
  KernelRequest r;
  r.op = "dequantize";
  r.key_text = fmt::format("op=dequantize;operand={};role={};output={};config={}",
                           canonical(recipe, role), name(role), name(output), config.text());
  r.entries = {"dequantize"};
  r.emit = [spec](llvm::Module& m, const std::string& prefix) { emit_dequantize(m, spec, prefix); };
  return r;
}

KernelRequest dge_request(const Recipe& recipe, DType input, DType output,
                          const HostConfig& config) {
  QuantizeKernelSpec spec;
  spec.op = recipe[Role::w];
  spec.op.had = {};  // the DGE factor is taken of W itself
  spec.role = Role::w;
  spec.input = input;
  spec.output = output;
  spec.config = config;
  spec.dge_k = recipe.dge_k;
  spec.dge_clip = recipe.dge_clip;
  KernelRequest r;
  r.op = "dge";
  r.key_text = fmt::format("op=dge;operand={};role=w;input={};output={};config={}",
                           canonical(recipe, Role::w), name(input), name(output), config.text());
  r.entries = {"stats", "dge"};
  r.emit = [spec](llvm::Module& m, const std::string& prefix) { emit_dge(m, spec, prefix); };
  return r;
}

KernelRequest occ_request(DType input, const HostConfig& config) {
  OccKernelSpec spec;
  spec.input = input;
  spec.config = config;
  KernelRequest r;
  r.op = "occ";
  r.key_text = fmt::format("op=occ;input={};config={}", name(input), config.text());
  r.entries = {"count", "apply"};
  r.emit = [spec](llvm::Module& m, const std::string& prefix) { emit_occ(m, spec, prefix); };
  return r;
}

KernelRequest gemm_request(const Recipe& recipe, Role a, Role b, const HostConfig& config) {
  GemmKernelSpec spec;
  spec.a = recipe[a];
  spec.b = recipe[b];
  spec.ue5m3 = recipe.ue5m3;
  spec.config = config;
  KernelRequest r;
  r.op = "gemm";
  r.key_text = fmt::format("op=gemm;a={};b={};roles={},{};config={}", canonical(recipe, a),
                           canonical(recipe, b), name(a), name(b), config.gemm_text());
  r.entries = {"pack_a", "pack_b", "compute"};
  r.emit = [spec](llvm::Module& m, const std::string& prefix) { emit_gemm(m, spec, prefix); };
  return r;
}

DType quantize_input(const Recipe& recipe, Role role, DType input) {
  const OperandSpec& s = recipe[role];
  return s.occ || s.src == Source::requant ? DType::f32 : input;
}

}  // namespace fp4jit::host
