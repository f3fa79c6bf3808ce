// The SASS of compiled kernels, read with cuobjdump where one is found (no GPU needed): which
// matrix instructions a kernel issues, so that a test can say that each GEMM multiplies on the
// units its path intends (sm_90a: QGMMA for FP8 operands, HGMMA for 16-bit ones; sm_100a: the
// block-scaled UTCOMMA of tcgen05.mma).
#pragma once
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
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

// The fields of a kernel key ("name=value" separated by ';'), in their order: name, value.
std::vector<std::pair<std::string, std::string>> key_fields(const std::string& key_text);

// What a GEMM kernel of fp4jit must issue, from its key text (op=..., path=...): the mnemonics
// it must hold and those it must not. Empty `must` and `must_not` holding every MMA: no matrix
// instruction at all (expansions, the OCC kernels).
struct MmaExpectation {
  std::set<std::string> must, must_not;
};
MmaExpectation expected_mma(const std::string& key_text);

// The family of a GEMM kernel whose SASS stands for its configs': op, path, target and, for the
// sm90 GEMM, which kernel the config selects (staged sg=1, swapped sw=1, direct dk=1, else fused).
// Tile widths, ring depths, raster order, clusters, split-K, promotion period and the output type
// are constants of one template, whose matrix instruction is its path's (expected_mma): a test that
// reads one kernel's SASS per family covers them (each cuobjdump -sass pays about 0.5 s of
// nvdisasm start-up, whatever the cubin's size).
std::string sass_family(const std::string& key_text);

}  // namespace fp4jit::test_util
