// The CUDA backend: Engine calls become launch plans (plan.hpp) executed on the caller's stream
// in the device's primary context, with stream-ordered scratch memory.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/gemm.hpp"
#include "gemm/params.cuh"
#include "runtime/backend.hpp"
#include "runtime/cuda/driver.hpp"
#include "runtime/cuda/modules.hpp"
#include "runtime/cuda/plan.hpp"
#include "runtime/cuda/workspace.hpp"
#include "runtime/tuning_keys.hpp"

namespace fp4jit::cuda {

struct GemmPlan;

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const EngineOptions& options);  // throws Error(no_gpu) without a device
  ~CudaBackend() override;

  BackendKind kind() const override { return BackendKind::cuda; }
  std::string description() const override { return description_; }
  bool computes_column_sums() const override { return true; }
  bool reads_seed_step() const override { return true; }

  // The tuned config for (operand, row bucket, columns, input type, recipe) when the cache has one,
  // else the heuristic's.
  void quantize(const Recipe& recipe, Role role, const TensorView& in, const QuantizedView& out,
                const QuantizeArgs& args, void* stream) override;
  // With an explicit config (null: the heuristic's), for the tuner; arguments unchecked.
  void quantize_with(const QuantizeTuning* config, const Recipe& recipe, Role role,
                     const TensorView& in, const QuantizedView& out, const QuantizeArgs& args,
                     void* stream);
  // The tuned config of `role` (with `pair`: of the pair role + its transposed copy), or nullopt.
  std::optional<QuantizeTuning> tuned_quantize(const Recipe& recipe, Role role,
                                               const TensorView& in, bool pair = false);
  // The pair's tuned config when the cache has one, else the heuristic's.
  void quantize_pair(const Recipe& recipe, Role role, const TensorView& in,
                     const QuantizedView& out, const QuantizedView& out_transposed,
                     const QuantizeArgs& args, void* stream) override;
  // With an explicit config (null: the heuristic's) for the pair's quantize_tile kernels, for the
  // tuner; arguments unchecked.
  void quantize_pair_with(const QuantizeTuning* config, const Recipe& recipe, Role role,
                          const TensorView& in, const QuantizedView& out,
                          const QuantizedView& out_transposed, const QuantizeArgs& args,
                          void* stream);
  void dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                  std::int64_t source_rows, std::int64_t source_cols, const TensorView& out,
                  void* stream) override;
  void dge(const Recipe& recipe, const TensorView& w, const TensorView& out, void* stream) override;
  // From the workspace pool, stream-ordered: freed on `stream` when the handle goes.
  std::shared_ptr<void> scratch(std::int64_t bytes, void* stream) override;
  // In gemm_launch.cpp. The tuned choice for (op, M bucket, N, K, out, recipe) when the cache
  // (or a bundle) holds one, else the heuristic's.
  void gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a, const QuantizedView& b,
            const GemmShape& shape, const TensorView& out, const GemmEpilogue& epilogue,
            void* stream) override;

  // One GEMM with an explicit choice (null: the heuristic's), for the tuner.
  void launch_gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a, const QuantizedView& b,
                   const GemmShape& shape, const TensorView& out, const GemmEpilogue& epilogue,
                   void* stream, const codegen::GemmChoice* choice);
  // The tuned choice for a GEMM, or nullopt (no result, or one that no longer validates).
  std::optional<codegen::GemmChoice> tuned_gemm_choice(const Recipe& recipe, GemmOp op,
                                                       const GemmShape& shape, DType out);
  // What gemm() launches: the tuned choice, else FP4JIT_SM90_GEMM's (sm_90a), else nullopt (the
  // heuristic's); *source (may be null) names which ("tuned", "FP4JIT_SM90_GEMM", "heuristic").
  std::optional<codegen::GemmChoice> gemm_choice(const Recipe& recipe, GemmOp op,
                                                 const GemmShape& shape, DType out,
                                                 const char** source = nullptr);
  std::string gemm_kernel(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                          DType out) override;

  const DeviceInfo& device() const { return info_; }
  const DeviceIdentity& identity() const { return tuned_->device(); }
  TunedConfigs& tuned() { return *tuned_; }
  KernelCache* cache() { return cache_.get(); }
  CUcontext context() const { return ctx_; }
  ModuleRegistry::Counts kernel_counts() const { return modules_->counts(); }
  // Bytes the last call's kernels moved (estimate: every read and write of global memory once).
  std::int64_t last_bytes() const { return last_bytes_; }

 private:
  // One operand (out_t null) or a pair through plan_quantize, with `config`'s overrides.
  void quantize_planned(const QuantizeTuning* config, const Recipe& recipe, Role role,
                        const TensorView& in, const QuantizedView& out, const QuantizedView* out_t,
                        const QuantizeArgs& args, void* stream);
  template <class MakePlan>
  void run(void* stream, MakePlan make_plan);
  // In gemm_launch.cpp: one GEMM kernel of a plan (tensor maps over the given operand codes);
  // dependent: as a programmatic dependent of the kernel before it (the swapped kernel always is).
  void launch_gemm_kernel(const GemmPlan& plan, const void* a_codes, const void* b_codes,
                          const GemmShape& shape, gemm::GemmParams& p, CUstream s,
                          bool dependent = false);
  // Error(invalid_argument) naming `what` unless the GPU can address p (null passes). The
  // driver is asked once per allocation: the ranges it reports are remembered (addressable_), so
  // a range freed and then passed again is not asked about again (using freed memory is the
  // caller's error; the driver's address ranges of device memory never hold host memory). The
  // backend's own live scratch passes unasked; while `stream` is being captured into a CUDA
  // graph, so does a pointer the driver cannot describe (memory the graph allocates is mapped
  // only when it runs).
  void check_device_pointer(const void* p, std::string_view what, void* stream) const;

  const Driver& d_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  DeviceInfo info_;
  std::unique_ptr<KernelCache> cache_;
  std::unique_ptr<ModuleRegistry> modules_;
  std::unique_ptr<WorkspacePool> workspace_;  // every call's scratch
  std::unique_ptr<TunedConfigs> tuned_;
  std::string description_;
  std::int64_t last_bytes_ = 0;
  // Allocations the driver reported addressable: [start, end) byte ranges, the most recently
  // found first; a framework's caching allocator hands out a few large ones, so a training step
  // asks the driver once per allocation instead of once per pointer per call.
  struct Range {
    std::uintptr_t start = 0, end = 0;
  };
  static constexpr std::size_t kRanges = 64;
  mutable std::mutex ranges_mutex_;
  mutable std::vector<Range> addressable_;
};

}  // namespace fp4jit::cuda
