// Stub of templates/quantize/quantize_tile.cuh, and its config.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/config_env.hpp"
#include "codegen/kernels.hpp"
#include "core/error.hpp"

namespace fp4jit::codegen {

namespace {

// Operands the raw-tile path takes (lane-owned groups, no OCC); null: no operand.
bool raw_tile(const OperandSpec* s) {
  return s == nullptr || (lane_groups(*s) && !s->occ);
}

// Whether BF16 input of this operand takes the packed encoder (kern::packed_pow2): power-of-two
// E8M0 scales rounded to nearest, no Hadamard, no OCC.
bool packed_bf16_encoder(const OperandSpec& s) {
  return lane_groups(s) && (s.rule == ScaleRule::ocp_floor || s.rule == ScaleRule::ceil_pow2) &&
         (s.round == Round::even || s.round == Round::away) && s.had.size == 0 && !s.occ;
}

// Elements along K one group of lanes spans, and operand rows per warp (quantize_tile's layout).
int k_span(const OperandSpec& s) {
  int span = std::max(8, s.had.size);
  if (s.block.kind == Block::Kind::tile) span = std::max(span, s.block.cols);
  return span;
}
int lines_per_warp(const OperandSpec& s) {
  return 32 / (k_span(s) / 8);
}

}  // namespace

std::string TileConfig::text() const {
  std::string t = fmt::format("threads={},tile={}x{}", threads, tile_rows, tile_cols);
  if (min_blocks != 0) t += fmt::format(",minb={}", min_blocks);
  return t;
}

void TileConfig::validate(const OperandSpec* row, const OperandSpec* col, DType) const {
  const auto bad = [&](std::string_view why) {
    fail(ErrorKind::invalid_argument, "quantize_tile config {}: {}", text(), why);
  };
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    bad("threads must be a multiple of 32 in [32, 1024]");
  if (tile_rows < 8 || tile_cols < 8 || tile_rows > 256 || tile_cols > 256 || tile_cols % 8 != 0)
    bad("tile sides must lie in [8, 256], columns a multiple of 8");
  if ((tile_rows * tile_cols / 8) % threads != 0)
    bad("the tile's 8-element segments must split evenly over threads");
  if (tile_rows * (tile_cols + 1) * 4 > 48 * 1024) bad("the tile must fit 48 KiB of shared memory");
  if (min_blocks < 0 || threads * min_blocks > 2048)
    bad("minb (CTAs per SM for the register allocator) must be 0 or at most 2048 / threads");
  if (row != nullptr) {
    if (tile_cols % k_span(*row) != 0)
      bad("tile columns must hold whole groups of the row-wise operand");
    if (tile_rows % lines_per_warp(*row) != 0)
      bad("tile rows must hold whole warps of the row-wise operand");
    if (!local_in_tile(*row)) bad("the row-wise operand's blocks span more rows than a warp holds");
  }
  if (col != nullptr) {
    if (tile_rows % k_span(*col) != 0)
      bad("tile rows must hold whole groups of the transposed operand");
    if (tile_cols % lines_per_warp(*col) != 0)
      bad("tile columns must hold whole warps of the transposed operand");
    if (!local_in_tile(*col))
      bad("the transposed operand's blocks span more rows than a warp holds");
  }
}

namespace {

// Operands all taken by lane-owned groups (the raw-tile path): 64 x 128 of 16-bit input (16 KiB,
// three in the ring; per tile as many transposed column words as row groups of 32), 64 x 64 of
// FP32. Otherwise 64 x 64 (8 KiB of BF16, 16.6 KiB of shared memory as float: several CTAs per
// SM), grown to 128 along a side where a group (a Hadamard chunk of 128, a block of 128 or more)
// needs it.
TileConfig heuristic_tile_config(const OperandSpec* row, const OperandSpec* col, DType in,
                                 std::int64_t elements) {
  TileConfig c;
  // A two-level operand alone, rounded to nearest, of 16-bit input (nvfp4's and ue5m3's w, wt,
  // xt quantized by themselves) and fewer than 2^27 elements: CTAs of 128 threads, the tuner's
  // winners on LLaMA-7B's eight such problems at 8192 tokens on an H200 (16-90 M elements,
  // 1.04-1.10x 256 threads; bench/tune_notes.md); larger or unknown sizes keep 256 (not
  // measured).
  const OperandSpec* alone = row == nullptr ? col : (col == nullptr ? row : nullptr);
  const bool small_two_level_alone =
      alone != nullptr && alone->rule == ScaleRule::two_level &&
      (alone->scale == ScaleFormat::ue4m3 || alone->scale == ScaleFormat::ue5m3) &&
      alone->round != Round::stochastic && in != DType::f32 && elements > 0 &&
      elements < (std::int64_t{1} << 27);
  if (small_two_level_alone) c.threads = 128;
  if (raw_tile(row) && raw_tile(col)) {
    c.tile_cols = in == DType::f32 ? 64 : 128;
    // Pairs of 16-bit input, by what their tiles cost (measured on an H200 at 8192^2 and 16384^2,
    // bench/quantize_notes.md; the H100's figures had 512 threads ahead more often):
    //   stochastic rounding with 8-bit draws (nvfp4's and ue5m3's dY, with Hadamard on dY^T): one
    //     CTA of 512 threads per SM (a unit per thread per tile);
    //   two-level scales rounded to nearest (their x and w): CTAs of 256 (1.07-1.12x 512's);
    //   E8M0 scales rounded to nearest (mxfp4, the lightest tiles): 256 up to 2^27 elements
    //     (1.12x at 8192^2), 512 beyond (1.14x at 16384^2) and where the size is not known;
    //   double quantization (tetrajet's requantized transposes: two phases and barriers per tile):
    //     128 (1.08-1.09x 256's);
    //   16-bit stochastic rounding (tetrajet's dY): 256.
    const auto requant = [](const OperandSpec* s) { return s->src == Source::requant; };
    const auto sr = [](const OperandSpec* s) { return s->round == Round::stochastic; };
    if (row != nullptr && col != nullptr && in != DType::f32) {
      if (requant(row) || requant(col)) {
        c.threads = 128;
      } else if ((sr(row) && row->sr_bits == 16) || (sr(col) && col->sr_bits == 16)) {
        c.threads = 256;
      } else if (sr(row) || sr(col)) {
        c.threads = 512;
      } else if (row->scale == ScaleFormat::e8m0 && col->scale == ScaleFormat::e8m0) {
        c.threads = elements != 0 && elements < (std::int64_t{1} << 27) ? 256 : 512;
      }
    }
    // A transposed operand alone from the packed BF16 encoder (E8M0 scales rounded to nearest,
    // nothing applied first: mxfp4's xt, wt, dyt): the register cap of three CTAs per SM that the
    // kernel takes by itself (80 registers) left it 1.04-1.14x slower than minb=1 (127
    // registers, two CTAs of 256) on an H200, LLaMA-7B's seven such problems at 8192 tokens
    // (bench/tune_notes.md).
    if (row == nullptr && col != nullptr && in == DType::bf16 && packed_bf16_encoder(*col))
      c.min_blocks = 1;
    return c;
  }
  if (row != nullptr) c.tile_cols = std::max(c.tile_cols, k_span(*row));
  if (col != nullptr) c.tile_rows = std::max(c.tile_rows, k_span(*col));
  return c;
}

}  // namespace

TileConfig default_tile_config(const OperandSpec* row, const OperandSpec* col, DType in,
                               std::int64_t elements) {
  TileConfig c = heuristic_tile_config(row, col, in, elements);
  override_from_env(
      "FP4JIT_QUANTIZE_TILE",
      {{"threads", &c.threads}, {"tile", &c.tile_rows, &c.tile_cols}, {"minb", &c.min_blocks}},
      [&] { c.validate(row, col, in); });
  return c;
}

namespace {

KernelSource tile_source(const KernelOperand* row, const KernelOperand* col, DType in,
                         kern::Phase phase, bool requant, const TileConfig& config,
                         const std::string& target, bool col_sums) {
  if (row == nullptr && col == nullptr) fail(ErrorKind::internal, "quantize_tile: no operand");
  if (col_sums && (phase != kern::Phase::quantize || (row != nullptr && row->spec.occ) ||
                   (col != nullptr && col->spec.occ) || config.tile_rows % 64 != 0))
    fail(ErrorKind::internal,
         "quantize_tile: column sums need the quantize phase, no OCC and tile rows a multiple of "
         "64 (config {})",
         config.text());
  config.validate(row ? &row->spec : nullptr, col ? &col->spec : nullptr, in);
  if (row != nullptr) check_cuda_supported(*row);
  if (col != nullptr) check_cuda_supported(*col);
  const kern::Mode mode =
      row && col ? kern::Mode::both : (row ? kern::Mode::rows : kern::Mode::cols);
  KernelSource k;
  k.op = "quantize_tile";
  k.header = "quantize/quantize_tile.cuh";
  k.args_type = "fp4jit::kern::QuantizeArgs";
  k.target = target;
  std::string decl = "namespace k = fp4jit::kern;\n\n";
  if (row != nullptr) decl += operand_struct("RowOperand", *row) + "\n";
  if (col != nullptr) decl += operand_struct("ColOperand", *col) + "\n";
  decl += fmt::format(
      "struct Config {{\n"
      "  using RowOp = {};\n"
      "  using ColOp = {};\n"
      "  static constexpr k::InType in = {};\n"
      "  static constexpr k::Phase phase = k::Phase::{};\n"
      "  static constexpr k::Mode mode = k::Mode::{};\n"
      "  static constexpr bool requant = {};\n"
      "  static constexpr int threads = {};\n"
      "  static constexpr int tile_rows = {}, tile_cols = {};\n"
      "  static constexpr int min_blocks = {};\n"
      "  static constexpr bool col_sums = {};\n"
      "}};\n",
      row ? "RowOperand" : "ColOperand", col ? "ColOperand" : "RowOperand",
      in_type_name(in_type(in)), phase_name(phase), mode_name(mode), requant ? "true" : "false",
      config.threads, config.tile_rows, config.tile_cols, config.min_blocks,
      col_sums ? "true" : "false");
  k.declarations = std::move(decl);
  KeyText key;
  key.add("op", k.op).add("phase", phase_name(phase));
  if (row != nullptr) key.add("role", name(row->role)).add("row", row->canonical);
  if (col != nullptr) key.add("col_role", name(col->role)).add("col", col->canonical);
  key.add("in", name(in)).add("mode", mode_name(mode)).add("requant", requant ? "on" : "off");
  if (col_sums) key.add("col_sums", "on");  // absent when off: the other kernels' keys as before
  key.add("config", config.text()).add("target", target);
  k.key_text = key.text();
  return k;
}

}  // namespace

KernelSource quantize_tile_kernel(const KernelOperand* row, const KernelOperand* col, DType in,
                                  kern::Phase phase, bool requant, const TileConfig& config,
                                  const std::string& target, bool col_sums) {
  std::string key = "quantize_tile|";
  for (const KernelOperand* op : {row, col}) {
    if (op != nullptr) key.append(name(op->role)).append(1, '|').append(op->canonical);
    key.append(1, '|');
  }
  key.append(name(in)).append(1, '|').append(phase_name(phase)).append(requant ? "|rq|" : "|-|");
  key.append(config.text()).append(1, '|').append(target).append(col_sums ? "|sums" : "");
  return memoized(
      key, [&] { return tile_source(row, col, in, phase, requant, config, target, col_sums); });
}

}  // namespace fp4jit::codegen
