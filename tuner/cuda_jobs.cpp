#include "tuner/cuda_jobs.hpp"

#include <algorithm>

#include "runtime/cuda/device_memory.hpp"
#include "runtime/cuda/gemm_plan.hpp"
#include "runtime/cuda/kernel_binary.hpp"
#include "runtime/tuning_keys.hpp"
#include "tuner/cuda_space.hpp"
#include "tuner/gemm_check.hpp"
#include "tuner/operand_buffers.hpp"
#include "tuner/problem_jobs.hpp"

namespace fp4jit::tuner {

namespace {

// One quantized operand in device memory.
struct DeviceOperand {
  cuda::DeviceBuffer codes, scales, tensor_scale, amax, index, value, count;
  std::int64_t capacity = 0;
  DeviceOperand(const QuantLayout& l, bool occ)
      : codes(static_cast<std::size_t>(std::max<std::int64_t>(l.code_bytes(), 16))),
        scales(static_cast<std::size_t>(l.scale_count() * (l.scale_is_code ? 1 : 4) + 16)),
        tensor_scale(16),
        amax(16),
        capacity(occ ? l.rows * l.cols / 8 + 1024 : 0) {
    if (occ) {
      index = cuda::DeviceBuffer(static_cast<std::size_t>(capacity) * 8);
      value = cuda::DeviceBuffer(static_cast<std::size_t>(capacity) * 4);
      count = cuda::DeviceBuffer(16);
    }
  }
  QuantizedView view() const {
    QuantizedView v;
    v.codes = codes.get<std::uint8_t>();
    v.scales = scales.get();
    v.tensor_scale = tensor_scale.get<float>();
    v.amax = amax.get<float>();
    if (capacity > 0) {
      v.residual_index = index.get<std::int64_t>();
      v.residual_value = value.get<float>();
      v.residual_count = count.get<std::int64_t>();
      v.residual_capacity = capacity;
    }
    return v;
  }
  // Codes, scales and tensor scale into host buffers of the same layout.
  void download(const QuantLayout& l, OperandBuffers& host) const {
    QuantizedView h = host.view();
    codes.download(h.codes, static_cast<std::size_t>(l.code_bytes()));
    scales.download(h.scales,
                    static_cast<std::size_t>(l.scale_count() * (l.scale_is_code ? 1 : 4)));
    tensor_scale.download(h.tensor_scale, 4);
  }
};

class CudaGemmJob final : public GemmProblemJob {
 public:
  CudaGemmJob(cuda::CudaBackend& backend, const Recipe& recipe, GemmOp op, const GemmShape& shape,
              DType out)
      : GemmProblemJob(recipe, op, shape),
        backend_(backend),
        out_(out),
        spec_(codegen::gemm_spec(recipe, op, shape.n, shape.k, out, backend.device().target)) {}

  std::vector<Candidate> candidates(std::vector<CandidateResult>* pruned) override {
    space_ = cuda_gemm_space(spec_, shape_.m, backend_.device().sm_count, backend_.device().target,
                             pruned);
    return candidates_of(space_);
  }

  // The operands' sources, made on the host (any thread, ahead of the device work).
  void prepare_host() override { sources_ = make_sources(); }

  void prepare() override {
    const OperandShape sa = sources_.a, sb = sources_.b;
    cuda::DeviceBuffer xa(sources_.xa.size()), xb(sources_.xb.size());
    xa.upload(sources_.xa.data(), sources_.xa.size());
    xb.upload(sources_.xb.data(), sources_.xb.size());
    sources_ = {};  // on the device from here on
    const std::int64_t out_bytes = shape_.m * shape_.n * dtype_size(out_);
    const std::int64_t set_bytes = layouts_.a.code_bytes() + layouts_.b.code_bytes() + out_bytes;
    const int sets =
        static_cast<int>(std::clamp<std::int64_t>(2 * 50'000'000 / set_bytes + 1, 1, 8));
    for (int i = 0; i < sets; ++i) {
      a_.push_back(std::make_unique<DeviceOperand>(layouts_.a, recipe_[roles_.a].occ));
      b_.push_back(std::make_unique<DeviceOperand>(layouts_.b, recipe_[roles_.b].occ));
      backend_.quantize(recipe_, roles_.a, TensorView{xa.get(), DType::bf16, sa.rows, sa.cols, 0},
                        a_.back()->view(), {.seed = 1}, nullptr);
      backend_.quantize(recipe_, roles_.b, TensorView{xb.get(), DType::bf16, sb.rows, sb.cols, 0},
                        b_.back()->view(), {.seed = 2}, nullptr);
      c_.push_back(std::make_unique<cuda::DeviceBuffer>(static_cast<std::size_t>(out_bytes)));
    }
    cuda::check(cuda::require_driver().ctx_synchronize(), "cuCtxSynchronize");
    OperandBuffers ha_q(layouts_.a, false), hb_q(layouts_.b, false);
    a_[0]->download(layouts_.a, ha_q);
    b_[0]->download(layouts_.b, hb_q);
    reference_ = std::make_unique<GemmReference>(recipe_, op_, shape_, ha_q.view(), hb_q.view());
  }

