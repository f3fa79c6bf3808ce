// A backend against the reference on recipes, operands, shapes, dtypes and values drawn from the
// input: either both refuse the call with the same error kind, or both write the same bytes
// (codes, scales, tensor scale, amax, OCC residual list) and the backend's dequantized operand
// equals the reference's, NaN for NaN. Built twice: fp4jit_fuzz_quantize runs the host backend
// (LLVM-generated kernels), whose input and outputs end at inaccessible pages, so a kernel that
// reads or writes past them faults; fp4jit_fuzz_quantize_cuda (FP4JIT_FUZZ_CUDA) runs the CUDA
// backend on device 0, each output followed by poisoned bytes that must come back unchanged, and
// exits with 77 (skipped) where there is no GPU.
//
// Input: preset, up to three overrides (operand or recipe-wide keys with valid and stray values),
// the operand, its shape and dtype, the seed and offset of stochastic rounding, a value style and
// its seed, then raw element bits laid over the tensor.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/fuzz/fuzz.hpp"
#include "tests/host/host_test_data.hpp"
#if defined(FP4JIT_FUZZ_CUDA)
#include "runtime/backend.hpp"
#include "runtime/cuda/device_memory.hpp"
#else
#include "tests/host/host_test_util.hpp"
#endif

namespace fp4jit {
namespace {

using host::test::Buffers;
using host::test::HostTensor;

const char* const kPrefixes[] = {"",       "x.",     "w.",     "dy.",  "wt.",     "dyt.", "xt.",
                                 "fprop.", "dgrad.", "wgrad.", "act.", "weight.", "grad."};
const char* const kBlocks[] = {"1x16", "1x32", "16x16", "32x1",   "32x32", "16x1",
                               "4x64", "row",  "col",   "tensor", "1x8",   "0x4"};
const char* const kHad[] = {"none", "16", "32", "64", "128", "8"};
const char* const kSwitch[] = {"on", "off"};
const char* const kSrBits[] = {"8", "16", "4"};
const char* const kRecipeWide[] = {"occ=0.99",     "occ=0.97",       "occ=0.9",     "occ=0.6",
                                   "occ=1.5",      "dge.k=3",        "dge.clip=2",  "ue5m3=61440",
                                   "ue5m3=122880", "qema.decay=0.9", "qema.start=0"};

template <class T>
std::string pick_name(fuzz::Input& in, std::span<const Named<T>> names) {
  return std::string(names[in.below(names.size())].name);
}

std::string override_text(fuzz::Input& in) {
  if (in.below(5) == 0) return in.pick(kRecipeWide);
  const std::string key = in.pick(kPrefixes);
  switch (in.below(12)) {
    case 0:
      return key + "elem=" + pick_name(in, elem_format_names());
    case 1:
      return key + "scale=" + pick_name(in, scale_format_names());
    case 2:
      return key + "rule=" + pick_name(in, scale_rule_names());
    case 3:
      return key + "block=" + in.pick(kBlocks);
    case 4:
      return key + "round=" + pick_name(in, round_names());
    case 5:
      return key + "sr.bits=" + in.pick(kSrBits);
    case 6:
      return key + "had=" + in.pick(kHad);
    case 7:
      return key + "had.signs=random";
    case 8:
      return key + "occ=" + in.pick(kSwitch);
    case 9:
      return key + "src=" + pick_name(in, source_names());
    case 10:
      return key + "had.seed=" + std::to_string(in.byte());
    default:
      return key + "dge=" + in.pick(kSwitch);
  }
}

Matrix<float> values(fuzz::Input& in, std::int64_t rows, std::int64_t cols) {
  const int style = in.byte() % 3;
  const std::uint32_t seed = in.u32();
  Matrix<float> m = style == 0   ? host::test::random_matrix(rows, cols, seed)
                    : style == 1 ? host::test::adversarial_matrix(rows, cols, seed)
                                 : Matrix<float>(rows, cols);
  // the rest of the input: (position, bits) pairs laid over the tensor
  while (in.left() >= 6 && m.size() > 0) {
    const std::size_t at = in.u32() % static_cast<std::size_t>(m.size());
    const std::uint32_t hi = in.byte(), lo = in.byte();
    std::uint32_t bits = (hi << 24) | (lo << 16) | (static_cast<std::uint32_t>(in.byte()) << 8);
    m.data[at] = nx::bits_float(bits);
  }
  return m;
}

bool same_bits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// What a backend wrote, copied to the host.
struct Result {
  std::vector<std::uint8_t> codes, scales, index, value;
  float tensor_scale = -7.0f, amax = -7.0f;
  std::int64_t count = -1;
  std::vector<float> deq;  // the dequantized operand, FP32
};

// The bytes of each output buffer of an operand of layout l.
struct Sizes {
  std::size_t codes, scales, index, value, deq;
  Sizes(const QuantLayout& l, std::int64_t capacity)
      : codes(static_cast<std::size_t>(l.code_bytes())),
        scales(static_cast<std::size_t>(l.scale_count()) * (l.scale_is_code ? 1 : 4)),
        index(static_cast<std::size_t>(capacity) * 8),
        value(static_cast<std::size_t>(capacity) * 4),
        deq(static_cast<std::size_t>(l.rows * l.cols) * 4) {}
};

QuantizedView view_of(void* codes, void* scales, float* tensor_scale, float* amax, void* index,
                      void* value, std::int64_t* count, std::int64_t capacity) {
  QuantizedView v;
  v.codes = static_cast<std::uint8_t*>(codes);
  v.scales = scales;
  v.tensor_scale = tensor_scale;
  v.amax = amax;
  v.residual_index = static_cast<std::int64_t*>(index);
  v.residual_value = static_cast<float*>(value);
  v.residual_count = count;
  v.residual_capacity = capacity;
  return v;
}

#if defined(FP4JIT_FUZZ_CUDA)
constexpr std::size_t kCanary = 256;  // poisoned bytes after every output

struct Device {
  cuda::DeviceScope scope{0};
  Engine engine{[] {
    EngineOptions o;
    o.backend = BackendKind::cuda;
    o.use_cache = false;
    return o;
  }()};
};
Device& device() {
  static Device d;
  return d;
}

struct Out {
  cuda::DeviceBuffer buffer;
  std::size_t bytes;
  explicit Out(std::size_t n) : buffer(n + kCanary), bytes(n) { buffer.fill(0xA5); }
  template <class T>
  T* get() const {
    return buffer.get<T>();
  }
  std::vector<std::uint8_t> take(const std::string& what) const {
    std::vector<std::uint8_t> all(bytes + kCanary);
    buffer.download(all.data(), all.size());
    for (std::size_t i = bytes; i < all.size(); ++i)
      FUZZ_CHECK(all[i] == 0xA5, what + ": a byte past the output's end was written");
    all.resize(bytes);
    return all;
  }
};

void run(const Recipe& recipe, Role role, const HostTensor& t, const QuantLayout& l,
         std::int64_t capacity, const QuantizeArgs& args, const std::string& what, Result& r) {
  Device& d = device();
  cuda::DeviceBuffer input(t.bytes.size());
  input.upload(t.bytes.data(), t.bytes.size());
  const Sizes n(l, capacity);
  Out codes(n.codes), scales(n.scales), ts(4), amax(4), index(n.index), value(n.value), count(8),
      deq(n.deq);
  const QuantizedView v =
      view_of(codes.get<void>(), scales.get<void>(), ts.get<float>(), amax.get<float>(),
              index.get<void>(), value.get<void>(), count.get<std::int64_t>(), capacity);
  d.engine.quantize(recipe, role, TensorView{input.get(), t.dtype, t.rows, t.cols, 0}, v, args,
                    nullptr);
  d.engine.dequantize(recipe, role, v, t.rows, t.cols,
                      TensorView{deq.get<void>(), DType::f32, l.rows, l.cols, 0}, nullptr);
  r.codes = codes.take(what + " codes");
  r.scales = scales.take(what + " scales");
  std::memcpy(&r.tensor_scale, ts.take(what + " tensor scale").data(), 4);
  std::memcpy(&r.amax, amax.take(what + " amax").data(), 4);
  std::memcpy(&r.count, count.take(what + " residual count").data(), 8);
  r.index = index.take(what + " residual positions");
  r.value = value.take(what + " residual values");
  const std::vector<std::uint8_t> deq_bytes = deq.take(what + " dequantized operand");
  r.deq.resize(deq_bytes.size() / 4);
  std::memcpy(r.deq.data(), deq_bytes.data(), deq_bytes.size());
}
#else
void run(const Recipe& recipe, Role role, const HostTensor& t, const QuantLayout& l,
         std::int64_t capacity, const QuantizeArgs& args, const std::string&, Result& r) {
  host::HostBackend& host = host::test::backend();
  fuzz::GuardedBytes input(t.bytes.size());
  std::memcpy(input.data(), t.bytes.data(), t.bytes.size());
  const Sizes n(l, capacity);
  fuzz::GuardedBytes codes(n.codes), scales(n.scales), index(n.index), value(n.value), deq(n.deq);
  const QuantizedView v = view_of(codes.data(), scales.data(), &r.tensor_scale, &r.amax,
                                  index.data(), value.data(), &r.count, capacity);
  host.quantize(recipe, role, TensorView{input.data(), t.dtype, t.rows, t.cols, 0}, v, args,
                nullptr);
  host.dequantize(recipe, role, v, t.rows, t.cols,
                  TensorView{deq.data(), DType::f32, l.rows, l.cols, 0}, nullptr);
  r.codes.assign(codes.data(), codes.data() + codes.size());
  r.scales.assign(scales.data(), scales.data() + scales.size());
  r.index.assign(index.data(), index.data() + index.size());
  r.value.assign(value.data(), value.data() + value.size());
  r.deq.resize(l.rows * l.cols);
  std::memcpy(r.deq.data(), deq.data(), deq.size());
}
#endif

}  // namespace
}  // namespace fp4jit

