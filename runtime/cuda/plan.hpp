// Launch plans: what one Engine call does on the GPU, as data. A plan is a list of steps
// (memsets and kernel launches with their argument bytes) built on the host without touching the
// device, so the same code serves the CUDA executor, ahead-of-time compilation (the set of
// kernels a recipe can use) and the CPU emulator of the tests.
//
// Scratch memory comes from an Arena: a first, counting run of the planner sizes it; the executor
// allocates that much (stream-ordered) and runs the planner again with the real base address.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "codegen/kernel_source.hpp"
#include "codegen/kernels.hpp"
#include "fp4jit/engine.hpp"
#include "quantize/args.cuh"

namespace fp4jit::cuda {

struct DeviceInfo {
  std::string target = "sm_90a";
  int sm_count = 132;
  // Tuned launch configs of the quantize kernels (null: the heuristic's). One that does not
  // validate for the operands a pass quantizes is left aside for the heuristic's.
  const codegen::RowsConfig* rows_config = nullptr;
  const codegen::TileConfig* tile_config = nullptr;
  // Where a row-wise OCC operand with one scale per row takes the one-pass occ_rows kernel
  // (instead of occ_select, occ_scan, occ_write and quantize_rows): `measured`, the rows it was
  // measured faster on (4096 < cols <= 16384); `always`, wherever it can (cols <= 16384); `never`.
  // FP4JIT_OCC_ROWS=0 / 1 overrides it with never / always.
  enum class OccRows { measured, always, never } occ_rows = OccRows::measured;
};

// A tuned quantize config as stored: "rows:threads=256,unroll=4" (quantize_rows) or
// "tile:threads=256,tile=64x64" (quantize_tile). parse throws Error(invalid_argument) naming the
// text; the result holds the one config its text names.
struct QuantizeTuning {
  std::optional<codegen::RowsConfig> rows;
  std::optional<codegen::TileConfig> tile;
  std::string text() const;
};
QuantizeTuning parse_quantize_tuning(const std::string& text);

class Arena {
 public:
  // Counting runs hand out fake, non-null addresses at kCountingBase (never dereferenced).
  static constexpr std::uintptr_t kCountingBase = std::uintptr_t{1} << 44;
  explicit Arena(std::uintptr_t base = kCountingBase) : base_(base) {}
  template <class T>
  T* take(std::int64_t count) {
    return reinterpret_cast<T*>(take_bytes(count * static_cast<std::int64_t>(sizeof(T))));
  }
  void* take_bytes(std::int64_t bytes);  // 256-byte aligned
  std::int64_t used() const { return used_; }

 private:
  std::uintptr_t base_;
  std::int64_t used_ = 0;
};

struct Launch {
  codegen::KernelSource kernel;
  std::uint32_t grid = 1, block = 256;
  // Persistent CTAs (each loops over work): `grid` is the most that have work; the executor
  // launches no more than fit on the device at once.
  bool persistent = false;
  std::vector<std::uint8_t> args;  // the kernel's argument struct, by value
  std::int64_t bytes = 0;          // global-memory bytes it moves (estimate: reads + writes)
  int smem = 0;                    // dynamic shared memory per CTA, bytes
};
struct Memset {
  void* ptr = nullptr;
  std::uint32_t value = 0;
  std::int64_t words = 0;  // 32-bit words
};
using Step = std::variant<Launch, Memset>;
using Plan = std::vector<Step>;

// A launch of `kernel` on `grid` (clamped to [1, 2^31 - 1]) CTAs of `block` threads, its argument
// struct copied by value.
template <class A>
Launch make_launch(codegen::KernelSource kernel, std::int64_t grid, int block, const A& args,
                   std::int64_t bytes, bool persistent = false, int smem = 0) {
  Launch l;
  l.persistent = persistent;
  l.smem = smem;
  l.kernel = std::move(kernel);
  l.grid = static_cast<std::uint32_t>(std::clamp<std::int64_t>(grid, 1, 0x7fffffff));
  l.block = static_cast<std::uint32_t>(block);
  l.args.resize(sizeof(A));
  std::memcpy(l.args.data(), &args, sizeof(A));
  l.bytes = bytes;
  return l;
}

// Column sums of `in` (QuantizeArgs::column_sums, plan_sums.cpp): the floats of the per-chunk
// scratch, the pass of their own that fills it (where no quantize kernel sums as it goes), and
// the reduce of the chunks into `out` [in.cols] of out_dtype.
std::int64_t column_sums_scratch_floats(const TensorView& in);
Launch column_sums_pass(const TensorView& in, float* partial, const DeviceInfo& device);
Launch column_sums_reduce(const TensorView& in, const float* partial, void* out, DType out_dtype,
                          const DeviceInfo& device);

// The output struct of one operand's kernels (codes, scales, amax, shape) from its layout and
// the caller's buffers (plan.cpp).
kern::OperandOut operand_out(const QuantLayout& l, const QuantizedView& q);

// OCC (plan_occ.cpp): sorted positions of lo and hi in a row of n for quantile alpha, and the
// one-pass occ_rows plan of a row-wise operand with one scale per row, where the device's policy
// (DeviceInfo::occ_rows, FP4JIT_OCC_ROWS) and the operand take it: appended to `plan`, true;
// else false (the caller plans occ_select and the rest).
std::int64_t occ_lo_index(double alpha, std::int64_t n);
std::int64_t occ_hi_index(double alpha, std::int64_t n);
bool plan_occ_rows(const Recipe& recipe, const DeviceInfo& device, const codegen::KernelOperand& op,
                   const TensorView& in, const QuantLayout& l, const QuantizedView& out,
                   const kern::QuantizeArgs& qa, Arena& arena, Plan& plan);

// Stats passes a plan can leave out (plan_stats.cpp).
// Whether occ_select can take an OCC operand's stats pass (its stat words and amax).
bool occ_stats_in_select(const OperandSpec& s, bool transposed);
// Whether a pair's operands have the same stat words and amax: one stats pass of the row-wise
// operand serves both.
bool shared_source_stats(const OperandSpec& r, const OperandSpec& c);
// Whether a pair's operands need only the same per-tensor amax: the row-wise operand's stats pass
// alone serves both.
bool shared_tensor_amax(const OperandSpec& r, const OperandSpec& c);

// Quantizes `role` (mode rows or cols, from role_info(role).transposed), or with `out_t` the
// pair (role, its transposed partner) from one read (mode both).
Plan plan_quantize(const Recipe& recipe, Role role, const TensorView& in, const QuantizedView& out,
                   const QuantizedView* out_t, const QuantizeArgs& args, const DeviceInfo& device,
                   Arena& arena);
Plan plan_dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                     std::int64_t source_rows, std::int64_t source_cols, const TensorView& out,
                     const DeviceInfo& device, Arena& arena);
Plan plan_dge(const Recipe& recipe, const TensorView& w, const TensorView& out,
              const DeviceInfo& device, Arena& arena);

// Every kernel the plans above can launch for `recipe` with these input (and output) types, in a
// stable order without duplicates: what `fp4jit compile` builds ahead of time.
std::vector<codegen::KernelSource> recipe_kernels(const Recipe& recipe, const std::string& target,
                                                  std::span<const DType> dtypes);

// Sum of the launches' byte estimates.
std::int64_t plan_bytes(const Plan& plan);

}  // namespace fp4jit::cuda
