#include "cli/backend_run.hpp"

#include <cstring>
#include <map>

#include "reference/reference.hpp"
#include "runtime/backend.hpp"
#include "runtime/host_tensor.hpp"

#if defined(FP4JIT_HAVE_CUDA)
#include "runtime/cuda/device_memory.hpp"
#endif

namespace fp4jit::cli {

namespace {

// Buffers in the backend's memory: host memory, or device memory for the CUDA backend.
class Buffers {
 public:
  virtual ~Buffers() = default;
  // A buffer of `bytes`, filled from `init` when given, else with the poison byte 0xA5 (so an
  // output a kernel forgot to write is visible).
  virtual void* make(std::size_t bytes, const void* init) = 0;
  virtual void read(const void* buffer, void* dst, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
};

class HostBuffers final : public Buffers {
 public:
  void* make(std::size_t bytes, const void* init) override {
    auto& b = held_.emplace_back(std::make_unique<std::uint8_t[]>(std::max<std::size_t>(bytes, 1)));
    if (init != nullptr)
      std::memcpy(b.get(), init, bytes);
    else
      std::memset(b.get(), 0xA5, bytes);
    return b.get();
  }
  void read(const void* buffer, void* dst, std::size_t bytes) override {
    std::memcpy(dst, buffer, bytes);
  }
  void synchronize() override {}

 private:
  std::vector<std::unique_ptr<std::uint8_t[]>> held_;
};

#if defined(FP4JIT_HAVE_CUDA)
class DeviceBuffers final : public Buffers {
 public:
  void* make(std::size_t bytes, const void* init) override {
    auto& b =
        held_.emplace_back(std::make_unique<cuda::DeviceBuffer>(std::max<std::size_t>(bytes, 1)));
    if (init != nullptr)
      b->upload(init, bytes);
    else
      b->fill(0xA5);
    by_ptr_[b->get()] = b.get();
    return b->get();
  }
  void read(const void* buffer, void* dst, std::size_t bytes) override {
    by_ptr_.at(buffer)->download(dst, bytes);
  }
  void synchronize() override {}  // uploads, downloads and fills are synchronous

 private:
  std::vector<std::unique_ptr<cuda::DeviceBuffer>> held_;
  std::map<const void*, cuda::DeviceBuffer*> by_ptr_;
};
#endif

BackendKind parse_backend(const std::string& text) {
  return parse_named(backend_names(), text, "backend");
}

}  // namespace

std::vector<std::string> backend_option_names() {
  std::vector<std::string> out;
  for (const auto& entry : backend_names()) out.emplace_back(entry.name);
  return out;
}

struct BackendRunner::Impl {
#if defined(FP4JIT_HAVE_CUDA)
  std::unique_ptr<cuda::DeviceScope> scope;  // the device's context, current while we run
#endif
  std::unique_ptr<Engine> engine;

