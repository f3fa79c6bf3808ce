// The CUDA backend on a GPU against the reference, beyond gpu_quantize_test.cpp's sweep of every
// recipe and operand: a pair given two amaxes apart, OCC on long rows, E5M2 / E4M3 elements over
// every binade. Skipped where there is no GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <tuple>
#include <vector>

#include "reference/reference.hpp"
#include "runtime/backend.hpp"
#include "runtime/host_tensor.hpp"
#include "tests/gpu/gpu_device.hpp"
#include "tests/gpu/quant_check.hpp"

namespace fp4jit::test {
namespace {

// nvfp4's w + wt (16 x 16 blocks, the same codes per block) takes wt's codes from w's only where
// both copies have the same s_enc: with the two amaxes given apart (delayed scaling) each copy must
// equal that operand quantized alone with its own amax.
TEST(GpuQuantizePair, SameBlockPairWithDifferentAmaxesMatchesEachAlone) {
  REQUIRE_GPU();
  const Recipe recipe = parse_recipe("nvfp4");
  for (const DType dtype : {DType::bf16, DType::f32}) {
    SCOPED_TRACE(name(dtype));
    HostInput in = make_input(InputKind::random, dtype, 160, 512, 43, false);
    DeviceInput din(in, 0);
    const reference::QuantizeOptions ropt{.seed = 3, .offset = 0};
    const QuantizedTensor ref = reference::quantize(recipe, Role::w, in.values, ropt);
    const QuantizedTensor ref_t = reference::quantize(recipe, Role::wt, in.values, ropt);
    const float amax[2] = {ref.amax, 2.5f * ref.amax};
    cuda::DeviceBuffer amax_in(8);
    amax_in.upload(amax, 8);
    HostOperand out(ref.layout, 0), out_t(ref_t.layout, 0), alone(ref.layout, 0),
        alone_t(ref_t.layout, 0);
    DeviceOperand dout(out), dout_t(out_t), dalone(alone), dalone_t(alone_t);
    QuantizeArgs pair_args{3, 0}, w_args{3, 0}, wt_args{3, 0};
    pair_args.amax = w_args.amax = amax_in.get<float>();
    pair_args.amax_transposed = wt_args.amax = amax_in.get<float>() + 1;
    engine.quantize_pair(recipe, Role::w, din.view, dout.view(), dout_t.view(), pair_args);
    engine.quantize(recipe, Role::w, din.view, dalone.view(), w_args);
    engine.quantize(recipe, Role::wt, din.view, dalone_t.view(), wt_args);
    Gpu::get()->scope.synchronize();
    dout.download(out);
    dout_t.download(out_t);
    dalone.download(alone);
    dalone_t.download(alone_t);
    ASSERT_EQ(compare(ref, alone, false), "");  // w alone with its own amax: the reference
    EXPECT_EQ(compare_runs(alone, out), "") << "row-wise operand w";
    EXPECT_EQ(compare_runs(alone_t, out_t), "") << "transposed operand wt";
    // wt with w's amax (what a derivation would give) is not wt with its own.
    EXPECT_NE(compare(ref_t, alone_t, false), "");
  }
}

// OCC on long rows (full and ragged, up to 20000 elements), each input type, random and
// adversarial; x alone, and the x + xt pair from one select over 300 rows, so the transposed
// operand's residual list is written in two chunks of source rows, the second one partial;
// quantiles at 0.99, 0.97 and 0.9.
TEST(GpuQuantizeOcc, LongRowsMatchReference) {
  REQUIRE_GPU();
  struct Variant {
    InputKind kind;
    DType dtype;
    std::int64_t min_k;
  };
  const Variant variants[] = {
      {InputKind::random, DType::bf16, 4096},       {InputKind::adversarial, DType::f32, 4000},
      {InputKind::random, DType::f16, 8192},        {InputKind::adversarial, DType::bf16, 6000},
      {InputKind::random, DType::f32, 16384},       {InputKind::adversarial, DType::f16, 12000},
      {InputKind::adversarial, DType::bf16, 16400}, {InputKind::random, DType::f32, 20000},
  };
  std::uint32_t seed = 500;
  for (const char* spec : {"msfp4", "msfp4:occ=0.97", "msfp4:occ=0.9"}) {
    const Recipe recipe = parse_recipe(spec);
    for (const Variant& v : variants) {
      for (const bool pair : {false, true}) {
        const std::int64_t rows = pair ? round_up(300, k_multiple(recipe, Role::xt)) : 7;
        const std::int64_t cols = round_up(v.min_k, k_multiple(recipe, Role::x));
        SCOPED_TRACE(fmt::format("{} {} {} [{}, {}]{}", spec, input_kind_name(v.kind),
                                 name(v.dtype), rows, cols, pair ? " pair" : ""));
        const HostInput in = make_input(v.kind, v.dtype, rows, cols, ++seed, false);
        const DeviceInput din(in, 0);
        const QuantizeArgs args{seed * 31u, 0};
        const reference::QuantizeOptions ropt{.seed = args.seed, .offset = args.offset};
        const QuantizedTensor ref = reference::quantize(recipe, Role::x, in.values, ropt);
        HostOperand out(ref.layout, rows * cols);
        DeviceOperand dout(out);
        if (!pair) {
          engine.quantize(recipe, Role::x, din.view, dout.view(), args);
          Gpu::get()->scope.synchronize();
          dout.download(out);
          ASSERT_EQ(compare(ref, out, true), "");
          continue;
        }
        const QuantizedTensor ref_t = reference::quantize(recipe, Role::xt, in.values, ropt);
        HostOperand out_t(ref_t.layout, rows * cols);
        DeviceOperand dout_t(out_t);
        engine.quantize_pair(recipe, Role::x, din.view, dout.view(), dout_t.view(), args);
        Gpu::get()->scope.synchronize();
        dout.download(out);
        dout_t.download(out_t);
        ASSERT_EQ(compare(ref, out, true), "") << "row-wise operand";
        ASSERT_EQ(compare(ref_t, out_t, true), "") << "transposed operand";
      }
    }
  }
}

// occ_rows over many rows at once, so that rows wait on the list offsets of rows other CTAs
// still hold (the look-back, 32 rows a step): random rows (the bounded lists) with NaN rows,
// constant rows (a list over its capacity) and rows of outlier columns among them, each input
// type, two calls in a row on the same buffers (the status words zeroed per call).
TEST(GpuQuantizeOcc, ManyRowsInOnePassMatchReference) {
  REQUIRE_GPU();
  // occ_rows at every row length it takes, not only where the heuristic picks it.
  struct ForceOccRows {
    ForceOccRows() { setenv("FP4JIT_OCC_ROWS", "1", 1); }
    ~ForceOccRows() { unsetenv("FP4JIT_OCC_ROWS"); }
  } force;
  const Recipe recipe = parse_recipe("msfp4");
  std::uint32_t seed = 700;
  for (const auto& [dtype, rows, cols] :
       {std::tuple{DType::bf16, 3000, 4096}, std::tuple{DType::f16, 1500, 8192},
        std::tuple{DType::f32, 700, 16384}, std::tuple{DType::bf16, 4099, 2056}}) {
    SCOPED_TRACE(fmt::format("{} [{}, {}]", name(dtype), rows, cols));
    HostInput in = make_input(InputKind::random, dtype, rows, cols, ++seed, false);
    for (std::int64_t r = 0; r < rows; ++r) {
      if (r % 37 == 5) set_value(in, r, (r * 131) % cols, std::nanf(""));
      if (r % 53 == 7)
        for (std::int64_t c = 0; c < cols; ++c) set_value(in, r, c, 0.75f);
      if (r % 41 == 3)
        for (std::int64_t c = r % 64; c < cols; c += 64) set_value(in, r, c, 200.0f);
    }
    const DeviceInput din(in, 0);
    const QuantizeArgs args{seed, 0};
    const reference::QuantizeOptions ropt{.seed = args.seed, .offset = args.offset};
    const QuantizedTensor ref = reference::quantize(recipe, Role::x, in.values, ropt);
    HostOperand out(ref.layout, rows * cols);
    DeviceOperand dout(out);
    for (int call = 0; call < 2; ++call) {
      engine.quantize(recipe, Role::x, din.view, dout.view(), args);
      Gpu::get()->scope.synchronize();
      dout.download(out);
      ASSERT_EQ(compare(ref, out, true), "") << "call " << call;
    }
  }
}

// E5M2 and E4M3 elements (msfp4's dy and dyt, and dy in E4M3): the kernels' hardware
// conversion against the reference's encoder over a sweep of FP32 inputs: every binade from
// below the smallest subnormal to the largest finite value, mantissas pseudo-random and on the
// midpoints between neighbouring codes (ties to even), both signs, zeros, NaN and Inf. The
// largest finite value is in the input, so the per-tensor scale is 1 and the values reach the
// encoder as they are. Row-wise (quantize_rows) and as the pair (quantize_tile).
TEST(GpuQuantizeF8, ScaledSweepMatchesReference) {
  REQUIRE_GPU();
  constexpr std::int64_t kRows = 512, kCols = 1024;
  for (const char* spec : {"msfp4", "msfp4:dy.elem=e4m3,dyt.elem=e4m3"}) {
    const Recipe recipe = parse_recipe(spec);
    const bool e5m2 = recipe[Role::dy].elem == ElemFormat::e5m2;
    const float max_value = e5m2 ? 57344.0f : 448.0f;
    const int man_bits = e5m2 ? 2 : 3, min_exp = e5m2 ? -16 : -9, max_exp = e5m2 ? 15 : 8;
    HostInput in;
    in.dtype = DType::f32;
    in.rows = kRows;
    in.cols = kCols;
    in.values = Matrix<float>(kRows, kCols);
    std::uint32_t state = 12345u;
    for (std::int64_t i = 0; i < kRows * kCols; ++i) {
      state = state * 1664525u + 1013904223u;
      const int exp = min_exp - 3 + static_cast<int>(i % (max_exp - min_exp + 4));
      std::uint32_t man = state >> 9;
      if ((i / 7) % 3 == 0)  // a midpoint: one bit below the code's last mantissa bit
        man = ((state >> 20) << (23 - man_bits)) | (1u << (22 - man_bits));
      std::uint32_t bits =
          (state & 0x80000000u) | (static_cast<std::uint32_t>(exp + 127) << 23) | (man & 0x7fffffu);
      float v;
      std::memcpy(&v, &bits, 4);
      if (std::fabs(v) > max_value) v = std::copysign(max_value, v);
      switch (i % 997) {
        case 0:
          v = max_value;
          break;
        case 1:
          v = -0.0f;
          break;
        case 2:
          v = 0.0f;
          break;
        case 3:
          v = std::nanf("");
          break;
        case 4:
          v = i % 2 ? -INFINITY : INFINITY;
          break;
        default:
          break;
      }
      in.values(i / kCols, i % kCols) = v;
    }
    in.bytes.resize(static_cast<std::size_t>(kRows * kCols * 4));
    std::memcpy(in.bytes.data(), in.values.data.data(), in.bytes.size());
    const DeviceInput din(in, 0);
    const QuantizedTensor ref = reference::quantize(recipe, Role::dy, in.values, {});
    const QuantizedTensor ref_t = reference::quantize(recipe, Role::dyt, in.values, {});
    for (const bool pair : {false, true}) {
      SCOPED_TRACE(fmt::format("{}{}", spec, pair ? " pair" : ""));
      HostOperand out(ref.layout, 0), out_t(ref_t.layout, 0);
      DeviceOperand dout(out), dout_t(out_t);
      if (pair)
        engine.quantize_pair(recipe, Role::dy, din.view, dout.view(), dout_t.view(), {});
      else
        engine.quantize(recipe, Role::dy, din.view, dout.view(), {});
      Gpu::get()->scope.synchronize();
      dout.download(out);
      ASSERT_EQ(compare(ref, out, false), "");
      if (pair) {
        dout_t.download(out_t);
        ASSERT_EQ(compare(ref_t, out_t, false), "");
      }
    }
  }
}

// The tuner's and the benchmarks' timer measures a call's GPU time without the host's enqueueing:
// a call that spends 5 ms on the host before a small quantize takes about 5 ms by EventTimer (the
// GPU idles until the launch) and well under 1 ms by GpuTimer; nothing at all takes under 20 us.
// EventTimer's figure is asserted at half the host's time: other processes on the GPU (the other
// shards of this suite) can hold it when the start event is due, which moves that event later and
// shortens the figure by up to a time slice or two (1.75 ms of a 2 ms sleep was seen with twelve
// shards running).
TEST(GpuTimer, KeepsTheHostsTimeOut) {
  REQUIRE_GPU();
  constexpr int kHostMs = 5;
  const Recipe recipe = parse_recipe("mxfp4");
  HostInput in = make_input(InputKind::random, DType::bf16, 128, 1024, 7, false);
  DeviceInput din(in, 0);
  HostOperand out(engine.layout(recipe, Role::x, 128, 1024), 0);
  DeviceOperand dout(out);
  const auto call = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(kHostMs));
    engine.quantize(recipe, Role::x, din.view, dout.view(), {1, 0});
  };
  call();  // compiled and loaded
  Gpu::get()->scope.synchronize();
  const cuda::Driver& d = Gpu::get()->scope.driver();
  cuda::EventTimer events(d);
  cuda::GpuTimer gpu(d);
  // with_host: the longest of the runs (other processes' work can only shorten it, as above); the
  // others the shortest.
  double with_host = 0.0, alone = 1e9, nothing = 1e9, lead = 1e9;
  for (int i = 0; i < 5; ++i) {
    with_host = std::max(with_host, events.ms(call));
    alone = std::min(alone, gpu.ms(call));
    lead = std::min(lead, gpu.lead_ms());  // after a call that spent kHostMs on the host
    nothing = std::min(nothing, gpu.ms([] {}));
  }
  EXPECT_GE(with_host, 0.5 * kHostMs);
  EXPECT_LT(alone, 1.0);
  EXPECT_GT(alone, 0.0);
  EXPECT_LT(nothing, 0.02);
  EXPECT_GE(lead, 2.0 * kHostMs);  // twice the host's time, under GpuTimer::kMaxLeadMs
}

}  // namespace
}  // namespace fp4jit::test
