// What the GPU quantize tests share: the engine (gpu_engine.hpp), an operand's outputs on the
// device poisoned from a HostOperand, an input on the device with padded rows.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/backend.hpp"
#include "runtime/cuda/device_memory.hpp"
#include "runtime/host_tensor.hpp"
#include "tests/gpu/gpu_engine.hpp"
#include "tests/gpu/quant_check.hpp"

namespace fp4jit::test {

// One operand's outputs on the device, poisoned from a HostOperand.
struct DeviceOperand {
  cuda::DeviceBuffer codes, scales, tensor_scale, amax, index, value, count;
  std::int64_t capacity = 0;
  explicit DeviceOperand(const HostOperand& h)
      : codes(h.codes.size()),
        scales(h.scales.size()),
        tensor_scale(4),
        amax(4),
        index(h.residual_index.size() * 8 + 8),
        value(h.residual_value.size() * 4 + 4),
        count(8),
        capacity(static_cast<std::int64_t>(h.residual_index.size())) {
    codes.upload(h.codes.data(), h.codes.size());
    scales.upload(h.scales.data(), h.scales.size());
    tensor_scale.upload(h.tensor_scale.data(), 4);
    amax.upload(h.amax.data(), 4);
    index.upload(h.residual_index.data(), h.residual_index.size() * 8);
    value.upload(h.residual_value.data(), h.residual_value.size() * 4);
    count.upload(h.residual_count.data(), 8);
  }
  QuantizedView view() {
    QuantizedView v;
    v.codes = codes.get<std::uint8_t>();
    v.scales = scales.get();
    v.tensor_scale = tensor_scale.get<float>();
    v.amax = amax.get<float>();
    v.residual_index = index.get<std::int64_t>();
    v.residual_value = value.get<float>();
    v.residual_count = count.get<std::int64_t>();
    v.residual_capacity = capacity;
    return v;
  }
  void download(HostOperand& h) const {
    codes.download(h.codes.data(), h.codes.size());
    scales.download(h.scales.data(), h.scales.size());
    tensor_scale.download(h.tensor_scale.data(), 4);
    amax.download(h.amax.data(), 4);
    index.download(h.residual_index.data(), h.residual_index.size() * 8);
    value.download(h.residual_value.data(), h.residual_value.size() * 4);
    count.download(h.residual_count.data(), 8);
  }
};

// The input on the device, rows `pad` elements apart beyond their length.
struct DeviceInput {
  cuda::DeviceBuffer buffer;
  TensorView view;
  DeviceInput(const HostInput& in, std::int64_t pad)
      : buffer(static_cast<std::size_t>(in.rows * (in.cols + pad) * dtype_size(in.dtype))) {
    const std::size_t esz = static_cast<std::size_t>(dtype_size(in.dtype));
    std::vector<std::uint8_t> host(buffer.bytes(), kPoison);
    for (std::int64_t r = 0; r < in.rows; ++r)
      std::memcpy(&host[r * (in.cols + pad) * esz], &in.bytes[r * in.cols * esz], in.cols * esz);
    buffer.upload(host.data(), host.size());
    view = TensorView{buffer.get(), in.dtype, in.rows, in.cols, in.cols + pad};
  }
};

inline std::int64_t round_up(std::int64_t v, std::int64_t m) {
  return (v + m - 1) / m * m;
}

}  // namespace fp4jit::test
