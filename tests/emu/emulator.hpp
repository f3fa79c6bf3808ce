// A CPU emulator of CUDA kernel launches for the quantize templates: each GPU thread is a fiber
// (own stack, cooperative switches), CTAs run one after another, warps meet at every shuffle and
// CTAs at every __syncthreads. A shuffle or barrier that some lanes of a warp never reach
// (divergence the real hardware would not tolerate) aborts the launch with a message.
//
// Executes launch plans (runtime/cuda/plan.hpp) on host memory, so the kernels and the planning
// are checked against the reference on machines without a GPU.
#pragma once
#include <string>
#include <unordered_map>

#include "runtime/cuda/plan.hpp"

namespace fp4jit::emu {

using KernelFn = void (*)(const void* args);

// Runs fn(args) on grid x block threads.
void launch(KernelFn fn, unsigned grid, unsigned block, const void* args);

// The kernels compiled into the emulator, by kernel key text (generated: emu_kernels*.cpp).
const std::unordered_map<std::string, KernelFn>& kernels();

// Executes a plan whose pointers are host memory. Throws if a kernel is not compiled in.
void execute(const cuda::Plan& plan);

}  // namespace fp4jit::emu
