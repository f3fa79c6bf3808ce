// Launch planning for quantize, quantize_pair, dequantize and dge (see plan.hpp); the kernels a
// recipe's plans use: recipe_kernels.cpp; quantize configs as text: quantize_tuning.cpp.
//
// One operand, in order: [OCC: occ_select -> occ_scan -> occ_write; or, for a row-wise operand
// with one scale per row, occ_rows alone, which also quantizes] -> [stats pass, when the
// operand needs a global amax (two-level) or blocks larger than a thread group: zeroed stat
// words, quantize_rows/quantize_tile in the stats phase; for an OCC operand scaled per source
// row, occ_select does it; a pair whose operands have the same stats runs it once] -> quantize
// pass (which stats passes are shared or taken by the select: plan_stats.cpp). Double
// quantization (src=requant) fuses into quantize_tile's pair mode when it can;
// otherwise it is planned as quantize(forward) -> dequantize to the source layout -> quantize
// from that.
#include "runtime/cuda/plan.hpp"

#include <algorithm>
#include <cstring>

#include "codegen/kernels.hpp"
#include "core/quantized.hpp"

namespace fp4jit::cuda {

void* Arena::take_bytes(std::int64_t bytes) {
  used_ = (used_ + 255) & ~std::int64_t{255};
  void* p = reinterpret_cast<void*>(base_ + static_cast<std::uintptr_t>(used_));
  used_ += std::max<std::int64_t>(bytes, 1);
  return p;
}

std::int64_t plan_bytes(const Plan& plan) {
  std::int64_t sum = 0;
  for (const Step& s : plan)
    if (const Launch* l = std::get_if<Launch>(&s)) sum += l->bytes;
  return sum;
}

namespace {

using codegen::KernelOperand;
using kern::i64;
using kern::u32;

i64 stride_of(const TensorView& t) {
  return t.row_stride == 0 ? t.cols : t.row_stride;
}
i64 ceil_div(i64 a, i64 b) {
  return (a + b - 1) / b;
}
i64 scale_bytes(const QuantLayout& l) {
  return l.scale_count() * (l.scale_is_code ? 1 : 4);
}
class Planner {
 public:
  Planner(const Recipe& recipe, const DeviceInfo& device, Arena& arena)
      : recipe_(recipe), device_(device), arena_(arena) {}
  Plan take() { return std::move(plan_); }

  void quantize(Role role, const TensorView& in, const QuantizedView& out, const QuantizeArgs& qa);
  void quantize_pair(Role role, const TensorView& in, const QuantizedView& out,
                     const QuantizedView& out_t, const QuantizeArgs& qa);
  void dequantize(const KernelOperand& op, const QuantizedView& in, const QuantLayout& l,
                  const TensorView& out, bool to_source);
  void dge(const TensorView& w, const TensorView& out);

 private:
  void memset(void* p, u32 value, i64 words) {
    if (words > 0) plan_.push_back(Memset{p, value, words});
  }
  template <class A>
  void launch(codegen::KernelSource kernel, i64 grid, int block, const A& args, i64 bytes,
              bool persistent = false, int smem = 0) {
    plan_.push_back(make_launch(std::move(kernel), grid, block, args, bytes, persistent, smem));
  }
  i64 stream_grid(i64 ctas) const {
    return std::min<i64>(ctas, static_cast<i64>(device_.sm_count) * 32);
  }

