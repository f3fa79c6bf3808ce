#include "tuner/host_jobs.hpp"

#include <unistd.h>

#include <algorithm>

#include "runtime/host/requests.hpp"
#include "runtime/tuning_keys.hpp"
#include "tuner/gemm_check.hpp"
#include "tuner/host_space.hpp"
#include "tuner/operand_buffers.hpp"
#include "tuner/problem_jobs.hpp"

namespace fp4jit::tuner {

int rotation_sets(std::int64_t set_bytes) {
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 <= 0) l2 = 1 << 20;
  const std::int64_t want = 2 * static_cast<std::int64_t>(l2);
  return static_cast<int>(std::clamp<std::int64_t>(
      (want + set_bytes - 1) / std::max<std::int64_t>(set_bytes, 1), 1, 8));
}

namespace {

host::HostConfig find_config(const std::vector<HostCandidate>& space, const Candidate& c) {
  return entry_of(space, c).config;
}

class HostGemmJob final : public GemmProblemJob {
 public:
  HostGemmJob(host::HostBackend& backend, const Recipe& recipe, GemmOp op, const GemmShape& shape)
      : GemmProblemJob(recipe, op, shape), backend_(backend) {}

  std::vector<Candidate> candidates(std::vector<CandidateResult>* pruned) override {
    space_ = host_gemm_space(backend_.config(), backend_.kernels().target().vector_bits, shape_.m,
                             shape_.n, shape_.k, pruned);
    return candidates_of(space_);
  }

  void prepare() override {
    Sources src = make_sources();
    OperandBuffers a(layouts_.a, recipe_[roles_.a].occ), b(layouts_.b, recipe_[roles_.b].occ);
    backend_.quantize(recipe_, roles_.a,
                      TensorView{src.xa.data(), DType::bf16, src.a.rows, src.a.cols, 0}, a.view(),
                      {.seed = 1}, nullptr);
    backend_.quantize(recipe_, roles_.b,
                      TensorView{src.xb.data(), DType::bf16, src.b.rows, src.b.cols, 0}, b.view(),
                      {.seed = 2}, nullptr);
    reference_ = std::make_unique<GemmReference>(recipe_, op_, shape_, a.view(), b.view());
    const int sets = rotation_sets(a.bytes() + b.bytes() + shape_.m * shape_.n * 4);
    for (int i = 0; i < sets; ++i) {
      a_.push_back(a);
      b_.push_back(b);
      c_.emplace_back(static_cast<std::size_t>(shape_.m * shape_.n));
    }
  }

  void compile(const Candidate& c) override {
    backend_.kernels().get(host::gemm_request(recipe_, roles_.a, roles_.b, find_config(space_, c)));
  }

  std::optional<std::string> verify(const Candidate& c) override {
    run(find_config(space_, c), 0);
    return reference_->check(c_[0].data(), shape_.n, 1e-5);
  }

  double run_ms(const Candidate& c, int iteration) override {
    const host::HostConfig cfg = find_config(space_, c);
    return steady_ms([&] { run(cfg, iteration); });
  }

 private:
  void run(const host::HostConfig& cfg, int iteration) {
    const auto s = static_cast<std::size_t>(iteration) % a_.size();
    backend_.gemm(recipe_, host::GemmOperand{roles_.a, layouts_.a, a_[s].view()},
                  host::GemmOperand{roles_.b, layouts_.b, b_[s].view()}, c_[s].data(), shape_.n,
                  nullptr, &cfg);
  }

  const DeviceIdentity& identity() const override { return backend_.identity(); }

  host::HostBackend& backend_;
  std::vector<HostCandidate> space_;
  std::unique_ptr<GemmReference> reference_;
  std::vector<OperandBuffers> a_, b_;
  std::vector<std::vector<float>> c_;
};

class HostQuantizeJob final : public QuantizeProblemJob {
 public:
  HostQuantizeJob(host::HostBackend& backend, const Recipe& recipe, Role role, std::int64_t rows,
                  std::int64_t cols, DType in)
      : QuantizeProblemJob(recipe, role, rows, cols, in, false), backend_(backend) {}

  std::vector<Candidate> candidates(std::vector<CandidateResult>* pruned) override {
    space_ = host_quantize_space(backend_.config(), backend_.kernels().target().vector_bits,
                                 layout_.rows, pruned);
    return candidates_of(space_);
  }

  void prepare() override {
    const std::vector<std::uint8_t> x = make_source();
    expected_ = reference_result(x, role_);
    const int sets = rotation_sets(static_cast<std::int64_t>(x.size()) + expected_->bytes());
    for (int i = 0; i < sets; ++i) {
      src_.push_back(x);
      out_.push_back(*expected_);
    }
  }

  void compile(const Candidate& c) override {
    backend_.kernels().get(host::quantize_request(
        recipe_, role_, host::quantize_input(recipe_, role_, in_), find_config(space_, c)));
  }

  std::optional<std::string> verify(const Candidate& c) override {
    OperandBuffers got(layout_, recipe_[role_].occ);
    run(find_config(space_, c), 0, got);
    if (got.same_as(*expected_)) return std::nullopt;
    return std::string("codes, scales or tensor scale differ from the reference backend's");
  }

  double run_ms(const Candidate& c, int iteration) override {
    const host::HostConfig cfg = find_config(space_, c);
    OperandBuffers& out = out_[static_cast<std::size_t>(iteration) % out_.size()];
    return steady_ms([&] { run(cfg, iteration, out); });
  }

 private:
  void run(const host::HostConfig& cfg, int iteration, OperandBuffers& out) {
    std::vector<std::uint8_t>& x = src_[static_cast<std::size_t>(iteration) % src_.size()];
    backend_.quantize_with(cfg, recipe_, role_, TensorView{x.data(), in_, rows_, cols_, 0},
                           out.view(), {.seed = 5});
  }

  const DeviceIdentity& identity() const override { return backend_.identity(); }

  host::HostBackend& backend_;
  std::vector<HostCandidate> space_;
  std::unique_ptr<OperandBuffers> expected_;
  std::vector<std::vector<std::uint8_t>> src_;
  std::vector<OperandBuffers> out_;
};

}  // namespace

std::unique_ptr<TuneJob> host_gemm_job(host::HostBackend& backend, const Recipe& recipe, GemmOp op,
                                       const GemmShape& shape) {
  return std::make_unique<HostGemmJob>(backend, recipe, op, shape);
}

std::unique_ptr<TuneJob> host_quantize_job(host::HostBackend& backend, const Recipe& recipe,
                                           Role role, std::int64_t rows, std::int64_t cols,
                                           DType in) {
  return std::make_unique<HostQuantizeJob>(backend, recipe, role, rows, cols, in);
}

}  // namespace fp4jit::tuner
