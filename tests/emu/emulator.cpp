#include "tests/emu/emulator.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "tests/emu/cuda_shim.hpp"

// void fp4jit_emu_switch(void** save_sp, void* new_sp): saves the callee-saved registers and the
// SSE/x87 control words on the current stack, stores its pointer, and resumes the other stack.
extern "C" void fp4jit_emu_switch(void** save_sp, void* new_sp);
asm(R"(
  .text
  .globl fp4jit_emu_switch
  .type fp4jit_emu_switch,@function
fp4jit_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size fp4jit_emu_switch,.-fp4jit_emu_switch
)");

namespace fp4jit::emu {

namespace {

constexpr std::size_t kStackBytes = 256 * 1024;
constexpr unsigned kPersistentCtas = 3;

struct Fiber {
  void* sp = nullptr;
  ThreadIds ids;
  bool done = false;
  bool waiting = false;
};

struct Barrier {
  int arrived = 0;
  unsigned generation = 0;
};

struct Warp {
  Barrier barrier;
  std::uint64_t slots[32] = {};
};

struct Launch {
  KernelFn fn = nullptr;
  const void* args = nullptr;
  std::vector<Fiber> fibers;
  std::vector<std::unique_ptr<char[]>> stacks;
  std::vector<Warp> warps;
  Barrier block;
  void* main_sp = nullptr;
  int current = -1;
  std::string failure;
};

Launch* g_launch = nullptr;

Fiber& me() {
  return g_launch->fibers[g_launch->current];
}

void yield() {
  fp4jit_emu_switch(&me().sp, g_launch->main_sp);
}

void fiber_entry() {
  g_launch->fn(g_launch->args);
  me().done = true;
  yield();
  std::abort();  // never resumed after done
}

void* initial_stack(char* base) {
  auto top = reinterpret_cast<std::uintptr_t>(base + kStackBytes) & ~std::uintptr_t{15};
  auto* s = reinterpret_cast<std::uint64_t*>(top);
  s[-1] = 0;
  s[-2] = reinterpret_cast<std::uint64_t>(&fiber_entry);  // `ret` lands here, rsp = top - 8
  for (int i = 3; i <= 8; ++i) s[-i] = 0;                 // rbp rbx r12 r13 r14 r15
  const std::uint32_t control[2] = {0x1f80u, 0x037fu};    // MXCSR, x87 control word
  std::memcpy(&s[-9], control, sizeof control);
  return &s[-9];
}

int live_in(int first, int count) {
  int live = 0;
  for (int i = first; i < first + count && i < static_cast<int>(g_launch->fibers.size()); ++i)
    live += g_launch->fibers[i].done ? 0 : 1;
  return live;
}

void arrive(Barrier& b, int expected) {
  const unsigned gen = b.generation;
  if (++b.arrived == expected) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  me().waiting = true;
  while (b.generation == gen) yield();
  me().waiting = false;
}

}  // namespace

const ThreadIds& ids() {
  return me().ids;
}
int lane() {
  return static_cast<int>(me().ids.thread.x % 32);
}

void sync_threads() {
  arrive(g_launch->block, live_in(0, static_cast<int>(g_launch->fibers.size())));
}

std::array<std::uint64_t, 32> warp_exchange(std::uint64_t value) {
  const int t = static_cast<int>(me().ids.thread.x);
  Warp& w = g_launch->warps[t / 32];
  const int live = live_in(t - t % 32, 32);
  if (live != 32 && g_launch->failure.empty())
    g_launch->failure = "warp shuffle with only " + std::to_string(live) + " live lanes";
  w.slots[t % 32] = value;
  arrive(w.barrier, live);
  std::array<std::uint64_t, 32> all;
  std::memcpy(all.data(), w.slots, sizeof w.slots);
  arrive(w.barrier, live);
  return all;
}

void launch(KernelFn fn, unsigned grid, unsigned block, const void* args) {
  Launch l;
  l.fn = fn;
  l.args = args;
  l.fibers.resize(block);
  l.warps.resize((block + 31) / 32);
  for (unsigned t = 0; t < block; ++t) l.stacks.emplace_back(new char[kStackBytes]);
  g_launch = &l;
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < block; ++t) {
      Fiber& f = l.fibers[t];
      f = Fiber{};
      f.ids.thread.x = t;
      f.ids.block.x = b;
      f.ids.block_dim.x = block;
      f.ids.grid_dim.x = grid;
      f.sp = initial_stack(l.stacks[t].get());
    }
    l.block = Barrier{};
    for (Warp& w : l.warps) w.barrier = Barrier{};
    for (bool any = true; any;) {
      any = false;
      for (unsigned t = 0; t < block; ++t) {
        if (l.fibers[t].done) continue;
        any = true;
        l.current = static_cast<int>(t);
        fp4jit_emu_switch(&l.main_sp, l.fibers[t].sp);
      }
      if (!l.failure.empty()) break;
    }
    if (!l.failure.empty()) break;
  }
  g_launch = nullptr;
  if (!l.failure.empty()) throw std::runtime_error("emulated kernel: " + l.failure);
}

void execute(const cuda::Plan& plan) {
  for (const cuda::Step& step : plan) {
    if (const auto* m = std::get_if<cuda::Memset>(&step)) {
      auto* p = static_cast<std::uint32_t*>(m->ptr);
      for (std::int64_t i = 0; i < m->words; ++i) p[i] = m->value;
      continue;
    }
    const auto& l = std::get<cuda::Launch>(step);
    const auto it = kernels().find(l.kernel.key_text);
    if (it == kernels().end())
      throw std::runtime_error("kernel not compiled into the emulator: " + l.kernel.key_text);
    // Persistent kernels get as few CTAs as a small GPU would fit, so that every CTA loops over
    // several work items (rings wrap around, prefetches cross rows).
    const unsigned grid = l.persistent ? std::min<unsigned>(l.grid, kPersistentCtas) : l.grid;
    launch(it->second, grid, l.block, l.args.data());
  }
}

}  // namespace fp4jit::emu
