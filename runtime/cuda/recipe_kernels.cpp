// recipe_kernels (plan.hpp): every kernel a recipe's quantize, dequantize and DGE plans can
// launch, found by planning them dry.
#include <set>

#include "codegen/kernels.hpp"
#include "runtime/cuda/plan.hpp"

namespace fp4jit::cuda {

std::vector<codegen::KernelSource> recipe_kernels(const Recipe& recipe, const std::string& target,
                                                  std::span<const DType> dtypes) {
  // Dry plans over a shape every block and transform divides; fake addresses, never touched.
  const DeviceInfo device{target, 132};
  constexpr std::int64_t kN = 256;
  std::vector<codegen::KernelSource> out;
  std::set<std::string> seen;
  const auto collect = [&](const Plan& plan) {
    for (const Step& s : plan)
      if (const Launch* l = std::get_if<Launch>(&s))
        if (seen.insert(l->kernel.key_text).second) out.push_back(l->kernel);
  };
  auto* fake = reinterpret_cast<std::uint8_t*>(std::uintptr_t{1} << 40);
  QuantizedView q;
  q.codes = fake;
  q.scales = fake;
  q.tensor_scale = reinterpret_cast<float*>(fake);
  q.amax = reinterpret_cast<float*>(fake);
  q.residual_index = reinterpret_cast<std::int64_t*>(fake);
  q.residual_value = reinterpret_cast<float*>(fake);
  q.residual_count = reinterpret_cast<std::int64_t*>(fake);
  q.residual_capacity = std::int64_t{16384} * 16384;
  for (DType dt : dtypes) {
    const TensorView in{fake, dt, kN, kN, 0};
    for (Role role : kAllRoles) {
      Arena arena;
      collect(plan_quantize(recipe, role, in, q, nullptr, QuantizeArgs{}, device, arena));
      collect(plan_dequantize(recipe, role, q, kN, kN, in, device, arena));
    }
    // OCC operands also over each row length occ_rows has a kernel for, by occ_rows and by the
    // pipeline the heuristic takes there, and over longer rows (occ_select and the rest).
    for (std::int64_t cols = codegen::kOccRowsMaxCols / 4; cols <= 2 * codegen::kOccRowsMaxCols;
         cols *= 2) {
      const TensorView rows{fake, dt, kN, cols, 0};
      for (Role role : kAllRoles)
        if (recipe[role].occ && !role_info(role).transposed)
          for (const auto policy : {DeviceInfo::OccRows::measured, DeviceInfo::OccRows::always}) {
            DeviceInfo d = device;
            d.occ_rows = policy;
            Arena arena;
            collect(plan_quantize(recipe, role, rows, q, nullptr, QuantizeArgs{}, d, arena));
          }
    }
    // Pairs also over a large source: their CTA size depends on it (default_tile_config).
    const TensorView large{fake, dt, 16384, 16384, 0};
    for (Role role : {Role::x, Role::w, Role::dy})
      for (const TensorView* src : {&in, &large}) {
        Arena arena;
        collect(plan_quantize(recipe, role, *src, q, &q, QuantizeArgs{}, device, arena));
      }
    // dY with its column sums in the input's type (a linear layer's bias gradient): the pair and
    // one operand alone.
    QuantizeArgs sums;
    sums.column_sums = fake;
    sums.column_sums_dtype = dt;
    for (const TensorView* src : {&in, &large}) {
      Arena arena;
      collect(plan_quantize(recipe, Role::dy, *src, q, &q, sums, device, arena));
    }
    {
      Arena arena;
      collect(plan_quantize(recipe, Role::dy, in, q, nullptr, sums, device, arena));
    }
    if (recipe[Role::w].dge) {
      for (DType out_type : dtypes) {
        Arena arena;
        collect(plan_dge(recipe, in, TensorView{fake, out_type, kN, kN, 0}, device, arena));
      }
    }
  }
  // The column sums' reduce into any bias type (an FP32 bias beside 16-bit activations, say).
  for (DType bias_type : {DType::f32, DType::bf16, DType::f16}) {
    codegen::KernelSource k = codegen::column_sums_reduce_kernel(bias_type, target);
    if (seen.insert(k.key_text).second) out.push_back(std::move(k));
  }
  return out;
}

}  // namespace fp4jit::cuda
