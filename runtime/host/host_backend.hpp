// The host backend: fp4jit's kernels generated as LLVM IR for this CPU, compiled with ORC, cached
// as object code in the kernel cache and run on a pool of threads. Same interface and byte layout
// as the other backends (runtime/backend.hpp, core/quantized.hpp); host pointers.
//   FP4JIT_HOST_CONFIG="vw=8,threads=4,..."  overrides the default config (see HostConfig)
#pragma once
#include <memory>
#include <mutex>
#include <span>

#include "codegen/host/host_config.hpp"
#include "runtime/backend.hpp"
#include "runtime/host/kernels.hpp"
#include "runtime/host/occ.hpp"
#include "runtime/host/thread_pool.hpp"
#include "runtime/tuning_keys.hpp"

namespace fp4jit::host {

struct HostBackendOptions {
  std::string cache_path;  // empty: no persistent kernel cache
  bool use_default_config = true;
  HostConfig config;  // used when !use_default_config
};

// The config fitted to a target: vector width from its widest registers, all cores.
HostConfig default_host_config(const HostTarget& target);

// The identity tunings of this CPU are stored under (cache/tuning.hpp): model = LLVM's CPU name,
// arch = the target name, sm_count = worker threads, compiler = the LLVM version.
DeviceIdentity host_identity(const HostTarget& target, int threads);

// A large float buffer left uninitialized (the kernels that fill it touch it first, in parallel).
using FloatBuffer = std::unique_ptr<float[]>;

// One operand of a GEMM: its role, layout and buffers (host memory).
struct GemmOperand {
  Role role = Role::x;
  QuantLayout layout;
  QuantizedView view;
};

// OCC compensation (fprop): C += R W^T, R the x operand's sparse residual (in `of`) and W the
// weight in high precision, [n, k].
struct GemmResidual {
  const QuantizedView* of = nullptr;
  TensorView weight;
};

class HostBackend final : public Backend {
 public:
  explicit HostBackend(const HostBackendOptions& options = {});
  ~HostBackend() override;

  BackendKind kind() const override { return BackendKind::host; }
  std::string description() const override;

  void quantize(const Recipe& recipe, Role role, const TensorView& in, const QuantizedView& out,
                const QuantizeArgs& args, void* stream) override;
  void dequantize(const Recipe& recipe, Role role, const QuantizedView& in,
                  std::int64_t source_rows, std::int64_t source_cols, const TensorView& out,
                  void* stream) override;
  void dge(const Recipe& recipe, const TensorView& w, const TensorView& out, void* stream) override;

  // Engine::gemm: the FP32 GEMM below into a float buffer, then the epilogue (gemm_epilogue.hpp).
  // The GEMM blocking is the tuned config for (op, M bucket, N, K, recipe) when the cache holds
  // one (tuner/), else the backend's config.
  void gemm(const Recipe& recipe, GemmOp op, const QuantizedView& a, const QuantizedView& b,
            const GemmShape& shape, const TensorView& out, const GemmEpilogue& epilogue,
            void* stream) override;
  std::string gemm_kernel(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                          DType out) override;
  // C [a.rows, b.rows] (float32, row stride ldc) = deq(a) deq(b)^T with FP32 accumulation,
  // block scales applied when decoding, tensor scales in the epilogue (+ OCC compensation).
  // The operands must come from `recipe` with matching K and Hadamard transforms.
  // `config` (null: the backend's) gives the GEMM blocking (vw, mr, nr, kc, mc).
  void gemm(const Recipe& recipe, const GemmOperand& a, const GemmOperand& b, float* c,
            std::int64_t ldc, const GemmResidual* residual = nullptr,
            const HostConfig* config = nullptr);
  // Quantize with an explicit config (vw, band, unroll) instead of the tuned or default one.
  void quantize_with(const HostConfig& config, const Recipe& recipe, Role role,
                     const TensorView& in, const QuantizedView& out, const QuantizeArgs& args);

  // The config a call uses: tuned for its problem when the cache holds a result, else config().
  // *tuned (may be null): whether the config is a tuned result rather than the backend's.
  HostConfig gemm_config_for(const Recipe& recipe, GemmOp op, const GemmShape& shape,
                             bool* tuned = nullptr);
  HostConfig quantize_config_for(const Recipe& recipe, Role role, const TensorView& in);
  const DeviceIdentity& identity() const { return tuned_->device(); }
  TunedConfigs& tuned() { return *tuned_; }

  // Builds (or loads from the cache) every kernel `recipe` needs for tensors of `dtypes`:
  // quantize and dequantize of every operand, OCC, double quantization, DGE and the three GEMMs.
  // Returns how many were compiled (the rest came from the cache or memory). For
  // `fp4jit compile --backend host` and cache warm-up.
  int precompile(const Recipe& recipe, std::span<const DType> dtypes);

  const HostConfig& config() const { return config_; }
  int threads() const { return pool_->size(); }
  KernelRegistry& kernels() { return *kernels_; }

 private:
  void quantize_locked(const Recipe& recipe, Role role, const TensorView& in,
                       const QuantizedView& out, const QuantizeArgs& args);
  void quantize_operand(const Recipe& recipe, Role role, const TensorView& src,
                        const QuantizedView& out, const QuantizeArgs& args);
  // OCC of `in`: the clamped source (float32, contiguous) and the residual, source positions.
  FloatBuffer occ_clamp(const Recipe& recipe, const TensorView& in, OccResidual& residual);
  FloatBuffer requant_source(const Recipe& recipe, Role role, const TensorView& in,
                             const QuantizeArgs& args);
  std::vector<void*> quantize_kernel(const Recipe& recipe, Role role, DType input);

  HostConfig config_;
  std::recursive_mutex mutex_;  // one call at a time uses the pool (quantize re-enters for requant)
  std::unique_ptr<KernelRegistry> kernels_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<TunedConfigs> tuned_;
};

}  // namespace fp4jit::host
