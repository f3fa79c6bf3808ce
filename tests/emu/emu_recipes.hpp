// The recipes whose kernels are compiled into the emulator (and tested on it): every preset and
// overrides that reach the remaining code paths (Hadamard 32/128 with random signs, 2D blocks on
// a scale rule without a tensor scale, OCC with tile blocks, 16-bit SR on E2M1).
#pragma once
#include <string>
#include <vector>

#include "codegen/kernels.hpp"
#include "core/recipe.hpp"

namespace fp4jit::emu {

inline std::vector<std::string> emu_recipes() {
  return {"mxfp4",
          "nvfp4",
          "msfp4",
          "tetrajet",
          "ue5m3",
          "nvfp4:wgrad.had=128,wgrad.had.signs=random,wgrad.had.seed=7",
          "tetrajet:wgrad.had=32,wgrad.had.signs=random",
          "mxfp4:weight.block=16x16,x.round=stochastic,x.sr.bits=16",
          "msfp4:act.block=1x32,occ=0.9"};
}

// Small operands the emulator runs with poisoned bytes after each output (emu_bounds_test.cpp),
// their kernels planned for exactly these BF16 source shapes: the cases the CUDA quantize fuzz
// target (tests/fuzz) found writing past an output on an H200.
struct SmallOperand {
  const char* recipe;
  Role role;
  std::int64_t rows, cols;  // the source tensor
};
inline std::vector<SmallOperand> emu_small_operands() {
  return {{"mxfp4:block=32x1,wt.elem=e4m3,occ=0.9", Role::wt, 1, 64},
          {"mxfp4:wt.block=32x1,wt.elem=e4m3", Role::wt, 1, 64},
          {"mxfp4:wt.block=32x1,wt.elem=e4m3", Role::wt, 3, 64},
          {"mxfp4:wt.block=32x1,wt.elem=e4m3", Role::wt, 1, 96}};
}

// quantize_rows configs beside the heuristic's that the emulator also holds (x and dY alone, BF16):
// 12 warps, one item in flight and two.
inline std::vector<codegen::RowsConfig> emu_rows_configs() {
  return {codegen::RowsConfig{384, 1}, codegen::RowsConfig{384, 2}};
}

}  // namespace fp4jit::emu
