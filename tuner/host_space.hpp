// Candidate spaces of the host backend's kernels (codegen/host/host_config.hpp), pruned before
// anything compiles:
//   GEMM      vw (the target's width and half of it) x mr x nr x kc x mc; pruned when the
//             micro-tile's accumulators, B vectors and the A broadcast exceed the vector
//             registers (16, or 32 with AVX-512), when a K panel of A and B (kc x (mr + nr)
//             floats) exceeds 48 KiB of L1, and when a block is no smaller than the problem
//             (kc >= K or mc >= M: only the smallest such value is kept, the others run the same);
//             and, for the heuristic's blocking, the panels of nr columns per task (np 1..16; the
//             same binary, a launch parameter).
//   quantize  vw x band rows x unroll; pruned when the band holds more rows than the tensor
//             (only the smallest such band is kept).
// The heuristic's config (the backend's default) comes first; the rest in a fixed order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/host/host_config.hpp"
#include "tuner/tuner.hpp"

namespace fp4jit::tuner {

struct HostCandidate {
  host::HostConfig config;
  Candidate candidate;  // config text: HostConfig::gemm_tuned_text() or text()
};

std::vector<HostCandidate> host_gemm_space(const host::HostConfig& base, int vector_bits,
                                           std::int64_t m, std::int64_t n, std::int64_t k,
                                           std::vector<CandidateResult>* pruned);
std::vector<HostCandidate> host_quantize_space(const host::HostConfig& base, int vector_bits,
                                               std::int64_t rows,
                                               std::vector<CandidateResult>* pruned);

}  // namespace fp4jit::tuner
