#include "runtime/cuda/gemm_plan.hpp"

#include <set>

#include "gemm/sm100/config.cuh"
#include "gemm/sm90/geometry.cuh"

namespace fp4jit::cuda {

int default_sm_count(const std::string& target) {
  return target == "sm_100a" ? 148 : 132;
}

GemmPlan plan_gemm(const Recipe& recipe, GemmOp op, const GemmShape& shape, DType out,
                   const DeviceInfo& device) {
  GemmPlan p;
  p.spec = codegen::gemm_spec(recipe, op, shape.n, shape.k, out, device.target);
  p.choice = codegen::choose_gemm(p.spec, shape.m, device.sm_count, device.target);
  p.kernel = codegen::gemm_kernel(p.spec, p.choice, device.target);
  const bool a_fp8 = p.spec.path == codegen::GemmPath::ms_grad;
  p.a_row_bytes = a_fp8 ? shape.k : shape.k / 2;
  p.b_row_bytes = shape.k / 2;
  if (device.target == "sm_100a") {
    const auto kind =
        p.spec.path == codegen::GemmPath::mx ? sm100::ScaleKind::mx : sm100::ScaleKind::nv;
    const sm100::GemmGeometry g =
        sm100::gemm_geometry(kind, p.choice.sm100.block_n, p.choice.sm100.stages);
    p.block_n = p.choice.sm100.block_n;
    p.threads = g.threads;
    p.smem_bytes = g.smem_bytes;
    p.a_box_bytes = p.b_box_bytes = g.row_bytes;
    p.swizzle_bytes = 128;
  } else {
    const auto kind = static_cast<sm90::ScaleKind>(static_cast<int>(p.spec.path));
    const codegen::GemmSm90Config& c = p.choice.sm90;
    const sm90::GemmGeometry g =
        sm90::gemm_geometry(kind, 128, c.block_n, c.packed_stages, c.exp_stages, 1);
    p.block_n = c.block_n;
    p.threads = g.threads;
    p.smem_bytes = g.smem_bytes;
    p.a_box_bytes = g.packed_row_a;
    p.b_box_bytes = g.packed_row_b;
    p.swizzle_bytes = g.swizzle64 ? 64 : 0;
  }
  p.tiles = ((shape.m + p.block_m - 1) / p.block_m) * ((shape.n + p.block_n - 1) / p.block_n);
  if (p.choice.splits > 1) p.workspace_floats = p.tiles * p.choice.splits * p.block_m * p.block_n;
  return p;
}

std::vector<codegen::KernelSource> request_gemm_kernels(const Recipe& recipe,
                                                        const GemmRequest& request,
                                                        const std::string& target, int sm_count,
                                                        std::span<const DType> outs,
                                                        std::vector<std::string>* skipped) {
  std::vector<codegen::KernelSource> kernels;
  std::set<std::string> seen;
  const auto add = [&](codegen::KernelSource k) {
    if (seen.insert(k.key_text).second) kernels.push_back(std::move(k));
  };
  const DeviceInfo device{target, sm_count};
  for (const auto& [op, shape] : gemm_list(request)) {
    for (DType out : outs) {
      try {
        add(plan_gemm(recipe, op, shape, out, device).kernel);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::unsupported) throw;
        if (skipped != nullptr && out == outs.front()) skipped->push_back(e.what());
        continue;
      }
      if (op == GemmOp::fprop && recipe[gemm_roles(GemmOp::fprop).a].occ) {
        add(codegen::occ_transpose_kernel(out, target));
        add(codegen::occ_rows_kernel(target));
        add(codegen::occ_compensate_kernel(out, out, target));
      }
    }
  }
  return kernels;
}

}  // namespace fp4jit::cuda
