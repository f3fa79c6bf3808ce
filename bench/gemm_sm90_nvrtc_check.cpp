// NVRTC compile check of templates/gemm/sm90: the generated-stub shape (one named config type,
// one explicit instantiation, name from nvrtcGetLoweredName) for each scale kind, sm_90a.
//   g++ -std=c++17 -I/usr/local/cuda/include bench/gemm_sm90_nvrtc_check.cpp
//   -L/usr/local/cuda/lib64 -lnvrtc
//       -o /tmp/gemm_sm90_nvrtc_check && /tmp/gemm_sm90_nvrtc_check <repo root>
#include <nvrtc.h>
#include <cstdio>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : ".";
  const std::string inc_t = "-I" + root + "/templates", inc_r = "-I" + root;
  const char* kinds[] = {"ms", "mx", "nv"};
  int bad = 0;
  for (const char* k : kinds) {
    std::string src =
        std::string(
            "#include \"gemm/sm90/kernel.cuh\"\n"
            "struct Cfg : fp4jit::sm90::GemmConfigBase {\n"
            "  static constexpr fp4jit::sm90::ScaleKind kKind = fp4jit::sm90::ScaleKind::") +
        k +
        ";\n"
        "  static constexpr int BLOCK_N = " +
        (std::string(k) == "mx" ? "128" : "256") +
        ";\n"
        "  static constexpr int kPackedStages = 4, kExpandedStages = 3;\n};\n"
        "template __global__ void fp4jit::sm90::gemm_kernel<Cfg>(const __grid_constant__ "
        "fp4jit::sm90::TmaDesc, const __grid_constant__ fp4jit::sm90::TmaDesc, const "
        "fp4jit::sm90::GemmParams);\n";
    nvrtcProgram prog;
    nvrtcCreateProgram(&prog, src.c_str(), "stub.cu", 0, nullptr, nullptr);
    nvrtcAddNameExpression(prog, "fp4jit::sm90::gemm_kernel<Cfg>");
    const char* opts[] = {"-std=c++20", "-arch=sm_90a", inc_t.c_str(), inc_r.c_str(),
                          "-default-device"};
    nvrtcResult r = nvrtcCompileProgram(prog, 5, opts);
    size_t n;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    const char* lowered = nullptr;
    if (r == NVRTC_SUCCESS) nvrtcGetLoweredName(prog, "fp4jit::sm90::gemm_kernel<Cfg>", &lowered);
    size_t cubin = 0;
    if (r == NVRTC_SUCCESS) nvrtcGetCUBINSize(prog, &cubin);
    std::printf("%s: %s cubin=%zu %s\n%s\n", k, nvrtcGetErrorString(r), cubin,
                lowered ? lowered : "", log.substr(0, 1500).c_str());
    bad += r != NVRTC_SUCCESS;
    nvrtcDestroyProgram(&prog);
  }
  return bad;
}