  kern::QuantizeArgs base_args(const TensorView& in, const QuantizeArgs& qa) const;
  // OCC of `in`: lo and hi per source row from one select, then the residual list of each
  // operand given (the row-wise one, the transposed one, or both); returns lo / hi. The select
  // also does the stats pass of `stats` (its stats_out and amax_bits; see occ_stats_in_select),
  // if not null.
  const float* occ(const TensorView& in, const QuantizedView* rows_out,
                   const QuantizedView* cols_out, const kern::OperandOut* stats);
  // The stat words and amax of `op`'s stats pass (zeroed), if it needs one; else zeroes out.amax.
  // amax_in: the caller's global amax (delayed scaling), or null.
  bool prepare_stats(const KernelOperand& op, bool tile_kernel, const QuantLayout& l,
                     const QuantizedView& out, const float* amax_in, kern::OperandOut& o);
  // sums_partial (a tile kernel's quantize phase): also the source's column sums per 64-row
  // chunk, by the tile kernel where its config allows, else by a pass of their own before it.
  void pass(const KernelOperand* row, const KernelOperand* col, bool tile_kernel,
            const TensorView& in, kern::Phase phase, bool requant, kern::QuantizeArgs a, i64 bytes,
            float* sums_partial = nullptr);
  // Column sums (QuantizeArgs::column_sums): scratch for the per-chunk sums (null when none are
  // asked for), and the reduce into the caller's vector.
  float* sums_scratch(const TensorView& in, const QuantizeArgs& qa) {
    return qa.column_sums == nullptr ? nullptr : arena_.take<float>(column_sums_scratch_floats(in));
  }
  void sums_reduce(const TensorView& in, const float* partial, const QuantizeArgs& qa) {
    plan_.push_back(column_sums_reduce(in, partial, qa.column_sums, qa.column_sums_dtype, device_));
  }
  void quantize_op(const KernelOperand& op, const TensorView& in, const QuantizedView& out,
                   const QuantizeArgs& qa, const float* amax_in);

