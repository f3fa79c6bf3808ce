#include "codegen/host/gemm_ir.hpp"

#include <llvm/IR/Intrinsics.h>

#include "codegen/host/ir_numerics.hpp"
#include "codegen/host/values_ir.hpp"

namespace fp4jit::host {

using llvm::Value;

namespace {

enum Field {
  kACodes,
  kARowBytes,
  kAScales,
  kAScaleCols,
  kBCodes,
  kBRowBytes,
  kBScales,
  kBScaleCols,
  kM,
  kN,
  kK,
  kAPacked,
  kBPacked,
  kC,
  kLdc,
  kAlpha,
  kNbPanels
};

struct Fn {
  Value* args;
  Value* begin;
  Value* end;
};

Fn open(Emitter& e, const std::string& name) {
  llvm::Function* fn =
      e.function(name, llvm::Type::getVoidTy(e.ctx), {e.i8()->getPointerTo(), e.i64(), e.i64()});
  auto it = fn->arg_begin();
  return {&*it, &*(it + 1), &*(it + 2)};
}

// Decodes panels of `width` operand rows into packed[panel][k][width].
void emit_pack(Emitter& e, const GemmKernelSpec& spec, const OperandSpec& op, bool is_a, int width,
               const std::string& name) {
  auto& b = e.b;
  const Fn f = open(e, name);
  const int base = is_a ? kACodes : kBCodes;
  const OperandValues values(e, op, spec.ue5m3, load_arg(e, f.args, base, e.i8()->getPointerTo()),
                             load_arg(e, f.args, base + 1, e.i64()),
                             load_arg(e, f.args, base + 2, e.i8()->getPointerTo()),
                             load_arg(e, f.args, base + 3, e.i64()));
  Value* rows = load_arg(e, f.args, is_a ? kM : kN, e.i64());
  Value* k = load_arg(e, f.args, kK, e.i64());
  Value* packed = load_arg(e, f.args, is_a ? kAPacked : kBPacked, e.f32()->getPointerTo());
  const int tail = op.elem == ElemFormat::e2m1 ? 2 : 0;
  const int chunk = values.chunk_width(spec.config.vector_width);
  e.loop(
      f.begin, f.end, 1,
      [&](Value* p) {
        Value* panel = e.gep(e.f32(), packed, b.CreateMul(b.CreateMul(p, k), e.ci64(width)));
        e.loop(
            e.ci64(0), e.ci64(width), 1,
            [&](Value* i) {
              Value* r = b.CreateAdd(b.CreateMul(p, e.ci64(width)), i);
              llvm::Function* fn = b.GetInsertBlock()->getParent();
              auto* live = llvm::BasicBlock::Create(e.ctx, "row.live", fn);
              auto* pad = llvm::BasicBlock::Create(e.ctx, "row.pad", fn);
              auto* done = llvm::BasicBlock::Create(e.ctx, "row.done", fn);
              b.CreateCondBr(b.CreateICmpSLT(r, rows), live, pad);
              b.SetInsertPoint(live);
              for_each_chunk(e, k, chunk, tail, 1, [&](Value* c, int lanes) {
                Value* v = values.value(r, c, lanes);
                for (int l = 0; l < std::max(lanes, 1); ++l) {
                  Value* x =
                      lanes == 0 ? v : b.CreateExtractElement(v, static_cast<std::uint64_t>(l));
                  Value* at = b.CreateAdd(b.CreateMul(b.CreateAdd(c, e.ci64(l)), e.ci64(width)), i);
                  e.store(x, e.gep(e.f32(), panel, at));
                }
              });
              b.CreateBr(done);
              b.SetInsertPoint(pad);
              e.loop(
                  e.ci64(0), k, 1,
                  [&](Value* kk) {
                    e.store(llvm::ConstantFP::get(e.f32(), 0.0),
                            e.gep(e.f32(), panel, b.CreateAdd(b.CreateMul(kk, e.ci64(width)), i)));
                  },
                  0, "kz");
              b.CreateBr(done);
              b.SetInsertPoint(done);
            },
            0, "pi");
      },
      0, "panel");
  b.CreateRetVoid();
}

// One mr x nr tile of C over k0 .. k0 + kc: C[i0.., j0..] += alpha * Ap Bp (masked at the edges).
void emit_tile(Emitter& e, const HostConfig& cfg, Value* ap, Value* bp, Value* kc, Value* c,
               Value* ldc, Value* i0, Value* j0, Value* m, Value* n, Value* alpha) {
  auto& b = e.b;
  const int vw = cfg.vector_width, mr = cfg.gemm_mr, nv = cfg.gemm_nr / vw;
  llvm::Type* vt = e.f32(vw);
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  std::vector<llvm::AllocaInst*> acc;
  for (int t = 0; t < mr * nv; ++t) acc.push_back(entry.CreateAlloca(vt));
  for (auto* a : acc) b.CreateStore(llvm::ConstantFP::get(vt, 0.0), a);
  llvm::Function* fmuladd = llvm::Intrinsic::getDeclaration(&e.mod, llvm::Intrinsic::fmuladd, {vt});
  e.loop(
      e.ci64(0), kc, 1,
      [&](Value* kk) {
        std::vector<Value*> bv;
        for (int j = 0; j < nv; ++j)
          bv.push_back(e.load(
              e.f32(),
              e.gep(e.f32(), bp, b.CreateAdd(b.CreateMul(kk, e.ci64(cfg.gemm_nr)), e.ci64(j * vw))),
              vw));
        for (int i = 0; i < mr; ++i) {
          Value* a = e.splat(
              e.load(e.f32(),
                     e.gep(e.f32(), ap, b.CreateAdd(b.CreateMul(kk, e.ci64(mr)), e.ci64(i))), 0),
              vw);
          for (int j = 0; j < nv; ++j) {
            auto* slot = acc[static_cast<std::size_t>(i * nv + j)];
            b.CreateStore(
                b.CreateCall(fmuladd, {a, bv[static_cast<std::size_t>(j)], b.CreateLoad(vt, slot)}),
                slot);
          }
        }
      },
      cfg.unroll, "kk");
  Value* alpha_v = e.splat(alpha, vw);
  for (int i = 0; i < mr; ++i) {
    Value* row = b.CreateAdd(i0, e.ci64(i));
    e.if_then(b.CreateICmpSLT(row, m), [&] {
      for (int j = 0; j < nv; ++j) {
        Value* col = b.CreateAdd(j0, e.ci64(j * vw));
        Value* lanes = e.iota(col, vw);
        Value* mask = b.CreateICmpSLT(lanes, e.splat(n, vw));
        Value* ptr = e.cast_ptr(e.gep(e.f32(), c, b.CreateAdd(b.CreateMul(row, ldc), col)), vt);
        Value* old =
            b.CreateMaskedLoad(vt, ptr, llvm::Align(4), mask, llvm::ConstantFP::get(vt, 0.0));
        Value* sum =
            b.CreateFMul(b.CreateLoad(vt, acc[static_cast<std::size_t>(i * nv + j)]), alpha_v);
        b.CreateMaskedStore(b.CreateFAdd(old, sum), ptr, llvm::Align(4), mask);
      }
    });
  }
}

void emit_compute(Emitter& e, const GemmKernelSpec& spec, const std::string& name) {
  auto& b = e.b;
  const HostConfig& cfg = spec.config;
  const Fn f = open(e, name);
  Value* m = load_arg(e, f.args, kM, e.i64());
  Value* n = load_arg(e, f.args, kN, e.i64());
  Value* k = load_arg(e, f.args, kK, e.i64());
  Value* ap = load_arg(e, f.args, kAPacked, e.f32()->getPointerTo());
  Value* bp = load_arg(e, f.args, kBPacked, e.f32()->getPointerTo());
  Value* c = load_arg(e, f.args, kC, e.f32()->getPointerTo());
  Value* ldc = load_arg(e, f.args, kLdc, e.i64());
  Value* alpha = load_arg(e, f.args, kAlpha, e.f32());
  Value* nb_panels = load_arg(e, f.args, kNbPanels, e.i64());
  const int mr = cfg.gemm_mr, nr = cfg.gemm_nr, kcs = cfg.gemm_kc;
  Value* n_panels = b.CreateUDiv(b.CreateAdd(n, e.ci64(nr - 1)), e.ci64(nr));
  Value* n_blocks =
      b.CreateUDiv(b.CreateAdd(n_panels, b.CreateSub(nb_panels, e.ci64(1))), nb_panels);
  const auto min64 = [&](Value* x, Value* y) {
    return b.CreateSelect(b.CreateICmpSLT(x, y), x, y);
  };
  e.loop(
      f.begin, f.end, 1,
      [&](Value* t) {
        Value* mb = b.CreateUDiv(t, n_blocks);
        Value* jb = b.CreateURem(t, n_blocks);
        Value* i_begin = b.CreateMul(mb, e.ci64(cfg.gemm_mc));
        Value* i_end = min64(b.CreateAdd(i_begin, e.ci64(cfg.gemm_mc)), m);
        Value* p_begin = b.CreateMul(jb, nb_panels);
        Value* p_end = min64(b.CreateAdd(p_begin, nb_panels), n_panels);
        Value* k_blocks = b.CreateUDiv(b.CreateAdd(k, e.ci64(kcs - 1)), e.ci64(kcs));
        e.loop(
            e.ci64(0), k_blocks, 1,
            [&](Value* kb) {
              Value* k0 = b.CreateMul(kb, e.ci64(kcs));
              Value* kc = min64(e.ci64(kcs), b.CreateSub(k, k0));
              e.loop(
                  p_begin, p_end, 1,
                  [&](Value* jp) {
                    Value* bpanel = e.gep(
                        e.f32(), bp, b.CreateMul(b.CreateAdd(b.CreateMul(jp, k), k0), e.ci64(nr)));
                    Value* i_count = b.CreateUDiv(
                        b.CreateAdd(b.CreateSub(i_end, i_begin), e.ci64(mr - 1)), e.ci64(mr));
                    e.loop(
                        e.ci64(0), i_count, 1,
                        [&](Value* ii) {
                          Value* i0 = b.CreateAdd(i_begin, b.CreateMul(ii, e.ci64(mr)));
                          Value* ip = b.CreateUDiv(i0, e.ci64(mr));
                          Value* apanel =
                              e.gep(e.f32(), ap,
                                    b.CreateMul(b.CreateAdd(b.CreateMul(ip, k), k0), e.ci64(mr)));
                          emit_tile(e, cfg, apanel, bpanel, kc, c, ldc, i0,
                                    b.CreateMul(jp, e.ci64(nr)), m, n, alpha);
                        },
                        0, "ip");
                  },
                  0, "jp");
            },
            0, "kb");
      },
      0, "task");
  b.CreateRetVoid();
}

}  // namespace

void emit_gemm(llvm::Module& module, const GemmKernelSpec& spec, const std::string& prefix) {
  llvm::IRBuilder<> builder(module.getContext());
  Emitter e(module, builder);
  emit_pack(e, spec, spec.a, true, spec.config.gemm_mr, prefix + "_pack_a");
  emit_pack(e, spec, spec.b, false, spec.config.gemm_nr, prefix + "_pack_b");
  emit_compute(e, spec, prefix + "_compute");
}

}  // namespace fp4jit::host
