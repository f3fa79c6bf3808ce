// Stub of templates/quantize/quantize_rows.cuh, and its config.
#include <fmt/format.h>

#include "codegen/config_env.hpp"
#include "codegen/kernels.hpp"
#include "core/error.hpp"

namespace fp4jit::codegen {

std::string phase_name(kern::Phase p) {
  return p == kern::Phase::stats ? "stats" : "quantize";
}

std::string mode_name(kern::Mode m) {
  switch (m) {
    case kern::Mode::rows:
      return "rows";
    case kern::Mode::cols:
      return "cols";
    case kern::Mode::both:
      return "both";
  }
  return "?";
}

std::string RowsConfig::text() const {
  std::string t = fmt::format("threads={},unroll={}", threads, unroll);
  if (min_blocks != 0) t += fmt::format(",minb={}", min_blocks);
  return t;
}

void RowsConfig::validate() const {
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    fail(ErrorKind::invalid_argument,
         "quantize_rows config: threads={} (a multiple of 32 in [32, 1024])", threads);
  if (unroll < 1 || unroll > 8)
    fail(ErrorKind::invalid_argument, "quantize_rows config: unroll={} (1..8)", unroll);
  if (min_blocks < 0 || threads * min_blocks > 2048)
    fail(ErrorKind::invalid_argument,
         "quantize_rows config: minb={} (CTAs per SM for the register allocator: 0 or at most "
         "2048 / threads)",
         min_blocks);
}

void RowsConfig::validate(const OperandSpec& s, DType in) const {
  validate();
  if (!lane_groups(s)) return;
  const kern::InType t = in_type(in);
  if (kern::rows_ring_stages(threads, unroll, t) < 1)
    fail(ErrorKind::invalid_argument,
         "quantize_rows config: threads={} with {} input: {} warps' rings of {}-byte items do not "
         "fit {} bytes of shared memory",
         threads, name(in), threads / 32, kern::rows_item_bytes(t), kern::kRowsRingBytes);
}

// Segment path: 8 warps, four 16-byte loads in flight per lane (two for FP32, whose segments are
// 32 bytes). Lane-owned groups of BF16, two ring slots per warp (one item in flight while the
// other is encoded): two-level scales (nvfp4, ue5m3) 16 warps (64 KB of rings), the others 12
// (48 KB). Measured on an H200 (bench/quantize_notes.md) against one, two and three slots on 8 to
// 32 warps and register caps, every preset's x and dY rows at 8192^2 and 16384^2: the best or
// within 2 % of it everywhere (32 warps of one slot gain 1-2 % on mxfp4's rows at 16384^2 and lose
// as much at 8192^2). FP16: 8 warps with three slots; FP32: 4 warps (4 KiB items).
namespace {

RowsConfig heuristic_rows_config(const OperandSpec& s, DType in) {
  if (!lane_groups(s)) return RowsConfig{256, in == DType::f32 ? 2 : 4};
  if (in == DType::bf16) return RowsConfig{s.rule == ScaleRule::two_level ? 512 : 384, 1};
  return RowsConfig{in == DType::f32 ? 128 : 256, 2};
}

}  // namespace

RowsConfig default_rows_config(const OperandSpec& s, DType in) {
  RowsConfig c = heuristic_rows_config(s, in);
  override_from_env("FP4JIT_QUANTIZE_ROWS",
                    {{"threads", &c.threads}, {"unroll", &c.unroll}, {"minb", &c.min_blocks}},
                    [&] { c.validate(s, in); });
  return c;
}

namespace {

KernelSource rows_source(const KernelOperand& op, DType in, kern::Phase phase,
                         const RowsConfig& config, const std::string& target) {
  config.validate(op.spec, in);
  check_cuda_supported(op);
  KernelSource k;
  k.op = "quantize_rows";
  k.header = "quantize/quantize_rows.cuh";
  k.args_type = "fp4jit::kern::QuantizeArgs";
  k.target = target;
  k.declarations = "namespace k = fp4jit::kern;\n\n" + operand_struct("RowOperand", op) +
                   fmt::format(
                       "\nstruct Config {{\n"
                       "  using Op = RowOperand;\n"
                       "  static constexpr k::InType in = {};\n"
                       "  static constexpr k::Phase phase = k::Phase::{};\n"
                       "  static constexpr int threads = {};\n"
                       "  static constexpr int unroll = {};\n"
                       "  static constexpr int min_blocks = {};\n"
                       "}};\n",
                       in_type_name(in_type(in)), phase_name(phase), config.threads, config.unroll,
                       config.min_blocks);
  k.key_text = KeyText()
                   .add("op", k.op)
                   .add("phase", phase_name(phase))
                   .add("role", name(op.role))
                   .add("row", op.canonical)
                   .add("in", name(in))
                   .add("mode", "rows")
                   .add("config", config.text())
                   .add("target", target)
                   .text();
  return k;
}

}  // namespace

KernelSource quantize_rows_kernel(const KernelOperand& op, DType in, kern::Phase phase,
                                  const RowsConfig& config, const std::string& target) {
  std::string key = "quantize_rows|";
  key.append(name(op.role)).append(1, '|').append(op.canonical).append(1, '|').append(name(in));
  key.append(1, '|').append(phase_name(phase)).append(1, '|').append(config.text());
  key.append(1, '|').append(target);
  return memoized(key, [&] { return rows_source(op, in, phase, config, target); });
}

}  // namespace fp4jit::codegen
