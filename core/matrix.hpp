// A row-major host matrix: the CPU reference's tensor type.
#pragma once
#include <cstdint>
#include <vector>

namespace fp4jit {

template <typename T>
struct Matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<T> data;  // rows * cols, row-major

  Matrix() = default;
  Matrix(std::int64_t r, std::int64_t c, T fill = T{}) : rows(r), cols(c), data(r * c, fill) {}

  T& operator()(std::int64_t r, std::int64_t c) { return data[r * cols + c]; }
  const T& operator()(std::int64_t r, std::int64_t c) const { return data[r * cols + c]; }
  T* row(std::int64_t r) { return data.data() + r * cols; }
  const T* row(std::int64_t r) const { return data.data() + r * cols; }
  std::int64_t size() const { return rows * cols; }
};

template <typename T>
Matrix<T> transpose(const Matrix<T>& m) {
  Matrix<T> t(m.cols, m.rows);
  for (std::int64_t r = 0; r < m.rows; ++r)
    for (std::int64_t c = 0; c < m.cols; ++c) t(c, r) = m(r, c);
  return t;
}

}  // namespace fp4jit
