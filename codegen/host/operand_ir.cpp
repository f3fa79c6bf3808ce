#include "codegen/host/operand_ir.hpp"

#include "codegen/host/ir_numerics.hpp"

namespace fp4jit::host {

using llvm::Value;

Value* load_arg(Emitter& e, Value* args, int index, llvm::Type* type) {
  Value* slot = e.b.CreateGEP(e.i8(), e.cast_ptr(args, e.i8()), e.ci64(8 * index));
  return e.b.CreateAlignedLoad(type, e.cast_ptr(slot, type), llvm::Align(8));
}

Value* load_as_float(Emitter& e, DType dtype, Value* ptr, int lanes) {
  switch (dtype) {
    case DType::f32:
      return e.load(e.f32(), ptr, lanes);
    case DType::bf16:
      return ir::bf16_to_float(e, e.load(e.i16(), ptr, lanes));
    case DType::f16:
      return ir::f16_to_float(e, e.load(e.i16(), ptr, lanes));
  }
  return nullptr;
}

void store_from_float(Emitter& e, DType dtype, Value* value, Value* ptr) {
  switch (dtype) {
    case DType::f32:
      e.store(value, ptr);
      return;
    case DType::bf16:
      e.store(ir::float_to_bf16(e, value), ptr);
      return;
    case DType::f16:
      e.store(ir::float_to_f16(e, value), ptr);
      return;
  }
}

namespace {

llvm::Type* dtype_elem(Emitter& e, DType d) {
  return d == DType::f32 ? e.f32() : e.i16();
}

void produce_rows(Emitter& e, const SourceSpec& s, Value* src, Value* stride, Value* scratch,
                  Value* cols, Value* r0, Value* nb) {
  llvm::Type* elem = dtype_elem(e, s.dtype);
  e.loop(
      e.ci64(0), nb, 1,
      [&](Value* rr) {
        Value* row = e.gep(elem, src, e.b.CreateMul(e.b.CreateAdd(r0, rr), stride));
        Value* dst = e.gep(e.f32(), scratch, e.b.CreateMul(rr, cols));
        for_each_chunk(e, cols, s.vector_width, 0, 1, [&](Value* c, int lanes) {
          e.store(load_as_float(e, s.dtype, e.gep(elem, row, c), lanes), e.gep(e.f32(), dst, c));
        });
      },
      0, "rr");
}

// In-register transpose of n vectors of n lanes (n a power of two): stage b swaps bit b of the
// row index with bit b of the lane index, so after every stage rows[i][j] = old rows[j][i].
void transpose_square(Emitter& e, std::vector<Value*>& rows) {
  const int n = static_cast<int>(rows.size());
  for (int b = 1; b < n; b <<= 1) {
    std::vector<int> lo(static_cast<std::size_t>(n)), hi(static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j) {
      lo[static_cast<std::size_t>(j)] = (j & b) == 0 ? j : n + (j ^ b);
      hi[static_cast<std::size_t>(j)] = (j & b) == 0 ? (j ^ b) : n + j;
    }
    for (int i = 0; i < n; ++i) {
      if (i & b) continue;
      Value* a = rows[static_cast<std::size_t>(i)];
      Value* c = rows[static_cast<std::size_t>(i + b)];
      rows[static_cast<std::size_t>(i)] = e.b.CreateShuffleVector(a, c, lo);
      rows[static_cast<std::size_t>(i + b)] = e.b.CreateShuffleVector(a, c, hi);
    }
  }
}

// One operand column c (source row c) of nb rows, element by element.
void produce_column(Emitter& e, DType dtype, llvm::Type* elem, Value* src, Value* stride,
                    Value* scratch, Value* cols, Value* r0, Value* nb, Value* c) {
  e.loop(
      e.ci64(0), nb, 1,
      [&](Value* i) {
        Value* at = e.b.CreateAdd(e.b.CreateMul(c, stride), e.b.CreateAdd(r0, i));
        e.store(load_as_float(e, dtype, e.gep(elem, src, at), 0),
                e.gep(e.f32(), scratch, e.b.CreateAdd(e.b.CreateMul(i, cols), c)));
      },
      0, "ti");
}

// Transposed: operand rows r0 .. r0 + nb are source columns; source row c holds operand column c.
// Full bands of a power-of-two height tb (4..32) go tile by tile: tb source rows of tb elements,
// transposed in registers, stored as tb operand-row vectors. Other columns go one at a time.
void produce_transposed(Emitter& e, const SourceSpec& s, Value* src, Value* stride, Value* scratch,
                        Value* cols, Value* r0, Value* nb) {
  llvm::Type* elem = dtype_elem(e, s.dtype);
  const int tb = s.band_rows;
  const bool tiles = tb >= 4 && tb <= 32 && (tb & (tb - 1)) == 0;
  Value* start = e.ci64(0);
  if (tiles) {
    llvm::Function* fn = e.b.GetInsertBlock()->getParent();
    llvm::BasicBlock* before = e.b.GetInsertBlock();
    auto* tile_bb = llvm::BasicBlock::Create(e.ctx, "band.tiles", fn);
    auto* rest_bb = llvm::BasicBlock::Create(e.ctx, "band.rest", fn);
    e.b.CreateCondBr(e.b.CreateICmpEQ(nb, e.ci64(tb)), tile_bb, rest_bb);
    e.b.SetInsertPoint(tile_bb);
    Value* end = e.loop(
        e.ci64(0), cols, tb,
        [&](Value* c) {
          std::vector<Value*> rows;
          for (int j = 0; j < tb; ++j) {
            Value* at = e.b.CreateAdd(e.b.CreateMul(e.b.CreateAdd(c, e.ci64(j)), stride), r0);
            rows.push_back(load_as_float(e, s.dtype, e.gep(elem, src, at), tb));
          }
          transpose_square(e, rows);
          for (int i = 0; i < tb; ++i)
            e.store(rows[static_cast<std::size_t>(i)],
                    e.gep(e.f32(), scratch, e.b.CreateAdd(e.b.CreateMul(e.ci64(i), cols), c)));
        },
        0, "tile");
    llvm::BasicBlock* tiled = e.b.GetInsertBlock();
    e.b.CreateBr(rest_bb);
    e.b.SetInsertPoint(rest_bb);
    llvm::PHINode* phi = e.b.CreatePHI(e.i64(), 2, "rest");
    phi->addIncoming(e.ci64(0), before);
    phi->addIncoming(end, tiled);
    start = phi;
  }
  e.loop(
      start, cols, 1,
      [&](Value* c) { produce_column(e, s.dtype, elem, src, stride, scratch, cols, r0, nb, c); }, 0,
      "tc");
}

void hadamard_rows(Emitter& e, const SourceSpec& s, Value* scratch, Value* cols, Value* nb) {
  const int n = s.had.size;
  const int w = std::min(n, s.vector_width);
  const nx::SignMask signs = s.had.effective_mask();
  e.loop(
      e.ci64(0), nb, 1,
      [&](Value* rr) {
        Value* row = e.gep(e.f32(), scratch, e.b.CreateMul(rr, cols));
        e.loop(
            e.ci64(0), cols, n,
            [&](Value* c) {
              std::vector<Value*> parts;
              for (int p = 0; p < n / w; ++p)
                parts.push_back(
                    e.load(e.f32(), e.gep(e.f32(), row, e.b.CreateAdd(c, e.ci64(p * w))), w));
              ir::hadamard(e, parts, n, signs);
              for (int p = 0; p < n / w; ++p)
                e.store(parts[static_cast<std::size_t>(p)],
                        e.gep(e.f32(), row, e.b.CreateAdd(c, e.ci64(p * w))));
            },
            0, "hc");
      },
      0, "hr");
}

}  // namespace

void emit_produce_band(Emitter& e, const SourceSpec& s, Value* src, Value* src_stride,
                       Value* scratch, Value* cols, Value* r0, Value* nb) {
  if (s.transposed)
    produce_transposed(e, s, src, src_stride, scratch, cols, r0, nb);
  else
    produce_rows(e, s, src, src_stride, scratch, cols, r0, nb);
  if (s.had.size != 0) hadamard_rows(e, s, scratch, cols, nb);
}

void for_each_chunk(Emitter& e, Value* cols, int width, int tail, int unroll,
                    const std::function<void(Value* c, int lanes)>& body) {
  const auto step = [](int lanes) { return lanes == 0 ? 1 : lanes; };
  Value* rest = e.loop(
      e.ci64(0), cols, step(width), [&](Value* c) { body(c, width); }, unroll, "c");
  if (step(width) != step(tail))
    e.loop(
        rest, cols, step(tail), [&](Value* c) { body(c, tail); }, 0, "ct");
}

int BlockAccess::chunk_width(int vector_width) const {
  if (block_.kind != Block::Kind::tile) return vector_width;
  int w = vector_width;
  while (w > 1 && block_.cols % w != 0) w /= 2;
  return w == 1 ? 0 : w;
}

Value* BlockAccess::index(Value* r, Value* c) const {
  auto& b = e_.b;
  switch (block_.kind) {
    case Block::Kind::tile:
      return b.CreateAdd(b.CreateMul(b.CreateUDiv(r, e_.ci64(block_.rows)), scale_cols_),
                         b.CreateUDiv(c, e_.ci64(block_.cols)));
    case Block::Kind::row:
      return r;
    case Block::Kind::col:
      return c;
    case Block::Kind::tensor:
      return e_.ci64(0);
  }
  return e_.ci64(0);
}

Value* BlockAccess::load(llvm::Type* elem, Value* array, Value* r, Value* c, int lanes) const {
  Value* p = e_.gep(elem, array, index(r, c));
  if (per_lane()) return e_.load(elem, p, lanes);
  return e_.splat(e_.load(elem, p, 0), lanes);
}

void BlockAccess::update_max(Value* stats, Value* r, Value* c, Value* u) const {
  auto& b = e_.b;
  Value* p = e_.gep(e_.i32(), stats, index(r, c));
  if (per_lane()) {
    Value* old = e_.load(e_.i32(), p, Emitter::lanes(u));
    e_.store(b.CreateSelect(b.CreateICmpUGT(u, old), u, old), p);
    return;
  }
  Value* m = e_.reduce_umax(u);
  Value* old = e_.load(e_.i32(), p, 0);
  e_.store(b.CreateSelect(b.CreateICmpUGT(m, old), m, old), p);
}

}  // namespace fp4jit::host
