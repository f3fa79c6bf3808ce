#include "runtime/host/occ.hpp"

#include <algorithm>
#include <cmath>

#include "numerics/common.cuh"
#include "numerics/occ.cuh"

namespace fp4jit::host {

namespace {

struct Quantiles {
  float lo, hi;
};

// The k-th smallest (0-based) value of row under `less`, keeping the k + 1 smallest seen in a
// max-heap: one comparison per element for all but the few that enter the heap.
template <typename Less>
float kth(const float* row, std::int64_t n, std::int64_t k, Less less, std::vector<float>& heap) {
  heap.assign(row, row + k + 1);
  std::make_heap(heap.begin(), heap.end(), less);
  for (std::int64_t c = k + 1; c < n; ++c) {
    if (!less(row[c], heap.front())) continue;
    std::pop_heap(heap.begin(), heap.end(), less);
    heap.back() = row[c];
    std::push_heap(heap.begin(), heap.end(), less);
  }
  return heap.front();
}

Quantiles quantiles(const float* row, std::int64_t n, std::int64_t lo_index, std::int64_t hi_index,
                    std::vector<float>& work) {
  float lo, hi;
  if (4 * lo_index < n && 4 * (n - 1 - hi_index) < n) {  // tails: heaps of the few extreme values
    lo = kth(row, n, lo_index, nx::occ_less, work);
    hi = kth(
        row, n, n - 1 - hi_index, [](float a, float b) { return nx::occ_less(b, a); }, work);
  } else {
    work.assign(row, row + n);
    std::nth_element(work.begin(), work.begin() + lo_index, work.end(), nx::occ_less);
    lo = work[static_cast<std::size_t>(lo_index)];
    std::nth_element(work.begin() + lo_index, work.begin() + hi_index, work.end(), nx::occ_less);
    hi = work[static_cast<std::size_t>(hi_index)];
  }
  return {lo, hi};  // occ_less is a total order: the k-th value is unique, sign of zero included
}

}  // namespace

void occ_quantiles(const TensorView& in, double alpha, ThreadPool& pool, std::vector<float>& lo,
                   std::vector<float>& hi) {
  const std::int64_t n = in.cols;
  const auto lo_index = std::min<std::int64_t>(n - 1, static_cast<std::int64_t>((1.0 - alpha) * n));
  const auto hi_index = std::min<std::int64_t>(n - 1, static_cast<std::int64_t>(alpha * n));
  const std::int64_t stride = in.row_stride == 0 ? in.cols : in.row_stride;
  lo.resize(static_cast<std::size_t>(in.rows));
  hi.resize(static_cast<std::size_t>(in.rows));
  std::vector<std::vector<float>> rows(static_cast<std::size_t>(pool.size())), work(rows.size());
  pool.run(in.rows, [&](std::int64_t r, int worker) {
    std::vector<float>& row = rows[static_cast<std::size_t>(worker)];
    row.resize(static_cast<std::size_t>(n));
    for (std::int64_t c = 0; c < n; ++c) {
      const std::int64_t i = r * stride + c;
      switch (in.dtype) {
        case DType::f32:
          row[static_cast<std::size_t>(c)] = static_cast<const float*>(in.data)[i];
          break;
        case DType::bf16:
          row[static_cast<std::size_t>(c)] =
              nx::bf16_to_float(static_cast<const std::uint16_t*>(in.data)[i]);
          break;
        case DType::f16:
          row[static_cast<std::size_t>(c)] =
              nx::f16_to_float(static_cast<const std::uint16_t*>(in.data)[i]);
          break;
      }
    }
    const Quantiles q =
        quantiles(row.data(), n, lo_index, hi_index, work[static_cast<std::size_t>(worker)]);
    lo[static_cast<std::size_t>(r)] = q.lo;
    hi[static_cast<std::size_t>(r)] = q.hi;
  });
}

OccResidual transpose_residual(const OccResidual& r, std::int64_t rows, std::int64_t cols) {
  std::vector<std::int64_t> start(static_cast<std::size_t>(cols) + 1, 0);
  for (std::int64_t i : r.index) ++start[static_cast<std::size_t>(i % cols) + 1];
  for (std::size_t c = 0; c < static_cast<std::size_t>(cols); ++c) start[c + 1] += start[c];
  OccResidual out;
  out.index.resize(r.index.size());
  out.value.resize(r.value.size());
  for (std::size_t t = 0; t < r.index.size(); ++t) {  // rows ascending within each column
    const std::int64_t row = r.index[t] / cols, col = r.index[t] % cols;
    const auto at = static_cast<std::size_t>(start[static_cast<std::size_t>(col)]++);
    out.index[at] = col * rows + row;
    out.value[at] = r.value[t];
  }
  return out;
}

}  // namespace fp4jit::host
