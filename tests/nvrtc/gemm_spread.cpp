#include "tests/nvrtc/gemm_spread.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "codegen/gemm.hpp"
#include "core/error.hpp"

namespace fp4jit::test_util {

using codegen::GemmPath;
using codegen::KernelSource;

std::vector<KernelSource> spread(const Recipe& r, GemmOp op, const GemmShape& s,
                                 const std::string& arch, bool full) {
  std::vector<KernelSource> out;
  const DType outs[] = {DType::bf16, DType::f32, DType::f16};
  for (DType d : outs) {
    const codegen::GemmSpec spec = codegen::gemm_spec(r, op, s.n, s.k, d, arch);
    for (std::int64_t m : {std::int64_t{8192}, std::int64_t{128}}) {
      if (d != DType::bf16 && m == 128) continue;
      for (KernelSource& k :
           codegen::gemm_kernels(spec, codegen::choose_gemm(spec, m, 132, arch), m, 132, arch))
        out.push_back(std::move(k));
    }
    if (!full) return out;
    // The staged kernel storing D the other way than its default for the output type (TMA
    // stores through shared memory for FP32, register stores for 16-bit outputs), widest tile.
    if (arch == "sm_90a") {
      const bool wide_promote = spec.path == GemmPath::mx || spec.path == GemmPath::ms_grad;
      const codegen::GemmSm90Config other = codegen::default_sm90_staged_config(
          spec, wide_promote ? 192 : 256, !codegen::sm90_staged_tma_store_default(d));
      EXPECT_EQ(other.tma_store, d == DType::f32);
      out.push_back(codegen::gemm_sm90_kernel(spec, other, arch));
    }
    if (d != DType::bf16) continue;
    if (arch == "sm_100a") {
      for (int stages : {2, 6})
        out.push_back(codegen::gemm_sm100_kernel(spec, {128, stages}, arch));
      continue;
    }
    codegen::GemmSm90Config c = codegen::default_sm90_config(spec, 64);
    c.raster_along_m = false;
    c.raster_group = 4;
    out.push_back(codegen::gemm_sm90_kernel(spec, c, arch));
    c = codegen::default_sm90_config(spec, 128);
    c.packed_stages = 3;
    c.exp_stages = 2;
    if (spec.path == GemmPath::nv) c.nv_interleave = !c.nv_interleave;
    out.push_back(codegen::gemm_sm90_kernel(spec, c, arch));
    // The staged kernel: narrowest and widest tiles, both raster orders.
    const bool promote = spec.path == GemmPath::mx || spec.path == GemmPath::ms_grad;
    c = codegen::default_sm90_staged_config(spec, 64);
    c.raster_along_m = false;
    c.raster_group = 4;
    out.push_back(codegen::gemm_sm90_kernel(spec, c, arch));
    c = codegen::default_sm90_staged_config(spec, promote ? 128 : 256);
    c.packed_stages = 3;
    out.push_back(codegen::gemm_sm90_kernel(spec, c, arch));
    // The widest tile of the promoting paths; promotion every K tile and every 8th, with their
    // expansions (the default period's come with the heuristic's choice above).
    if (promote) {
      c = codegen::default_sm90_staged_config(spec, 192);
      out.push_back(codegen::gemm_sm90_kernel(spec, c, arch));
    }
    // Clusters of two CTAs sharing B by TMA multicast: the widest tile of the path.
    {
      codegen::GemmSm90Config cl = codegen::default_sm90_staged_config(spec, promote ? 192 : 256);
      cl.cluster_m = 2;
      out.push_back(codegen::gemm_sm90_kernel(spec, cl, arch));
    }
    // The swapped small-M kernel (mx, nv): the narrow tile with promotion (or B's scale loads)
    // every K tile, every 2nd, and A's expansions in fragment order for those periods (the
    // heuristic's comes above).
    if (spec.path == GemmPath::mx || spec.path == GemmPath::nv)
      for (int period : {1, 2}) {
        codegen::GemmSm90Config sw = codegen::default_sm90_swap_config(spec, 64);
        sw.period = period;
        sw.packed_stages = 3;
        sw.raster_along_m = false;
        out.push_back(codegen::gemm_sm90_kernel(spec, sw, arch));
        out.push_back(codegen::gemm_sm90_expand_kernel(spec, false, period, arch, true));
      }
    // ... and with stream-K (the 128-row tile; its expansion is the heuristic's).
    if (spec.path == GemmPath::mx || spec.path == GemmPath::nv) {
      codegen::GemmSm90Config st = codegen::default_sm90_swap_config(spec, 128);
      st.stream_k = true;
      out.push_back(codegen::gemm_sm90_kernel(spec, st, arch));
    }
    // The direct small-M kernel (mx): both tiles of A's rows, and promotion every K tile and every
    // 4th with split-K in clusters and other ring depths.
    if (spec.path == GemmPath::mx) {
      codegen::GemmSm90Config dk = codegen::default_sm90_direct_config(spec, 64);
      out.push_back(codegen::gemm_sm90_kernel(spec, dk, arch));
      dk = codegen::default_sm90_direct_config(spec, 128);
      out.push_back(codegen::gemm_sm90_kernel(spec, dk, arch));
      for (int period : {1, 4}) {
        dk.period = period;
        dk.cluster_split = period == 4;
        dk.packed_stages = period == 4 ? 6 : 2;
        dk.exp_stages = period == 4 ? 4 : 12;
        dk.raster_along_m = false;
        out.push_back(codegen::gemm_sm90_kernel(spec, dk, arch));
      }
    }
    if (promote)
      for (int period : {1, 8}) {
        c.period = period;
        out.push_back(codegen::gemm_sm90_kernel(spec, c, arch));
        for (auto& k : codegen::gemm_sm90_expand_kernels(spec, c, arch)) out.push_back(k);
      }
  }
  return out;
}

PresetKernels preset_kernels(const std::string& preset, const std::string& arch) {
  const Recipe recipe = parse_recipe(preset);
  const GemmShape layer{1024, 3072, 4096};
  PresetKernels out;
  std::set<std::string> keys;
  // The operands' path and formats of each GEMM spread in full so far: a later GEMM of the same
  // code (mx and nv presets' dgrad and wgrad read what fprop reads) takes the heuristic's
  // configs for its own N and K, the spread's other configs being the same template code.
  std::set<std::string> spread_kinds;
  for (const auto& op : gemm_op_names()) {
    try {
      const GemmShape shape = gemm_shape_of(op.value, layer);
      const codegen::GemmSpec spec =
          codegen::gemm_spec(recipe, op.value, shape.n, shape.k, DType::bf16, arch);
      const std::string kind =
          fmt::format("{}|{}|{}|{}|{}|{}", static_cast<int>(spec.path), spec.a_text, spec.b_text,
                      spec.scale_code, spec.a_block_rows, spec.b_block_rows);
      const bool full = spread_kinds.insert(kind).second;
      for (auto& k : spread(recipe, op.value, shape, arch, full))
        if (keys.insert(k.key_text).second) out.kernels.push_back(std::move(k));
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsupported) << e.what();
      EXPECT_EQ(arch, "sm_100a") << e.what();  // sm_90a multiplies every preset's pairs
      ++out.unsupported;
    }
  }
  if (recipe[Role::x].occ && arch == "sm_90a") {
    out.kernels.push_back(codegen::occ_rows_kernel(arch));
    for (DType d : {DType::bf16, DType::f32, DType::f16}) {
      out.kernels.push_back(codegen::occ_transpose_kernel(d, arch));
      for (DType w : {DType::bf16, DType::f32, DType::f16})
        out.kernels.push_back(codegen::occ_compensate_kernel(d, w, arch));
    }
  }
  return out;
}

}  // namespace fp4jit::test_util