  const Recipe& recipe_;
  const DeviceInfo& device_;
  Arena& arena_;
  Plan plan_;
};

kern::QuantizeArgs Planner::base_args(const TensorView& in, const QuantizeArgs& qa) const {
  kern::QuantizeArgs a{};
  a.in = in.data;
  a.rows = in.rows;
  a.cols = in.cols;
  a.stride = stride_of(in);
  a.seed = qa.seed;
  a.offset = qa.offset;
  a.seed_step = qa.seed_step;
  const auto addr = reinterpret_cast<std::uintptr_t>(in.data);
  a.vector_ok = (addr % 16 == 0 && (a.stride * dtype_size(in.dtype)) % 16 == 0) ? 1u : 0u;
  return a;
}

}  // namespace

kern::OperandOut operand_out(const QuantLayout& l, const QuantizedView& q) {
  kern::OperandOut o{};
  o.codes = q.codes;
  o.scales = q.scales;
  o.tensor_scale = q.tensor_scale;
  o.amax_out = reinterpret_cast<u32*>(q.amax);
  o.rows = l.rows;
  o.cols = l.cols;
  o.row_bytes = l.row_bytes;
  o.scale_cols = l.scale_cols;
  return o;
}

namespace {

const float* Planner::occ(const TensorView& in, const QuantizedView* rows_out,
                          const QuantizedView* cols_out, const kern::OperandOut* stats) {
  const i64 n = in.cols;
  float* lohi = arena_.take<float>(2 * in.rows);
  u32* row_counts = rows_out != nullptr ? arena_.take<u32>(in.rows) : nullptr;
  u32* col_counts = cols_out != nullptr ? arena_.take<u32>(in.cols) : nullptr;
  const i64 chunks = ceil_div(in.rows, kern::kOccChunkRows);
  u32* chunk_counts = cols_out != nullptr ? arena_.take<u32>(chunks * in.cols) : nullptr;
  if (chunk_counts != nullptr) memset(chunk_counts, 0, chunks * in.cols);
  kern::OccSelectArgs sel{};
  sel.in = in.data;
  sel.rows = in.rows;
  sel.cols = in.cols;
  sel.stride = stride_of(in);
  sel.lo_index = occ_lo_index(recipe_.occ_alpha, n);
  sel.hi_index = occ_hi_index(recipe_.occ_alpha, n);
  sel.lohi = lohi;
  sel.row_counts = row_counts;
  sel.chunk_counts = chunk_counts;
  const auto addr = reinterpret_cast<std::uintptr_t>(in.data);
  sel.vector_ok = (addr % 16 == 0 && (stride_of(in) * dtype_size(in.dtype)) % 16 == 0) ? 1u : 0u;
  sel.stats = stats != nullptr ? stats->stats_out : nullptr;
  sel.amax_bits = stats != nullptr ? stats->amax_bits : nullptr;
  const i64 in_bytes = in.rows * in.cols * dtype_size(in.dtype);
  launch(codegen::occ_select_kernel(in.dtype, device_.target), std::min<i64>(in.rows, 1 << 20), 256,
         sel, in_bytes);
  const auto list = [&](const QuantizedView& out, const u32* counts, bool cols) {
    const i64 op_rows = cols ? in.cols : in.rows;
    if (cols) {  // the columns' counts from their chunks', which become list positions
      const kern::OccChunkScanArgs cs{chunk_counts, col_counts, in.cols, chunks};
      launch(codegen::occ_chunk_scan_kernel(device_.target), ceil_div(in.cols, 256), 256, cs,
             chunks * in.cols * 8 + in.cols * 4);
    }
    i64* offsets = arena_.take<i64>(op_rows);
    const kern::OccScanArgs scan{counts, offsets, out.residual_count, op_rows};
    launch(codegen::occ_scan_kernel(device_.target), 1, 1024, scan, op_rows * 12);
    if (out.residual_capacity <= 0) return;
    const kern::OccWriteArgs w{in.data,
                               in.rows,
                               in.cols,
                               stride_of(in),
                               lohi,
                               offsets,
                               chunk_counts,
                               out.residual_index,
                               out.residual_value,
                               out.residual_capacity,
                               sel.vector_ok};
    // occ_write (256 threads): a warp per source row, or a thread per kVec columns and chunk.
    const i64 grid = cols ? ceil_div(in.cols, 256 * kern::kVec) * chunks : ceil_div(in.rows, 8);
    launch(codegen::occ_write_kernel(in.dtype, cols, device_.target), std::min<i64>(grid, 1 << 20),
           256, w, in_bytes);
  };
  if (rows_out != nullptr) list(*rows_out, row_counts, false);
  if (cols_out != nullptr) list(*cols_out, col_counts, true);
  return lohi;
}

bool Planner::prepare_stats(const KernelOperand& op, bool tile_kernel, const QuantLayout& l,
                            const QuantizedView& out, const float* amax_in, kern::OperandOut& o) {
  const OperandSpec& s = op.spec;
  const bool wide_tiles = s.block.kind == Block::Kind::tile && s.block.rows > 1 && !tile_kernel;
  // Delayed scaling: s_enc from the caller's amax, one pass (the amax output accumulates).
  const bool given = amax_in != nullptr && s.rule == ScaleRule::two_level &&
                     s.block.kind == Block::Kind::tile && !wide_tiles;
  if (given) o.amax_in = amax_in;
  if ((!codegen::needs_stats(s) || given) && !wide_tiles) {
    if (out.amax != nullptr) memset(out.amax, 0, 1);
    return false;
  }
  o.amax_bits = arena_.take<u32>(1);
  memset(o.amax_bits, 0, 1);
  if (s.block.kind != Block::Kind::tile || wide_tiles) {
    u32* stats = arena_.take<u32>(l.scale_count());
    memset(stats, 0, l.scale_count());
    o.stats = stats;
    o.stats_out = stats;
  }
  return true;
}

void Planner::pass(const KernelOperand* row, const KernelOperand* col, bool tile_kernel,
                   const TensorView& in, kern::Phase phase, bool requant, kern::QuantizeArgs a,
                   i64 bytes, float* sums_partial) {
  if (!tile_kernel) {
    codegen::RowsConfig cfg = codegen::default_rows_config(row->spec, in.dtype);
    if (device_.rows_config != nullptr) {
      try {
        device_.rows_config->validate(row->spec, in.dtype);
        cfg = *device_.rows_config;
      } catch (const Error&) {
      }
    }
    if (codegen::lane_groups(row->spec)) {
      // Persistent warps, one item (a row's 1024-element chunk) at a time; their rings are the
      // launch's dynamic shared memory.
      const i64 items = a.row.rows * ceil_div(a.row.cols, 1024);
      launch(codegen::quantize_rows_kernel(*row, in.dtype, phase, cfg, device_.target),
             ceil_div(items, cfg.threads / 32), cfg.threads, a, bytes, true,
             kern::rows_ring_bytes(cfg.threads, cfg.unroll, codegen::in_type(in.dtype)));
      return;
    }
    const i64 items = a.row.rows * ceil_div(ceil_div(a.row.cols, kern::kVec), 32 * cfg.unroll);
    launch(codegen::quantize_rows_kernel(*row, in.dtype, phase, cfg, device_.target),
           stream_grid(ceil_div(items, cfg.threads / 32)), cfg.threads, a, bytes);
    return;
  }
  codegen::TileConfig cfg = codegen::default_tile_config(
      row ? &row->spec : nullptr, col ? &col->spec : nullptr, in.dtype, in.rows * in.cols);
  if (device_.tile_config != nullptr) {
    try {
      device_.tile_config->validate(row ? &row->spec : nullptr, col ? &col->spec : nullptr,
                                    in.dtype);
      cfg = *device_.tile_config;
    } catch (const Error&) {
    }
  }
  // The tile kernel sums the columns of whole 64-row chunks of its tiles (no OCC clamp in them).
  bool fused_sums = false;
  if (sums_partial != nullptr) {
    fused_sums = cfg.tile_rows % kern::kSumChunkRows == 0 && !(row && row->spec.occ) &&
                 !(col && col->spec.occ);
    if (fused_sums)
      a.col_sums = sums_partial;
    else
      plan_.push_back(column_sums_pass(in, sums_partial, device_));
  }
  // Persistent CTAs: each walks tiles with the next tile's loads in flight.
  const i64 tiles = ceil_div(in.rows, cfg.tile_rows) * ceil_div(in.cols, cfg.tile_cols);
  // The kernel walks its tiles in 32-bit arithmetic (quantize_tile.cuh).
  if (tiles >= (i64{1} << 30))
    fail(ErrorKind::invalid_argument,
         "quantize: a {}x{} input makes {} tiles of {}x{}, more than the tile kernel walks (2^30)",
         in.rows, in.cols, tiles, cfg.tile_rows, cfg.tile_cols);
  launch(codegen::quantize_tile_kernel(row, col, in.dtype, phase, requant, cfg, device_.target,
                                       fused_sums),
         tiles, cfg.threads, a, bytes, true);
}

void Planner::quantize_op(const KernelOperand& op, const TensorView& in, const QuantizedView& out,
                          const QuantizeArgs& qa, const float* amax_in) {
  const OperandSpec& s = op.spec;
  const bool transposed = role_info(op.role).transposed;
  const QuantLayout l = quant_layout(recipe_, op.role, in.rows, in.cols);
  codegen::check_cuda_supported(op);
  if (transposed && !codegen::local_in_tile(s))
    fail(ErrorKind::unsupported,
         "operand {}: block={} spans more rows than the CUDA transposed kernel holds",
         name(op.role), block_text(s.block));
  const bool tile_kernel = transposed || (s.block.kind == Block::Kind::tile && s.block.rows > 1 &&
                                          codegen::local_in_tile(s));
  kern::QuantizeArgs a = base_args(in, qa);
  if (plan_occ_rows(recipe_, device_, op, in, l, out, a, arena_, plan_)) return;
  kern::OperandOut o = operand_out(l, out);
  bool stats = prepare_stats(op, tile_kernel, l, out, amax_in, o);
  if (s.occ) {
    const bool in_select = stats && occ_stats_in_select(s, transposed);
    o.lohi =
        occ(in, transposed ? nullptr : &out, transposed ? &out : nullptr, in_select ? &o : nullptr);
    stats = stats && !in_select;
  }
  const i64 in_bytes = in.rows * in.cols * dtype_size(in.dtype);
  const KernelOperand* row = transposed ? nullptr : &op;
  const KernelOperand* col = transposed ? &op : nullptr;
  if (stats) {
    (transposed ? a.col : a.row) = o;
    pass(row, col, tile_kernel, in, kern::Phase::stats, false, a, in_bytes);
  }
  o.stats_out = nullptr;
  (transposed ? a.col : a.row) = o;
  pass(row, col, tile_kernel, in, kern::Phase::quantize, false, a,
       in_bytes + l.code_bytes() + scale_bytes(l));
}

void Planner::quantize(Role role, const TensorView& in, const QuantizedView& out,
                       const QuantizeArgs& qa) {
  if (float* partial = sums_scratch(in, qa)) {  // one operand: its kernels read the source apart
    plan_.push_back(column_sums_pass(in, partial, device_));
    sums_reduce(in, partial, qa);
  }
  const OperandSpec& s = recipe_[role];
  if (s.src != Source::requant) {
    quantize_op(codegen::kernel_operand(recipe_, role), in, out, qa, qa.amax);
    return;
  }
  // Q(deq(Q(x))): the forward copy into scratch, its values back in the source layout, then
  // this operand from those values.
  const Role fwd = role_info(role).forward;
  const QuantLayout lf = quant_layout(recipe_, fwd, in.rows, in.cols);
  QuantizedView qf;
  qf.codes = arena_.take<std::uint8_t>(lf.code_bytes());
  qf.scales = arena_.take_bytes(scale_bytes(lf));
  qf.tensor_scale = arena_.take<float>(1);
  qf.residual_count = arena_.take<std::int64_t>(1);
  const KernelOperand fop = codegen::kernel_operand(recipe_, fwd);
  quantize_op(fop, in, qf, qa, nullptr);
  float* values = arena_.take<float>(in.rows * in.cols);
  dequantize(fop, qf, lf, TensorView{values, DType::f32, in.rows, in.cols, in.cols}, true);
  OperandSpec direct = s;
  direct.src = Source::direct;
  quantize_op(codegen::with_spec(recipe_, role, direct),
              TensorView{values, DType::f32, in.rows, in.cols, in.cols}, out, qa, nullptr);
}

void Planner::quantize_pair(Role role, const TensorView& in, const QuantizedView& out,
                            const QuantizedView& out_t, const QuantizeArgs& qa) {
  const Role partner = transposed_copy(role);
  const OperandSpec& sr = recipe_[role];
  const OperandSpec& sc = recipe_[partner];
  const bool requant = sc.src == Source::requant;
  bool fused = sr.occ == sc.occ && codegen::local_in_tile(sr) && codegen::local_in_tile(sc) &&
               (!requant || (sr.had.size == 0 && !sc.occ && !codegen::needs_stats(sc)));
  const codegen::TileConfig cfg =
      codegen::default_tile_config(&sr, &sc, in.dtype, in.rows * in.cols);
  try {
    cfg.validate(&sr, &sc, in.dtype);
  } catch (const Error&) {
    fused = false;
  }
  if (!fused) {
    QuantizeArgs qt = qa;
    qt.amax = qa.amax_transposed;
    qt.column_sums = nullptr;  // the first call sums the columns
    quantize(role, in, out, qa);
    quantize(partner, in, out_t, qt);
    return;
  }
  float* sums = sums_scratch(in, qa);
  const KernelOperand opr = codegen::kernel_operand(recipe_, role);
  const KernelOperand opc = codegen::kernel_operand(recipe_, partner);
  codegen::check_cuda_supported(opr);
  codegen::check_cuda_supported(opc);
  const QuantLayout lr = quant_layout(recipe_, role, in.rows, in.cols);
  const QuantLayout lc = quant_layout(recipe_, partner, in.rows, in.cols);
  kern::QuantizeArgs a = base_args(in, qa);
  kern::OperandOut orow = operand_out(lr, out), ocol = operand_out(lc, out_t);
  const i64 in_bytes = in.rows * in.cols * dtype_size(in.dtype);
  bool stats_r = prepare_stats(opr, true, lr, out, qa.amax, orow);
  // Operands with the same stats share the row-wise operand's words and amax.
  const bool shared = stats_r && shared_source_stats(sr, sc);
  // Or only the amax, where the transposed copy's is not given apart.
  const bool shared_amax =
      !shared && stats_r && qa.amax_transposed == nullptr && shared_tensor_amax(sr, sc);
  bool stats_c =
      !shared && !shared_amax && prepare_stats(opc, true, lc, out_t, qa.amax_transposed, ocol);
  if (shared) ocol.stats = orow.stats;
  if (shared || shared_amax) ocol.amax_bits = orow.amax_bits;
  if (sr.occ) {  // one select for both operands, and the stats pass of one that it can take
    const bool select_r = stats_r && occ_stats_in_select(sr, false);
    const bool select_c = !select_r && stats_c && occ_stats_in_select(sc, true);
    orow.lohi = ocol.lohi = occ(in, &out, &out_t, select_r ? &orow : (select_c ? &ocol : nullptr));
    stats_r = stats_r && !select_r;
    stats_c = stats_c && !select_c;
  }
  if (shared && stats_r) {  // the shared stats pass, by the rows kernel (clamped by lo / hi)
    a.row = orow;
    pass(&opr, nullptr, false, in, kern::Phase::stats, false, a, in_bytes);
    stats_r = false;
  }
  if (stats_r || stats_c) {
    a.row = orow;
    a.col = ocol;
    // One stats pass over the input for whichever operands need it.
    pass(stats_r ? &opr : nullptr, stats_c ? &opc : nullptr, true, in, kern::Phase::stats, false, a,
         in_bytes);
  }
  orow.stats_out = ocol.stats_out = nullptr;
  a.row = orow;
  a.col = ocol;
  pass(&opr, &opc, true, in, kern::Phase::quantize, requant, a,
       in_bytes + lr.code_bytes() + scale_bytes(lr) + lc.code_bytes() + scale_bytes(lc), sums);
  if (sums != nullptr) sums_reduce(in, sums, qa);
}

void Planner::dequantize(const KernelOperand& op, const QuantizedView& in, const QuantLayout& l,
                         const TensorView& out, bool to_source) {
  kern::DequantizeArgs a{};
  a.codes = in.codes;
  a.scales = in.scales;
  a.tensor_scale = l.two_level ? in.tensor_scale : nullptr;
  a.out = out.data;
  a.rows = l.rows;
  a.cols = l.cols;
  a.row_bytes = l.row_bytes;
  a.scale_cols = l.scale_cols;
  a.out_stride = stride_of(out);
  const i64 total = l.rows * l.cols;
  launch(codegen::dequantize_kernel(op, out.dtype, to_source, device_.target),
         stream_grid(ceil_div(total, 256)), 256, a,
         l.code_bytes() + scale_bytes(l) + total * dtype_size(out.dtype));
}

void Planner::dge(const TensorView& w, const TensorView& out) {
  // The weight's block amaxes as the reference takes them: raw values, no Hadamard, no OCC.
  OperandSpec raw = recipe_[Role::w];
  raw.had = HadamardSpec{};
  raw.occ = false;
  const KernelOperand op = codegen::with_spec(recipe_, Role::w, raw);
  const QuantLayout l = quant_layout(recipe_, Role::w, w.rows, w.cols);
  u32* stats = arena_.take<u32>(l.scale_count());
  memset(stats, 0, l.scale_count());
  kern::QuantizeArgs a = base_args(w, QuantizeArgs{});
  a.row.rows = l.rows;
  a.row.cols = l.cols;
  a.row.scale_cols = l.scale_cols;
  a.row.stats_out = stats;
  const i64 w_bytes = w.rows * w.cols * dtype_size(w.dtype);
  pass(&op, nullptr, false, w, kern::Phase::stats, false, a, w_bytes);
  const kern::DgeArgs d{w.data, out.data,     stats,          l.rows,
                        l.cols, stride_of(w), stride_of(out), l.scale_cols};
  launch(
      codegen::dge_kernel(op, w.dtype, out.dtype, recipe_.dge_k, recipe_.dge_clip, device_.target),
      stream_grid(ceil_div(l.rows * l.cols, 256)), 256, d,
      w_bytes + l.rows * l.cols * dtype_size(out.dtype));
}

}  // namespace

Plan plan_quantize(const Recipe& recipe, Role role, const TensorView& in, const QuantizedView& out,
                   const QuantizedView* out_t, const QuantizeArgs& args, const DeviceInfo& device,
                   Arena& arena) {
  Planner p(recipe, device, arena);
  if (out_t != nullptr)
    p.quantize_pair(role, in, out, *out_t, args);
  else
    p.quantize(role, in, out, args);
  return p.take();
}

Plan plan_dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                     std::int64_t source_rows, std::int64_t source_cols, const TensorView& out,
                     const DeviceInfo& device, Arena& arena) {
  Planner p(recipe, device, arena);
  p.dequantize(codegen::kernel_operand(recipe, role), in,
               quant_layout(recipe, role, source_rows, source_cols), out, false);
  return p.take();
}

Plan plan_dge(const Recipe& recipe, const TensorView& w, const TensorView& out,
              const DeviceInfo& device, Arena& arena) {
  Planner p(recipe, device, arena);
  p.dge(w, out);
  return p.take();
}

}  // namespace fp4jit::cuda
