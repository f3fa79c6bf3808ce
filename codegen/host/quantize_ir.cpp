#include "codegen/host/quantize_ir.hpp"

#include <cmath>

#include "codegen/host/ir_numerics.hpp"
#include "codegen/host/operand_ir.hpp"
#include "numerics/scale.cuh"

namespace fp4jit::host {

using llvm::Value;

int QuantizeKernelSpec::band_rows() const {
  const int h = op.block.kind == Block::Kind::tile ? op.block.rows : 1;
  return (config.band_rows + h - 1) / h * h;
}

bool QuantizeKernelSpec::uses_fused() const {
  return (op.block.kind == Block::Kind::tile || op.block.kind == Block::Kind::row) &&
         op.rule != ScaleRule::two_level;
}

namespace {

// Field indices of QuantizeKernelArgs.
enum Field {
  kSrc,
  kSrcStride,
  kRows,
  kCols,
  kCodes,
  kRowBytes,
  kScales,
  kFactors,
  kStats,
  kScaleCols,
  kScratch,
  kSeed,
  kOffset,
  kSEnc,
  kAmax
};

class QuantizeEmitter {
 public:
  QuantizeEmitter(Emitter& e, const QuantizeKernelSpec& spec) : e_(e), k_(spec) {}

  void stats(const std::string& name);
  void scales(const std::string& name);
  void encode(const std::string& name);
  void fused(const std::string& name);
  void dge(const std::string& name);

 private:
  // An entry point's parameters and its argument fields, loaded once at entry.
  struct Frame {
    Value *args, *begin, *end;
    Value *cols, *stats, *scale_cols, *factors, *scales, *s_enc, *codes, *row_bytes, *amax_out;
    Value *seed_lo, *seed_hi, *offset;
    llvm::AllocaInst* amax = nullptr;  // running largest finite |x| bits (a register after SROA)
  };
  Frame open(const std::string& name);
  // For each band of rows in [begin, end): produce it into scratch, then band_body(r0, nb).
  void bands(const Frame& f, const std::function<void(Value* r0, Value* nb)>& band_body);
  // row_body(r, row) for rows r0 .. r0 + nb of the band in scratch.
  void band_rows(const Frame& f, Value* r0, Value* nb,
                 const std::function<void(Value* r, Value* row)>& row_body);
  void stats_row(const Frame& f, Value* r, Value* row);
  void scale_block(const Frame& f, Value* i);
  void encode_row(const Frame& f, Value* r, Value* row);
  void begin_amax(Frame& f);
  void finish_amax(const Frame& f);
  Value* encode_lanes(Value* v, Value* rbits);
  void store_codes(Value* codes, Value* r, Value* c, Value* row_bytes, Value* code);

