// The timing lead's PTX (cuda::GpuTimer) assembles for the targets fp4jit runs on, by ptxas where
// one is found (no GPU needed): the driver JIT-compiles the same text on the device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/cuda/device_memory.hpp"

namespace fp4jit::cuda {
namespace {

std::string find_ptxas() {
  for (const char* p : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

TEST(LeadPtx, AssemblesForSm90aAndSm100a) {
  const std::string ptxas = find_ptxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas here";
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fp4jit-lead-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path ptx = dir / "lead.ptx";
  std::ofstream(ptx) << lead_ptx();
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    const std::filesystem::path out = dir / (std::string(arch) + ".cubin");
    const std::string command = ptxas + " -arch=" + arch + " " + ptx.string() + " -o " +
                                out.string() + " 2>" + (dir / "log").string();
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    EXPECT_GT(std::filesystem::exists(out) ? std::filesystem::file_size(out) : 0u, 0u) << arch;
  }
  std::filesystem::remove_all(dir);
}

TEST(LeadPtx, NamesTheEntryTheTimerLoads) {
  const std::string_view ptx = lead_ptx();
  EXPECT_NE(ptx.find(".entry fp4jit_lead("), std::string_view::npos);
  EXPECT_NE(ptx.find("%globaltimer"), std::string_view::npos);
}

}  // namespace
}  // namespace fp4jit::cuda