  void compile(const Candidate& c) override {
    const CudaGemmCandidate& g = entry_of(space_, c);
    for (const codegen::KernelSource& k : codegen::gemm_kernels(
             spec_, g.choice, shape_.m, backend_.device().sm_count, backend_.device().target))
      cuda::kernel_binary(k, backend_.cache());
  }

  std::optional<std::string> verify(const Candidate& c) override {
    c_[0]->fill(0xff);  // NaN patterns: a tile left unwritten fails the check
    launch(entry_of(space_, c), 0);
    cuda::check(cuda::require_driver().ctx_synchronize(), "cuCtxSynchronize (GEMM candidate)");
    // Only the rows the reference samples come back (32 rows, not the whole [M, N] output).
    const std::vector<std::int64_t>& rows = reference_->rows();
    const auto row_bytes = static_cast<std::size_t>(shape_.n * dtype_size(out_));
    sampled_.resize(rows.size() * row_bytes);
    for (std::size_t s = 0; s < rows.size(); ++s)
      c_[0]->download(sampled_.data() + s * row_bytes, row_bytes,
                      static_cast<std::size_t>(rows[s]) * row_bytes);
    if (out_ == DType::f32)
      return reference_->check_sampled(reinterpret_cast<const float*>(sampled_.data()), 1e-5);
    return reference_->check_sampled(reinterpret_cast<const std::uint16_t*>(sampled_.data()), out_,
                                     4e-3);
  }

  bool healthy() override { return cuda::require_driver().ctx_synchronize() == CUDA_SUCCESS; }

  double run_ms(const Candidate& c, int iteration) override {
    const CudaGemmCandidate& g = entry_of(space_, c);
    return timer_.ms([&] { launch(g, iteration); });
  }

 private:
  void launch(const CudaGemmCandidate& g, int iteration) {
    const auto s = static_cast<std::size_t>(iteration) % a_.size();
    backend_.launch_gemm(recipe_, op_, a_[s]->view(), b_[s]->view(), shape_,
                         TensorView{c_[s]->get(), out_, shape_.m, shape_.n, 0}, GemmEpilogue{},
                         nullptr, &g.choice);
  }

  const DeviceIdentity& identity() const override { return backend_.identity(); }
  std::string out_text() const override { return std::string(name(out_)); }

  cuda::CudaBackend& backend_;
  DType out_;
  codegen::GemmSpec spec_;
  std::vector<CudaGemmCandidate> space_;
  Sources sources_;  // from prepare_host() to prepare()
  std::unique_ptr<GemmReference> reference_;
  std::vector<std::unique_ptr<DeviceOperand>> a_, b_;
  std::vector<std::unique_ptr<cuda::DeviceBuffer>> c_;
  std::vector<std::uint8_t> sampled_;             // the sampled output rows of the last verify
  cuda::GpuTimer timer_{cuda::require_driver()};  // the call's GPU time, host enqueue hidden
};

class CudaQuantizeJob final : public QuantizeProblemJob {
 public:
  CudaQuantizeJob(cuda::CudaBackend& backend, const Recipe& recipe, Role role, std::int64_t rows,
                  std::int64_t cols, DType in, bool pair)
      : QuantizeProblemJob(recipe, role, rows, cols, in, pair), backend_(backend) {}

  std::vector<Candidate> candidates(std::vector<CandidateResult>* pruned) override {
    space_ =
        cuda_quantize_space(recipe_, role_, rows_, cols_, in_, backend_.device(), pruned, pair_);
    return candidates_of(space_);
  }

  // The source and the reference backend's results (host only: any thread, ahead of the device
  // work; the reference quantize is the slowest part of the preparation).
  void prepare_host() override {
    source_ = make_source();
    expected_ = reference_result(source_, role_);
    got_ = std::make_unique<OperandBuffers>(layout_, false);
    if (pair_) {
      expected_t_ = reference_result(source_, transposed_copy(role_));
      got_t_ = std::make_unique<OperandBuffers>(layout_t_, false);
    }
  }