  Emitter& e_;
  const QuantizeKernelSpec& k_;
};

QuantizeEmitter::Frame QuantizeEmitter::open(const std::string& name) {
  auto& b = e_.b;
  llvm::Function* fn = e_.function(name, llvm::Type::getVoidTy(e_.ctx),
                                   {e_.i8()->getPointerTo(), e_.i64(), e_.i64()});
  auto it = fn->arg_begin();
  Frame f{};
  f.args = &*it;
  f.begin = &*(it + 1);
  f.end = &*(it + 2);
  f.cols = load_arg(e_, f.args, kCols, e_.i64());
  f.stats = load_arg(e_, f.args, kStats, e_.i32()->getPointerTo());
  f.scale_cols = load_arg(e_, f.args, kScaleCols, e_.i64());
  f.factors = load_arg(e_, f.args, kFactors, e_.f32()->getPointerTo());
  f.scales = load_arg(e_, f.args, kScales, e_.i8()->getPointerTo());
  f.s_enc = load_arg(e_, f.args, kSEnc, e_.f32());
  f.codes = load_arg(e_, f.args, kCodes, e_.i8()->getPointerTo());
  f.row_bytes = load_arg(e_, f.args, kRowBytes, e_.i64());
  f.amax_out = load_arg(e_, f.args, kAmax, e_.i32()->getPointerTo());
  Value* seed = load_arg(e_, f.args, kSeed, e_.i64());
  f.seed_lo = b.CreateTrunc(seed, e_.i32());
  f.seed_hi = b.CreateTrunc(b.CreateLShr(seed, e_.ci64(32)), e_.i32());
  f.offset = load_arg(e_, f.args, kOffset, e_.i64());
  return f;
}

void QuantizeEmitter::bands(const Frame& f,
                            const std::function<void(Value* r0, Value* nb)>& band_body) {
  auto& b = e_.b;
  SourceSpec s;
  s.dtype = k_.input;
  s.transposed = role_info(k_.role).transposed;
  s.had = k_.op.had;
  s.band_rows = k_.band_rows();
  s.vector_width = k_.config.vector_width;
  Value* src = load_arg(e_, f.args, kSrc, e_.i8()->getPointerTo());
  Value* stride = load_arg(e_, f.args, kSrcStride, e_.i64());
  Value* rows = load_arg(e_, f.args, kRows, e_.i64());
  Value* scratch = load_arg(e_, f.args, kScratch, e_.f32()->getPointerTo());
  Value* end = b.CreateSelect(b.CreateICmpSLT(f.end, rows), f.end, rows);
  // band loop: r0 from begin while r0 < end (the last band may be short)
  Value* span = b.CreateSub(end, f.begin);
  Value* count = b.CreateUDiv(b.CreateAdd(span, e_.ci64(s.band_rows - 1)), e_.ci64(s.band_rows));
  e_.loop(
      e_.ci64(0), count, 1,
      [&](Value* band) {
        Value* r0 = b.CreateAdd(f.begin, b.CreateMul(band, e_.ci64(s.band_rows)));
        Value* left = b.CreateSub(end, r0);
        Value* nb =
            b.CreateSelect(b.CreateICmpSLT(left, e_.ci64(s.band_rows)), left, e_.ci64(s.band_rows));
        emit_produce_band(e_, s, src, stride, scratch, f.cols, r0, nb);
        band_body(r0, nb);
      },
      0, "band");
}

void QuantizeEmitter::band_rows(const Frame& f, Value* r0, Value* nb,
                                const std::function<void(Value* r, Value* row)>& row_body) {
  auto& b = e_.b;
  Value* scratch = load_arg(e_, f.args, kScratch, e_.f32()->getPointerTo());
  e_.loop(
      e_.ci64(0), nb, 1,
      [&](Value* rr) {
        row_body(b.CreateAdd(r0, rr), e_.gep(e_.f32(), scratch, b.CreateMul(rr, f.cols)));
      },
      0, "br");
}

void QuantizeEmitter::begin_amax(Frame& f) {
  f.amax = e_.b.CreateAlloca(e_.i32());
  e_.b.CreateStore(e_.load(e_.i32(), f.amax_out, 0), f.amax);
}

void QuantizeEmitter::finish_amax(const Frame& f) {
  e_.store(e_.b.CreateLoad(e_.i32(), f.amax), f.amax_out);
}

void QuantizeEmitter::stats_row(const Frame& f, Value* r, Value* row) {
  auto& b = e_.b;
  const BlockAccess blocks(e_, k_.op.block, f.scale_cols);
  for_each_chunk(
      e_, f.cols, blocks.chunk_width(k_.config.vector_width), 0, k_.config.unroll,
      [&](Value* c, int lanes) {
        Value* u = b.CreateAnd(ir::bits(e_, e_.load(e_.f32(), e_.gep(e_.f32(), row, c), lanes)),
                               llvm::ConstantInt::get(e_.i32(lanes), 0x7fffffffu));
        blocks.update_max(f.stats, r, c, u);
        Value* finite = b.CreateSelect(b.CreateICmpULT(u, e_.c32(u, 0x7f800000u)), u, e_.c32(u, 0));
        Value* m = e_.reduce_umax(finite);
        Value* old = b.CreateLoad(e_.i32(), f.amax);
        b.CreateStore(b.CreateSelect(b.CreateICmpUGT(m, old), m, old), f.amax);
      });
}

void QuantizeEmitter::stats(const std::string& name) {
  Frame f = open(name);
  begin_amax(f);
  bands(f, [&](Value* r0, Value* nb) {
    band_rows(f, r0, nb, [&](Value* r, Value* row) { stats_row(f, r, row); });
  });
  finish_amax(f);
  e_.b.CreateRetVoid();
}

void QuantizeEmitter::scale_block(const Frame& f, Value* i) {
  auto& b = e_.b;
  const OperandSpec& s = k_.op;
  const float emax_value = elem_max(s.elem);
  Value* s_enc = f.s_enc;
  Value* nan = ir::from_bits(e_, e_.c32(s_enc, 0x7fc00000u));
  Value* stat = e_.load(e_.i32(), e_.gep(e_.i32(), f.stats, i), 0);
  Value* nonfinite = ir::stat_nonfinite(e_, stat);
  Value* amax = ir::stat_amax(e_, stat);
  Value* code = nullptr;    // i32 scale code (code formats)
  Value* value = nullptr;   // float scale value (fp32 scales)
  Value* factor = nullptr;  // encode factor, NaN for non-finite blocks
  switch (s.rule) {
    case ScaleRule::ocp_floor:
    case ScaleRule::ceil_pow2: {
      code = s.rule == ScaleRule::ocp_floor ? ir::scale_ocp_floor(e_, stat, elem_emax(s.elem))
                                            : ir::scale_ceil_pow2(e_, stat, emax_value);
      Value* is_nan = b.CreateICmpEQ(code, e_.c32(code, nx::kE8M0Nan));
      Value* safe = b.CreateSelect(is_nan, e_.c32(code, 127), code);
      factor = b.CreateSelect(is_nan, nan, ir::pow2f(e_, b.CreateSub(e_.c32(code, 127), safe)));
      break;
    }
    case ScaleRule::ms_pow2: {
      Value* ex = ir::scale_ms_pow2_exponent(e_, stat, emax_value);
      factor = ir::pow2f(e_, ex);
      Value* neg = b.CreateSub(e_.c32(ex, 0), ex);
      value = ir::pow2f(e_, neg);
      code = ir::e8m0_from_exponent(e_, neg);
      break;
    }
    case ScaleRule::two_level: {
      const nx::MiniFloat fmt = minifloat(s.scale, k_.ue5m3);
      Value* s_dec =
          b.CreateFMul(amax, b.CreateFMul(s_enc, e_.cf(s_enc, nx::div_rn(1.0f, emax_value))));
      Value* c = ir::mf_encode(e_, fmt, ir::min_f(e_, s_dec, e_.cf(s_enc, nx::kFloatMax)),
                               nx::Round::even, true, nullptr, 8);
      Value* global_decode = b.CreateFDiv(e_.cf(s_enc, 1.0f), s_enc);
      Value* enc =
          b.CreateFDiv(e_.cf(s_enc, 1.0f), b.CreateFMul(ir::mf_decode(e_, fmt, c), global_decode));
      enc = ir::min_f(e_, enc, e_.cf(s_enc, nx::kFloatMax));
      const nx::u32 bad = nx::mf_has_nan(fmt) ? nx::mf_nan_code(fmt) : nx::mf_max_code(fmt);
      code = b.CreateSelect(nonfinite, e_.c32(c, bad), c);
      factor = b.CreateSelect(nonfinite, nan, enc);
      break;
    }
    case ScaleRule::absmax: {
      Value* v = b.CreateSelect(b.CreateFCmpOEQ(amax, e_.cf(amax, 0.0f)), e_.cf(amax, 1.0f),
                                b.CreateFDiv(amax, e_.cf(amax, emax_value)));
      value = b.CreateSelect(nonfinite, nan, v);
      factor = value;
      break;
    }
  }
  if (s.scale == ScaleFormat::fp32)
    e_.store(value, e_.gep(e_.f32(), f.scales, i));
  else
    e_.store(b.CreateTrunc(code, e_.i8()), e_.gep(e_.i8(), f.scales, i));
  e_.store(factor, e_.gep(e_.f32(), f.factors, i));
}

void QuantizeEmitter::scales(const std::string& name) {
  const Frame f = open(name);
  e_.loop(
      f.begin, f.end, 1, [&](Value* i) { scale_block(f, i); }, 0, "blk");
  e_.b.CreateRetVoid();
}

Value* QuantizeEmitter::encode_lanes(Value* v, Value* rbits) {
  const OperandSpec& s = k_.op;
  if (s.elem == ElemFormat::e2m1) return ir::e2m1_encode(e_, v, s.round, rbits, s.sr_bits);
  const nx::MiniFloat fmt = minifloat(s.elem);
  Value* sat = ir::mf_encode(e_, fmt, v, s.round, true, rbits, s.sr_bits);
  if (fmt.special != nx::Special::ieee) return sat;
  // Inf stays Inf in formats that have it
  auto& b = e_.b;
  Value* is_inf = b.CreateFCmpOEQ(ir::abs_f(e_, v), e_.cf(v, INFINITY));
  return b.CreateSelect(is_inf, ir::mf_encode(e_, fmt, v, s.round, false, rbits, s.sr_bits), sat);
}

void QuantizeEmitter::store_codes(Value* codes, Value* r, Value* c, Value* row_bytes, Value* code) {
  auto& b = e_.b;
  Value* row = e_.gep(e_.i8(), codes, b.CreateMul(r, row_bytes));
  const int lanes = Emitter::lanes(code);
  if (k_.op.elem != ElemFormat::e2m1) {
    e_.store(b.CreateTrunc(code, e_.i8(lanes)), e_.gep(e_.i8(), row, c));
    return;
  }
  std::vector<int> even, odd;
  for (int i = 0; i < lanes; i += 2) {
    even.push_back(i);
    odd.push_back(i + 1);
  }
  Value* lo = b.CreateShuffleVector(code, code, even);
  Value* hi = b.CreateShuffleVector(code, code, odd);
  Value* packed = b.CreateOr(b.CreateAnd(lo, e_.c32(lo, 15)),
                             b.CreateShl(b.CreateAnd(hi, e_.c32(hi, 15)), e_.c32(hi, 4)));
  e_.store(b.CreateTrunc(packed, e_.i8(lanes / 2)),
           e_.gep(e_.i8(), row, b.CreateLShr(c, e_.ci64(1))));
}

void QuantizeEmitter::encode_row(const Frame& f, Value* r, Value* row) {
  auto& b = e_.b;
  const OperandSpec& s = k_.op;
  const BlockAccess blocks(e_, s.block, f.scale_cols);
  const bool divide = s.rule == ScaleRule::absmax;
  const int width = blocks.chunk_width(k_.config.vector_width);
  const int tail = s.elem == ElemFormat::e2m1 ? 2 : 0;
  if (s.elem == ElemFormat::e2m1 && width < 2)
    fail(ErrorKind::unsupported, "host quantize: E2M1 blocks of odd width ({}) are not supported",
         block_text(s.block));
  Value* base = b.CreateAdd(f.offset, b.CreateMul(r, f.cols));
  for_each_chunk(e_, f.cols, width, tail, k_.config.unroll, [&](Value* c, int lanes) {
    Value* v = e_.load(e_.f32(), e_.gep(e_.f32(), row, c), lanes);
    Value* factor = blocks.load(e_.f32(), f.factors, r, c, lanes);
    Value* scaled = divide ? b.CreateFDiv(v, factor) : b.CreateFMul(v, factor);
    Value* rbits = nullptr;
    if (s.round == Round::stochastic)
      rbits = lanes >= 4 ? ir::sr_bits_chunk(e_, f.seed_lo, f.seed_hi, b.CreateAdd(base, c), lanes,
                                             s.sr_bits)
                         : ir::sr_bits(e_, f.seed_lo, f.seed_hi,
                                       e_.iota(b.CreateAdd(base, c), lanes), s.sr_bits);
    Value* code = encode_lanes(scaled, rbits);
    code = b.CreateSelect(b.CreateFCmpUNO(factor, factor), e_.c32(code, 0), code);
    store_codes(f.codes, r, c, f.row_bytes, code);
  });
}

void QuantizeEmitter::encode(const std::string& name) {
  const Frame f = open(name);
  bands(f, [&](Value* r0, Value* nb) {
    band_rows(f, r0, nb, [&](Value* r, Value* row) { encode_row(f, r, row); });
  });
  e_.b.CreateRetVoid();
}

// One pass for blocks that lie within a band (tile, row) and need no tensor scale: per band,
// stats of its rows, the scales of its blocks, then its codes, while the band is in cache.
// args.stats must be zero for the rows' blocks on entry.
void QuantizeEmitter::fused(const std::string& name) {
  auto& b = e_.b;
  Frame f = open(name);
  begin_amax(f);
  const Block& blk = k_.op.block;
  bands(f, [&](Value* r0, Value* nb) {
    band_rows(f, r0, nb, [&](Value* r, Value* row) { stats_row(f, r, row); });
    Value *first = r0, *last = b.CreateAdd(r0, nb);  // blocks of rows [r0, r0 + nb)
    if (blk.kind == Block::Kind::tile) {
      first = b.CreateMul(b.CreateUDiv(r0, e_.ci64(blk.rows)), f.scale_cols);
      last = b.CreateMul(b.CreateUDiv(b.CreateAdd(last, e_.ci64(blk.rows - 1)), e_.ci64(blk.rows)),
                         f.scale_cols);
    }
    e_.loop(
        first, last, 1, [&](Value* i) { scale_block(f, i); }, 0, "blk");
    band_rows(f, r0, nb, [&](Value* r, Value* row) { encode_row(f, r, row); });
  });
  finish_amax(f);
  b.CreateRetVoid();
}

// DGE: args.codes is the output tensor (k_.output) and args.row_bytes its row stride in elements.
void QuantizeEmitter::dge(const std::string& name) {
  auto& b = e_.b;
  const Frame f = open(name);
  const BlockAccess blocks(e_, k_.op.block, f.scale_cols);
  llvm::Type* out_elem = k_.output == DType::f32 ? e_.f32() : e_.i16();
  bands(f, [&](Value* r0, Value* nb) {
    band_rows(f, r0, nb, [&](Value* r, Value* row) {
      Value* dst = e_.gep(out_elem, f.codes, b.CreateMul(r, f.row_bytes));
      for_each_chunk(e_, f.cols, blocks.chunk_width(k_.config.vector_width), 0, k_.config.unroll,
                     [&](Value* c, int lanes) {
                       Value* w = e_.load(e_.f32(), e_.gep(e_.f32(), row, c), lanes);
                       Value* ex = ir::scale_ms_pow2_exponent(
                           e_, blocks.load(e_.i32(), f.stats, r, c, lanes), elem_max(k_.op.elem));
                       Value* factor = ir::dge_factor(e_, b.CreateFMul(w, ir::pow2f(e_, ex)),
                                                      k_.dge_k, k_.dge_clip);
                       store_from_float(e_, k_.output, factor, e_.gep(out_elem, dst, c));
                     });
    });
  });
  b.CreateRetVoid();
}

}  // namespace

void emit_dge(llvm::Module& module, const QuantizeKernelSpec& spec, const std::string& prefix) {
  llvm::IRBuilder<> builder(module.getContext());
  Emitter e(module, builder);
  QuantizeEmitter q(e, spec);
  q.stats(prefix + "_stats");
  q.dge(prefix + "_dge");
}

void emit_quantize(llvm::Module& module, const QuantizeKernelSpec& spec,
                   const std::string& prefix) {
  llvm::IRBuilder<> builder(module.getContext());
  Emitter e(module, builder);
  QuantizeEmitter q(e, spec);
  q.stats(prefix + "_stats");
  q.scales(prefix + "_scales");
  q.encode(prefix + "_encode");
  q.fused(prefix + "_fused");
}

}  // namespace fp4jit::host
