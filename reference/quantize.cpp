// Reference quantization: source -> (requant) -> OCC -> orient -> Hadamard -> block scales -> codes.
#include <algorithm>
#include <cmath>

#include "numerics/e2m1.cuh"
#include "numerics/philox.cuh"
#include "numerics/scale.cuh"
#include "reference/reference.hpp"

namespace fp4jit::reference {

namespace {

struct BlockStats {
  float amax = 0.0f;       // largest finite |x| in the block
  bool nonfinite = false;  // the block holds a NaN or an Inf
};

// How one block is stored and how its elements are brought into the element format's range.
struct BlockScale {
  std::uint8_t code = 0;  // stored scale code (code formats)
  float value = 0.0f;     // stored decode factor (fp32 scales)
  bool nan = false;       // non-finite block: scale is NaN (or max), every code 0
  bool divide = false;    // elements are x / factor (absmax) rather than x * factor
  float factor = 1.0f;
};

std::vector<BlockStats> block_stats(const Matrix<float>& op, const QuantLayout& l, const Block& b) {
  std::vector<BlockStats> stats(l.scale_count());
  for (std::int64_t r = 0; r < op.rows; ++r) {
    for (std::int64_t c = 0; c < op.cols; ++c) {
      const BlockIndex bi = block_of(b, r, c);
      BlockStats& st = stats[bi.row * l.scale_cols + bi.col];
      const float x = op(r, c);
      if (!nx::is_finite(x)) st.nonfinite = true;
      else st.amax = std::max(st.amax, std::fabs(x));
    }
  }
  return stats;
}

float finite_amax(const Matrix<float>& m) {
  float amax = 0.0f;
  for (float x : m.data)
    if (nx::is_finite(x)) amax = std::max(amax, std::fabs(x));
  return amax;
}

BlockScale block_scale(const Recipe& recipe, const OperandSpec& s, const BlockStats& st, float s_enc) {
  BlockScale out;
  const float emax_value = elem_max(s.elem);
  switch (s.rule) {
    case ScaleRule::ocp_floor:
    case ScaleRule::ceil_pow2: {
      const float amax = st.nonfinite ? NAN : st.amax;
      out.code = static_cast<std::uint8_t>(s.rule == ScaleRule::ocp_floor
                                               ? nx::scale_ocp_floor(amax, elem_emax(s.elem))
                                               : nx::scale_ceil_pow2(amax, emax_value));
      out.nan = out.code == nx::kE8M0Nan;
      if (!out.nan) out.factor = nx::pow2f(127 - out.code);  // 1 / 2^(code - 127), exact
      break;
    }
    case ScaleRule::ms_pow2: {
      // Recipe: amax 0 or not finite -> sf = 1 (non-finite elements then saturate / stay NaN).
      const float amax = st.nonfinite ? INFINITY : st.amax;
      const int e = nx::scale_ms_pow2_exponent(amax, emax_value);
      out.factor = nx::pow2f(e);
      out.value = nx::pow2f(-e);
      out.code = static_cast<std::uint8_t>(nx::e8m0_from_exponent(-e));
      break;
    }
    case ScaleRule::two_level: {
      const nx::MiniFloat fmt = minifloat(s.scale, recipe.ue5m3);
      if (st.nonfinite) {
        out.nan = true;
        out.code = static_cast<std::uint8_t>(nx::mf_has_nan(fmt) ? nx::mf_nan_code(fmt) : nx::mf_max_code(fmt));
        break;
      }
      const nx::u32 code = nx::two_level_block_scale(fmt, st.amax, s_enc, emax_value);
      out.code = static_cast<std::uint8_t>(code);
      out.factor = nx::two_level_encode_factor(fmt, code, s_enc);
      break;
    }
    case ScaleRule::absmax: {
      if (st.nonfinite) {
        out.nan = true;
        out.value = NAN;
        break;
      }
      out.value = nx::scale_absmax(st.amax, emax_value);
      out.factor = out.value;
      out.divide = true;
      break;
    }
  }
  return out;
}

// One element, already scaled, to its code. Finite values saturate; Inf stays Inf in formats that
// have it (E5M2), NaN stays NaN where the format has one (E2M1 has neither: NaN -> 0).
std::uint32_t encode_element(const OperandSpec& s, float v, std::uint32_t rbits) {
  if (s.elem == ElemFormat::e2m1) return nx::e2m1_encode(v, s.round, rbits, s.sr_bits);
  const nx::MiniFloat fmt = minifloat(s.elem);
  const bool keep_inf = !nx::is_finite(v) && !nx::is_nan(v) && fmt.special == nx::Special::ieee;
  return nx::mf_encode(fmt, v, s.round, /*saturate=*/!keep_inf, rbits, s.sr_bits);
}

// TetraJet Q-EMA: of the two grid neighbours of v, the one nearer the EMA's scaled value.
std::uint32_t encode_qema(const OperandSpec& s, float v, float v_ema, std::uint32_t rbits) {
  nx::u32 lo, hi;
  nx::e2m1_neighbours(v, &lo, &hi);
  const std::uint32_t sign = nx::sign_bit(v) ? 8u : 0u;
  if (lo == hi) return lo | sign;
  const double d_lo = std::fabs(double(nx::e2m1_decode(lo | sign)) - v_ema);
  const double d_hi = std::fabs(double(nx::e2m1_decode(hi | sign)) - v_ema);
  if (d_lo == d_hi) return encode_element(s, v, rbits);
  return (d_lo < d_hi ? lo : hi) | sign;
}

void store_code(QuantizedTensor& q, const OperandSpec& s, std::int64_t r, std::int64_t c, std::uint32_t code) {
  if (s.elem != ElemFormat::e2m1) {
    q.codes[r * q.layout.row_bytes + c] = static_cast<std::uint8_t>(code);
    return;
  }
  std::uint8_t& byte = q.codes[r * q.layout.row_bytes + c / 2];
  byte = static_cast<std::uint8_t>(c % 2 == 0 ? (byte & 0xF0u) | code : (byte & 0x0Fu) | (code << 4));
}

Matrix<float> orient(const Matrix<float>& m, Role role) {
  return role_info(role).transposed ? transpose(m) : m;
}

}  // namespace

void apply_hadamard(const HadamardSpec& had, Matrix<float>& m) {
  if (had.size == 0) return;
  const nx::SignMask signs = had.effective_mask();
  for (std::int64_t r = 0; r < m.rows; ++r)
    for (std::int64_t c = 0; c < m.cols; c += had.size) nx::hadamard_transform(m.row(r) + c, had.size, signs);
}

QuantizedTensor quantize(const Recipe& recipe, Role role, const Matrix<float>& tensor,
                         const QuantizeOptions& options) {
  const OperandSpec& s = recipe[role];
  QuantizedTensor q;
  q.recipe = canonical(recipe);
  q.role = role;
  q.layout = quant_layout(recipe, role, tensor.rows, tensor.cols);
  q.seed = options.seed;
  q.offset = options.offset;

  // 1. Values: the tensor, or the dequantized forward copy of it (double quantization).
  Matrix<float> source = tensor;
  if (s.src == Source::requant) {
    const Role forward = role_info(role).forward;
    const Matrix<double> deq = dequantize_source(recipe, quantize(recipe, forward, tensor, options), false);
    for (std::int64_t i = 0; i < deq.size(); ++i) source.data[i] = static_cast<float>(deq.data[i]);
  }
  // 2. OCC clamps each token (a row of the source tensor); residual positions move with the
  //    transpose below.
  Residual residual;
  if (s.occ) residual = occ_clamp(source, recipe.occ_alpha);
  // 3. The operand in its K-major layout, then the Hadamard transform along K.
  Matrix<float> op = orient(source, role);
  apply_hadamard(s.had, op);
  if (role_info(role).transposed && !residual.index.empty()) {
    std::vector<std::pair<std::int64_t, float>> moved;
    for (std::size_t i = 0; i < residual.index.size(); ++i) {
      const std::int64_t r = residual.index[i] / source.cols, c = residual.index[i] % source.cols;
      moved.emplace_back(c * source.rows + r, residual.value[i]);
    }
    std::sort(moved.begin(), moved.end());
    residual = {};
    for (const auto& [index, value] : moved) {
      residual.index.push_back(index);
      residual.value.push_back(value);
    }
  }
  q.residual_index = std::move(residual.index);
  q.residual_value = std::move(residual.value);

  // 4. Scales, block by block.
  q.amax = finite_amax(op);
  if (q.layout.two_level)
    q.tensor_scale = nx::two_level_tensor_scale(q.amax, scale_format_max(s.scale, recipe.ue5m3),
                                                elem_max(s.elem));
  const std::vector<BlockStats> stats = block_stats(op, q.layout, s.block);
  std::vector<BlockScale> scales(stats.size());
  for (std::size_t i = 0; i < stats.size(); ++i) scales[i] = block_scale(recipe, s, stats[i], q.tensor_scale);
  if (q.layout.scale_is_code) {
    for (const BlockScale& b : scales) q.scale_codes.push_back(b.code);
  } else {
    for (const BlockScale& b : scales) q.scale_values.push_back(b.value);
  }

  // 5. Codes. Element (r, c) draws its random bits at index offset + r * cols + c.
  const bool use_ema = s.qema && options.ema != nullptr && options.step >= recipe.qema_start;
  Matrix<float> ema;
  if (use_ema) {
    if (options.ema->rows != tensor.rows || options.ema->cols != tensor.cols)
      fail(ErrorKind::invalid_argument, "Q-EMA: the EMA is [{}, {}] but the weight is [{}, {}]",
           options.ema->rows, options.ema->cols, tensor.rows, tensor.cols);
    ema = orient(*options.ema, role);
  }
  q.codes.assign(q.layout.code_bytes(), 0);
  for (std::int64_t r = 0; r < op.rows; ++r) {
    for (std::int64_t c = 0; c < op.cols; ++c) {
      const BlockIndex bi = block_of(s.block, r, c);
      const BlockScale& b = scales[bi.row * q.layout.scale_cols + bi.col];
      if (b.nan) continue;  // codes stay 0
      const auto scale_it = [&](float x) { return b.divide ? nx::div_rn(x, b.factor) : nx::mul_rn(x, b.factor); };
      const float v = scale_it(op(r, c));
      const std::uint64_t index = options.offset + static_cast<std::uint64_t>(r * op.cols + c);
      const std::uint32_t rbits = s.round == Round::stochastic ? nx::sr_bits(options.seed, index, s.sr_bits) : 0u;
      const std::uint32_t code = use_ema ? encode_qema(s, v, scale_it(ema(r, c)), rbits) : encode_element(s, v, rbits);
      store_code(q, s, r, c, code);
    }
  }
  return q;
}

}  // namespace fp4jit::reference
