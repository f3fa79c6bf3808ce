// Launch planning of column sums (QuantizeArgs::column_sums; templates/quantize/column_sums.cuh):
// the per-chunk scratch, the pass of their own and the reduce. A quantize pair's tile kernel sums
// as it goes instead of the pass where it can (plan.cpp).
#include <algorithm>

#include "runtime/cuda/plan.hpp"

namespace fp4jit::cuda {

namespace {

std::int64_t chunks_of(const TensorView& in) {
  return (in.rows + kern::kSumChunkRows - 1) / kern::kSumChunkRows;
}

}  // namespace

std::int64_t column_sums_scratch_floats(const TensorView& in) {
  return chunks_of(in) * in.cols;
}

Launch column_sums_pass(const TensorView& in, float* partial, const DeviceInfo& device) {
  kern::ColumnSumsArgs s{};
  s.in = in.data;
  s.partial = partial;
  s.rows = in.rows;
  s.cols = in.cols;
  s.stride = in.row_stride == 0 ? in.cols : in.row_stride;
  const std::int64_t chunks = chunks_of(in);
  return make_launch(codegen::column_sums_partial_kernel(in.dtype, device.target),
                     std::min<std::int64_t>(chunks * ((in.cols + 255) / 256), 1 << 20), 256, s,
                     in.rows * in.cols * dtype_size(in.dtype) + chunks * in.cols * 4);
}

Launch column_sums_reduce(const TensorView& in, const float* partial, void* out, DType out_dtype,
                          const DeviceInfo& device) {
  kern::ColumnSumsArgs s{};
  s.partial = const_cast<float*>(partial);
  s.out = out;
  s.rows = in.rows;
  s.cols = in.cols;
  return make_launch(codegen::column_sums_reduce_kernel(out_dtype, device.target),
                     std::min<std::int64_t>((in.cols + 31) / 32, 1 << 20), 256, s,
                     chunks_of(in) * in.cols * 4 + in.cols * dtype_size(out_dtype));
}

}  // namespace fp4jit::cuda
