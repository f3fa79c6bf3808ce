// Under libFuzzer: before the corpus is read, writes the target's seeds into the folder named by
// $FP4JIT_FUZZ_SEED_DIR (scripts/fuzz.sh passes it as the corpus), so a run starts from them.
#include <cstdlib>
#include <string>

#include "tests/fuzz/fuzz.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("FP4JIT_FUZZ_SEED_DIR");
  if (dir == nullptr || *dir == '\0') return 0;
  std::filesystem::create_directories(dir);
  const auto seeds = fp4jit_fuzz_seeds();
  for (std::size_t i = 0; i < seeds.size(); ++i)
    fp4jit::fuzz::write_file(std::filesystem::path(dir) / ("seed-" + std::to_string(i)),
                             seeds[i].data(), seeds[i].size());
  return 0;
}
