// Stubs of templates/quantize/occ.cuh: occ_select, occ_scan, occ_chunk_scan, occ_write. None
// depends on the recipe beyond the input type and the orientation (alpha arrives as sorted
// positions). And templates/quantize/occ_rows.cuh's one-pass kernel, which quantizes too.
#include <fmt/format.h>

#include "codegen/kernels.hpp"

namespace fp4jit::codegen {

namespace {

KernelSource occ_kernel(std::string op, std::string args, std::string config_body, KeyText key,
                        const std::string& target) {
  KernelSource k;
  k.op = std::move(op);
  k.header = "quantize/occ.cuh";
  k.args_type = std::move(args);
  k.target = target;
  k.declarations = "namespace k = fp4jit::kern;\n\nstruct Config {\n" + config_body + "};\n";
  key.add("target", target);
  k.key_text = key.text();
  return k;
}

}  // namespace

KernelSource occ_select_kernel(DType in, const std::string& target) {
  const std::string body = fmt::format(
      "  static constexpr k::InType in = {};\n"
      "  static constexpr int threads = 256;\n",
      in_type_name(in_type(in)));
  KeyText key;
  key.add("op", "occ_select").add("in", name(in)).add("config", "threads=256");
  return occ_kernel("occ_select", "fp4jit::kern::OccSelectArgs", body, key, target);
}

KernelSource occ_scan_kernel(const std::string& target) {
  KeyText key;
  key.add("op", "occ_scan").add("config", "threads=1024");
  return occ_kernel("occ_scan", "fp4jit::kern::OccScanArgs",
                    "  static constexpr int threads = 1024;\n", key, target);
}

KernelSource occ_chunk_scan_kernel(const std::string& target) {
  KeyText key;
  key.add("op", "occ_chunk_scan").add("config", "threads=256");
  return occ_kernel("occ_chunk_scan", "fp4jit::kern::OccChunkScanArgs",
                    "  static constexpr int threads = 256;\n", key, target);
}

KernelSource occ_write_kernel(DType in, bool cols, const std::string& target) {
  const std::string body = fmt::format(
      "  static constexpr k::InType in = {};\n"
      "  static constexpr int threads = 256;\n"
      "  static constexpr bool cols = {};\n",
      in_type_name(in_type(in)), cols ? "true" : "false");
  KeyText key;
  key.add("op", "occ_write")
      .add("in", name(in))
      .add("orient", cols ? "cols" : "rows")
      .add("config", "threads=256");
  return occ_kernel("occ_write", "fp4jit::kern::OccWriteArgs", body, key, target);
}

OccRowsShape occ_rows_shape(std::int64_t cols) {
  // 512 threads with one or two chunks each (two CTAs per SM at 64 registers), 1024 with two
  // beyond 8192 elements: four chunks a thread spill.
  if (cols <= std::int64_t{512} * kern::kVec) return {512, 1};
  if (cols <= std::int64_t{512} * 2 * kern::kVec) return {512, 2};
  return {1024, 2};
}

KernelSource occ_rows_kernel(const KernelOperand& op, DType in, std::int64_t cols,
                             const std::string& target) {
  check_cuda_supported(op);
  const OccRowsShape shape = occ_rows_shape(cols);
  const std::string config = fmt::format("threads={},chunks={}", shape.threads, shape.chunks);
  const std::string memo =
      fmt::format("occ_rows|{}|{}|{}|{}|{}", name(op.role), op.canonical, name(in), config, target);
  return memoized(memo, [&] {
    KernelSource k;
    k.op = "occ_rows";
    k.header = "quantize/occ_rows.cuh";
    k.args_type = "fp4jit::kern::OccRowsArgs";
    k.target = target;
    k.declarations = "namespace k = fp4jit::kern;\n\n" + operand_struct("RowOperand", op) +
                     fmt::format(
                         "\nstruct Config {{\n"
                         "  using Op = RowOperand;\n"
                         "  static constexpr k::InType in = {};\n"
                         "  static constexpr k::Phase phase = k::Phase::quantize;\n"
                         "  static constexpr int threads = {};\n"
                         "  static constexpr int chunks = {};\n"
                         "}};\n",
                         in_type_name(in_type(in)), shape.threads, shape.chunks);
    k.key_text = KeyText()
                     .add("op", k.op)
                     .add("role", name(op.role))
                     .add("row", op.canonical)
                     .add("in", name(in))
                     .add("config", config)
                     .add("target", target)
                     .text();
    return k;
  });
}

}  // namespace fp4jit::codegen