  std::unique_ptr<Buffers> buffers() const {
#if defined(FP4JIT_HAVE_CUDA)
    if (engine->backend() == BackendKind::cuda) return std::make_unique<DeviceBuffers>();
#endif
    return std::make_unique<HostBuffers>();
  }
  void synchronize() const {
#if defined(FP4JIT_HAVE_CUDA)
    if (scope) scope->synchronize();
#endif
  }
};

BackendRunner::BackendRunner(const std::string& backend, const std::string& cache_path)
    : impl_(std::make_unique<Impl>()) {
  EngineOptions options;
  options.backend = parse_backend(backend);
  options.cache_path = cache_path;
#if defined(FP4JIT_HAVE_CUDA)
  if (options.backend == BackendKind::cuda ||
      (options.backend == BackendKind::automatic && cuda_available())) {
    impl_->scope = std::make_unique<cuda::DeviceScope>(options.device);
    options.backend = BackendKind::cuda;
  }
#endif
  impl_->engine = std::make_unique<Engine>(options);
}

BackendRunner::~BackendRunner() = default;

BackendKind BackendRunner::kind() const {
  return impl_->engine->backend();
}
std::string BackendRunner::name() const {
  return std::string(name_of(backend_names(), kind()));
}
std::string BackendRunner::description() const {
  return impl_->engine->description();
}

QuantizedTensor BackendRunner::quantize(const Recipe& recipe, Role role, const Matrix<float>& in,
                                        DType dtype, std::uint64_t seed, std::uint64_t offset) {
  QuantizedTensor q;
  q.recipe = canonical(recipe);
  q.role = role;
  q.layout = impl_->engine->layout(recipe, role, in.rows, in.cols);
  q.seed = seed;
  q.offset = offset;
  const QuantLayout& l = q.layout;
  const std::int64_t capacity = recipe[role].occ ? l.rows * l.cols : 0;
  const std::size_t scale_bytes = l.scale_count() * (l.scale_is_code ? 1 : sizeof(float));

  const auto mem = impl_->buffers();
  QuantizedView v;
  v.codes = static_cast<std::uint8_t*>(mem->make(l.code_bytes(), nullptr));
  v.scales = mem->make(scale_bytes, nullptr);
  v.tensor_scale = static_cast<float*>(mem->make(sizeof(float), nullptr));
  v.amax = static_cast<float*>(mem->make(sizeof(float), nullptr));
  v.residual_index =
      static_cast<std::int64_t*>(mem->make(capacity * sizeof(std::int64_t), nullptr));
  v.residual_value = static_cast<float*>(mem->make(capacity * sizeof(float), nullptr));
  v.residual_count = static_cast<std::int64_t*>(mem->make(sizeof(std::int64_t), nullptr));
  v.residual_capacity = capacity;
  std::vector<std::uint8_t> narrow(in.data.size() *
                                   dtype_size(dtype));  // exact: the values came from dtype
  from_matrix(in, TensorView{narrow.data(), dtype, in.rows, in.cols});
  const TensorView tv{mem->make(narrow.size(), narrow.data()), dtype, in.rows, in.cols};

  impl_->engine->quantize(recipe, role, tv, v, {.seed = seed, .offset = offset});
  impl_->synchronize();

  q.codes.resize(l.code_bytes());
  mem->read(v.codes, q.codes.data(), q.codes.size());
  if (l.scale_is_code) {
    q.scale_codes.resize(l.scale_count());
    mem->read(v.scales, q.scale_codes.data(), scale_bytes);
  } else {
    q.scale_values.resize(l.scale_count());
    mem->read(v.scales, q.scale_values.data(), scale_bytes);
  }
  if (l.two_level) mem->read(v.tensor_scale, &q.tensor_scale, sizeof(float));
  mem->read(v.amax, &q.amax, sizeof(float));
  if (recipe[role].occ) {
    std::int64_t count = 0;
    mem->read(v.residual_count, &count, sizeof count);
    if (count < 0 || count > capacity)
      fail(ErrorKind::internal, "{} backend reported {} OCC residual entries (capacity {})", name(),
           count, capacity);
    q.residual_index.resize(count);
    q.residual_value.resize(count);
    mem->read(v.residual_index, q.residual_index.data(), count * sizeof(std::int64_t));
    mem->read(v.residual_value, q.residual_value.data(), count * sizeof(float));
  }
  return q;
}

Matrix<double> BackendRunner::dequantize_operand(const Recipe& recipe, const QuantizedTensor& q) {
  const QuantLayout& l = q.layout;
  const auto mem = impl_->buffers();
  QuantizedView v;
  v.codes = static_cast<std::uint8_t*>(mem->make(q.codes.size(), q.codes.data()));
  v.scales = l.scale_is_code
                 ? mem->make(q.scale_codes.size(), q.scale_codes.data())
                 : mem->make(q.scale_values.size() * sizeof(float), q.scale_values.data());
  v.tensor_scale = static_cast<float*>(mem->make(sizeof(float), &q.tensor_scale));
  const std::int64_t count = static_cast<std::int64_t>(q.residual_index.size());
  v.residual_count = static_cast<std::int64_t*>(mem->make(sizeof count, &count));
  const OperandShape source =
      operand_shape(q.role, l.rows, l.cols);  // transposing is its own inverse
  Matrix<float> out(l.rows, l.cols);
  void* dst = mem->make(out.data.size() * sizeof(float), nullptr);
  impl_->engine->dequantize(recipe, q.role, v, source.rows, source.cols,
                            {dst, DType::f32, l.rows, l.cols});
  impl_->synchronize();
  mem->read(dst, out.data.data(), out.data.size() * sizeof(float));
  Matrix<double> values(l.rows, l.cols);
  for (std::int64_t i = 0; i < out.size(); ++i) values.data[i] = out.data[i];
  return values;
}

Matrix<float> BackendRunner::dge(const Recipe& recipe, const Matrix<float>& w) {
  const auto mem = impl_->buffers();
  const TensorView in{mem->make(w.data.size() * sizeof(float), w.data.data()), DType::f32, w.rows,
                      w.cols};
  const TensorView out{mem->make(w.data.size() * sizeof(float), nullptr), DType::f32, w.rows,
                       w.cols};
  impl_->engine->dge(recipe, in, out);
  impl_->synchronize();
  Matrix<float> f(w.rows, w.cols);
  mem->read(out.data, f.data.data(), f.data.size() * sizeof(float));
  return f;
}

}  // namespace fp4jit::cli