  void prepare() override {
    const auto set_bytes = static_cast<std::int64_t>(work());
    const int sets =
        static_cast<int>(std::clamp<std::int64_t>(2 * 50'000'000 / set_bytes + 1, 1, 8));
    for (int i = 0; i < sets; ++i) {
      src_.push_back(std::make_unique<cuda::DeviceBuffer>(source_.size()));
      src_.back()->upload(source_.data(), source_.size());
      out_.push_back(std::make_unique<DeviceOperand>(layout_, recipe_[role_].occ));
      if (pair_)
        out_t_.push_back(
            std::make_unique<DeviceOperand>(layout_t_, recipe_[transposed_copy(role_)].occ));
    }
    std::vector<std::uint8_t>().swap(source_);  // on the device from here on
  }

  void compile(const Candidate& c) override {
    const CudaQuantizeCandidate& q = entry_of(space_, c);
    cuda::DeviceInfo d = backend_.device();
    d.rows_config = q.config.rows ? &*q.config.rows : nullptr;
    d.tile_config = q.config.tile ? &*q.config.tile : nullptr;
    // Every kernel of the candidate's plan (the tuned one and its helpers) into the cache.
    for (const codegen::KernelSource& k :
         cuda_quantize_plan(recipe_, role_, rows_, cols_, in_, d, pair_))
      cuda::kernel_binary(k, backend_.cache());
  }

  std::optional<std::string> verify(const Candidate& c) override {
    out_[0]->codes.fill(0xee);
    if (pair_) out_t_[0]->codes.fill(0xee);
    run(entry_of(space_, c), 0);
    cuda::check(cuda::require_driver().ctx_synchronize(), "cuCtxSynchronize (quantize candidate)");
    out_[0]->download(layout_, *got_);
    bool same = got_->same_values_as(*expected_, layout_.two_level);
    if (pair_) {
      out_t_[0]->download(layout_t_, *got_t_);
      same = same && got_t_->same_values_as(*expected_t_, layout_t_.two_level);
    }
    if (same) return std::nullopt;
    return std::string(layout_.two_level
                           ? "codes, scales or tensor scale differ from the reference backend's"
                           : "codes or scales differ from the reference backend's");
  }

  bool healthy() override { return cuda::require_driver().ctx_synchronize() == CUDA_SUCCESS; }

  double run_ms(const Candidate& c, int iteration) override {
    const CudaQuantizeCandidate& q = entry_of(space_, c);
    return timer_.ms([&] { run(q, iteration); });
  }

 private:
  void run(const CudaQuantizeCandidate& q, int iteration) {
    const auto s = static_cast<std::size_t>(iteration) % src_.size();
    const TensorView src{src_[s]->get(), in_, rows_, cols_, 0};
    if (pair_)
      backend_.quantize_pair_with(&q.config, recipe_, role_, src, out_[s]->view(),
                                  out_t_[s]->view(), {.seed = 5}, nullptr);
    else
      backend_.quantize_with(&q.config, recipe_, role_, src, out_[s]->view(), {.seed = 5}, nullptr);
  }

  const DeviceIdentity& identity() const override { return backend_.identity(); }

  cuda::CudaBackend& backend_;
  std::vector<CudaQuantizeCandidate> space_;
  std::vector<std::uint8_t> source_;                       // from prepare_host() to prepare()
  std::unique_ptr<OperandBuffers> expected_, expected_t_;  // _t: a pair's transposed copy
  std::unique_ptr<OperandBuffers> got_, got_t_;  // verify's copies of the result (overwritten)
  std::vector<std::unique_ptr<cuda::DeviceBuffer>> src_;
  std::vector<std::unique_ptr<DeviceOperand>> out_, out_t_;
  cuda::GpuTimer timer_{cuda::require_driver()};  // the call's GPU time, host enqueue hidden
};

}  // namespace

std::unique_ptr<TuneJob> cuda_quantize_job(cuda::CudaBackend& backend, const Recipe& recipe,
                                           Role role, std::int64_t rows, std::int64_t cols,
                                           DType in, bool pair) {
  return std::make_unique<CudaQuantizeJob>(backend, recipe, role, rows, cols, in, pair);
}

std::unique_ptr<TuneJob> cuda_gemm_job(cuda::CudaBackend& backend, const Recipe& recipe, GemmOp op,
                                       const GemmShape& shape, DType out) {
  return std::make_unique<CudaGemmJob>(backend, recipe, op, shape, out);
}

}  // namespace fp4jit::tuner
