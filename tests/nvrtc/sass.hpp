// The SASS of compiled kernels, read with cuobjdump where one is found (no GPU needed): which
// matrix instructions a kernel issues, so that a test can say that each GEMM multiplies on the
// units its path intends (sm_90a: QGMMA for FP8 operands, HGMMA for 16-bit ones; sm_100a: the
// block-scaled UTCOMMA of tcgen05.mma).
#pragma once
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace fp4jit::test_util {

// cuobjdump: $FP4JIT_CUOBJDUMP, else on PATH, in /usr/local/cuda/bin, or from the
// nvidia-cuda-cuobjdump wheel in a Python site folder (scripts/setup.sh installs it). Empty
// when none is found.
std::string find_cuobjdump();

// The matrix-multiply mnemonics (QGMMA, HGMMA, HMMA, UTCOMMA, UTCQMMA, UTCHMMA, ...: every SASS
// opcode ending in MMA, without its modifiers) of a cubin, by `cuobjdump -sass` on a copy in
// `dir`. Throws std::runtime_error when cuobjdump fails or prints no SASS.
std::set<std::string> mma_mnemonics(const std::string& cuobjdump,
                                    const std::vector<std::uint8_t>& cubin,
                                    const std::filesystem::path& dir);

// What a GEMM kernel of fp4jit must issue, from its key text (op=..., path=...): the mnemonics
// it must hold and those it must not. Empty `must` and `must_not` holding every MMA: no matrix
// instruction at all (expansions, the OCC kernels).
struct MmaExpectation {
  std::set<std::string> must, must_not;
};
MmaExpectation expected_mma(const std::string& key_text);

}  // namespace fp4jit::test_util