std::vector<std::vector<std::uint8_t>> fp4jit_fuzz_seeds() {
#if defined(FP4JIT_FUZZ_CUDA)
  if (!fp4jit::cuda_available()) {
    std::printf("fuzz quantize_cuda: no GPU here: skipped\n");
    std::exit(77);
  }
#endif
  std::vector<std::vector<std::uint8_t>> seeds;
  const std::size_t presets = fp4jit::presets().size();
  for (std::uint8_t p = 0; p < presets; ++p)
    for (std::uint8_t role = 0; role < fp4jit::kNumRoles; ++role)
      // preset, no override, role, 64 rows, K 64 (aligned), BF16, seeds, adversarial values
      seeds.push_back({p, 0, role, 63, 1, 0, 1, 9, 0, 0, 0, 3, 0, 0, 0, 1, 5, 0, 0, 0});
  // Found on an H200: mxfp4:block=32x1,wt.elem=e4m3,occ=0.9, wt of a [1, 64] BF16 W (K = 1), whose
  // CUDA kernel stored scales for blocks past K's end (templates/quantize/segment.cuh).
  seeds.push_back(
      {0x00, 0x27, 0x29, 0x00, 0x03, 0x3f, 0x01, 0x04, 0x00, 0x01, 0xff, 0xff, 0xff, 0x7f});
  return seeds;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fp4jit;
  fuzz::Input in(data, size);
  std::string text(presets()[in.below(presets().size())].name);
  const std::size_t overrides = in.byte() % 4;
  for (std::size_t i = 0; i < overrides; ++i) {
    text += i == 0 ? ':' : ',';
    text += override_text(in);
  }
  Recipe recipe;
  if (!fuzz::accepts([&] { recipe = parse_recipe(text); }, {ErrorKind::recipe}, "parse_recipe"))
    return 0;
  const Role role = kAllRoles[in.below(kNumRoles)];
  // operand rows 1..64; K a multiple of 32 (the largest 1-D block) most of the time, else any
  const std::int64_t rows = 1 + static_cast<std::int64_t>(in.below(64));
  const std::size_t kb = in.below(8);
  const std::int64_t k = in.flag() ? 32 * static_cast<std::int64_t>(1 + kb)
                                   : 1 + static_cast<std::int64_t>(in.below(256));
  static const DType kDtypes[] = {DType::bf16, DType::f16, DType::f32};
  const DType dtype = in.pick(kDtypes);
  const std::uint64_t seed = in.u32(), offset = in.u32() % 4096;
  const auto [src_rows, src_cols] = host::test::source_shape(role, rows, k);
  const Matrix<float> m = values(in, src_rows, src_cols);
  const HostTensor t = host::test::make_tensor(m, dtype);
  const Matrix<float> seen = host::test::values_of(t);
  const std::string what = text + " " + std::string(name(role)) + " [" + std::to_string(src_rows) +
                           ", " + std::to_string(src_cols) + "] " + std::string(name(dtype));

  QuantizedTensor ref;
  std::string ref_error;
  try {
    ref = reference::quantize(recipe, role, seen, {.seed = seed, .offset = offset});
  } catch (const Error& e) {
    const ErrorKind k_ = e.kind();
    FUZZ_CHECK(k_ == ErrorKind::invalid_argument || k_ == ErrorKind::unsupported ||
                   k_ == ErrorKind::recipe,
               what + ": reference: unexpected error kind: " + e.what());
    ref_error = std::string(error_kind_name(e.kind()));
  }

  Result got;
  try {
    const QuantLayout l = quant_layout(recipe, role, src_rows, src_cols);
    const std::int64_t capacity = recipe[role].occ ? l.rows * l.cols : 0;
    run(recipe, role, t, l, capacity, {.seed = seed, .offset = offset}, what, got);
  } catch (const Error& e) {
    FUZZ_CHECK(!ref_error.empty(),
               what + ": the backend refused what the reference quantized: " + e.what());
    FUZZ_CHECK(ref_error == error_kind_name(e.kind()),
               what + ": the backend refused with " + std::string(error_kind_name(e.kind())) +
                   ", the reference with " + ref_error + ": " + e.what());
    return 0;
  }
  FUZZ_CHECK(ref_error.empty(),
             what + ": the backend quantized what the reference refused (" + ref_error + ")");

  // The backend's bytes into test Buffers, for the byte-exact comparison of host_test_util.
  Buffers b(ref.layout);
  std::memcpy(b.codes.data(), got.codes.data(), got.codes.size());
  std::memcpy(b.scales.data(), got.scales.data(), got.scales.size());
  b.tensor_scale = ref.layout.two_level ? got.tensor_scale : ref.tensor_scale;
  b.amax = got.amax;
  b.residual_count = recipe[role].occ ? got.count : 0;
  FUZZ_CHECK(
      b.residual_count >= 0 && b.residual_count <= static_cast<std::int64_t>(got.index.size() / 8),
      what + ": residual count out of range: " + std::to_string(b.residual_count));
  for (std::int64_t i = 0; i < b.residual_count; ++i) {
    std::memcpy(&b.residual_index[i], got.index.data() + 8 * i, 8);
    std::memcpy(&b.residual_value[i], got.value.data() + 4 * i, 4);
  }
  const std::string diff = host::test::compare(ref, b);
  FUZZ_CHECK(diff.empty(), what + ": backend and reference differ: " + diff);

  const Matrix<double> ref_values = reference::dequantize_operand(recipe, ref);
  for (std::int64_t i = 0; i < ref_values.size(); ++i) {
    const double want = static_cast<double>(static_cast<float>(ref_values.data[i]));
    FUZZ_CHECK(same_bits(static_cast<double>(got.deq[i]), want),
               what + ": dequantized element " + std::to_string(i) + ": backend " +
                   std::to_string(got.deq[i]) + ", reference " +
                   std::to_string(ref_values.data[i]));
  }
  return 0;
}
